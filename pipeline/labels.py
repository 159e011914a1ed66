"""Relevance labels of one query from its BM25 scores (docs/method.md section 5).

Per query, never globally: min-max normalise the returned scores, split them into
5 Jenks natural-breaks classes (jenkspy), label the classes 1 (lowest) to 5
(highest), and give the query's own article label 6, adding it when BM25 did not
return it. Every other document is label 0 and is not stored.

**[ours]** edge cases: with fewer than 5 distinct scores there are as many classes
as distinct values, the top one is label 5 and the others are spread by rank onto
1..4 (``1 + floor(4 * rank / (distinct - 1))``, which is the identity for 5
classes); one returned document or all scores equal gives label 5.
"""

from __future__ import annotations

import jenkspy
import numba
import numpy as np
import pyarrow as pa

from clirmatrix.pipeline.corpus import WorkDirs
from clirmatrix.pipeline.parquet_io import read_table, write_table
from clirmatrix.pipeline.propagation import group_bounds
from clirmatrix.pipeline.units import LanguagePlan
from clirmatrix.schemas import LABELS, RETRIEVAL

N_CLASSES = 5
OWN_ARTICLE = 6


def class_labels(scores: np.ndarray) -> np.ndarray:
    """Labels 1-5 for one query's returned scores (any order); labels never decrease with the score."""
    values = np.asarray(scores, dtype=np.float64)
    if values.size == 0:
        return np.zeros(0, dtype=np.int8)
    bounds = np.array([0], np.int64), np.array([values.size], np.int64)
    return _classes(values, *bounds)


def _classes(scores: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Labels 1-5 of every row of the queries at ``[starts, ends)`` (non-empty), each query on its own.

    Normalising, counting distinct values and classing are compiled loops over the
    arrays; only jenkspy is called once per query, the work the method cannot do without.
    """
    normalised, distinct = _normalise(np.ascontiguousarray(scores), starts, ends)
    inner = np.zeros((len(starts), N_CLASSES - 1), np.float64)  # each query's Jenks breaks, less the minimum and maximum
    for i in np.flatnonzero(distinct >= N_CLASSES).tolist():
        # jenkspy's breaks are data values; class i holds (breaks[i], breaks[i + 1]], the first also its minimum.
        inner[i] = jenkspy.jenks_breaks(normalised[starts[i] : ends[i]], n_classes=N_CLASSES)[1:-1]
    return _class_rows(normalised, distinct, inner, starts, ends)


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
        ordered = np.sort(normalised[s:e])
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


def label_block(work_root: str, plan: LanguagePlan, block: int) -> dict:
    """One unit: the labels of one block of a language's queries, from that block's hits."""
    work = WorkDirs(work_root)
    hits = read_table([work.retrieval_file(plan.lang, block)], RETRIEVAL)
    start, end = plan.block(block)
    table = label_queries(*(hits.column(name).to_numpy() for name in ("query", "doc", "score")), start, end)
    write_table(work.labels_file(plan.lang, block), table, LABELS)
    counts = np.bincount(table.column("label").to_numpy(), minlength=OWN_ARTICLE + 1)
    return {"lang": plan.lang, "block": block, "queries": end - start, "labels": {str(label): int(counts[label]) for label in range(1, OWN_ARTICLE + 1)}}
