"""Relevance labels of one query from its BM25 scores (docs/method.md section 5).

Per query, never globally: min-max normalise the returned scores, split them into
5 Jenks natural-breaks classes (Fisher-Jenks, as jenkspy computes them), label the
classes 1 (lowest) to 5 (highest), and give the query's own article label 6, adding it
when BM25 did not return it. Every other document is label 0 and is not stored.

**[ours]** edge cases: with fewer than 5 distinct scores there are as many classes
as distinct values, the top one is label 5 and the others are spread by rank onto
1..4 (``1 + floor(4 * rank / (distinct - 1))``, which is the identity for 5
classes); one returned document or all scores equal gives label 5.

**[ours]** the breaks: jenkspy's own algorithm (its ``JenksMatrices``: the Fisher-Jenks
dynamic programme over sorted values, the same additions in the same order and the same
``>=`` choice, then the same walk back through the class limits) compiled here for a
whole block of queries at once. jenkspy costs a Python call, a sort and two allocations
per query (49 M queries in the release); the breaks are bit for bit jenkspy's, which the
tests check on adversarial inputs (ties, few distinct values, every size up to 100).
"""

from __future__ import annotations

import numba
import numpy as np
import pyarrow as pa

from clirmatrix.pipeline.io.parquet_io import read_table, write_table
from clirmatrix.pipeline.method.corpus import WorkDirs
from clirmatrix.pipeline.method.propagation import group_bounds
from clirmatrix.schemas import LABELS, RETRIEVAL
from clirmatrix.schemas.contracts import LabelReport, LanguagePlan

N_CLASSES = 5  # the Jenks kernel below is written out for 5 classes
OWN_ARTICLE = 6
_DBL_MAX = np.finfo(np.float64).max  # jenkspy's DBL_MAX: a variance not reached yet


def class_labels(scores: np.ndarray) -> np.ndarray:
    """Labels 1-5 for one query's returned scores (any order); labels never decrease with the score."""
    values = np.asarray(scores, dtype=np.float64)
    if values.size == 0:
        return np.zeros(0, dtype=np.int8)
    bounds = np.array([0], np.int64), np.array([values.size], np.int64)
    return _classes(values, *bounds)


def _classes(scores: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Labels 1-5 of every row of the queries at ``[starts, ends)`` (non-empty), each query on its own."""
    normalised, distinct = _normalise(np.ascontiguousarray(scores), starts, ends)
    inner = jenks_inner_breaks(normalised, starts, ends, distinct >= N_CLASSES)
    return _class_rows(normalised, distinct, inner, starts, ends)


def jenks_inner_breaks(values: np.ndarray, starts: np.ndarray, ends: np.ndarray, chosen: np.ndarray) -> np.ndarray:
    """``jenkspy.jenks_breaks(values[start:end], n_classes=5)[1:-1]`` of each chosen group (zeros for the others), in one compiled pass.

    Each chosen group needs at least 5 distinct values, as jenkspy does. Class ``i`` of a
    group holds ``(breaks[i], breaks[i + 1]]``, the first also its minimum.
    """
    values = np.ascontiguousarray(values, dtype=np.float64)
    starts, ends = np.ascontiguousarray(starts, dtype=np.int64), np.ascontiguousarray(ends, dtype=np.int64)
    return _jenks_inner_breaks(values, starts, ends, np.ascontiguousarray(chosen, dtype=np.bool_))


@numba.njit(cache=True)
def _ascending(values):
    """``np.sort(values)``, in one pass when they are already in order either way: a query's scores come best first, and numba's sort of them (twice a query) was a tenth of labelling."""
    n = values.shape[0]
    rising, falling = True, True
    for r in range(1, n):
        rising &= values[r - 1] <= values[r]
        falling &= values[r - 1] >= values[r]
    if rising:
        return values.copy()
    if falling:
        return values[::-1].copy()
    return np.sort(values)


@numba.njit(cache=True)
def _jenks_inner_breaks(values, starts, ends, chosen):
    inner = np.zeros((starts.shape[0], N_CLASSES - 1), np.float64)
    longest = 0
    for i in range(starts.shape[0]):
        longest = max(longest, ends[i] - starts[i])
    variances = np.empty((longest, N_CLASSES), np.float64)  # jenkspy's variance_combinations, reused
    limits = np.empty((longest, N_CLASSES), np.int64)  # its lower_class_limits (1-based, as fish.f)
    for i in range(starts.shape[0]):
        if chosen[i]:
            ordered = _ascending(values[starts[i] : ends[i]])
            _jenks_matrices(ordered, variances, limits)
            n = ordered.shape[0]
            m = n
            for j in range(N_CLASSES - 1, 0, -1):  # the top class's lower limit first, as jenkspy walks back
                at = limits[m - 1, j] - 2
                inner[i, j - 1] = ordered[at + n if at < 0 else at]  # jenkspy indexes numpy with it: -1 is the last value
                m = limits[m - 1, j] - 1
    return inner


@numba.njit(cache=True)
def _jenks_matrices(ordered, variances, limits):
    """jenkspy's ``JenksMatrices`` for 5 classes on ascending ``ordered``: the same operations in the same order, so the same doubles.

    Row ``last``'s entries for 2-5 classes live in locals while the class below it
    grows (jenkspy keeps them in the matrix), and each choice is a select: the same
    values, without a store or a mispredicted branch per step.
    """
    for last in range(ordered.shape[0]):  # every row is written before a later one reads it
        total, squares, weight, variance = 0.0, 0.0, 0.0, 0.0
        v1 = v2 = v3 = v4 = _DBL_MAX
        l1 = l2 = l3 = l4 = 1
        for size in range(1, last + 2):  # the last class: values [lower, last]
            lower = last + 1 - size
            value = ordered[lower]
            weight += 1.0
            total += value
            squares += value * value
            variance = squares - (total * total) / weight
            before = lower - 1
            if before > -1:
                v1, l1 = _at_most(v1, l1, variance + variances[before, 0], lower + 1)
                v2, l2 = _at_most(v2, l2, variance + variances[before, 1], lower + 1)
                v3, l3 = _at_most(v3, l3, variance + variances[before, 2], lower + 1)
                v4, l4 = _at_most(v4, l4, variance + variances[before, 3], lower + 1)
        variances[last, 0], variances[last, 1], variances[last, 2], variances[last, 3], variances[last, 4] = variance, v1, v2, v3, v4
        limits[last, 0], limits[last, 1], limits[last, 2], limits[last, 3], limits[last, 4] = 1, l1, l2, l3, l4


@numba.njit(inline="always")
def _at_most(best, limit, candidate, candidate_limit):
    """jenkspy's ``if best >= candidate``: the candidate and its limit replace the best on a tie too."""
    return (candidate, candidate_limit) if best >= candidate else (best, limit)


def query_labels(positions: np.ndarray, scores: np.ndarray, own_position: int) -> tuple[np.ndarray, np.ndarray]:
    """(document positions, labels) of one query: its Jenks labels, and 6 for its own article.

    ``positions`` and ``scores`` are the engine's hits in rank order. The own
    article keeps its rank when it was returned and is appended otherwise, so a
    query whose title analyses to no tokens gets exactly one labelled document.
    """
    positions = np.asarray(positions, dtype=np.int32)
    labels = class_labels(scores)
    own = positions == own_position
    if own.any():
        labels[own] = OWN_ARTICLE
        return positions, labels
    return np.append(positions, np.int32(own_position)), np.append(labels, np.int8(OWN_ARTICLE))


def label_queries(query: np.ndarray, doc: np.ndarray, score: np.ndarray, first_query: int, end_query: int) -> pa.Table:
    """Labels of queries ``first_query`` .. ``end_query - 1`` from their hits (rows grouped by query, in rank order).

    A query without hits (a title that analyses to no tokens) gets its own article only.
    The same rules as ``query_labels``, for a whole block at once (a test compares them).
    """
    queries, starts, ends = group_bounds(query, "hits")
    keep = (queries >= first_query) & (queries < end_query)
    queries, starts, ends = queries[keep].astype(np.int64), starts[keep].astype(np.int64), ends[keep].astype(np.int64)
    labels = _classes(score, starts, ends)
    out_query, out_doc, out_label = _assemble(np.ascontiguousarray(doc, dtype=np.int32), labels, queries, starts, ends, first_query, end_query)
    return pa.table([pa.array(out_query), pa.array(out_doc), pa.array(out_label)], schema=LABELS)


@numba.njit(cache=True)
def _normalise(scores, starts, ends):
    """Each query's scores min-max normalised in float64, and its number of distinct normalised values (0: all equal)."""
    normalised = np.zeros(scores.shape[0], np.float64)
    distinct = np.zeros(starts.shape[0], np.int64)
    for i in range(starts.shape[0]):
        s, e = starts[i], ends[i]
        low, high = np.float64(scores[s]), np.float64(scores[s])
        for r in range(s, e):
            low, high = min(low, np.float64(scores[r])), max(high, np.float64(scores[r]))
        if high == low:
            continue
        for r in range(s, e):
            normalised[r] = (np.float64(scores[r]) - low) / (high - low)
        ordered = _ascending(normalised[s:e])
        count = 1
        for r in range(1, e - s):
            count += ordered[r] != ordered[r - 1]
        distinct[i] = count
    return normalised, distinct


@numba.njit(cache=True)
def _class_rows(normalised, distinct, inner, starts, ends):
    """Each row's label: its rank among the query's Jenks breaks (or, with fewer distinct values than classes, among those values) onto 1..5."""
    labels = np.empty(normalised.shape[0], np.int8)
    for i in range(starts.shape[0]):
        s, e = starts[i], ends[i]
        if distinct[i] == 0:  # all scores equal (or one): the top class
            labels[s:e] = N_CLASSES
            continue
        ordered = inner[i]
        if distinct[i] < N_CLASSES:
            ordered = np.unique(normalised[s:e])
        classes = min(distinct[i], N_CLASSES)
        for r in range(s, e):
            rank = 0  # searchsorted, left
            while rank < ordered.shape[0] and ordered[rank] < normalised[r]:
                rank += 1
            labels[r] = N_CLASSES if rank == classes - 1 else 1 + (4 * rank) // (classes - 1)
    return labels


@numba.njit(cache=True)
def _assemble(doc, labels, queries, starts, ends, first_query, end_query):
    """The block's (query, doc, label) rows: each query's hits as classed, its own article 6 (appended when not returned)."""
    rows = 0
    for i in range(queries.shape[0]):
        rows += ends[i] - starts[i]
    rows += end_query - first_query  # at most one own article added a query
    out_query = np.empty(rows, np.int32)
    out_doc = np.empty(rows, np.int32)
    out_label = np.empty(rows, np.int8)
    at, i = 0, 0
    for q in range(first_query, end_query):
        own_found = False
        if i < queries.shape[0] and queries[i] == q:
            for r in range(starts[i], ends[i]):
                out_query[at], out_doc[at] = q, doc[r]
                own_found |= doc[r] == q
                out_label[at] = OWN_ARTICLE if doc[r] == q else labels[r]
                at += 1
            i += 1
        if not own_found:
            out_query[at], out_doc[at], out_label[at] = q, q, OWN_ARTICLE
            at += 1
    return out_query[:at], out_doc[:at], out_label[:at]


def label_block(work_root: str, plan: LanguagePlan, block: int) -> LabelReport:
    """One unit: the labels of one block of a language's queries, from that block's hits."""
    work = WorkDirs(work_root)
    hits = read_table([work.retrieval_file(plan.lang, block)], RETRIEVAL)
    start, end = plan.block(block)
    table = label_queries(*(hits.column(name).to_numpy() for name in ("query", "doc", "score")), start, end)
    write_table(work.labels_file(plan.lang, block), table, LABELS)
    counts = np.bincount(table.column("label").to_numpy(), minlength=OWN_ARTICLE + 1)
    return LabelReport(lang=plan.lang, block=block, queries=end - start, labels={str(label): int(counts[label]) for label in range(1, OWN_ARTICLE + 1)})
