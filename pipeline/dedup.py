"""Duplicate document ids within a language (FORMATS.md 2.3: real dumps have some).

The first occurrence in dump order wins: files in name order, then line order.
Only the id column is read; files are rewritten only when they hold a loser,
so the usual case (no duplicates) costs one column scan.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from clirmatrix.pipeline.parquet_io import filter_rows, read_table
from clirmatrix.schemas import DOCS


def first_occurrences(ids: pa.Array) -> np.ndarray:
    """Boolean mask, true at the first occurrence of each id."""
    table = pa.table({"doc_id": ids, "row": pa.array(np.arange(len(ids), dtype=np.int64))})
    first_rows = table.group_by("doc_id", use_threads=False).aggregate([("row", "min")]).column("row_min")
    keep = np.zeros(len(ids), dtype=bool)
    keep[first_rows.to_numpy()] = True
    return keep


def drop_duplicate_ids(paths: Sequence[str]) -> int:
    """Remove repeated doc ids across the given docs files (in order); returns how many."""
    columns = [read_table([path], DOCS, ["doc_id"]).column("doc_id").combine_chunks() for path in paths]
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
