"""A new store is built under a hidden name beside its path and moved into place when the
command that creates it ends, so that a command that fails or is killed on a new `--db`
path leaves no file there.

The hidden file is `.NAME.PID.new` in the store's folder (the same file system, so the move
is one atomic rename). Python cannot run code after SIGKILL, so a guard process started
with the staging file waits on a pipe from the command: when the command dies, the pipe
closes and the guard removes whatever is still staged. A guard that was itself killed (a
machine that went down) leaves a file whose owner is dead: the next command on that path
removes it (`remove_stale`).

A command's temporary folder (`scratch`) is kept the same way: named with its process id,
removed when the command ends, by the guard when it is killed, and, when the guard was
killed too, by the next command that makes one (`remove_stale_folders`).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import StoreError
from .journal import alive as _alive

SUFFIX = ".new"

# The guard: block until the pipe from the command closes (it ended, however it ended),
# then remove the staged files if they are still there (a published store was renamed away),
# and the command's temporary folders (never following a link out of them).
_GUARD = """
import os, shutil, sys
sys.stdin.buffer.read()
for p in sys.argv[1:]:
    try:
        if os.path.isdir(p) and not os.path.islink(p):
            shutil.rmtree(p, ignore_errors=True)
        else:
            os.unlink(p)
    except OSError:
        pass
"""


def _guard(paths) -> subprocess.Popen:
    """A guard process that removes `paths` when this process ends (see _GUARD)."""
    return subprocess.Popen([sys.executable, "-S", "-c", _GUARD, *map(str, paths)],
                            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)  # a Ctrl-C to the command's group is not the guard's


def _release_guard(guard: subprocess.Popen) -> None:
    guard.stdin.close()  # the guard finds nothing left to remove, and exits
    guard.wait()


def _started(pid: int) -> float | None:
    """When a process started (Linux: its start in clock ticks after boot), else None."""
    try:
        ticks = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])  # field 22
        with open("/proc/stat") as f:
            boot = next(int(line.split()[1]) for line in f if line.startswith("btime "))
        return boot + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, StopIteration):
        return None


def remove_stale_folders(prefix: str, root: Path | None = None) -> list[Path]:
    """Remove this user's folders `<prefix><pid>-*` under `root` (the temporary folder) whose
    process is gone, or is a later process that reuses its id; returns them."""
    root = Path(tempfile.gettempdir() if root is None else root)
    removed = []
    for p in root.glob(f"{prefix}*-*"):
        pid = p.name[len(prefix):].split("-", 1)[0]
        try:
            st = os.lstat(p)
        except OSError:
            continue
        if not pid.isdigit() or not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
            continue  # not a folder of ours (a link, another user's): never touched
        started = _started(int(pid))
        if int(pid) != os.getpid() and (not _alive(int(pid)) or (started is not None and started > st.st_mtime + 1)):
            shutil.rmtree(p, ignore_errors=True)
            removed.append(p)
    return removed


@contextlib.contextmanager
def scratch(prefix: str):
    """A temporary folder for one command, `<prefix><pid>-XXXX`: removed when the command
    ends, by a guard process when it is killed, else by the next `scratch` of that prefix."""
    remove_stale_folders(prefix)
    path = Path(tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-"))
    guard = _guard([path])
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
        _release_guard(guard)


def staging_path(path: Path, pid: int | None = None) -> Path:
    return path.parent / f".{path.name}.{os.getpid() if pid is None else pid}{SUFFIX}"


def _files(staged: Path) -> list[Path]:
    return [staged, Path(f"{staged}.wal")]  # DuckDB's write-ahead log sits beside its file


def remove_stale(path: Path) -> list[Path]:
    """Remove staged stores for `path` whose command is no longer running; returns them."""
    removed = []
    prefix = f".{path.name}."
    for p in path.parent.glob(f".{path.name}.*{SUFFIX}"):
        pid = p.name[len(prefix):-len(SUFFIX)]
        if pid.isdigit() and not _alive(int(pid)):
            for f in _files(p):
                if f.exists():
                    f.unlink()
                    removed.append(f)
    return removed


def _lock_path(path: Path) -> Path:
    return path.parent / f".{path.name}.lock"


def _creation_lock(path: Path, on_wait=None) -> int | None:
    """An exclusive lock (flock) on `.NAME.lock` beside the store while it is created; waits
    for another command that holds it. None where the system has no flock."""
    try:
        import fcntl
    except ImportError:  # not POSIX: commands creating one store at once stay an error (Staging._aside)
        return None
    try:
        fd = os.open(_lock_path(path), os.O_CREAT | os.O_RDWR, 0o600)
    except OSError as e:
        raise StoreError(f"{path}: cannot create a store: {e.strerror or e}") from None
    from .connection import LOCK_TIMEOUT

    deadline, told = time.monotonic() + LOCK_TIMEOUT, False
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            if time.monotonic() > deadline:
                os.close(fd)
                raise StoreError(f"{path}: another command has been creating this store for over {LOCK_TIMEOUT:g} s "
                                 "(STIMKIT_LOCK_TIMEOUT)") from None
            if not told and on_wait is not None:
                on_wait(f"waiting for {path}: another command is creating it")
                told = True
            time.sleep(0.1)


def _release(path: Path, fd: int | None) -> None:
    if fd is None:
        return
    try:
        _lock_path(path).unlink(missing_ok=True)  # a waiter holds the same file, unlinked: it goes on
    finally:
        os.close(fd)


@dataclass
class Staging:
    """A store being created at `path`, built at `staged` until `finish`."""
    path: Path
    staged: Path
    guard: subprocess.Popen | None = field(default=None, repr=False)
    lock: int | None = field(default=None, repr=False)   # the creation lock's file descriptor, held until finish

    @classmethod
    def start(cls, path: Path, on_wait=None) -> "Staging | None":
        """Stage a new store for `path`; None when another command created it while this one
        waited for the creation lock (open it as it is). Two commands that create one store at
        once take turns: the second waits, then uses the store the first made."""
        path = Path(path)
        if path.is_symlink():  # a link to a store not made yet: make it where the link leads (the link
            path = path.resolve()  # itself is a file there already, and publishing must not replace it)
        if not path.parent.is_dir():
            raise StoreError(f"{path}: cannot create a store: no folder {path.parent}")
        if not os.access(path.parent, os.W_OK | os.X_OK):
            raise StoreError(f"{path}: cannot create a store: folder {path.parent} is not writable")
        lock = _creation_lock(path, on_wait)
        if path.exists():  # made while this command waited: not ours to create
            _release(path, lock)
            return None
        remove_stale(path)
        staged = staging_path(path)
        for f in _files(staged):  # this pid's leftovers (a pid reused after a crash)
            f.unlink(missing_ok=True)
        guard = _guard([*_files(staged), *([_lock_path(path)] if lock is not None else [])])  # a killed command's lock too
        return cls(path, staged, guard, lock)

    def finish(self, keep: bool) -> None:
        """Move the staged store to its path (`keep`) or remove it, then release the guard.
        The store must be closed. Another process may have created the path meanwhile: the
        store is then kept beside it under a visible name, and that is an error."""
        try:
            if keep and self.staged.exists():
                self._publish()
            else:
                for f in _files(self.staged):
                    f.unlink(missing_ok=True)
        finally:
            if self.guard is not None:
                _release_guard(self.guard)
                self.guard = None
            if self.lock is not None:
                _release(self.path, self.lock)
                self.lock = None

    def _publish(self) -> None:
        wal = Path(f"{self.staged}.wal")
        try:
            os.link(self.staged, self.path)  # fails if the path exists: never replaces another's store
        except FileExistsError:
            self._aside(wal)
        except OSError:  # a file system without hard links: check, then rename
            if self.path.exists():
                self._aside(wal)
            os.replace(self.staged, self.path)
            if wal.exists():
                os.replace(wal, f"{self.path}.wal")
            return
        if wal.exists():
            os.replace(wal, f"{self.path}.wal")
        self.staged.unlink()

    def _aside(self, wal: Path):
        aside = self.path.with_name(f"{self.path.stem}.{os.getpid()}{self.path.suffix or '.duckdb'}")
        os.replace(self.staged, aside)
        if wal.exists():
            os.replace(wal, f"{aside}.wal")
        raise StoreError(f"{self.path}: another command created this store while this one ran; "
                         f"this command's store is kept at {aside}")
