"""``docs`` + ``catalog`` -> ``retrieval`` Parquet: every article title searched in its own language (docs/method.md section 4).

The units and what they do are ``clirmatrix.pipeline.method.retrieval``'s: languages
larger than ``--shard-docs`` are counted, summed, searched and merged shard by
shard, exactly as one index would rank them; the others are searched whole.
Output: ``retrieval/{lang}/{block}.parquet``, one file per block of queries.

Example::

    python -m clirmatrix.beam_jobs.retrieve --work work/ --langs en,de
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from dataclasses import replace

from clirmatrix.beam_jobs.stages import BuildRun, Stage, Step, run_job, sum_fields
from clirmatrix.pipeline.config import BuildConfig
from clirmatrix.pipeline.engines.base import Bm25Settings
from clirmatrix.pipeline.io import fileio
from clirmatrix.pipeline.method import retrieval
from clirmatrix.pipeline.method.corpus import Folders
from clirmatrix.pipeline.method.retrieval import RetrievalSettings
from clirmatrix.schemas.contracts import LanguagePlan, Report, RetrievalSummary, Summary, Unit


def retrieval_settings(config: BuildConfig) -> RetrievalSettings:
    """The retrieval settings of a build: the one place they derive from its flags."""
    bm25 = Bm25Settings(config.k1, config.b, config.title_boost, config.combine)
    es_url = config.es_url or os.environ.get("CLIRMATRIX_ES_URL", "")
    return RetrievalSettings(
        config.engine, config.k, bm25, config.threads, es_url,
        shard_docs=config.shard_docs, block_size=config.block_size, search_unit_queries=config.search_unit_queries,
    )  # fmt: skip


class Retrieve(Stage):
    """Retrieval units -> each language's top ``k`` per title, block by block."""

    name = "retrieve"
    folder = Folders.retrieval
    reads = (Folders.entity_docs,)
    steps = (
        Step(retrieval.PREPARE, "CountShardTerms", "each shard's terms counted (Elasticsearch: each language indexed on the cluster)"),
        Step(retrieval.SUM, "SumTermCounts", "each term's document frequencies added up over its language's shards"),
        Step(retrieval.SEARCH, "SearchShards", "every title searched in each shard, scored with its language's statistics"),
        Step(retrieval.MERGE, "MergeShardHits", "the shards' top k of each block of queries merged"),
    )
    config_fields = (
        "langs", "engine", "k", "k1", "b", "title_boost", "combine", "es_url", "threads", "shard_docs", "block_size", "search_unit_queries",
    )  # fmt: skip
    after = ("link_entities",)

    def __init__(self, work_root: str, settings: RetrievalSettings, langs: Sequence[str] = ()) -> None:
        super().__init__(work_root)
        self.settings = settings
        self.langs = tuple(sorted(langs))  # none: every language linked

    @classmethod
    def from_run(cls, run: BuildRun) -> Retrieve:
        # The documents' fingerprint names an Elasticsearch index that holds them already (not part of the stage's own).
        settings = replace(retrieval_settings(run.config), docs_key=run.keys.get("extract_docs", ""))
        return cls(run.work_root, settings, run.langs)

    @classmethod
    def check(cls, run: BuildRun) -> None:
        """The engine's own checks (a reachable cluster for each language, ...), before the build starts."""
        retrieval.check_engine(retrieval_settings(run.config), run.config.langs)

    def upstream(self) -> dict[str, Summary]:
        found = super().upstream()
        retrieval.check_engine(self.settings, self.langs or sorted(found[Folders.entity_docs].languages))
        return found

    def plans(self, upstream: dict[str, Summary]) -> list[LanguagePlan]:
        linked = upstream[Folders.entity_docs].languages
        return [self.settings.plan(lang, linked[lang].docs) for lang in sorted(linked) if not self.langs or lang in self.langs]

    def plan(self, upstream: dict[str, Summary]) -> list[Unit]:
        return retrieval.plan_units(self.plans(upstream), self.settings)

    def run_unit(self, unit: Unit) -> Report:
        return retrieval.run_unit(self.work_root, self.settings, unit)

    def summarise(self, upstream: dict[str, Summary], reports: dict[str, Report]) -> RetrievalSummary:
        for scratch in ("_index", "_shards"):  # the shards' indexes and hits: merged by now
            fileio.remove_tree(fileio.join(self.stage_dir, scratch))
        plans = self.plans(upstream)
        languages = retrieval.summarise(plans, reports, self.settings)
        totals = sum_fields(languages.values(), ("docs", "queries", "queries_without_hits", "hits"))
        return RetrievalSummary(stage=self.name, settings=self.settings.fingerprint_parts(), languages=languages, totals=totals)


def run(argv: Sequence[str] | None = None) -> Summary:
    return run_job(Retrieve, argv)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO)
    run()
