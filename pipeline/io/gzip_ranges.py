"""Read a huge .tar.gz (or .gz) dump in bounded units, each from a checkpoint of its seek index.

A gzip member is one deflate stream: decoding byte N needs everything before it. So a
dump of 100+ GB (the Wikimedia Enterprise HTML dumps) is read in two stages:

1. ``gzip_index.build_index`` (or ``gzip_parts``, in parallel parts): one indexing
   pass that records checkpoints, the tar members, the CRC-32 of the data between
   consecutive checkpoints and the newlines before each checkpoint and member.
2. This module: ``plan_units`` cuts each tar member at checkpoints into units of about
   ``target_bytes`` of compressed input; ``iter_unit_lines`` yields exactly the lines a
   unit owns (a line belongs to the unit holding its first byte), each with its offset
   in the tar stream and its 1-based line number in its member, whatever the split.
   A unit decodes from the checkpoint at or before its start (``gzip_decoder.Decoder``)
   and checks the CRC-32 of every whole interval it decodes, so a file changed or
   damaged since it was indexed fails the unit instead of feeding it wrong bytes.
   ``read_range`` gives the decoded bytes from any offset on, checked alike.

See docs/scale.md, "Big files".
"""

from __future__ import annotations

import bisect
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO, NamedTuple

from isal import isal_zlib

from clirmatrix.pipeline.io.badinput import CORRUPT_STREAM
from clirmatrix.pipeline.io.gzip_decoder import BUFFER, Decoder, GzipStreamError, buffer_address
from clirmatrix.pipeline.io.gzip_index import GzipIndex

# --- reading ranges ------------------------------------------------------------------------------


class _RangeReader:
    """Decodes from the checkpoint at or before ``start``, checking each whole interval's CRC-32 against the index."""

    def __init__(self, raw: BinaryIO, index: GzipIndex, start: int, path: str) -> None:
        if not 0 <= start <= index.uncompressed_size:
            raise ValueError(f"offset {start:,} lies outside the stream (0 to {index.uncompressed_size:,})")
        self.index, self.path = index, path
        self.outs = [cp.out for cp in index.checkpoints]
        self.number = bisect.bisect_right(self.outs, start) - 1
        cp = index.checkpoints[self.number]
        self.decoder = Decoder(raw, path, index.compressed_size)
        if cp.header:
            self.decoder.start_member(cp.inp)
        else:
            self.decoder.start_checkpoint(cp.inp, cp.bits, cp.window)
        self.buffer = bytearray(BUFFER)
        self.address = buffer_address(self.buffer)
        self.pos = cp.out  # uncompressed offset of the next byte to decode
        self.crc = 0
        self.ended = False

    def _next_cut(self) -> int:
        following = self.number + 1
        return self.outs[following] if following < len(self.outs) else self.index.uncompressed_size

    def _check(self, data: memoryview) -> None:
        """CRC the decoded piece, comparing at each checkpoint it reaches."""
        offset = 0
        while offset < len(data):
            cut = self._next_cut()
            take = min(len(data) - offset, cut - self.pos)
            if take < 0:
                raise self._mismatch("the stream is longer than when it was indexed")
            self.crc = isal_zlib.crc32(data[offset : offset + take], self.crc)
            offset += take
            self.pos += take
            if self.pos == cut:
                self._close_interval()

    def _close_interval(self) -> None:
        cp = self.index.checkpoints[self.number]
        if self.crc != cp.crc:
            raise self._mismatch(f"the bytes from uncompressed offset {cp.out:,} to {self.pos:,} differ from those indexed (CRC-32)")
        self.crc = 0
        self.number += 1

    def _mismatch(self, what: str) -> GzipStreamError:
        return GzipStreamError(self.path, CORRUPT_STREAM, f"{what}: the file changed or was damaged since it was indexed; build the index again")

    def pieces(self) -> Iterator[tuple[int, memoryview]]:
        """``(offset, bytes)`` pieces in order from the checkpoint on; each view is valid until the next piece."""
        view = memoryview(self.buffer)
        space = 1 << 16  # growing to the buffer's size: a unit that wants little decodes little past it
        while not self.ended:
            start = self.pos
            written, event = self.decoder.inflate(self.address, space, start)
            space = min(2 * space, len(self.buffer))
            self._check(view[:written])
            if event == Decoder.END:
                self.ended = True
                if self.pos != self.index.uncompressed_size:
                    raise self._mismatch(f"the stream ends at uncompressed byte {self.pos:,}, not {self.index.uncompressed_size:,}")
                if self.number == len(self.outs) - 1:
                    self._close_interval()
            if written:
                yield start, view[:written]

    def finish_interval(self, pieces: Iterator[tuple[int, memoryview]], through: int) -> None:
        """Decode on to the checkpoint after offset ``through - 1`` so that its interval's CRC is checked."""
        if through <= 0:
            return
        last = bisect.bisect_right(self.outs, through - 1) - 1
        while self.number <= last and not self.ended:
            if next(pieces, None) is None:
                break

    def close(self) -> None:
        self.decoder.close()


def read_range(raw: BinaryIO, index: GzipIndex, start: int, path: str = "") -> Iterator[bytes]:
    """Decoded bytes from uncompressed offset ``start`` on, in chunks, as far as the consumer reads.

    Decoding starts at the checkpoint at or before ``start`` (at most ``spacing`` bytes of
    compressed input before it). Each whole interval between checkpoints is checked
    against the index's CRC-32; the interval the consumer stops in is not.
    """
    reader = _RangeReader(raw, index, start, path or getattr(raw, "name", "") or "gzip stream")
    try:
        for offset, piece in reader.pieces():
            end = offset + len(piece)
            if end <= start:
                continue
            yield bytes(piece[max(0, start - offset) :])
    finally:
        reader.close()


# --- units and their lines ---------------------------------------------------------------------


@dataclass(frozen=True)
class GzipUnit:
    """Lines of tar member ``member`` (``name``) whose first byte lies in uncompressed ``[start, end)``.

    ``compressed`` is the compressed input the unit decodes: from the checkpoint at or
    before ``start`` to the one after ``end - 1``.
    """

    member: int
    name: str
    start: int
    end: int
    compressed: int


class Line(NamedTuple):
    """One NDJSON line: ``offset`` in the uncompressed tar stream, 1-based ``number`` in its member, ``data`` with its newline."""

    offset: int
    number: int
    data: bytes


def _compressed_span(index: GzipIndex, outs: list[int], start: int, end: int) -> int:
    """Compressed bytes decoded to read ``[start, end)``: from the checkpoint at or before ``start`` to the one after ``end - 1``."""
    first = index.checkpoints[bisect.bisect_right(outs, start) - 1].inp
    after = bisect.bisect_right(outs, end - 1)
    last = index.checkpoints[after].inp if after < len(outs) else index.compressed_size
    return last - first


def plan_units(index: GzipIndex, target_bytes: int) -> list[GzipUnit]:
    """Cut every tar member at checkpoints into units of at most about ``target_bytes`` compressed bytes.

    A unit never spans two members. A unit is never smaller than one checkpoint interval,
    so one exceeds ``target_bytes`` only when ``spacing`` does. Deterministic for an index.
    """
    units: list[GzipUnit] = []
    outs = [cp.out for cp in index.checkpoints]
    for number, member in enumerate(index.members):
        end_of_member = member.offset + member.size
        if member.size == 0:
            continue
        cuts = outs[bisect.bisect_right(outs, member.offset) : bisect.bisect_left(outs, end_of_member)] + [end_of_member]
        start = member.offset
        chosen = None
        for cut in cuts:
            if chosen is not None and _compressed_span(index, outs, start, cut) > target_bytes:
                units.append(GzipUnit(number, member.name, start, chosen, _compressed_span(index, outs, start, chosen)))
                start = chosen
            chosen = cut
        units.append(GzipUnit(number, member.name, start, end_of_member, _compressed_span(index, outs, start, end_of_member)))
    return units


def iter_unit_lines(raw: BinaryIO, index: GzipIndex, unit: GzipUnit, path: str = "") -> Iterator[Line]:
    """The lines ``unit`` owns, in order, each with its stream offset and its line number in its member.

    A line belongs to the unit holding its first byte: the unit skips a line begun before
    its start and reads past its end to finish its last line, never past its member's end
    (a member's last line may lack its newline; it is yielded as it is). Line numbers
    come from the newline counts in the index: no unit reads from its member's start.
    """
    path = path or getattr(raw, "name", "") or "gzip stream"
    member = index.members[unit.member]
    member_end = member.offset + member.size
    if not member.offset <= unit.start <= unit.end <= member_end:
        raise ValueError(f"unit [{unit.start:,}, {unit.end:,}) lies outside member {member.name!r}")
    if unit.start == unit.end:
        return
    outs = [cp.out for cp in index.checkpoints]
    at = bisect.bisect_left(outs, unit.start)
    if unit.start == member.offset:
        begin, at_line_start = unit.start, True
    elif at < len(outs) and outs[at] == unit.start:
        begin, at_line_start = unit.start, index.checkpoints[at].before == 10
    else:
        begin, at_line_start = unit.start - 1, None  # decode the byte before the start too
    reader = _RangeReader(raw, index, begin, path)
    pieces = reader.pieces()
    newlines = index.checkpoints[reader.number].newlines

    def clipped() -> Iterator[tuple[int, bytes]]:
        """Pieces of ``[begin, member_end)``, counting the newlines decoded before ``begin``."""
        nonlocal newlines
        for offset, piece in pieces:
            end = offset + len(piece)
            low = min(len(piece), max(0, begin - offset))
            if low:
                newlines += piece[:low].tobytes().count(b"\n")
            high = min(end, member_end) - offset
            if high > low:
                yield offset + low, piece[low:high].tobytes()
            if end >= member_end:
                return

    try:
        number = 0
        parts: list[bytes] = []  # a line begun in earlier pieces
        line_start = 0
        skipping = False
        first = True
        for offset, data in clipped():
            if first:
                first = False
                if at_line_start is None:
                    at_line_start = data[:1] == b"\n"
                    newlines += data[:1].count(b"\n")
                    data, offset = data[1:], offset + 1
                number = newlines - member.newlines + 1
                skipping = not at_line_start
            cursor = 0
            if skipping:  # the end of a line that began before the start: the previous unit's
                cut = data.find(b"\n")
                if cut < 0:
                    continue
                cursor, skipping = cut + 1, False
                number += 1
            elif parts:
                cut = data.find(b"\n")
                if cut < 0:
                    parts.append(data)
                    continue
                yield Line(line_start, number, b"".join(parts) + data[: cut + 1])
                parts = []
                cursor = cut + 1
                number += 1
            while cursor < len(data):
                if offset + cursor >= unit.end:
                    return
                cut = data.find(b"\n", cursor)
                if cut < 0:
                    parts, line_start = [data[cursor:]], offset + cursor
                    break
                yield Line(offset + cursor, number, data[cursor : cut + 1])
                number += 1
                cursor = cut + 1
        if parts:  # the member's last line, without its newline
            yield Line(line_start, number, b"".join(parts))
    finally:
        if sys.exc_info()[0] is None:
            reader.finish_interval(pieces, unit.end)
        pieces.close()
        reader.close()
