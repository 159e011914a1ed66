"""The embedded engine's index: both fields' packed postings, how indexing builds them, and how a shard's index is stored.

Indexing streams batches: each field's tokens become (term id, tf) postings grouped by
document, with one norm byte per document (``_FieldBuilder``). ``finish``
counting-sorts them into one posting list per term (documents in index order), and
``Postings.pack`` packs every list into blocks (``codec``).

Searching adds, under the collection statistics in use, each block's and each term's
largest ``1 + tf * norm_inverse[norm]`` and each term's ``FLOOR_K``-th largest
(``Postings.maxima``), and each document's 16-bit title signature
(``Postings.signatures``). ``KernelIndex`` is all of it as the kernels take it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import numba
import numpy as np
import pyarrow as pa

from clirmatrix.pipeline.engines import lucene_bm25
from clirmatrix.pipeline.engines.base import FieldStatistics
from clirmatrix.pipeline.engines.embedded.codec import BLOCK, Blocks, _decode_block, _unpack_all, blocks_per_term, pack
from clirmatrix.pipeline.io import fileio
from clirmatrix.pipeline.io.parquet_io import read_table, write_table

FLOOR_K = 100  # each term keeps the score that this many documents of its list reach: a floor for the k-th hit of any query with it, k <= FLOOR_K
FIELDS = ("title", "text")  # field 0 and field 1 of every two-row array


@dataclass
class Postings:
    """Both fields' packed postings (see ``codec``); row 0 of two-row arrays is ``title``, row 1 ``text``.

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
        blocks = blocks_per_term(self.indptr)
        self.block_ptr = np.zeros(self.indptr.shape, dtype=np.int64)
        np.cumsum(blocks[0], out=self.block_ptr[0, 1:])
        self.block_ptr[1] = self.block_ptr[0, -1]
        self.block_ptr[1, 1:] += np.cumsum(blocks[1])

    @classmethod
    def pack(cls, fields: Sequence[tuple[np.ndarray, np.ndarray, np.ndarray]], norms: np.ndarray, counts: np.ndarray) -> Postings:
        """Pack the two fields' posting lists, each given as CSR ``(indptr, docs, tfs)`` with documents ascending within a term."""
        return cls(np.stack([indptr for indptr, _, _ in fields]), *pack(list(fields)), norms, counts)

    @property
    def packed(self) -> Blocks:
        """The blocks as the codec reads them."""
        return Blocks(self.block_last, self.block_start, self.doc_bits, self.tf_bits, self.words)

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
        _unpack_all(self.indptr[f], self.block_ptr[f], self.packed, docs, tfs)
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
                _block_maxima(self.indptr[f], self.block_ptr[f], self.packed, self.norms[f], caches[f], blocks, terms[f], floors[f])
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
            _title_signatures(self.indptr[0], self.block_ptr[0], self.packed, self._signatures)
        return self._signatures

    def nbytes(self) -> int:
        """Bytes of the stored index (packed postings, block table, term offsets, norms)."""
        return sum(getattr(self, part).nbytes for part in self.PARTS)

    def search_nbytes(self) -> int:
        """Bytes searching adds: each term's first block, each block's and term's maximum, each term's floor and each document's title signature."""
        return self.block_ptr.nbytes + 4 * self.blocks + 8 * (self.indptr.size - 2) + 2 * self.norms.shape[1]

    def kernel_index(self, caches: np.ndarray, dfs: np.ndarray, counts: np.ndarray, boosts: np.ndarray, most_fields: bool) -> KernelIndex:
        """The index with the scoring constants of a set of statistics (``caches``: each field's norm cache), as the kernels take it."""
        maxima, term_maxima, term_floors = self.maxima(caches)
        return KernelIndex(
            self.indptr, self.block_ptr, self.block_last, self.block_start, self.doc_bits, self.tf_bits, self.words, self.norms,
            caches, maxima, term_maxima, term_floors, dfs, counts, boosts, self.signatures(), most_fields,
        )  # fmt: skip


class KernelIndex(NamedTuple):
    """The index's arrays and the scoring constants under the statistics in use: what every search kernel takes.

    Its codec fields are those of ``Blocks``, so the codec reads it as it reads them.
    """

    indptr: np.ndarray  # int64 [2, terms + 1]
    block_ptr: np.ndarray  # int64 [2, terms + 1]
    block_last: np.ndarray
    block_start: np.ndarray
    doc_bits: np.ndarray
    tf_bits: np.ndarray
    words: np.ndarray
    norms: np.ndarray  # uint8 [2, documents]
    caches: np.ndarray  # float32 [2, 256]: each field's norm_inverse by norm byte
    maxima: np.ndarray  # float32 [blocks]: each block's largest 1 + tf * norm_inverse[norm]
    term_maxima: np.ndarray  # float32 [2, terms]: each list's largest
    term_floors: np.ndarray  # float32 [2, terms]: each list's FLOOR_K-th largest (0 for a shorter list)
    dfs: np.ndarray  # int64 [2, terms]: the document frequencies scores use
    counts: np.ndarray  # int64 [2]: the documents with each field that scores use
    boosts: np.ndarray  # float32 [2]: the title boost, and 1
    title_sig: np.ndarray  # uint16 [documents]: ``Postings.signatures``
    most_fields: bool  # the fields' scores add up (else the larger one counts)


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


@numba.njit(nogil=True, cache=True, error_model="numpy")
def _block_maxima(indptr, block_ptr, blocks, norms, norm_inverse, out, out_terms, out_floors):
    buf_docs = np.empty(BLOCK, np.int32)
    buf_tfs = np.empty(BLOCK, np.float32)
    values = np.empty(np.max(np.diff(indptr)) if indptr.shape[0] > 1 else 0, np.float32)  # one list's values, for its floor
    one = np.float32(1.0)
    for t in range(indptr.shape[0] - 1):
        df = indptr[t + 1] - indptr[t]
        term_best = np.float32(0.0)
        p = 0
        for b in range(block_ptr[t], block_ptr[t + 1]):
            n = _decode_block(b, block_ptr[t], df, blocks, buf_docs, buf_tfs)
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
def _title_signatures(indptr, block_ptr, blocks, out):
    buf_docs = np.empty(BLOCK, np.int32)
    buf_tfs = np.empty(BLOCK, np.int64)
    for t in range(indptr.shape[0] - 1):
        bit = _signature_bit(t)
        for b in range(block_ptr[t], block_ptr[t + 1]):
            n = _decode_block(b, block_ptr[t], indptr[t + 1] - indptr[t], blocks, buf_docs, buf_tfs)
            for i in range(n):
                out[buf_docs[i]] |= bit


# ---- stored: a shard's index between the steps of sharded retrieval ------------------------

_TERMS = pa.schema([pa.field("term", pa.string(), nullable=False)], metadata={"clirmatrix.artefact": "index_terms"})


def save(postings: Postings, terms: Sequence[str], folder: str) -> None:
    """Store an index in ``folder``: one ``.npy`` file per array of ``Postings.PARTS`` and the terms by term id, written without copies."""
    for name in Postings.PARTS:
        array = getattr(postings, name)
        with fileio.atomic_create(fileio.join(folder, f"{name}.npy")) as handle:
            np.lib.format.write_array_header_1_0(handle, np.lib.format.header_data_from_array_1_0(array))
            handle.write(memoryview(np.ascontiguousarray(array)).cast("B"))
    write_table(fileio.join(folder, "terms.parquet"), pa.table([pa.array(list(terms), pa.string())], schema=_TERMS), _TERMS)


def load(folder: str) -> tuple[dict[str, np.ndarray], list[str]]:
    """The arrays (by ``Postings.PARTS``) and the terms that ``save`` stored in ``folder``."""
    arrays = {}
    for part in Postings.PARTS:
        with fileio.open_raw(fileio.join(folder, f"{part}.npy")) as handle:
            arrays[part] = np.lib.format.read_array(handle)
    return arrays, read_table([fileio.join(folder, "terms.parquet")], _TERMS).column("term").to_pylist()
