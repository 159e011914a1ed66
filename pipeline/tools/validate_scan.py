"""``validate``'s reading of a released file: whole blocks of lines checked by compiled code, md5 taken on the way.

Why by hand. The release's line form is narrow (``json.dumps`` with its defaults: ``", "``
and ``": "`` separators, keys in the order ``src_id``, ``src_query``, ``tgt_results``,
ASCII only with lowercase ``\\uXXXX`` escapes), so a scanner that accepts exactly that
grammar proves a line is in the release's bytes without building a Python object for
it: parsing each line with orjson and writing it again with ``json.dumps`` cost ~14x
reading the file (issue 53). A line the scanner accepts is, byte for byte,
``json.dumps`` of its record; any other line (another key order, spacing, escape, an id
that is not a plain number, a CRLF, a line that is not JSON) goes to the Python rules
one by one (``validate._Validator.python_query_line``), which decide as they always
did. The per-query rules (labels in range and in order, ids in order, one label 6, a
relevant document, no repeated document, the candidate count) are checked here too;
a query that breaks one is handed to the Python rules for the finding's words.

Ids are page ids in every released file; the scanner keeps those that are plain
numbers (no sign, no leading zero, at most 18 digits) as their value, and on the
Python side any other id becomes a negative key (``id_key``), so every rule across
files works on int64 arrays. For plain numbers the release's order of ids, by length
then text, is their numeric order.

DOCS lines (``doc_id<TAB>text``) are checked the same way: one tab, a plain-number id,
strict UTF-8 (Python's own rules: no overlong forms, no surrogates), no ``\\r``, a text
that is not empty once Python's ``str.strip`` has removed its whitespace.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass

import numba
import numpy as np

from clirmatrix.pipeline.output.jsonl import MalformedRecordError, line_blocks

BLOCK = 8 << 20  # decompressed bytes scanned at a time; a longer line is read whole
PIECE = 16 << 10  # decompressed bytes read at a time (a line-by-line reader's buffer is 8 KiB)

# Per-line verdicts of the scanners.
CLEAN = 0  # in the release's bytes and every per-line rule holds
BROKEN = 1  # in the release's bytes, but a per-line rule fails: the Python rules word the finding
OTHER = 2  # not the scanner's grammar: the Python rules read the line from scratch
BLANK = 3  # whitespace only: skipped, as every reader skips it

MAX_DIGITS = 18  # a plain-number id fits int64


def _python_spaces() -> np.ndarray:
    """The code points ``str.strip()`` removes (``str.isspace``), from Python itself."""
    return np.array([code for code in range(0x3001) if chr(code).isspace()], dtype=np.int64)


SPACES = _python_spaces()


@numba.njit(cache=True, inline="always")
def _hex(c):
    if 48 <= c <= 57:
        return c - 48
    if 97 <= c <= 102:
        return c - 87
    return -1  # uppercase is not json.dumps's form


@numba.njit(cache=True, inline="always")
def hex4(buf, at):
    """The value of four lowercase hex digits at ``at``, or -1."""
    code = 0
    for k in range(4):
        h = _hex(buf[at + k])
        if h < 0:
            return -1
        code = code * 16 + h
    return code


@numba.njit(cache=True)
def _string(buf, at, end):
    """End (past the closing quote) of a JSON string in json.dumps's ASCII form starting after its opening quote, or -1."""
    while at < end:
        c = buf[at]
        if c == 34:  # "
            return at + 1
        if c == 92:  # backslash
            if at + 1 >= end:
                return -1
            e = buf[at + 1]
            if e == 34 or e == 92 or e == 110 or e == 114 or e == 116 or e == 98 or e == 102:
                at += 2
                continue
            if e != 117 or at + 6 > end:  # only \uXXXX is left
                return -1
            code = hex4(buf, at + 2)
            at += 6
            if 0xD800 <= code <= 0xDBFF:  # a high surrogate: json.dumps writes a pair, high then low
                if at + 6 > end or buf[at] != 92 or buf[at + 1] != 117:
                    return -1
                if not 0xDC00 <= hex4(buf, at + 2) <= 0xDFFF:
                    return -1
                at += 6
            elif code < 0 or 0xDC00 <= code <= 0xDFFF:
                return -1  # not four lowercase hex digits, or a lone low surrogate
            elif code >= 0x20 and code != 0x7F and code < 0x80:
                return -1  # printable ASCII is written as itself
            elif code == 8 or code == 9 or code == 10 or code == 12 or code == 13:
                return -1  # these have short escapes
            continue
        if c < 0x20 or c >= 0x7F:
            return -1  # json.dumps escapes control characters, DEL and everything past ASCII
        at += 1
    return -1


@numba.njit(cache=True)
def _number_id(buf, at, end):
    """(value, end past the closing quote) of a quoted plain-number id starting after its opening quote, or (-1, -1)."""
    start = at
    value = 0
    while at < end and 48 <= buf[at] <= 57:
        value = value * 10 + (buf[at] - 48)
        at += 1
    digits = at - start
    if digits == 0 or digits > MAX_DIGITS or (digits > 1 and buf[start] == 48) or at >= end or buf[at] != 34:
        return -1, -1
    return value, at + 1


@numba.njit(cache=True)
def _literal(buf, at, end, text):
    if at + len(text) > end:
        return -1
    for k in range(len(text)):
        if buf[at + k] != text[k]:
            return -1
    return at + len(text)


@numba.njit(cache=True, inline="always")
def _line_end(buf, start):
    """Where the line starting at ``start`` ends: its newline, or the end of ``buf``."""
    stop = start
    while stop < buf.shape[0] and buf[stop] != 10:
        stop += 1
    return stop


@numba.njit(cache=True)
def _blank(buf, start, end):
    for at in range(start, end):
        c = buf[at]
        if not (c == 32 or 9 <= c <= 13):
            return False
    return True


@numba.njit(cache=True)
def scan_queries(buf, head, middle, results, rules, lowest, candidates, id_order, line_starts, verdicts, src_ids, pair_offsets, doc_ids, labels, seen, queries):
    """Check every line of ``buf`` (whole lines); see the module's docstring.

    ``head``/``middle``/``results`` are the literal bytes around the values; ``rules``
    whether to check the per-query rules (else every line in the form is CLEAN); ``lowest``
    the least label (1 in full files, 0 elsewhere), ``candidates`` the documents a query
    must have (-1: any), ``id_order`` whether equal labels must list ids in order (our
    builds). Fills, per line: its start, verdict and src_id, and the first of its pairs
    in ``doc_ids``/``labels`` (``pair_offsets``, one more than the lines), and where its
    src_query's escaped text starts and ends (``queries``, two columns; what export decodes).
    ``seen`` is scratch (a stamp table for repeated documents). Returns the number of lines.
    """
    n = 0
    pairs = 0
    start = 0
    size = buf.shape[0]
    mask = seen.shape[0] - 1
    while start < size:
        stop = _line_end(buf, start)
        line_starts[n] = start
        pair_offsets[n] = pairs
        src_ids[n] = -1
        verdict = OTHER
        if _blank(buf, start, stop):
            verdict = BLANK
        else:
            at = _literal(buf, start, stop, head)
            src = -1
            if at >= 0:
                src, at = _number_id(buf, at, stop)
            if at >= 0:
                at = _literal(buf, at, stop, middle)
            queries[n, 0] = at
            if at >= 0:
                at = _string(buf, at, stop)
            queries[n, 1] = at - 1
            if at >= 0:
                at = _literal(buf, at, stop, results)
            first = pairs
            if at >= 0 and at < stop and buf[at] == 93:  # ] : no results
                at += 1
            else:
                while at >= 0:
                    if at + 2 > stop or buf[at] != 91 or buf[at + 1] != 34:  # ["
                        at = -1
                        break
                    doc, at = _number_id(buf, at + 2, stop)
                    if at < 0 or at + 2 > stop or buf[at] != 44 or buf[at + 1] != 32:  # ", "
                        at = -1
                        break
                    at += 2
                    negative = at < stop and buf[at] == 45
                    if negative:
                        at += 1
                    digits = 0
                    label = 0
                    while at < stop and 48 <= buf[at] <= 57 and digits < MAX_DIGITS:
                        label = label * 10 + (buf[at] - 48)
                        at += 1
                        digits += 1
                    if digits == 0 or (digits > 1 and buf[at - digits] == 48) or (at < stop and 48 <= buf[at] <= 57) or (negative and label == 0):
                        at = -1  # not json.dumps's integer (or too long to be a label worth reading here)
                        break
                    if at >= stop or buf[at] != 93:
                        at = -1
                        break
                    doc_ids[pairs] = doc
                    labels[pairs] = -label if negative else label
                    pairs += 1
                    at += 1
                    if at + 2 <= stop and buf[at] == 44 and buf[at + 1] == 32:
                        at += 2
                        continue
                    if at < stop and buf[at] == 93:
                        at += 1
                        break
                    at = -1
            if at >= 0 and at + 1 == stop and buf[at] == 125:  # }
                src_ids[n] = src
                verdict = CLEAN if not rules else _query_rules(doc_ids, labels, first, pairs, lowest, candidates, id_order, seen, mask, n + 1)
            else:
                pairs = first
        verdicts[n] = verdict
        n += 1
        start = stop + 1
    pair_offsets[n] = pairs
    return n


@numba.njit(cache=True)
def _query_rules(doc_ids, labels, first, last, lowest, candidates, id_order, seen, mask, stamp):
    """CLEAN when every per-query rule holds for pairs [first, last), else BROKEN."""
    count = last - first
    if candidates >= 0 and count != candidates:
        return BROKEN
    sixes = 0
    relevant = False
    for i in range(first, last):
        label = labels[i]
        if label < lowest or label > 6:
            return BROKEN
        if label == 6:
            sixes += 1
        if label >= 1:
            relevant = True
        if i > first:
            if label > labels[i - 1]:
                return BROKEN
            if id_order and label == labels[i - 1] and doc_ids[i] < doc_ids[i - 1]:
                return BROKEN
    if sixes > 1 or not relevant:
        return BROKEN
    # No document twice: a stamp table the size of a power of two past twice the pairs.
    if 2 * count > mask:
        return BROKEN if _repeats_sorted(doc_ids[first:last]) else CLEAN
    for i in range(first, last):
        slot = np.int64((np.uint64(doc_ids[i]) * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(40)) & mask
        while seen[slot, 0] == stamp:
            if seen[slot, 1] == doc_ids[i]:
                return BROKEN
            slot = (slot + 1) & mask
        seen[slot, 0] = stamp
        seen[slot, 1] = doc_ids[i]
    return CLEAN


@numba.njit(cache=True)
def _repeats_sorted(ids):
    ordered = np.sort(ids)
    for i in range(1, ordered.shape[0]):
        if ordered[i] == ordered[i - 1]:
            return True
    return False


@numba.njit(cache=True, inline="always")
def _utf8_end(buf, at, end):
    """(code point, next offset) of the UTF-8 sequence at ``at`` under Python's strict decoder, or (-1, -1)."""
    c = buf[at]
    if c < 0x80:
        return c, at + 1
    if 0xC2 <= c <= 0xDF:
        need, code, low, high = 1, c & 0x1F, 0x80, 0xBF
    elif 0xE0 <= c <= 0xEF:
        need, code = 2, c & 0x0F
        low, high = (0xA0, 0xBF) if c == 0xE0 else (0x80, 0x9F) if c == 0xED else (0x80, 0xBF)
    elif 0xF0 <= c <= 0xF4:
        need, code = 3, c & 0x07
        low, high = (0x90, 0xBF) if c == 0xF0 else (0x80, 0x8F) if c == 0xF4 else (0x80, 0xBF)
    else:
        return -1, -1
    for k in range(1, need + 1):
        if at + k >= end:
            return -1, -1
        b = buf[at + k]
        if k == 1:
            if b < low or b > high:
                return -1, -1
        elif b < 0x80 or b > 0xBF:
            return -1, -1
        code = code << 6 | (b & 0x3F)
    return code, at + need + 1


@numba.njit(cache=True)
def scan_docs(buf, spaces, line_starts, verdicts, doc_ids):
    """Check every DOCS line of ``buf`` (whole lines); fills each line's start, verdict and doc id (-1 unless a plain number)."""
    n = 0
    start = 0
    size = buf.shape[0]
    while start < size:
        stop = _line_end(buf, start)
        line_starts[n] = start
        doc_ids[n] = -1
        verdict = OTHER
        if _blank(buf, start, stop):
            verdict = BLANK
        else:
            tab = start
            while tab < stop and buf[tab] != 9:
                tab += 1
            doc, after = _number_id_until_tab(buf, start, tab)
            if doc >= 0 and tab < stop:
                verdict = CLEAN
                doc_ids[n] = doc
                filled = False
                at = tab + 1
                while at < stop:
                    c = buf[at]
                    if c == 9 or c == 13:
                        verdict = BROKEN  # a second tab (the Python rules word it), or a carriage return
                        break
                    if c < 0x80:  # ASCII, most of most texts: no decoding
                        at += 1
                        if not filled and not (9 <= c <= 13 or 28 <= c <= 32):  # not whitespace to str.strip
                            filled = True
                        continue
                    code, at = _utf8_end(buf, at, stop)
                    if code < 0:
                        verdict = BROKEN
                        break
                    if not filled:
                        k = np.searchsorted(spaces, code)
                        filled = not (k < spaces.shape[0] and spaces[k] == code)
                if verdict == CLEAN and not filled:
                    verdict = BROKEN  # empty once stripped
        verdicts[n] = verdict
        n += 1
        start = stop + 1
    return n


@numba.njit(cache=True)
def _number_id_until_tab(buf, start, tab):
    value = 0
    digits = tab - start
    if digits == 0 or digits > MAX_DIGITS or (digits > 1 and buf[start] == 48):
        return -1, -1
    for at in range(start, tab):
        c = buf[at]
        if not 48 <= c <= 57:
            return -1, -1
        value = value * 10 + (c - 48)
    return value, tab


HEAD = np.frombuffer(b'{"src_id": "', dtype=np.uint8)
MIDDLE = np.frombuffer(b', "src_query": "', dtype=np.uint8)
RESULTS = np.frombuffer(b', "tgt_results": [', dtype=np.uint8)


def id_key(text: str) -> int:
    """An id's int64 key: its value when a plain number (the scanner's), else a negative 62-bit hash of its text."""
    if text.isascii() and text.isdigit() and len(text) <= MAX_DIGITS and (len(text) == 1 or text[0] != "0"):
        return int(text)
    return -1 - int.from_bytes(hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "little") % (1 << 62)


@dataclass
class Block:
    """The lines of one block as scanned: ``text`` holds them, line ``i`` starting at ``starts[i]`` (numbered from ``first_line``)."""

    text: np.ndarray
    first_line: int
    starts: np.ndarray
    verdicts: np.ndarray
    ids: np.ndarray  # src_id (query files) or doc_id (DOCS) per line; -1 unless the scanner read a plain number
    pair_offsets: np.ndarray | None = None
    doc_ids: np.ndarray | None = None
    labels: np.ndarray | None = None
    queries: np.ndarray | None = None  # per query line: where its src_query's escaped text starts and ends (its closing quote)

    def __len__(self) -> int:
        return len(self.starts)

    def line(self, i: int) -> bytes:
        """Line ``i`` without its newline."""
        last = i + 1 == len(self.starts)
        data = self.text[int(self.starts[i]) : len(self.text) if last else int(self.starts[i + 1]) - 1].tobytes()
        return data[:-1] if last and data.endswith(b"\n") else data


class _HashingReader:
    """The raw file as igzip reads it, each byte through md5 on its way."""

    def __init__(self, handle) -> None:
        self.handle = handle
        self.md5 = hashlib.md5()
        self.size = 0

    def read(self, size: int = -1) -> bytes:
        data = self.handle.read(size)
        self.md5.update(data)
        self.size += len(data)
        return data

    def readinto(self, buffer) -> int:
        count = self.handle.readinto(buffer)
        self.md5.update(memoryview(buffer)[:count])
        self.size += count
        return count

    def finish(self) -> tuple[str, int]:
        """Read what decompression left (after a damaged stream) and return the md5 and size of the whole file."""
        while self.read(1 << 20):
            pass
        return self.md5.hexdigest(), self.size


@dataclass
class Reading:
    """The md5 and size of the file read, set once its blocks are consumed; ``error`` is the damaged stream's, with the 1-based line it broke at."""

    md5: str = ""
    size: int = 0
    error: str = ""
    error_line: int = 0


def read_blocks(path: str, reading: Reading) -> Iterator[tuple[np.ndarray, int]]:
    """``(block of whole lines, number of its first line)`` of a gzip file (``jsonl.line_blocks``: ~``BLOCK`` bytes, ``PIECE`` a read); ``reading`` gets its md5, size and any stream error.

    A URL (``s3://``, ``gs://``) is read through Beam's FileSystems (``fileio.open_raw``), imported only then.
    """
    if "://" in path:
        from clirmatrix.pipeline.io.fileio import open_raw

        source = open_raw(path)
    else:
        source = open(path, "rb")
    with source as raw:
        hashing = _HashingReader(raw)
        try:
            for data, first in line_blocks(path, BLOCK, PIECE, hashing):
                yield np.frombuffer(data, dtype=np.uint8), first
        except MalformedRecordError as error:  # a damaged stream: the whole lines before it were read
            reading.error, reading.error_line = error.reason, error.line
        reading.md5, reading.size = hashing.finish()


def query_blocks(path: str, reading: Reading, lowest: int, candidates: int, id_order: bool) -> Iterator[Block]:
    """The scanned blocks of a query file (see ``scan_queries``)."""
    seen = np.zeros((512, 2), dtype=np.int64)
    for text, first in read_blocks(path, reading):
        yield scan_query_block(text, first, lowest, candidates, id_order, seen)


def scan_query_block(text: np.ndarray, first: int, lowest: int = 0, candidates: int = -1, id_order: bool = False, seen: np.ndarray | None = None) -> Block:
    """One block of whole query lines scanned (``scan_queries``); without ``seen`` (the rules' scratch), no per-query rule is checked."""
    lines = int(np.count_nonzero(text == 10)) + 1
    pairs_bound = int(np.count_nonzero(text == 91)) + 1
    starts, verdicts, ids = np.empty(lines, np.int64), np.empty(lines, np.int8), np.empty(lines, np.int64)
    offsets, doc_ids, labels = np.empty(lines + 1, np.int64), np.empty(pairs_bound, np.int64), np.empty(pairs_bound, np.int64)
    queries = np.empty((lines, 2), np.int64)
    rules = seen is not None
    if seen is None:
        seen = np.zeros((1, 2), dtype=np.int64)
    seen[:, 0] = -1  # the stamps are line numbers within a block: cleared between blocks
    n = scan_queries(text, HEAD, MIDDLE, RESULTS, rules, lowest, candidates, id_order, starts, verdicts, ids, offsets, doc_ids, labels, seen, queries)
    return Block(text, first, starts[:n], verdicts[:n], ids[:n], offsets[: n + 1], doc_ids[: offsets[n]], labels[: offsets[n]], queries[:n])


def docs_blocks(path: str, reading: Reading) -> Iterator[Block]:
    """The scanned blocks of a DOCS file (see ``scan_docs``)."""
    for text, first in read_blocks(path, reading):
        yield scan_docs_block(text, first)


def scan_docs_block(text: np.ndarray, first: int) -> Block:
    """One block of whole DOCS lines scanned (``scan_docs``)."""
    lines = int(np.count_nonzero(text == 10)) + 1
    starts, verdicts, ids = np.empty(lines, np.int64), np.empty(lines, np.int8), np.empty(lines, np.int64)
    n = scan_docs(text, SPACES, starts, verdicts, ids)
    return Block(text, first, starts[:n], verdicts[:n], ids[:n])

