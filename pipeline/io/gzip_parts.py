"""Index a huge gzip dump in parallel parts, so that no unit inflates more than its own range.

``gzip_index.build_index`` inflates a dump from its first byte to its last in one
process: ~28 core-minutes for English's ~100 GB Enterprise HTML dump, the one unit of a
build that no setting bounded. This module makes the same ``GzipIndex`` from parts of
``part_bytes`` compressed bytes, each indexed on its own, then joined:

1. ``index_part`` (a unit per part, in parallel). Part ``k`` finds the first deflate
   block with dynamic Huffman codes that starts in its range (``find_block``: a cheap
   test of every bit offset for a valid block header, then zlib decoding two blocks
   from the survivors) and decodes from there to the first such block of the next
   range, where part ``k + 1`` starts. Its first bytes may copy from the 32 KiB before
   its first block, which it does not have: it decodes twice, with two made-up windows
   that differ in every byte, until the last 32 KiB of both outputs agree. From there on
   nothing depends on the unknown window; the bytes before (the part's *head*: repeated
   markup chains copies, 50-80 MB of output on realistic HTML, ~2 % of a 512 MB part)
   are left to the join. Of the rest it records pieces
   (CRC-32 and newlines, cut at checkpoints, gzip member ends and tar headers),
   checkpoints with their windows, the tar header blocks it finds (512 bytes with
   ``ustar`` and a valid checksum) and its last 32 KiB.
2. ``join_parts`` (one small unit per dump) walks the parts in order: checks that each
   ends where the next begins, decodes each head again with the real window (the
   stream's 32 KiB before it), checks every gzip member's CRC-32 and length that zlib
   could not (``crc32_combine`` over the pieces), and lists the tar members with
   ``tarfile`` reading the header blocks found (anything else it asks for is decoded
   from the nearest checkpoint, and counted).

The idea is rapidgzip's (Knespel and Brunst, "Rapidgzip", HPDC 2023: a block finder and
decoding with an unknown window), written here on zlib-ng (``clirmatrix.pipeline.io.inflate``,
through ctypes) and run as Beam units rather than threads; rapidgzip itself reads a file
cut short as a shorter one (docs/benchmarks.md). Any split gives the same members, line
numbers and lines; the checkpoints differ (each part start is one).
"""

from __future__ import annotations

import bisect
import contextlib
import ctypes
import dataclasses
import struct
import tarfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import BinaryIO

import numba
import numpy as np
import orjson
from isal import isal_zlib

from clirmatrix.pipeline.io import gzip_ranges
from clirmatrix.pipeline.io.badinput import CORRUPT_STREAM
from clirmatrix.pipeline.io.gzip_decoder import BUFFER, WINDOW, Decoder, GzipStreamError, buffer_address
from clirmatrix.pipeline.io.gzip_index import Checkpoint, GzipIndex, IndexMismatchError, NotATarError, TarMember, file_fingerprint
from clirmatrix.pipeline.io.inflate import Z_BLOCK, Z_BUF_ERROR, Z_OK, Z_STREAM_END, Inflater, crc32_combine

FORMAT_VERSION = 1
MAGIC = b"CLIRGZPT"
SEARCH_BYTES = 1 << 20  # compressed bytes searched for a block header at a time
TRIAL_BYTES = 1 << 20  # compressed bytes a candidate header may decode to prove itself
DUAL_SPACE = 1 << 14  # decoded bytes per call while the head is decoded twice: the head ends within this of where it could
TAR_BLOCK = 512
KEPT_AROUND = (TAR_BLOCK, 2 * TAR_BLOCK)  # bytes kept before and after a tar header: the padding before it, a GNU long name after
HEAD_MARGIN = 2 * TAR_BLOCK  # bytes decoded past a head when joined: a tar header starting in it ends there
_ZEROS = bytes(WINDOW)
_HIGH = bytes(0x80 | (i >> 8) for i in range(WINDOW))  # differs from _ZEROS in every byte: a copied byte shows in the difference
_HEADER_BITS = 3 + 5 + 5 + 4 + 19 * 3  # a dynamic block's header up to its code length code


class PartsMismatchError(RuntimeError):
    """Parts that do not join (a block finder's false start, or parts of different settings): index the dump in one pass instead."""


# --- finding a block ---------------------------------------------------------------------------


@numba.njit(cache=True, inline="always")
def _bits(data, p, n):
    """``n`` (<= 24) bits of ``data`` from bit ``p`` on, deflate's order (least significant bit first)."""
    b = p >> 3
    v = np.int64(data[b]) | (np.int64(data[b + 1]) << 8) | (np.int64(data[b + 2]) << 16) | (np.int64(data[b + 3]) << 24)
    return (v >> (p & 7)) & ((1 << n) - 1)


@numba.njit(cache=True)
def _next_header(data, first_bit, end_bit):
    """The first bit offset in ``[first_bit, end_bit)`` where a dynamic-Huffman block header could start, or -1.

    Necessary conditions that zlib also checks: block type 2, at most 286 literal/length
    and 30 distance codes, and a code length code that is complete (zlib refuses an
    incomplete or oversubscribed one). Random bit offsets pass about 1 in 500.
    """
    count = np.zeros(8, np.int64)
    end = min(end_bit, data.shape[0] * 8 - _HEADER_BITS - 32)
    for p in range(first_bit, end):
        if _bits(data, p, 3) >> 1 != 2:
            continue
        if _bits(data, p + 3, 5) > 29 or _bits(data, p + 8, 5) > 29:
            continue
        lengths = _bits(data, p + 13, 4) + 4
        count[:] = 0
        for i in range(lengths):
            count[_bits(data, p + 17 + 3 * i, 3)] += 1
        left = 1
        for length in range(1, 8):
            left = 2 * left - count[length]
            if left < 0:
                break
        if left == 0:
            return p
    return -1


class _Trial:
    """Decodes from a candidate header with a made-up window: a real block start decodes two blocks without an error."""

    def __init__(self) -> None:
        self.inflater = Inflater()
        self.stream = self.inflater.stream
        self.out = bytearray(1 << 18)
        self.out_address = buffer_address(self.out)

    def passes(self, data: bytes, address: int, bit: int) -> bool:
        """Whether ``data`` (at ``address``) decodes from bit ``bit`` through two block ends, or to its stream's end."""
        stream, inflater = self.stream, self.inflater
        inflater.reset(-15)
        byte, shift = divmod(bit, 8)
        if shift:
            inflater.prime(8 - shift, data[byte] >> shift)
            byte += 1
        inflater.set_dictionary(_ZEROS)
        stream.next_in = address + byte
        stream.avail_in = len(data) - byte
        ends, last_in = 0, 0
        while True:
            stream.next_out = self.out_address
            stream.avail_out = len(self.out)
            ret = inflater.inflate(Z_BLOCK)
            if ret == Z_STREAM_END:
                return True
            if ret not in (Z_OK, Z_BUF_ERROR):
                return False
            if stream.data_type & 128 and stream.total_in > last_in:  # a block's end, after progress
                ends, last_in = ends + 1, stream.total_in
                if ends == 2:
                    return True
            elif stream.avail_in == 0:
                return ends >= 1  # the data ran out: a real start decodes a whole block in TRIAL_BYTES

    def close(self) -> None:
        self.inflater.close()


def find_block(raw: BinaryIO, begin: int, size: int) -> int | None:
    """The bit offset of the first dynamic-Huffman deflate block starting at or after byte ``begin``; None if none does."""
    trial = _Trial()
    try:
        position = begin
        while position < size:
            raw.seek(position)
            data = raw.read(SEARCH_BYTES + TRIAL_BYTES)
            array = np.frombuffer(data, np.uint8)
            address = ctypes.cast(ctypes.c_char_p(data), ctypes.c_void_p).value or 0
            bit, end_bit = 0, min(SEARCH_BYTES, len(data)) * 8
            while True:
                bit = _next_header(array, bit, end_bit)
                if bit < 0:
                    break
                if trial.passes(data, address, bit):
                    return position * 8 + bit
                bit += 1
            position += SEARCH_BYTES
        return None
    finally:
        trial.close()


def _byte_and_bits(bit: int) -> tuple[int, int]:
    """A ``Checkpoint``'s way to name a block start: the byte after it begins, and how many high bits of the byte before belong to it."""
    byte, shift = divmod(bit, 8)
    return (byte + 1, 8 - shift) if shift else (byte, 0)


def _block_type(raw: BinaryIO, bit: int) -> int:
    raw.seek(bit >> 3)
    two = raw.read(2) + b"\0\0"
    return ((two[0] | two[1] << 8) >> (bit & 7) >> 1) & 3


# --- what a part records -----------------------------------------------------------------------


@dataclass(frozen=True)
class Piece:
    """Decoded bytes ``[start, end)`` (offsets in the part, or in the stream once joined): their CRC-32 and newlines."""

    start: int
    end: int
    crc: int
    newlines: int


@dataclass(frozen=True)
class PartCheckpoint:
    out: int
    inp: int
    bits: int
    header: bool
    window: bytes
    before: int


@dataclass(frozen=True)
class IndexPart:
    """One part's index: see the module's docstring. ``start``/``end`` are bit offsets (``end`` -1: the file's end; ``start`` -1: empty)."""

    number: int
    start: int
    end: int
    length: int
    head: int
    checkpoints: tuple[PartCheckpoint, ...]
    pieces: tuple[Piece, ...]
    member_ends: tuple[tuple[int, bytes], ...]  # (offset, trailer): the trailer when zlib did not check the member (decoded raw)
    tar_blocks: tuple[tuple[int, int, bytes], ...]  # (header offset, offset of the bytes kept, bytes around it)
    tail: bytes
    compressed_size: int
    fingerprint: str

    @property
    def empty(self) -> bool:
        return self.start < 0

    def to_bytes(self) -> bytes:
        blobs = [zlib.compress(cp.window, 1) for cp in self.checkpoints] + [block for _, _, block in self.tar_blocks] + [self.tail]
        header = {
            "number": self.number, "start": self.start, "end": self.end, "length": self.length, "head": self.head,
            "compressed_size": self.compressed_size, "fingerprint": self.fingerprint,
            "checkpoints": [[cp.out, cp.inp, cp.bits, int(cp.header), cp.before] for cp in self.checkpoints],
            "pieces": [[p.start, p.end, p.crc, p.newlines] for p in self.pieces],
            "member_ends": [[out, trailer.hex()] for out, trailer in self.member_ends],
            "tar_blocks": [[at, kept] for at, kept, _ in self.tar_blocks],
            "blobs": [len(blob) for blob in blobs],
        }  # fmt: skip
        head = orjson.dumps(header)
        return MAGIC + struct.pack("<IQ", FORMAT_VERSION, len(head)) + head + b"".join(blobs)

    @classmethod
    def from_bytes(cls, data: bytes, path: str = "") -> IndexPart:
        if data[: len(MAGIC)] != MAGIC or struct.unpack_from("<I", data, len(MAGIC))[0] != FORMAT_VERSION:
            raise PartsMismatchError(f"{path or 'part'}: not a version {FORMAT_VERSION} gzip index part")
        (size,) = struct.unpack_from("<Q", data, len(MAGIC) + 4)
        start = len(MAGIC) + 12
        header = orjson.loads(data[start : start + size])
        blobs, position = [], start + size
        for length in header["blobs"]:
            blobs.append(data[position : position + length])
            position += length
        n_cp = len(header["checkpoints"])
        return cls(
            number=header["number"], start=header["start"], end=header["end"], length=header["length"], head=header["head"],
            checkpoints=tuple(PartCheckpoint(out, inp, bits, bool(hd), zlib.decompress(blobs[i]), before) for i, (out, inp, bits, hd, before) in enumerate(header["checkpoints"])),
            pieces=tuple(Piece(*fields) for fields in header["pieces"]),
            member_ends=tuple((out, bytes.fromhex(trailer)) for out, trailer in header["member_ends"]),
            tar_blocks=tuple((at, kept, blobs[n_cp + i]) for i, (at, kept) in enumerate(header["tar_blocks"])),
            tail=blobs[-1], compressed_size=header["compressed_size"], fingerprint=header["fingerprint"],
        )  # fmt: skip


class _Pieces:
    """CRC-32 and newlines of bytes fed in order, cut at the offsets asked for."""

    def __init__(self, start: int) -> None:
        self.at = self.piece_start = start
        self.crc = self.newlines = 0
        self.cuts: list[int] = []
        self.done: list[Piece] = []

    def cut(self, offset: int) -> None:
        if offset < self.at:
            raise RuntimeError(f"offset {offset} is already counted")
        bisect.insort(self.cuts, offset)

    def feed(self, buffer: bytearray, start: int, end: int, offset: int) -> None:
        """Count ``buffer[start:end]``, the bytes from stream offset ``offset`` on (``self.at``, the first not counted)."""
        view = memoryview(buffer)
        while start < end:
            stop = end
            if self.cuts and self.cuts[0] - offset < stop - start:
                stop = start + max(0, self.cuts[0] - offset)
            self.crc = isal_zlib.crc32(view[start:stop], self.crc)
            self.newlines += buffer.count(b"\n", start, stop)
            offset += stop - start
            self.at, start = offset, stop
            self._close_due()

    def _close_due(self) -> None:
        while self.cuts and self.cuts[0] <= self.at:
            self.cuts.pop(0)
            self._close()

    def _close(self) -> None:
        if self.at > self.piece_start:
            self.done.append(Piece(self.piece_start, self.at, self.crc, self.newlines))
        self.piece_start, self.crc, self.newlines = self.at, 0, 0

    def finish(self) -> tuple[Piece, ...]:
        self._close_due()
        self._close()
        return tuple(self.done)


def _tar_header_at(block: bytes) -> bool:
    """Whether 512 bytes are a tar header (``tarfile``'s checksum test)."""
    try:
        tarfile.TarInfo.frombuf(block, tarfile.ENCODING, "surrogateescape")
    except tarfile.HeaderError:
        return False
    return True


def _tar_blocks(data: bytes | bytearray, size: int, base: int, low: int, high: int) -> Iterator[tuple[int, int, bytes]]:
    """Tar headers in ``data[:size]`` (stream bytes from ``base``) starting in ``[low, high)``, each with the bytes ``KEPT_AROUND`` it."""
    search = max(0, low - base + 257)
    while True:
        q = data.find(b"ustar", search, size)  # (two searches, for "ustar\0" and "ustar ", took twice as long on HTML)
        if q < 0:
            return
        at = base + q - 257
        if at >= high:
            return
        search = q + 1
        if at >= low and at >= base and q - 257 + TAR_BLOCK <= size and _tar_header_at(bytes(data[q - 257 : q - 257 + TAR_BLOCK])):
            first = max(0, q - 257 - KEPT_AROUND[0])
            yield at, base + first, bytes(data[first : min(size, q - 257 + TAR_BLOCK + KEPT_AROUND[1])])


# --- a part ----------------------------------------------------------------------------------------


def index_part(open_raw: Callable[[], BinaryIO], path: str, number: int, part_bytes: int, spacing: int) -> IndexPart:
    """Index part ``number`` (compressed bytes ``[number * part_bytes, (number + 1) * part_bytes)``) of the gzip file at ``path``.

    ``open_raw`` opens the file (a new handle a call: the part reads it at up to three
    places at once). A stream cut short or corrupt raises ``GzipStreamError``.
    """
    with contextlib.ExitStack() as stack:
        raw = stack.enter_context(open_raw())
        size, fingerprint = file_fingerprint(raw)
        begin = number * part_bytes
        if not 0 <= begin < max(size, 1):
            raise ValueError(f"{path}: part {number} starts past the file's end ({size:,} bytes)")
        limit = (begin + part_bytes) * 8 if begin + part_bytes < size else None
        start = 0 if number == 0 else find_block(raw, begin, size)
        if start is None or (limit is not None and start >= limit):
            return IndexPart(number, -1, -1, 0, 0, (), (), (), (), b"", size, fingerprint)
        first = Decoder(stack.enter_context(open_raw()), path, size)
        stack.callback(first.close)
        twin = None
        if number == 0:
            first.start_member(0)
        else:
            byte, bits = _byte_and_bits(start)
            first.start_checkpoint(byte, bits, _ZEROS)
            twin = Decoder(stack.enter_context(open_raw()), path, size)
            stack.callback(twin.close)
            twin.start_checkpoint(byte, bits, _HIGH)
        return dataclasses.replace(_PartRun(first, twin, raw, number, start, limit, spacing).run(), compressed_size=size, fingerprint=fingerprint)


class _PartRun:
    """The decoding loop of a part: one decoder, or two in step until the head ends.

    The join runs it too, to count a head with the real window: ``prefix`` is the stream
    before the part (so that a tar header across the part's start is found), bytes are
    counted up to ``count_until`` and decoded up to ``stop_out`` (a tar header that
    starts before ``count_until`` ends there), and its spacing is one no decode reaches,
    so that no checkpoint is taken.
    """

    def __init__(self, first, twin, raw, number, start, limit, spacing, prefix=b"", count_until=None, stop_out=None) -> None:
        self.first, self.twin, self.raw = first, twin, raw
        self.number, self.start, self.limit, self.spacing = number, start, limit, spacing
        self.count_until, self.stop_out = count_until, stop_out
        self.buffer = bytearray(max(BUFFER, 2 * len(prefix)))
        self.buffer[: len(prefix)] = prefix
        self.twin_buffer = bytearray(len(self.buffer)) if twin is not None else None
        self.base, self.fill = -len(prefix), len(prefix)  # stream offset of buffer[0] (from the part's start); bytes in the buffer
        self.head = 0 if twin is None else -1
        self.pieces = _Pieces(0) if twin is None else None
        self.scanned = -TAR_BLOCK + 1 if prefix else 0  # tar headers are searched from here on
        self.checkpoints: list[PartCheckpoint] = []
        self.member_ends: list[tuple[int, bytes]] = []
        self.tar_blocks: list[tuple[int, int, bytes]] = []
        self.last_inp = first.in_pos
        self.head_tail = b""  # with ``count_until``: the 32 KiB before it

    @property
    def out(self) -> int:
        return self.base + self.fill

    def run(self) -> IndexPart:
        first = self.first
        end = -1
        while self.stop_out is None or self.out < self.stop_out:
            if len(self.buffer) - self.fill < (1 << 20):
                self._make_room()
            due = first.in_pos - self.last_inp >= self.spacing
            # Near the range's end, stop at every block end: the part ends at the first dynamic block at or past it. Until
            # then, input stops a byte before the range's end, so that no block end at or past it goes by unseen.
            end_byte = None if self.limit is None else self.limit // 8 - 1
            near_end = end_byte is not None and first.in_pos >= end_byte
            block = due or near_end
            until = None if near_end else end_byte
            if not block:  # nor does a checkpoint come later than due (``gzip_index._Pass`` does the same)
                until = self.last_inp + self.spacing if until is None else min(until, self.last_inp + self.spacing)
            raw_member = not first.wrapped
            space = DUAL_SPACE if self.twin is not None else len(self.buffer) - self.fill
            if self.stop_out is not None:
                space = min(space, self.stop_out - self.out)
            written, event = first.inflate(buffer_address(self.buffer) + self.fill, space, self.out, block, until)
            if self.twin is not None:
                twin = self.twin.inflate(buffer_address(self.twin_buffer) + self.fill, space, self.out, block, until)
                if twin != (written, event):
                    raise RuntimeError(f"{first.path}: two decoders of one stream disagree ({twin} against {(written, event)})")
            self.fill += written
            if self.twin is not None:
                self._check_head(event)
            self._count(final=False)
            if event == first.BOUNDARY:
                bit = first.in_pos * 8 - first.bits
                if self.limit is not None and bit >= self.limit and _block_type(self.raw, bit) == 2:
                    end = bit
                    break
                if due and self.head >= 0 and self.out > self.head and (not self.checkpoints or self.out > self.checkpoints[-1].out):
                    self._checkpoint(first.in_pos, first.bits, False)
            elif event in (first.MEMBER, first.END):
                self.member_ends.append((self.out, first.trailer if raw_member else b""))
                if self.pieces is not None:
                    self.pieces.cut(self.out)
                if event == first.END:
                    break
                if first.in_pos - self.last_inp >= self.spacing and self.head >= 0:
                    self._checkpoint(first.in_pos, 0, True)
        if self.head < 0:  # never independent of the window before the part: the join decodes it all
            self.head = self.out
            tail = b""
        else:
            self._count(final=True)
            tail = bytes(self.buffer[max(0, self.fill - WINDOW) : self.fill])
        if self.count_until is not None:
            self.head_tail = bytes(self.buffer[max(0, self.count_until - WINDOW - self.base) : self.count_until - self.base])
        pieces = self.pieces.finish() if self.pieces is not None else ()
        return IndexPart(
            self.number, self.start, end, self.out, self.head, tuple(self.checkpoints), pieces, tuple(self.member_ends), tuple(self.tar_blocks),
            tail, 0, "",
        )  # fmt: skip

    def _check_head(self, event: int) -> None:
        """Whether the head has ended: the last 32 KiB agree whatever the window before the part, or a new gzip member began."""
        independent = event in (self.first.MEMBER, self.first.END) or (
            self.fill >= WINDOW and self.buffer[self.fill - WINDOW : self.fill] == self.twin_buffer[self.fill - WINDOW : self.fill]
        )
        if independent:
            self.head = self.scanned = self.out
            self.pieces = _Pieces(self.head)
            self.twin.close()
            self.twin = self.twin_buffer = None

    def _checkpoint(self, inp: int, bits: int, header: bool) -> None:
        window = b"" if header else bytes(self.buffer[max(0, self.fill - WINDOW) : self.fill])
        self.checkpoints.append(PartCheckpoint(self.out, inp, bits, header, window, self.buffer[self.fill - 1] if self.fill else -1))
        self.pieces.cut(self.out)
        self.last_inp = inp

    def _count(self, final: bool) -> None:
        """Find tar headers in what was decoded, then count the bytes that no header found later can cut."""
        if self.pieces is None:
            return
        high = self.out - TAR_BLOCK + 1 if final else self.out - TAR_BLOCK - KEPT_AROUND[1] + 1  # a header found ends in the buffer, with its bytes after
        if self.count_until is not None:
            high = min(high, self.count_until)
        for found in _tar_blocks(self.buffer, self.fill, self.base, self.scanned, high):
            self.tar_blocks.append(found)
            if found[0] > 0:
                self.pieces.cut(found[0])
        self.scanned = max(self.scanned, high)
        until = self.out if final else self.scanned  # a header found later starts at or after it
        if self.count_until is not None:
            until = min(until, self.count_until)
        if until > self.pieces.at:
            self.pieces.feed(self.buffer, self.pieces.at - self.base, until - self.base, self.pieces.at)

    def _make_room(self) -> None:
        """Drop counted bytes, keeping a window (and what tar headers still to be found need); grow when that frees too little."""
        keep_from = self.out - WINDOW - KEPT_AROUND[0]
        if self.pieces is not None:
            keep_from = min(keep_from, self.pieces.at, self.scanned - KEPT_AROUND[0])
        if self.count_until is not None:
            keep_from = min(keep_from, self.count_until - WINDOW)
        keep_from = max(self.base, keep_from)
        keep = self.out - keep_from
        for buffer in (self.buffer, self.twin_buffer):
            if buffer is not None:
                buffer[:keep] = buffer[keep_from - self.base : self.fill]
        self.base, self.fill = keep_from, keep
        if len(self.buffer) - self.fill < (1 << 20):
            self.buffer += bytearray(len(self.buffer))
            if self.twin_buffer is not None:
                self.twin_buffer += bytearray(len(self.twin_buffer))


# --- joining -----------------------------------------------------------------------------------


class _Stream:
    """The decoded stream as the join sees it: the bytes the parts kept, and the rest decoded from the nearest checkpoint on demand."""

    def __init__(self, known: list[tuple[int, bytes]], total: int, fetch: Callable[[int, int], bytes]) -> None:
        self.known = sorted(known, key=lambda item: item[0])
        self.starts = [start for start, _ in self.known]
        self.total, self.fetch = total, fetch
        self.position = 0
        self.fetched = 0  # bytes that had to be decoded again

    def kept(self, start: int, n: int) -> bytes | None:
        """Bytes ``[start, start + n)`` if the parts kept them."""
        n = max(0, min(n, self.total - start))
        for i in range(bisect.bisect_right(self.starts, start) - 1, -1, -1):
            first, data = self.known[i]
            if first + len(data) >= start + n:
                return data[start - first : start - first + n]
        return None

    def get(self, start: int, n: int) -> bytes:
        found = self.kept(start, n)
        if found is not None:
            return found
        n = max(0, min(n, self.total - start))
        self.fetched += n
        return self.fetch(start, n)

    # the file object ``tarfile`` reads
    def read(self, n: int = -1) -> bytes:
        data = self.get(self.position, self.total - self.position if n < 0 else n)
        self.position += len(data)
        return data

    def seek(self, offset: int, whence: int = 0) -> int:
        self.position = offset if whence == 0 else (self.position + offset if whence == 1 else self.total + offset)
        return self.position

    def tell(self) -> int:
        return self.position


def join_parts(raw: BinaryIO, path: str, parts: list[IndexPart], spacing: int, tar: bool = True) -> tuple[GzipIndex, dict]:
    """The dump's ``GzipIndex`` from all its parts, and a report (parts, head bytes decoded again, bytes fetched).

    Raises ``PartsMismatchError`` when the parts do not join (index the file in one pass
    with ``gzip_index.build_index`` instead), ``GzipStreamError`` when a gzip member
    fails its check, ``NotATarError`` when the stream holds no tar archive.
    """
    size, fingerprint = file_fingerprint(raw)
    ordered = sorted(parts, key=lambda part: part.number)
    if [part.number for part in ordered] != list(range(len(ordered))):
        raise PartsMismatchError(f"{path}: parts {[part.number for part in ordered]} are not all the parts")
    for part in ordered:
        if (part.compressed_size, part.fingerprint) != (size, fingerprint):
            raise IndexMismatchError(f"{path}: part {part.number} was made from another file: index the dump again")
    used = [part for part in ordered if not part.empty]
    if not used or used[0].number != 0 or used[-1].end != -1:
        raise PartsMismatchError(f"{path}: the parts do not cover the file from its first byte to its end")
    for before, after in zip(used, used[1:]):
        if before.end != after.start:
            raise PartsMismatchError(f"{path}: part {before.number} ends at bit {before.end:,} but part {after.number} starts at bit {after.start:,}")
    checkpoints: list[list] = []
    pieces: list[Piece] = []
    member_ends: list[tuple[int, bytes]] = []
    blocks: dict[int, tuple[int, int, bytes]] = {}
    known: list[tuple[int, bytes]] = []
    tail = b""  # the stream's last 32 KiB so far
    base = heads = 0
    decoder = Decoder(raw, path, size)
    try:
        for part in used:
            if part.number == 0:
                checkpoints.append([0, 0, 0, True, b"", -1])
            else:
                byte, bits = _byte_and_bits(part.start)
                checkpoints.append([base, byte, bits, False, tail, tail[-1]])
                decoder.start_checkpoint(byte, bits, tail)
                # No checkpoint is due in a head (the part took them): a spacing no decode reaches.
                run = _PartRun(decoder, None, raw, part.number, part.start, None, 1 << 62, tail, part.head, min(part.length, part.head + HEAD_MARGIN))
                counted = run.run()
                pieces += [Piece(p.start + base, p.end + base, p.crc, p.newlines) for p in counted.pieces]
                for at, kept, block in counted.tar_blocks:
                    blocks.setdefault(at + base, (at + base, kept + base, block))
                heads += part.head
            pieces += [Piece(p.start + base, p.end + base, p.crc, p.newlines) for p in part.pieces]
            checkpoints += [[cp.out + base, cp.inp, cp.bits, cp.header, cp.window, cp.before] for cp in part.checkpoints]
            member_ends += [(out + base, trailer) for out, trailer in part.member_ends]
            for at, kept, block in part.tar_blocks:
                blocks.setdefault(at + base, (at + base, kept + base, block))
            if part.number == 0:
                part_tail = part.tail
            else:  # its last 32 KiB: those it kept, after those counted here (the part did not know its head's bytes)
                after_head = part.tail[max(0, part.head - (part.length - len(part.tail))) :]
                part_tail = (run.head_tail + after_head)[-WINDOW:]
            tail = (tail + part_tail)[-WINDOW:]
            base += part.length
    finally:
        decoder.close()
    total = base
    known.append((total - len(tail), tail))
    known += [(kept, block) for _, kept, block in blocks.values()]
    starts = [piece.start for piece in pieces]
    if starts[:1] != [0] or any(a.end != b.start for a, b in zip(pieces, pieces[1:])) or pieces[-1].end != total:
        raise PartsMismatchError(f"{path}: the parts' counted bytes do not cover the stream")
    before_piece = np.concatenate([[0], np.cumsum([piece.newlines for piece in pieces])]).tolist()
    where = {start: i for i, start in enumerate(starts)}
    where[total] = len(pieces)

    def crc_between(first: int, end: int) -> int:
        crc = 0
        for piece in pieces[where[first] : where[end]]:
            crc = crc32_combine(crc, piece.crc, piece.end - piece.start)
        return crc

    member_start = 0
    for end, trailer in member_ends:
        if trailer:
            expected, length = struct.unpack("<II", trailer)
            if crc_between(member_start, end) != expected or (end - member_start) & 0xFFFFFFFF != length:
                raise GzipStreamError(
                    path, CORRUPT_STREAM, f"the gzip member from uncompressed byte {member_start:,} to {end:,} fails its check (CRC-32 or length): the file is damaged; download it again"
                )
        member_start = end
    outs = [fields[0] for fields in checkpoints] + [total]
    final = tuple(
        Checkpoint(out, inp, bits, header, window, crc_between(out, following), before_piece[where[out]], before) for (out, inp, bits, header, window, before), following in zip(checkpoints, outs[1:])
    )
    provisional = GzipIndex(size, total, fingerprint, spacing, len(member_ends), final, (), tar)

    def fetch(start: int, n: int) -> bytes:
        chunks, have = [], 0
        for chunk in gzip_ranges.read_range(raw, provisional, start, path):
            chunks.append(chunk)
            have += len(chunk)
            if have >= n:
                break
        return b"".join(chunks)[:n]

    stream = _Stream(known, total, fetch)

    def newlines_before(offset: int) -> int:
        if offset in where:
            return before_piece[where[offset]]
        i = bisect.bisect_right(starts, offset) - 1  # the piece holding it: count from its start, or back from its end
        after = stream.kept(offset, pieces[i].end - offset)
        if after is not None:
            return before_piece[i + 1] - after.count(b"\n")
        return before_piece[i] + stream.get(starts[i], offset - starts[i]).count(b"\n")

    found: list[tuple[str, int, int]] = []
    if tar:
        try:
            with tarfile.open(fileobj=stream, mode="r:") as archive:  # type: ignore[call-overload]
                found = [(info.name, info.offset_data, info.size) for info in archive if info.isreg()]
        except tarfile.TarError as error:
            raise NotATarError(f"{path}: no readable tar archive in the gzip stream (at uncompressed byte {stream.position:,}): {error}") from None
    else:
        found = [("", 0, total)]
    members = []
    for name, offset, length in found:
        first = newlines_before(offset)
        unterminated = length and stream.get(offset + length - 1, 1) != b"\n"
        members.append(TarMember(name, offset, length, first, newlines_before(offset + length) - first + (1 if unterminated else 0)))
    index = GzipIndex(size, total, fingerprint, spacing, len(member_ends), final, tuple(members), tar)
    report = {"parts": len(ordered), "empty_parts": len(ordered) - len(used), "head_bytes": heads, "fetched_bytes": stream.fetched}
    return index, report


def plan_parts(size: int, part_bytes: int) -> int:
    """How many parts a file of ``size`` compressed bytes is indexed in."""
    return max(1, -(-size // part_bytes))


def build_index_in_parts(open_raw: Callable[[], BinaryIO], path: str, part_bytes: int, spacing: int, tar: bool = True) -> tuple[GzipIndex, dict]:
    """``index_part`` for every part, then ``join_parts``, in this process: what the stage does across workers."""
    with open_raw() as raw:
        size = raw.seek(0, 2)
        parts = [index_part(open_raw, path, number, part_bytes, spacing) for number in range(plan_parts(size, part_bytes))]
        return join_parts(raw, path, parts, spacing, tar)
