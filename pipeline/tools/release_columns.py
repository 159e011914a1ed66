"""Released files' records in bulk, for ``export`` and the loader's tables: Arrow columns and judged-pair lines without a Python object a pair.

Why by hand. ``export`` built a Python tuple and an f-string for every judged pair
(9-10x the CPU of reading the file, issue 53), and no library reads a JSON line into
columns faster than the release's narrow byte form allows: ``validate``'s scanner
(``validate_scan``) already reads each line of that form at compiled speed, with its
ids and labels as integers. The ids it accepts are plain numbers (no sign, no leading
zero), so their decimal text *is* the id: Arrow's string columns are cast from the
integers, and the qrels' lines are copied from the lines' own text by compiled code
(``pair_lines``). A block that holds any line the scanner does not accept (an id that
is not a plain number, another spacing, a line that is not JSON) is read the old way,
``parse_query`` a line, which also names a bad line in its error; both ways give the
same columns.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numba
import numpy as np
import orjson
import pyarrow as pa

from clirmatrix.pipeline.method.html_scan import put_char
from clirmatrix.pipeline.output.jsonl import MalformedRecordError, line_blocks, numbered_lines, parse_doc, parse_query
from clirmatrix.pipeline.tools.validate_scan import BLANK, BLOCK, CLEAN, MAX_DIGITS, OTHER, PIECE, hex4, scan_docs_block, scan_query_block

LABEL_RANGE = (-128, 127)  # the int8 the hf layout stores a label in


@dataclass
class QueryColumns:
    """Whole records of one block of a query file: record ``i`` (from line ``lines[i]``) has pairs ``offsets[i]:offsets[i + 1]``.

    ``src_keys``/``doc_keys`` hold the ids as integers when the scanner read the block
    (their decimal text is the id); the string columns are Arrow arrays either way.
    """

    path: str
    lines: np.ndarray  # int64, the 1-based line of each record
    src_ids: pa.Array  # string, a record each
    src_queries: pa.Array  # string, a record each
    offsets: np.ndarray  # int32, one more than the records
    labels: np.ndarray  # int64, a pair each
    doc_texts: pa.Array | None = None  # string, a pair each, when the ids were read as text
    src_keys: np.ndarray | None = None
    doc_keys: np.ndarray | None = None
    text: np.ndarray | None = None  # the block's text, with each record's line start and src_query end, when the scanner read it
    starts: np.ndarray | None = None
    query_ends: np.ndarray | None = None

    @property
    def doc_ids(self) -> pa.Array:
        """Every pair's document id as an Arrow string column (made when asked: the qrels' lines need none)."""
        if self.doc_texts is None:
            self.doc_texts = _int_strings(self.doc_keys)
        return self.doc_texts

    @property
    def pairs(self) -> int:
        """The judged pairs of the block."""
        return int(self.offsets[-1])

    def line_of_pair(self, pair: int) -> int:
        """The line of the record that holds the block's ``pair``-th pair."""
        return int(self.lines[int(np.searchsorted(self.offsets, pair, side="right")) - 1])

    def labels_int8(self) -> pa.Array:
        """The labels as int8 (the hf layout's and the loader's tables'); a label outside it is a bad record, named by its line."""
        low, high = LABEL_RANGE
        if self.labels.size and (self.labels.min() < low or self.labels.max() > high):
            pair = int(np.flatnonzero((self.labels < low) | (self.labels > high))[0])
            raise MalformedRecordError(self.path, self.line_of_pair(pair), f"label {int(self.labels[pair])} does not fit int8 ({low}..{high})")
        return pa.array(self.labels.astype(np.int8), pa.int8())

    def pair_lines(self, middle: bytes, between: bytes) -> bytes:
        """A line ``{src_id}{middle}{doc_id}{between}{label}\\n`` per judged pair, in order (the qrels files' lines)."""
        if self.text is None:
            docs, counts = self.doc_ids.to_pylist(), np.diff(self.offsets).tolist()
            sources = [src for src, count in zip(self.src_ids.to_pylist(), counts) for _ in range(count)]
            head, tail = middle.decode(), between.decode()
            return "".join(f"{src}{head}{doc}{tail}{label}\n" for src, doc, label in zip(sources, docs, self.labels.tolist())).encode()
        out = np.empty(self.pairs * (2 * MAX_DIGITS + len(middle) + len(between) + 1) + len(self.text), dtype=np.uint8)  # the labels are in the text
        written = _pair_lines(self.text, self.starts, self.query_ends, self.offsets, np.frombuffer(middle, np.uint8), np.frombuffer(between, np.uint8), out)
        return out[:written].tobytes()


@numba.njit(cache=True)
def _pair_lines(text, starts, query_ends, offsets, middle, between, out):
    """The qrels' lines of every pair into ``out``, their ids and labels copied from the lines' own text; returns the bytes written.

    Each line is one the scanner accepted: ``{"src_id": "S", "src_query": "...", "tgt_results":
    [["D", L], ...]}``, so after the src_query's closing quote (``query_ends``) and the 18
    bytes of ``, "tgt_results": [`` each pair is ``["D", L]`` joined by ``, ``. Copying
    the digits is cheaper than printing the integers again (a division a digit).
    """
    at = 0
    for record in range(starts.shape[0]):
        src = starts[record] + 12  # past {"src_id": "
        src_end = src
        while text[src_end] != 34:
            src_end += 1
        k = query_ends[record] + 19  # the first pair's [
        for _ in range(offsets[record], offsets[record + 1]):
            for c in range(src, src_end):
                out[at] = text[c]
                at += 1
            for c in range(middle.shape[0]):
                out[at] = middle[c]
                at += 1
            k += 2  # ["
            while text[k] != 34:
                out[at] = text[k]
                at += 1
                k += 1
            k += 3  # the closing quote, comma and space
            for c in range(between.shape[0]):
                out[at] = between[c]
                at += 1
            while text[k] != 93:
                out[at] = text[k]
                at += 1
                k += 1
            out[at] = 10
            at += 1
            k += 3  # ], or ]]
    return at


@numba.njit(cache=True)
def _unescaped_texts(buf, spans, offsets, out):
    """The JSON strings at ``spans`` (escaped text the scanner accepted) as UTF-8, one after the other in ``out``."""
    at = 0
    offsets[0] = 0
    for i in range(spans.shape[0]):
        k, end = spans[i, 0], spans[i, 1]
        while k < end:
            c = buf[k]
            if c != 92:
                out[at] = c
                at += 1
                k += 1
                continue
            e = buf[k + 1]
            k += 2
            if e == 117:  # \uXXXX, a surrogate pair being two (the scanner checked both)
                code = hex4(buf, k)
                k += 4
                if 0xD800 <= code <= 0xDBFF:
                    code = 0x10000 + ((code - 0xD800) << 10) + (hex4(buf, k + 2) - 0xDC00)
                    k += 6
                at = put_char(out, at, code)
                continue
            out[at] = 10 if e == 110 else 13 if e == 114 else 9 if e == 116 else 8 if e == 98 else 12 if e == 102 else e  # \n \r \t \b \f, or \" \\
            at += 1
        offsets[i + 1] = at
    return at


def _strings(offsets: np.ndarray, data: np.ndarray, size: int) -> pa.Array:
    return pa.StringArray.from_buffers(len(offsets) - 1, pa.py_buffer(offsets), pa.py_buffer(data[:size]))


def _int_strings(values: np.ndarray) -> pa.Array:
    """Integers as an Arrow string column of their decimal text (Arrow's cast: faster than formatting them here)."""
    return pa.array(values, pa.int64()).cast(pa.string())


def query_columns(path: str | os.PathLike) -> Iterator[QueryColumns]:
    """The records of a ``*.jl.gz`` query file as ``QueryColumns``, a block of ~``BLOCK`` decompressed bytes at a time.

    The first bad line raises ``parse_query``'s ``MalformedRecordError``; a damaged
    gzip stream raises after the whole lines before it, naming the line it broke at.
    """
    name = os.fspath(path)
    for data, first in line_blocks(name, BLOCK, PIECE):
        text = np.frombuffer(data, dtype=np.uint8)
        block = scan_query_block(text, first)
        if (block.verdicts == OTHER).any():
            yield _parsed(name, data, first)
            continue
        kept = np.flatnonzero(block.verdicts != BLANK)
        spans, src_keys = block.queries[kept], block.ids[kept]
        query_offsets = np.empty(len(kept) + 1, np.int32)  # the queries are shorter than the block's text (~BLOCK bytes)
        query_data = np.empty(max(int((spans[:, 1] - spans[:, 0]).sum()), 1), np.uint8)
        queries = _strings(query_offsets, query_data, _unescaped_texts(text, spans, query_offsets, query_data))
        yield QueryColumns(
            name, first + kept, _int_strings(src_keys), queries, np.append(block.pair_offsets[kept], block.pair_offsets[-1]).astype(np.int32),
            block.labels, src_keys=src_keys, doc_keys=block.doc_ids, text=text, starts=block.starts[kept], query_ends=spans[:, 1],
        )


def _parsed(name: str, data: bytes, first: int) -> QueryColumns:
    """A block read ``parse_query`` a line (a line the scanner does not accept is in it)."""
    records, lines = [], []
    for number, line in numbered_lines(data, first):
        records.append(parse_query(line, name, number))
        lines.append(number)
    counts = [len(record.tgt_results) for record in records]
    offsets = np.zeros(len(records) + 1, dtype=np.int32)
    np.cumsum(counts, out=offsets[1:])
    return QueryColumns(
        name, np.array(lines, np.int64), pa.array([record.src_id for record in records], pa.string()),
        pa.array([record.src_query for record in records], pa.string()), offsets,
        np.array([label for record in records for _, label in record.tgt_results], np.int64),
        pa.array([doc_id for record in records for doc_id, _ in record.tgt_results], pa.string()),
    )


@numba.njit(cache=True)
def _doc_texts(buf, starts, ends, offsets, out):
    """The text after the tab of each DOCS line ``starts[i]:ends[i]`` (the scanner found one tab), one after the other in ``out``."""
    at = 0
    offsets[0] = 0
    for i in range(starts.shape[0]):
        k = starts[i]
        while buf[k] != 9:  # the id is short
            k += 1
        size = ends[i] - k - 1
        out[at : at + size] = buf[k + 1 : ends[i]]
        at += size
        offsets[i + 1] = at
    return at


@dataclass
class _DocsBlock:
    """One block of a DOCS file: its non-blank lines as compiled code cuts them (``text``, ``starts``, ``ends``, ``ids``),
    or, when any line is not in the scanner's form, as ``parse_doc`` reads them (``parsed``)."""

    count: int
    text: np.ndarray | None = None
    starts: np.ndarray | None = None
    ends: np.ndarray | None = None
    ids: np.ndarray | None = None
    parsed: list[tuple[str, str]] | None = None


def _docs_blocks(name: str) -> Iterator[_DocsBlock]:
    """The blocks of a DOCS file, each read by validate's DOCS scanner, a block with another line by ``parse_doc`` (which raises for a bad one)."""
    for data, first in line_blocks(name, BLOCK, PIECE):
        text = np.frombuffer(data, dtype=np.uint8)
        block = scan_docs_block(text, first)
        kept = block.verdicts != BLANK
        if not (block.verdicts[kept] == CLEAN).all():
            parsed = [parse_doc(line, name, number) for number, line in numbered_lines(data, first)]
            yield _DocsBlock(len(parsed), parsed=parsed)
            continue
        ends = np.append(block.starts[1:] - 1, len(text) - (1 if data.endswith(b"\n") else 0))
        yield _DocsBlock(int(kept.sum()), text, block.starts[kept], ends[kept], block.ids[kept])


def docs_columns(path: str | os.PathLike) -> Iterator[tuple[pa.Array, pa.Array]]:
    """``(doc ids, texts)`` of a DOCS file as Arrow string columns, a block of ~``BLOCK`` decompressed bytes at a time.

    Lines ``validate``'s DOCS scanner passes (one tab, a plain-number id, strict UTF-8)
    are cut in compiled code; a block with any other line is read ``parse_doc`` a line,
    which raises for a bad one, naming it.
    """
    for block in _docs_blocks(os.fspath(path)):
        if block.parsed is not None:
            yield pa.array([doc_id for doc_id, _ in block.parsed], pa.string()), pa.array([body for _, body in block.parsed], pa.string())
            continue
        offsets, out = np.empty(block.count + 1, np.int32), np.empty(len(block.text), np.uint8)  # a block's text fits int32
        yield _int_strings(block.ids), _strings(offsets, out, _doc_texts(block.text, block.starts, block.ends, offsets, out))


@numba.njit(cache=True)
def _json_docs(text, starts, ends, prefix, middle, out):
    """``{prefix}{id}{middle}{text as a JSON string's inside}"}`` and a newline for each DOCS line, as ``orjson.dumps`` writes them.

    orjson's string form: ``"`` and ``\\`` escaped, control characters as ``\\b \\t \\n \\f \\r``
    or lowercase ``\\u00XX``, everything else (DEL, non-ASCII) as its UTF-8 bytes.
    """
    at = 0
    for i in range(starts.shape[0]):
        for c in range(prefix.shape[0]):
            out[at] = prefix[c]
            at += 1
        tab = starts[i]
        while text[tab] != 9:
            out[at] = text[tab]
            at += 1
            tab += 1
        for c in range(middle.shape[0]):
            out[at] = middle[c]
            at += 1
        for k in range(tab + 1, ends[i]):
            c = text[k]
            if c >= 0x20 and c != 34 and c != 92:
                out[at] = c
                at += 1
                continue
            out[at] = 92  # backslash
            if c == 34 or c == 92:
                out[at + 1] = c
                at += 2
            elif c == 8 or c == 9 or c == 10 or c == 12 or c == 13:
                out[at + 1] = 98 if c == 8 else 116 if c == 9 else 110 if c == 10 else 102 if c == 12 else 114
                at += 2
            else:
                out[at + 1] = 117  # u00XX
                out[at + 2] = 48
                out[at + 3] = 48
                out[at + 4] = 48 + (c >> 4)
                low = c & 15
                out[at + 5] = 48 + low if low < 10 else 87 + low
                at += 6
        out[at] = 34
        out[at + 1] = 125
        out[at + 2] = 10
        at += 3
    return at


def docs_json_lines(path: str | os.PathLike, record: Callable[[str, str], dict]) -> Iterator[tuple[bytes, int]]:
    """``(JSON lines, documents)`` of a DOCS file, a block at a time: ``orjson.dumps(record(doc_id, text))`` a line.

    ``record`` must put the id's and then the text's value last among its keys' strings
    (``{"id": doc_id, "contents": text}``): its bytes around them are taken from orjson
    itself. Lines the DOCS scanner passes are written in compiled code; a block with
    another line goes ``parse_doc`` and ``orjson.dumps`` a line, which raise for a bad
    one as before.
    """
    name = os.fspath(path)
    prefix, rest = orjson.dumps(record("\x01", "\x02")).split(b"\\u0001")
    middle, suffix = rest.split(b"\\u0002")
    if suffix != b'"}':
        raise ValueError(f"the text must be the record's last value: {record('ID', 'TEXT')}")
    head, between = np.frombuffer(prefix, np.uint8), np.frombuffer(middle, np.uint8)
    for block in _docs_blocks(name):
        if block.parsed is not None:
            yield b"".join(orjson.dumps(record(doc_id, body)) + b"\n" for doc_id, body in block.parsed), block.count
            continue
        out = np.empty(6 * len(block.text) + block.count * (len(prefix) + len(middle) + 3), np.uint8)  # an escape is at most 6 bytes a byte
        yield out[: _json_docs(block.text, block.starts, block.ends, head, between, out)].tobytes(), block.count
