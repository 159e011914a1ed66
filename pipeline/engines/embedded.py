"""The embedded BM25 engine: a compact in-memory two-field index scored like Lucene, top-k pruned in numba.

Indexing streams batches: each field's tokens become (term id, tf) postings grouped by
document, with one norm byte per document. ``index`` counting-sorts them into one
posting list per term (documents in index order), then packs every list into blocks
of ``BLOCK`` postings: the gaps between document ids (minus one) and the frequencies
(minus one), each bit-packed at the width of the block's largest value (FOR coding,
as Lucene's postings do), with each block's last document, word offset and two bit
widths beside it. Common terms pack to a few bits a posting, rare ones to about
log2(documents / df); see ``memory``.

A query is analysed like the documents, a batch at a time (``query_arrays``: one
lowercasing and tokenizing pass over the batch's texts, each distinct token's term id
looked up once and cached by the token), into flat arrays of term ids and counts
that the kernel takes whole; its results come back as flat arrays too
(``search_flat``, which the retrieve stage writes as columns; ``search`` cuts them
into one ``Hits`` a query). Elasticsearch's ``match`` query makes one
SHOULD clause per token and Lucene's BooleanQuery rewrite merges repeated clauses into
one whose boost is their count, so each distinct term is one clause per field with
weight = field boost x count x idf: a repeated word adds its score once per
occurrence. A clause scores a posting as Lucene does (``lucene_bm25``), in float32;
each field's clause scores add up in double; the fields combine as Lucene does for the
query Elasticsearch builds (``best_fields``: the larger field score, a
DisjunctionMaxQuery; ``most_fields``: title + text, the unboosted text clauses
flattened into the outer sum). Ties rank in document order, as in Lucene.

Pruning (``search``) is block-max MaxScore, as Lucene 9's ``MaxScoreBulkScorer``: under
the collection statistics in use, each block's largest ``1 + tf * norm_inverse[norm]``
gives its exact largest score for any clause weight (the score is monotonic in it).
Documents are visited in order, window by window; in each window the clauses whose
window maxima together cannot beat the current k-th score are "non-essential" (a clause
whose next document lies past the window counts zero): only documents of the other
clauses are candidates, and a candidate consults the non-essential clauses (largest
first) only while its score can still get in. One essential clause yields its postings
directly; several add their scores term at a time into a window of ``WINDOW`` documents
whose hit bits then list the candidates in order. A window no clause can win is
skipped without decoding; a window's maximum reads at most ``WINDOW_BLOCKS`` blocks of
a list (a list denser than that in the window takes its whole list's maximum), and
cursors skip blocks by galloping, so a common term's list costs a query the blocks it
lands in, not every block. Under ``best_fields`` a field whose clauses left can no
longer beat the k-th score is dropped for the rest of the query: it can no longer
decide any document that ranks. Before the first document, the query's k-th score is known
to reach at least the largest of its clauses' floors (the ``FLOOR_K``-th best score of
each list: those documents score at least that much), so pruning starts at once.
Titles are short, so each document also keeps a 16-bit signature of its title terms
(``Postings.signatures``): a clear bit proves a term absent, so a batch's candidates
are first bounded with only the non-essential title clauses their signatures allow
(without branches), and a title probe whose bit is clear is skipped. Visiting
documents in order, a candidate enters the top k only with a strictly larger score
than the k-th, which is exactly Lucene's tie order, so pruned results equal
``search(..., exhaustive=True)`` (every posting scored, the oracle) hit for hit and bit
for bit: the clause scores are the same float32 values and their double sums are exact
in any order (tested on every analyzer family and on adversarial cases in
tests/test_engine_pruning.py). docs/engine.md gives the argument and the measurements.

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
from dataclasses import dataclass, field

import numba
import numpy as np
from llvmlite import ir
from numba.core import types
from numba.extending import intrinsic

from clirmatrix.pipeline.engines import lucene_bm25
from clirmatrix.pipeline.engines.analyzers import Analyzer
from clirmatrix.pipeline.engines.base import Bm25Settings, CollectionStatistics, DocBatch, FieldStatistics, FlatHits, Hits

BLOCK = 128  # postings per block: the unit of packing, skipping and maximum scores
NO_MORE = np.int32(np.iinfo(np.int32).max)  # a cursor past its last posting
FLOOR_K = 100  # each term keeps the score that this many documents of its list reach: a floor for the k-th hit of any query with it, k <= FLOOR_K
UP = 1.0 + 1e-12  # raises a double sum of upper bounds past any reordering error of the sum it bounds
FIELDS = ("title", "text")  # field 0 and field 1 of every two-row array
# A query with at most this many postings per document of the index (both fields, all its
# terms) decodes them all and sums them (``_search_merged``): on titles whose lists are
# all short, pruning saves less than it costs. Measured on generator titles at 400k
# documents (docs/benchmarks.md, 2026-11-26, fifth session): merged 1.3-1.7x faster up to
# ~7,000 postings (0.0175 a document), slower past ~10,000.
MERGE_DENSITY = 0.0175
_MIN_QUERIES_PER_TASK = 64
_QUERIES_PER_CALL = 10_000  # bounds the (queries x k) result buffers; the retrieve stage's batch (retrieval.QUERY_BATCH) in one call
_ANALYZE_DOCS = 2_000  # documents whose tokens are held as strings at once while indexing
_TOKEN_CACHE = 1 << 18  # distinct query tokens whose term ids an engine keeps (~30 MB), then starts afresh
_INDEX_TOKEN_CACHE = 1 << 20  # distinct raw tokens whose term ids indexing keeps (~150 MB at most), then starts afresh
_BOUNDARY, _NO_TERM = -2, -1  # a query's end, and a token with no term of the index, in ``query_arrays``


def _blocks_per_term(indptr: np.ndarray) -> np.ndarray:
    """Blocks of each term's posting list (the last one may hold fewer than ``BLOCK``)."""
    return (np.diff(indptr, axis=-1) + BLOCK - 1) // BLOCK


@dataclass
class Postings:
    """Both fields' packed postings (see the module docstring); row 0 of two-row arrays is ``title``, row 1 ``text``.

    The fields share one block table: a term's blocks in ``title`` come first, those of
    every term in ``text`` after them, so the kernels reach any block with one index.
    """

    indptr: np.ndarray  # int64 [2, terms + 1]: per field, postings before each term (df is the difference)
    block_last: np.ndarray  # int32 [blocks]: the last document of each block
    block_start: np.ndarray  # uint32 [blocks + 1]: each block's first word in ``words``
    doc_bits: np.ndarray  # uint8 [blocks]: bits of each document gap (gap - 1)
    tf_bits: np.ndarray  # uint8 [blocks]: bits of each frequency (tf - 1)
    words: np.ndarray  # uint32 [block_start[-1] + 2]: the packed blocks, and spare words to read past them
    norms: np.ndarray  # uint8 [2, documents]: Lucene's norm byte of each field's length
    counts: np.ndarray  # int64 [2, 2]: per field, documents with a token in it and its tokens
    block_ptr: np.ndarray = field(init=False)  # int64 [2, terms + 1]: per field, each term's first block
    _maxima: tuple[np.ndarray, ...] | None = field(default=None, init=False, repr=False)  # (caches, block maxima, term maxima, term floors)
    _signatures: np.ndarray | None = field(default=None, init=False, repr=False)

    PARTS = ("indptr", "block_last", "block_start", "doc_bits", "tf_bits", "words", "norms", "counts")

    def __post_init__(self) -> None:
        blocks = _blocks_per_term(self.indptr)
        self.block_ptr = np.zeros(self.indptr.shape, dtype=np.int64)
        np.cumsum(blocks[0], out=self.block_ptr[0, 1:])
        self.block_ptr[1] = self.block_ptr[0, -1]
        self.block_ptr[1, 1:] += np.cumsum(blocks[1])

    @classmethod
    def pack(cls, fields: Sequence[tuple[np.ndarray, np.ndarray, np.ndarray]], norms: np.ndarray, counts: np.ndarray) -> Postings:
        """Pack the two fields' posting lists, each given as CSR ``(indptr, docs, tfs)`` with documents ascending within a term."""
        blocks = sum(int(_blocks_per_term(indptr).sum()) for indptr, _, _ in fields)
        block_last = np.empty(blocks, np.int32)
        block_start = np.empty(blocks + 1, np.int64)
        doc_bits = np.empty(blocks, np.uint8)
        tf_bits = np.empty(blocks, np.uint8)
        block, word = 0, 0
        for indptr, docs, tfs in fields:
            block, word = _layout(indptr, docs, tfs, block, word, block_last, block_start, doc_bits, tf_bits)
        block_start[blocks] = word
        if word >= 2**32:
            raise ValueError(f"{word * 4:,} bytes of postings: more than one index holds (16 GiB); index fewer documents at once")
        block_start = block_start.astype(np.uint32)
        words = np.zeros(word + 2, np.uint32)
        block = 0
        for indptr, docs, tfs in fields:
            block = _pack(indptr, docs, tfs, block, block_start, doc_bits, tf_bits, words)
        return cls(np.stack([indptr for indptr, _, _ in fields]), block_last, block_start, doc_bits, tf_bits, words, norms, counts)

    @property
    def postings(self) -> int:
        return int(self.indptr[:, -1].sum())

    @property
    def blocks(self) -> int:
        return int(self.block_last.shape[0])

    def statistics(self, f: int) -> FieldStatistics:
        return FieldStatistics(int(self.counts[f, 0]), int(self.counts[f, 1]))

    def document_frequencies(self, f: int) -> np.ndarray:
        """Documents with each term in field ``f``, by term id (the posting list lengths)."""
        return np.diff(self.indptr[f])

    def unpack(self, f: int) -> tuple[np.ndarray, np.ndarray]:
        """Field ``f``'s postings as CSR (int32 documents, int64 frequencies) in ``indptr[f]`` order: for checks and references."""
        docs = np.empty(self.indptr[f, -1], np.int32)
        tfs = np.empty(self.indptr[f, -1], np.int64)
        _unpack_all(self.indptr[f], self.block_ptr[f], self.block_last, self.block_start, self.doc_bits, self.tf_bits, self.words, docs, tfs)
        return docs, tfs

    def maxima(self, caches: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per block and per term, the largest ``x = 1 + tf * norm_inverse[norm]`` (``caches`` row of the field), and per term the ``FLOOR_K``-th largest.

        A clause's score ``w - w / x`` grows with ``x``, so the largest gives the
        block's or the posting list's exact largest score for any clause weight, and the
        ``FLOOR_K``-th largest a score that ``FLOOR_K`` documents of the list reach (0 for
        a shorter list). Returns float32 block maxima [blocks], term maxima [2, terms]
        and term floors [2, terms], computed once per set of statistics.
        """
        if self._maxima is None or not np.array_equal(self._maxima[0], caches):
            blocks = np.empty(self.blocks, np.float32)
            terms = np.empty((2, self.indptr.shape[1] - 1), np.float32)
            floors = np.empty((2, self.indptr.shape[1] - 1), np.float32)
            for f in range(2):
                _block_maxima(self.indptr[f], self.block_ptr[f], self.block_last, self.block_start, self.doc_bits, self.tf_bits, self.words, self.norms[f], caches[f], blocks, terms[f], floors[f])
            self._maxima = (caches.copy(), blocks, terms, floors)
        return self._maxima[1], self._maxima[2], self._maxima[3]

    def signatures(self) -> np.ndarray:
        """uint16 [documents]: each document's title terms as bits (``_signature_bit``), computed once from the title lists.

        Several terms share a bit, so a clear bit proves a term absent from a title and a
        set one proves nothing: the kernel skips, without touching the term's list, the
        documents that a clear bit rules out. Sixteen bits, not 64: candidates read the
        array at random, and 64 bits a document (26 MB at 3.2 M documents) fell out of
        the cache and made searching slower than without signatures.
        """
        if self._signatures is None:
            self._signatures = np.zeros(self.norms.shape[1], np.uint16)
            _title_signatures(self.indptr[0], self.block_ptr[0], self.block_last, self.block_start, self.doc_bits, self.tf_bits, self.words, self._signatures)
        return self._signatures

    def nbytes(self) -> int:
        """Bytes of the stored index (packed postings, block table, term offsets, norms)."""
        return sum(getattr(self, part).nbytes for part in self.PARTS)

    def search_nbytes(self) -> int:
        """Bytes searching adds: each term's first block, each block's and term's maximum, each term's floor and each document's title signature."""
        return self.block_ptr.nbytes + 4 * self.blocks + 8 * (self.indptr.size - 2) + 2 * self.norms.shape[1]


class _FieldBuilder:
    """Accumulates one field's postings batch by batch."""

    def __init__(self) -> None:
        self.chunks: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # (terms, tfs, postings per doc)
        self.norms: list[np.ndarray] = []
        self.doc_count = 0
        self.sum_total_term_freq = 0

    def add_ids(self, ids: np.ndarray, lengths: np.ndarray) -> None:
        """A batch of documents given as their term ids, flat, and each document's count of them."""
        n = len(lengths)
        # One key per (document, term); np.unique sorts by document, then term id.
        keys, tfs = np.unique((np.repeat(np.arange(n, dtype=np.int64), lengths) << 32) | ids, return_counts=True)
        per_doc = np.bincount(keys >> 32, minlength=n).astype(np.int32)
        tf_type = np.uint16 if tfs.size == 0 or tfs.max() <= np.iinfo(np.uint16).max else np.uint32
        self.chunks.append(((keys & 0xFFFFFFFF).astype(np.int32), tfs.astype(tf_type), per_doc))
        self.norms.append(lucene_bm25.int_to_byte4(lengths))
        self.doc_count += int(np.count_nonzero(lengths))
        self.sum_total_term_freq += int(lengths.sum())

    def finish(self, n_terms: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The field's postings as CSR ``(indptr, docs, tfs)`` by term id; frees the batches as it goes."""
        df = np.zeros(n_terms, dtype=np.int64)
        for terms, _, _ in self.chunks:
            _count(terms, df)
        indptr = np.zeros(n_terms + 1, dtype=np.int64)
        np.cumsum(df, out=indptr[1:])
        tf_type = np.result_type(np.uint16, *(tfs.dtype for _, tfs, _ in self.chunks))
        docs = np.empty(indptr[-1], dtype=np.int32)
        tfs_out = np.empty(indptr[-1], dtype=tf_type)
        cursor = indptr[:-1].copy()
        first_doc = 0
        while self.chunks:  # pop as we go: each batch is freed once placed
            terms, tfs, per_doc = self.chunks.pop(0)
            _scatter(terms, tfs, per_doc, first_doc, cursor, docs, tfs_out)
            first_doc += per_doc.shape[0]
        return indptr, docs, tfs_out

    def finish_norms(self) -> np.ndarray:
        norms = np.concatenate(self.norms) if self.norms else np.zeros(0, np.uint8)
        self.norms = []
        return norms


@numba.njit(nogil=True, cache=True, error_model="numpy")
def _count(terms, df):
    for t in terms:
        df[t] += 1


@numba.njit(nogil=True, cache=True, error_model="numpy")
def _scatter(terms, tfs, per_doc, first_doc, cursor, out_docs, out_tfs):
    p = 0
    for i in range(per_doc.shape[0]):
        for _ in range(per_doc[i]):
            t = terms[p]
            c = cursor[t]
            out_docs[c] = first_doc + i
            out_tfs[c] = tfs[p]
            cursor[t] = c + 1
            p += 1


# ---- the block codec -------------------------------------------------------------------


@numba.njit(nogil=True, cache=True, error_model="numpy")
def _bit_length(value):
    bits = 0
    while value:
        bits += 1
        value >>= 1
    return bits


@numba.njit(nogil=True, cache=True, error_model="numpy")
def _layout(indptr, docs, tfs, b, word, block_last, block_start, doc_bits, tf_bits):
    """Each block's last document, bit widths and first word, from block ``b`` and word ``word`` on; returns where they end."""
    for t in range(indptr.shape[0] - 1):
        prev = -1
        for s in range(indptr[t], indptr[t + 1], BLOCK):
            e = min(s + BLOCK, indptr[t + 1])
            gaps = 0
            freqs = 0
            for p in range(s, e):
                gaps |= docs[p] - prev - 1
                prev = docs[p]
                freqs |= np.int64(tfs[p]) - 1
            doc_bits[b] = _bit_length(gaps)
            tf_bits[b] = _bit_length(freqs)
            block_last[b] = prev
            block_start[b] = word
            word += ((e - s) * (np.int64(doc_bits[b]) + np.int64(tf_bits[b])) + 31) // 32
            b += 1
    return b, word


@numba.njit(nogil=True, cache=True, inline="always", error_model="numpy")
def _put(words, bit, width, value):
    i = bit >> 5
    shifted = np.uint64(value) << np.uint64(bit & 31)
    words[i] |= np.uint32(shifted & np.uint64(0xFFFFFFFF))
    if (bit & 31) + width > 32:
        words[i + 1] |= np.uint32(shifted >> np.uint64(32))


@numba.njit(nogil=True, cache=True, inline="always", error_model="numpy")
def _get(words, bit, mask):
    # Unsigned: numba then skips its negative-index wraparound (measured 2x on this loop).
    i = np.uint64(bit) >> np.uint64(5)
    pair = (np.uint64(words[i + np.uint64(1)]) << np.uint64(32)) | np.uint64(words[i])
    return np.int64((pair >> (np.uint64(bit) & np.uint64(31))) & mask)


@numba.njit(nogil=True, cache=True, error_model="numpy")
def _pack(indptr, docs, tfs, b, block_start, doc_bits, tf_bits, words):
    for t in range(indptr.shape[0] - 1):
        prev = -1
        for s in range(indptr[t], indptr[t + 1], BLOCK):
            e = min(s + BLOCK, indptr[t + 1])
            bit = np.int64(block_start[b]) * 32
            db = np.int64(doc_bits[b])
            for p in range(s, e):
                if db:
                    _put(words, bit, db, docs[p] - prev - 1)
                    bit += db
                prev = docs[p]
            tb = np.int64(tf_bits[b])
            if tb:
                for p in range(s, e):
                    _put(words, bit, tb, np.int64(tfs[p]) - 1)
                    bit += tb
            b += 1
    return b


@numba.njit(nogil=True, cache=True, inline="always", error_model="numpy")
def _decode(words, start_word, n, db, tb, base, out_docs, out_tfs):
    """Block postings into ``out_docs`` (int32) and ``out_tfs`` (float32 as scores use them, or int64)."""
    bit = np.int64(start_word) * 32
    doc = np.int64(base)
    if db == 0:
        for i in range(n):
            doc += 1
            out_docs[i] = doc
    else:
        mask = (np.uint64(1) << np.uint64(db)) - np.uint64(1)
        for i in range(n):
            doc += _get(words, bit, mask) + 1
            bit += db
            out_docs[i] = doc
    if tb == 0:
        for i in range(n):
            out_tfs[i] = 1
    else:
        mask = (np.uint64(1) << np.uint64(tb)) - np.uint64(1)
        for i in range(n):
            out_tfs[i] = _get(words, bit, mask) + 1
            bit += tb


@numba.njit(nogil=True, cache=True, inline="always", error_model="numpy")
def _decode_block(b, b0, df, block_last, block_start, doc_bits, tf_bits, words, out_docs, out_tfs):
    """Decode block ``b`` of the term whose first block is ``b0``; returns its posting count."""
    n = min(BLOCK, df - (b - b0) * BLOCK)
    base = block_last[b - 1] if b > b0 else -1
    _decode(words, block_start[b], n, np.int64(doc_bits[b]), np.int64(tf_bits[b]), base, out_docs, out_tfs)
    return n


@numba.njit(nogil=True, cache=True, error_model="numpy")
def _unpack_all(indptr, block_ptr, block_last, block_start, doc_bits, tf_bits, words, docs, tfs):
    for t in range(indptr.shape[0] - 1):
        df = indptr[t + 1] - indptr[t]
        p = indptr[t]
        for b in range(block_ptr[t], block_ptr[t + 1]):
            n = _decode_block(b, block_ptr[t], df, block_last, block_start, doc_bits, tf_bits, words, docs[p:], tfs[p:])
            p += n


@numba.njit(nogil=True, cache=True, error_model="numpy")
def _block_maxima(indptr, block_ptr, block_last, block_start, doc_bits, tf_bits, words, norms, norm_inverse, out, out_terms, out_floors):
    buf_docs = np.empty(BLOCK, np.int32)
    buf_tfs = np.empty(BLOCK, np.float32)
    values = np.empty(np.max(np.diff(indptr)) if indptr.shape[0] > 1 else 0, np.float32)  # one list's values, for its floor
    one = np.float32(1.0)
    for t in range(indptr.shape[0] - 1):
        df = indptr[t + 1] - indptr[t]
        term_best = np.float32(0.0)
        p = 0
        for b in range(block_ptr[t], block_ptr[t + 1]):
            n = _decode_block(b, block_ptr[t], df, block_last, block_start, doc_bits, tf_bits, words, buf_docs, buf_tfs)
            best = np.float32(0.0)
            for i in range(n):
                x = one + buf_tfs[i] * norm_inverse[norms[buf_docs[i]]]
                best = max(best, x)
                values[p + i] = x
            p += n
            out[b] = best
            term_best = max(term_best, best)
        out_terms[t] = term_best
        out_floors[t] = np.partition(values[:df], df - FLOOR_K)[df - FLOOR_K] if df >= FLOOR_K else 0.0


@numba.njit(nogil=True, cache=True, inline="always", error_model="numpy")
def _signature_bit(term):
    """The one bit of 16 that stands for ``term`` in title signatures (Fibonacci hashing: the top 4 bits of term x 2^64 / phi)."""
    return np.uint64(1) << ((np.uint64(term) * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(60))


@numba.njit(nogil=True, cache=True, error_model="numpy")
def _title_signatures(indptr, block_ptr, block_last, block_start, doc_bits, tf_bits, words, out):
    buf_docs = np.empty(BLOCK, np.int32)
    buf_tfs = np.empty(BLOCK, np.int64)
    for t in range(indptr.shape[0] - 1):
        bit = _signature_bit(t)
        for b in range(block_ptr[t], block_ptr[t + 1]):
            n = _decode_block(b, block_ptr[t], indptr[t + 1] - indptr[t], block_last, block_start, doc_bits, tf_bits, words, buf_docs, buf_tfs)
            for i in range(n):
                out[buf_docs[i]] |= bit


class EmbeddedEngine:
    """BM25 over ``title`` and ``text`` in memory; see the module docstring.

    Args:
        analyzer: the language's analyzer, applied to both fields and to queries.
        settings: k1, b, the title boost and the field combination.
        threads: threads that answer a batch of queries.
    """

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
                _search_exhaustive(q_ptr, q_terms, q_counts, lo, hi, k, *index, *scratch, out_pos, out_scores, out_len)
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

    def _kernel_index(self) -> tuple:
        """The index's arrays and the scoring constants under the statistics in use, as the kernels take them."""
        p, statistics, s = self.postings, self._statistics, self.settings
        caches = np.stack([
            lucene_bm25.norm_inverse_cache(s.k1, s.b, lucene_bm25.avg_field_length(f.sum_total_term_freq, f.doc_count))
            for f in (statistics.title, statistics.text)
        ])  # fmt: skip
        counts = np.array([statistics.title.doc_count, statistics.text.doc_count], dtype=np.int64)
        boosts = np.array([s.title_boost, 1.0], dtype=np.float32)
        arrays = (p.indptr, p.block_ptr, p.block_last, p.block_start, p.doc_bits, p.tf_bits, p.words, p.norms)
        return (*arrays, caches, *p.maxima(caches), self._dfs, counts, boosts, p.signatures(), s.combine == "most_fields")

    def _take_scratch(self) -> tuple[np.ndarray, ...]:
        """Per-document accumulators of the exhaustive kernel, reused across calls."""
        try:
            return self._scratch.get_nowait()
        except queue.Empty:
            n = self.size
            return (np.zeros(n), np.zeros(n), np.zeros(n, np.bool_), np.empty(n, np.int32))


def choose_merged(q_ptr: np.ndarray, q_terms: np.ndarray, index: tuple, size: int) -> np.ndarray:
    """Per query, whether ``search_kernels`` decodes all its postings (few: ``MERGE_DENSITY``) rather than pruning."""
    return _choose_merged(q_ptr, q_terms, index[0], MERGE_DENSITY * size)


def search_kernels(q_ptr, q_terms, q_counts, merged, lo: int, hi: int, k: int, index: tuple, out_pos, out_scores, out_len) -> None:
    """Queries ``lo:hi`` into the result rows: those ``merged`` by ``_search_merged``, the others by the pruned kernel."""
    _search_merged(q_ptr, q_terms, q_counts, merged, lo, hi, k, *index, out_pos, out_scores, out_len)
    _search_pruned(q_ptr, q_terms, q_counts, merged, lo, hi, k, *index, out_pos, out_scores, out_len)


# ---- ranking ---------------------------------------------------------------------------


@numba.njit(nogil=True, cache=True, error_model="numpy")
def _worse(score_a, doc_a, score_b, doc_b):
    """Whether hit a ranks below hit b: lower score, or equal score and later document."""
    return score_a < score_b or (score_a == score_b and doc_a > doc_b)


@numba.njit(nogil=True, cache=True, error_model="numpy")
def _sift_down(heap_s, heap_d, size, i):
    # A min-heap on rank: the root is the worst hit kept.
    while True:
        child = 2 * i + 1
        if child >= size:
            return
        if child + 1 < size and _worse(heap_s[child + 1], heap_d[child + 1], heap_s[child], heap_d[child]):
            child += 1
        if not _worse(heap_s[child], heap_d[child], heap_s[i], heap_d[i]):
            return
        heap_s[i], heap_s[child] = heap_s[child], heap_s[i]
        heap_d[i], heap_d[child] = heap_d[child], heap_d[i]
        i = child


@numba.njit(nogil=True, cache=True, inline="always", error_model="numpy")
def _offer(heap_s, heap_d, size, k, score, d):
    """Keep hit (score, d) if it ranks among the best ``k``; returns the new heap size."""
    if size < k:
        c = size
        heap_s[c] = score
        heap_d[c] = d
        while c > 0:  # sift up
            parent = (c - 1) // 2
            if not _worse(heap_s[c], heap_d[c], heap_s[parent], heap_d[parent]):
                break
            heap_s[c], heap_s[parent] = heap_s[parent], heap_s[c]
            heap_d[c], heap_d[parent] = heap_d[parent], heap_d[c]
            c = parent
        return size + 1
    if _worse(heap_s[0], heap_d[0], score, d):
        heap_s[0] = score
        heap_d[0] = d
        _sift_down(heap_s, heap_d, size, 0)
    return size


@numba.njit(nogil=True, cache=True, error_model="numpy")
def _drain(heap_s, heap_d, size, q, out_pos, out_scores, out_len):
    """Pop the worst into the last free slot: best first."""
    out_len[q] = size
    for end in range(size - 1, -1, -1):
        out_scores[q, end] = heap_s[0]
        out_pos[q, end] = heap_d[0]
        heap_s[0] = heap_s[end]
        heap_d[0] = heap_d[end]
        _sift_down(heap_s, heap_d, end, 0)


@numba.njit(nogil=True, cache=True, inline="always", error_model="numpy")
def _combine(title, text, most_fields):
    """The document score from its two fields' double sums, as Lucene combines them."""
    title32 = np.float32(title)
    if most_fields:
        return np.float32(np.float64(title32) + text)
    return max(title32, np.float32(text))


@numba.njit(nogil=True, cache=True, inline="always", error_model="numpy")
def _weight(term, count, f, dfs, counts, boosts):
    df = dfs[f, term]
    idf = np.float32(math.log(1.0 + (counts[f] - df + 0.5) / (df + 0.5)))
    return np.float32(boosts[f] * count) * idf


@numba.njit(nogil=True, cache=True, inline="always", error_model="numpy")
def _term_score(w, tf, norm_inverse):
    """A clause's float32 score of a posting, in Lucene's order of operations (``lucene_bm25``)."""
    return w - w / (np.float32(1.0) + tf * norm_inverse)


@numba.njit(nogil=True, cache=True)
def _clause_buffers(q_ptr, lo, hi):
    """Term, field and weight arrays long enough for the clauses of any query in ``lo:hi`` (two per term)."""
    m = 2 * max(1, np.max(np.diff(q_ptr[lo : hi + 1]))) if hi > lo else 2
    return np.empty(m, np.int64), np.empty(m, np.int64), np.empty(m, np.float32)


@numba.njit(nogil=True, cache=True, inline="always", error_model="numpy")
def _clauses(q, q_ptr, q_terms, q_counts, indptr, dfs, counts, boosts, terms, fields, weights):
    """Query ``q``'s clauses, a term in a field with postings here, in query order; returns their count."""
    n = 0
    for j in range(q_ptr[q], q_ptr[q + 1]):
        for f in range(2):
            if indptr[f, q_terms[j] + 1] > indptr[f, q_terms[j]]:
                terms[n] = q_terms[j]
                fields[n] = f
                weights[n] = _weight(q_terms[j], q_counts[j], f, dfs, counts, boosts)
                n += 1
    return n


# ---- the oracle: every posting scored --------------------------------------------------


@numba.njit(nogil=True, cache=True, error_model="numpy")
def _search_exhaustive(
    q_ptr, q_terms, q_counts, lo, hi, k,
    indptr, block_ptr, block_last, block_start, doc_bits, tf_bits, words, norms, caches, maxima, term_maxima, term_floors, dfs, counts, boosts,
    title_sig, most_fields, acc_t, acc_x, seen, touched, out_pos, out_scores, out_len,
):  # fmt: skip
    heap_s = np.empty(k, np.float32)
    heap_d = np.empty(k, np.int32)
    buf_docs = np.empty(BLOCK, np.int32)
    buf_tfs = np.empty(BLOCK, np.float32)
    terms, fields, weights = _clause_buffers(q_ptr, lo, hi)
    for q in range(lo, hi):
        n_touched = 0
        for c in range(_clauses(q, q_ptr, q_terms, q_counts, indptr, dfs, counts, boosts, terms, fields, weights)):
            term, f, w = terms[c], fields[c], weights[c]
            acc = acc_t if f == 0 else acc_x
            b0 = block_ptr[f, term]
            for b in range(b0, block_ptr[f, term + 1]):
                n = _decode_block(b, b0, indptr[f, term + 1] - indptr[f, term], block_last, block_start, doc_bits, tf_bits, words, buf_docs, buf_tfs)
                for i in range(n):
                    d = buf_docs[i]
                    acc[d] += _term_score(w, buf_tfs[i], caches[f, norms[f, d]])
                    if not seen[d]:
                        seen[d] = True
                        touched[n_touched] = d
                        n_touched += 1
        size = 0
        for i in range(n_touched):
            d = touched[i]
            score = _combine(acc_t[d], acc_x[d], most_fields)
            acc_t[d] = 0.0
            acc_x[d] = 0.0
            seen[d] = False
            size = _offer(heap_s, heap_d, size, k, score, d)
        _drain(heap_s, heap_d, size, q, out_pos, out_scores, out_len)


# ---- short lists: every posting, merged ------------------------------------------------


@numba.njit(nogil=True, cache=True, inline="always")
def _query_postings(q, q_ptr, q_terms, indptr):
    """Postings of query ``q``'s terms in both fields."""
    total = 0
    for j in range(q_ptr[q], q_ptr[q + 1]):
        total += indptr[0, q_terms[j] + 1] - indptr[0, q_terms[j]] + indptr[1, q_terms[j] + 1] - indptr[1, q_terms[j]]
    return total


@numba.njit(nogil=True, cache=True)
def _choose_merged(q_ptr, q_terms, indptr, limit):
    """Which queries the merged kernel takes: those with at most ``limit`` postings."""
    n = q_ptr.shape[0] - 1
    merged = np.empty(n, np.bool_)
    for q in range(n):
        merged[q] = _query_postings(q, q_ptr, q_terms, indptr) <= limit
    return merged


@numba.njit(nogil=True, cache=True, error_model="numpy")
def _search_merged(
    q_ptr, q_terms, q_counts, merged, lo, hi, k,
    indptr, block_ptr, block_last, block_start, doc_bits, tf_bits, words, norms, caches, maxima, term_maxima, term_floors, dfs, counts, boosts,
    title_sig, most_fields, out_pos, out_scores, out_len,
):  # fmt: skip
    """The queries of ``lo:hi`` marked ``merged``, each by decoding all its clauses' postings and summing them bucket by bucket.

    Where no clause's list is long, pruning skips little and costs its bookkeeping for
    every window; decoding the lists whole (scores computed as they are decoded) and
    summing them bucket by bucket of ``MERGE_WINDOW`` documents in L2 does the same arithmetic as the oracle
    (``_search_exhaustive``: float64 sums of the same float32 clause scores, per field
    in clause order) with no accumulator over the collection.

    A bucket's documents are taken in the order they were first summed, not in document
    order: a hit is ranked by its rank key (score, then document), which is the same in any
    order. A hit above the k-th best key so far goes into a buffer, cut to its best k when
    full (``_keep_best``).
    """
    keys = np.empty(max(KEEP_BUFFER, 2 * k), np.int64)
    terms, fields, weights = _clause_buffers(q_ptr, lo, hi)
    m = terms.shape[0]
    longest = 0
    for q in range(lo, hi):  # the most postings a merged query has: the decoding buffers' size
        if merged[q]:
            longest = max(longest, _query_postings(q, q_ptr, q_terms, indptr))
    docs = np.empty(longest + BLOCK, np.int32)
    tfs = np.empty(longest + BLOCK, np.float32)
    scores = np.empty(longest + BLOCK, np.float32)
    start = np.empty(m, np.int64)
    end = np.empty(m, np.int64)
    head = np.empty(m, np.int32)
    window_sums = np.zeros((2, MERGE_WINDOW), np.float64)
    touched = np.empty(MERGE_WINDOW, np.int32)  # the bucket's documents, in the order they were first summed
    seen = np.zeros(MERGE_WINDOW, np.uint8)
    for q in range(lo, hi):
        if not merged[q]:
            continue
        n = _clauses(q, q_ptr, q_terms, q_counts, indptr, dfs, counts, boosts, terms, fields, weights)
        at = 0
        for c in range(n):
            f, term, w = fields[c], terms[c], weights[c]
            start[c] = at
            b0 = block_ptr[f, term]
            df = indptr[f, term + 1] - indptr[f, term]
            for b in range(b0, block_ptr[f, term + 1]):
                got = _decode_block(b, b0, df, block_last, block_start, doc_bits, tf_bits, words, docs[at:], tfs[at:])
                for i in range(at, at + got):
                    scores[i] = _term_score(w, tfs[i], caches[f, norms[f, docs[i]]])
                at += got
            end[c] = at
            head[c] = docs[start[c]] if at > start[c] else NO_MORE
        size = 0
        theta = np.int64(-1)  # the rank key of the k-th best hit so far, once there are k
        theta_score = np.float32(-np.inf)  # its score: a hit scoring below it cannot rank above it
        while True:  # bucket by bucket of documents: each clause's postings there summed into the bucket's accumulators
            low = NO_MORE
            for c in range(n):
                low = min(low, head[c])
            if low == NO_MORE:
                break
            low -= low % MERGE_WINDOW
            high = low + MERGE_WINDOW
            count = 0
            for c in range(n):
                p, stop, f = start[c], end[c], fields[c]
                while p < stop and docs[p] < high:
                    d = docs[p] - low
                    touched[count] = d  # kept when it is the document's first posting here
                    count += 1 - seen[d]
                    seen[d] = 1
                    window_sums[f, d] += scores[p]
                    p += 1
                start[c] = p
                head[c] = docs[p] if p < stop else NO_MORE
            for t in range(count):
                d = touched[t]
                score = _combine(window_sums[0, d], window_sums[1, d], most_fields)
                window_sums[0, d] = 0.0
                window_sums[1, d] = 0.0
                seen[d] = 0
                if score >= theta_score:
                    key = _rank_key(score, low + d)
                    if key > theta:
                        keys[size] = key
                        size += 1
                        if size == keys.shape[0]:
                            size = _keep_best(keys, size, k)
                            theta = keys[k - 1]
                            theta_score = _key_score(theta)
        _put_best(keys, _keep_best(keys, size, k), q, out_pos, out_scores, out_len)


MERGE_WINDOW = 16384  # documents a merged query sums at once (two float64 arrays: 256 KB, L2-sized; 2,048 and 65,536 were slower)
KEEP_BUFFER = 1024  # rank keys the merged kernel gathers before it cuts them to the best k


@numba.njit(nogil=True, cache=True, inline="always", error_model="numpy")
def _rank_key(score, d):
    """An int64 that orders hits as ``_worse`` does, best largest: the score's bits made monotonic, then the document reversed."""
    bits = np.int64(_float_bits(np.float32(score)))
    bits = (bits ^ 0xFFFFFFFF) if bits & 0x80000000 else (bits | 0x80000000)
    return np.int64((bits << 31) | (0x7FFFFFFF - np.int64(d)))


@numba.njit(nogil=True, cache=True, inline="always", error_model="numpy")
def _key_doc(key):
    """The document of a rank key (``_rank_key``)."""
    return np.int32(0x7FFFFFFF - (key & 0x7FFFFFFF))


@numba.njit(nogil=True, cache=True, inline="always", error_model="numpy")
def _key_score(key):
    """The score of a rank key (``_rank_key``)."""
    bits = key >> 31
    bits = (bits & 0x7FFFFFFF) if bits & 0x80000000 else (bits ^ 0xFFFFFFFF)
    return _bits_float(np.uint32(bits))


@numba.njit(nogil=True, cache=True, error_model="numpy")
def _keep_best(keys, n, k):
    """Move the ``k`` largest of ``keys[:n]`` to ``keys[:k]``, sorted, largest first; returns how many are kept."""
    if k <= 0:
        return 0
    if n > k:
        lo, hi, nth = 0, n - 1, k - 1  # quickselect: keys[:k] become the k largest
        while lo < hi:
            pivot = keys[(lo + hi) >> 1]
            i, j = lo, hi
            while i <= j:
                while keys[i] > pivot:
                    i += 1
                while keys[j] < pivot:
                    j -= 1
                if i <= j:
                    keys[i], keys[j] = keys[j], keys[i]
                    i += 1
                    j -= 1
            if nth <= j:
                hi = j
            elif nth >= i:
                lo = i
            else:
                break
        n = k
    keys[:n] = np.sort(keys[:n])[::-1]
    return n


@numba.njit(nogil=True, cache=True, error_model="numpy")
def _put_best(keys, n, q, out_pos, out_scores, out_len):
    """The kept hits, best first, into query ``q``'s result row."""
    out_len[q] = n
    for r in range(n):
        out_scores[q, r] = _key_score(keys[r])
        out_pos[q, r] = _key_doc(keys[r])


# ---- block-max MaxScore ----------------------------------------------------------------

# Columns of a query's cursor table, one row per clause (a term in a field). Entering a
# block decodes its documents into the clause's row of a buffer; a frequency is decoded
# only for a posting that is scored (it sits at a computable bit offset).
_FIELD, _B0, _B1, _DF, _BLK, _IDX, _DOC, _N, _BIT, _TB, _SHALLOW = range(11)
_COLUMNS = 11
WINDOW_BLOCKS = 16  # blocks of one clause read for a window's maximum; a window wider than that takes the list's maximum
WINDOW = 2048  # documents whose essential clause scores are summed at once (two float64 arrays: L1-sized)


@intrinsic
def _trailing_zeros(typingctx, value):
    """The index of the lowest set bit of a non-zero uint64 (LLVM's cttz)."""

    def codegen(context, builder, signature, args):
        return builder.cttz(args[0], ir.Constant(ir.IntType(1), 1))

    return types.uint64(types.uint64), codegen


@intrinsic
def _float_bits(typingctx, value):
    """The IEEE bits of a float32, as a uint32."""

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(32))

    return types.uint32(types.float32), codegen


@intrinsic
def _bits_float(typingctx, value):
    """The float32 whose IEEE bits are a uint32."""

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.FloatType())

    return types.float32(types.uint32), codegen


@numba.njit(nogil=True, cache=True, inline="always", error_model="numpy")
def _enter(c, b, cur, docs, block_last, block_start, doc_bits, tf_bits, words):
    """Put clause ``c`` on the first posting of block ``b``, its documents decoded into ``docs[c]``."""
    n = min(BLOCK, cur[c, _DF] - (b - cur[c, _B0]) * BLOCK)
    bit = np.int64(block_start[b]) * 32
    db = np.int64(doc_bits[b])
    cur[c, _BLK] = b
    cur[c, _IDX] = 0
    cur[c, _N] = n
    cur[c, _BIT] = bit + n * db  # where the frequencies start
    cur[c, _TB] = np.int64(tf_bits[b])
    doc = np.int64(block_last[b - 1]) if b > cur[c, _B0] else np.int64(-1)
    if db == 0:
        for i in range(n):
            docs[c, i] = doc + 1 + i
    else:
        mask = (np.uint64(1) << np.uint64(db)) - np.uint64(1)
        for i in range(n):
            doc += _get(words, bit, mask) + 1
            bit += db
            docs[c, i] = doc
    cur[c, _DOC] = docs[c, 0]


@numba.njit(nogil=True, cache=True, inline="always", error_model="numpy")
def _tf(c, i, cur, words):
    """The frequency of posting ``i`` of clause ``c``'s block, as scores use it."""
    tb = cur[c, _TB]
    if tb == 0:
        return np.float32(1.0)
    return np.float32(_get(words, cur[c, _BIT] + i * tb, (np.uint64(1) << np.uint64(tb)) - np.uint64(1)) + 1)


@numba.njit(nogil=True, cache=True, inline="always", error_model="numpy")
def _score(c, d, cur, words, weights, caches, norms):
    """Clause ``c``'s float32 score of document ``d``, its current posting, in Lucene's order of operations."""
    f = cur[c, _FIELD]
    return _term_score(weights[c], _tf(c, cur[c, _IDX], cur, words), caches[f, norms[f, d]])


@numba.njit(nogil=True, cache=True, inline="always", error_model="numpy")
def _next(c, cur, docs, block_last, block_start, doc_bits, tf_bits, words):
    """Move clause ``c`` (on a posting) to its next posting."""
    i = cur[c, _IDX] + 1
    if i < cur[c, _N]:
        cur[c, _IDX] = i
        cur[c, _DOC] = docs[c, i]
    elif cur[c, _BLK] + 1 < cur[c, _B1]:
        _enter(c, cur[c, _BLK] + 1, cur, docs, block_last, block_start, doc_bits, tf_bits, words)
    else:
        cur[c, _DOC] = NO_MORE


@numba.njit(nogil=True, cache=True, inline="always", error_model="numpy")
def _advance(c, target, cur, docs, block_last, block_start, doc_bits, tf_bits, words):
    """Move clause ``c`` to its first document >= ``target``, skipping whole blocks by their last document."""
    if cur[c, _DOC] >= target:
        return
    b = cur[c, _BLK]
    if b < cur[c, _B0] or block_last[b] < target:  # not in this block (or not started): find the block
        b = _first_block(block_last, max(b + 1, cur[c, _SHALLOW]), cur[c, _B1], target)
        if b == cur[c, _B1]:
            cur[c, _BLK] = b
            cur[c, _DOC] = NO_MORE
            return
        _enter(c, b, cur, docs, block_last, block_start, doc_bits, tf_bits, words)
    i = cur[c, _IDX]
    while docs[c, i] < target:  # the block's last document is >= target
        i += 1
    cur[c, _IDX] = i
    cur[c, _DOC] = docs[c, i]


@numba.njit(nogil=True, cache=True, inline="always", error_model="numpy")
def _first_block(block_last, s, end, target):
    """The first block from ``s`` (before ``end``) whose last document is >= ``target``, or ``end``.

    Galloping, then halving: a common term's list is skipped over in steps that double,
    so a query pays for the blocks it lands in, not for every block in between.
    """
    if s >= end or block_last[s] >= target:
        return s
    step = 1
    while s + step < end and block_last[s + step] < target:  # block_last[s] < target holds throughout
        s += step
        step *= 2
    hi = min(s + step, end)  # block_last[hi] >= target, or hi == end
    while hi - s > 1:
        mid = (s + hi) // 2
        if block_last[mid] < target:
            s = mid
        else:
            hi = mid
    return hi


@numba.njit(nogil=True, cache=True, error_model="numpy")
def _window_end(n_clauses, essential, order, cur, block_last):
    """The last document of the next window: the nearest block end of an essential clause (as Lucene's MaxScore).

    With no essential clause left, the clause with the largest maximum leads, so
    that windows stay as short as its blocks; exhausted clauses do not count.
    """
    end = np.int64(NO_MORE)
    for c in range(n_clauses):
        s = cur[c, _SHALLOW]
        if essential[c] and s < cur[c, _B1]:
            end = min(end, np.int64(block_last[s]))
    if end == NO_MORE:
        for i in range(n_clauses - 1, -1, -1):
            c = order[i]
            s = cur[c, _SHALLOW]
            if s < cur[c, _B1]:
                return np.int64(block_last[s])
    return end


@numba.njit(nogil=True, cache=True, error_model="numpy")
def _partition(n_clauses, hi, theta, most_fields, cur, weights, block_last, maxima, term_max, window_max, order, pre_t, pre_x, essential):
    """Find the clauses that cannot lift a document past ``theta`` in the window on their own.

    They come first in ``order`` (their count is returned), then the essential ones;
    ``pre_t``/``pre_x`` hold the running sums of the window maxima per field in that
    order, which bound what the non-essential clauses before an index can still add.
    ``best_fields`` takes the larger field, so the non-essential clauses of each field
    need only stay below ``theta`` on their own; ``most_fields`` adds them all up.
    """
    for c in range(n_clauses):
        best = np.float32(0.0)
        b = cur[c, _SHALLOW] if cur[c, _DOC] <= hi else cur[c, _B1]  # a cursor past the window: nothing in it
        read = 0
        while b < cur[c, _B1] and read < WINDOW_BLOCKS:
            best = max(best, maxima[b])
            if block_last[b] >= hi:
                break
            b += 1
            read += 1
        w = weights[c]
        if read == WINDOW_BLOCKS:  # a list dense in a long window: its whole list's maximum bounds it, without reading every block
            window_max[c] = term_max[c]
        else:
            window_max[c] = np.float64(w - w / best) if best > 0 else 0.0
        order[c] = c
    for i in range(1, n_clauses):  # insertion sort, smallest maximum first: a handful of clauses
        c = order[i]
        j = i
        while j > 0 and window_max[order[j - 1]] > window_max[c]:
            order[j] = order[j - 1]
            j -= 1
        order[j] = c
    sum_t = 0.0
    sum_x = 0.0
    open_t = True
    open_x = True
    for i in range(n_clauses):
        c = order[i]
        title = cur[c, _FIELD] == 0
        add_t = window_max[c] if title else 0.0
        add_x = 0.0 if title else window_max[c]
        if most_fields:  # one running sum: the first clause that does not fit closes it
            fits = open_t and _combine((sum_t + add_t) * UP, (sum_x + add_x) * UP, True) <= theta
            open_t = fits
        else:  # a running sum per field
            fits = (open_t if title else open_x) and np.float32((sum_t + add_t if title else sum_x + add_x) * UP) <= theta
            if title:
                open_t = fits
            else:
                open_x = fits
        essential[c] = not fits
        if fits:
            sum_t += add_t
            sum_x += add_x
    non_essential = 0
    for i in range(n_clauses):  # stable: the non-essential clauses first, each group still by maximum
        if not essential[order[i]]:
            c = order[i]
            for j in range(i, non_essential, -1):
                order[j] = order[j - 1]
            order[non_essential] = c
            non_essential += 1
    pre_t[0] = 0.0
    pre_x[0] = 0.0
    for i in range(n_clauses):
        c = order[i]
        pre_t[i + 1] = pre_t[i] + (window_max[c] if cur[c, _FIELD] == 0 else 0.0)
        pre_x[i + 1] = pre_x[i] + (window_max[c] if cur[c, _FIELD] == 1 else 0.0)
    return non_essential


@numba.njit(nogil=True, cache=True, inline="always", error_model="numpy")
def _settle(c, j, d, limit, cur, docs, block_last, block_start, doc_bits, tf_bits, words):
    """Leave clause ``c`` on posting ``j`` of its block (document ``d``) after reading it up to ``limit``, or on its next block when ``d <= limit`` was its last."""
    if d <= limit:
        cur[c, _IDX] = j - 1
        _next(c, cur, docs, block_last, block_start, doc_bits, tf_bits, words)
    else:
        cur[c, _IDX] = j
        cur[c, _DOC] = d


@numba.njit(nogil=True, cache=True, inline="always", error_model="numpy")
def _gather_one(c, hi, cur, docs, weights, caches, norms, block_last, block_start, doc_bits, tf_bits, words, batch_docs, batch_sums):
    """Clause ``c``'s documents up to ``hi`` in its current block, with its scores, into the batch; returns how many."""
    f = cur[c, _FIELD]
    w = weights[c]
    j = cur[c, _IDX]
    d = cur[c, _DOC]
    found = 0
    while d <= hi:
        score = np.float64(_term_score(w, _tf(c, j, cur, words), caches[f, norms[f, d]]))
        batch_docs[found] = d
        batch_sums[f, found] = score
        batch_sums[1 - f, found] = 0.0
        found += 1
        j += 1
        if j == cur[c, _N]:
            break
        d = docs[c, j]
    _settle(c, j, d, hi, cur, docs, block_last, block_start, doc_bits, tf_bits, words)
    return found


@numba.njit(nogil=True, cache=True, inline="always", error_model="numpy")
def _gather_window(
    first, n, hi, order, cur, docs, weights, caches, norms, block_last, block_start, doc_bits, tf_bits, words, window_sums, window_hits, batch_docs, batch_sums,
):  # fmt: skip
    """The documents of clauses ``order[first:n]`` in the next ``WINDOW`` documents up to ``hi`` that hold any, in order, with their per-field sums; returns how many.

    Term at a time: each clause's postings add their scores into per-document sums
    and set the document's bit; the set bits then list the documents in order.
    """
    start = np.int64(NO_MORE)
    for i in range(first, n):
        start = min(start, cur[order[i], _DOC])
    if start > hi:
        return 0
    end = min(start + WINDOW - 1, hi)
    for i in range(first, n):
        c = order[i]
        f = cur[c, _FIELD]
        w = weights[c]
        j = cur[c, _IDX]
        d = cur[c, _DOC]
        while d <= end:
            at = d - start
            window_sums[f, at] += _term_score(w, _tf(c, j, cur, words), caches[f, norms[f, d]])
            window_hits[at >> 6] |= np.uint64(1) << np.uint64(at & 63)
            j += 1
            if j == cur[c, _N]:
                break
            d = docs[c, j]
        _settle(c, j, d, end, cur, docs, block_last, block_start, doc_bits, tf_bits, words)
    found = 0
    for h in range((end - start) // 64 + 1):
        bits = window_hits[h]
        window_hits[h] = 0
        while bits:
            at = h * 64 + np.int64(_trailing_zeros(bits))
            bits &= bits - np.uint64(1)
            batch_docs[found] = start + at
            batch_sums[0, found] = window_sums[0, at]
            batch_sums[1, found] = window_sums[1, at]
            window_sums[0, at] = 0.0
            window_sums[1, at] = 0.0
            found += 1
    return found


@numba.njit(nogil=True, cache=True, inline="always", error_model="numpy")
def _title_bounds(non_essential, order, cur, bits, window_max, title_bits, title_max):
    """The window's non-essential title clauses that can add anything, as (signature bit, window maximum); returns how many."""
    n_title = 0
    for i in range(non_essential):
        c = order[i]
        if cur[c, _FIELD] == 0 and window_max[c] > 0:
            title_bits[n_title] = bits[c]
            title_max[n_title] = window_max[c]
            n_title += 1
    return n_title


@numba.njit(nogil=True, cache=True, inline="always", error_model="numpy")
def _drop_hopeless(found, theta, most_fields, n_title, title_bits, title_max, rest_x, title_sig, batch_docs, batch_sums):
    """Keep, in order, the batch's documents that can still beat ``theta``; returns how many.

    A document's bound is its essential sums plus the window maxima of the
    non-essential title clauses its title signature allows and of every non-essential
    text clause. Without branches: most candidates of a common title word fail it,
    unpredictably, and fail it here at a few nanoseconds each instead of in a probe.
    """
    kept = 0
    for g in range(found):
        d = batch_docs[g]
        sum_t = batch_sums[0, g]
        sum_x = batch_sums[1, g]
        signature = title_sig[d]
        bound_t = sum_t
        for j in range(n_title):
            bound_t += title_max[j] * ((signature & title_bits[j]) == title_bits[j])
        batch_docs[kept] = d
        batch_sums[0, kept] = sum_t
        batch_sums[1, kept] = sum_x
        kept += _combine(bound_t * UP, (sum_x + rest_x) * UP, most_fields) > theta
    return kept


@numba.njit(nogil=True, cache=True, inline="always", error_model="numpy")
def _complete(
    d, sum_t, sum_x, non_essential, theta, most_fields, order, pre_t, pre_x, cur, docs, weights, caches, norms, block_last, block_start, doc_bits, tf_bits, words,
    bits, title_sig,
):  # fmt: skip
    """Document ``d``'s score from its essential clauses' sums, probing the non-essential clauses (largest window maximum first) only while it can still beat ``theta``; -inf when it cannot."""
    for i in range(non_essential, 0, -1):
        bound_t = (sum_t + pre_t[i]) * UP
        bound_x = (sum_x + pre_x[i]) * UP
        if _combine(bound_t, bound_x, most_fields) <= theta:
            return -np.inf
        c = order[i - 1]
        f = cur[c, _FIELD]
        if not most_fields and np.float32(bound_t if f == 0 else bound_x) <= theta:
            continue  # best_fields: the larger field decides, and this one cannot win, so its exact sum is not needed
        if f == 0 and (title_sig[d] & bits[c]) == 0:
            continue  # not in the document's title: its list stays where it is
        _advance(c, d, cur, docs, block_last, block_start, doc_bits, tf_bits, words)
        if cur[c, _DOC] == d:
            if f == 0:
                sum_t += _score(c, d, cur, words, weights, caches, norms)
            else:
                sum_x += _score(c, d, cur, words, weights, caches, norms)
    return np.float64(_combine(sum_t, sum_x, most_fields))


@numba.njit(nogil=True, cache=True, error_model="numpy")
def _search_pruned(
    q_ptr, q_terms, q_counts, merged, lo_q, hi_q, k,
    indptr, block_ptr, block_last, block_start, doc_bits, tf_bits, words, norms, caches, maxima, term_maxima, term_floors, dfs, counts, boosts,
    title_sig, most_fields, out_pos, out_scores, out_len,
):  # fmt: skip
    """Allocate the kernel's buffers (the kernel itself allocates nothing, see ``_search_pruned_kernel``)."""
    terms, fields, weights = _clause_buffers(q_ptr, lo_q, hi_q)
    m = terms.shape[0]
    _search_pruned_kernel(
        q_ptr, q_terms, q_counts, merged, lo_q, hi_q, k,
        indptr, block_ptr, block_last, block_start, doc_bits, tf_bits, words, norms, caches, maxima, term_maxima, term_floors, dfs, counts, boosts,
        title_sig, most_fields, out_pos, out_scores, out_len,
        np.empty(k, np.float32), np.empty(k, np.int32), terms, fields, weights,
        np.zeros((m, _COLUMNS), np.int64), np.empty((m, BLOCK), np.int32), np.empty(m, np.float64), np.empty(m, np.int64),
        np.empty(m + 1, np.float64), np.empty(m + 1, np.float64), np.empty(m, np.bool_), np.empty(m, np.float64),
        np.zeros((2, WINDOW), np.float64), np.zeros(WINDOW // 64, np.uint64), np.empty(WINDOW, np.int64), np.empty((2, WINDOW), np.float64),
        np.empty(m, np.uint64), np.empty(m, np.uint64), np.empty(m, np.float64),
    )  # fmt: skip


# No reference counting in the kernel (``_nrt=False``): it allocates nothing, and numba's
# increments and decrements of the arrays handed to inlined helpers, left inside the
# per-document loops, took 80-90% of its time (measured with perf on this kernel).
@numba.njit(nogil=True, cache=True, error_model="numpy", _nrt=False)
def _search_pruned_kernel(
    q_ptr, q_terms, q_counts, merged, lo_q, hi_q, k,
    indptr, block_ptr, block_last, block_start, doc_bits, tf_bits, words, norms, caches, maxima, term_maxima, term_floors, dfs, counts, boosts,
    title_sig, most_fields, out_pos, out_scores, out_len,
    heap_s, heap_d, terms, fields, weights, cur, docs, window_max, order, pre_t, pre_x, essential, term_max, window_sums, window_hits, batch_docs, batch_sums,
    bits, title_bits, title_max,
):  # fmt: skip
    for q in range(lo_q, hi_q):
        if merged[q]:
            continue
        n = _clauses(q, q_ptr, q_terms, q_counts, indptr, dfs, counts, boosts, terms, fields, weights)
        floor = -np.inf  # the k-th hit scores at least this: k documents of one clause's list do
        for c in range(n):
            f, term, w = fields[c], terms[c], weights[c]
            cur[c, _FIELD] = f
            cur[c, _B0] = block_ptr[f, term]
            cur[c, _B1] = block_ptr[f, term + 1]
            cur[c, _DF] = indptr[f, term + 1] - indptr[f, term]
            cur[c, _BLK] = block_ptr[f, term] - 1  # before its first block
            cur[c, _DOC] = -1
            cur[c, _SHALLOW] = block_ptr[f, term]
            bits[c] = _signature_bit(term) if f == 0 else np.uint64(0)
            top = term_maxima[f, term]
            term_max[c] = np.float64(w - w / top) if top > 0 else 0.0
            if k <= FLOOR_K and term_floors[f, term] > 0:
                floor = max(floor, np.float64(w - w / term_floors[f, term]))
            essential[c] = True
            order[c] = c
        if floor > -np.inf:  # just below: a document scoring exactly the floor may still rank (ties)
            floor = np.float64(np.nextafter(np.float32(floor), np.float32(-np.inf)))
        size = 0
        theta = floor  # a document must score above it
        lo = 0
        while n:
            for c in range(n):  # shallow advance: the first block that can hold lo
                cur[c, _SHALLOW] = _first_block(block_last, cur[c, _SHALLOW], cur[c, _B1], lo)
            if not _any_left(n, cur, term_max, theta, most_fields):
                break
            hi = _window_end(n, essential, order, cur, block_last)
            non_essential = 0
            if theta == -np.inf:
                for c in range(n):
                    order[c] = c
                    essential[c] = True
            else:
                while True:  # a window and its essential clauses depend on each other: shrink until stable
                    non_essential = _partition(n, hi, theta, most_fields, cur, weights, block_last, maxima, term_max, window_max, order, pre_t, pre_x, essential)
                    if non_essential == n:
                        break
                    shorter = _window_end(n, essential, order, cur, block_last)
                    if shorter >= hi:
                        break
                    hi = shorter
            if non_essential < n:
                for i in range(non_essential, n):
                    _advance(order[i], lo, cur, docs, block_last, block_start, doc_bits, tf_bits, words)
                n_title = _title_bounds(non_essential, order, cur, bits, window_max, title_bits, title_max)
                rest_x = pre_x[non_essential] if non_essential else 0.0  # the non-essential text clauses' maxima (pre_x is set only when some are)
                while True:  # the essential clauses' documents in the window, a batch at a time, in order
                    if non_essential == n - 1:  # one essential clause: its postings are the documents
                        found = _gather_one(order[non_essential], hi, cur, docs, weights, caches, norms, block_last, block_start, doc_bits, tf_bits, words, batch_docs, batch_sums)
                    else:
                        found = _gather_window(
                            non_essential, n, hi, order, cur, docs, weights, caches, norms, block_last, block_start, doc_bits, tf_bits, words,
                            window_sums, window_hits, batch_docs, batch_sums,
                        )
                    if found == 0:
                        break
                    found = _drop_hopeless(found, theta, most_fields, n_title, title_bits, title_max, rest_x, title_sig, batch_docs, batch_sums)
                    for g in range(found):
                        d = batch_docs[g]
                        score = _complete(
                            d, batch_sums[0, g], batch_sums[1, g], non_essential, theta, most_fields, order, pre_t, pre_x, cur, docs, weights, caches,
                            norms, block_last, block_start, doc_bits, tf_bits, words, bits, title_sig,
                        )
                        if score > theta:  # documents come in order: a tie with the k-th ranks below it
                            size = _offer(heap_s, heap_d, size, k, score, d)
                            if size == k:
                                theta = max(np.float64(heap_s[0]), floor)
            if hi >= NO_MORE:
                break
            lo = hi + 1
        _drain(heap_s, heap_d, size, q, out_pos, out_scores, out_len)


@numba.njit(nogil=True, cache=True, error_model="numpy")
def _any_left(n_clauses, cur, term_max, theta, most_fields):
    """Whether the clauses with postings left could still lift a document past ``theta``.

    Under ``best_fields`` it also puts past their ends the clauses of a field whose
    clauses left cannot (that field decides no document that ranks from here on).
    """
    left_t = 0.0
    left_x = 0.0
    alive = False
    for c in range(n_clauses):
        if cur[c, _SHALLOW] < cur[c, _B1]:
            alive = True
            if cur[c, _FIELD] == 0:
                left_t += term_max[c]
            else:
                left_x += term_max[c]
    if alive and not most_fields:  # best_fields: a field that cannot beat theta any more decides no document that ranks
        for f in range(2):
            if np.float32((left_t if f == 0 else left_x) * UP) <= theta:
                for c in range(n_clauses):
                    if cur[c, _FIELD] == f and cur[c, _SHALLOW] < cur[c, _B1]:
                        cur[c, _SHALLOW] = cur[c, _B1]
                        cur[c, _BLK] = cur[c, _B1]
                        cur[c, _DOC] = NO_MORE
    return alive and _combine(left_t * UP, left_x * UP, most_fields) > theta
