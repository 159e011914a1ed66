"""``retrieval`` -> ``labels`` Parquet: Jenks labels per query, label 6 for its own article (docs/method.md section 5).

One unit of work per block of a language's queries (``clirmatrix.pipeline.method.labels``):
read that block's hits, label each query, write ``labels/{lang}/{block}.parquet``.
A query with no hits (a title that analyses to no tokens) still gets its own
article, label 6.

Example::

    python -m clirmatrix.beam_jobs.label --work work/
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence

from clirmatrix.beam_jobs.stages import BuildRun, Stage, Step, run_job
from clirmatrix.pipeline.method.corpus import Folders
from clirmatrix.pipeline.method.labels import label_block
from clirmatrix.schemas.contracts import BlockTask, LabelLanguage, LabelReport, LabelSummary, Summary, Unit, language_plans


class Label(Stage):
    """Blocks of queries -> their labelled documents."""

    name = "label"
    folder = Folders.labels
    reads = (Folders.retrieval,)
    after = ("retrieve",)
    steps = (Step("label", "LabelBlock", "a block's hits labelled by Jenks breaks"),)

    @classmethod
    def from_run(cls, run: BuildRun) -> Label:
        return cls(run.work_root)

    def plan(self, upstream: dict[str, Summary]) -> list[Unit]:
        plans = language_plans(upstream[Folders.retrieval])
        return [Unit("label", f"{plan.lang}.{block:05d}", BlockTask(plan, block)) for plan in plans for block in range(plan.blocks)]

    def run_unit(self, unit: Unit) -> LabelReport:
        return label_block(self.work_root, unit.task.plan, unit.task.block)

    def summarise(self, upstream: dict[str, Summary], reports: dict[str, LabelReport]) -> LabelSummary:
        languages = {}
        for plan in language_plans(upstream[Folders.retrieval]):
            mine = [r for r in reports.values() if r.lang == plan.lang]
            labels = Counter()
            for report in mine:
                labels.update(report.labels)
            languages[plan.lang] = LabelLanguage(plan.lang, sum(r.queries for r in mine), dict(sorted(labels.items())), plan)
        return LabelSummary(stage=self.name, languages=languages)


def run(argv: Sequence[str] | None = None) -> Summary:
    return run_job(Label, argv)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO)
    run()
