"""Ctrl-C for commands that transfer files in threads (``download``, ``dumps fetch``): stopped within a chunk, one line, parts kept.

``Stop`` is one Ctrl-C shared by every transfer of a command: each checks it between
chunks, and setting it hangs up on the connections in flight, so that a read waiting
on a slow server returns at once. ``run_stoppable`` runs the transfers in threads and
turns a Ctrl-C into ``stop.set()``, a second of grace, and the caller's ``Interrupted``:
a KeyboardInterrupt whose note says which ``.part`` files were kept for the next run to
resume, which the command line prints as its one line before it exits with 130.
"""

from __future__ import annotations

import os
import signal
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path

from clirmatrix.pipeline.errors import InputError, add_note


class Stopped(InputError, RuntimeError):
    """A transfer or a check that ended because the command was stopped; what arrived is kept to resume."""


class Interrupted(KeyboardInterrupt):
    """Ctrl-C stopped a download within a chunk; ``kept``: the ``.part`` files a rerun resumes (a KeyboardInterrupt, as Ctrl-C is)."""

    def __init__(self, folder: str | Path, kept: Sequence[Path] = ()) -> None:
        self.folder, self.kept = Path(folder), list(kept)
        count = len(self.kept)
        what = (f"kept {count} partial file{'' if count == 1 else 's'} (.part) in {self.folder}; run the same command again to resume" if count
                else f"nothing had arrived, nothing kept in {self.folder}; run the same command again")
        super().__init__(f"interrupted: {what}")
        add_note(self, what)  # what a command line that reports a KeyboardInterrupt's notes shows after "interrupted"


class Stop:
    """One Ctrl-C shared by every transfer of a command, seen between chunks; ``set`` also wakes a read waiting on the network.

    A read blocks until bytes come or its timeout (a minute) passes: ``set`` shuts the
    connections in flight down, so their reads return at once and no transfer outlives a chunk.
    """

    def __init__(self) -> None:
        self._event, self._lock, self._open = threading.Event(), threading.Lock(), set()
        self.is_set = self._event.is_set
        self.wait = self._event.wait  # sleep, cut short by a stop (the waits between attempts)

    def check(self, what: str) -> None:
        if self._event.is_set():
            raise Stopped(f"{what}: stopped")

    def set(self) -> None:
        with self._lock:
            self._event.set()
            for response in self._open:
                _hang_up(response)

    @contextmanager
    def watching(self, response: object) -> Iterator[None]:
        """While a response is read: hung up on when stopped (at once, if already)."""
        with self._lock:
            self._open.add(response)
            if self._event.is_set():
                _hang_up(response)
        try:
            yield
        finally:
            with self._lock:
                self._open.discard(response)


def _hang_up(response: object) -> None:
    """Shut a response's connection down through a copy of its socket (the reader's own object is left to its thread)."""
    try:
        copy = os.dup(response.fileno())  # type: ignore[attr-defined]
    except (AttributeError, OSError, ValueError):
        return  # already closed
    try:
        with socket.socket(fileno=copy) as connection, suppress(OSError):
            connection.shutdown(socket.SHUT_RDWR)
    except OSError:  # not a socket (a local file, read to its end at once): the copy is still ours to close
        os.close(copy)


def run_stoppable(work: Callable, groups: Sequence[Sequence], workers: int, stop: Stop, interrupted: Callable[[], Interrupted],
                  grace: float = 1.0) -> list[list]:
    """``work`` on every item, ``workers`` threads for each group (a host); results in the groups' order.

    On Ctrl-C ``stop`` is set and the threads get ``grace`` seconds to end (they end within
    a chunk; a further Ctrl-C meanwhile is ignored, so no traceback comes of it); then, as
    when the caller set ``stop``, ``interrupted()`` is raised. The threads are daemons: one
    still waiting to connect cannot hold the process, and once stopped it writes nothing.
    """
    results: list[list] = [[None] * len(group) for group in groups]
    failures: list[BaseException] = []

    def worker(number: int, todo: deque) -> None:
        while not stop.is_set():
            try:
                index, item = todo.popleft()
            except IndexError:
                return
            try:
                results[number][index] = work(item)
            except BaseException as error:  # a bug of ours: raised in the calling thread below
                failures.append(error)
                return

    threads = []
    for number, group in enumerate(groups):
        todo = deque(enumerate(group))
        threads += [threading.Thread(target=worker, args=(number, todo), daemon=True) for _ in range(min(max(1, workers), len(group)))]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    except KeyboardInterrupt:
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if threading.current_thread() is threading.main_thread() else None
        stop.set()
        deadline = time.monotonic() + grace
        try:
            for thread in threads:
                if thread.ident is not None:
                    thread.join(max(0.0, deadline - time.monotonic()))
        finally:
            if previous is not None:
                signal.signal(signal.SIGINT, previous)
    if stop.is_set():  # Ctrl-C, or a stop the caller set
        raise interrupted()
    if failures:
        raise failures[0]
    return results
