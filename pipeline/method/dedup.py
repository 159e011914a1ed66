"""Duplicate document ids within a language (docs/formats.md 2.3: real dumps have some).

The first occurrence in dump order wins: files in name order, then line order.
Only the id column is read; files are rewritten only when they hold a loser,
so the usual case (no duplicates) costs one column scan.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from clirmatrix.pipeline.io.parquet_io import filter_rows, read_table
from clirmatrix.schemas import DOCS


def first_rows(keys: np.ndarray, order_by: np.ndarray | None = None) -> np.ndarray:
    """Indexes of the first row of each distinct key: the smallest ``order_by``, ties (or no ``order_by``) in row order."""
    if len(keys) == 0:
        return np.zeros(0, np.int64)
    order = np.argsort(keys, kind="stable") if order_by is None else np.lexsort((order_by, keys))
    ordered = keys[order]
    return order[np.r_[True, ordered[1:] != ordered[:-1]]]


def first_occurrences(ids: pa.Array) -> np.ndarray:
    """Boolean mask, true at the first occurrence of each id.

    Ids are page ids (the readers refuse others), so they are compared as 64-bit
    numbers: 8 bytes a document, not a string table of the whole language.
    """
    keep = np.zeros(len(ids), dtype=bool)
    keep[first_rows(pc.cast(ids, pa.int64()).to_numpy())] = True
    return keep


def drop_duplicate_ids(paths: Sequence[str]) -> int:
    """Remove repeated doc ids across the given docs files (in order); returns how many."""
    columns = [pc.cast(read_table([path], DOCS, ["doc_id"]).column("doc_id"), pa.int64()).combine_chunks() for path in paths]
    if not columns:
        return 0
    ids = pa.concat_arrays(columns)
    keep = first_occurrences(ids)
    removed = int(len(ids) - keep.sum())
    if removed:
        offset = 0
        for path, column in zip(paths, columns):
            part = keep[offset : offset + len(column)]
            offset += len(column)
            if not part.all():
                filter_rows(path, DOCS, part)
    return removed
