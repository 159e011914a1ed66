"""What every build stage is, how it is declared, and how a run resumes them.

A stage declares, on its class, everything the runs around it derive from it
(``BaseStage``): its ``name`` (its module's, ``python -m clirmatrix.beam_jobs.{name}``,
the build's ``WORK/_stages/{name}.json`` and, in CamelCase, its Beam transform's);
the ``config_fields``, the settings of ``BuildConfig`` it reads (its own command's flags, and, unless a
setting says its value changes no file, part of its fingerprint); the stages
``after`` which it runs (their fingerprints enter its own); and ``from_run``, the one
place its settings derive from the build's. ``STAGES`` (``beam_jobs.all_stages``)
orders them; the build, ``extract`` and each stage's own command run them through
``run_stages``, so a setting added to a stage's ``config_fields`` is a flag of the build
and of that stage's command and part of that stage's fingerprint, and nowhere else.

A Beam stage (``Stage``) has one folder under ``WORK`` where its output and its
units' reports go; the steps its units run, in order; and a summary made from those
reports. ``Stage.run`` is the one skeleton: check the stages it reads finished,
clear its folder, plan its units, run them (one Beam pipeline, a ``Barrier``
between steps), summarise, and mark the folder finished.

``StageLog`` makes a build resumable: a finished stage is recorded with its
fingerprint and skipped on rerun. A stage's fingerprint hashes its settings, what
else its output depends on (``fingerprint_inputs``: the input files, the code's
constants) and the fingerprints of the stages it comes after, so changing a setting
reruns that stage and everything downstream, and nothing else. A stage whose record
is missing or differs is run again from scratch (its folder is cleared first), which
is also how a killed run resumes.
"""

from __future__ import annotations

import argparse
import logging
import re
import sys
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import ClassVar, Protocol

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from clirmatrix.beam_jobs import common, runners
from clirmatrix.pipeline.config import BuildConfig, fingerprinted, resolve, setting_flags
from clirmatrix.pipeline.io import fileio
from clirmatrix.pipeline.io.fingerprint import fingerprint
from clirmatrix.pipeline.method.corpus import WorkDirs
from clirmatrix.pipeline.method.dumps import DumpFile, DumpSet, LinkInputs, find_dumps, find_links
from clirmatrix.schemas.contracts import Report, StaleSummaryError, Summary, Unit, read_summary, read_typed_report

LOG = logging.getLogger("clirmatrix")
STAGES_DIR = "_stages"
RUN_SETTINGS = ("work", "workers")  # the settings of a run, not of a stage: where its records go, how many processes


@dataclass
class BuildRun:
    """What the stages of one run share: the build, ``extract``, or one stage's own command.

    The settings (paths made absolute on the driver: workers open them from working
    directories of their own), the dumps found once, the languages the documents stage
    kept, and each stage's fingerprint and summary as the run passes it.
    """

    config: BuildConfig
    work_root: str
    keys: dict[str, str] = field(default_factory=dict)  # stage name -> its fingerprint
    summaries: dict[str, Summary] = field(default_factory=dict)  # stage name -> its summary
    forced: set[str] = field(default_factory=set)  # stages run again whatever their record said: their output was gone
    kept: tuple[str, ...] | None = None  # the languages extract_docs kept, once it ran
    found: DumpSet | None = None
    link_sources: LinkInputs | None = None
    described: dict[str, dict] = field(default_factory=dict)  # input path -> its name, size and time (``describe``)

    @classmethod
    def of(cls, config: BuildConfig, work_root: str) -> BuildRun:
        return cls(replace(config, dumps=fileio.absolute(config.dumps), out=fileio.absolute(config.out), work=fileio.absolute(config.work)), fileio.absolute(work_root))

    @property
    def langs(self) -> tuple[str, ...]:
        """The languages the stages work on: those extract_docs kept in this run, else ``--langs`` (none: every language upstream)."""
        return self.kept if self.kept is not None else tuple(self.config.langs)

    def docs_dumps(self) -> dict[str, list[DumpFile]]:
        """Each language's document dumps, found once (without looking for the link sources, which a documents-only run need not have)."""
        if self.found is None:
            config = self.config
            self.found, _ = find_dumps(config.dumps, config.langs, config.source, config.skip_missing, links=None)
        return self.found.docs

    def links(self) -> LinkInputs:
        """The link sources, chosen once among the dumps found once: a missing Wikidata dump is refused here."""
        if self.link_sources is None:
            self.docs_dumps()
            self.link_sources = find_links(self.found, self.config.links, self.config.dumps)
        return self.link_sources

    def notes(self) -> list[str]:
        """What the dumps search has to tell the user (a language skipped, ...)."""
        return self.found.notes if self.found is not None else []

    def docs_inputs(self) -> list[dict]:
        """Name, size and modification time of every document dump, relative to ``--dumps``: what the documents' fingerprint covers."""
        return self.describe(dump.path for dumps in self.docs_dumps().values() for dump in dumps)

    def link_inputs(self) -> list[dict]:
        """The same of every link source file."""
        sources = self.links()
        return self.describe([*sources.sitelinks_files, *(path for _, path in sources.page_props)])

    def describe(self, paths: Iterable[str]) -> list[dict]:
        """Each file's name under ``--dumps``, size and time, asked of its file system once a run (a request each on an object store)."""
        described = []
        for path in sorted(paths):
            if path not in self.described:
                meta = FileSystems.match([path])[0].metadata_list[0]
                self.described[path] = {"path": fileio.relative_to(self.config.dumps, path), "size": meta.size_in_bytes, "mtime": meta.last_updated_in_seconds}
            described.append(self.described[path])
        return described


class BaseStage(ABC):
    """A stage as the runs around it see it: its declaration (``name``, ``config_fields``, ``after``, ``from_run``) and ``run``."""

    name: ClassVar[str]  # the module's, the build's and (CamelCase) the transform's name
    config_fields: ClassVar[tuple[str, ...]] = ()  # the BuildConfig settings it reads: its command's flags, and its fingerprint's
    after: ClassVar[tuple[str, ...]] = ()  # the stages whose output it reads: their fingerprints enter its own

    @classmethod
    @abstractmethod
    def from_run(cls, run: BuildRun) -> BaseStage:
        """The stage as ``run`` runs it: the one place its settings derive from the build's."""

    @classmethod
    def check(cls, run: BuildRun) -> None:
        """Refuse, before anything runs, what the stage could not use: a setting, a missing input (nothing by default)."""
        return None

    @abstractmethod
    def run(self, beam_args: Sequence[str] = (), workers: int | None = None) -> Summary:
        """Run the stage whole; its summary."""

    def fingerprint_inputs(self, run: BuildRun) -> dict:
        """What its output depends on besides its settings and the stages before it: input files, the code's constants."""
        return {}

    def fingerprint(self, run: BuildRun) -> str:
        """Its settings (``config.fingerprinted``), its other inputs and the fingerprints of the stages it comes after, hashed."""
        upstream = [run.keys[name] for name in self.after]
        return fingerprint(self.name, upstream, fingerprinted(run.config, self.config_fields), self.fingerprint_inputs(run))

    def stale(self, run: BuildRun) -> bool:
        """Whether its output is gone although its record says finished: it runs again (so do the stages after it)."""
        return False

    def finished(self, run: BuildRun, summary: Summary) -> None:
        """What later stages of the run take from its summary (nothing by default)."""
        return None


def check_stages(stage_classes: Iterable[type[BaseStage]], run: BuildRun) -> None:
    """Every stage's ``check``, before any of them runs (and, in a build, before ``OUT`` is touched)."""
    for stage_class in stage_classes:
        stage_class.check(run)


def run_stages(stage_classes: Sequence[type[BaseStage]], run: BuildRun, beam_args: Sequence[str] = (), log: StageLog | None = None) -> dict[str, Summary]:
    """Each stage in turn as ``run`` makes it; with a ``log``, one already finished with the same fingerprint is skipped."""
    workers = run.config.workers or None
    for stage_class in stage_classes:
        stage = stage_class.from_run(run)
        force = stage.stale(run) or any(name in run.forced for name in stage.after)
        if log is None:
            summary = stage.run(beam_args, workers)
        else:
            run.keys[stage.name] = stage.fingerprint(run)
            summary = log.run(stage.name, run.keys[stage.name], lambda stage=stage: stage.run(beam_args, workers), force=force)
        if force:
            run.forced.add(stage.name)
        run.summaries[stage.name] = summary
        stage.finished(run, summary)
    return run.summaries


@dataclass(frozen=True)
class Step:
    """One step of a stage: its units (``Unit.step == name``) run after every unit of the step before."""

    name: str
    label: str  # the Beam transform's label: what the step does, in CamelCase
    why: str = ""  # one line for the reader of the pipeline graph


def camel_case(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_"))


class Stage(BaseStage):
    """A Beam stage: ``folder``, ``reads``, ``steps``; ``plan`` its units, ``run_unit`` one, ``summarise`` their reports."""

    folder: ClassVar[str]  # under WORK: the stage's output and its units' reports
    reads: ClassVar[tuple[str, ...]] = ()  # folders of the stages it reads, which must have finished
    steps: ClassVar[tuple[Step, ...]] = ()

    def __init__(self, work_root: str) -> None:
        self.work_root = work_root
        self.work = WorkDirs(work_root)

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


class HasSteps(Protocol):
    """What ``RunSteps`` runs: steps in order, the call that runs a unit, the folder its reports go to (a ``Stage``; the docs stage's indexing)."""

    steps: tuple[Step, ...]
    stage_dir: str

    def run_unit(self, unit: Unit) -> Report: ...


class RunSteps(beam.PTransform):
    """A stage's units through each of its steps in turn."""

    def __init__(self, stage: HasSteps, beam_args: Sequence[str] = ()) -> None:
        super().__init__()
        self.stage = stage
        self.beam_args = list(beam_args)

    def expand(self, units):
        for number, step in enumerate(self.stage.steps):
            if number:
                units = units | f"Before{step.label}" >> common.Barrier()
            units = units | step.label >> beam.ParDo(common.RunUnits(step.name, self.stage.run_unit, self.stage.stage_dir, self.beam_args))
        return units


def declared_settings(stage_classes: Iterable[type[BaseStage]]) -> tuple[str, ...]:
    """Every setting the stages read, once each, in ``BuildConfig``'s order, with the run's own (``--workers``)."""
    wanted = {name for stage_class in stage_classes for name in stage_class.config_fields} | {"workers"}
    return tuple(setting.name for setting in fields(BuildConfig) if setting.name in wanted)


def config_parser(description: str, settings: Iterable[str], extra: Callable[[argparse.ArgumentParser], None] = lambda parser: None) -> argparse.ArgumentParser:
    """Flags for ``settings`` of ``BuildConfig`` (``config.setting_flags``) and ``--config``; the build's and every stage's command."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--config", help="TOML or YAML file with any of these settings; flags win.")
    extra(parser)
    for flag in setting_flags(settings):
        if flag.switch:
            parser.add_argument(flag.flag, dest=flag.setting, action="store_const", const=True, default=None, help=flag.help)
        else:
            parser.add_argument(flag.flag, dest=flag.setting, type=flag.kind, choices=flag.choices or None, default=None, help=flag.help)
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


def stages_parser(stage_classes: Sequence[type[BaseStage]], description: str, work_help: str = "The build's work folder.") -> argparse.ArgumentParser:
    """The flags of a command running ``stage_classes``: ``--work WORK``, ``--config`` and the settings they declare."""
    return config_parser(description, declared_settings(stage_classes), lambda p: p.add_argument("--work", required=True, help=work_help))


def stages_command(stage_classes: Sequence[type[BaseStage]], description: str, argv: Sequence[str] | None, work_help: str = "The build's work folder.") -> BuildRun:
    """A command running ``stage_classes`` in turn (``stages_parser``); the flags it does not know go to Beam."""
    settings = declared_settings(stage_classes)
    parser = stages_parser(stage_classes, description, work_help)
    args, config, beam_args = parse_config(parser, argv, settings, needs=[name for name in ("dumps", "out") if name in settings])
    return run_declared(stage_classes, config, args.work, beam_args)


def run_declared(stage_classes: Sequence[type[BaseStage]], config: BuildConfig, work_root: str, beam_args: Sequence[str] = ()) -> BuildRun:
    """``stage_classes`` run in turn on ``config`` into ``work_root``, every ``check`` first; no records kept (the build keeps them)."""
    run = BuildRun.of(config, work_root)
    check_stages(stage_classes, run)
    run_stages(stage_classes, run, beam_args)
    return run


def run_job(stage_class: type[BaseStage], argv: Sequence[str] | None = None) -> Summary:
    """A stage's own command, run as the build would run it; its summary."""
    description = doc_summary(sys.modules[stage_class.__module__].__doc__ or stage_class.__doc__ or stage_class.name)
    return stages_command((stage_class,), description, argv).summaries[stage_class.name]


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
