"""Streaming Parquet writes (schema-checked, atomic) and column reads through FileSystems."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from clirmatrix.pipeline.io.fileio import atomic_create
from clirmatrix.schemas import check

ROWS_PER_GROUP = 10_000  # Beam works best on batches of 1,000-10,000 rows, never one element per row
# Columns with few distinct values; dictionary encoding is wasted work on the others
# (ids and texts are unique, so the writer builds a dictionary only to drop it).
LOW_CARDINALITY = ("lang", "dump_file", "source")
# Min/max statistics only on the id columns readers filter on, not on the texts.
STATISTICS = ("doc_id", "entity")
# The article texts are most of the bytes. zstd (level 1) on them was 30% of the docs
# job's CPU; lz4 cuts the job's CPU by a fifth for files 1.4x (English prose) to 1.75x
# (the benchmark's text) as large. Every other column stays zstd.
LZ4_COLUMNS = ("text", "text_full")


def open_writer(handle, schema: pa.Schema) -> pq.ParquetWriter:
    """A ParquetWriter with the settings every clirmatrix artefact shares."""
    return pq.ParquetWriter(
        handle,
        schema,
        compression={name: "lz4" if name in LZ4_COLUMNS else "zstd" for name in schema.names},
        use_dictionary=[name for name in LOW_CARDINALITY if name in schema.names] or False,
        write_statistics=[name for name in STATISTICS if name in schema.names] or False,
    )


class ParquetSink:
    """Rows in, one Parquet file out; the file gets its final name only when closed cleanly.

    Use as a context manager. Row groups are written as they fill, so memory stays
    bounded by ``rows_per_group`` whatever the size of the input. A ``derived``
    column is not given in the rows but computed from the other columns of each
    batch (the docs job truncates a whole batch of texts in one compiled call).
    """

    def __init__(
        self,
        path: str,
        schema: pa.Schema,
        rows_per_group: int = ROWS_PER_GROUP,
        derived: Mapping[str, Callable[[dict[str, pa.Array]], pa.Array]] | None = None,
    ) -> None:
        self.path = path
        self.schema = schema
        self.rows_per_group = rows_per_group
        self.rows = 0
        self.derived = dict(derived or {})
        unknown = set(self.derived) - set(schema.names)
        if unknown:
            raise ValueError(f"derived column(s) {sorted(unknown)} are not in the schema")
        self._row_fields = [field for field in schema if field.name not in self.derived]
        self._columns: list[list] = [[] for _ in self._row_fields]
        self._buffered = 0
        self._tables: list[pa.Table] = []  # whole tables given to add_rows, not yet written
        self._table_rows = 0
        self._stack = contextlib.ExitStack()
        self._writer: pq.ParquetWriter | None = None

    def __enter__(self) -> ParquetSink:
        handle = self._stack.enter_context(atomic_create(self.path))
        self._writer = self._stack.enter_context(open_writer(handle, self.schema))
        return self

    def add(self, row: Sequence) -> None:
        """Append one row, given in schema column order (derived columns left out)."""
        # Values go straight into per-column lists, so no row object outlives the call:
        # a batch of buffered row tuples kept the cyclic GC busy (~5% of the docs job).
        for values, value in zip(self._columns, row, strict=True):  # a row of the wrong length raises
            values.append(value)
        self._buffered += 1
        if self._buffered >= self.rows_per_group:
            self._flush()

    def _flush(self) -> None:
        self._write_tables(final=True)
        if not self._buffered:
            return
        given = {field.name: pa.array(values, type=field.type) for values, field in zip(self._columns, self._row_fields)}
        self._columns = [[] for _ in self._row_fields]
        self._buffered = 0
        arrays = [given[name] if name in given else self.derived[name](given) for name in self.schema.names]
        table = pa.Table.from_arrays(arrays, schema=self.schema)
        self._writer.write_table(check(table, self.schema, self.path))
        self.rows += table.num_rows

    def add_rows(self, table: pa.Table) -> None:
        """Append a table's rows; they are written in row groups of ``rows_per_group`` as they fill."""
        if self._buffered:
            self._flush()
        if table.num_rows:
            self._tables.append(check(table, self.schema, self.path))
            self._table_rows += table.num_rows
        if self._table_rows >= self.rows_per_group:
            self._write_tables(final=False)

    def _write_tables(self, final: bool) -> None:
        if not self._tables:
            return
        table = pa.concat_tables(self._tables)
        whole = table.num_rows if final else table.num_rows - table.num_rows % self.rows_per_group
        if whole:
            self._writer.write_table(table.slice(0, whole), row_group_size=self.rows_per_group)
            self.rows += whole
        rest = table.slice(whole)
        self._tables, self._table_rows = ([rest] if rest.num_rows else []), rest.num_rows

    def add_table(self, table: pa.Table) -> None:
        """Append a whole table as its own row group(s), after any rows added one by one."""
        self._flush()
        if table.num_rows:
            self._writer.write_table(check(table, self.schema, self.path), row_group_size=max(table.num_rows, 1))
            self.rows += table.num_rows

    def __exit__(self, exc_type, exc, tb) -> bool:
        if exc_type is not None:
            return self._stack.__exit__(exc_type, exc, tb)
        with self._stack:  # the last rows too: if they fail (schema, short row), no file is left
            self._flush()
        return False


def write_table(path: str, table: pa.Table, schema: pa.Schema) -> None:
    """Write a whole table atomically after checking it against ``schema``."""
    table = check(table, schema, path)
    with atomic_create(path) as handle:
        with open_writer(handle, schema) as writer:
            writer.write_table(table, row_group_size=100_000)


def read_table(paths: Iterable[str], schema: pa.Schema, columns: Sequence[str] | None = None) -> pa.Table:
    """Concatenate the given columns of several Parquet files (an empty table for no files)."""
    names = list(columns) if columns is not None else schema.names
    tables = []
    for path in paths:
        with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as handle:
            tables.append(pq.read_table(handle, columns=names))
    if not tables:
        return pa.schema([schema.field(n) for n in names]).empty_table()
    return pa.concat_tables(tables)


def row_counts(paths: Sequence[str]) -> list[int]:
    """Rows in each Parquet file, from its footer."""
    counts = []
    for path in paths:
        with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as handle:
            counts.append(pq.ParquetFile(handle).metadata.num_rows)
    return counts


def iter_row_range(
    paths: Sequence[str], columns: Sequence[str], start: int = 0, stop: int | None = None, batch_rows: int = ROWS_PER_GROUP
) -> Iterator[pa.RecordBatch]:
    """Rows ``[start, stop)`` of files read as one table in order, a few columns, batch by batch.

    Only the row groups that overlap the range are read, so a unit of work that
    needs one block of a language's rows never reads the rest.
    """
    offset = 0
    for path in paths:
        if stop is not None and offset >= stop:
            return
        with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as handle:
            parquet = pq.ParquetFile(handle)
            meta = parquet.metadata
            for group in range(meta.num_row_groups):
                rows = meta.row_group(group).num_rows
                low, high = max(start - offset, 0), rows if stop is None else min(stop - offset, rows)
                offset += rows
                if low >= high:
                    if stop is not None and offset >= stop:
                        return
                    continue
                table = parquet.read_row_group(group, columns=list(columns)).slice(low, high - low)
                yield from table.to_batches(max_chunksize=batch_rows)


def read_row_range(paths: Sequence[str], schema: pa.Schema, columns: Sequence[str], start: int = 0, stop: int | None = None) -> pa.Table:
    """Rows ``[start, stop)`` of files read as one table in order (see ``iter_row_range``)."""
    batches = list(iter_row_range(paths, columns, start, stop))
    if not batches:
        return pa.schema([schema.field(name) for name in columns]).empty_table()
    return pa.Table.from_batches(batches)


def filter_rows(path: str, schema: pa.Schema, keep: np.ndarray) -> None:
    """Rewrite a Parquet file keeping only the rows where ``keep`` is true, streaming by row group."""
    with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as source:
        parquet = pq.ParquetFile(source)
        with atomic_create(path) as handle:
            writer = open_writer(handle, schema)
            offset = 0
            for batch in parquet.iter_batches(batch_size=ROWS_PER_GROUP):
                mask = pa.array(keep[offset : offset + batch.num_rows])
                offset += batch.num_rows
                writer.write_table(check(pa.Table.from_batches([batch]).filter(mask), schema, path))
            writer.close()
