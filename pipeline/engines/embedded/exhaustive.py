"""The oracle: every posting of every query term scored (``search(..., exhaustive=True)``).

The pruned and merged kernels must equal it hit for hit and bit for bit: the clause
scores are the same float32 values and their double sums are exact in any order
(tests/test_engine_pruning.py).
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np

from clirmatrix.pipeline.engines.embedded.codec import BLOCK, _decode_block
from clirmatrix.pipeline.engines.embedded.heap import _drain, _offer
from clirmatrix.pipeline.engines.embedded.scoring import _clause_buffers, _clauses, _combine, _term_score


class Accumulators(NamedTuple):
    """Per-document accumulators of the exhaustive kernel (zero between queries), reused across calls."""

    title: np.ndarray  # float64 [documents]
    text: np.ndarray  # float64 [documents]
    seen: np.ndarray  # bool [documents]
    touched: np.ndarray  # int32 [documents]: the documents a query reached, in the order it did

    @classmethod
    def make(cls, documents: int) -> Accumulators:
        return cls(np.zeros(documents), np.zeros(documents), np.zeros(documents, np.bool_), np.empty(documents, np.int32))


@numba.njit(nogil=True, cache=True, error_model="numpy")
def _search_exhaustive(queries, lo, hi, k, ix, acc, out):
    """Queries ``lo:hi`` of ``queries`` (``QueryBatch``) over ``ix`` (``KernelIndex``) into their rows of ``out`` (``Results``)."""
    heap_s = np.empty(k, np.float32)
    heap_d = np.empty(k, np.int32)
    buf_docs = np.empty(BLOCK, np.int32)
    buf_tfs = np.empty(BLOCK, np.float32)
    clauses = _clause_buffers(queries.ptr, lo, hi)
    for q in range(lo, hi):
        n_touched = 0
        for c in range(_clauses(q, queries, ix, clauses)):
            term, f, w = clauses.terms[c], clauses.fields[c], clauses.weights[c]
            field_acc = acc.title if f == 0 else acc.text
            b0 = ix.block_ptr[f, term]
            for b in range(b0, ix.block_ptr[f, term + 1]):
                n = _decode_block(b, b0, ix.indptr[f, term + 1] - ix.indptr[f, term], ix, buf_docs, buf_tfs)
                for i in range(n):
                    d = buf_docs[i]
                    field_acc[d] += _term_score(w, buf_tfs[i], ix.caches[f, ix.norms[f, d]])
                    if not acc.seen[d]:
                        acc.seen[d] = True
                        acc.touched[n_touched] = d
                        n_touched += 1
        size = 0
        for i in range(n_touched):
            d = acc.touched[i]
            score = _combine(acc.title[d], acc.text[d], ix.most_fields)
            acc.title[d] = 0.0
            acc.text[d] = 0.0
            acc.seen[d] = False
            size = _offer(heap_s, heap_d, size, k, score, d)
        _drain(heap_s, heap_d, size, q, out)
