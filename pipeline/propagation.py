"""Carry one language's labels to another through Wikidata links (PIPELINE.md section 6).

For a query in X, every labelled X document whose entity has a Y article passes
its label to that article; the others are lost. **[ours]** if two X documents
reach the same Y document (Wikidata sitelinks are 1:1, so it should not happen)
the higher label wins. A query appears in X -> Y only when at least one Y
document got a label (every stored label is >= 1).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


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
