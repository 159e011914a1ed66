"""The names of a direction's query sets, in the release's order (docs/method.md sections 7-8).

Kept apart from ``pipeline.method.splits`` (which chooses each set's queries, with numba and
pyarrow) so that the released layout (``pipeline.output.layout``), and the loader and
``download`` through it, can name them without importing either.
"""

from __future__ import annotations

SPLITS: tuple[str, ...] = ("train", "dev", "test1", "test2")  # a query's set, as an index into this in the Parquet files (schemas/parquet.py)
EVAL_SPLITS: tuple[str, ...] = ("dev", "test1", "test2")
