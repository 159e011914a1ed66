"""The embedded BM25 engine's facade (``EmbeddedEngine``): index, analyse queries in bulk, search on threads with the kernels.

A query is analysed like the documents, a batch at a time (``query_arrays``: one
lowercasing and tokenizing pass over the batch's texts, each distinct token's term id
looked up once and cached by the token), into flat arrays of term ids and counts
(``QueryBatch``) that the kernels take whole; its results come back as flat arrays too
(``search_flat``, which the retrieve stage writes as columns; ``search`` cuts them
into one ``Hits`` a query). Each query goes to one of two kernels with the same
results (``search_kernels``): few postings to ``merged``, the others to the pruned
``maxscore``; ``search(..., exhaustive=True)`` runs the oracle (``exhaustive``).

The collection statistics (documents and tokens per field, and each term's document
frequency per field) are the index's own unless ``use_statistics`` gives those of a
larger collection: an engine over one shard of a language then scores every document
exactly as an engine over the whole language would. Queries run on ``threads`` Python
threads; the kernels release the GIL.
"""

from __future__ import annotations

import itertools
import math
import queue
from collections import defaultdict
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from clirmatrix.pipeline.engines import lucene_bm25
from clirmatrix.pipeline.engines.analyzers import Analyzer
from clirmatrix.pipeline.engines.base import Bm25Settings, CollectionStatistics, DocBatch, FlatHits, Hits
from clirmatrix.pipeline.engines.embedded import index as stored
from clirmatrix.pipeline.engines.embedded.exhaustive import Accumulators, _search_exhaustive
from clirmatrix.pipeline.engines.embedded.heap import Results, rank_rows
from clirmatrix.pipeline.engines.embedded.index import FIELDS, KernelIndex, Postings, _FieldBuilder
from clirmatrix.pipeline.engines.embedded.maxscore import _search_pruned
from clirmatrix.pipeline.engines.embedded.merged import _search_merged, choose_merged
from clirmatrix.pipeline.engines.embedded.scoring import QueryBatch

_MIN_QUERIES_PER_TASK = 64
_QUERIES_PER_CALL = 10_000  # bounds the (queries x k) result buffers; the retrieve stage's batch (retrieval.QUERY_BATCH) in one call
_ANALYZE_DOCS = 2_000  # documents whose tokens are held as strings at once while indexing
_TOKEN_CACHE = 1 << 18  # distinct query tokens whose term ids an engine keeps (~30 MB), then starts afresh
_INDEX_TOKEN_CACHE = 1 << 20  # distinct raw tokens whose term ids indexing keeps (~150 MB at most), then starts afresh
_BOUNDARY, _NO_TERM = -2, -1  # a query's end, and a token with no term of the index, in ``query_arrays``


def search_kernels(q_ptr, q_terms, q_counts, merged, lo: int, hi: int, k: int, index: KernelIndex, out_pos, out_scores, out_len) -> None:
    """Queries ``lo:hi`` into the result rows, best first: those ``merged`` by ``_search_merged``, the others by the pruned kernel."""
    queries, out = QueryBatch(q_ptr, q_terms, q_counts), Results(out_pos, out_scores, out_len)
    _search_merged(queries, merged, lo, hi, k, index, out)
    _search_pruned(queries, merged, lo, hi, k, index, out)
    rank_rows(out, lo, hi)


class EmbeddedEngine:
    """BM25 over ``title`` and ``text`` in memory; see the module docstring.

    Args:
        analyzer: the language's analyzer, applied to both fields and to queries.
        settings: k1, b, the title boost and the field combination.
        threads: threads that answer a batch of queries.
    """

    reused = False  # the index is built anew by every engine (see ``load`` for one stored)

    @classmethod
    def load(cls, folder: str, analyzer: Analyzer, settings: Bm25Settings = Bm25Settings(), threads: int = 1) -> EmbeddedEngine:
        """An engine over the index ``save`` stored in ``folder`` (without the documents' ids), ready to search."""
        arrays, terms = stored.load(folder)
        return cls.from_arrays(analyzer, settings, arrays, terms, threads)

    def __init__(self, analyzer: Analyzer, settings: Bm25Settings = Bm25Settings(), threads: int = 1) -> None:
        if threads < 1:
            raise ValueError(f"threads must be at least 1, not {threads}")
        self.analyzer = analyzer
        self.settings = settings
        self.threads = threads
        self.doc_ids: list[str] = []
        self.vocab: dict[str, int] = {}
        self.postings: Postings | None = None
        self._statistics: CollectionStatistics | None = None  # what scores use: the index's own or a collection's
        self._dfs: np.ndarray | None = None  # int64 [2, terms]: (title, text) document frequencies by term id
        self._scratch: queue.SimpleQueue = queue.SimpleQueue()
        self._token_ids: dict[str, int] = {}  # query token -> term id (or _NO_TERM): see ``query_arrays``

    def index(self, batches: Iterable[DocBatch]) -> None:
        """Index ``(doc_ids, titles, texts)`` batches in document order; once per engine."""
        if self.postings is not None:
            raise RuntimeError("this engine already holds an index; make a new engine")
        builders = (_FieldBuilder(), _FieldBuilder())
        vocab: defaultdict[str, int] = defaultdict(itertools.count().__next__)
        cache: dict[str, int] = {}  # raw token -> term id (or _NO_TERM): see ``_analyse_ids``
        for doc_ids, titles, texts in batches:
            if not len(doc_ids) == len(titles) == len(texts):
                raise ValueError(f"a batch has {len(doc_ids)} ids, {len(titles)} titles and {len(texts)} texts")
            self.doc_ids.extend(doc_ids)
            for start in range(0, len(doc_ids), _ANALYZE_DOCS):
                for builder, values in zip(builders, (titles, texts)):
                    builder.add_ids(*self._analyse_ids([value or "" for value in values[start : start + _ANALYZE_DOCS]], vocab, cache))
        vocab.default_factory = None  # a plain mapping from here on
        self.vocab = vocab
        counts = np.array([[b.doc_count, b.sum_total_term_freq] for b in builders], dtype=np.int64)
        norms = np.stack([b.finish_norms() for b in builders])
        self.postings = Postings.pack([b.finish(len(vocab)) for b in builders], norms, counts)
        self._statistics, self._dfs = self.local_statistics(), self._local_dfs()

    def _analyse_ids(self, texts: Sequence[str], vocab: defaultdict[str, int], cache: dict[str, int]) -> tuple[np.ndarray, np.ndarray]:
        """The term ids of the texts' tokens (flat) and each text's token count: ``self.analyzer``'s tokens, numbered by ``vocab``.

        In bulk, as ``query_arrays`` does for queries: one lowercasing and tokenizing
        pass over the texts, then each distinct raw token's filters and stem once, its
        term id kept in ``cache`` (keyed by the token, emptied past ``_INDEX_TOKEN_CACHE``).
        New tokens are numbered in the order they first occur, so ``vocab`` numbers
        terms as analysing one text after another would (tests/test_engine.py).
        """
        tokens, separator = self.analyzer.raw_tokens_many(texts)
        if len(cache) > _INDEX_TOKEN_CACHE:
            cache.clear()
        cache[separator] = _BOUNDARY  # no token equals a separator (it is no word character)
        missing = [token for token in dict.fromkeys(tokens) if token not in cache]
        if missing:
            cache.update(zip(missing, [_NO_TERM if stem is None else vocab[stem] for stem in self.analyzer.normalize_tokens(missing)]))
        ids = np.fromiter(map(cache.__getitem__, tokens), dtype=np.int64, count=len(tokens))
        boundary, kept = ids == _BOUNDARY, ids >= 0
        text_of = np.cumsum(boundary) - boundary  # each token's text: the boundaries before it
        return ids[kept], np.bincount(text_of[kept], minlength=len(texts)).astype(np.int64)

    @property
    def size(self) -> int:
        """Documents in the index."""
        return self.postings.norms.shape[1] if self.postings is not None else len(self.doc_ids)

    @property
    def docs(self) -> int:
        """Documents in the index (``size``), as every engine counts them."""
        return self.size

    def save(self, folder: str) -> None:
        """Store the index in ``folder`` (``index.save``: its arrays and terms), for ``load`` elsewhere."""
        self._require_index()
        stored.save(self.postings, self.terms(), folder)

    def arrays(self) -> dict[str, np.ndarray]:
        """The index as plain arrays (with ``terms``, all ``from_arrays`` needs): to store it and load it elsewhere."""
        self._require_index()
        return {part: getattr(self.postings, part) for part in Postings.PARTS}

    @classmethod
    def from_arrays(cls, analyzer: Analyzer, settings: Bm25Settings, arrays: dict[str, np.ndarray], terms: Sequence[str], threads: int = 1) -> EmbeddedEngine:
        """An engine over an index stored with ``arrays`` and ``terms`` (without the documents' ids)."""
        engine = cls(analyzer, settings, threads)
        engine.vocab = {term: term_id for term_id, term in enumerate(terms)}
        engine.postings = Postings(*(arrays[part] for part in Postings.PARTS))
        engine._statistics, engine._dfs = engine.local_statistics(), engine._local_dfs()
        return engine

    def terms(self) -> list[str]:
        """The index's terms by term id."""
        ordered = [""] * len(self.vocab)
        for term, term_id in self.vocab.items():
            ordered[term_id] = term
        return ordered

    def local_statistics(self) -> CollectionStatistics:
        """This index's own per-field statistics."""
        self._require_index()
        return CollectionStatistics(self.postings.statistics(0), self.postings.statistics(1))

    def local_document_frequencies(self) -> tuple[np.ndarray, np.ndarray]:
        """(title, text) document frequencies of this index's terms, by term id."""
        self._require_index()
        return self.postings.document_frequencies(0), self.postings.document_frequencies(1)

    def _local_dfs(self) -> np.ndarray:
        return np.ascontiguousarray(np.diff(self.postings.indptr, axis=1))

    def use_statistics(self, statistics: CollectionStatistics, df_title: np.ndarray, df_text: np.ndarray) -> None:
        """Score with a larger collection's statistics: its per-field counts and, by this index's term id, its document frequencies."""
        self._require_index()
        local = self.local_document_frequencies()
        for f, (name, given) in enumerate(zip(FIELDS, (df_title, df_text))):
            if given.shape != local[f].shape:
                raise ValueError(f"{name} document frequencies: {given.shape[0]} given for {local[f].shape[0]} terms")
            if (given < local[f]).any():
                raise ValueError(f"{name} document frequencies smaller than this index's own: not statistics of a collection holding it")
        for f, (name, given) in enumerate(zip(FIELDS, (statistics.title, statistics.text))):
            own = self.postings.statistics(f)
            if given.doc_count < own.doc_count or given.sum_total_term_freq < own.sum_total_term_freq:
                raise ValueError(f"{name} statistics {given} are smaller than this index's own")
        self._statistics = statistics
        self._dfs = np.stack([np.asarray(df_title, dtype=np.int64), np.asarray(df_text, dtype=np.int64)])

    def _require_index(self) -> None:
        if self.postings is None:
            raise RuntimeError("index documents first")

    def memory(self) -> dict[str, int]:
        """Posting counts and bytes: the packed postings with their block table, and all the index holds while searching."""
        p = self.postings
        if p is None:
            return {"postings": 0, "posting_bytes": 0, "index_bytes": 0}
        return {
            "postings": p.postings,
            "posting_bytes": p.words.nbytes + p.block_last.nbytes + p.block_start.nbytes + p.doc_bits.nbytes + p.tf_bits.nbytes,
            "index_bytes": p.nbytes() + p.search_nbytes(),
        }

    def query_terms(self, query: str) -> dict[int, int]:
        """Term id -> count for the query's tokens that occur in the index, in first-seen order."""
        counts: dict[int, int] = {}
        get = self.vocab.get
        for token in self.analyzer(query):
            term = get(token)
            if term is not None:
                counts[term] = counts.get(term, 0) + 1
        return counts

    def query_arrays(self, queries: Sequence[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The queries as the kernels take them: CSR ``(q_ptr, q_terms, q_counts)``, each query's terms as ``query_terms`` orders them.

        Analysed in bulk: one lowercasing and tokenizing pass over all the queries
        (``Analyzer.raw_tokens_many``), each distinct token's term id (or none: dropped
        by a filter or not in the index) looked up once and kept in a cache keyed by
        the token, then the ids grouped by query and counted with numpy.
        """
        n = len(queries)
        q_ptr = np.zeros(n + 1, dtype=np.int64)
        tokens, separator = self.analyzer.raw_tokens_many(queries)
        cache = self._token_ids
        if len(cache) > _TOKEN_CACHE:
            cache = self._token_ids = {}  # a fresh one: a thread still reading the old keeps it
        cache[separator] = _BOUNDARY  # no token equals a separator (it is no word character)
        missing = list(set(tokens).difference(cache))
        if missing:
            get = self.vocab.get
            cache.update(zip(missing, [_NO_TERM if stem is None else get(stem, _NO_TERM) for stem in self.analyzer.normalize_tokens(missing)]))
        ids = np.fromiter(map(cache.__getitem__, tokens), dtype=np.int64, count=len(tokens))
        boundary = ids == _BOUNDARY
        owner = np.cumsum(boundary) - boundary  # the query of each token: the boundaries before it
        found = ids >= 0
        terms, owner = ids[found], owner[found]
        width = max(len(self.vocab), 1)
        # One key a (query, term); np.unique counts them, and the first occurrence orders each query's terms.
        keys, first, counts = np.unique(owner * width + terms, return_index=True, return_counts=True)
        order = np.argsort(first, kind="stable")  # tokens come query after query: by query, then first seen
        keys = keys[order]
        np.cumsum(np.bincount(keys // width, minlength=n), out=q_ptr[1:])
        return q_ptr, keys % width, counts[order].astype(np.float32)

    def search(self, queries: Sequence[str], k: int = 100, exhaustive: bool = False) -> list[Hits]:
        """The top ``k`` documents of each query; fewer when fewer match, none for no tokens.

        ``exhaustive`` scores every posting of every query term instead of pruning: the
        same results, slower; the oracle the pruned search is tested against.
        """
        return self.search_flat(queries, k, exhaustive).split()

    def search_flat(self, queries: Sequence[str], k: int = 100, exhaustive: bool = False) -> FlatHits:
        """``search``'s results as flat arrays (``FlatHits``), with no object a query: what a stage writes as columns."""
        parts = [self.search_arrays(*self.query_arrays(queries[start : start + _QUERIES_PER_CALL]), k, exhaustive) for start in range(0, len(queries), _QUERIES_PER_CALL)]
        if len(parts) == 1:
            return parts[0]
        if not parts:
            self._check_search(k)
            return FlatHits(np.zeros(0, np.int32), np.zeros(0, np.int32), np.zeros(0, np.float32))
        return FlatHits(*(np.concatenate(column) for column in zip(*parts)))

    def search_arrays(self, q_ptr: np.ndarray, q_terms: np.ndarray, q_counts: np.ndarray, k: int = 100, exhaustive: bool = False) -> FlatHits:
        """The top ``k`` of queries already analysed (``query_arrays``): the kernel alone, and the results made flat."""
        k = self._check_search(k)
        n = len(q_ptr) - 1
        if k == 0:
            return FlatHits(np.zeros(n, np.int32), np.zeros(0, np.int32), np.zeros(0, np.float32))
        index = self._kernel_index()
        out_pos = np.empty((n, k), dtype=np.int32)
        out_scores = np.empty((n, k), dtype=np.float32)
        out_len = np.zeros(n, dtype=np.int32)

        merged = None if exhaustive else choose_merged(q_ptr, q_terms, index, self.size)

        def run(lo: int, hi: int) -> None:
            if not exhaustive:
                search_kernels(q_ptr, q_terms, q_counts, merged, lo, hi, k, index, out_pos, out_scores, out_len)
                return
            scratch = self._take_scratch()
            try:
                out = Results(out_pos, out_scores, out_len)
                _search_exhaustive(QueryBatch(q_ptr, q_terms, q_counts), lo, hi, k, index, scratch, out)
                rank_rows(out, lo, hi)
            finally:
                self._scratch.put(scratch)

        tasks = min(self.threads * 4, math.ceil(n / _MIN_QUERIES_PER_TASK)) if self.threads > 1 else 1
        if tasks <= 1:
            run(0, n)
        else:
            bounds = np.linspace(0, n, tasks + 1).astype(int)
            with ThreadPoolExecutor(self.threads) as pool:
                for future in [pool.submit(run, lo, hi) for lo, hi in zip(bounds[:-1], bounds[1:])]:
                    future.result()
        kept = np.arange(k, dtype=np.int32) < out_len[:, None]  # row by row: each query's hits, best first
        return FlatHits(out_len, out_pos[kept], out_scores[kept])

    def _check_search(self, k: int) -> int:
        """``k`` as searching uses it (at most the documents), after checking that searching can start."""
        if k < 0:
            raise ValueError(f"k must be non-negative, not {k}")
        if self.postings is None:
            raise RuntimeError("index documents before searching")
        return min(k, self.size)

    def _kernel_index(self) -> KernelIndex:
        """The index's arrays and the scoring constants under the statistics in use, as the kernels take them."""
        p, statistics, s = self.postings, self._statistics, self.settings
        caches = np.stack([
            lucene_bm25.norm_inverse_cache(s.k1, s.b, lucene_bm25.avg_field_length(f.sum_total_term_freq, f.doc_count))
            for f in (statistics.title, statistics.text)
        ])  # fmt: skip
        counts = np.array([statistics.title.doc_count, statistics.text.doc_count], dtype=np.int64)
        boosts = np.array([s.title_boost, 1.0], dtype=np.float32)
        return p.kernel_index(caches, self._dfs, counts, boosts, s.combine == "most_fields")

    def _take_scratch(self) -> Accumulators:
        """Per-document accumulators of the exhaustive kernel, reused across calls."""
        try:
            return self._scratch.get_nowait()
        except queue.Empty:
            return Accumulators.make(self.size)
