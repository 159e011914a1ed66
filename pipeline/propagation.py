"""Carry one language's labels to another through Wikidata links (docs/method.md section 6).

For a query in X, every labelled X document whose entity has a Y article passes
its label to that article; the others are lost. **[ours]** if two X documents
reach the same Y document (Wikidata sitelinks are 1:1, so it should not happen)
the higher label wins. A query appears in X -> Y only when at least one Y
document got a label (every stored label is >= 1).

Two kinds of units, neither holding more of a language than a number or two per
document: ``write_doc_links`` (one per query language X) pairs X's positions with
those of the same entity in every other language; ``propagate_block`` (one per
block of X's queries) carries that block's labels into every other language.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import pyarrow as pa

from clirmatrix.pipeline.corpus import NO_ENTITY, WorkDirs, catalog_numbers
from clirmatrix.pipeline.parquet_io import read_table, write_table
from clirmatrix.pipeline.units import LanguagePlan
from clirmatrix.schemas import DOC_LINKS, LABELS, PROPAGATED


class Labelled(NamedTuple):
    """Parallel arrays: query position, document position, label; grouped by query."""

    query: np.ndarray
    doc: np.ndarray
    label: np.ndarray


def propagate(labels: Labelled, x_to_y: np.ndarray) -> Labelled:
    """The labels of X's queries on Y's documents, sorted by (query, Y position).

    ``x_to_y[p]`` is the Y position of X document ``p``'s entity, or -1.
    """
    target = x_to_y[labels.doc]
    linked = target >= 0
    query, doc, label = labels.query[linked], target[linked].astype(np.int32), labels.label[linked]
    # Sort by (query, doc, label descending) and keep the first row of each (query, doc).
    order = np.lexsort((-label.astype(np.int16), doc, query))
    query, doc, label = query[order], doc[order], label[order]
    first = np.ones(len(query), dtype=bool)
    first[1:] = (query[1:] != query[:-1]) | (doc[1:] != doc[:-1])
    return Labelled(query[first], doc[first], label[first])


def group_bounds(query: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(queries, start, end) of the runs of equal values in a sorted query column."""
    if len(query) == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty
    starts = np.flatnonzero(np.r_[True, query[1:] != query[:-1]])
    ends = np.r_[starts[1:], len(query)]
    return query[starts], starts, ends


def doc_links(src_entities: np.ndarray, tgt_entities: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(X positions ascending, Y positions) of the entities both languages have (``NO_ENTITY`` is none)."""
    x = np.flatnonzero(src_entities != NO_ENTITY)
    y = np.flatnonzero(tgt_entities != NO_ENTITY)
    _, in_x, in_y = np.intersect1d(src_entities[x], tgt_entities[y], assume_unique=True, return_indices=True)
    order = np.argsort(x[in_x], kind="stable")
    return x[in_x][order].astype(np.int32), y[in_y][order].astype(np.int32)


def write_doc_links(work_root: str, src: str, langs: Sequence[str]) -> dict:
    """One unit per query language X: ``propagated/_links/{X}/{Y}.parquet`` for every other language Y."""
    work = WorkDirs(work_root)
    src_entities = catalog_numbers(work, src, "entity")
    counts = {}
    for tgt in langs:
        if tgt == src:
            continue
        x, y = doc_links(src_entities, catalog_numbers(work, tgt, "entity"))
        write_table(work.doc_links_file(src, tgt), pa.table([pa.array(x), pa.array(y)], schema=DOC_LINKS), DOC_LINKS)
        counts[tgt] = len(x)
    return {"lang": src, "links": counts}


def x_to_y_of(work: WorkDirs, src: str, tgt: str, n_src: int) -> np.ndarray:
    """``x_to_y[p]``: the Y position of X document ``p``'s entity, or -1 (four bytes a document of X)."""
    links = read_table([work.doc_links_file(src, tgt)], DOC_LINKS)
    x_to_y = np.full(n_src, -1, dtype=np.int32)
    x_to_y[links.column("x").to_numpy()] = links.column("y").to_numpy()
    return x_to_y


def propagate_block(work_root: str, plan: LanguagePlan, block: int, langs: Sequence[str]) -> dict:
    """One unit per block of X's queries: its labels carried into every other language, one file per language."""
    work = WorkDirs(work_root)
    table = read_table([work.labels_file(plan.lang, block)], LABELS)
    labels = Labelled(*(table.column(name).to_numpy() for name in ("query", "doc", "label")))
    directions = {}
    for tgt in langs:
        if tgt == plan.lang:
            continue
        carried = propagate(labels, x_to_y_of(work, plan.lang, tgt, plan.docs))
        out = pa.table([pa.array(carried.query), pa.array(carried.doc), pa.array(carried.label)], schema=PROPAGATED)
        write_table(work.propagated_file(plan.lang, tgt, block), out, PROPAGATED)
        directions[tgt] = {"queries": int(len(np.unique(carried.query))), "labels": int(len(carried.label))}
    return {"lang": plan.lang, "block": block, "directions": directions}
