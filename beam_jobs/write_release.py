"""``propagated`` + ``labels`` + ``catalog`` + ``docs`` -> the released files (docs/method.md sections 7-9).

Five steps, one pipeline (``clirmatrix.pipeline.method.splits``, ``.release`` and ``.multi8`` do the work):

1. plan: each language's query roles, priorities and keys; each language's ``DOCS``
   and ``DOCS-FULL`` files;
2. eval: one unit per query language X (the dev/test sets of every direction X -> Y)
   and one for MULTI-8's;
3. keys: one unit: the union of every eval set's keys (no train set may hold one),
   then the MULTI-8 queries of every split;
4. one unit per BI-139 direction X -> Y (its ``full`` and ``base`` files of the four
   splits, streamed block by block), and one per block of a MULTI-8 language's
   queries (the candidate lists of the chosen queries);
5. one unit per MULTI-8 document language Y: ``MULTI-8/{X}/{X}.{Y}.{split}.jl.gz``.

Each unit reports the md5 and size of what it wrote; the driver then writes
``downloads.json.gz`` from those reports.

Example::

    python -m clirmatrix.beam_jobs.write_release --work work/ --out out/ --seed 13
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from clirmatrix.beam_jobs.stages import BuildRun, Stage, Step, run_job
from clirmatrix.pipeline.config import BuildConfig
from clirmatrix.pipeline.io import fileio
from clirmatrix.pipeline.method import splits
from clirmatrix.pipeline.method.corpus import Folders
from clirmatrix.pipeline.method.splits import SplitSettings
from clirmatrix.pipeline.output import layout, multi8, release
from clirmatrix.pipeline.output.release import ReleaseSettings
from clirmatrix.schemas.contracts import (
    BlockTask,
    DirectionTask,
    DocsTask,
    EvalKeysReport,
    EvalKeysTask,
    EvalTask,
    FilesReport,
    LanguagePlan,
    Multi8EvalTask,
    Multi8TargetTask,
    ReleaseSummary,
    Report,
    SplitsTask,
    Summary,
    Unit,
    language_plans,
)

PLAN, EVAL, KEYS, DIRECTIONS, MULTI8 = "plan", "eval", "keys", "directions", "multi8"


def release_settings(config: BuildConfig) -> ReleaseSettings:
    """The release settings of a build: the one place they derive from its flags."""
    return ReleaseSettings(SplitSettings(config.seed, config.train_size, config.eval_size), tuple(config.multi_langs), base_url=config.base_url)


def builds_multi8(plans: Sequence[LanguagePlan], multi_langs: Sequence[str]) -> bool:
    """MULTI-8 is written when every one of its languages is in the build."""
    return bool(multi_langs) and set(multi_langs) <= {plan.lang for plan in plans}


def release_units(plans: Sequence[LanguagePlan], multi_langs: Sequence[str]) -> list[Unit]:
    """Every unit of the stage: splits and DOCS per language, eval sets, BI-139 directions, and MULTI-8 when all its languages are there."""
    by_lang = {plan.lang: plan for plan in plans}
    langs = sorted(by_lang)
    with_multi8 = builds_multi8(plans, multi_langs)
    units = [Unit(PLAN, f"splits.{lang}", SplitsTask(lang)) for lang in langs]
    units += [Unit(PLAN, f"docs.{lang}", DocsTask(lang)) for lang in sorted(langs, key=lambda lang: -by_lang[lang].docs)]
    units += [Unit(EVAL, f"eval.{lang}", EvalTask(by_lang[lang], tuple(other for other in langs if other != lang))) for lang in langs]
    if with_multi8:
        units.append(Unit(EVAL, "multi8.eval", Multi8EvalTask()))
    units.append(Unit(KEYS, "keys", EvalKeysTask(tuple(langs), with_multi8)))
    directions = [(src, tgt) for src in langs for tgt in langs if src != tgt]
    units += [Unit(DIRECTIONS, f"bi139.{src}.{tgt}", DirectionTask(by_lang[src], by_lang[tgt])) for src, tgt in sorted(directions, key=lambda d: -by_lang[d[0]].docs)]
    if with_multi8:
        units += [Unit(DIRECTIONS, f"multi8-lists.{tgt}.{block:05d}", BlockTask(by_lang[tgt], block)) for tgt in sorted(multi_langs) for block in range(by_lang[tgt].blocks)]
        units += [Unit(MULTI8, f"multi8.{tgt}", Multi8TargetTask(by_lang[tgt])) for tgt in sorted(multi_langs)]
    return units


class WriteRelease(Stage):
    """Release units -> BI-139, MULTI-8 and DOCS files, each unit reporting what it wrote."""

    name = "write_release"
    folder = Folders.release
    reads = (Folders.propagated,)
    steps = (
        Step(PLAN, "PlanQueries", "every query's eval role, priority and key; DOCS written"),
        Step(EVAL, "ChooseEvalSets", "the dev/test sets of every direction, and of MULTI-8"),
        Step(KEYS, "GatherEvalKeys", "every eval key, kept out of every train set; then the MULTI-8 queries"),
        Step(DIRECTIONS, "WriteDirections", "each BI-139 direction written; the MULTI-8 candidate lists gathered block by block"),
        Step(MULTI8, "WriteMulti8", "the MULTI-8 files of each document language"),
    )
    config_fields = ("out", "langs", "multi_langs", "seed", "train_size", "eval_size", "base_url")
    after = ("propagate",)

    def __init__(self, work_root: str, out_root: str, settings: ReleaseSettings = ReleaseSettings(), langs: Sequence[str] = ()) -> None:
        super().__init__(work_root)
        self.out_root = out_root
        self.settings = settings
        self.langs = tuple(sorted(langs))  # none: every language of the build

    @classmethod
    def from_run(cls, run: BuildRun) -> WriteRelease:
        return cls(run.work_root, run.config.out, release_settings(run.config), run.langs)

    def fingerprint_inputs(self, run: BuildRun) -> dict:
        """The candidates per query and the gzip encoder: another encoder (or version) writes other bytes."""
        return {"candidates": self.settings.candidates, "gzip": self.settings.gzip}

    def stale(self, run: BuildRun) -> bool:
        """A deleted release is written again whatever the stage's record says."""
        return not fileio.exists(fileio.join(self.out_root, layout.INDEX))

    def plans(self, upstream: dict[str, Summary]) -> list[LanguagePlan]:
        return [plan for plan in language_plans(upstream[Folders.propagated]) if not self.langs or plan.lang in self.langs]

    def plan(self, upstream: dict[str, Summary]) -> list[Unit]:
        for folder in ("BI-139", "MULTI-8", "DOCS", "DOCS-FULL", layout.INDEX):
            fileio.remove_tree(fileio.join(self.out_root, folder))
        return release_units(self.plans(upstream), self.settings.multi_langs)

    def run_unit(self, unit: Unit) -> Report:
        """Route a unit to the library function that does it, by the type of its task."""
        work_root, out_root, settings = self.work_root, self.out_root, self.settings
        settings.check_encoder()
        match unit.task:
            case SplitsTask(lang):
                return splits.write_query_splits(work_root, lang, settings.splits)
            case DocsTask(lang):
                return release.write_docs(work_root, out_root, lang)
            case EvalTask(plan, others):
                return splits.write_eval_picks(work_root, plan.lang, plan.blocks, others, settings.splits)
            case Multi8EvalTask():
                return multi8.choose_eval(work_root, settings)
            case EvalKeysTask(langs, with_multi8):
                picks = [self.work.eval_picks_file(lang) for lang in langs] + ([self.work.multi8_eval_file()] if with_multi8 else [])
                keys = splits.write_eval_keys(work_root, picks)
                return EvalKeysReport(eval_keys=keys, multi8_queries=multi8.choose_queries(work_root, settings).queries if with_multi8 else None)
            case DirectionTask(src, tgt):
                return release.write_direction(work_root, out_root, src, tgt, settings)
            case BlockTask(plan, block):
                return multi8.gather_lists(work_root, plan, block)
            case Multi8TargetTask(tgt):
                return multi8.write_target(work_root, out_root, tgt, settings)
        raise TypeError(f"{self.name} has no step for {unit.task!r}")

    def summarise(self, upstream: dict[str, Summary], reports: dict[str, Report]) -> ReleaseSummary:
        files = sorted((f for report in reports.values() if isinstance(report, FilesReport) for f in report.files), key=lambda f: f["path"])
        release.write_index(self.out_root, files, self.settings.base_url)
        counts: dict[str, dict[str, int]] = {}
        for entry in files:
            dataset = layout.parse_path(entry["path"]).dataset
            total = counts.setdefault(dataset, {"files": 0, "lines": 0, "bytes": 0})
            total["files"] += 1
            total["lines"] += entry["lines"]
            total["bytes"] += entry["size"]
        return ReleaseSummary(stage=self.name, multi8=builds_multi8(self.plans(upstream), self.settings.multi_langs), sets=counts, files=files)


def run(argv: Sequence[str] | None = None) -> Summary:
    return run_job(WriteRelease, argv)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO)
    run()
