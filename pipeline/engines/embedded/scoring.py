"""What every search kernel shares: the query batch, its clauses and their weights, Lucene's clause score and the fields' combination.

A query is analysed like the documents, a batch at a time, into flat arrays of term
ids and counts (``QueryBatch``; ``EmbeddedEngine.query_arrays``). Elasticsearch's
``match`` query makes one SHOULD clause per token and Lucene's BooleanQuery rewrite
merges repeated clauses into one whose boost is their count, so each distinct term is
one clause per field with weight = field boost x count x idf: a repeated word adds
its score once per occurrence. A clause scores a posting as Lucene does
(``lucene_bm25``), in float32; each field's clause scores add up in double; the
fields combine as Lucene does for the query Elasticsearch builds (``best_fields``:
the larger field score, a DisjunctionMaxQuery; ``most_fields``: title + text, the
unboosted text clauses flattened into the outer sum).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numba
import numpy as np

UP = 1.0 + 1e-12  # raises a double sum of upper bounds past any reordering error of the sum it bounds


class QueryBatch(NamedTuple):
    """Analysed queries as CSR: query ``q``'s distinct terms are ``terms[ptr[q]:ptr[q + 1]]``, each with its count."""

    ptr: np.ndarray  # int64 [queries + 1]
    terms: np.ndarray  # int64: term ids, each query's in first-seen order
    counts: np.ndarray  # float32: how often each term occurs in its query


class Clauses(NamedTuple):
    """A query's clauses (a term in a field), as ``_clauses`` fills them; any tuple with these fields will do."""

    terms: np.ndarray  # int64 [clauses]
    fields: np.ndarray  # int64 [clauses]: 0 title, 1 text
    weights: np.ndarray  # float32 [clauses]: field boost x count x idf


@numba.njit(nogil=True, cache=True, inline="always", error_model="numpy")
def _combine(title, text, most_fields):
    """The document score from its two fields' double sums, as Lucene combines them."""
    title32 = np.float32(title)
    if most_fields:
        return np.float32(np.float64(title32) + text)
    return max(title32, np.float32(text))


@numba.njit(nogil=True, cache=True, inline="always", error_model="numpy")
def _weight(term, count, f, ix):
    df = ix.dfs[f, term]
    idf = np.float32(math.log(1.0 + (ix.counts[f] - df + 0.5) / (df + 0.5)))
    return np.float32(ix.boosts[f] * count) * idf


@numba.njit(nogil=True, cache=True, inline="always", error_model="numpy")
def _term_score(w, tf, norm_inverse):
    """A clause's float32 score of a posting, in Lucene's order of operations (``lucene_bm25``)."""
    return w - w / (np.float32(1.0) + tf * norm_inverse)


@numba.njit(nogil=True, cache=True)
def _clause_buffers(q_ptr, lo, hi):
    """Term, field and weight arrays long enough for the clauses of any query in ``lo:hi`` (two per term)."""
    m = 2 * max(1, np.max(np.diff(q_ptr[lo : hi + 1]))) if hi > lo else 2
    return Clauses(np.empty(m, np.int64), np.empty(m, np.int64), np.empty(m, np.float32))


@numba.njit(nogil=True, cache=True, inline="always", error_model="numpy")
def _clauses(q, queries, ix, out):
    """Query ``q``'s clauses, a term in a field with postings in ``ix`` (a ``KernelIndex``), in query order, into ``out`` (``Clauses``' fields); returns their count."""
    n = 0
    for j in range(queries.ptr[q], queries.ptr[q + 1]):
        term = queries.terms[j]
        for f in range(2):
            if ix.indptr[f, term + 1] > ix.indptr[f, term]:
                out.terms[n] = term
                out.fields[n] = f
                out.weights[n] = _weight(term, queries.counts[j], f, ix)
                n += 1
    return n
