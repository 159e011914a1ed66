"""The truncation rule of ``truncate.py`` over a whole Arrow column, in compiled code.

``truncate.truncate`` is the readable definition, one Python string at a time. The
docs job truncates every article it extracts, and there that definition cost as
much CPU as inflating the dump (11 us a document, mostly a Python split into 200
token objects). This kernel walks the column's UTF-8 bytes once per batch instead
(~3 us a document, copying the kept bytes included) and gives the same strings:
the same whitespace (Python's ``str.isspace``), the same sentence ends, the same
strip; a test compares the two on generated texts in every script the rule knows.
"""

from __future__ import annotations

import numba
import numpy as np
import pyarrow as pa

from clirmatrix.pipeline.method.truncate import CLOSERS, STOPS_ANYWHERE, STOPS_BEFORE_SPACE, TruncationRule

# Code points Python's str.isspace() (and so str.split() and str.strip()) treats as
# whitespace; a test checks this list against every code point.
_SPACES = (0x85, 0xA0, 0x1680, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000)
# truncate's sentence ends: a stop that must be followed (after any closers) by
# whitespace (kind 1), and the full-width CJK stops that need none (kind 2).
_STOPS_BEFORE_SPACE = tuple(ord(c) for c in STOPS_BEFORE_SPACE)
_STOPS_ANYWHERE = tuple(ord(c) for c in STOPS_ANYWHERE)
_CLOSERS = tuple(ord(c) for c in CLOSERS)
# Per byte: 1 for ASCII whitespace, 0 for any other ASCII, 2 for a byte of a longer
# code point (decoded before it is classed).
_NOT_ASCII = 2
_BYTE_CLASS = np.array([int(chr(b).isspace()) if b < 0x80 else _NOT_ASCII for b in range(256)], np.int64)
# ASCII fast paths of _is_stop and _is_closer, from the same sets.
_ASCII_STOP = np.array([1 if chr(b) in STOPS_BEFORE_SPACE else 2 if chr(b) in STOPS_ANYWHERE else 0 for b in range(0x80)], np.int64)
_ASCII_CLOSER = np.array([chr(b) in CLOSERS for b in range(0x80)], np.bool_)


@numba.njit(nogil=True, cache=True)
def _decode(data, i):
    """The code point starting at byte ``i`` of valid UTF-8, and the offset after it."""
    b0 = data[i]
    if b0 < 0x80:
        return np.int64(b0), i + 1
    if b0 < 0xE0:
        return np.int64(((b0 & 0x1F) << 6) | (data[i + 1] & 0x3F)), i + 2
    if b0 < 0xF0:
        return np.int64(((b0 & 0x0F) << 12) | ((data[i + 1] & 0x3F) << 6) | (data[i + 2] & 0x3F)), i + 3
    return np.int64(((b0 & 0x07) << 18) | ((data[i + 1] & 0x3F) << 12) | ((data[i + 2] & 0x3F) << 6) | (data[i + 3] & 0x3F)), i + 4


@numba.njit(nogil=True, cache=True)
def _code_point_start(data, i):
    """The first byte of the code point that byte ``i`` belongs to (UTF-8 continuation bytes are 10xxxxxx)."""
    while data[i] & 0xC0 == 0x80:
        i -= 1
    return i


@numba.njit(nogil=True, cache=True)
def _one_of(cp, points):
    for point in points:
        if cp == point:
            return True
    return False


@numba.njit(nogil=True, cache=True)
def _is_space(cp):
    if cp < 0x80:
        return _BYTE_CLASS[cp] == 1
    return 0x2000 <= cp <= 0x200A or _one_of(cp, _SPACES)


@numba.njit(nogil=True, cache=True)
def _skip_spaces(data, i, stop):
    """The offset of the first non-whitespace code point at or after ``i`` (or ``stop``)."""
    while i < stop:
        cp, after = _decode(data, i)
        if not _is_space(cp):
            break
        i = after
    return i


@numba.njit(nogil=True, cache=True)
def _limit_end(data, start, stop, by_chars, limit):
    """Byte offset of the hard limit (``stop`` when the text is within it), as truncate._limit_end."""
    i = start
    if by_chars:
        i = _skip_spaces(data, start, stop)
        kept = 0
        while i < stop and kept < limit:
            i = _decode(data, i)[1]
            kept += 1
        return i
    # Branch-free on ASCII: a branch per token boundary would mispredict half the time.
    tokens = 0
    after_space = 1
    while i < stop:
        space = _BYTE_CLASS[data[i]]
        after = i + 1
        if space == _NOT_ASCII:
            cp, after = _decode(data, i)
            space = 1 if _is_space(cp) else 0
        tokens += after_space & (1 - space)
        if tokens > limit:
            return i  # the first token past the limit starts here
        after_space = space
        i = after
    return stop


@numba.njit(nogil=True, cache=True)
def _is_stop(cp):
    """0: no sentence end; 1: one that needs whitespace after its closers; 2: one that does not."""
    if cp < 0x80:
        return _ASCII_STOP[cp]
    if _one_of(cp, _STOPS_BEFORE_SPACE):
        return 1
    return 2 if _one_of(cp, _STOPS_ANYWHERE) else 0


@numba.njit(nogil=True, cache=True)
def _is_closer(cp):
    if cp < 0x80:
        return _ASCII_CLOSER[cp]
    return _one_of(cp, _CLOSERS)


@numba.njit(nogil=True, cache=True)
def _last_sentence_end(data, start, end, space_at_end):
    """Offset just past the last sentence end inside ``[start, end)``, or -1.

    Scans back from ``end`` (the last end is usually a few words away), like the
    backtracking of truncate's greedy regex.
    """
    p = end
    while p > start:
        p = _code_point_start(data, p - 1)
        cp, j = _decode(data, p)
        kind = _is_stop(cp)
        if kind == 0:
            continue
        while j < end:
            closer, after = _decode(data, j)
            if not _is_closer(closer):
                break
            j = after
        if kind == 2:
            return j
        if (j < end and _is_space(_decode(data, j)[0])) or (j == end and space_at_end):
            return j
    return -1


@numba.njit(nogil=True, cache=True)
def _strip(data, start, stop):
    """``[start, stop)`` without leading and trailing whitespace."""
    start = _skip_spaces(data, start, stop)
    while stop > start:
        lead = _code_point_start(data, stop - 1)
        if not _is_space(_decode(data, lead)[0]):
            break
        stop = lead
    return start, stop


@numba.njit(nogil=True, cache=True)
def _truncate_all(offsets, data, by_chars, limit):
    """Offsets and bytes of every truncated text of a string column."""
    n = offsets.shape[0] - 1
    starts = np.empty(n, np.int64)
    stops = np.empty(n, np.int64)
    total = 0
    for row in range(n):
        start, stop = np.int64(offsets[row]), np.int64(offsets[row + 1])
        end = _limit_end(data, start, stop, by_chars, limit)
        if end < stop:
            # As truncate(): a stop right at the limit counts when the text goes on with a space.
            cut = _last_sentence_end(data, start, end, _is_space(_decode(data, end)[0]))
            stop = cut if cut >= 0 else end
        starts[row], stops[row] = _strip(data, start, stop)
        total += stops[row] - starts[row]
    out_offsets = np.empty(n + 1, np.int32)
    out_data = np.empty(total, np.uint8)
    out_offsets[0] = 0
    position = 0
    for row in range(n):
        length = stops[row] - starts[row]
        out_data[position : position + length] = data[starts[row] : stops[row]]
        position += length
        out_offsets[row + 1] = position
    return out_offsets, out_data


def truncate_array(texts: pa.Array, rule: TruncationRule) -> pa.Array:
    """Every text of a non-null ``string`` array truncated by ``rule``, as ``truncate`` would."""
    if texts.type != pa.string():
        raise TypeError(f"truncate_array needs a string array, got {texts.type}")
    if texts.null_count:
        raise ValueError("truncate_array: texts must not be null")
    _, offsets_buffer, data_buffer = texts.buffers()
    offsets = np.frombuffer(offsets_buffer, np.int32)[texts.offset : texts.offset + len(texts) + 1]
    data = np.frombuffer(data_buffer, np.uint8) if data_buffer is not None else np.zeros(0, np.uint8)
    out_offsets, out_data = _truncate_all(offsets, data, rule.by_chars, rule.limit)
    return pa.Array.from_buffers(pa.string(), len(texts), [None, pa.py_buffer(out_offsets), pa.py_buffer(out_data)])
