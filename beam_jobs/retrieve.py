"""``docs`` -> ``retrieval`` Parquet: every article title searched in its own language (PIPELINE.md section 4).

One unit of work per language: index the truncated documents (``title`` and
``text`` fields) with the configured engine, then search every title in
batches and keep the top ``k`` hits. Each batch of queries is one Parquet row
group, so the label stage can read a query's hits without reading the file.

Example::

    python -m clirmatrix.beam_jobs.retrieve --work work/ --langs en,de
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field

import apache_beam as beam
import numpy as np
import pyarrow as pa

from clirmatrix.beam_jobs import common, stages
from clirmatrix.pipeline import fileio
from clirmatrix.pipeline.config import ConfigError, comma_list
from clirmatrix.pipeline.corpus import WorkDirs, iter_doc_batches
from clirmatrix.pipeline.engines.base import Bm25Settings
from clirmatrix.pipeline.parquet_io import ParquetSink
from clirmatrix.schemas import RETRIEVAL

LOG = logging.getLogger("clirmatrix")
QUERY_BATCH = 10_000


@dataclass(frozen=True)
class RetrievalSettings:
    """Which engine, its BM25 parameters, and how many hits per query (PIPELINE.md section 4)."""

    engine: str = "embedded"
    k: int = 100
    bm25: Bm25Settings = field(default_factory=Bm25Settings)
    threads: int = 1
    es_url: str = ""  # one URL for every language, or "en=URL,de=URL" (one node per language)
    docs_key: str = ""  # fingerprint of the documents: an Elasticsearch index holding them is reused

    def fingerprint_parts(self) -> dict:
        """What changes the results (not ``threads``, nor where the cluster is)."""
        return {"engine": self.engine, "k": self.k, "bm25": asdict(self.bm25)}

    def es_urls(self) -> dict[str, str]:
        """Language -> URL of ``es_url``; ``"*"`` -> URL when one cluster serves every language."""
        if "=" not in self.es_url:
            return {"*": self.es_url}
        return dict(item.split("=", 1) for item in comma_list(self.es_url))

    def es_url_for(self, lang: str) -> str:
        urls = self.es_urls()
        if "*" in urls:
            return urls["*"]
        if lang not in urls:
            raise ConfigError(f"--es-url names no Elasticsearch for {lang} (it has {', '.join(sorted(urls))})")
        return urls[lang]


ENGINES = ("embedded", "elasticsearch")


def check_engine(settings: RetrievalSettings, langs: Sequence[str] = ()) -> None:
    """Fail before any work starts when the engine cannot run: unknown, or a cluster that does not answer."""
    if settings.engine not in ENGINES:
        raise ConfigError(f"unknown engine {settings.engine!r}; choose from {', '.join(ENGINES)}")
    if settings.engine == "elasticsearch":
        if not settings.es_url:
            raise ConfigError("--engine elasticsearch needs --es-url (or CLIRMATRIX_ES_URL); start the nodes with `docker compose up -d`")
        from clirmatrix.pipeline.engines.elastic import connect, with_retries

        for lang in langs:
            settings.es_url_for(lang)  # every language has a node
        for url in sorted(set(settings.es_urls().values())):
            with_retries(connect(url, timeout=10).info, url, "cluster check", retries=2)


def make_engine(settings: RetrievalSettings, lang: str):
    """A fresh engine for one language."""
    if settings.engine == "elasticsearch":
        from clirmatrix.pipeline.engines.elastic import ElasticsearchEngine, connect

        from clirmatrix.pipeline.engines.analyzers import analyzer_for

        url = settings.es_url_for(lang)
        # The index is reused only for the same documents *and* the same analysis and BM25 settings.
        key = stages.fingerprint(settings.docs_key, lang, asdict(settings.bm25), analyzer_for(lang).spec) if settings.docs_key else ""
        return ElasticsearchEngine(connect(url), url, lang, settings.bm25, fingerprint=key)
    from clirmatrix.pipeline.engines.analyzers import analyzer_for
    from clirmatrix.pipeline.engines.embedded import EmbeddedEngine

    return EmbeddedEngine(analyzer_for(lang), settings.bm25, threads=settings.threads)


def hits_table(query_start: int, hits: Sequence) -> pa.Table:
    """Rows (query, doc, score) of a batch of queries numbered from ``query_start``, in rank order."""
    counts = np.array([len(h.positions) for h in hits], dtype=np.int64)
    query = np.repeat(np.arange(query_start, query_start + len(hits), dtype=np.int32), counts)
    doc = np.concatenate([np.asarray(h.positions, dtype=np.int32) for h in hits]) if hits else np.zeros(0, np.int32)
    score = np.concatenate([np.asarray(h.scores, dtype=np.float32) for h in hits]) if hits else np.zeros(0, np.float32)
    return pa.table([pa.array(query), pa.array(doc), pa.array(score)], schema=RETRIEVAL)


class RetrieveLanguage(beam.DoFn):
    """One language -> ``retrieval/{lang}.parquet`` and a report with counts and speed."""

    def __init__(self, work_root: str, out_dir: str, settings: RetrievalSettings) -> None:
        self.work_root = work_root
        self.out_dir = out_dir
        self.settings = settings

    def process(self, lang: str) -> Iterator[str]:
        work = WorkDirs(self.work_root)
        engine = make_engine(self.settings, lang)
        started = time.perf_counter()
        engine.index(
            (batch.column("doc_id").to_pylist(), batch.column("title").to_pylist(), batch.column("text").to_pylist())
            for batch in iter_doc_batches(work, lang, ["doc_id", "title", "text"])
        )
        engine.search(["warm up"], self.settings.k)  # numba loads its kernels once: not part of the search rate
        indexed = time.perf_counter()
        queries = no_hits = 0
        path = fileio.join(self.out_dir, f"{lang}.parquet")
        with ParquetSink(path, RETRIEVAL) as sink:
            for batch in iter_doc_batches(work, lang, ["title"], QUERY_BATCH):
                hits = engine.search(batch.column("title").to_pylist(), self.settings.k)
                sink.add_table(hits_table(queries, hits))
                queries += len(hits)
                no_hits += sum(1 for h in hits if len(h.positions) == 0)
                LOG.info("%s: %s queries searched", lang, f"{queries:,}")
        searched = time.perf_counter()
        search_seconds = searched - indexed
        report = {
            "lang": lang,
            "docs": len(engine.doc_ids),
            "queries": queries,
            "queries_without_hits": no_hits,
            "hits": sink.rows,
            "index_seconds": round(indexed - started, 3),
            "search_seconds": round(search_seconds, 3),
            "queries_per_second": round(queries / search_seconds, 1) if search_seconds > 0 else None,
        }
        common.write_report(self.out_dir, lang, report)
        yield lang


def run_retrieve(work_root: str, langs: Sequence[str], settings: RetrievalSettings, beam_args: Sequence[str] = (), workers: int | None = None) -> dict:
    """Search every language's titles; returns per-language counts and speeds."""
    check_engine(settings, langs)
    out_dir = WorkDirs(work_root).stage("retrieval")
    common.start_stage(out_dir)
    stages.run_units("RetrieveLanguage", sorted(langs), RetrieveLanguage(work_root, out_dir, settings), beam_args, workers)
    totals = ("docs", "queries", "queries_without_hits", "hits")
    return stages.finish_languages(out_dir, "retrieval", totals, settings=settings.fingerprint_parts())


def run(argv: Sequence[str] | None = None) -> dict:
    parser = stages.job_parser(__doc__, "The build's work folder (with docs/ and entity_docs/).", with_langs=True)
    parser.add_argument("--k", type=int, default=100)
    args, beam_args = parser.parse_known_args(argv)
    return run_retrieve(args.work, args.langs, RetrievalSettings(k=args.k), beam_args)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO)
    run()
