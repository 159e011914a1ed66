"""Short lists: a query whose postings are few, every posting decoded and summed (``_search_merged``), with no pruning.

A query is searched here rather than by the pruned kernel (``maxscore``) when its
postings (both fields, all its terms) are few for the index (at most ``MERGE_DENSITY``
a document), or few and spread over several lists (at most ``MERGE_BALANCED_POSTINGS``,
none of its lists holding more than ``MERGE_BALANCED_SHARE`` of them): pruning then
saves less than it costs.
Its hits are ranked by int64 rank keys (``_rank_key``), which order them as the heap
does (``heap._worse``).
"""

from __future__ import annotations

import numba
import numpy as np

from clirmatrix.pipeline.engines.embedded.codec import BLOCK, NO_MORE, _decode_block
from clirmatrix.pipeline.engines.embedded.heap import _key_doc, _key_score, _rank_key
from clirmatrix.pipeline.engines.embedded.scoring import _clause_buffers, _clauses, _combine, _term_score

# A query with at most this many postings per document of the index (both fields, all its
# terms) decodes them all and sums them (``_search_merged``): on titles whose lists are
# all short, pruning saves less than it costs. Measured on generator titles at 400k
# documents (docs/benchmarks.md, 2026-11-26, fifth session): merged 1.3-1.7x faster up to
# ~7,000 postings (0.0175 a document), slower past ~10,000.
MERGE_DENSITY = 0.0175
# Or with at most this many postings, none of its lists holding more than this share of them:
# pruning skips a list only where it is long beside the others, and on balanced lists the
# merged kernel stays ahead up to ~12,000 postings whatever the index's size (on generator
# titles, 2.21x at 200k documents and 1.11x at 400k; 0.98-1.00x on Zipfian ones, whose lists
# are seldom balanced: docs/benchmarks.md, 2026-11-27, thirteenth session).
MERGE_BALANCED_POSTINGS = 12_000
MERGE_BALANCED_SHARE = 0.7
MERGE_WINDOW = 16384  # documents a merged query sums at once (two float64 arrays: 256 KB, L2-sized; 2,048 and 65,536 were slower)
KEEP_BUFFER = 1024  # rank keys the merged kernel gathers before it cuts them to the best k


def choose_merged(q_ptr: np.ndarray, q_terms: np.ndarray, index, size: int) -> np.ndarray:
    """Per query, whether ``search_kernels`` decodes all its postings (few, or few and balanced: see the module) rather than pruning; ``index``: a ``KernelIndex``."""
    return _choose_merged(q_ptr, q_terms, index.indptr, MERGE_DENSITY * size, MERGE_BALANCED_POSTINGS, MERGE_BALANCED_SHARE)


@numba.njit(nogil=True, cache=True, inline="always")
def _query_lists(q, q_ptr, q_terms, indptr):
    """Query ``q``'s postings (its terms in both fields), and its longest list's (a term in a field)."""
    total = 0
    longest = 0
    for j in range(q_ptr[q], q_ptr[q + 1]):
        for f in range(2):
            length = indptr[f, q_terms[j] + 1] - indptr[f, q_terms[j]]
            total += length
            longest = max(longest, length)
    return total, longest


@numba.njit(nogil=True, cache=True)
def _choose_merged(q_ptr, q_terms, indptr, limit, balanced_limit, balanced_share):
    """Which queries the merged kernel takes: those with at most ``limit`` postings, or at most ``balanced_limit`` of which no list holds more than ``balanced_share``."""
    n = q_ptr.shape[0] - 1
    merged = np.empty(n, np.bool_)
    for q in range(n):
        total, longest = _query_lists(q, q_ptr, q_terms, indptr)
        merged[q] = total <= limit or (total <= balanced_limit and longest <= balanced_share * total)
    return merged


@numba.njit(nogil=True, cache=True, error_model="numpy")
def _search_merged(queries, merged, lo, hi, k, ix, out):
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
    clauses = _clause_buffers(queries.ptr, lo, hi)
    m = clauses.terms.shape[0]
    longest = 0
    for q in range(lo, hi):  # the most postings a merged query has: the decoding buffers' size
        if merged[q]:
            longest = max(longest, _query_lists(q, queries.ptr, queries.terms, ix.indptr)[0])
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
        n = _clauses(q, queries, ix, clauses)
        at = 0
        for c in range(n):
            f, term, w = clauses.fields[c], clauses.terms[c], clauses.weights[c]
            start[c] = at
            b0 = ix.block_ptr[f, term]
            df = ix.indptr[f, term + 1] - ix.indptr[f, term]
            for b in range(b0, ix.block_ptr[f, term + 1]):
                got = _decode_block(b, b0, df, ix, docs[at:], tfs[at:])
                for i in range(at, at + got):
                    scores[i] = _term_score(w, tfs[i], ix.caches[f, ix.norms[f, docs[i]]])
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
                p, stop, f = start[c], end[c], clauses.fields[c]
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
                score = _combine(window_sums[0, d], window_sums[1, d], ix.most_fields)
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
        _put_best(keys, _keep_best(keys, size, k), q, out)


@numba.njit(nogil=True, cache=True, error_model="numpy")
def _keep_best(keys, n, k):
    """Move the ``k`` largest of ``keys[:n]`` to ``keys[:k]``, in no order but, when ``n > k``, the ``k``-th largest at ``keys[k - 1]``; returns how many are kept."""
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
    return n


@numba.njit(nogil=True, cache=True, error_model="numpy")
def _put_best(keys, n, q, out):
    """The kept hits into query ``q``'s row of ``out`` (``Results``), in no order (``heap.rank_rows`` sorts the rows)."""
    out.lengths[q] = n
    for r in range(n):
        out.scores[q, r] = _key_score(keys[r])
        out.positions[q, r] = _key_doc(keys[r])
