"""Ctrl-C stops ``clirmatrix build`` at once: exit 130, one line, no traceback, no process left, OUT marked unfinished.

A real build in its own session, interrupted while a stage runs on two worker
processes, as a terminal does (SIGINT to the process group) and as ``kill -INT``
does (the driver alone); docs/reliability.md.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time

import pytest
from conftest import EVAL, TRAIN, sigint_as_in_a_terminal

from clirmatrix.beam_jobs import local_worker
from clirmatrix.pipeline.output import layout

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="reads processes from /proc (Linux)")

LINE = "stays marked unfinished (BUILD_IN_PROGRESS); finished stages are kept; run the same command again to resume"


@pytest.fixture(scope="module")
def dumps(tmp_path_factory):
    from clirmatrix.pipeline.tools.sample import write_sample_dumps

    folder = tmp_path_factory.mktemp("interrupt") / "dumps"
    write_sample_dumps(folder, docs_per_lang=200, langs=("en", "de"), seed=3, broken=False, inputs="classic")
    return folder


def _session(sid: int) -> list[int]:
    """The live processes of session ``sid`` (the build's own: it and anything it started, orphans too)."""
    found = []
    for name in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{name}/stat", "rb") as file:
                stat = file.read()
        except OSError:
            continue
        fields = stat[stat.rindex(b")") + 2 :].split()  # state, ppid, pgrp, session, ... (the name before may hold spaces)
        if fields[0] not in (b"Z", b"X", b"x") and int(fields[3]) == sid:
            found.append(int(name))
    return found


class Build:
    """``clirmatrix build`` in a session of its own, its output (stdout and stderr together) read as it comes."""

    def __init__(self, dumps, out, workers: int = 2):
        command = [sys.executable, "-m", "clirmatrix.cli", "build", "--dumps", str(dumps), "--out", str(out), "--min-docs", "100"]
        command += ["--max-bad-fraction", "0.01", "--train-size", str(TRAIN), "--eval-size", str(EVAL), "--workers", str(workers)]
        # COLUMNS: log lines unwrapped, one a line.
        env = {**os.environ, "COLUMNS": "1000"}
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=sigint_as_in_a_terminal, env=env)
        self.chunks: list[bytes] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        for chunk in iter(lambda: self.process.stdout.read1(65536), b""):
            self.chunks.append(chunk)

    @property
    def output(self) -> str:
        return b"".join(self.chunks).decode(errors="replace")

    def wait_for_workers(self, stage: str) -> None:
        """Until ``stage`` runs on two worker processes (for a moment: started, Beam loaded)."""
        deadline, full = time.monotonic() + 120, None
        while self.process.poll() is None and time.monotonic() < deadline and (full is None or time.monotonic() < full):
            if full is None and f"{stage}: running" in self.output and len(local_worker.local_workers(self.process.pid)) >= 2:
                full = time.monotonic() + 0.3
            time.sleep(0.02)
        assert self.process.poll() is None and full is not None, f"the build did not reach {stage} on two workers:\n{self.output}"

    def finish(self, timeout: float) -> str:
        self.process.wait(timeout=timeout)
        self.reader.join(5)
        return self.output

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)
        for pid in _session(self.process.pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.process.wait()


@pytest.mark.slow
@pytest.mark.parametrize("target", ["process group", "driver alone", "process group, twice"])
def test_ctrl_c_stops_the_build_at_once_with_one_line(dumps, tmp_path, target):
    out = tmp_path / "out"
    build = Build(dumps, out)
    try:
        # The driver alone: interrupted during the second stage, so that the rerun below resumes past the first.
        build.wait_for_workers("extract_sitelinks" if target == "driver alone" else "extract_docs")
        before = len(build.output)
        sent = time.monotonic()
        if target == "driver alone":
            os.kill(build.process.pid, signal.SIGINT)  # kill -INT PID
        else:
            os.killpg(build.process.pid, signal.SIGINT)  # a terminal's Ctrl-C
        if target.endswith("twice"):
            time.sleep(0.05)  # while the first is being handled, or once its line is out
            with contextlib.suppress(ProcessLookupError):
                os.killpg(build.process.pid, signal.SIGINT)
        try:
            output = build.finish(timeout=2)
        except subprocess.TimeoutExpired:
            pytest.fail(f"the build went on {time.monotonic() - sent:.1f} s after its SIGINT:\n{build.output}")
        waited = time.monotonic() - sent
        assert build.process.returncode == 130, output
        assert "Traceback" not in output and "Exception ignored" not in output, output
        said = [line for line in output[before:].splitlines() if line.strip() and " INFO " not in line]
        line = f"interrupted: {out} {LINE}"
        assert said == [line] or (target.endswith("twice") and said == ["interrupted"]), output  # the second Ctrl-C ends it before the first's line
        left, gone_by = _session(build.process.pid), time.monotonic() + 2
        while left and time.monotonic() < gone_by:
            time.sleep(0.05)
            left = _session(build.process.pid)
        assert not left, f"processes {left} outlived the interrupted build"
        assert (out / layout.IN_PROGRESS).exists()
        assert waited < 2
    finally:
        build.kill()
    if target == "driver alone":
        again = Build(dumps, out, workers=1)  # in-process: seconds
        try:
            output = again.finish(timeout=120)
        finally:
            again.kill()
        assert again.process.returncode == 0, output
        assert "extract_docs: up to date, skipped" in output and "extract_sitelinks: running" in output, output  # resumed where it stopped
        assert not (out / layout.IN_PROGRESS).exists() and (out / layout.MANIFEST).exists()
