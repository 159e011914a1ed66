"""``clirmatrix validate`` on the build's Beam runners: a build or download on an object store (or any tree, with ``--runner``).

The rules are ``pipeline/tools/validate.py``'s: it lists the tree, plans the units (a
language's DOCS files, then a direction's query files) and judges what they found across
directions, against the index and the manifest. Here each of its two stages of units runs
as one Beam pipeline (``common.run_stage``: local worker processes, Dask, Flink, Dataflow).

A unit on a cluster cannot see the driver's disk, so what units hand on goes to a scratch
every worker reaches: a fresh prefix under ``work`` (``--work s3://bucket/tmp``), removed at
the end, failed or not. A DOCS unit saves its doc keys there for the directions' units
(``validate_units``); every unit saves its outcome there, pickled, and writes its report
(``common.RunUnits``), which tells the driver's progress that the unit has finished. The
driver reads the outcomes back in the tasks' order. Without a ``--runner`` the units run in
local processes, which see this machine's disk: ``work`` is then optional (a temporary folder).

Example::

    python -m clirmatrix.beam_jobs.validate s3://bucket/out --work s3://bucket/tmp [--runner dask ...] [--s3_endpoint_url ...]
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import pickle
import sys
import tempfile
import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor

import apache_beam as beam

from clirmatrix.beam_jobs import common, runners
from clirmatrix.pipeline.config import ConfigError
from clirmatrix.pipeline.io import fileio
from clirmatrix.pipeline.io.reports import REPORTS
from clirmatrix.pipeline.tools.validate import ValidationReport, print_report, validate
from clirmatrix.schemas.contracts import Report, Unit

POLL_SECONDS = 2.0  # how often the driver lists the finished units' reports while a stage runs (for its progress)
READERS = 16  # outcomes read back at once (an object store answers each read in tens of milliseconds)


class WorkRequiredError(ConfigError):
    """A named runner's workers may not see this machine's disk: the scratch must be given."""


def _run_unit(check: Callable, stage_dir: str, unit: Unit) -> Report:
    """One unit: its check, its outcome saved (atomically: a retried unit leaves what a first try would)."""
    fileio.write_bytes(_outcome_path(stage_dir, unit.name), pickle.dumps(check(unit.task), protocol=pickle.HIGHEST_PROTOCOL))
    return Report()


def _outcome_path(stage_dir: str, name: str) -> str:
    return fileio.join(stage_dir, "outcomes", f"{name}.pickle")


class CheckUnits(beam.PTransform):
    """Units -> their names, each unit's outcome and report saved under ``stage_dir``."""

    def __init__(self, step: str, check: Callable, stage_dir: str, beam_args: Sequence[str]) -> None:
        super().__init__()
        self.step, self.check, self.stage_dir, self.beam_args = step, check, stage_dir, list(beam_args)

    def expand(self, units):
        run = functools.partial(_run_unit, self.check, self.stage_dir)
        return units | "Check" >> beam.ParDo(common.RunUnits(self.step, run, self.stage_dir, self.beam_args))


class BeamUnits:
    """``validate``'s ``Spread`` on Beam: each stage of units one pipeline, outcomes through ``scratch``."""

    def __init__(self, scratch: str, beam_args: Sequence[str] = (), workers: int | None = None) -> None:
        self.scratch, self.beam_args, self.workers = scratch, list(beam_args), workers

    def run(self, check: Callable, tasks: list, on_file: Callable[[str], None], paths: Callable[[object], list[str]]) -> list:
        step = check.__name__  # check_docs, check_direction: one stage each
        stage_dir = fileio.join(self.scratch, step)
        names = [f"{step}-{i:06d}" for i in range(len(tasks))]
        finished = _Finished(stage_dir, dict(zip(names, tasks)), on_file, paths)
        with finished.watching():
            common.run_stage(f"Validate{''.join(part.title() for part in step.split('_'))}", [Unit(step, name, task) for name, task in zip(names, tasks)],
                             CheckUnits(step, check, stage_dir, self.beam_args), self.beam_args, self.workers)
        with ThreadPoolExecutor(READERS) as readers:
            return list(readers.map(lambda name: pickle.loads(fileio.read_bytes(_outcome_path(stage_dir, name))), names))


class _Finished:
    """The progress of a stage: ``on_file`` with each path of a unit once its report is stored (listed every ``POLL_SECONDS`` while it runs)."""

    def __init__(self, stage_dir: str, tasks: dict[str, object], on_file: Callable[[str], None], paths: Callable[[object], list[str]]) -> None:
        self.pattern = fileio.join(stage_dir, REPORTS, "*.json")
        self.tasks, self.on_file, self.paths = tasks, on_file, paths
        self.told: set[str] = set()

    def poll(self) -> None:
        for path in fileio.list_files(self.pattern):
            name = fileio.basename(path)[: -len(".json")]
            if name in self.tasks and name not in self.told:
                self.told.add(name)
                for released in self.paths(self.tasks[name]):
                    self.on_file(released)

    @contextlib.contextmanager
    def watching(self) -> Iterator[None]:
        done = threading.Event()

        def watch() -> None:
            while not done.wait(POLL_SECONDS):
                try:
                    self.poll()
                except Exception:  # a listing that failed once: the next one, or the last one below, tells
                    continue

        watcher = threading.Thread(target=watch, name="clirmatrix-validate-progress", daemon=True)
        watcher.start()
        try:
            yield
        finally:
            done.set()
            watcher.join()
        self.poll()  # the units finished since the last listing (the stage succeeded)


@contextlib.contextmanager
def scratch_under(work: str | None, beam_args: Sequence[str]) -> Iterator[str]:
    """A fresh folder or prefix for the units' keys and outcomes, removed at the end: under ``work``, or a local temporary one without a runner."""
    if work is None:
        if common.names_runner(beam_args):
            raise WorkRequiredError("--work is required with --runner: a folder or prefix every worker reaches (--work s3://bucket/tmp), for the units' scratch")
        with tempfile.TemporaryDirectory(prefix="clirmatrix-validate-") as folder:
            yield folder
        return
    work = fileio.absolute(work)
    fileio.check_writable(work)  # a missing bucket or missing rights: one line before any unit runs
    scratch = fileio.join(work, f"clirmatrix-validate-{uuid.uuid4().hex[:12]}")
    fileio.make_dirs(scratch)
    try:
        yield scratch
    finally:
        fileio.remove_tree(scratch)


def run_validate(root: str, work: str | None = None, beam_args: Sequence[str] = (), *, train_size: int | None = None, eval_size: int | None = None,
                 on_file: Callable[[str], None] | None = None, workers: int | None = None) -> ValidationReport:
    """``validate(root)`` with its units on Beam (``beam_args``: ``--runner``, the store's flags); ``work`` holds their scratch.

    ``workers``: local worker processes when no ``--runner`` is named [default: one per core, at most one per unit].
    """
    beam_args = runners.resolve(beam_args)
    common.use_filesystem_options(beam_args)
    with runners.interrupt_reaches_workers(), scratch_under(work, beam_args) as scratch:
        return validate(fileio.absolute(root), train_size=train_size, eval_size=eval_size, on_file=on_file, spread=BeamUnits(scratch, beam_args, workers))


def main(argv: list[str] | None = None) -> ValidationReport:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("root")
    parser.add_argument("--work", default=None, help="A folder or prefix every worker reaches, for the units' scratch [required with --runner].")
    parser.add_argument("--train-size", type=int, default=None)
    parser.add_argument("--eval-size", type=int, default=None)
    args, beam_args = parser.parse_known_args(argv)
    from rich.console import Console

    report = run_validate(args.root, args.work, beam_args, train_size=args.train_size, eval_size=args.eval_size)
    print_report(report, Console(stderr=True))
    return report


if __name__ == "__main__":
    sys.exit(0 if main(sys.argv[1:]).ok else 1)
