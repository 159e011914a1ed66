"""The released files: BI-139 base and full, DOCS and DOCS-FULL, and the index (docs/method.md sections 7 and 9).

Units of work, each bounded by a block of queries or a stream of documents:

- ``write_direction``: one BI-139 direction X -> Y, its full and base files of the
  four splits. It streams X's blocks of propagated labels in query order and holds
  only numbers per document besides one block: each of X's queries' priority and
  key (``splits.write_query_splits``), the direction's eval sets
  (``splits.write_eval_picks``), every eval key of the build, Y's page ids, and the
  direction's queries.
- ``write_docs``: ``DOCS/{lang}.tsv.gz`` and ``DOCS-FULL/{lang}.tsv.gz``, streamed.
- ``write_index``: ``downloads.json.gz`` from what the units reported.

MULTI-8 is ``clirmatrix.pipeline.output.multi8``. Nothing is done a line or a result at a
time in Python (issue 36: the stage was 7x its floor, compressing what it writes):
a block's results are put in release order in one compiled pass
(``in_release_order``), base's label-0 filler is drawn for all its queries at once
(``base_fill``: numpy's own ``Generator.choice`` algorithm on the same generator), and
each file's lines of a block are rendered into one buffer (``render_lines``: the bytes
of ``writers.query_line``, the plain reference), which ``writers.SortedLines`` orders by
src_id. ``bench/write_bench.py`` measures it against its floor.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numba
import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc
from numba.np.random.generator_core import next_uint32
from numba.np.random.random_methods import bounded_lemire_uint64, buffered_bounded_lemire_uint32

from clirmatrix.pipeline.errors import InvalidInputError
from clirmatrix.pipeline.io import fileio
from clirmatrix.pipeline.io.fileio import atomic_create
from clirmatrix.pipeline.io.parquet_io import read_table
from clirmatrix.pipeline.method.corpus import WorkDirs, catalog_numbers, iter_docs, read_catalog
from clirmatrix.pipeline.method.languages import MULTI8_LANGUAGES
from clirmatrix.pipeline.method.splits import NOT_CHOSEN, SplitSettings, direction_runs, direction_splits, read_eval_keys, runs_queries, seeded_rng
from clirmatrix.pipeline.output import layout
from clirmatrix.pipeline.output.gzip_encoder import ENCODER, gzip_bytes
from clirmatrix.pipeline.output.writers import GzipLines, Lines, SortedLines, WrittenFile, docs_text, gzip_lines
from clirmatrix.schemas import EVAL_PICKS, PROPAGATED, QUERY_SPLITS
from clirmatrix.schemas.contracts import FilesReport, LanguagePlan


@dataclass(frozen=True)
class ReleaseSettings:
    """Splits, MULTI-8 languages, candidates per query, and the URL prefix written into the index."""

    splits: SplitSettings = field(default_factory=SplitSettings)
    multi_langs: tuple[str, ...] = MULTI8_LANGUAGES
    candidates: int = layout.BASE_CANDIDATES
    base_url: str = ""
    gzip: dict = field(default_factory=lambda: dict(ENCODER))  # the driver's encoder: every worker must write with the same

    def fingerprint_parts(self) -> dict:
        """Every setting, the gzip encoder among them: another encoder (or version) writes other bytes, so the files are written again."""
        return asdict(self)

    def check_encoder(self) -> None:
        """``EncoderMismatchError`` on a worker whose gzip encoder is not the driver's (a cluster's own zlib-ng): its files would hold other bytes."""
        if self.gzip != ENCODER:
            raise EncoderMismatchError(
                f"this worker's gzip encoder is {ENCODER}, the build's (its driver's) is {self.gzip}: the release's bytes would depend on"
                f" the worker; install zlib-ng=={self.gzip.get('package')} on every worker (pyproject.toml pins it)"
            )


class EncoderMismatchError(InvalidInputError):
    """A worker would write the release with another gzip encoder than the build's."""


# --- rendering ------------------------------------------------------------------------------------
#
# A query line is the bytes of ``writers.query_line`` (Python's ``json.dumps``), rendered for a
# whole block of queries in two compiled passes (lengths, then bytes) into one buffer: no Python
# object per line or per result. Hand-written because no library renders this exact JSON
# (``json.dumps`` spacing, non-ASCII as ``\uXXXX``) from columns.

_OPEN = np.frombuffer(b'{"src_id": "', dtype=np.uint8)
_QUERY = np.frombuffer(b'", "src_query": ', dtype=np.uint8)
_RESULTS = np.frombuffer(b', "tgt_results": ', dtype=np.uint8)
_HEX = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)
_TWO_DIGITS = np.frombuffer(b"".join(b"%02d" % n for n in range(100)), dtype=np.uint8)  # "00".."99"
_SHORT_ESCAPES = np.zeros(128, dtype=np.uint8)  # the letter of json's two-character escapes, by byte
for _byte, _letter in ((0x22, b'"'), (0x5C, b"\\"), (0x08, b"b"), (0x0C, b"f"), (0x0A, b"n"), (0x0D, b"r"), (0x09, b"t")):
    _SHORT_ESCAPES[_byte] = _letter[0]


# Offsets and digits are unsigned throughout: numba wraps negative indices, and checking for them
# cost the loop 3x. (Mixing uint64 with int64 in numba gives float64, hence the casts.)
_U0, _U1, _U2, _U3, _U4, _U5, _U6, _U10, _U100 = (np.uint64(n) for n in (0, 1, 2, 3, 4, 5, 6, 10, 100))


@numba.njit(cache=True, inline="always")
def _digits(value):
    """Decimal digits of a number (uint64): a ladder of comparisons up to 8 digits (page ids have 1 to 8), then a loop."""
    if value < np.uint64(100000000):
        if value < np.uint64(10000):
            if value < _U100:
                return _U1 if value < _U10 else _U2
            return _U3 if value < np.uint64(1000) else _U4
        if value < np.uint64(1000000):
            return _U5 if value < np.uint64(100000) else _U6
        return np.uint64(7) if value < np.uint64(10000000) else np.uint64(8)
    n = np.uint64(8)
    while value >= np.uint64(100000000):
        value //= _U10
        n += _U1
    return n


@numba.njit(cache=True, inline="always")
def _put_number(value, out, at, two_digits):
    """The decimal digits of ``value`` (uint64) at ``out[at]``; returns the end."""
    end = at + _digits(value)
    at = end
    while value >= _U100:
        pair = _U2 * (value % _U100)
        value //= _U100
        out[at - _U2] = two_digits[pair]
        out[at - _U1] = two_digits[pair + _U1]
        at -= _U2
    if value >= _U10:
        out[at - _U2] = two_digits[_U2 * value]
        out[at - _U1] = two_digits[_U2 * value + _U1]
    else:
        out[at - _U1] = np.uint8(48) + np.uint8(value)
    return end


@numba.njit(cache=True, inline="always")
def _put_unit(unit, out, at, hex_digits):
    """``\\uXXXX`` (lowercase hex, as json.dumps) of a UTF-16 code unit (uint64)."""
    out[at] = 92  # \
    out[at + _U1] = 117  # u
    out[at + _U2] = hex_digits[(unit >> np.uint64(12)) & np.uint64(15)]
    out[at + _U3] = hex_digits[(unit >> np.uint64(8)) & np.uint64(15)]
    out[at + _U4] = hex_digits[(unit >> np.uint64(4)) & np.uint64(15)]
    out[at + _U5] = hex_digits[unit & np.uint64(15)]
    return at + _U6


@numba.njit(cache=True)
def _put_string(data, start, end, out, at, short, hex_digits):
    """The UTF-8 text ``data[start:end]`` as a JSON string as ``json.dumps`` writes it: quoted, ASCII only."""
    out[at] = 34  # "
    at += _U1
    i = start
    while i < end:
        b = np.uint64(data[i])
        if b < np.uint64(0x80):
            if np.uint64(0x20) <= b < np.uint64(0x7F) and short[b] == 0:
                out[at] = np.uint8(b)
                at += _U1
            elif short[b]:
                out[at] = 92
                out[at + _U1] = short[b]
                at += _U2
            else:
                at = _put_unit(b, out, at, hex_digits)
            i += _U1
            continue
        if b < np.uint64(0xE0):
            c, i = ((b & np.uint64(0x1F)) << _U6) | (np.uint64(data[i + _U1]) & np.uint64(0x3F)), i + _U2
        elif b < np.uint64(0xF0):
            c, i = ((b & np.uint64(0x0F)) << np.uint64(12)) | ((np.uint64(data[i + _U1]) & np.uint64(0x3F)) << _U6) | (np.uint64(data[i + _U2]) & np.uint64(0x3F)), i + _U3
        else:
            c = ((b & np.uint64(0x07)) << np.uint64(18)) | ((np.uint64(data[i + _U1]) & np.uint64(0x3F)) << np.uint64(12))
            c |= ((np.uint64(data[i + _U2]) & np.uint64(0x3F)) << _U6) | (np.uint64(data[i + _U3]) & np.uint64(0x3F))
            i += _U4
        if c >= np.uint64(0x10000):  # a UTF-16 surrogate pair, as json.dumps writes it
            c -= np.uint64(0x10000)
            at = _put_unit(np.uint64(0xD800) | (c >> np.uint64(10)), out, at, hex_digits)
            at = _put_unit(np.uint64(0xDC00) | (c & np.uint64(0x3FF)), out, at, hex_digits)
        else:
            at = _put_unit(c, out, at, hex_digits)
    out[at] = 34
    return at + _U1


@numba.njit(cache=True, inline="always")
def _put_bytes(part, out, at):
    for i in range(part.shape[0]):
        out[at + np.uint64(i)] = part[i]
    return at + np.uint64(part.shape[0])


@numba.njit(cache=True)
def _put_lines(order, src_ids, title_data, title_starts, row_starts, row_counts, ids, labels, fill_starts, fill_counts, fill_ids, out, ends, opening, query, results, short, hex_digits, two_digits):
    at = _U0
    for i in range(order.shape[0]):
        q = order[i]
        at = _put_bytes(opening, out, at)
        if src_ids[q] < 0:
            out[at] = 45  # -
            at = _put_number(np.uint64(-src_ids[q]), out, at + _U1, two_digits)
        else:
            at = _put_number(np.uint64(src_ids[q]), out, at, two_digits)
        at = _put_bytes(query, out, at)
        at = _put_string(title_data, np.uint64(title_starts[q]), np.uint64(title_starts[q + 1]), out, at, short, hex_digits)
        at = _put_bytes(results, out, at)
        out[at] = 91  # [
        at += _U1
        rows, start, fill_start = np.uint64(row_counts[q]), np.uint64(row_starts[q]), np.uint64(fill_starts[q])
        pairs = rows + np.uint64(fill_counts[q])
        for pair_index in range(_U0, pairs):
            # ["id", label], : written out here, not called: numba's inlining left this loop at 2x the time.
            if pair_index < rows:
                if ids[start + pair_index] < 0 or not 0 <= labels[start + pair_index] <= 9:
                    return -1
                value, label = np.uint64(ids[start + pair_index]), np.uint8(labels[start + pair_index])
            else:
                if fill_ids[fill_start + pair_index - rows] < 0:
                    return -1
                value, label = np.uint64(fill_ids[fill_start + pair_index - rows]), np.uint8(0)
            out[at] = 91  # [
            out[at + _U1] = 34  # "
            end = at + _U2 + _digits(value)
            at = end
            while value >= _U100:
                pair = _U2 * (value % _U100)
                value //= _U100
                out[at - _U2] = two_digits[pair]
                out[at - _U1] = two_digits[pair + _U1]
                at -= _U2
            if value >= _U10:
                out[at - _U2] = two_digits[_U2 * value]
                out[at - _U1] = two_digits[_U2 * value + _U1]
            else:
                out[at - _U1] = np.uint8(48) + np.uint8(value)
            out[end] = 34
            out[end + _U1] = 44  # ,
            out[end + _U2] = 32
            out[end + _U3] = np.uint8(48) + label
            out[end + _U4] = 93  # ]
            out[end + _U5] = 44
            out[end + _U6] = 32
            at = end + np.uint64(7)
        if pairs:
            at -= _U2  # the last ", "
        out[at] = 93  # ]
        out[at + _U1] = 125  # }
        out[at + _U2] = 10
        at += _U3
        ends[i] = at
    return np.int64(at)


@numba.njit(cache=True)
def _upper_bound(order, title_starts, row_counts, fill_counts, fixed, pair_bytes):
    """Bytes enough for the lines: 20 a src_id, 6 a title byte (``\\u00XX``), ``pair_bytes`` a result."""
    n = 0
    for q in order:
        n += fixed + 20 + 6 * (title_starts[q + 1] - title_starts[q]) + pair_bytes * (row_counts[q] + fill_counts[q])
    return n


@dataclass(frozen=True)
class QueryText:
    """The queries of a block as the lines need them: page id, and title as UTF-8 bytes (query ``j``'s at ``data[starts[j]:starts[j + 1]]``)."""

    src_ids: np.ndarray
    data: np.ndarray
    starts: np.ndarray

    @classmethod
    def from_arrow(cls, src_ids: np.ndarray, titles: pa.Array | pa.ChunkedArray) -> QueryText:
        """From page ids and an Arrow string column of titles (one per query, same order)."""
        if isinstance(titles, pa.ChunkedArray):
            titles = titles.combine_chunks() if titles.num_chunks else pa.array([], pa.string())
        if titles.null_count:
            raise ValueError("a query has no title")
        width = 8 if pa.types.is_large_string(titles.type) else 4
        _, offsets, data = titles.buffers()
        starts = np.frombuffer(offsets, dtype=np.int64 if width == 8 else np.int32, count=len(titles) + 1, offset=titles.offset * width).astype(np.int64)
        text = np.frombuffer(data, dtype=np.uint8) if data is not None else np.zeros(0, np.uint8)
        return cls(np.ascontiguousarray(src_ids, dtype=np.int64), text, starts)

    @classmethod
    def from_strings(cls, src_ids: Sequence[int] | np.ndarray, titles: Sequence[str]) -> QueryText:
        """From page ids and Python strings (MULTI-8's few queries, tests)."""
        return cls.from_arrow(np.asarray(src_ids, dtype=np.int64), pa.array(list(titles), pa.string()))


@dataclass(frozen=True)
class Results:
    """Each query's results in release order.

    Query ``j``'s are ``row_counts[j]`` rows from ``row_starts[j]`` of (``ids``, ``labels``),
    then ``fill_counts[j]`` label-0 documents from ``fill_starts[j]`` of ``fill_ids``.
    """

    ids: np.ndarray
    labels: np.ndarray
    row_starts: np.ndarray
    row_counts: np.ndarray
    fill_ids: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    fill_starts: np.ndarray | None = None
    fill_counts: np.ndarray | None = None


def render_lines(queries: QueryText, results: Results, order: np.ndarray) -> Lines:
    """The query lines of the queries at ``order`` (indices into ``queries`` and ``results``), in that order.

    The bytes of ``writers.query_line`` for each, newline-terminated, in one buffer.
    """
    n = len(queries.src_ids)
    no_fill = np.zeros(n, np.int64)
    fill_starts = no_fill if results.fill_starts is None else np.ascontiguousarray(results.fill_starts, dtype=np.int64)
    fill_counts = no_fill if results.fill_counts is None else np.ascontiguousarray(results.fill_counts, dtype=np.int64)
    row_starts, row_counts = np.ascontiguousarray(results.row_starts, dtype=np.int64), np.ascontiguousarray(results.row_counts, dtype=np.int64)
    order = np.ascontiguousarray(order, dtype=np.int64)
    fixed = len(_OPEN) + len(_QUERY) + len(_RESULTS) + 5  # and "[", "]}\n"
    # One pass into a buffer of a bound on the size (28 bytes a result: ["id", label], with 19 digits): the pages
    # past the end of the text are never touched, so never resident.
    size = _upper_bound(order, queries.starts, row_counts, fill_counts, fixed, 28)
    out, ends = np.empty(size, dtype=np.uint8), np.empty(len(order), dtype=np.int64)
    ids, labels, fill_ids = (np.ascontiguousarray(values) for values in (results.ids, results.labels, results.fill_ids))
    args = (order, queries.src_ids, queries.data, queries.starts, row_starts, row_counts, ids, labels, fill_starts, fill_counts, fill_ids, out, ends)
    used = _put_lines(*args, _OPEN, _QUERY, _RESULTS, _SHORT_ESCAPES, _HEX, _TWO_DIGITS)
    if used < 0:
        raise ValueError("a result's page id is negative or its label is not a single digit")
    return Lines(out[: int(used)], ends)


@numba.njit(cache=True)
def _release_order(page_ids, labels, starts):
    """Per group: rows by label (8 buckets, highest first), each bucket's by page id (insertion sort: a few rows each; argsort when long).

    Unsigned offsets, as in rendering.
    """
    order = np.empty(page_ids.shape[0], np.int64)
    slots = np.empty(8, np.uint64)
    seven = np.int64(7)
    for group in range(starts.shape[0] - 1):
        low, high = np.uint64(starts[group]), np.uint64(starts[group + 1])
        slots[:] = 0
        for row in range(low, high):
            slots[seven - labels[row]] += _U1  # label 7 - b in bucket b: 7 first, 0 last
        at = low
        for bucket in range(8):
            at, slots[bucket] = at + slots[bucket], at  # each bucket's first slot
        for row in range(low, high):
            bucket = seven - labels[row]
            order[slots[bucket]] = row
            slots[bucket] += _U1
        first = low
        for bucket in range(8):
            last = slots[bucket]  # each bucket's end, now
            if last - first > np.uint64(32):
                local = np.argsort(page_ids[order[first:last]], kind="mergesort")
                order[first:last] = order[first:last][local]
            else:
                i = first + _U1
                while i < last:
                    row = order[i]
                    key = page_ids[row]
                    j = i
                    while j > first and page_ids[order[j - _U1]] > key:
                        order[j] = order[j - _U1]
                        j -= _U1
                    order[j] = row
                    i += _U1
            first = last
    return order


def release_order(starts: np.ndarray, page_ids: np.ndarray, label: np.ndarray) -> np.ndarray:
    """The order of rows already grouped by query (groups at ``starts``) that sorts each query's results as released.

    Label descending, then page id ascending (docs/method.md section 9); labels are 0-7.
    """
    label = np.ascontiguousarray(label)
    if len(label) and (label.min() < 0 or label.max() > 7):
        raise ValueError("labels are 0 to 7")
    return _release_order(np.ascontiguousarray(page_ids), label, np.ascontiguousarray(starts, dtype=np.int64))


@numba.njit(cache=True)
def _in_release_order(doc, label, starts, tgt_ids):
    ids = np.empty(doc.shape[0], np.int64)
    for row in range(doc.shape[0]):
        ids[row] = tgt_ids[doc[row]]
    order = _release_order(ids, label, starts)
    ordered_ids, ordered_docs, ordered_labels = np.empty_like(ids), np.empty_like(doc), np.empty_like(label)
    for row in range(order.shape[0]):
        ordered_ids[row], ordered_docs[row], ordered_labels[row] = ids[order[row]], doc[order[row]], label[order[row]]
    return ordered_ids, ordered_docs, ordered_labels


def in_release_order(starts: np.ndarray, doc: np.ndarray, label: np.ndarray, tgt_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows grouped by query (groups at ``starts``; documents as Y positions) sorted as released: (page ids, positions, labels)."""
    label = np.ascontiguousarray(label)
    if len(label) and (label.min() < 0 or label.max() > 7):
        raise ValueError("labels are 0 to 7")
    return _in_release_order(np.ascontiguousarray(doc), label, np.ascontiguousarray(starts, dtype=np.int64), np.ascontiguousarray(tgt_ids))


# --- base candidates ---------------------------------------------------------------------------------
#
# The label-0 filler is ``writers.filler`` (numpy's ``Generator.choice`` without replacement),
# drawn in compiled code for a whole block at once: numpy's algorithm step by step on the same
# bit generator, so the same positions and the same generator state after (tests compare the two).
# A Python call per query cost ~25 us in ``choice``'s argument handling alone.


@numba.njit(cache=True)
def _bounded(bitgen, high):
    """A draw from ``[0, high]``: numpy's ``random_bounded_uint64(bitgen, 0, high, 0, False)``."""
    if high == 0:
        return np.int64(0)
    if high < 0xFFFFFFFF:
        return np.int64(buffered_bounded_lemire_uint32(bitgen, np.uint32(high)))
    if high == 0xFFFFFFFF:
        return np.int64(next_uint32(bitgen))
    return np.int64(bounded_lemire_uint64(bitgen, np.uint64(high)))


@numba.njit(cache=True)
def _shuffle_tail(bitgen, n, first, data):
    for i in range(n - 1, first - 1, -1):
        j = _bounded(bitgen, i)
        data[i], data[j] = data[j], data[i]


@numba.njit(cache=True)
def _choice(bitgen, pop, size, idx, seen):
    """``Generator.choice(pop, size, replace=False)`` into ``idx[:size]``: a tail shuffle for a large share, else Floyd's algorithm, then a shuffle.

    ``seen`` is scratch space for Floyd's hash set (at least the power of two above 1.2 x ``size``).
    """
    if pop > 10000 and size > pop // 50:
        every = np.arange(pop)
        _shuffle_tail(bitgen, pop, max(pop - size, 1), every)
        idx[:size] = every[pop - size :]
        return
    mask = 0
    while mask < np.int64(1.2 * size):
        mask = (mask << 1) | 1
    seen[: mask + 1] = -1
    for j in range(pop - size, pop):
        value = _bounded(bitgen, j)
        at = value & mask
        while seen[at] != -1 and seen[at] != value:
            at = (at + 1) & mask
        if seen[at] == -1:
            seen[at] = value
        else:  # drawn before: j itself joins
            value = j
            at = j & mask
            while seen[at] != -1:
                at = (at + 1) & mask
            seen[at] = j
        idx[j - pop + size] = value
    _shuffle_tail(bitgen, size, 1, idx[:size])


@numba.njit(cache=True)
def _fill(rng, docs, starts, picks, n_docs, k, tgt_ids, out):
    """``writers.filler`` for each pick (a group of ``docs`` at ``starts``), in order, from one generator: pick ``p``'s page ids in ``out[p]``, unsorted."""
    bitgen = rng.bit_generator
    counts = np.zeros(picks.shape[0], np.int64)
    taken = np.zeros(n_docs, np.bool_)
    idx, seen = np.empty(0, np.int64), np.empty(0, np.int64)
    for p in range(picks.shape[0]):
        low, high = starts[picks[p]], starts[picks[p] + 1]
        need = min(k - min(k, high - low), n_docs - (high - low))
        if need <= 0:
            continue
        distinct = 0
        for row in range(low, high):
            if not taken[docs[row]]:
                taken[docs[row]] = True
                distinct += 1
        size = min(n_docs, need + distinct)
        if idx.shape[0] < size:
            idx, seen = np.empty(size, np.int64), np.empty(4 * size + 2, np.int64)
        _choice(bitgen, n_docs, size, idx, seen)
        at = 0
        for i in range(size):
            if not taken[idx[i]]:
                out[p, at] = tgt_ids[idx[i]]
                at += 1
                if at == need:
                    break
        counts[p] = at
        for row in range(low, high):
            taken[docs[row]] = False
    return counts


def base_fill(rng: np.random.Generator, docs: np.ndarray, starts: np.ndarray, picks: np.ndarray, tgt_ids: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Each pick's label-0 filler up to ``k`` results (docs/method.md section 7), as ``writers.filler`` draws it: (page ids, ascending per pick; count per pick).

    ``docs``: Y positions of every query's labelled documents, query ``j``'s at
    ``starts[j]:starts[j + 1]``; ``picks``: the queries, in the order the generator draws for them.
    Each pick's ids are sorted by numpy, a row of a padded table each: numba's own sort
    took 13x as long on rows of ~100 and was half the time of drawing.
    """
    out = np.full((len(picks), k), np.iinfo(np.int64).max, np.int64)
    counts = _fill(rng, np.ascontiguousarray(docs), np.ascontiguousarray(starts, dtype=np.int64), np.ascontiguousarray(picks, dtype=np.int64), len(tgt_ids), k, np.ascontiguousarray(tgt_ids), out)
    out.sort(axis=1)
    return out[np.arange(k) < counts[:, None]], counts


@numba.njit(cache=True)
def _judged(labels, groups, limit, members):
    ge1, ge4 = np.zeros(groups.shape[0] - 1, np.int64), np.zeros(groups.shape[0] - 1, np.int64)
    for q in members:
        for row in range(groups[q], min(groups[q + 1], groups[q] + limit)):
            ge1[q] += labels[row] >= 1
            ge4[q] += labels[row] >= 4
    return ge1, ge4


def judged(label: np.ndarray, groups: np.ndarray, limit: int | None = None, members: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Per query (rows at ``groups``): labels >= 1 and >= 4 among its first ``limit`` rows (all when None); 0 for a query not in ``members`` (all when None)."""
    members = np.arange(len(groups) - 1) if members is None else np.ascontiguousarray(members, dtype=np.int64)
    return _judged(np.ascontiguousarray(label), np.ascontiguousarray(groups, dtype=np.int64), len(label) if limit is None else limit, members)


# --- BI-139 ---------------------------------------------------------------------------------------


def write_direction(work_root: str, out_root: str, src: LanguagePlan, tgt: LanguagePlan, settings: ReleaseSettings) -> FilesReport:
    """One unit: BI-139 full and base files of X -> Y for every split, streamed block by block."""
    work = WorkDirs(work_root)
    splits = read_table([work.query_splits_file(src.lang)], QUERY_SPLITS, ["order", "key"])
    priority, identity = splits.column("order").to_numpy(), splits.column("key").to_numpy()
    runs = direction_runs(work, src.lang, tgt.lang, src.blocks)  # each block's query column, read once here
    queries = runs_queries(runs)
    picks = read_table([work.eval_picks_file(src.lang)], EVAL_PICKS)
    picks = picks.filter(pc.equal(picks.column("tgt"), tgt.lang))
    split_of, base_of = direction_splits(queries, picks, identity, priority, read_eval_keys(work), settings.splits.train_size)
    rngs = [seeded_rng(settings.splits.seed, "fill", f"{src.lang}.{tgt.lang}.{split}") for split in layout.SPLITS]
    tgt_ids = catalog_numbers(work, tgt.lang, "page_id")
    k = settings.candidates
    n_splits = len(layout.SPLITS)
    with contextlib.ExitStack() as stack:
        full_files = [stack.enter_context(gzip_lines(fileio.join(out_root, layout.query_file("bi139-full", src.lang, tgt.lang, s)))) for s in layout.SPLITS]
        base_files = [stack.enter_context(gzip_lines(fileio.join(out_root, layout.query_file("bi139-base", src.lang, tgt.lang, s)))) for s in layout.SPLITS]
        full_sorted = [SortedLines() for _ in layout.SPLITS]
        base_sorted = [SortedLines() for _ in layout.SPLITS]
        for block, (firsts, groups) in enumerate(runs):
            if not len(firsts):
                continue
            path = work.propagated_file(src.lang, tgt.lang, block)
            table = read_table([path], PROPAGATED, ["doc", "label"])
            if table.num_rows != groups[-1]:
                raise ValueError(f"{path}: {table.num_rows} rows, {groups[-1]} when its query column was read")
            # Rows come grouped by query (ascending), each query's by Y position: order them as released.
            ids, doc, label = in_release_order(groups, table.column("doc").to_numpy(), table.column("label").to_numpy(), tgt_ids)
            first_position = src.block(block)[0]
            catalog = read_catalog(work, src.lang, ["page_id", "title"], first_position, int(firsts[-1]) + 1)
            rows = firsts - first_position
            text = QueryText.from_arrow(catalog.column("page_id").to_numpy()[rows], catalog.column("title").take(pa.array(rows)))
            at = np.searchsorted(queries, firsts)
            query_split, in_base = split_of[at], base_of[at]  # NOT_CHOSEN: in another direction's eval sets, so in no file here
            sizes = np.diff(groups)
            full = Results(ids, label, groups[:-1], sizes)
            # Each file's lines in one buffer, sorted by src_id within a split.
            in_full = np.flatnonzero(query_split != NOT_CHOSEN)
            _add_lines(full_sorted, full_files, text, full, query_split, in_full, judged(label, groups, members=in_full), sizes)
            picked = np.flatnonzero(in_base)  # each split's generator draws for its queries in query order
            fill_starts, fill_counts, fills = np.zeros(len(firsts), np.int64), np.zeros(len(firsts), np.int64), []
            done = 0
            for split in range(n_splits):
                mine = picked[query_split[picked] == split]
                filled, counts = base_fill(rngs[split], doc, groups, mine, tgt_ids, k)
                fill_starts[mine] = done + np.cumsum(counts) - counts
                fill_counts[mine] = counts
                fills.append(filled)
                done += len(filled)
            base = Results(ids, label, groups[:-1], np.minimum(sizes, k), np.concatenate(fills), fill_starts, fill_counts)
            _add_lines(base_sorted, base_files, text, base, query_split, picked, judged(label, groups, k, picked), np.full(len(firsts), min(k, len(tgt_ids))))
        for split in range(n_splits):  # BI-139 lists queries by src_id ascending, as the release does
            full_sorted[split].drain(full_files[split])
            base_sorted[split].drain(base_files[split])
    files = [f.record for pair in zip(full_files, base_files) for f in pair]
    return FilesReport(files=describe_files(out_root, files))


def _add_lines(
    sorted_lines: list[SortedLines], files: list[GzipLines], text: QueryText, results: Results, query_split: np.ndarray, members: np.ndarray, counts: tuple[np.ndarray, np.ndarray], pairs: np.ndarray
) -> None:
    """Render a block's lines of one set (``members``: its queries), each split's in a buffer of its own by src_id, hand them to the split's sorter, and count them."""
    ge1, ge4 = counts
    for split in range(len(files)):
        mine = members[query_split[members] == split]
        mine = mine[np.argsort(text.src_ids[mine], kind="stable")]
        sorted_lines[split].add(text.src_ids[mine], render_lines(text, results, mine))
        files[split].count(int(ge1[mine].sum()), int(ge4[mine].sum()), int(pairs[mine].sum()))


def describe_files(out_root: str, records: Sequence[WrittenFile]) -> list[dict]:
    """What a unit reports of the files it wrote: path below ``out_root``, md5, size, lines and label counts."""
    return [{**asdict(record), "path": fileio.relative_to(out_root, record.path)} for record in records]


# --- DOCS and the index -----------------------------------------------------------------------------


def write_docs(work_root: str, out_root: str, lang: str) -> FilesReport:
    """One unit: ``DOCS/{lang}.tsv.gz`` (truncated text) and ``DOCS-FULL/{lang}.tsv.gz``, in dump order."""
    work = WorkDirs(work_root)
    with gzip_lines(fileio.join(out_root, layout.docs_file("docs", lang))) as short, gzip_lines(fileio.join(out_root, layout.docs_file("docs-full", lang))) as full:
        for batch in iter_docs(work, lang, ["doc_id", "text", "text_full"]):
            short.write_text(docs_text(batch.column("doc_id"), batch.column("text")), batch.num_rows)
            full.write_text(docs_text(batch.column("doc_id"), batch.column("text_full")), batch.num_rows)
    return FilesReport(files=describe_files(out_root, [short.record, full.record]))


def index_url_root(out_root: str, base_url: str) -> str:
    """Where the index's URLs point: ``base_url`` when publishing, else OUT itself (``file://`` locally).

    Absolute always: a client holding only the index (ir_datasets' downloader) cannot
    resolve a relative URL.
    """
    if base_url:
        return base_url.rstrip("/") + "/"
    if fileio.is_remote(out_root):
        return out_root.rstrip("/") + "/"
    return Path(fileio.absolute(out_root)).as_uri().rstrip("/") + "/"


def write_index(out_root: str, files: Sequence[dict], base_url: str) -> str:
    """``downloads.json.gz``: context -> key -> url, expected_md5, cache_path, size, size_hint (docs/method.md section 9)."""
    root = index_url_root(out_root, base_url)
    index: dict[str, dict[str, dict]] = {}
    for entry in files:
        released = layout.parse_path(entry["path"])
        context, key = layout.index_key(released.dataset, released.src, released.tgt, released.split)
        index.setdefault(context, {})[key] = {
            "url": root + entry["path"], "expected_md5": entry["md5"], "cache_path": entry["path"], "size": entry["size"],
            "size_hint": entry["size"],  # what ir_datasets' disk-space check reads
        }
    path = fileio.join(out_root, layout.INDEX)
    with atomic_create(path) as handle:
        handle.write(gzip_bytes(orjson.dumps(index, option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2)))
    return path
