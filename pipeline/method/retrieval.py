"""Monolingual retrieval (docs/method.md section 4): every title searched in its own language, in bounded units.

The embedded engine holds its index in memory, ~1-2 KB a document while it is
built, so a language with more than ``shard_docs`` documents is cut into shards of
consecutive positions, searched separately and merged, and the result is exactly
the unsharded one, bit for bit:

1. **count** (one unit per shard): index the shard, write the document frequency
   of each of its terms per field, split by a hash of the term into as many
   partitions as there are shards, and report the shard's field statistics;
2. **sum** (one unit per partition): add the shards' counts of each term;
3. **search** (one unit per shard and group of query blocks): load the shard's index
   (step 1 stored it), score it with the language's statistics (documents and tokens
   per field, each term's document frequency; as Elasticsearch's
   ``dfs_query_then_fetch`` does) so every document gets its unsharded score, and keep
   each query of the group's top ``k`` of the shard. Groups of ``search_unit_queries``
   bound a unit's time (English's 7.2 M titles against one shard would be one unit of
   ~26 core-minutes; in groups of a million, 8 of ~4);
4. **merge** (one unit per block of queries): each query's top ``k`` of all shards,
   by score and then position, the tie order of one index.

A language of one shard skips 1, 2 and 4: its search unit writes the result. Each
result file holds one block of ``block_size`` queries (rows of a query together,
in rank order), which the label stage reads a block at a time.

An engine that shards itself (``EngineKind.shards_itself``: Elasticsearch, whose
cluster holds the index) takes one unit per language to index it, then one unit per
block to search it.
"""

from __future__ import annotations

import logging
import time
import zlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field

import numba
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from clirmatrix.pipeline.engines.base import Bm25Settings, CollectionStatistics, Engine, FieldStatistics, FlatHits, Hits, LocalEngine
from clirmatrix.pipeline.engines.registry import ENGINES, EngineKind, EngineSettings, engine_kind
from clirmatrix.pipeline.io import fileio
from clirmatrix.pipeline.io.parquet_io import ParquetSink, read_table, write_table
from clirmatrix.pipeline.io.reports import read_report
from clirmatrix.pipeline.method.corpus import Folders, WorkDirs, iter_catalog, iter_docs
from clirmatrix.pipeline.method.units import DEFAULT_BLOCK_SIZE, DEFAULT_SEARCH_UNIT_QUERIES, DEFAULT_SHARD_DOCS
from clirmatrix.pipeline.settings import DEFAULT_K, DEFAULT_THREADS, ConfigError
from clirmatrix.schemas import RETRIEVAL, TERM_COUNTS
from clirmatrix.schemas.contracts import (
    BlockHitsReport,
    BlockTask,
    ClusterIndexReport,
    LanguagePlan,
    PartitionTask,
    Report,
    RetrievalLanguage,
    SearchReport,
    SearchTask,
    ShardTask,
    TermCountReport,
    TermSumReport,
    Unit,
)

LOG = logging.getLogger("clirmatrix")
QUERY_BATCH = 10_000  # queries searched per engine call and written per row group

# The steps of the stage, in order.
PREPARE, SUM, SEARCH, MERGE = "prepare", "sum", "search", "merge"


@dataclass(frozen=True)
class RetrievalSettings:
    """Which engine, its BM25 parameters, hits per query (docs/method.md section 4), and how the work is cut."""

    engine: str = ENGINES[0]
    k: int = DEFAULT_K
    bm25: Bm25Settings = field(default_factory=Bm25Settings)
    threads: int = DEFAULT_THREADS
    es_url: str = ""  # one URL for every language, or "en=URL,de=URL" (one node per language)
    docs_key: str = ""  # fingerprint of the documents: an Elasticsearch index holding them is reused
    shard_docs: int = DEFAULT_SHARD_DOCS
    block_size: int = DEFAULT_BLOCK_SIZE
    search_unit_queries: int = DEFAULT_SEARCH_UNIT_QUERIES  # how search units are cut: no file depends on it

    def __post_init__(self) -> None:
        if min(self.shard_docs, self.block_size, self.search_unit_queries) < 1:
            raise ConfigError(
                "--shard-docs, --block-size and --search-unit-queries must be at least 1, "
                f"got {self.shard_docs}, {self.block_size} and {self.search_unit_queries}"
            )

    def fingerprint_parts(self) -> dict:
        """What changes the stage's files: not ``threads``, nor where the cluster is.

        The shard size changes no result (sharded retrieval is exact) but the files'
        layout, as does the block size, so both are part of it.
        """
        return {"engine": self.engine, "k": self.k, "bm25": asdict(self.bm25), "shard_docs": self.shard_docs, "block_size": self.block_size}

    @property
    def engine_settings(self) -> EngineSettings:
        """What the engine is made with (the registry takes these alone): BM25, threads, the cluster, the documents' key."""
        return EngineSettings(self.bm25, self.threads, self.es_url, self.docs_key)

    @property
    def kind(self) -> EngineKind:
        """The engine's registry entry."""
        return engine_kind(self.engine)

    def plan(self, lang: str, docs: int) -> LanguagePlan:
        """How ``lang`` is cut: an engine that shards itself (Elasticsearch) not at all, one whose index is local (embedded) by ``shard_docs``."""
        shards = 1 if self.kind.shards_itself else max(1, -(-docs // self.shard_docs))
        return LanguagePlan(lang, docs, shards, self.block_size)


def check_engine(settings: RetrievalSettings, langs: Sequence[str] = ()) -> None:
    """Fail before any work starts when the engine cannot run: unknown, or a cluster that does not answer."""
    if settings.engine not in ENGINES:
        raise ConfigError(f"unknown engine {settings.engine!r}; choose from {', '.join(ENGINES)}")
    settings.kind.check(settings.engine_settings, langs)


def make_engine(settings: RetrievalSettings, lang: str) -> Engine:
    """A fresh engine for one language (or shard), made by its registry entry."""
    return settings.kind.make(settings.engine_settings, lang)


def plan_units(plans: Sequence[LanguagePlan], settings: RetrievalSettings) -> list[Unit]:
    """Every unit of the stage, for every language (the largest languages first, to spread them)."""
    units: list[Unit] = []
    for plan in sorted(plans, key=lambda p: (-p.docs, p.lang)):
        lang = plan.lang
        if settings.kind.shards_itself:  # one unit indexes the language on the cluster, then one a block searches it
            units.append(Unit(PREPARE, f"index.{lang}", ShardTask(plan, 0)))
            units += [Unit(SEARCH, f"search.{lang}.{block:05d}", SearchTask(plan, 0, block, block + 1)) for block in range(plan.blocks)]
        elif plan.shards == 1:
            units.append(Unit(SEARCH, f"search.{lang}.00000", SearchTask(plan, 0, 0, plan.blocks)))
        else:
            units += [Unit(PREPARE, count_name(lang, shard), ShardTask(plan, shard)) for shard in range(plan.shards)]
            units += [Unit(SUM, f"sum.{lang}.{part:05d}", PartitionTask(plan, part)) for part in range(plan.shards)]
            groups = plan.block_groups(settings.search_unit_queries)
            units += [
                Unit(SEARCH, search_name(lang, shard, group), SearchTask(plan, shard, first, end))
                for shard in range(plan.shards)
                for group, (first, end) in enumerate(groups)
            ]
            units += [Unit(MERGE, f"merge.{lang}.{block:05d}", BlockTask(plan, block)) for block in range(plan.blocks)]
    return units


def count_name(lang: str, shard: int) -> str:
    return f"count.{lang}.{shard:05d}"


def search_name(lang: str, shard: int, group: int) -> str:
    return f"search.{lang}.{shard:05d}.{group:05d}"


def hits_table(query_start: int, hits: Sequence[Hits], doc_offset: int = 0) -> pa.Table:
    """Rows (query, doc, score) of queries numbered from ``query_start``, in rank order; docs shifted by ``doc_offset``."""
    counts = np.array([len(h.positions) for h in hits], dtype=np.int64)
    query = np.repeat(np.arange(query_start, query_start + len(hits), dtype=np.int32), counts)
    doc = np.concatenate([np.asarray(h.positions, dtype=np.int32) for h in hits]) + np.int32(doc_offset) if hits else np.zeros(0, np.int32)
    score = np.concatenate([np.asarray(h.scores, dtype=np.float32) for h in hits]) if hits else np.zeros(0, np.float32)
    return pa.table([pa.array(query), pa.array(doc.astype(np.int32)), pa.array(score)], schema=RETRIEVAL)


def flat_hits_table(query_start: int, hits: FlatHits, doc_offset: int = 0) -> pa.Table:
    """``hits_table`` of results already flat (``EmbeddedEngine.search_flat``): the same table, column by column."""
    query = np.repeat(np.arange(query_start, query_start + len(hits.lengths), dtype=np.int32), hits.lengths)
    doc = np.asarray(hits.positions, dtype=np.int32)
    if doc_offset:
        doc = doc + np.int32(doc_offset)
    return pa.table([pa.array(query), pa.array(doc), pa.array(np.asarray(hits.scores, dtype=np.float32))], schema=RETRIEVAL)


def _index(work: WorkDirs, settings: RetrievalSettings, plan: LanguagePlan, shard: int) -> Engine:
    """An engine over one shard of the language's documents (the whole language when it has one)."""
    start, end = plan.shard(shard)
    engine = make_engine(settings, plan.lang)
    engine.index(
        (batch.column("doc_id").to_pylist(), batch.column("title").to_pylist(), batch.column("text").to_pylist())
        for batch in iter_docs(work, plan.lang, ["doc_id", "title", "text"], start, end)
    )
    return engine


def term_partitions(terms: Sequence[str], partitions: int) -> np.ndarray:
    """The partition of each term: a stable hash, the same in every process and shard."""
    return np.fromiter((zlib.crc32(term.encode()) % partitions for term in terms), dtype=np.int64, count=len(terms))


def save_index(engine: LocalEngine, folder: str) -> None:
    """Store a shard's index in ``folder`` (the engine writes it: the embedded one, ``embedded.index.save``)."""
    engine.save(folder)


def load_index(folder: str, settings: RetrievalSettings, lang: str) -> LocalEngine:
    """The engine over the index ``save_index`` stored, ready to search."""
    return settings.kind.load(folder, settings.engine_settings, lang)


def count_shard_terms(work_root: str, settings: RetrievalSettings, plan: LanguagePlan, shard: int) -> TermCountReport:
    """Step 1, one shard: index it (and store the index for step 3), its terms' document frequencies by partition, its field statistics."""
    work = WorkDirs(work_root)
    started = time.perf_counter()
    engine = _index(work, settings, plan, shard)
    save_index(engine, work.shard_index_dir(plan.lang, shard))
    terms = engine.terms()
    df_title, df_text = engine.local_document_frequencies()
    partition = term_partitions(terms, plan.shards)
    names = pa.array(terms, pa.string())
    for part in range(plan.shards):
        mask = partition == part
        table = pa.table([names.filter(pa.array(mask)), pa.array(df_title[mask]), pa.array(df_text[mask])], schema=TERM_COUNTS)
        write_table(work.shard_terms_file(plan.lang, part, shard), table, TERM_COUNTS)
    statistics = engine.local_statistics()
    LOG.info("%s: shard %d/%d counted (%s terms)", plan.lang, shard + 1, plan.shards, f"{len(terms):,}")
    return TermCountReport(lang=plan.lang, shard=shard, terms=len(terms), statistics=asdict(statistics), seconds=round(time.perf_counter() - started, 3))


def sum_term_counts(work_root: str, settings: RetrievalSettings, plan: LanguagePlan, part: int) -> TermSumReport:
    """Step 2, one partition of the terms: each term's document frequencies over the whole language."""
    work = WorkDirs(work_root)
    counts = read_table([work.shard_terms_file(plan.lang, part, shard) for shard in range(plan.shards)], TERM_COUNTS)
    summed = counts.group_by("term", use_threads=False).aggregate([("df_title", "sum"), ("df_text", "sum")])
    table = pa.table([summed.column("term"), summed.column("df_title_sum"), summed.column("df_text_sum")], schema=TERM_COUNTS).sort_by("term")
    write_table(work.term_counts_file(plan.lang, part), table, TERM_COUNTS)
    return TermSumReport(lang=plan.lang, partition=part, terms=table.num_rows)


def language_statistics(work: WorkDirs, plan: LanguagePlan) -> CollectionStatistics:
    """The language's field statistics: the sum of its shards' (from the count step's reports)."""
    total = None
    for shard in range(plan.shards):
        found = read_report(work.stage(Folders.retrieval), count_name(plan.lang, shard))["statistics"]
        shard_statistics = CollectionStatistics(FieldStatistics(**found["title"]), FieldStatistics(**found["text"]))
        total = shard_statistics if total is None else total + shard_statistics
    return total


def language_document_frequencies(work: WorkDirs, plan: LanguagePlan, terms: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """The language's (title, text) document frequencies of ``terms`` (a shard's vocabulary, by term id)."""
    df_title = np.zeros(len(terms), dtype=np.int64)
    df_text = np.zeros(len(terms), dtype=np.int64)
    partition = term_partitions(terms, plan.shards)
    names = pa.array(terms, pa.string())
    for part in range(plan.shards):
        ids = np.flatnonzero(partition == part)
        counts = read_table([work.term_counts_file(plan.lang, part)], TERM_COUNTS)
        where = pc.index_in(names.take(pa.array(ids)), value_set=counts.column("term"))
        if where.null_count:
            raise RuntimeError(f"{plan.lang}: {where.null_count} terms of a shard have no language-wide count in partition {part}")
        rows = where.to_numpy(zero_copy_only=False)
        df_title[ids] = counts.column("df_title").to_numpy()[rows]
        df_text[ids] = counts.column("df_text").to_numpy()[rows]
    return df_title, df_text


def _query_batches(work: WorkDirs, plan: LanguagePlan, block: int) -> Iterator[tuple[int, list[str]]]:
    """(first position, titles) of the block's queries, ``QUERY_BATCH`` at a time."""
    start, end = plan.block(block)
    first = start
    for batch in iter_catalog(work, plan.lang, ["title"], start, end, QUERY_BATCH):
        titles = batch.column("title").to_pylist()
        yield first, titles
        first += len(titles)


def search(work_root: str, settings: RetrievalSettings, plan: LanguagePlan, part: int, first_block: int, end_block: int) -> SearchReport | BlockHitsReport:
    """Step 3: search blocks ``[first_block, end_block)`` of the language's queries in one shard (embedded), or a block on the cluster."""
    if settings.kind.shards_itself:
        return _search_block_on_cluster(work_root, settings, plan, first_block)
    work = WorkDirs(work_root)
    started, started_cpu = time.perf_counter(), time.process_time()
    if plan.shards == 1:
        engine = _index(work, settings, plan, part)
    else:  # step 1 indexed the shard: load it, and score it with the language's statistics
        engine = load_index(work.shard_index_dir(plan.lang, part), settings, plan.lang)
        engine.use_statistics(language_statistics(work, plan), *language_document_frequencies(work, plan, engine.terms()))
    engine.search_flat(["warm up"], settings.k)  # numba loads its kernels once: not part of the search rate
    indexed, indexed_cpu = time.perf_counter(), time.process_time()
    offset = plan.shard(part)[0]
    queries, hits, no_hits = search_blocks(work, settings, plan, part, engine, range(first_block, end_block))
    searched, searched_cpu = time.perf_counter(), time.process_time()
    return SearchReport(
        lang=plan.lang, shard=part, blocks=[first_block, end_block], docs=plan.shard(part)[1] - offset, queries=queries, hits=hits,
        index_seconds=round(indexed - started, 3), search_seconds=round(searched - indexed, 3),
        index_cpu_seconds=round(indexed_cpu - started_cpu, 3), search_cpu_seconds=round(searched_cpu - indexed_cpu, 3),
        queries_without_hits=no_hits if plan.shards == 1 else None,
    )  # fmt: skip


def search_blocks(work: WorkDirs, settings: RetrievalSettings, plan: LanguagePlan, part: int, engine: Engine, blocks: Iterable[int]) -> tuple[int, int, int]:
    """The search step's work once its shard's engine is ready (or the cluster's index): each block's titles searched and their hits written.

    Titles are read ``QUERY_BATCH`` at a time (each batch one row group of the hits
    file), analysed together and searched in one call, and the hits go from the
    kernel's arrays into the Arrow table without an object a query
    (``EmbeddedEngine.search_flat``). Returns (queries, hits, queries without hits).
    """
    offset = plan.shard(part)[0]
    queries = hits = no_hits = 0
    for block in blocks:
        path = work.retrieval_file(plan.lang, block) if plan.shards == 1 else work.shard_hits_file(plan.lang, block, part)
        with ParquetSink(path, RETRIEVAL) as sink:
            for first, titles in _query_batches(work, plan, block):
                found = engine.search_flat(titles, settings.k)
                sink.add_table(flat_hits_table(first, found, offset))
                queries += len(titles)
                no_hits += int(np.count_nonzero(found.lengths == 0))
            hits += sink.rows
        LOG.info("%s: shard %d/%d, block %d/%d searched", plan.lang, part + 1, plan.shards, block + 1, plan.blocks)
    return queries, hits, no_hits


class _SortedByQuery:
    """A shard's hits file read in query order, a row group at a time: the rows of the next queries on demand."""

    def __init__(self, path: str) -> None:
        self._handle = fileio.open_raw(path)
        self._file = pq.ParquetFile(self._handle)
        self._group = 0
        self._rest = RETRIEVAL.empty_table()

    def until(self, end: int) -> pa.Table:
        """The rows of queries below ``end`` not yet returned."""
        while self._group < self._file.num_row_groups and (self._rest.num_rows == 0 or self._rest.column("query")[-1].as_py() < end):
            self._rest = pa.concat_tables([self._rest, self._file.read_row_group(self._group).cast(RETRIEVAL)])
            self._group += 1
        query = self._rest.column("query").to_numpy()
        cut = int(np.searchsorted(query, end, side="left"))
        taken, self._rest = self._rest.slice(0, cut), self._rest.slice(cut)
        return taken

    def close(self) -> None:
        self._handle.close()


@numba.njit(cache=True)
def _merge_runs(query, doc, score, segments, k, out_query, out_doc, out_score):
    """Each query's best ``k`` of the shards' runs (``segments``: each shard's rows, by query then rank)."""
    shards = segments.shape[0] - 1
    position = segments[:-1].copy()
    run_end = np.empty(shards, np.int64)
    written = 0
    while True:
        current = -1  # the next query: the smallest at the head of any shard
        for s in range(shards):
            if position[s] < segments[s + 1] and (current == -1 or query[position[s]] < current):
                current = query[position[s]]
        if current == -1:
            return written
        for s in range(shards):
            end = position[s]
            while end < segments[s + 1] and query[end] == current:
                end += 1
            run_end[s] = end
        for _ in range(k):
            best, owner = -1, -1
            for s in range(shards):
                if position[s] < run_end[s]:
                    row = position[s]
                    if best == -1 or score[row] > score[best] or (score[row] == score[best] and doc[row] < doc[best]):
                        best, owner = row, s
            if best == -1:
                break
            out_query[written] = current
            out_doc[written] = doc[best]
            out_score[written] = score[best]
            written += 1
            position[owner] += 1
        for s in range(shards):
            position[s] = run_end[s]


def merge_hits(tables: Sequence[pa.Table], k: int) -> pa.Table:
    """Each query's best ``k`` of several shards' hits (each by query, then rank): by score, then position.

    Score descending and then position is the tie order of one index; each shard's
    list is already in it, so this is a merge of sorted runs, not a sort.
    """
    columns = [np.concatenate([t.column(name).to_numpy() for t in tables]) if tables else np.zeros(0) for name in ("query", "doc", "score")]
    query, doc, score = columns[0].astype(np.int32), columns[1].astype(np.int32), columns[2].astype(np.float32)
    segments = np.r_[0, np.cumsum([t.num_rows for t in tables])].astype(np.int64)
    out = np.empty(len(query), np.int32), np.empty(len(query), np.int32), np.empty(len(query), np.float32)
    written = _merge_runs(query, doc, score, segments, k, *out)
    return pa.table([pa.array(column[:written]) for column in out], schema=RETRIEVAL)


def merge_shard_hits(work_root: str, settings: RetrievalSettings, plan: LanguagePlan, block: int) -> BlockHitsReport:
    """Step 4, one block of queries: the top ``k`` of every shard merged into the language's top ``k``."""
    work = WorkDirs(work_root)
    readers = [_SortedByQuery(work.shard_hits_file(plan.lang, block, shard)) for shard in range(plan.shards)]
    start, end = plan.block(block)
    answered = 0
    try:
        with ParquetSink(work.retrieval_file(plan.lang, block), RETRIEVAL) as sink:
            for low in range(start, end, QUERY_BATCH):
                high = min(end, low + QUERY_BATCH)
                merged = merge_hits([reader.until(high) for reader in readers], settings.k)
                answered += len(np.unique(merged.column("query").to_numpy()))
                sink.add_table(merged)
    finally:
        for reader in readers:
            reader.close()
    return BlockHitsReport(lang=plan.lang, block=block, queries=end - start, queries_without_hits=end - start - answered, hits=sink.rows)


def prepare(work_root: str, settings: RetrievalSettings, plan: LanguagePlan, part: int) -> TermCountReport | ClusterIndexReport:
    """Step 1: count a shard's terms (embedded), or index the language on the cluster (Elasticsearch)."""
    if settings.kind.shards_itself:
        return _index_language_on_cluster(work_root, settings, plan)
    return count_shard_terms(work_root, settings, plan, part)


def _index_language_on_cluster(work_root: str, settings: RetrievalSettings, plan: LanguagePlan) -> ClusterIndexReport:
    started = time.perf_counter()
    engine = _index(WorkDirs(work_root), settings, plan, 0)
    return ClusterIndexReport(lang=plan.lang, docs=engine.docs, reused=engine.reused, index_seconds=round(time.perf_counter() - started, 3))


def _search_block_on_cluster(work_root: str, settings: RetrievalSettings, plan: LanguagePlan, block: int) -> BlockHitsReport:
    work = WorkDirs(work_root)
    engine = make_engine(settings, plan.lang)  # the prepare step indexed the language
    started = time.perf_counter()
    queries, hits, no_hits = search_blocks(work, settings, plan, 0, engine, [block])
    return BlockHitsReport(lang=plan.lang, block=block, queries=queries, queries_without_hits=no_hits, hits=hits, search_seconds=round(time.perf_counter() - started, 3))


def run_unit(work_root: str, settings: RetrievalSettings, unit: Unit) -> Report:
    """A unit of the stage, routed by the type of its task to its step's function."""
    match unit.task:
        case ShardTask(plan, shard):
            return prepare(work_root, settings, plan, shard)
        case PartitionTask(plan, partition):
            return sum_term_counts(work_root, settings, plan, partition)
        case SearchTask(plan, shard, first_block, end_block):
            return search(work_root, settings, plan, shard, first_block, end_block)
        case BlockTask(plan, block):
            return merge_shard_hits(work_root, settings, plan, block)
    raise TypeError(f"retrieval has no step for {unit.task!r}")


def summarise(plans: Sequence[LanguagePlan], reports: dict[str, Report], settings: RetrievalSettings) -> dict[str, RetrievalLanguage]:
    """Per language: documents, queries, queries without hits, hits, and the seconds spent (summed over units)."""
    languages = {}
    for plan in sorted(plans, key=lambda p: p.lang):
        mine = [report for report in reports.values() if report.lang == plan.lang]
        final = [r for r in mine if isinstance(r, (SearchReport, BlockHitsReport)) and r.final]
        searched = [r for r in mine if isinstance(r, SearchReport) or (isinstance(r, BlockHitsReport) and r.search_seconds is not None)]
        index_seconds = sum(r.index_seconds for r in mine if isinstance(r, (SearchReport, ClusterIndexReport)))
        search_seconds = sum(r.search_seconds for r in searched)
        queries = sum(r.queries for r in final)
        languages[plan.lang] = RetrievalLanguage(
            lang=plan.lang,
            docs=plan.docs,
            shards=plan.shards,
            blocks=plan.blocks,
            plan=plan,
            queries=queries,
            queries_without_hits=sum(r.queries_without_hits for r in final),
            hits=sum(r.hits for r in final),
            index_seconds=round(index_seconds, 3),
            search_seconds=round(search_seconds, 3),
            # Per core: every shard searches every query, so this is the language's queries over all shards' search time.
            queries_per_second=round(queries / search_seconds, 1) if search_seconds > 0 else None,
        )
    return languages
