"""Read a downloaded or built CLIRMatrix split lazily, as ir_datasets does.

    >>> split = QuerySplit("out/", "bi139-base", "en", "de", "test1")
    >>> next(split.queries())            # Query(src_id='690', src_query='Aruba')
    >>> next(split.qrels())              # Qrel(src_id='690', doc_id='14013', label=6)
    >>> next(documents("out/", "de"))    # ('12', 'Alan Smithee steht als ...')
    >>> query, results = next(split.records())   # both from one read: (Query, [(doc_id, label), ...])
    >>> split.qrels_table()              # pyarrow.Table: src_id, doc_id (strings), label (int8)
    >>> for batch in split.iter_batches(65536): ...   # SplitBatch(queries, qrels) of whole queries

Ids stay strings, blank lines are skipped, nothing is read before it is asked for.
The Arrow forms parse a block of lines at a time (no Python object per pair is
kept) and load pyarrow only when called; ``int_ids=True`` gives int64 ids for numpy.
``write_trec_qrels`` and ``write_trec_run`` export a split for trec_eval or
ir-measures (the run ranks each query's candidates in file order).
"""

from __future__ import annotations

import os
from bisect import bisect_right
from collections.abc import Callable, Iterator
from itertools import accumulate, compress
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from clirmatrix.pipeline.errors import MissingInputError
from clirmatrix.pipeline.io.localio import atomic_write
from clirmatrix.pipeline.output import layout
from clirmatrix.pipeline.output.jsonl import MalformedRecordError, QueryBlock, iter_docs, iter_queries, iter_query_blocks

if TYPE_CHECKING:
    import pyarrow as pa


class Query(NamedTuple):
    """A query of a split: the source article's page id and its title (ids stay strings, as released)."""

    src_id: str
    src_query: str


class Qrel(NamedTuple):
    """A judged document of a query: 6 is the query's own article, 5-1 the Jenks classes, 0 a base file's filler."""

    src_id: str
    doc_id: str
    label: int


class SplitBatch(NamedTuple):
    """Whole queries of a split in Arrow form: ``queries`` (src_id, src_query) and their ``qrels`` (src_id, doc_id, label int8), in file order."""

    queries: pa.RecordBatch
    qrels: pa.RecordBatch


BATCH_PAIRS = 65536  # qrels a batch holds by default


class QuerySplit:
    """One direction and split of a query set: ``bi139-base``, ``bi139-full`` or ``multi8``."""

    def __init__(self, root: str | os.PathLike, dataset: str, src: str, tgt: str, split: str) -> None:
        layout.refuse_incomplete(root)
        self.path = Path(root) / layout.query_file(dataset, src, tgt, split)
        if not self.path.is_file():
            raise MissingInputError(f"{self.path} is not there; fetch it with: clirmatrix download {dataset} --src {src} --tgt {tgt} --split {split}")

    def queries(self) -> Iterator[Query]:
        """The split's queries in file order, read as they are asked for."""
        for record in iter_queries(self.path):
            yield Query(record.src_id, record.src_query)

    def qrels(self) -> Iterator[Qrel]:
        """Every (query, document, label) of the split, in file order: a query's documents best first."""
        for record in iter_queries(self.path):
            for doc_id, label in record.tgt_results:
                yield Qrel(record.src_id, doc_id, label)

    def records(self) -> Iterator[tuple[Query, list[tuple[str, int]]]]:
        """Each query with its judged ``(doc_id, label)`` pairs, best first: queries and qrels from one read of the file."""
        for record in iter_queries(self.path):
            yield Query(record.src_id, record.src_query), record.tgt_results

    def iter_batches(self, batch_size: int = BATCH_PAIRS, int_ids: bool = False) -> Iterator[SplitBatch]:
        """The split in ``SplitBatch`` pieces of whole queries, at most ``batch_size`` qrels each (unless one query alone has more).

        One read gives both queries and qrels; memory stays bounded by the batch,
        whatever the file's size. Ids are strings, as released; ``int_ids=True``
        makes them int64 (``column.to_numpy()`` without a copy), and an id that is
        not a plain decimal integer raises ``MalformedRecordError`` naming its line.
        """
        for block in iter_query_blocks(self.path, batch_size):
            yield _to_arrow(block, os.fspath(self.path), int_ids)

    def tables(self, int_ids: bool = False) -> tuple[pa.Table, pa.Table]:
        """``(queries_table, qrels_table)`` of the whole split, from one read.

        Read by ``release_columns`` (the release's line form in compiled code, the
        ids' Arrow columns cast from their integers); the same tables as
        ``iter_batches`` gives, with the same errors.
        """
        import numpy as np
        import pyarrow as pa

        from clirmatrix.pipeline.tools.release_columns import query_columns  # numba: loaded only when a table is asked for

        queries_schema, qrels_schema = _schemas(int_ids)
        queries, qrels = [], []
        for block in query_columns(self.path):
            labels = block.labels_int8()
            src_ids, doc_ids = block.src_ids, block.doc_ids
            if int_ids:
                src_ids = pa.array(block.src_keys) if block.src_keys is not None else _integer_ids(src_ids, block.path, block.lines.item, "src_id")
                doc_ids = pa.array(block.doc_keys) if block.doc_keys is not None else _integer_ids(doc_ids, block.path, block.line_of_pair, "doc_id")
            owners = np.repeat(np.arange(len(block.lines), dtype=np.int64), np.diff(block.offsets))
            queries.append(pa.RecordBatch.from_arrays([src_ids, block.src_queries], schema=queries_schema))
            qrels.append(pa.RecordBatch.from_arrays([src_ids.take(owners), doc_ids, labels], schema=qrels_schema))
        return pa.Table.from_batches(queries, queries_schema), pa.Table.from_batches(qrels, qrels_schema)

    def queries_table(self, int_ids: bool = False) -> pa.Table:
        """The split's queries as a ``pyarrow.Table``: ``src_id`` (string, or int64 with ``int_ids``), ``src_query``."""
        return self.tables(int_ids)[0]

    def qrels_table(self, int_ids: bool = False) -> pa.Table:
        """The split's qrels as a ``pyarrow.Table``: ``src_id``, ``doc_id`` (strings, or int64 with ``int_ids``), ``label`` (int8)."""
        return self.tables(int_ids)[1]

    def write_trec_qrels(self, path: str | os.PathLike) -> int:
        """``qid 0 docid label`` lines; returns how many."""
        return _write_lines(path, (f"{q.src_id} 0 {q.doc_id} {q.label}\n" for q in self.qrels()))

    def write_trec_run(self, path: str | os.PathLike, tag: str = "clirmatrix") -> int:
        """``qid Q0 docid rank score tag``: each query's candidates in file order (score = -rank)."""

        def lines() -> Iterator[str]:
            for record in iter_queries(self.path):
                for rank, (doc_id, _) in enumerate(record.tgt_results, 1):
                    yield f"{record.src_id} Q0 {doc_id} {rank} {-rank} {tag}\n"

        return _write_lines(path, lines())


def documents(root: str | os.PathLike, lang: str, full: bool = False) -> Iterator[tuple[str, str]]:
    """``(doc_id, text)`` of a language's ``DOCS`` (or ``DOCS-FULL``) file."""
    layout.refuse_incomplete(root)
    path = Path(root) / layout.docs_file("docs-full" if full else "docs", lang)
    if not path.is_file():
        raise MissingInputError(f"{path} is not there; fetch it with: clirmatrix download {'docs-full' if full else 'docs'} --tgt {lang}")
    return iter_docs(path)


def _schemas(int_ids: bool) -> tuple[pa.Schema, pa.Schema]:
    import pyarrow as pa

    ids = pa.int64() if int_ids else pa.string()
    return (pa.schema([("src_id", ids), ("src_query", pa.string())]),
            pa.schema([("src_id", ids), ("doc_id", ids), ("label", pa.int8())]))


def _to_arrow(block: QueryBlock, name: str, int_ids: bool) -> SplitBatch:
    """A block's columns as Arrow: the query's id repeated over its pairs by ``take``, labels checked to fit int8."""
    import numpy as np
    import pyarrow as pa

    queries_schema, qrels_schema = _schemas(int_ids)
    src_ids = pa.array(block.src_ids, pa.string())
    doc_ids = _doc_id_array(block)
    labels = np.array(block.labels, dtype=np.int64)
    outside = np.flatnonzero((labels < -128) | (labels > 127))
    if outside.size:
        at = int(outside[0])
        raise MalformedRecordError(name, _line_of_pair(block, at), f"label {block.labels[at]} does not fit the table's int8")
    if int_ids:
        src_ids = _integer_ids(src_ids, name, lambda at: block.lines[at], "src_id")
        doc_ids = _integer_ids(doc_ids, name, lambda at: _line_of_pair(block, at), "doc_id")
    owners = np.repeat(np.arange(len(block.counts), dtype=np.int64), block.counts)
    return SplitBatch(
        pa.RecordBatch.from_arrays([src_ids, pa.array(block.src_queries, pa.string())], schema=queries_schema),
        pa.RecordBatch.from_arrays([src_ids.take(owners), doc_ids, pa.array(labels.astype(np.int8))], schema=qrels_schema),
    )


def _doc_id_array(block: QueryBlock) -> pa.Array:
    """The block's document ids as one Arrow string array, cut out of the records' joined ids by numpy (no Python string a pair)."""
    import numpy as np
    import pyarrow as pa

    if not set(map(type, block.doc_ids)) <= {str}:  # an id holding a newline: one Python string each
        return pa.array(block.flat_doc_ids(), pa.string())
    pairs = len(block.labels)
    if not pairs:
        return pa.array([], pa.string())
    joined = "\n".join(compress(block.doc_ids, block.counts)).encode()
    cuts = np.flatnonzero(np.frombuffer(joined, np.uint8) == ord("\n"))  # pairs - 1 of them: no id holds one
    data = joined.replace(b"\n", b"")
    if len(data) >= 2**31:
        raise ValueError(f"{len(data):,} bytes of document ids in one batch: ask for fewer qrels a batch")
    offsets = np.empty(pairs + 1, np.int32)
    offsets[0], offsets[-1] = 0, len(data)
    offsets[1:-1] = cuts - np.arange(pairs - 1)
    return pa.StringArray.from_buffers(pairs, pa.py_buffer(offsets), pa.py_buffer(data))


def _integer_ids(ids: pa.Array, name: str, line_of: Callable[[int], int], what: str) -> pa.Array:
    """``ids`` as int64, when every one is a plain decimal integer (one that reads back as itself)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    try:
        numbers = pc.cast(ids, pa.int64())
        same = pc.equal(pc.cast(numbers, pa.string()), ids)
        if pc.all(same).as_py():
            return numbers
        bad = pc.index(same, False).as_py()
    except pa.ArrowInvalid:  # not a number, or past int64
        bad = next((at for at, value in enumerate(ids.to_pylist()) if not _fits_int64(value)), 0)
    raise MalformedRecordError(name, line_of(bad), f"int_ids: {what} {ids[bad].as_py()!r} is not a plain decimal integer")


def _fits_int64(value: str) -> bool:
    try:
        number = int(value)
    except ValueError:
        return False
    return str(number) == value and -(1 << 63) <= number < 1 << 63


def _line_of_pair(block: QueryBlock, pair: int) -> int:
    """The line of the record that holds the block's ``pair``-th pair."""
    return block.lines[bisect_right(list(accumulate(block.counts)), pair)]


def _write_lines(path: str | os.PathLike, lines: Iterator[str]) -> int:
    count = 0
    with atomic_write(path) as out:
        for line in lines:
            out.write(line.encode())
            count += 1
    return count
