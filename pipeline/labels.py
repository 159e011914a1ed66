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
    low, high = values.min(), values.max()
    if high == low:
        return np.full(values.size, N_CLASSES, dtype=np.int8)
    normalised = (values - low) / (high - low)
    distinct = np.unique(normalised)
    if distinct.size < N_CLASSES:
        rank = np.searchsorted(distinct, normalised)
        classes = distinct.size
    else:
        breaks = np.asarray(jenkspy.jenks_breaks(normalised, n_classes=N_CLASSES), dtype=np.float64)
        # jenkspy's breaks are data values; class i holds (breaks[i], breaks[i + 1]], the first also its minimum.
        rank = np.searchsorted(breaks[1:-1], normalised, side="left")
        classes = N_CLASSES
    labels = np.where(rank == classes - 1, N_CLASSES, 1 + (4 * rank) // (classes - 1))
    return labels.astype(np.int8)


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
    """
    queries, starts, ends = group_bounds(query)
    found = dict(zip(queries.tolist(), zip(starts.tolist(), ends.tolist())))
    out_query, out_doc, out_label = [], [], []
    for q in range(first_query, end_query):
        start, end = found.get(q, (0, 0))
        positions, labels = query_labels(doc[start:end], score[start:end], q)
        out_query.append(np.full(len(positions), q, dtype=np.int32))
        out_doc.append(positions)
        out_label.append(labels)
    if not out_query:
        return LABELS.empty_table()
    return pa.table([pa.array(np.concatenate(out_query)), pa.array(np.concatenate(out_doc)), pa.array(np.concatenate(out_label))], schema=LABELS)


def label_block(work_root: str, plan: LanguagePlan, block: int) -> dict:
    """One unit: the labels of one block of a language's queries, from that block's hits."""
    work = WorkDirs(work_root)
    hits = read_table([work.retrieval_file(plan.lang, block)], RETRIEVAL)
    start, end = plan.block(block)
    table = label_queries(*(hits.column(name).to_numpy() for name in ("query", "doc", "score")), start, end)
    write_table(work.labels_file(plan.lang, block), table, LABELS)
    counts = np.bincount(table.column("label").to_numpy(), minlength=OWN_ARTICLE + 1)
    return {"lang": plan.lang, "block": block, "queries": end - start, "labels": {str(label): int(counts[label]) for label in range(1, OWN_ARTICLE + 1)}}
