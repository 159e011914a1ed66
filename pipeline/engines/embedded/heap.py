"""The top ``k`` of a query as the pruned and exhaustive kernels keep it, the result rows every kernel writes, and their ranking.

A min-heap on rank (score, then the lower document): its root is the worst hit kept,
so a hit enters by beating the root, and ties rank in document order, as in Lucene.
The kernels write each query's hits in no order; ``rank_rows`` sorts a call's rows at once.
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np

from clirmatrix.pipeline.engines.embedded.codec import _bits_float, _float_bits


class Results(NamedTuple):
    """Each query's top ``k``, a row a query (``k`` columns), as the kernels write them; ``lengths[q]`` of row ``q`` are hits."""

    positions: np.ndarray  # int32 [queries, k]: documents, best first once ranked (``rank_rows``)
    scores: np.ndarray  # float32 [queries, k]
    lengths: np.ndarray  # int32 [queries]


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
def _drain(heap_s, heap_d, size, q, out):
    """The kept hits into query ``q``'s row of ``out`` (``Results``) in heap order: ``rank_rows`` sorts the rows after."""
    out.lengths[q] = size
    for r in range(size):
        out.scores[q, r] = heap_s[r]
        out.positions[q, r] = heap_d[r]


# Ranking the rows: every kernel leaves a query's hits in no order, and the rows of a call are
# sorted together here, by numpy, on int64 rank keys. numba's own sort took ~5 us a query on
# rows of 100, a tenth of a merged query; numpy's ~0.25 us, the whole ranking ~0.5 us
# (docs/engine.md, "Ranking the rows").


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
def _row_keys(positions, scores, lengths, lo, hi, keys):
    for q in range(lo, hi):
        for r in range(keys.shape[1]):
            keys[q - lo, r] = _rank_key(scores[q, r], positions[q, r]) if r < lengths[q] else np.int64(-1)  # below every key


@numba.njit(nogil=True, cache=True, error_model="numpy")
def _put_keys(keys, lengths, lo, hi, positions, scores):
    last = keys.shape[1] - 1
    for q in range(lo, hi):
        for r in range(lengths[q]):
            key = keys[q - lo, last - r]  # ascending keys: the best last
            scores[q, r] = _key_score(key)
            positions[q, r] = _key_doc(key)


def rank_rows(out: Results, lo: int, hi: int) -> None:
    """Rows ``lo:hi`` of ``out`` sorted best first (score, then the lower document), as ``_worse`` ranks hits."""
    if hi <= lo or not out.positions.shape[1]:
        return
    keys = np.empty((hi - lo, out.positions.shape[1]), np.int64)
    _row_keys(out.positions, out.scores, out.lengths, lo, hi, keys)
    keys.sort(axis=1)
    _put_keys(keys, out.lengths, lo, hi, out.positions, out.scores)
