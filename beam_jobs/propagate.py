"""``labels`` + ``catalog`` -> ``propagated`` Parquet: labels carried into every other language (docs/method.md section 6).

Two steps of ``clirmatrix.pipeline.method.propagation``: one unit per query language X
pairs X's documents with the same entity's article in every other language Y
(``propagated/_links/{X}/{Y}.parquet``); then one unit per block of X's queries
carries that block's labels into every Y (``propagated/{X}/{Y}/{block}.parquet``).

Example::

    python -m clirmatrix.beam_jobs.propagate --work work/
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from clirmatrix.beam_jobs.stages import BuildRun, Stage, Step, run_job
from clirmatrix.pipeline.method.corpus import Folders
from clirmatrix.pipeline.method.propagation import propagate_block, write_doc_links
from clirmatrix.schemas.contracts import CarryReport, CarryTask, LanguagePlan, PairingReport, PairingTask, PropagationLanguage, PropagationSummary, Summary, Unit, language_plans


class Propagate(Stage):
    """Languages and blocks of queries -> each block's labels in every other language."""

    name = "propagate"
    folder = Folders.propagated
    reads = (Folders.labels,)
    steps = (
        Step("links", "LinkDocuments", "each language's documents paired with the same entity's article in every other language"),
        Step("propagate", "CarryLabels", "each block's labels carried through those pairs"),
    )
    config_fields = ("langs",)
    after = ("label", "link_entities")  # its pairs are the link stage's catalog's

    def __init__(self, work_root: str, langs: Sequence[str] = ()) -> None:
        super().__init__(work_root)
        self.langs = tuple(sorted(langs))  # none: every language labelled

    @classmethod
    def from_run(cls, run: BuildRun) -> Propagate:
        return cls(run.work_root, run.langs)

    def plans(self, upstream: dict[str, Summary]) -> list[LanguagePlan]:
        return [plan for plan in language_plans(upstream[Folders.labels]) if not self.langs or plan.lang in self.langs]

    def plan(self, upstream: dict[str, Summary]) -> list[Unit]:
        plans = self.plans(upstream)
        langs = tuple(plan.lang for plan in plans)
        units = [Unit("links", f"links.{lang}", PairingTask(lang, langs)) for lang in langs]
        units += [Unit("propagate", f"carry.{plan.lang}.{block:05d}", CarryTask(plan, block, langs)) for plan in sorted(plans, key=lambda p: -p.docs) for block in range(plan.blocks)]
        return units

    def run_unit(self, unit: Unit) -> PairingReport | CarryReport:
        match unit.task:
            case PairingTask(lang, langs):
                return write_doc_links(self.work_root, lang, langs)
            case CarryTask(plan, block, langs):
                return propagate_block(self.work_root, plan, block, langs)
        raise TypeError(f"{self.name} has no step for {unit.task!r}")

    def summarise(self, upstream: dict[str, Summary], reports: dict[str, PairingReport | CarryReport]) -> PropagationSummary:
        plans = self.plans(upstream)
        languages = {}
        for plan in plans:
            blocks = [r for r in reports.values() if isinstance(r, CarryReport) and r.lang == plan.lang]
            directions = {}
            for tgt in plans:
                if tgt.lang != plan.lang:
                    directions[tgt.lang] = {key: sum(r.directions[tgt.lang][key] for r in blocks) for key in ("queries", "labels")}
            languages[plan.lang] = PropagationLanguage(plan.lang, plan.docs, directions, plan)
        return PropagationSummary(stage=self.name, languages=languages)


def run(argv: Sequence[str] | None = None) -> Summary:
    return run_job(Propagate, argv)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO)
    run()
