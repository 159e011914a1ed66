"""``docs`` + ``catalog`` -> ``retrieval`` Parquet: every article title searched in its own language (docs/method.md section 4).

The units and what they do are ``clirmatrix.pipeline.retrieval``'s: languages
larger than ``--shard-docs`` are counted, summed, searched and merged shard by
shard, exactly as one index would rank them; the others are searched whole.
Output: ``retrieval/{lang}/{block}.parquet``, one file per block of queries.

Example::

    python -m clirmatrix.beam_jobs.retrieve --work work/ --langs en,de
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Sequence

import apache_beam as beam

from clirmatrix.beam_jobs import common, runners, stages
from clirmatrix.pipeline import fileio, retrieval
from clirmatrix.pipeline.corpus import WorkDirs
from clirmatrix.pipeline.reports import read_named_reports
from clirmatrix.pipeline.retrieval import RetrievalSettings

LOG = logging.getLogger("clirmatrix")


class RetrieveLanguages(beam.PTransform):
    """Retrieval units -> each language's top ``k`` per title, block by block."""

    def __init__(self, work_root: str, settings: RetrievalSettings, beam_args: Sequence[str] = ()) -> None:
        super().__init__()
        self.work_root = work_root
        self.settings = settings
        self.beam_args = list(beam_args)

    def _step(self, step: str) -> common.RunUnits:
        run = functools.partial(retrieval.STEPS[step], self.work_root, self.settings)
        return common.RunUnits(step, run, WorkDirs(self.work_root).stage("retrieval"), self.beam_args)

    def expand(self, units):
        return (
            units
            # Count each shard's terms (Elasticsearch: index each language on the cluster).
            | "CountShardTerms" >> beam.ParDo(self._step(retrieval.PREPARE))
            | "WhenCounted" >> common.Barrier()
            # Add up each term's document frequencies over its language's shards.
            | "SumTermCounts" >> beam.ParDo(self._step(retrieval.SUM))
            | "WhenSummed" >> common.Barrier()
            # Search every title in each shard, scored with its language's statistics.
            | "SearchShards" >> beam.ParDo(self._step(retrieval.SEARCH))
            | "WhenSearched" >> common.Barrier()
            # Merge the shards' top k of each block of queries.
            | "MergeShardHits" >> beam.ParDo(self._step(retrieval.MERGE))
        )


def run_retrieve(work_root: str, langs: Sequence[str], settings: RetrievalSettings, beam_args: Sequence[str] = (), workers: int | None = None) -> dict:
    """Search every language's titles; returns per-language counts, speeds and plans."""
    retrieval.check_engine(settings, langs)
    work = WorkDirs(work_root)
    linked = common.require_complete(work.stage("entity_docs"), "entity links")
    plans = [settings.plan(lang, linked["languages"][lang]["docs"]) for lang in sorted(langs)]
    out_dir = work.stage("retrieval")
    common.start_stage(out_dir)
    units = retrieval.plan_units(plans, settings)
    common.run_stage("RetrieveLanguages", units, RetrieveLanguages(work_root, settings, beam_args), beam_args, workers)
    for scratch in ("_index", "_shards"):  # the shards' indexes and hits: merged by now
        fileio.remove_tree(fileio.join(out_dir, scratch))
    languages = retrieval.summarise(plans, read_named_reports(out_dir), settings)
    totals = stages.sum_reports(languages.values(), ("docs", "queries", "queries_without_hits", "hits"))
    summary = {"stage": "retrieval", "settings": settings.fingerprint_parts(), "languages": languages, "totals": totals}
    common.finish_stage(out_dir, summary)
    return summary


def run(argv: Sequence[str] | None = None) -> dict:
    parser = stages.job_parser(__doc__, "The build's work folder (with docs/ and catalog/).", with_langs=True)
    parser.add_argument("--k", type=int, default=100)
    parser.add_argument("--shard-docs", type=int, default=retrieval.DEFAULT_SHARD_DOCS)
    parser.add_argument("--block-size", type=int, default=retrieval.DEFAULT_BLOCK_SIZE)
    parser.add_argument("--search-unit-queries", type=int, default=retrieval.DEFAULT_SEARCH_UNIT_QUERIES)
    args, beam_args = parser.parse_known_args(argv)
    beam_args = runners.resolve(beam_args)
    common.use_filesystem_options(beam_args)
    settings = RetrievalSettings(k=args.k, shard_docs=args.shard_docs, block_size=args.block_size, search_unit_queries=args.search_unit_queries)
    return run_retrieve(fileio.absolute(args.work), args.langs, settings, beam_args)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO)
    run()
