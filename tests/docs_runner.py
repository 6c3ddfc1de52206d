"""A fork server for the manual's examples (tests/test_docs.py): `stimkit` there is a shim that
hands its arguments, working folder, environment and stdin/stdout/stderr to this server, which
has imported stimkit once and forks a child per command to run `stimkit.cli.main`. Each command
still runs in a process of its own, as from a shell, without paying Python's and stimkit's
imports (about 0.5 s of CPU) each time: the manual has some 70 commands.

    python tests/docs_runner.py serve SOCKET      # the server (started by the docs test)
    python -S tests/docs_runner.py client SOCKET ARGS...   # the shim's body: exits with the command's status

The server imports libraries but uses none (no thread pool started), so forking it is safe."""

from __future__ import annotations

import importlib
import json
import os
import signal
import socket
import struct
import sys


def serve(path: str) -> None:
    import traceback

    import duckdb  # noqa: F401  (imported once here, used in the children)
    import numpy  # noqa: F401
    import polars  # noqa: F401

    import stimkit.api  # noqa: F401
    import stimkit.cli as cli

    # The heavy libraries of the examples that encode with a transformer or draw figures:
    # imported, never used here (torch starts its threads on first use, not on import).
    for heavy in ("torch", "transformers", "matplotlib.pyplot", "scipy.stats", "statsmodels.api"):
        try:
            importlib.import_module(heavy)
        except ImportError:
            pass

    cli.register()
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)      # children reaped by the kernel
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(8)
    server.settimeout(1.0)
    parent = os.getppid()
    while True:
        try:
            conn, _ = server.accept()
        except TimeoutError:
            if os.getppid() != parent:      # the test that started it is gone: so is the server
                return
            continue
        conn.settimeout(None)
        message, fds, _, _ = socket.recv_fds(conn, 1 << 20, 3)
        if os.fork():
            conn.close()
            for fd in fds:
                os.close(fd)
            continue
        server.close()
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        request = json.loads(message)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        sys.argv = ["stimkit", *request["args"]]
        code = 1
        try:
            cli.main(request["args"])
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        except BaseException:  # noqa: BLE001  (a crash is the command's failure, shown as a shell would)
            traceback.print_exc()
        finally:
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except Exception:  # noqa: BLE001
                    pass
            if os.environ.get("DOCS_TEST_STATE"):   # the command's CPU seconds, for the test's timings
                import resource

                used = [resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
                with open(os.path.join(os.environ["DOCS_TEST_STATE"], "cpu"), "a") as log:
                    log.write(f"{sum(u.ru_utime + u.ru_stime for u in used)}\n")
            try:
                conn.sendall(struct.pack("i", code))
            finally:
                os._exit(code)


def client(path: str, args: list[str]) -> int:
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(path)
    request = {"args": args, "cwd": os.getcwd(), "env": dict(os.environ)}
    socket.send_fds(conn, [json.dumps(request).encode()], [0, 1, 2])
    data = b""
    while len(data) < 4:
        chunk = conn.recv(4 - len(data))
        if not chunk:
            return 1        # the command's process died without a status
        data += chunk
    return struct.unpack("i", data)[0]


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(sys.argv[2])
    else:
        sys.exit(client(sys.argv[2], sys.argv[3:]))
