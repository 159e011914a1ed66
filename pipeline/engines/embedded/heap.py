"""The top ``k`` of a query as the pruned and exhaustive kernels keep it, and the result rows every kernel writes.

A min-heap on rank (score, then the lower document): its root is the worst hit kept,
so a hit enters by beating the root, and ties rank in document order, as in Lucene.
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np


class Results(NamedTuple):
    """Each query's top ``k``, a row a query (``k`` columns), as the kernels write them; ``lengths[q]`` of row ``q`` are hits."""

    positions: np.ndarray  # int32 [queries, k]: documents, best first
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
    """Pop the worst into the last free slot of query ``q``'s row of ``out`` (``Results``): best first."""
    out.lengths[q] = size
    for end in range(size - 1, -1, -1):
        out.scores[q, end] = heap_s[0]
        out.positions[q, end] = heap_d[0]
        heap_s[0] = heap_s[end]
        heap_d[0] = heap_d[end]
        _sift_down(heap_s, heap_d, end, 0)
