"""``retrieval`` -> ``labels`` Parquet: Jenks labels per query, label 6 for its own article (docs/method.md section 5).

One unit of work per block of a language's queries (``clirmatrix.pipeline.labels``):
read that block's hits, label each query, write ``labels/{lang}/{block}.parquet``.
A query with no hits (a title that analyses to no tokens) still gets its own
article, label 6.

Example::

    python -m clirmatrix.beam_jobs.label --work work/
"""

from __future__ import annotations

import functools
import logging
from collections import Counter
from collections.abc import Sequence

import apache_beam as beam

from clirmatrix.beam_jobs import common, runners, stages
from clirmatrix.pipeline import fileio
from clirmatrix.pipeline.corpus import WorkDirs
from clirmatrix.pipeline.labels import label_block
from clirmatrix.pipeline.units import LanguagePlan, Unit

LOG = logging.getLogger("clirmatrix")
LABEL = "label"


class LabelQueries(beam.PTransform):
    """Blocks of queries -> their labelled documents."""

    def __init__(self, work_root: str, beam_args: Sequence[str] = ()) -> None:
        super().__init__()
        self.work_root = work_root
        self.beam_args = list(beam_args)

    def expand(self, units):
        run = functools.partial(label_block, self.work_root)
        return units | "LabelBlock" >> beam.ParDo(common.RunUnits(LABEL, run, WorkDirs(self.work_root).stage("labels"), self.beam_args))


def language_plans(summary: dict) -> list[LanguagePlan]:
    """The plans a stage's summary records (every stage after retrieval keeps retrieval's blocks)."""
    return [LanguagePlan.from_dict(entry["plan"]) for _, entry in sorted(summary["languages"].items())]


def run_label(work_root: str, beam_args: Sequence[str] = (), workers: int | None = None) -> dict:
    """Label every language the retrieval stage searched."""
    work = WorkDirs(work_root)
    plans = language_plans(common.require_complete(work.stage("retrieval"), "retrieval"))
    out_dir = work.stage("labels")
    common.start_stage(out_dir)
    units = [Unit(LABEL, f"{plan.lang}.{block:05d}", (plan, block)) for plan in plans for block in range(plan.blocks)]
    common.run_stage("LabelQueries", units, LabelQueries(work_root, beam_args), beam_args, workers)
    reports = common.read_reports(out_dir)
    languages = {}
    for plan in plans:
        mine = [r for r in reports if r["lang"] == plan.lang]
        labels = Counter()
        for report in mine:
            labels.update(report["labels"])
        languages[plan.lang] = {"lang": plan.lang, "queries": sum(r["queries"] for r in mine), "labels": dict(sorted(labels.items())), "plan": plan.to_dict()}
    summary = {"stage": "labels", "languages": languages}
    common.finish_stage(out_dir, summary)
    return summary


def run(argv: Sequence[str] | None = None) -> dict:
    args, beam_args = stages.job_parser(__doc__, "The build's work folder (with retrieval/).").parse_known_args(argv)
    beam_args = runners.resolve(beam_args)
    common.use_filesystem_options(beam_args)
    return run_label(fileio.absolute(args.work), beam_args)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO)
    run()
