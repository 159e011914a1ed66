"""``propagated`` + ``labels`` + ``catalog`` + ``docs`` -> the released files (docs/method.md sections 7-9).

Five steps, one pipeline (``clirmatrix.pipeline.splits``, ``.release`` and ``.multi8`` do the work):

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

import argparse
import functools
import logging
from collections.abc import Sequence

import apache_beam as beam

from clirmatrix.beam_jobs import common, runners
from clirmatrix.beam_jobs.label import language_plans
from clirmatrix.pipeline import fileio, layout, multi8, release, splits
from clirmatrix.pipeline.corpus import WorkDirs
from clirmatrix.pipeline.release import ReleaseSettings
from clirmatrix.pipeline.splits import SplitSettings
from clirmatrix.pipeline.units import LanguagePlan, Unit

LOG = logging.getLogger("clirmatrix")
PLAN, EVAL, KEYS, DIRECTIONS, MULTI8 = "plan", "eval", "keys", "directions", "multi8"


def run_unit(work_root: str, out_root: str, settings: ReleaseSettings, kind: str, *args) -> dict:
    """Route a unit to the library function that does it."""
    if kind == "splits":
        return splits.write_query_splits(work_root, args[0], settings.splits)
    if kind == "docs":
        return release.write_docs(work_root, out_root, args[0])
    if kind == "eval":
        return splits.write_eval_picks(work_root, args[0].lang, args[0].blocks, args[1], settings.splits)
    if kind == "multi8-eval":
        return multi8.choose_eval(work_root, settings)
    if kind == "keys":
        work = WorkDirs(work_root)
        keys = splits.write_eval_keys(work_root, [work.eval_picks_file(lang) for lang in args[0]] + ([work.multi8_eval_file()] if args[1] else []))
        return {"unit": "keys", "eval_keys": keys, **({"multi8": multi8.choose_queries(work_root, settings)} if args[1] else {})}
    if kind == "bi139":
        return release.write_direction(work_root, out_root, args[0], args[1], settings)
    if kind == "multi8-lists":
        return multi8.gather_lists(work_root, args[0], args[1])
    if kind == "multi8":
        return multi8.write_target(work_root, out_root, args[0], settings)
    raise ValueError(f"unknown unit kind {kind!r}")


def release_units(plans: Sequence[LanguagePlan], multi_langs: Sequence[str]) -> list[Unit]:
    """Every unit of the stage: splits and DOCS per language, eval sets, BI-139 directions, and MULTI-8 when all its languages are there."""
    by_lang = {plan.lang: plan for plan in plans}
    langs = sorted(by_lang)
    with_multi8 = bool(multi_langs) and set(multi_langs) <= set(langs)
    units = [Unit(PLAN, f"splits.{lang}", ("splits", lang)) for lang in langs]
    units += [Unit(PLAN, f"docs.{lang}", ("docs", lang)) for lang in sorted(langs, key=lambda lang: -by_lang[lang].docs)]
    units += [Unit(EVAL, f"eval.{lang}", ("eval", by_lang[lang], tuple(other for other in langs if other != lang))) for lang in langs]
    if with_multi8:
        units.append(Unit(EVAL, "multi8.eval", ("multi8-eval",)))
    units.append(Unit(KEYS, "keys", ("keys", tuple(langs), with_multi8)))
    directions = [(src, tgt) for src in langs for tgt in langs if src != tgt]
    units += [Unit(DIRECTIONS, f"bi139.{src}.{tgt}", ("bi139", by_lang[src], by_lang[tgt])) for src, tgt in sorted(directions, key=lambda d: -by_lang[d[0]].docs)]
    if with_multi8:
        units += [Unit(DIRECTIONS, f"multi8-lists.{tgt}.{block:05d}", ("multi8-lists", by_lang[tgt], block)) for tgt in sorted(multi_langs) for block in range(by_lang[tgt].blocks)]
        units += [Unit(MULTI8, f"multi8.{tgt}", ("multi8", by_lang[tgt])) for tgt in sorted(multi_langs)]
    return units


class WriteRelease(beam.PTransform):
    """Release units -> BI-139, MULTI-8 and DOCS files, each unit reporting what it wrote."""

    def __init__(self, work_root: str, out_root: str, settings: ReleaseSettings, beam_args: Sequence[str] = ()) -> None:
        super().__init__()
        self.work_root = work_root
        self.out_root = out_root
        self.settings = settings
        self.beam_args = list(beam_args)

    def _step(self, step: str) -> common.RunUnits:
        run = functools.partial(run_unit, self.work_root, self.out_root, self.settings)
        return common.RunUnits(step, run, WorkDirs(self.work_root).stage("release"), self.beam_args)

    def expand(self, units):
        return (
            units
            # Give every query its eval role, priority and key; write DOCS.
            | "PlanQueries" >> beam.ParDo(self._step(PLAN))
            | "WhenPlanned" >> common.Barrier()
            # Fill the dev/test sets of every direction, and of MULTI-8.
            | "ChooseEvalSets" >> beam.ParDo(self._step(EVAL))
            | "WhenChosen" >> common.Barrier()
            # Every eval key, kept out of every train set; then the MULTI-8 queries.
            | "GatherEvalKeys" >> beam.ParDo(self._step(KEYS))
            | "WhenGathered" >> common.Barrier()
            # Write each BI-139 direction; gather the MULTI-8 candidate lists block by block.
            | "WriteDirections" >> beam.ParDo(self._step(DIRECTIONS))
            | "WhenWritten" >> common.Barrier()
            # Write the MULTI-8 files of each document language.
            | "WriteMulti8" >> beam.ParDo(self._step(MULTI8))
        )


def run_write_release(work_root: str, out_root: str, langs: Sequence[str], settings: ReleaseSettings, beam_args: Sequence[str] = (), workers: int | None = None) -> dict:
    """Write every released file and the index; returns counts per set."""
    work = WorkDirs(work_root)
    plans = [plan for plan in language_plans(common.require_complete(work.stage("propagated"), "propagation")) if plan.lang in set(langs)]
    report_dir = work.stage("release")
    common.start_stage(report_dir)
    for folder in ("BI-139", "MULTI-8", "DOCS", "DOCS-FULL", layout.INDEX):
        fileio.remove_tree(fileio.join(out_root, folder))
    units = release_units(plans, settings.multi_langs)
    common.run_stage("WriteRelease", units, WriteRelease(work_root, out_root, settings, beam_args), beam_args, workers)
    files = sorted((f for report in common.read_reports(report_dir) for f in report.get("files", ())), key=lambda f: f["path"])
    release.write_index(out_root, files, settings.base_url)
    counts: dict[str, dict[str, int]] = {}
    for entry in files:
        dataset = layout.parse_path(entry["path"]).dataset
        total = counts.setdefault(dataset, {"files": 0, "lines": 0, "bytes": 0})
        total["files"] += 1
        total["lines"] += entry["lines"]
        total["bytes"] += entry["size"]
    summary = {"stage": "release", "multi8": any(unit.step == MULTI8 for unit in units), "sets": counts, "files": files}
    common.finish_stage(report_dir, summary)
    return summary


def run(argv: Sequence[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--langs", default=None, help="Comma-separated (default: every language of the build).")
    parser.add_argument("--seed", type=int, default=SplitSettings.seed)
    args, beam_args = parser.parse_known_args(argv)
    beam_args = runners.resolve(beam_args)
    common.use_filesystem_options(beam_args)
    work = fileio.absolute(args.work)
    langs = args.langs.split(",") if args.langs else [plan.lang for plan in language_plans(common.require_complete(WorkDirs(work).stage("propagated"), "propagation"))]
    return run_write_release(work, fileio.absolute(args.out), langs, ReleaseSettings(splits=SplitSettings(seed=args.seed)), beam_args)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO)
    run()
