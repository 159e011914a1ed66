"""The worker process of a local multi-process run, started by ``runners.LocalRunner``.

Beam's own worker entry point logs its start-up (channels, state cache, options)
at INFO straight to the terminal, a dozen lines a worker and stage, because an
import-time warning of Beam's gives the root logger a stderr handler before the
worker sets anything up. This entry point installs the handler first, with the
same rule as the command line: Beam's modules reach the terminal only from ERROR
up, anything else from WARNING up. Every record still goes to the driver through
Beam's logging service, so ``--verbose`` shows them there.

It also makes the worker end with the build. Beam's SDK worker goes on for
minutes after its driver is gone (killed, or stopped by a signal Python does not
turn into an exception), holding its memory. The runner passes the driver's pid
(``--driver-pid=N``); a watchdog thread checks every ``POLL_SECONDS`` that the
driver is still there and is still our parent, and when not, kills the worker's
own child processes, if any, and exits at once (``os._exit``: no cleanup that
could wait on the dead driver). A pid the system has given to a new process, or a
killed driver its parent has not yet reaped (a zombie), count as gone on Linux,
where ``/proc`` tells them apart; elsewhere the parent check and whether the pid
exists decide. Linux's parent-death signal (``PR_SET_PDEATHSIG``) is not used: it
fires when the *thread* that started the worker ends, and Beam starts workers
from threads of its own.

Its shell starts it with SIGINT ignored where the driver ends its workers on an
interrupt (``runners.local_worker_command``): a terminal's Ctrl-C, which reaches the
whole process group, then prints no KeyboardInterrupt of the worker's, even during
its start-up, and the driver's SIGTERM ends it (quietly: no Python handler runs).

Kept free of Beam imports at module level: logging must be set before Beam loads.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable

MODULE = "clirmatrix.beam_jobs.local_worker"  # python -m MODULE: how the runner starts it
DRIVER_FLAG = "--driver-pid"
POLL_SECONDS = 0.5
_PROC = os.path.exists("/proc/self/stat")
FINDS_WORKERS = _PROC  # whether ``local_workers`` can list a driver's workers


def beam_is_quiet(record: logging.LogRecord) -> bool:
    """Drop what Beam's modules log below ERROR, whatever logger they use (some log to the root logger on import)."""
    return record.levelno >= logging.ERROR or "apache_beam" not in record.pathname


def driver_pid(argv: list[str]) -> tuple[int | None, list[str]]:
    """The ``--driver-pid`` the runner passed (None without one), and the arguments without it (Beam may read them)."""
    pid, rest = None, []
    args = iter(argv)
    for arg in args:
        if arg == DRIVER_FLAG:
            pid = int(next(args))
        elif arg.startswith(DRIVER_FLAG + "="):
            pid = int(arg.split("=", 1)[1])
        else:
            rest.append(arg)
    return pid, rest


def _stat(pid: int) -> list[bytes] | None:
    """The fields of ``/proc/PID/stat`` from the state on (field 3), None when there is no such process."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as file:
            data = file.read()
    except OSError:
        return None
    return data[data.rindex(b")") + 2 :].split()  # the command name, in parentheses, may hold spaces


def process_identity(pid: int) -> bytes | None:
    """What tells this process from a later one with its pid (Linux: its start time); None once it has ended.

    A zombie (ended, not yet reaped by its parent) has ended. Without ``/proc``
    only whether the pid exists is known (and on Windows, where probing a pid
    with a signal would kill it, nothing: the pid counts as alive).
    """
    if _PROC:
        fields = _stat(pid)
        return None if fields is None or fields[0] in (b"Z", b"X", b"x") else fields[19]
    if os.name == "nt":
        return b""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        return None  # another user's process: the pid was reused, the driver (ours) is gone
    return b""


def descendants(pid: int) -> list[int]:
    """The processes below ``pid`` (Linux; elsewhere none are found)."""
    if not _PROC:
        return []
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            fields = _stat(int(name))
            if fields is not None:
                children.setdefault(int(fields[1]), []).append(int(name))
    found, todo = [], [pid]
    while todo:
        below = children.get(todo.pop(), [])
        found += below
        todo += below
    return found


def local_workers(driver: int) -> list[int]:
    """The live worker processes this module runs for ``driver`` (Linux; elsewhere none are found).

    A worker's shell before its ``exec`` counts too: it holds the same words in one argument.
    """
    found = []
    for pid in descendants(driver):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as file:
                words = file.read().replace(b"\0", b" ").split()
        except OSError:
            continue
        if MODULE.encode() in words and f"{DRIVER_FLAG}={driver}".encode() in words:
            found.append(pid)
    return found


def end_worker() -> None:
    """Kill this worker's own child processes, if any, then exit at once."""
    for pid in descendants(os.getpid()):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    os._exit(1)


def driver_gone(driver: int, identity: bytes | None, parent: int) -> bool:
    """Whether the driver has ended: its pid no longer names the process it named, or we have another parent."""
    return os.getppid() != parent or identity is None or process_identity(driver) != identity


def watch_driver(driver: int | None = None, interval: float = POLL_SECONDS, on_gone: Callable[[], None] = end_worker) -> threading.Thread:
    """Start a daemon thread that calls ``on_gone`` (by default: ends the worker) once the driver has ended.

    ``driver`` defaults to the parent process. The parent at start counts too:
    the runner starts the worker directly (``exec``), so it is the driver, and
    when a shell stands between them the worker still ends if the shell is killed.
    """
    parent = os.getppid()
    driver = parent if driver is None else driver
    identity = process_identity(driver)

    def watch() -> None:
        while not driver_gone(driver, identity, parent):
            time.sleep(interval)
        on_gone()

    thread = threading.Thread(target=watch, name="clirmatrix-driver-watchdog", daemon=True)
    thread.start()
    return thread


def main() -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setLevel(logging.WARNING)
    handler.addFilter(beam_is_quiet)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s", handlers=[handler], force=True)
    driver, sys.argv = driver_pid(sys.argv)
    watch_driver(driver)
    from apache_beam.runners.worker import sdk_worker_main

    sdk_worker_main.main(sys.argv)


if __name__ == "__main__":
    main()
