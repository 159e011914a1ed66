"""A local build's worker processes end with it, however the build ends (``beam_jobs/local_worker.py``)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest
from conftest import sigint_as_in_a_terminal

from clirmatrix.beam_jobs import local_worker
from clirmatrix.beam_jobs.runners import local_worker_command

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="reads processes from /proc (Linux)")


def _alive(pids: dict[int, bytes]) -> list[int]:
    """The processes of ``pids`` (pid: identity when seen) still running; a zombie or a reused pid has ended."""
    return [pid for pid, identity in pids.items() if identity is not None and local_worker.process_identity(pid) == identity]


def _wait_gone(pids: dict[int, bytes], seconds: float) -> tuple[list[int], float]:
    """(the processes still running after at most ``seconds``, the seconds waited)."""
    started = time.monotonic()
    while _alive(pids) and time.monotonic() - started < seconds:
        time.sleep(0.05)
    return _alive(pids), time.monotonic() - started


def _kill_all(process: subprocess.Popen, pids: dict[int, bytes]) -> None:
    """Whatever a failed test left: the process's session (its own, so orphans too) and the processes seen."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    for pid in _alive(pids):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    process.wait()


def test_the_driver_pid_is_taken_out_of_the_worker_arguments():
    assert local_worker.driver_pid(["worker", "--driver-pid=12", "-x"]) == (12, ["worker", "-x"])
    assert local_worker.driver_pid(["worker", "--driver-pid", "12"]) == (12, ["worker"])
    assert local_worker.driver_pid(["worker"]) == (None, ["worker"])
    command = local_worker_command()
    assert f"-m clirmatrix.beam_jobs.local_worker --driver-pid={os.getpid()}" in command
    assert command.startswith("exec ") == (os.name == "posix")  # no shell left between the driver and its worker


def test_the_watchdog_sees_its_driver_end_even_unreaped():
    driver = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        gone = threading.Event()
        local_worker.watch_driver(driver.pid, interval=0.02, on_gone=gone.set)
        assert not gone.wait(0.3)  # a live driver is left alone
        driver.kill()
        assert gone.wait(5)  # a zombie: killed, not yet reaped, counts as ended
    finally:
        driver.kill()
        driver.wait()
    assert local_worker.process_identity(driver.pid) is None
    ended = threading.Event()
    local_worker.watch_driver(driver.pid, interval=0.02, on_gone=ended.set)  # a driver already gone
    assert ended.wait(5)


# A driver that starts a worker, which starts a process of its own; both print their pids.
WORKER = """
import os, subprocess, sys, time
from clirmatrix.beam_jobs.local_worker import watch_driver
watch_driver(interval=0.05)
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
print(os.getpid(), child.pid, flush=True)
time.sleep(60)
"""
DRIVER = f"""
import subprocess, sys, time
subprocess.Popen([sys.executable, "-c", {WORKER!r}])
time.sleep(60)
"""


def test_a_worker_and_its_own_children_end_when_the_driver_is_killed():
    driver = subprocess.Popen([sys.executable, "-c", textwrap.dedent(DRIVER)], stdout=subprocess.PIPE, text=True, start_new_session=True)
    seen: dict[int, bytes] = {}
    try:
        pids = [int(pid) for pid in driver.stdout.readline().split()]
        assert len(pids) == 2, "the worker did not start"
        seen = {pid: local_worker.process_identity(pid) for pid in pids}
        assert len(_alive(seen)) == 2
        driver.kill()
        driver.wait()
        left, _ = _wait_gone(seen, 5)
        assert not left, f"processes {left} outlived their killed driver"
    finally:
        _kill_all(driver, seen)


@pytest.fixture(scope="module")
def dumps(tmp_path_factory):
    from clirmatrix.pipeline.tools.sample import write_sample_dumps

    folder = tmp_path_factory.mktemp("lifetime") / "dumps"
    write_sample_dumps(folder, docs_per_lang=300, langs=("en", "de"), seed=3, inputs="classic")
    return folder


def _build_until_workers_run(dumps, out) -> tuple[subprocess.Popen, dict[int, bytes]]:
    """A two-worker build in a subprocess (its own session), once its worker processes run: (build, worker pid: identity)."""
    command = [sys.executable, "-m", "clirmatrix.cli", "build", "--dumps", str(dumps), "--out", str(out)]
    command += ["--min-docs", "100", "--max-bad-fraction", "0.01", "--workers", "2"]
    # SIGINT at its default in the build, as in a terminal: a job started in the background of a
    # non-interactive shell (CI under nohup ... &) inherits it ignored, and rightly ignores kill -INT then.
    build = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True, preexec_fn=sigint_as_in_a_terminal)
    workers: dict[int, bytes] = {}
    try:
        deadline, full = time.monotonic() + 180, None
        while build.poll() is None and time.monotonic() < deadline and (full is None or time.monotonic() < full):
            for pid in local_worker.local_workers(build.pid):
                workers.setdefault(pid, local_worker.process_identity(pid))
            if len(_alive(workers)) >= 2 and full is None:
                full = time.monotonic() + 0.5  # both running a moment: started, Beam loaded
            time.sleep(0.05)
        assert build.poll() is None, "the build ended before its workers were seen"
        assert _alive(workers), "no local_worker process started"
    except BaseException:
        _kill_all(build, workers)
        raise
    return build, workers


@pytest.mark.slow
def test_the_workers_of_a_killed_build_end_with_it(dumps, tmp_path):
    build, workers = _build_until_workers_run(dumps, tmp_path / "out")
    try:
        build.send_signal(signal.SIGKILL)  # the driver only, as a crash or the OOM killer would
        build.wait()
        left, waited = _wait_gone(workers, 15)
        assert not left, f"worker processes {left} outlived the killed build by {waited:.1f} s"
        assert waited < 5
    finally:
        _kill_all(build, workers)


@pytest.mark.slow
def test_an_interrupted_build_stops_its_workers_and_ends(dumps, tmp_path):
    build, workers = _build_until_workers_run(dumps, tmp_path / "out")
    try:
        build.send_signal(signal.SIGINT)  # to the driver alone (kill -INT); Beam alone would hang waiting for them
        build.wait(timeout=30)
        assert build.returncode != 0
        left, waited = _wait_gone(workers, 15)
        assert not left, f"worker processes {left} outlived the interrupted build by {waited:.1f} s"
    finally:
        _kill_all(build, workers)
