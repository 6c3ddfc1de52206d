"""The study folder as a trust boundary (issue 49, finding 1), as git's safe.directory
(CVE-2022-24765): a study file found from the working directory up is used only when it is
yours and not in a folder anyone may write to (a sticky folder of yours excepted); the search
stops at the home folder and at a file-system change; the store beside a study is never a link
out of its folder; a refused or broken study file above never blocks a command given --db or
--study. Other owners are made with os.chown (the suite runs as root; a test that needs to
chown skips otherwise), and a fuzzer builds random trees of owners, modes and links."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from stimkit.cli import app
from stimkit.errors import UsageError
from stimkit.study import study as studies

ME = os.geteuid()
OTHER = 1234 if ME != 1234 else 1235  # another user (no account needed: a number on the file)
ENV = ("STIMKIT_DB", "STIMKIT_STUDY", "STIMKIT_CATALOG_DIR", "STIMKIT_SAFE_DIRECTORIES")
invoke = CliRunner().invoke

needs_root = pytest.mark.skipif(ME != 0, reason="giving a file to another user needs root")

TESTS = '["mine-only"]\nsets = ["flowers@word", "insects@word", "pleasant@word", "unpleasant@word"]\n'


def write_study(folder: Path, name: str = "found", owner: int = ME) -> Path:
    """A study whose catalog folder holds one test, `<name>-only`: `stimkit catalog` lists it
    exactly when this study is in force."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "tests").mkdir(exist_ok=True)
    (folder / "tests" / "t.toml").write_text(TESTS.replace("mine", name))
    path = folder / "study.toml"
    path.write_text(f'name = "{name}"\ntests = ["{name}-only"]\ncatalog = "tests"\n')
    os.chown(path, owner, owner)
    return path


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A home folder of its own (the search stops there), no stimkit variable set."""
    for name in ENV:
        monkeypatch.delenv(name, raising=False)
    folder = tmp_path / "home"
    folder.mkdir()
    monkeypatch.setenv("HOME", str(folder))
    return folder


def below(home: Path, monkeypatch, folder: str, name: str, owner: int) -> Path:
    """A study in home/folder, and the working directory home/folder/work below it."""
    path = write_study(home / folder, name, owner=owner)
    (home / folder / "work").mkdir()
    monkeypatch.chdir(home / folder / "work")
    return path


def catalog_names(r) -> set[str]:
    return {line.split(",")[0] for line in r.stdout.splitlines()[1:]}


# ----------------------------------------------------------------------- who owns the file

@needs_root
def test_a_study_file_another_user_planted_above_is_refused_in_one_line(home, monkeypatch):
    planted = below(home, monkeypatch, "shared", "planted", OTHER)
    r = invoke(app, ["catalog", "-f", "csv"])
    assert r.exit_code == 2, r.output
    line = r.stderr.strip()
    assert "\n" not in line and str(planted) in line and f"uid {OTHER}" in line
    assert f"--study {planted}" in line and "STIMKIT_SAFE_DIRECTORIES" in line
    assert "planted-only" not in r.stdout
    with pytest.raises(UsageError):
        studies.find()
    # the user's own file in the same place is used: the catalog lists the study's test
    os.chown(planted, ME, ME)
    r = invoke(app, ["catalog", "-f", "csv"])
    assert r.exit_code == 0 and "planted-only" in catalog_names(r), r.output


@needs_root
def test_a_link_another_user_owns_is_refused_though_it_leads_to_your_file(home, monkeypatch):
    mine = write_study(home / "mine", "mine")
    shared = home / "shared"
    shared.mkdir()
    link = shared / "study.toml"
    link.symlink_to(mine)
    os.lchown(link, OTHER, OTHER)
    monkeypatch.chdir(shared)
    with pytest.raises(UsageError, match="belongs to uid"):
        studies.find()
    os.lchown(link, ME, ME)
    assert studies.find() == link


def test_a_link_to_a_file_in_a_folder_anyone_may_write_to_is_refused(home, monkeypatch):
    """Your link in your folder, to your file in an open folder: anyone could swap that file."""
    open_folder = home / "open"
    real = write_study(open_folder)
    open_folder.chmod(0o777)
    mine = home / "mine"
    mine.mkdir()
    (mine / "study.toml").symlink_to(real)
    monkeypatch.chdir(mine)
    with pytest.raises(UsageError, match=f"its folder {open_folder} is writable by anyone"):
        studies.find()
    open_folder.chmod(0o755)
    assert studies.find() == mine / "study.toml"


def test_a_folder_anyone_may_write_to_is_refused_unless_sticky_and_yours(home, monkeypatch):
    folder = home / "open"
    path = write_study(folder)
    (folder / "below").mkdir()
    monkeypatch.chdir(folder / "below")
    for mode, used in ((0o777, False), (0o1777, True), (0o775, True), (0o755, True)):
        folder.chmod(mode)
        if used:
            assert studies.find() == path, oct(mode)
        else:
            with pytest.raises(UsageError, match="writable by anyone"):
                studies.find()
    folder.chmod(0o755)


@needs_root
def test_a_sticky_folder_anyone_may_write_to_that_another_user_owns_is_refused(home, monkeypatch):
    folder = home / "tmp"
    path = write_study(folder)
    folder.chmod(0o1777)
    os.chown(folder, OTHER, OTHER)  # as /tmp is root's: the user's file there is not trusted by itself
    monkeypatch.chdir(folder / "tests")
    with pytest.raises(UsageError, match="sticky bit but belonging to"):
        studies.find()
    monkeypatch.setenv("STIMKIT_SAFE_DIRECTORIES", str(folder))
    assert studies.find() == path


@needs_root
def test_safe_directories_and_study_flag_trust_a_folder(home, monkeypatch):
    planted = below(home, monkeypatch, "lab", "lab", OTHER)
    shared = planted.parent
    # named outright: naming it is trusting it
    r = invoke(app, ["--study", str(planted), "catalog", "-f", "csv"])
    assert r.exit_code == 0 and "lab-only" in catalog_names(r), r.output
    for listed in (os.pathsep.join([str(home / "elsewhere"), str(shared)]), "*", f"{home}/lab/"):
        monkeypatch.setenv("STIMKIT_SAFE_DIRECTORIES", listed)
        assert studies.find() == planted, listed
        r = invoke(app, ["catalog", "-f", "csv"])
        assert r.exit_code == 0 and "lab-only" in catalog_names(r), r.output
    # a folder listed trusts that folder, not the folders below or above it
    monkeypatch.setenv("STIMKIT_SAFE_DIRECTORIES", str(home))
    with pytest.raises(UsageError):
        studies.find()


# ----------------------------------------------------------------------- where the search stops

def test_the_search_stops_at_the_home_folder(tmp_path, monkeypatch):
    for name in ENV:
        monkeypatch.delenv(name, raising=False)
    above = write_study(tmp_path, "above")       # a folder above home: never searched
    home = tmp_path / "home"
    (home / "project" / "sub").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(home / "project" / "sub")
    assert studies.find() is None
    r = invoke(app, ["catalog", "-f", "csv"])
    assert r.exit_code == 0 and "above-only" not in catalog_names(r), r.output
    own = write_study(home, "home")              # home itself is searched
    assert studies.find() == own
    own.unlink()
    monkeypatch.chdir(tmp_path / "tests")        # outside home the search goes on up
    assert studies.find() == above


@needs_root
def test_the_search_stops_where_the_file_system_changes(home, monkeypatch):
    write_study(home, "outer")
    mount = home / "mnt"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)], capture_output=True)
    if done.returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        assert os.stat(mount).st_dev != os.stat(home).st_dev
        (mount / "sub").mkdir()
        monkeypatch.chdir(mount / "sub")
        assert studies.find() is None
        inner = write_study(mount, "inner")     # on the same file system: found
        assert studies.find() == inner
    finally:
        monkeypatch.chdir(home)
        subprocess.run(["umount", str(mount)], check=True)


# ----------------------------------------------------------------------- the store beside a study

def test_a_store_link_out_of_the_study_folder_is_never_followed(home, monkeypatch):
    folder = home / "project"
    write_study(folder)
    elsewhere = home / "elsewhere"
    elsewhere.mkdir()
    target = elsewhere / "made-by-stimkit.duckdb"
    (folder / "stimkit.duckdb").symlink_to(target)
    (folder / "sub").mkdir()
    monkeypatch.chdir(folder / "sub")
    r = invoke(app, ["generate", "-w", "flowers", "-t", "word", "-q"])
    assert r.exit_code == 2, r.output
    assert str(folder / "stimkit.duckdb") in r.stderr and "not followed" in r.stderr and len(r.stderr.splitlines()) == 1
    assert not target.exists() and list(elsewhere.iterdir()) == []
    # the same with the study named: a link out of its folder is never followed
    r = invoke(app, ["--study", str(folder / "study.toml"), "generate", "-w", "flowers", "-t", "word", "-q"])
    assert r.exit_code == 2 and not target.exists(), r.output
    # --db names that store outright
    r = invoke(app, ["--db", str(target), "generate", "-w", "flowers", "-t", "word", "-q"])
    assert r.exit_code == 0 and target.exists(), r.output


@needs_root
def test_a_store_another_user_owns_beside_a_found_study_is_refused(home, monkeypatch):
    folder = home / "project"
    write_study(folder)
    store = folder / "stimkit.duckdb"
    store.write_bytes(b"")
    os.chown(store, OTHER, OTHER)
    monkeypatch.chdir(folder)
    r = invoke(app, ["generate", "-w", "flowers", "-t", "word", "-q"])
    assert r.exit_code == 2 and f"uid {OTHER}" in r.stderr and str(store) in r.stderr, r.output
    assert store.stat().st_size == 0


# ----------------------------------------------------------------------- --db and --study are never blocked

@needs_root
@pytest.mark.parametrize("broken", ["planted", "not toml", "unknown key"])
def test_a_broken_or_refused_study_above_never_blocks_db_or_study(home, monkeypatch, broken):
    path = below(home, monkeypatch, "shared", "above", OTHER if broken == "planted" else ME)
    if broken == "not toml":
        path.write_text("name = \n")
    elif broken == "unknown key":
        path.write_text('name = "x"\nfrobnicate = 1\n')
    r = invoke(app, ["catalog", "-f", "csv"])
    assert r.exit_code == 2 and str(path) in r.stderr, r.output
    r = invoke(app, ["--db", str(home / "s.duckdb"), "catalog", "-f", "csv"])
    assert r.exit_code == 0, r.output
    assert "weat6" in catalog_names(r) and "above-only" not in catalog_names(r)
    assert str(path) in r.stderr and "passed over" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    mine = write_study(home / "mine", "mine")
    r = invoke(app, ["--study", str(mine), "catalog", "-f", "csv"])
    assert r.exit_code == 0 and "mine-only" in catalog_names(r), r.output


def test_a_broken_study_in_this_folder_still_stops_a_command_given_db(home, monkeypatch):
    """Passed over only from above: the study of the folder you are in, broken, is an error."""
    path = write_study(home / "here")
    path.write_text("name = \n")
    monkeypatch.chdir(home / "here")
    r = invoke(app, ["--db", str(home / "s.duckdb"), "catalog", "-f", "csv"])
    assert r.exit_code == 2 and str(path) in r.stderr, r.output


# ----------------------------------------------------------------------- the fuzzer

KINDS = ("none", "file", "dir", "link", "dangling", "loop")       # what `study.toml` is at a level
STORES = ("none", "file", "link-in", "link-out", "dangling-out", "loop")
MODES = (0o755, 0o700, 0o775, 0o777, 0o1777)

level = st.fixed_dictionaries({
    "folder_uid": st.sampled_from([ME, OTHER]), "mode": st.sampled_from(MODES),
    "kind": st.sampled_from(KINDS), "file_uid": st.sampled_from([ME, OTHER]), "link_uid": st.sampled_from([ME, OTHER]),
    "store": st.sampled_from(STORES), "store_uid": st.sampled_from([ME, OTHER]),
    "safe": st.sampled_from([False, False, False, False, True])})  # listed in STIMKIT_SAFE_DIRECTORIES


def build(root: Path, levels: list[dict]) -> list[Path]:
    """The folders root/l0/l1/..., each with what its level says; returns them, top first."""
    folders, folder = [], root
    for i, lv in enumerate(levels):
        folder = folder / f"l{i}"
        folder.mkdir()
        folders.append(folder)
        study = folder / "study.toml"
        if lv["kind"] == "file":
            study.write_text('name = "x"\n')
            os.chown(study, lv["file_uid"], lv["file_uid"])
        elif lv["kind"] == "dir":
            study.mkdir()
        elif lv["kind"] == "link":
            real = folder / "real.toml"
            real.write_text('name = "x"\n')
            os.chown(real, lv["file_uid"], lv["file_uid"])
            study.symlink_to("real.toml")
            os.lchown(study, lv["link_uid"], lv["link_uid"])
        elif lv["kind"] == "dangling":
            study.symlink_to(root / "nowhere.toml")
        elif lv["kind"] == "loop":
            study.symlink_to("study.toml")
        store = folder / "stimkit.duckdb"
        if lv["store"] == "file":
            store.write_bytes(b"")
            os.chown(store, lv["store_uid"], lv["store_uid"])
        elif lv["store"] == "link-in":
            (folder / "real.duckdb").write_bytes(b"")
            os.chown(folder / "real.duckdb", lv["store_uid"], lv["store_uid"])
            store.symlink_to("real.duckdb")
            os.lchown(store, lv["store_uid"], lv["store_uid"])
        elif lv["store"] == "link-out":
            store.symlink_to(root / "outside.duckdb")
        elif lv["store"] == "dangling-out":
            store.symlink_to(root.parent / "nowhere" / "x.duckdb")
        elif lv["store"] == "loop":
            store.symlink_to("stimkit.duckdb")
    for folder, lv in zip(folders, levels):  # modes and owners last: a 0700 folder of another still lets root in
        os.chown(folder, lv["folder_uid"], lv["folder_uid"])
        folder.chmod(lv["mode"])
    return folders


def expected(levels: list[dict], every: bool) -> tuple[int | None, bool, bool]:
    """(the level whose study file the search meets or None, whether it may be used, whether
    the store beside it may be used), from the levels as drawn, not from the file system."""
    for i in reversed(range(len(levels))):
        lv = levels[i]
        if lv["kind"] not in ("file", "link"):  # a folder, a dangling link, a loop: no study file
            continue
        safe = every or lv["safe"]
        owners = [lv["file_uid"]] + ([lv["link_uid"]] if lv["kind"] == "link" else [])
        open_folder = lv["mode"] & stat.S_IWOTH and not (lv["mode"] & stat.S_ISVTX and lv["folder_uid"] == ME)
        used = safe or (all(u == ME for u in owners) and not open_folder)
        if lv["store"] in ("link-out", "dangling-out", "loop"):
            store_ok = False
        elif lv["store"] in ("file", "link-in"):
            store_ok = safe or lv["store_uid"] == ME
        else:
            store_ok = True
        return i, used, store_ok
    return None, False, False


class Hang(Exception):
    pass


def _alarm(signum, frame):
    raise Hang("a case ran past 10 s")


@needs_root
@settings(max_examples=150, deadline=10_000, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(levels=st.lists(level, min_size=1, max_size=5), every=st.sampled_from([False] * 9 + [True]),  # every: `*`
       extra=st.integers(0, 2))
def test_fuzz_discovery_over_owners_modes_and_links(tmp_path_factory, monkeypatch, levels, every, extra):
    from stimkit.study import trust

    base = tmp_path_factory.mktemp("fuzz")
    home = base / "home"
    home.mkdir()
    folders = build(home, levels)
    cwd = folders[-1]
    for k in range(extra):  # the working directory: the deepest level or a plain folder below it
        cwd = cwd / f"below{k}"
        cwd.mkdir()
    for name in ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(home))
    safe = [str(f) for f, lv in zip(folders, levels) if lv["safe"]]
    monkeypatch.setenv("STIMKIT_SAFE_DIRECTORIES", "*" if every else os.pathsep.join(safe))
    at, used, store_ok = expected(levels, every)
    event("no study file" if at is None else "refused" if not used else f"used, store {'used' if store_ok else 'refused'}")
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(10)
    try:
        if at is None:
            assert studies.find(cwd) is None
            return
        path = folders[at] / "study.toml"
        if not used:
            with pytest.raises(UsageError) as e:
                studies.find(cwd)
            message = str(e.value)
            assert "\n" not in message and message.startswith(f"{path}: not used") and "--study" in message
            return
        assert studies.find(cwd) == path
        if store_ok:
            assert trust.store_beside(path, "stimkit.duckdb", trusted=False) == folders[at] / "stimkit.duckdb"
        else:
            with pytest.raises(UsageError) as e:
                trust.store_beside(path, "stimkit.duckdb", trusted=False)
            assert "\n" not in str(e.value) and str(e.value).startswith(str(folders[at] / "stimkit.duckdb"))
        assert not (base / "home" / "outside.duckdb").exists()
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
