"""Wikipedia dumps (Enterprise HTML, MediaWiki XML or CirrusSearch) -> ``docs`` Parquet, one folder per language.

The units of ``clirmatrix.pipeline.extraction.docs``: before planning, every Enterprise HTML
tar.gz is indexed (a step of parts that only inflate, ``IndexDumpParts``, then a join a
dump, ``JoinDumpIndexes``; their reports in ``docs/_index/_reports/``). Then a unit reads
a range of about ``--split-mb`` compressed MB of a big dump, or a whole small one
(docs/scale.md#big-files), into ``docs/{lang}/{NNNNN}-{dump name}.parquet``, in dump
order, so the result depends on neither the runner nor the split; and, after a
``Barrier``, a unit per language removes its repeated ids (first occurrence wins) and
reports the language (``docs/_reports/{lang}.json``); a language below ``--min-docs``
is dropped.

Example::

    python -m clirmatrix.beam_jobs.extract_docs --dumps dumps/ --work work/ --langs en,de
    python -m clirmatrix.beam_jobs.extract_docs --dumps gs://b/dumps --work gs://b/work \\
        --runner=DataflowRunner --project=P --region=R --temp_location=gs://b/tmp
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from importlib import metadata
from typing import NamedTuple

import apache_beam as beam
from apache_beam.metrics import Metrics

from clirmatrix.beam_jobs import common
from clirmatrix.beam_jobs.stages import BuildRun, RunSteps, Stage, Step, run_job
from clirmatrix.pipeline.config import BuildConfig
from clirmatrix.pipeline.extraction import docs
from clirmatrix.pipeline.extraction.docs import EXTRACT, FINALIZE, INDEX_FOLDER, INDEX_JOIN, INDEX_PART, DocsSettings, DocsUnit
from clirmatrix.pipeline.io import fileio
from clirmatrix.pipeline.method.corpus import Folders
from clirmatrix.pipeline.method.dumps import DumpFile, NoDumpsError
from clirmatrix.schemas.contracts import (
    DocsLanguageReport,
    DocsSummary,
    FinalizeTask,
    IndexJoinTask,
    IndexPartTask,
    Report,
    Summary,
    Unit,
    read_typed_report,
)

__all__ = ["DocsSettings", "ExtractDocs", "docs_settings", "run"]

LOG = logging.getLogger("clirmatrix")


def docs_settings(config: BuildConfig) -> DocsSettings:
    """The docs stage's settings of a build: the one place they derive from its flags."""
    return DocsSettings(min_docs=config.min_docs, max_bad_fraction=config.max_bad_fraction, split_bytes=config.split_bytes)


class IndexSteps(NamedTuple):
    """The indexing before the stage plans, as ``RunSteps`` runs a stage's steps: the steps, the call that runs a unit, where its reports go."""

    steps: tuple[Step, ...]
    run_unit: Callable[[Unit], Report]
    stage_dir: str


class ExtractDocs(Stage):
    """Dump files (whole or in ranges) -> each language's docs Parquet, repeated ids removed, small languages dropped."""

    name = "extract_docs"
    folder = Folders.docs
    config_fields = ("dumps", "langs", "skip_missing", "source", "min_docs", "max_bad_fraction", "split_mb")
    index_steps = (
        Step(INDEX_PART, "IndexDumpParts", "a part of a tar.gz dump inflated: its checkpoints and tar headers"),
        Step(INDEX_JOIN, "JoinDumpIndexes", "a tar.gz dump's parts joined into its seek index"),
    )
    steps = (
        Step(EXTRACT, "ReadDumpFile", "a dump file or range read into its docs Parquet"),
        Step(FINALIZE, "FinalizeLanguage", "a language's repeated ids dropped and its documents counted"),
    )

    def __init__(self, work_root: str, dumps: dict[str, list[DumpFile]], settings: DocsSettings = DocsSettings()) -> None:
        super().__init__(work_root)
        self.dumps = dumps
        self.settings = settings
        self.background_inflate = False
        self.extract_units = 0  # planned: how many read a dump

    @classmethod
    def from_run(cls, run: BuildRun) -> ExtractDocs:
        return cls(run.work_root, run.docs_dumps(), docs_settings(run.config))

    @classmethod
    def check(cls, run: BuildRun) -> None:
        """The document dumps found (``NoDumpsError`` when none is), before anything runs."""
        run.docs_dumps()

    def fingerprint_inputs(self, run: BuildRun) -> dict:
        """The dumps read (names under ``--dumps``, sizes, times), this clirmatrix's version, and the truncation's constants."""
        settings = self.settings
        truncation = {"max_tokens": settings.max_tokens, "max_chars": settings.max_chars, "extra_unspaced": list(settings.extra_unspaced)}
        return {"clirmatrix": metadata.version("clirmatrix"), "inputs": run.docs_inputs(), "truncation": truncation}

    def finished(self, run: BuildRun, summary: DocsSummary) -> None:
        """Every later stage works on the languages kept; none kept is the end of the run."""
        run.kept = tuple(sorted(summary.languages))
        if not run.kept:
            raise NoDumpsError(f"every language has fewer than --min-docs {run.config.min_docs:,} documents; nothing to build")

    def prepare(self, beam_args: Sequence[str], workers: int | None) -> None:
        """Index every Enterprise HTML dump before the stage's units are planned: its parts, then a join a dump; a damaged one stops the stage."""
        units = docs.index_units(self.dumps, self.settings.split_bytes)
        if not units:
            return
        index = IndexSteps(self.index_steps, self.run_unit, fileio.join(self.stage_dir, INDEX_FOLDER))
        common.run_stage("IndexDumps", units, RunSteps(index, beam_args), beam_args, workers)
        docs.check_indexes(read_typed_report(report) for report in common.read_reports(index.stage_dir))

    def plan(self, upstream: dict[str, Summary]) -> list[Unit]:
        units = docs.stage_units(self.dumps, self.settings.split_bytes, self.stage_dir)
        self.extract_units = sum(unit.step == EXTRACT for unit in units)
        return units

    def transform(self, beam_args: Sequence[str] = (), workers: int = 1) -> beam.PTransform:
        # A second inflating thread pays only where a core is spare: one local worker reading
        # dumps (one process, or a single unit to read) on a multi-core machine. With a worker
        # reading per core (or on a cluster) it only competes.
        reading = min(workers, self.extract_units or workers)
        self.background_inflate = reading == 1 and (os.cpu_count() or 1) > 1 and not common.names_runner(beam_args)
        return super().transform(beam_args, workers)

    def run_unit(self, unit: Unit) -> Report:
        match unit.task:
            case IndexPartTask():
                return docs.index_dump_part(self.stage_dir, unit.task, self.settings.split_bytes)
            case IndexJoinTask():
                return docs.join_dump_index(self.stage_dir, unit.task, self.settings.split_bytes)
            case DocsUnit():
                report = docs.extract_unit(self.stage_dir, unit.task, self.settings, self.background_inflate)
                Metrics.counter("clirmatrix", "docs_kept").inc(report.report["kept"])
                Metrics.counter("clirmatrix", "records_rejected").inc(sum(report.report["rejected"].values()))
                return report
            case FinalizeTask():
                return docs.finalize_language(self.stage_dir, unit.task, self.settings.min_docs)
        raise TypeError(f"{self.name} has no step for {unit.task!r}")

    def summarise(self, upstream: dict[str, Summary], reports: dict[str, Report]) -> DocsSummary:
        """Raises ``TooManyBadRecords`` past the limit; removes the dropped languages' files."""
        languages = [report for report in reports.values() if isinstance(report, DocsLanguageReport)]
        return docs.summarise(self.stage_dir, languages, self.settings, self.name)


def run(argv: Sequence[str] | None = None) -> Summary:
    return run_job(ExtractDocs, argv)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO)
    run()
