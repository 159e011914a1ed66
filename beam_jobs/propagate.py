"""``labels`` + ``catalog`` -> ``propagated`` Parquet: labels carried into every other language (docs/method.md section 6).

Two steps of ``clirmatrix.pipeline.propagation``: one unit per query language X
pairs X's documents with the same entity's article in every other language Y
(``propagated/_links/{X}/{Y}.parquet``); then one unit per block of X's queries
carries that block's labels into every Y (``propagated/{X}/{Y}/{block}.parquet``).

Example::

    python -m clirmatrix.beam_jobs.propagate --work work/
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Sequence

import apache_beam as beam

from clirmatrix.beam_jobs import common, runners, stages
from clirmatrix.beam_jobs.label import language_plans
from clirmatrix.pipeline import fileio
from clirmatrix.pipeline.corpus import WorkDirs
from clirmatrix.pipeline.propagation import propagate_block, write_doc_links
from clirmatrix.pipeline.units import Unit

LOG = logging.getLogger("clirmatrix")
LINKS, PROPAGATE = "links", "propagate"


class PropagateLabels(beam.PTransform):
    """Languages and blocks of queries -> each block's labels in every other language."""

    def __init__(self, work_root: str, langs: Sequence[str], beam_args: Sequence[str] = ()) -> None:
        super().__init__()
        self.work_root = work_root
        self.langs = sorted(langs)
        self.beam_args = list(beam_args)

    def expand(self, units):
        report_dir = WorkDirs(self.work_root).stage("propagated")
        links = functools.partial(write_doc_links, self.work_root)
        carry = functools.partial(propagate_block, self.work_root)
        return (
            units
            # Pair each language's documents with the same entity's article in every other language.
            | "LinkDocuments" >> beam.ParDo(common.RunUnits(LINKS, links, report_dir, self.beam_args))
            | "WhenLinked" >> common.Barrier()
            # Carry each block's labels through those pairs.
            | "CarryLabels" >> beam.ParDo(common.RunUnits(PROPAGATE, carry, report_dir, self.beam_args))
        )


def run_propagate(work_root: str, langs: Sequence[str], beam_args: Sequence[str] = (), workers: int | None = None) -> dict:
    """Carry every language's labels into every other language; returns per-direction counts."""
    work = WorkDirs(work_root)
    plans = language_plans(common.require_complete(work.stage("labels"), "labels"))
    langs = sorted(langs)
    out_dir = work.stage("propagated")
    common.start_stage(out_dir)
    units = [Unit(LINKS, f"links.{lang}", (lang, langs)) for lang in langs]
    units += [Unit(PROPAGATE, f"carry.{plan.lang}.{block:05d}", (plan, block, langs)) for plan in sorted(plans, key=lambda p: -p.docs) for block in range(plan.blocks)]
    common.run_stage("PropagateLabels", units, PropagateLabels(work_root, langs, beam_args), beam_args, workers)
    reports = common.read_reports(out_dir)
    languages = {}
    for plan in plans:
        blocks = [r for r in reports if r["lang"] == plan.lang and "block" in r]
        directions = {}
        for tgt in langs:
            if tgt != plan.lang:
                directions[tgt] = {key: sum(r["directions"][tgt][key] for r in blocks) for key in ("queries", "labels")}
        languages[plan.lang] = {"lang": plan.lang, "queries": plan.docs, "directions": directions, "plan": plan.to_dict()}
    summary = {"stage": "propagated", "languages": languages}
    common.finish_stage(out_dir, summary)
    return summary


def run(argv: Sequence[str] | None = None) -> dict:
    parser = stages.job_parser(__doc__, "The build's work folder (with labels/ and catalog/).", with_langs=True)
    args, beam_args = parser.parse_known_args(argv)
    beam_args = runners.resolve(beam_args)
    common.use_filesystem_options(beam_args)
    return run_propagate(fileio.absolute(args.work), args.langs, beam_args)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO)
    run()
