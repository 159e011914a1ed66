"""Readers of released CLIRMatrix files: query JSONL (``*.jl.gz``) and DOCS TSV (``*.tsv.gz``).

docs/formats.md 1.3-1.4: one JSON object a line with ``src_id``/``src_query``/``tgt_results``
(ids JSON strings, labels JSON integers), and ``doc_id \\t text`` lines with no header.
Blank lines are skipped, as ir_datasets does. Anything else that is off raises
``MalformedRecordError`` naming the file and line, so a loader fails loudly and
``validate`` can report the line and go on (it calls the ``parse_*`` functions).
"""

from __future__ import annotations

import contextlib
import os
from bisect import bisect_right
from collections.abc import Iterator, Sequence
from itertools import accumulate, chain
from typing import BinaryIO, NamedTuple

import orjson
from isal import igzip

from clirmatrix.pipeline.errors import InvalidInputError
from clirmatrix.pipeline.io.localio import STREAM_ERRORS
from clirmatrix.pipeline.output.layout import ReleasedFile, parse_path


class QueryRecord(NamedTuple):
    """One line of a query file: the query and its judged documents, best first."""

    src_id: str
    src_query: str
    tgt_results: Sequence[tuple[str, int]]  # a list as parsed; the trainer's stores keep tuples


class MalformedRecordError(InvalidInputError):
    """A line that breaks the released format; ``line`` is 1-based (0 for the whole file)."""

    def __init__(self, path: str, line: int, reason: str) -> None:
        super().__init__(f"{path}:{line}: {reason}" if line else f"{path}: {reason}")
        self.path = path
        self.line = line
        self.reason = reason


def iter_lines(path: str | os.PathLike, gzipped: bool | None = None) -> Iterator[tuple[int, bytes]]:
    """``(line_number, line)`` of a gzip (or plain) file, without the ``\\n``; blank lines skipped.

    Lines end at ``\\n`` only, so a stray ``\\r`` stays inside its line where the
    checks can see it. A damaged stream raises ``MalformedRecordError``. ``gzipped``
    says how to read a file whose name does not end with ``.gz`` (a download's ``.part``).
    """
    name = os.fspath(path)
    number = 0
    with (igzip.open(name, "rb") if (name.endswith(".gz") if gzipped is None else gzipped) else open(name, "rb")) as stream:
        try:
            for number, line in enumerate(stream, 1):
                line = line.rstrip(b"\n")
                if line.strip():
                    yield number, line
        except STREAM_ERRORS as error:
            raise MalformedRecordError(name, number + 1, f"damaged gzip stream ({type(error).__name__}: {error})") from error


def parse_query(line: bytes, path: str = "<query>", number: int = 0) -> QueryRecord:
    """The record of one query line, or ``MalformedRecordError`` saying what is wrong."""
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError as error:
        raise MalformedRecordError(path, number, f"not JSON ({error})") from None
    if not isinstance(value, dict):
        raise MalformedRecordError(path, number, f"expected a JSON object, got {type(value).__name__}")
    missing = [key for key in QueryRecord._fields if key not in value]
    if missing:
        raise MalformedRecordError(path, number, f"missing key(s) {', '.join(missing)}")
    src_id, src_query, results = value["src_id"], value["src_query"], value["tgt_results"]
    if not isinstance(src_id, str):
        raise MalformedRecordError(path, number, f"src_id must be a JSON string, got {src_id!r}")
    if not isinstance(src_query, str):
        raise MalformedRecordError(path, number, f"src_query must be a JSON string, got {src_query!r}")
    if not isinstance(results, list):
        raise MalformedRecordError(path, number, "tgt_results must be a JSON list")
    # The type test runs at C speed (map, set) on the good path; the loop below only
    # finds the bad pair. ``type(...) is int`` because JSON true/false is no label.
    try:
        pairs = [(doc_id, label) for doc_id, label in results]
        doc_ids, labels = zip(*pairs) if pairs else ((), ())
        good = set(map(type, doc_ids)) <= {str} and set(map(type, labels)) <= {int}
    except (TypeError, ValueError):
        good = False
    if not good:
        for position, pair in enumerate(results):
            if not (isinstance(pair, list) and len(pair) == 2 and type(pair[0]) is str and type(pair[1]) is int):
                raise MalformedRecordError(path, number, f"tgt_results[{position}] must be [doc_id string, label integer], got {pair!r}")
    return QueryRecord(src_id, src_query, pairs)


def parse_doc(line: bytes, path: str = "<docs>", number: int = 0) -> tuple[str, str]:
    """``(doc_id, text)`` of one DOCS line: exactly one tab, a non-empty id, UTF-8."""
    tabs = line.count(b"\t")
    if tabs != 1:
        raise MalformedRecordError(path, number, f"expected exactly one tab, found {tabs}")
    doc_id, text = line.split(b"\t")
    if not doc_id:
        raise MalformedRecordError(path, number, "empty doc_id")
    try:
        return doc_id.decode("utf-8"), text.decode("utf-8")
    except UnicodeDecodeError as error:
        raise MalformedRecordError(path, number, f"not UTF-8 ({error})") from None


def iter_query_lines(path: str | os.PathLike) -> Iterator[tuple[int, QueryRecord]]:
    """``(line_number, record)`` of a query file; the first bad line raises."""
    name = os.fspath(path)
    for number, line in iter_lines(name):
        yield number, parse_query(line, name, number)


def iter_queries(path: str | os.PathLike) -> Iterator[QueryRecord]:
    """The records of a ``*.jl.gz`` query file, lazily, in file order."""
    for _, record in iter_query_lines(path):
        yield record


class QueryBlock(NamedTuple):
    """Whole lines of a query file as columns, for building arrays in bulk: record ``i`` has ``counts[i]`` pairs.

    ``doc_ids[i]`` is record ``i``'s document ids joined by ``\\n`` (``""`` when it has
    none), or their tuple where an id itself holds a ``\\n``; ``labels`` is every
    record's labels, one after the other. The joined form keeps no Python object a pair.
    """

    lines: list[int]  # the 1-based line of each record
    src_ids: list[str]
    src_queries: list[str]
    counts: list[int]
    doc_ids: list[str | tuple[str, ...]]
    labels: list[int]

    def flat_doc_ids(self) -> list[str]:
        """Every document id of the block, in order (a Python object each: for small blocks and checks)."""
        return [doc_id for joined, count in zip(self.doc_ids, self.counts) if count
                for doc_id in (joined if isinstance(joined, tuple) else joined.split("\n"))]


READ_SIZE = 1 << 20  # decompressed bytes a block of lines is read by


def iter_query_blocks(path: str | os.PathLike, max_pairs: int = 65536, read_size: int = READ_SIZE) -> Iterator[QueryBlock]:
    """A query file in blocks (``QueryBlock``) of whole records, at most ``max_pairs`` pairs each (one record alone may have more).

    The same records, checks and errors as ``iter_query_lines``, parsed ``read_size``
    decompressed bytes at a time: ``orjson`` a line, each record's ids joined into one
    string at once (a Python string kept a pair costs more than the parse), the type
    tests over the block's lists at C speed. A block that fails them is parsed again
    line by line, so the error is ``parse_query``'s for the first bad line; nothing of
    that block is given out. A damaged gzip stream raises ``MalformedRecordError`` at
    the line after the last whole one, as ``iter_lines`` does.
    """
    if max_pairs < 1:
        raise ValueError(f"max_pairs must be at least 1, got {max_pairs}")
    name = os.fspath(path)
    pending: list[QueryBlock] = []  # the start of the next block: whole records, ``held`` pairs
    held = 0
    for chunk in _parsed_chunks(name, read_size):
        ends = list(accumulate(chunk.counts))
        start = base = 0  # the chunk's first record and pair not yet given out
        while start < len(ends):
            stop = bisect_right(ends, base + max_pairs - held, lo=start)
            if stop == start and held:  # the next record does not fit beside what is held
                yield _join(pending)
                pending, held = [], 0
                continue
            stop = max(stop, start + 1)
            if stop == len(ends):  # not full yet: the next chunk may add to it
                break
            yield _join([*pending, _cut(chunk, start, stop, base, ends[stop - 1])])
            pending, held = [], 0
            start, base = stop, ends[stop - 1]
        if start < len(ends):
            pending.append(_cut(chunk, start, len(ends), base, ends[-1]))
            held += ends[-1] - base
    if pending:
        yield _join(pending)


def _join(blocks: list[QueryBlock]) -> QueryBlock:
    return blocks[0] if len(blocks) == 1 else QueryBlock(*(list(chain.from_iterable(field)) for field in zip(*blocks)))


def _cut(block: QueryBlock, start: int, stop: int, first_pair: int, end_pair: int) -> QueryBlock:
    if start == 0 and stop == len(block.lines):
        return block
    return QueryBlock(
        block.lines[start:stop], block.src_ids[start:stop], block.src_queries[start:stop], block.counts[start:stop],
        block.doc_ids[start:stop], block.labels[first_pair:end_pair],
    )


def _parsed_chunks(name: str, read_size: int) -> Iterator[QueryBlock]:
    """The file's lines parsed about ``read_size`` decompressed bytes at a time (``line_blocks``, in pieces of at most 64 KiB)."""
    for data, first in line_blocks(name, read_size, min(read_size, 1 << 16)):
        yield _parse_lines(name, first, (data[:-1] if data.endswith(b"\n") else data).split(b"\n"))


def line_blocks(path: str | os.PathLike, block_size: int, piece: int, source: BinaryIO | None = None) -> Iterator[tuple[bytes, int]]:
    """``(whole lines, the 1-based number of the first)`` of a gzip (or plain) file, about ``block_size`` bytes at a time.

    The stream is read one decompression of at most ``piece`` bytes at a time, so a
    damaged stream still gives the whole lines before the damage (for a bad CRC, every
    line) before ``MalformedRecordError`` names the line after the last whole one, as a
    line-by-line read would within its buffer. A final line without a newline is a block
    of its own. ``source`` reads the file's bytes in place of opening ``path`` (a reader
    that hashes them on the way).
    """
    name = os.fspath(path)
    number, rest = 1, b""  # the number of the first line of ``rest``, the start of a line not yet ended
    pieces: list[bytes] = []
    held, damage = 0, None
    with contextlib.ExitStack() as stack:
        raw = source or stack.enter_context(open(name, "rb"))
        stream = stack.enter_context(igzip.GzipFile(fileobj=raw, mode="rb")) if name.endswith(".gz") else raw
        while True:
            try:
                data = stream.read1(piece)  # one decompression a call: a damaged stream's error comes after the data before it
            except STREAM_ERRORS as error:
                data, damage = b"", error
            if data:
                pieces.append(data)
                held += len(data)
                if held < block_size:
                    continue
            whole = rest + b"".join(pieces)
            pieces, held = [], 0
            cut = whole.rfind(b"\n") + 1
            if cut:
                yield whole[:cut], number
                number += whole.count(b"\n", 0, cut)
            rest = whole[cut:]
            if damage is not None:
                raise MalformedRecordError(name, number, f"damaged gzip stream ({type(damage).__name__}: {damage})") from damage
            if not data:
                break
    if rest:
        yield rest, number


def numbered_lines(data: bytes, first: int) -> Iterator[tuple[int, bytes]]:
    """``(line_number, line)`` of a block of whole lines from ``line_blocks`` (its first numbered ``first``), blank ones skipped as ``iter_lines`` skips them."""
    for number, line in enumerate((data[:-1] if data.endswith(b"\n") else data).split(b"\n"), first):
        if line.strip():
            yield number, line


class _NotAList(Exception):
    pass


def _parse_lines(name: str, first: int, lines: list[bytes]) -> QueryBlock:
    """The records of ``lines`` (line ``first`` onward, blank ones skipped), or ``parse_query``'s error for the first bad one."""
    numbers, src_ids, src_queries, counts, doc_ids, labels = [], [], [], [], [], []
    loads = orjson.loads
    try:
        for at, line in enumerate(lines, first):
            if not line.strip():
                continue
            value = loads(line)
            results = value["tgt_results"]  # TypeError: not an object
            src_ids.append(value["src_id"])
            src_queries.append(value["src_query"])
            if type(results) is not list:
                raise _NotAList
            numbers.append(at)
            counts.append(len(results))
            if results:
                ids, labs = zip(*results, strict=True)  # ValueError: a pair of another length; TypeError: no list
                joined = "\n".join(ids)  # TypeError: an id that is no string
                doc_ids.append(joined if joined.count("\n") == len(ids) - 1 else ids)
                labels += labs
            else:
                doc_ids.append("")
        if set(map(type, src_ids)) | set(map(type, src_queries)) <= {str} and set(map(type, labels)) <= {int}:
            return QueryBlock(numbers, src_ids, src_queries, counts, doc_ids, labels)
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError, _NotAList):
        pass
    for at, line in enumerate(lines, first):  # the block breaks the format somewhere: the line-by-line parse names where
        if line.strip():
            parse_query(line, name, at)
    raise RuntimeError(f"{name}: lines {first}-{first + len(lines) - 1} failed the block checks but pass parse_query")  # pragma: no cover


def iter_docs(path: str | os.PathLike) -> Iterator[tuple[str, str]]:
    """``(doc_id, text)`` of a ``DOCS/{lang}.tsv.gz`` file, lazily, in file order."""
    name = os.fspath(path)
    for number, line in iter_lines(name):
        yield parse_doc(line, name, number)


def walk_release(root: str | os.PathLike) -> Iterator[tuple[str, ReleasedFile | None]]:
    """``(relative_path, released_file_or_None)`` of every file under ``root``, sorted.

    Dot-entries (``.work/``, temporary ``.*.tmp-*`` files) are skipped at any depth;
    the relative path uses ``/`` separators, as ``layout.parse_path`` expects.
    """
    base = os.fspath(root)
    found = []
    for directory, subdirs, files in os.walk(base):
        subdirs[:] = [name for name in subdirs if not name.startswith(".")]
        relative = os.path.relpath(directory, base).replace(os.sep, "/")
        for name in files:
            if not name.startswith("."):
                found.append(name if relative == "." else f"{relative}/{name}")
    for path in sorted(found):
        yield path, parse_path(path)
