"""Released query files -> ``OUT/stats/``: the Table 7.1-7.4 numbers as TSV and heat maps (docs/method.md section 10).

In a build this stage (``Stats``) is no Beam pipeline: the write stage counted every
file's queries and labels as it wrote them, so ``run_stats`` only draws the tables and
maps. ``count_tree`` counts the files of any tree (a download, say) in a Beam
pipeline, one unit per file.

Example::

    python -m clirmatrix.beam_jobs.stats --out downloaded/ --work /tmp/stats-work
"""

from __future__ import annotations

import argparse
import functools
import logging
from collections.abc import Sequence
from dataclasses import asdict

import apache_beam as beam

from clirmatrix.beam_jobs import common
from clirmatrix.beam_jobs.stages import BaseStage, BuildRun
from clirmatrix.pipeline.io import fileio
from clirmatrix.pipeline.method.corpus import Folders, WorkDirs
from clirmatrix.pipeline.output import layout
from clirmatrix.pipeline.output.jsonl import walk_release
from clirmatrix.pipeline.output.stats import DirectionStats, direction_stats, stats_files
from clirmatrix.schemas.contracts import CountReport, FileTask, StatsSummary, Unit, read_typed_report

COUNT = "count"


def count_file(out_root: str, unit: Unit) -> CountReport:
    """One released query file -> its direction statistics, as a report."""
    relative = unit.task.path
    return CountReport(path=relative, stats=asdict(direction_stats(fileio.join(out_root, relative))))


class CountFiles(beam.PTransform):
    """Released query files -> their direction statistics."""

    def __init__(self, out_root: str, report_dir: str) -> None:
        super().__init__()
        self.out_root = out_root
        self.report_dir = report_dir

    def expand(self, units):
        return units | "CountFile" >> beam.ParDo(common.RunUnits(COUNT, functools.partial(count_file, self.out_root), self.report_dir))


def count_tree(out_root: str, report_dir: str, beam_args: Sequence[str] = (), workers: int | None = None) -> list[DirectionStats]:
    """Read and count every released query file under ``out_root``, in parallel."""
    common.start_stage(report_dir)
    files = [path for path, released in walk_release(out_root) if released is not None and released.dataset in layout.QUERY_SETS]
    units = [Unit(COUNT, path.replace("/", "__"), FileTask(path)) for path in files]
    common.run_stage("CountFiles", units, CountFiles(out_root, report_dir), beam_args, workers)
    reports = [read_typed_report(report) for report in common.read_reports(report_dir)]
    return [DirectionStats(**report.stats) for report in sorted(reports, key=lambda r: r.path)]


def counted_while_writing(work_root: str) -> list[DirectionStats]:
    """The counts the write stage reported for each query file it wrote."""
    released = common.require_complete(WorkDirs(work_root).stage(Folders.release), Folders.release)
    rows = []
    for entry in released.files:
        found = layout.parse_path(entry["path"])
        if found.dataset in layout.QUERY_SETS:
            rows.append(DirectionStats(found.dataset, found.src, found.tgt, found.split, entry["lines"], entry["docs_ge4"], entry["docs_ge1"]))
    return rows


def run_stats(out_root: str, rows: Sequence[DirectionStats]) -> StatsSummary:
    """Write ``stats/`` (TSV tables and PNG heat maps) from per-file counts."""
    files = stats_files(list(rows))
    stats_dir = fileio.join(out_root, layout.STATS_DIR)
    fileio.remove_tree(stats_dir)
    for name, data in files.items():
        fileio.write_bytes(fileio.join(stats_dir, name), data)  # local or on an object store
    return StatsSummary(stage="stats", files=len(rows), written=sorted(files))


class Stats(BaseStage):
    """The build's last stage: ``OUT/stats/`` drawn from what the write stage counted (no Beam pipeline)."""

    name = "stats"
    config_fields = ("out",)
    after = ("write_release",)

    def __init__(self, work_root: str, out_root: str) -> None:
        self.work_root, self.out_root = work_root, out_root

    @classmethod
    def from_run(cls, run: BuildRun) -> Stats:
        return cls(run.work_root, run.config.out)

    def stale(self, run: BuildRun) -> bool:
        """Deleted stats are drawn again whatever the record says."""
        return not fileio.any_under(fileio.join(self.out_root, layout.STATS_DIR))

    def run(self, beam_args: Sequence[str] = (), workers: int | None = None) -> StatsSummary:
        return run_stats(self.out_root, counted_while_writing(self.work_root))


def run(argv: Sequence[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="A build or a download.")
    parser.add_argument("--work", required=True, help="A folder for the per-file counts.")
    args, beam_args = parser.parse_known_args(argv)
    return run_stats(args.out, count_tree(args.out, args.work, beam_args))


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO)
    run()
