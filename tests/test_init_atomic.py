"""`stimkit init DIR` is all or nothing and writes only inside DIR (issue 49, findings 2, 3
and 16): nothing is written through a link DIR holds, a blocked path or a full disk leaves
nothing (a retry then works), and the study's name is a TOML value written by a writer, so
a name with a quote round-trips and one with a line break is refused in one line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from stimkit.cli import app
from stimkit.study import study as studies

REPO = Path(__file__).resolve().parent.parent
ENV = ("STIMKIT_DB", "STIMKIT_STUDY", "STIMKIT_CATALOG_DIR")
SCAFFOLD = ["study.toml", "templates/simple/_set.toml", "templates/simple/adjective.j2",
            "templates/simple/count_noun.j2", "tests/food.toml", "wordlists/food.toml"]
SCAFFOLD_ORDER = ["study.toml", "wordlists/food.toml", "templates/simple/_set.toml", "templates/simple/count_noun.j2",
                  "templates/simple/adjective.j2", "tests/food.toml"]  # as init returns them
invoke = CliRunner().invoke


@pytest.fixture
def here(tmp_path, monkeypatch):
    for name in ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def tree(folder: Path) -> list[str]:
    """Every file, folder and link below `folder` (links not followed), as relative paths."""
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def files(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file() and not p.is_symlink())


# ----------------------------------------------------------------------- links inside DIR

def test_a_wordlists_link_in_the_folder_is_refused_and_nothing_is_written_through_it(here):
    elsewhere = here / "elsewhere"
    elsewhere.mkdir()
    study = here / "study"
    study.mkdir()
    (study / "wordlists").symlink_to(elsewhere)
    r = invoke(app, ["init", "study"])
    assert r.exit_code == 2 and "study/wordlists exists" in r.stderr and len(r.stderr.splitlines()) == 1, r.output
    assert list(elsewhere.iterdir()) == [] and tree(study) == ["wordlists"]


def test_a_dangling_study_file_link_is_refused_and_its_target_never_made(here):
    target = here / "victim" / "planted.toml"
    target.parent.mkdir()
    study = here / "study"
    study.mkdir()
    (study / "study.toml").symlink_to(target)
    r = invoke(app, ["init", "study"])
    assert r.exit_code == 2 and "study.toml exists" in r.stderr, r.output
    assert not target.exists() and list(target.parent.iterdir()) == [] and tree(study) == ["study.toml"]


def test_a_folder_that_is_a_link_is_refused(here):
    real = here / "real"
    real.mkdir()
    (here / "link").symlink_to(real)
    r = invoke(app, ["init", "link"])
    assert r.exit_code == 2 and "a link" in r.stderr, r.output
    assert list(real.iterdir()) == []


# ----------------------------------------------------------------------- all or nothing

def test_a_blocked_path_leaves_nothing_and_a_retry_works(here):
    study = here / "study"
    study.mkdir()
    (study / "templates").write_text("a file where init puts a folder\n")
    r = invoke(app, ["init", "study"])
    assert r.exit_code == 2 and "study/templates exists" in r.stderr, r.output
    assert tree(study) == ["templates"] and tree(here) == ["study", "study/templates"]
    (study / "templates").unlink()
    r = invoke(app, ["init", "study"])
    assert r.exit_code == 0 and files(study) == SCAFFOLD, r.output


def test_a_folder_with_other_files_gets_the_study_and_keeps_them(here):
    study = here / "repo"
    study.mkdir()
    (study / "README.md").write_text("mine\n")
    r = invoke(app, ["init", "repo"])
    assert r.exit_code == 0, r.output
    assert files(study) == sorted(SCAFFOLD + ["README.md"]) and (study / "README.md").read_text() == "mine\n"
    assert tree(here) == ["repo", *[f"repo/{p}" for p in tree(study)]]  # no staging folder left beside it
    # made with the usual modes (0777 / 0666 less the umask), not the staging folder's 0700
    umask = os.umask(0)
    os.umask(umask)
    assert (study / "wordlists").stat().st_mode & 0o777 == 0o777 & ~umask
    assert (study / "study.toml").stat().st_mode & 0o777 == 0o666 & ~umask


def test_a_new_folder_is_made_whole_with_its_parents(here):
    r = invoke(app, ["init", "a/b/c"])
    assert r.exit_code == 0, r.output
    assert files(here / "a" / "b" / "c") == SCAFFOLD and tree(here)[:3] == ["a", "a/b", "a/b/c"]
    umask = os.umask(0)
    os.umask(umask)
    assert (here / "a" / "b" / "c").stat().st_mode & 0o777 == 0o777 & ~umask
    assert studies.load(here / "a" / "b" / "c").name == "c"


INIT_UNDER_LIMIT = """
import resource, sys
from stimkit.cli import app
resource.setrlimit(resource.RLIMIT_FSIZE, (int(sys.argv[1]), resource.RLIM_INFINITY))
sys.argv = ["stimkit", "init", *sys.argv[2:]]
app()
"""


@pytest.mark.parametrize("existing", [False, True], ids=["new-folder", "folder-with-a-readme"])
@pytest.mark.parametrize("limit", [0, 1000])
def test_a_write_that_fails_part_way_leaves_nothing_and_a_retry_works(here, limit, existing):
    """RLIMIT_FSIZE makes a write past `limit` bytes in one file fail (EFBIG), as a full disk
    does: the study file (2.5 kB) is cut there, and nothing of it may stay."""
    if existing:
        (here / "study").mkdir()
        (here / "study" / "README").write_text("mine\n")
    before = tree(here)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", INIT_UNDER_LIMIT, str(limit), "study"], cwd=here, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stderr
    assert done.stderr.startswith("error: study: cannot write the study") and len(done.stderr.splitlines()) == 1
    assert "nothing was written" in done.stderr
    assert tree(here) == before  # no study file, no staging folder beside or inside it
    r = invoke(app, ["init", "study"])
    assert r.exit_code == 0 and files(here / "study") == sorted(SCAFFOLD + (["README"] if existing else [])), r.output


def test_a_move_that_fails_part_way_into_a_folder_is_undone(here, monkeypatch):
    """Into a folder that exists the entries move one by one: the last failing (ENOSPC) takes
    back those moved before it."""
    import errno

    from stimkit.errors import InputError
    from stimkit.study.scaffold import init

    study = here / "study"
    study.mkdir()
    (study / "README").write_text("mine\n")
    rename = os.rename

    def failing(src, dst, **kw):
        if dst == "wordlists":
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return rename(src, dst, **kw)

    monkeypatch.setattr(os, "rename", failing)
    with pytest.raises(InputError, match="nothing was written"):
        init(study)
    monkeypatch.setattr(os, "rename", rename)
    assert tree(study) == ["README"]
    assert [p.name for p in init(study)] == [Path(p).name for p in SCAFFOLD_ORDER]


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")
def test_a_full_disk_leaves_nothing(here):
    """A real full disk: a tmpfs of 8 kB holds two of the six files (a page each)."""
    disk = here / "disk"
    disk.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8k", "tmpfs", str(disk)], capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here")
    try:
        r = invoke(app, ["init", "disk/study"])
        assert r.exit_code == 1 and "No space left on device" in r.stderr and len(r.stderr.splitlines()) == 1, r.output
        assert tree(disk) == []
    finally:
        subprocess.run(["umount", str(disk)], check=True)


# ----------------------------------------------------------------------- the name is a TOML value

@pytest.mark.parametrize("name", ['say "hi"', "back\\slash", 'x"\ncatalog = "/etc', "tab\there", "é 日本 🙂", "'single'",
                                  "name = \"evil\"", "[options]", "a # not a comment"])
def test_a_name_round_trips_or_is_refused_in_one_line(here, name):
    r = invoke(app, ["init", "study", "--name", name])
    if any(c in name for c in "\n\t"):
        assert r.exit_code == 2 and len(r.stderr.splitlines()) == 1 and "study name" in r.stderr, r.output
        assert tree(here) == []
        return
    assert r.exit_code == 0, r.output
    loaded = studies.load(here / "study")
    assert loaded.name == name and loaded.catalog_dir == here / "study" / "tests"  # no key added, none moved
    assert loaded.tests == ("sweets-*",) and loaded.alpha == 0.05


@settings(max_examples=60, deadline=None)
@given(name=st.text(min_size=1, max_size=30))
def test_fuzz_names(tmp_path_factory, name):
    """Any name: written by the TOML writer and read back as itself, or refused (it holds a
    control character, a line or paragraph separator, or a bidi override)."""
    from stimkit.errors import UsageError
    from stimkit.study.scaffold import BIDI_CONTROLS, init

    folder = tmp_path_factory.mktemp("names") / "s"
    refused = any(ord(c) < 32 or 127 <= ord(c) < 160 or c in "\u2028\u2029" or c in BIDI_CONTROLS for c in name)
    if refused:
        with pytest.raises(UsageError):
            init(folder, name)
        assert not folder.exists()
    else:
        init(folder, name)
        assert studies.load(folder).name == name
