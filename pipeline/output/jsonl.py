"""Readers of released CLIRMatrix files: query JSONL (``*.jl.gz``) and DOCS TSV (``*.tsv.gz``).

docs/formats.md 1.3-1.4: one JSON object a line with ``src_id``/``src_query``/``tgt_results``
(ids JSON strings, labels JSON integers), and ``doc_id \\t text`` lines with no header.
Blank lines are skipped, as ir_datasets does. Anything else that is off raises
``MalformedRecordError`` naming the file and line, so a loader fails loudly and
``validate`` can report the line and go on (it calls the ``parse_*`` functions).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from typing import NamedTuple

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
