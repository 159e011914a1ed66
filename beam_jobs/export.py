"""``clirmatrix export`` as a Beam pipeline: one unit per released file, on the build's runners (local, Dask, Flink, Dataflow).

The work is ``pipeline/tools/export.py``'s; this module plans the units that an earlier
run has not finished (resuming), runs them, then writes what needs all of them.

Example::

    python -m clirmatrix.beam_jobs.export OUT --format beir --to beir/ [--runner dask ...]
"""

from __future__ import annotations

import argparse
import functools
import sys
from collections.abc import Sequence
from dataclasses import dataclass

import apache_beam as beam

from clirmatrix.beam_jobs import common
from clirmatrix.pipeline.tools.export import REPORTS, DamagedReleaseError, ExportPlan, begin_export, export_unit, finish_export, is_done, unit_name
from clirmatrix.schemas.contracts import ExportReport, Unit, read_typed_report

STEP = "export"


@dataclass(frozen=True)
class ExportResult:
    """What an export did: its units (run now and skipped as done before), their rows and qrels, and the last step's files."""

    to: str
    units: int
    skipped: int
    rows: int
    qrels: int
    cleaned: int
    written: list[str]


def _run(root: str, to: str, unit: Unit) -> ExportReport:
    return export_unit(root, to, unit.task)


class ExportFiles(beam.PTransform):
    """Released files -> their exported files, each unit writing its own."""

    def __init__(self, root: str, to: str, report_dir: str) -> None:
        super().__init__()
        self.root, self.to, self.report_dir = root, to, report_dir

    def expand(self, units):
        return units | "ExportFile" >> beam.ParDo(common.RunUnits(STEP, functools.partial(_run, self.root, self.to), self.report_dir))


def run_export(plan: ExportPlan, to: str, beam_args: Sequence[str] = (), workers: int | None = None) -> ExportResult:
    """Run the units an earlier run has not finished, then the last step; the folder is marked unfinished until then."""
    report_dir = f"{to}/{REPORTS}"
    begin_export(to)
    todo = [task for task in plan.tasks if not is_done(plan.root, to, task)]
    units = [Unit(STEP, unit_name(task), task) for task in todo]
    common.run_stage("Export", units, ExportFiles(plan.root, to, report_dir), beam_args, workers)
    reports = [read_typed_report(value) for value in common.read_named_reports(report_dir).values()]
    mine = {task.source for task in plan.tasks}
    reports = [report for report in reports if report.source in mine]
    damaged = sorted(report.error for report in reports if report.error)
    if damaged:  # their outputs were never written, so a rerun runs those units again
        raise DamagedReleaseError.of(damaged, to)
    written = finish_export(plan, to)
    return ExportResult(to, len(plan.tasks), len(plan.tasks) - len(todo), sum(r.rows for r in reports), sum(r.qrels for r in reports),
                        sum(r.cleaned for r in reports), written)


def main(argv: list[str] | None = None) -> ExportResult:
    from clirmatrix.pipeline.tools.export import FORMATS, plan_export

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("root")
    parser.add_argument("--format", choices=FORMATS, required=True)
    parser.add_argument("--to", required=True)
    args, beam_args = parser.parse_known_args(argv)
    return run_export(plan_export(args.root, args.format), args.to, beam_args)


if __name__ == "__main__":
    main(sys.argv[1:])
