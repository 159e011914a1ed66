"""What every build stage is, and how a build resumes them.

A stage (``Stage``) has one name, which is its module's (``python -m
clirmatrix.beam_jobs.{name}``), the build's (``WORK/_stages/{name}.json``) and, in
CamelCase, its Beam transform's; one folder under ``WORK`` where its output and
its units' reports go; the steps its units run, in order; and a summary made
from those reports. ``Stage.run`` is the one skeleton: check the stages it reads
finished, clear its folder, plan its units, run them (one Beam pipeline, a
``Barrier`` between steps), summarise, and mark the folder finished. Its own
command takes its settings as flags derived from ``BuildConfig``, as the build does.

``StageLog`` makes a build resumable: a finished stage is recorded with a
fingerprint and skipped on rerun. A stage's fingerprint hashes its settings and
the fingerprints of the stages it reads, so changing a setting reruns that stage
and everything downstream, and nothing else. A stage whose record is missing or
differs is run again from scratch (its folder is cleared first), which is also
how a killed run resumes.
"""

from __future__ import annotations

import argparse
import logging
import re
import sys
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, fields
from typing import ClassVar

import apache_beam as beam

from clirmatrix.beam_jobs import common, runners
from clirmatrix.pipeline.config import BuildConfig, flag_name, resolve
from clirmatrix.pipeline.io import fileio
from clirmatrix.pipeline.method.corpus import WorkDirs
from clirmatrix.schemas.contracts import Report, StaleSummaryError, Summary, Unit, read_summary, read_typed_report

LOG = logging.getLogger("clirmatrix")
STAGES_DIR = "_stages"


@dataclass(frozen=True)
class Step:
    """One step of a stage: its units (``Unit.step == name``) run after every unit of the step before."""

    name: str
    label: str  # the Beam transform's label: what the step does, in CamelCase
    why: str = ""  # one line for the reader of the pipeline graph


def camel_case(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_"))


class Stage(ABC):
    """One stage of the build: ``name``, ``folder``, ``reads``, ``steps``; ``plan`` its units, ``run_unit`` one, ``summarise`` their reports."""

    name: ClassVar[str]  # the module's, the build's and (CamelCase) the transform's name
    folder: ClassVar[str]  # under WORK: the stage's output and its units' reports
    reads: ClassVar[tuple[str, ...]] = ()  # folders of the stages it reads, which must have finished
    steps: ClassVar[tuple[Step, ...]] = ()
    flags: ClassVar[tuple[str, ...]] = ()  # the BuildConfig settings its own command takes besides --work

    def __init__(self, work_root: str) -> None:
        self.work_root = work_root
        self.work = WorkDirs(work_root)

    @classmethod
    @abstractmethod
    def from_config(cls, work_root: str, config: BuildConfig) -> Stage:
        """The stage as the build runs it with ``config``: the one place its settings derive from the build's."""

    @property
    def stage_dir(self) -> str:
        return self.work.stage(self.folder)

    def upstream(self) -> dict[str, Summary]:
        """The summaries of the stages it reads, each refused with a clear message when that stage has not finished."""
        return {folder: common.require_complete(self.work.stage(folder), folder) for folder in self.reads}

    @abstractmethod
    def plan(self, upstream: dict[str, Summary]) -> Sequence:
        """Every unit of the stage, planned on the driver before anything runs."""

    def run_unit(self, unit: Unit) -> Report:
        """A unit's work (on a worker): the library call its task names; returns its report."""
        raise NotImplementedError(f"{self.name} runs no units of its own")

    @abstractmethod
    def summarise(self, upstream: dict[str, Summary], reports: dict[str, Report]) -> Summary:
        """The stage's summary (its ``_SUCCESS.json``) from its units' reports by unit name."""

    def prepare(self, beam_args: Sequence[str], workers: int | None) -> None:
        """Work before the units can be planned (the docs stage indexes its tar.gz dumps); nothing by default."""
        return None

    def transform(self, beam_args: Sequence[str] = (), workers: int = 1) -> beam.PTransform:
        """The stage's steps chained, a ``Barrier`` between each two (``workers``: the local processes that will run it)."""
        return RunSteps(self, beam_args)

    def run(self, beam_args: Sequence[str] = (), workers: int | None = None) -> Summary:
        """The skeleton every stage shares: inputs checked, folder cleared, units planned and run, summary written last."""
        upstream = self.upstream()
        common.start_stage(self.stage_dir)
        self.prepare(beam_args, workers)
        units = self.plan(upstream)
        workers = workers or common.default_workers(len(units))
        common.run_stage(camel_case(self.name), units, self.transform(beam_args, workers), beam_args, workers)
        reports = {name: read_typed_report(report) for name, report in common.read_named_reports(self.stage_dir).items()}
        summary = self.summarise(upstream, reports)
        common.finish_stage(self.stage_dir, summary)
        return summary


class RunSteps(beam.PTransform):
    """A stage's units through each of its steps in turn."""

    def __init__(self, stage: Stage, beam_args: Sequence[str] = ()) -> None:
        super().__init__()
        self.stage = stage
        self.beam_args = list(beam_args)

    def expand(self, units):
        for number, step in enumerate(self.stage.steps):
            if number:
                units = units | f"Before{step.label}" >> common.Barrier()
            units = units | step.label >> beam.ParDo(common.RunUnits(step.name, self.stage.run_unit, self.stage.stage_dir, self.beam_args))
        return units


def config_parser(description: str, settings: Iterable[str], extra: Callable[[argparse.ArgumentParser], None] = lambda parser: None) -> argparse.ArgumentParser:
    """Flags for ``settings`` of ``BuildConfig`` (its defaults, help and checks) and ``--config``; the build's and every stage's command."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--config", help="TOML or YAML file with any of these settings; flags win.")
    extra(parser)
    by_name = {setting.name: setting for setting in fields(BuildConfig)}
    for name in settings:
        setting = by_name[name]
        flag, default = flag_name(name), setting.default
        if isinstance(default, bool):
            parser.add_argument(flag, dest=name, action="store_const", const=True, default=None, help=setting.metadata["help"])
        else:
            kind = type(default) if isinstance(default, (int, float)) else str
            parser.add_argument(flag, dest=name, type=kind, default=None, help=setting.metadata["help"])
    return parser


def parse_config(parser: argparse.ArgumentParser, argv: Sequence[str] | None, settings: Iterable[str], needs: Sequence[str]) -> tuple[argparse.Namespace, BuildConfig, list[str]]:
    """Our flags resolved into a checked ``BuildConfig`` (defaults, file, flags); the flags we do not know go to Beam."""
    args, beam_args = parser.parse_known_args(argv)
    config = resolve(args.config, {name: getattr(args, name) for name in settings}, needs=needs)
    return args, config, beam_flags(beam_args)


def beam_flags(beam_args: Sequence[str]) -> list[str]:
    """The user's Beam flags resolved once for every stage of a run (``runners.resolve``), the driver's file systems told of them."""
    beam_args = runners.resolve(beam_args)
    common.use_filesystem_options(beam_args)
    return beam_args


def run_job(stage_class: type[Stage], argv: Sequence[str] | None = None) -> Summary:
    """A stage's own command: ``--work WORK``, its ``flags`` from ``BuildConfig``, Beam's flags; the stage run as the build would."""
    description = doc_summary(sys.modules[stage_class.__module__].__doc__ or stage_class.__doc__ or stage_class.name)
    settings = (*stage_class.flags, "workers")
    parser = config_parser(description, settings, lambda p: p.add_argument("--work", required=True, help="The build's work folder."))
    args, config, beam_args = parse_config(parser, argv, settings, needs=[name for name in ("dumps", "out") if name in settings])
    stage = stage_class.from_config(fileio.absolute(args.work), config)
    return stage.run(beam_args, config.workers or None)


def doc_summary(doc: str) -> str:
    """A module docstring's first paragraph, on one line: a command's description."""
    return re.sub(r"\s+", " ", doc.split("\n\n")[0]).strip()


class StageLog:
    """Which stages of a build finished, with what fingerprint, and their summaries."""

    def __init__(self, work_dir: str) -> None:
        self.dir = fileio.join(work_dir, STAGES_DIR)
        self.skipped: list[str] = []  # stages this run found up to date

    def _path(self, name: str) -> str:
        return fileio.join(self.dir, f"{name}.json")

    def finished(self, name: str, stage_key: str) -> Summary | None:
        """The stage's summary if it finished with this fingerprint, else None (a record of an older clirmatrix too)."""
        path = self._path(name)
        if not fileio.exists(path):
            return None
        record = fileio.read_json(path)
        if record.get("fingerprint") != stage_key:
            return None
        try:
            return read_summary(record["summary"], path)
        except StaleSummaryError:
            return None

    def run(self, name: str, stage_key: str, body: Callable[[], Summary], force: bool = False) -> Summary:
        """Skip the stage when already finished with ``stage_key`` (unless ``force``); otherwise run ``body`` and record it."""
        summary = None if force else self.finished(name, stage_key)
        if summary is not None:
            LOG.info("%s: up to date, skipped", name)
            self.skipped.append(name)
            return summary
        LOG.info("%s: running", name)
        started = time.perf_counter()
        summary = body()
        seconds = round(time.perf_counter() - started, 3)
        fileio.write_json(self._path(name), {"stage": name, "fingerprint": stage_key, "seconds": seconds, "summary": summary.to_dict()})
        LOG.info("%s: done in %.1f s", name, seconds)
        return summary

    def seconds(self, name: str) -> float | None:
        path = self._path(name)
        return fileio.read_json(path).get("seconds") if fileio.exists(path) else None


def sum_fields(records: Iterable[object], names: Sequence[str]) -> dict[str, int]:
    """Each named field summed over ``records`` (reports, or a summary's language entries)."""
    records = list(records)
    return {name: sum(getattr(record, name) for record in records) for name in names}
