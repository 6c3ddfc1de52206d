"""Which study files and stores stimkit may use when it finds them by itself, as git decides
which repositories it may use (`safe.directory`, CVE-2022-24765).

A command run without --study looks for `study.toml` in the working directory and the folders
above it. A file found that way supplies lists, tests and a store path to every command, so
another user who can write in a folder above yours (a shared /tmp, a lab share) must not be
able to plant one. A file found is used only when:

- you own it (the link and the file it leads to, when it is a link), and
- its folder (for a link, the file's folder too) is not writable by anyone, unless it has
  the sticky bit and is yours (then no one else can rename or replace what is in it);

or when its folder is listed in $STIMKIT_SAFE_DIRECTORIES (folders separated by os.pathsep;
`*` trusts every folder). --study (or $STIMKIT_STUDY) names a study outright: naming it is
trusting it. The search stops at your home folder and where the file system changes, as git's
does (GIT_DISCOVERY_ACROSS_FILESYSTEM).

The store beside a study (`stimkit.duckdb` in its folder) is never a link that leads out of
that folder, whoever made the link, and beside a found study it is yours too.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ..errors import UsageError

SAFE_ENV = "STIMKIT_SAFE_DIRECTORIES"
ALL = "*"


def _uid() -> int:
    return os.geteuid() if hasattr(os, "geteuid") else -1


def _owner(uid: int) -> str:
    """`bob (uid 1001)`: who owns a file, as one short phrase."""
    try:
        import pwd

        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except (ImportError, KeyError):
        return f"uid {uid}"


def safe_folders() -> tuple[bool, frozenset[Path]]:
    """($STIMKIT_SAFE_DIRECTORIES is `*`, the folders it lists, resolved)."""
    raw = os.environ.get(SAFE_ENV, "")
    entries = [e.strip() for e in raw.split(os.pathsep) if e.strip()]
    folders = set()
    for entry in entries:
        if entry == ALL:
            return True, frozenset()
        try:
            folders.add(Path(entry).expanduser().resolve())
        except (OSError, RuntimeError, ValueError):  # a name the system refuses trusts nothing
            continue
    return False, frozenset(folders)


def is_safe(folder: Path) -> bool:
    """Whether the user listed `folder` (or `*`) in $STIMKIT_SAFE_DIRECTORIES."""
    everything, folders = safe_folders()
    return everything or Path(folder).resolve() in folders


def distrust(path: Path) -> str | None:
    """Why the found file `path` may not be used (a short clause), or None when it may."""
    if _uid() < 0:  # no owners on this system (Windows): nothing to compare
        return None
    me = _uid()
    try:
        link, target = os.lstat(path), os.stat(path)
    except OSError as e:
        return f"it cannot be read ({e.strerror or e})"
    for st in (link, target):
        if st.st_uid != me:
            return f"it belongs to {_owner(st.st_uid)}, not to you, {_owner(me)}"
    # the link's folder and its file's: anyone who may write in either could swap the file
    for folder in dict.fromkeys((path.parent, Path(os.path.realpath(path)).parent)):
        try:
            f = os.stat(folder)
        except OSError as e:
            return f"its folder cannot be read ({e.strerror or e})"
        if f.st_mode & stat.S_IWOTH and not (f.st_mode & stat.S_ISVTX and f.st_uid == me):
            sticky = ("with the sticky bit but belonging to " + _owner(f.st_uid) if f.st_mode & stat.S_ISVTX
                      else "without the sticky bit")
            return f"its folder {folder} is writable by anyone ({sticky})"
    return None


def how_to_trust(path: Path) -> str:
    return f"to use it: --study {path}, or add {path.parent} to ${SAFE_ENV} (folders separated by {os.pathsep!r}; * for all)"


def check_found(path: Path) -> None:
    """Refuse the found study file `path` (one line: which file, why, how to trust it) unless
    it may be used."""
    if is_safe(path.parent):
        return
    why = distrust(path)
    if why is not None:
        raise UsageError(f"{path}: not used: {why}; {how_to_trust(path)}")


def ceiling() -> Path | None:
    """The folder the search stops at: the home folder (searched itself, never above)."""
    try:
        return Path.home().resolve()
    except (OSError, RuntimeError, KeyError):
        return None


def device(folder: Path) -> int | None:
    try:
        return os.stat(folder).st_dev
    except OSError:
        return None


def search(start: Path, name: str) -> Path | None:
    """The nearest `name` that is a file (or a link to one) in `start` or a folder above it,
    stopping at the home folder and where the file system changes (not yet checked: check_found)."""
    home, dev = ceiling(), device(start)
    for folder in (start, *start.parents):
        if device(folder) != dev:  # another file system (or a folder that cannot be read): stop
            break
        candidate = folder / name
        try:
            found = candidate.is_file()
        except OSError:  # a name the system refuses: nothing there
            found = False
        if found:
            return candidate
        if folder == home:
            break
    return None


def store_beside(study_file: Path, name: str, trusted: bool) -> Path:
    """The store `name` in the folder of `study_file`, refused (one line) when it is a link
    that leads out of that folder, or, for a study found rather than named (`trusted` False)
    outside a safe folder, when it or its write-ahead log belongs to someone else."""
    folder = Path(study_file).parent
    store = folder / name
    for path in (store, Path(f"{store}.wal")):
        if not os.path.islink(path):
            continue
        try:
            real_folder = folder.resolve()
            target = path.resolve()
        except (OSError, RuntimeError):  # a loop of links
            raise UsageError(f"{path}: a link that leads nowhere: not followed; name a store with --db") from None
        if not target.is_relative_to(real_folder):
            raise UsageError(f"{path}: a link out of the study's folder (to {target}): not followed; "
                             f"name that store with --db {target} to use it") from None
    if trusted or is_safe(folder):
        return store
    for path in (store, Path(f"{store}.wal")):
        if os.path.lexists(path):
            why = distrust(path)
            if why is not None:
                raise UsageError(f"{path}: the store beside {study_file}: not used: {why}; name a store with --db, "
                                 f"or add {folder} to ${SAFE_ENV}")
    return store
