"""The release says what it is: one version (package, pyproject, CHANGELOG), and `--version`
names it with the store schema it writes and the schema of the store it finds."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import stimkit
from stimkit.store import connection

REPO = Path(__file__).resolve().parent.parent


def test_one_version_everywhere():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    assert stimkit.__version__ == project
    assert re.fullmatch(r"\d+\.\d+\.\d+", project)  # semantic versioning
    changelog = (REPO / "CHANGELOG.md").read_text()
    # Keep a Changelog: the newest release first, dated; every section one of its kinds
    releases = re.findall(r"^## \[(\d+\.\d+\.\d+)\] - (\d{4}-\d{2}-\d{2})$", changelog, re.M)
    assert releases and releases[0][0] == project
    kinds = set(re.findall(r"^### (\w+)$", changelog, re.M))
    assert kinds and kinds <= {"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}


def test_version_names_the_store_schema(tmp_path):
    env = {**os.environ, "STIMKIT_DB": str(tmp_path / "s.duckdb")}
    top = connection.migrations()[-1][0]
    out = subprocess.run([sys.executable, "-m", "stimkit", "--version"], env=env, cwd=tmp_path, capture_output=True,
                         text=True)
    assert out.returncode == 0 and out.stdout.strip() == f"stimkit {stimkit.__version__} (store schema {top})"
    connection.connect(tmp_path / "s.duckdb").close()
    out = subprocess.run([sys.executable, "-m", "stimkit", "--version"], env=env, cwd=tmp_path, capture_output=True,
                         text=True)
    assert out.stdout.strip().endswith(f"{tmp_path / 's.duckdb'}: schema {top}")
