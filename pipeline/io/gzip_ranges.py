"""Read a huge .tar.gz (or .gz) dump in bounded units: one indexing pass, then ranges read in parallel.

A gzip member is one deflate stream: decoding byte N needs everything before it. So a
dump of 100+ GB (the Wikimedia Enterprise HTML dumps, ``{wiki}-NS0-{date}-ENTERPRISE-
HTML.json.tar.gz``: a tar of NDJSON files, one article a line) is read in two stages:

1. ``build_index``: ONE sequential pass that only inflates. Every ``spacing`` bytes of
   compressed input it stops at the next deflate block boundary and records a
   checkpoint (the compressed byte and bit, the uncompressed offset, the last 32 KiB of
   output, which a resumed decoder needs as its dictionary). It also lists the tar
   members (name, data offset, size; GNU long names and pax headers are Python's
   ``tarfile``'s business: it walks the decoded stream and seeks over the data), the
   CRC-32 of the data between consecutive checkpoints and the newlines before each
   checkpoint and member. Every gzip member's CRC and length are checked (zlib does
   it); a stream cut short, corrupt, or followed by bytes that are no gzip member is
   fatal (``GzipStreamError``, one line naming the file and the offsets).
2. ``plan_units`` cuts each tar member at checkpoints into units of about
   ``target_bytes`` of compressed input; ``iter_unit_lines`` yields exactly the lines a
   unit owns (a line belongs to the unit holding its first byte), each with its offset
   in the tar stream and its 1-based line number in its member, whatever the split.
   A unit decodes from the checkpoint at or before its start and checks the CRC-32 of
   every whole interval it decodes, so a file changed or damaged since it was indexed
   fails the unit instead of feeding it wrong bytes.

Why a hand-written decoder driver (ctypes to zlib-ng, ``clirmatrix.pipeline.io.inflate``, as
``indexed_gzip``'s zran.c does in C with zlib): checkpoints at bit offsets need ``inflate(Z_BLOCK)``,
``inflatePrime`` and ``inflateSetDictionary``, which Python's ``zlib`` does not expose.
The libraries that do, ``indexed_gzip`` 1.10.3 and ``rapidgzip`` 0.16.2, were measured
to read a gzip file cut short as a shorter file without an error (indexed_gzip at 132,
rapidgzip at 98 of 140 cut points; this module at none: ``bench/gzip_ranges_bench.py
--truncation``), which this project must never do, and neither checks the bytes read
through an imported index. ctypes releases the GIL around every inflate call, so the next
compressed chunk is read in a thread meanwhile. See docs/scale.md, "One huge gzip dump".
"""

from __future__ import annotations

import bisect
import concurrent.futures
import ctypes
import hashlib
import heapq
import struct
import sys
import tarfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO, NamedTuple

import orjson
from isal import isal_zlib

from clirmatrix.pipeline.errors import InvalidInputError
from clirmatrix.pipeline.io.badinput import CORRUPT_STREAM, TRUNCATED_STREAM, DamagedInputError
from clirmatrix.pipeline.io.inflate import Z_BLOCK, Z_BUF_ERROR, Z_DATA_ERROR, Z_MEM_ERROR, Z_NEED_DICT, Z_NO_FLUSH, Z_OK, Z_STREAM_END, Inflater

FORMAT_VERSION = 1
MAGIC = b"CLIRGZIX"
DEFAULT_SPACING = 64 << 20  # compressed bytes between checkpoints: ~2,000 for 120 GB, ~25 MB of index
WINDOW = 32768  # deflate's history: what a resumed decoder needs
MIN_SPACING = 2 * WINDOW  # closer checkpoints would store more window than they save
READ_SIZE = 4 << 20  # compressed bytes per read of ``raw``
BUFFER = 8 << 20  # decoded bytes per buffer
FINGERPRINT_BYTES = 65536  # bytes hashed at each end of the file to tell files of one size apart

_GZIP_MAGIC = b"\x1f\x8b"


class GzipStreamError(DamagedInputError):
    """A gzip file that cannot be read to its end (``kind``: truncated_stream or corrupt_stream)."""

    def __init__(self, path: str, kind: str, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path
        self.kind = kind


class IndexMismatchError(InvalidInputError):
    """An index that was not made from this file, or by another version of this module."""


class NotATarError(InvalidInputError):
    """A .tar.gz whose decoded stream is not a tar archive."""


def _address(buffer: bytearray) -> int:
    return ctypes.addressof((ctypes.c_char * len(buffer)).from_buffer(buffer))


class _Decoder:
    """Inflates ``raw`` from a checkpoint on, across gzip members, into caller-given memory.

    ``in_pos`` is the compressed offset of the next byte not yet consumed. After a call
    with ``block=True`` that returns ``BOUNDARY``, the decoder sits at a deflate block
    boundary: ``bits`` is the number of bits of byte ``in_pos - 1`` still unread.
    """

    DATA, BOUNDARY, MEMBER, END = 0, 1, 2, 3

    def __init__(self, raw: BinaryIO, path: str, size: int) -> None:
        self.inflater = Inflater()
        self.raw, self.path, self.size = raw, path, size
        self.stream = self.inflater.stream
        self.chunk = b""
        self.chunk_start = 0
        self.chunk_address = 0
        self.wrapped = True  # decoding a gzip member with its header and trailer (False: raw, from a checkpoint)
        self.bits = 0
        self.members = 0
        self.trailer = b""  # a raw decode's last member trailer (``_member_end``)
        self.reader: concurrent.futures.ThreadPoolExecutor | None = None
        self.ahead: concurrent.futures.Future | None = None
        self.ahead_offset = -1

    # input
    @property
    def in_pos(self) -> int:
        return self.chunk_start + len(self.chunk) - self.stream.avail_in

    def _load(self, offset: int) -> None:
        """Make ``raw[offset:]`` the input (the chunk kept alive while zlib reads it), and start reading the next chunk.

        The next chunk is read in a thread while zlib decodes this one (ctypes releases
        the GIL): an object store's stream then costs little more than a local file.
        """
        chunk = None
        if self.ahead is not None:
            ahead, self.ahead = self.ahead, None
            data = ahead.result()
            if self.ahead_offset == offset:
                chunk = data
        if chunk is None:
            if self.raw.tell() != offset:
                self.raw.seek(offset)
            chunk = self.raw.read(READ_SIZE) or b""
        if len(chunk) == READ_SIZE:
            if self.reader is None:
                self.reader = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="gzip-ranges-read")
            self.ahead_offset = offset + len(chunk)
            self.ahead = self.reader.submit(self.raw.read, READ_SIZE)
        self.chunk = chunk
        self.chunk_start = offset
        self.chunk_address = ctypes.cast(ctypes.c_char_p(self.chunk), ctypes.c_void_p).value or 0
        self.stream.next_in = self.chunk_address
        self.stream.avail_in = len(self.chunk)

    def _refill(self) -> bool:
        if self.stream.avail_in == 0:
            self._load(self.chunk_start + len(self.chunk))
        return self.stream.avail_in > 0

    def _peek(self, n: int) -> bytes:
        """The next ``n`` unconsumed input bytes (fewer at the end of the file), consuming none."""
        start = len(self.chunk) - self.stream.avail_in
        if start + n > len(self.chunk):
            self._load(self.in_pos)
            start = 0
        return self.chunk[start : start + n]

    def _skip(self, n: int) -> None:
        if n <= self.stream.avail_in:
            self.stream.next_in = self.chunk_address + len(self.chunk) - self.stream.avail_in + n
            self.stream.avail_in -= n
        else:
            self._load(self.in_pos + n)

    # starting
    def _init(self, window_bits: int) -> None:
        self.inflater.reset(window_bits)
        self.wrapped = window_bits > 15

    def start_member(self, offset: int) -> None:
        """Decode from a gzip member's first byte (its header)."""
        self._load(offset)
        if self._peek(2) != _GZIP_MAGIC:
            what = "the file is empty" if offset == 0 and not self.chunk else f"no gzip member starts at byte {offset:,}"
            raise GzipStreamError(self.path, CORRUPT_STREAM, f"not a gzip stream: {what}")
        self._init(31)

    def start_checkpoint(self, offset: int, bits: int, window: bytes) -> None:
        """Decode raw deflate from a block boundary: ``bits`` bits of byte ``offset - 1``, then ``offset`` on."""
        self._init(-15)
        if bits:
            self._load(offset - 1)
            value = self.chunk[0] >> (8 - bits) if self.chunk else 0
            self._skip(1)
            self.inflater.prime(bits, value)
        else:
            self._load(offset)
        if window:
            self.inflater.set_dictionary(window)

    # decoding
    def _fail(self, out_pos: int, ret: int) -> GzipStreamError:
        where = f"at compressed byte {self.in_pos:,} of {self.size:,} (uncompressed byte {out_pos:,})"
        if ret == Z_BUF_ERROR:
            return GzipStreamError(self.path, TRUNCATED_STREAM, f"the gzip stream is cut short {where}: download it again")
        message = self.inflater.message() or f"zlib error {ret}"
        return GzipStreamError(self.path, CORRUPT_STREAM, f"the gzip stream is corrupt {where}: {message}")

    def inflate(self, address: int, space: int, out_pos: int, block: bool = False, until: int | None = None) -> tuple[int, int]:
        """Decode up to ``space`` bytes to ``address``, consuming input up to compressed offset ``until`` at most.

        Returns ``(bytes written, event)``; ``event``: ``DATA`` (more to come),
        ``BOUNDARY`` (``block`` only: stopped at a deflate block boundary), ``MEMBER`` (a
        new gzip member starts here) or ``END``.
        """
        stream = self.stream
        while True:
            if stream.avail_in == 0 and not self._refill():
                raise self._fail(out_pos, Z_BUF_ERROR)
            withheld = 0
            if until is not None and self.in_pos < until < self.in_pos + stream.avail_in:
                withheld = self.in_pos + stream.avail_in - until
                stream.avail_in -= withheld
            stream.next_out = address
            stream.avail_out = space
            ret = self.inflater.inflate(Z_BLOCK if block else Z_NO_FLUSH)
            stream.avail_in += withheld
            written = space - stream.avail_out
            if ret == Z_STREAM_END:
                return written, self._member_end(out_pos + written)
            if ret not in (Z_OK, Z_BUF_ERROR):
                if ret == Z_MEM_ERROR:
                    raise MemoryError("zlib ran out of memory")
                raise self._fail(out_pos + written, Z_DATA_ERROR if ret == Z_NEED_DICT else ret)
            if block and stream.data_type & 128 and not stream.data_type & 64:
                self.bits = stream.data_type & 7
                return written, self.BOUNDARY
            if written or stream.avail_in:
                return written, self.DATA
            if withheld:
                return 0, self.DATA
            # no output and all input consumed: loop to read more (or fail at the end of the file)

    def _member_end(self, out_pos: int) -> int:
        """After a deflate stream's end: skip a raw decode's trailer; then the end of the file, or the next member."""
        if not self.wrapped:
            trailer = self._peek(8)
            if len(trailer) < 8:
                raise GzipStreamError(self.path, TRUNCATED_STREAM, f"the gzip stream is cut short in a member's trailer at compressed byte {self.in_pos:,}: download it again")
            self._skip(8)
            self.trailer = trailer  # the member's CRC-32 and length, for whoever decoded its start (zlib checked neither)
        following = self._peek(2)
        if not following:
            return self.END
        if following != _GZIP_MAGIC:
            raise GzipStreamError(
                self.path,
                CORRUPT_STREAM,
                f"bytes that are no gzip member follow the gzip stream at compressed byte {self.in_pos:,} (uncompressed byte {out_pos:,}): the file is damaged or not one gzip file",
            )
        self._init(31)
        self.members += 1
        return self.MEMBER

    def close(self) -> None:
        if self.ahead is not None:
            self.ahead.cancel()
            concurrent.futures.wait([self.ahead])
            self.ahead = None
        if self.reader is not None:
            self.reader.shutdown(wait=True)
            self.reader = None
        self.inflater.close()


# --- the index --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Checkpoint:
    """A place to start decoding: uncompressed offset ``out``, compressed byte ``inp`` (and ``bits`` of the byte before it).

    ``header``: a gzip member starts at ``inp`` (no window needed). ``crc``: CRC-32 of the
    decoded bytes from ``out`` to the next checkpoint (or the end). ``newlines``: ``\\n``
    bytes before ``out``. ``before``: the byte at ``out - 1`` (-1 at offset 0).
    """

    out: int
    inp: int
    bits: int
    header: bool
    window: bytes
    crc: int
    newlines: int
    before: int


@dataclass(frozen=True)
class TarMember:
    """A file in the archive: its data is ``size`` bytes at uncompressed ``offset``; ``newlines`` before it; ``lines`` in it."""

    name: str
    offset: int
    size: int
    newlines: int
    lines: int


@dataclass(frozen=True)
class GzipIndex:
    """What one pass over a gzip file learnt: checkpoints, tar members, and how to tell the file again."""

    compressed_size: int
    uncompressed_size: int
    fingerprint: str
    spacing: int
    gzip_members: int
    checkpoints: tuple[Checkpoint, ...]
    members: tuple[TarMember, ...]
    tar: bool

    def to_bytes(self) -> bytes:
        """The index as a file: magic, version, a JSON header, then each window zlib-compressed."""
        windows = [zlib.compress(cp.window, 6) for cp in self.checkpoints]
        header = {
            "version": FORMAT_VERSION,
            "compressed_size": self.compressed_size,
            "uncompressed_size": self.uncompressed_size,
            "fingerprint": self.fingerprint,
            "spacing": self.spacing,
            "gzip_members": self.gzip_members,
            "tar": self.tar,
            "checkpoints": [[cp.out, cp.inp, cp.bits, int(cp.header), cp.crc, cp.newlines, cp.before, len(w)] for cp, w in zip(self.checkpoints, windows)],
            "members": [[m.name, m.offset, m.size, m.newlines, m.lines] for m in self.members],
        }
        head = orjson.dumps(header)
        return MAGIC + struct.pack("<IQ", FORMAT_VERSION, len(head)) + head + b"".join(windows)

    @classmethod
    def from_bytes(cls, data: bytes, raw: BinaryIO | None = None, path: str = "") -> GzipIndex:
        """Load an index, refusing another version's; with ``raw``, also one made from another file."""
        if data[: len(MAGIC)] != MAGIC or len(data) < len(MAGIC) + 12:
            raise IndexMismatchError(f"{path or 'index'}: not a gzip_ranges index (no {MAGIC.decode()} header)")
        version, head_size = struct.unpack_from("<IQ", data, len(MAGIC))
        if version != FORMAT_VERSION:
            raise IndexMismatchError(f"{path or 'index'}: a version {version} index; this build reads version {FORMAT_VERSION}: build the index again")
        start = len(MAGIC) + 12
        header = orjson.loads(data[start : start + head_size])
        position = start + head_size
        checkpoints = []
        for out, inp, bits, is_header, crc, newlines, before, size in header["checkpoints"]:
            window = zlib.decompress(data[position : position + size]) if size else b""
            position += size
            checkpoints.append(Checkpoint(out, inp, bits, bool(is_header), window, crc, newlines, before))
        index = cls(
            compressed_size=header["compressed_size"],
            uncompressed_size=header["uncompressed_size"],
            fingerprint=header["fingerprint"],
            spacing=header["spacing"],
            gzip_members=header["gzip_members"],
            checkpoints=tuple(checkpoints),
            members=tuple(TarMember(*m) for m in header["members"]),
            tar=header["tar"],
        )
        if raw is not None:
            index.check(raw, path)
        return index

    def check(self, raw: BinaryIO, path: str) -> None:
        """Refuse a file other than the one indexed: its size, and a hash of its first and last 64 KiB."""
        size, fingerprint = _fingerprint(raw)
        if size != self.compressed_size or fingerprint != self.fingerprint:
            raise IndexMismatchError(
                f"{path}: the index was made from another file ({self.compressed_size:,} bytes, fingerprint {self.fingerprint[:12]}; "
                f"this one has {size:,} bytes, fingerprint {fingerprint[:12]}): build the index again"
            )


def _fingerprint(raw: BinaryIO) -> tuple[int, str]:
    size = raw.seek(0, 2)
    digest = hashlib.sha256(struct.pack("<Q", size))
    raw.seek(0)
    digest.update(raw.read(FINGERPRINT_BYTES))
    raw.seek(max(0, size - FINGERPRINT_BYTES))
    digest.update(raw.read(FINGERPRINT_BYTES))
    raw.seek(0)
    return size, digest.hexdigest()


class _Pass:
    """The indexing pass as a forward-only file object over the decoded stream (what ``tarfile`` walks).

    Decoding fills ``buffer``; every byte up to the read position is then "processed" in
    order: its CRC-32 (per checkpoint interval) and newlines are counted, cut at
    checkpoints and at the offsets where tar members start and end ("marks").
    """

    def __init__(self, raw: BinaryIO, path: str, size: int, spacing: int) -> None:
        self.decoder = _Decoder(raw, path, size)
        self.path, self.spacing = path, spacing
        self.buffer = bytearray(BUFFER)
        self.address = _address(self.buffer)
        self.base = 0  # uncompressed offset of buffer[0]
        self.fill = 0  # decoded bytes in the buffer
        self.pos = 0  # read position (tarfile's)
        self.processed = 0  # bytes CRC'd and counted
        self.crc = 0
        self.newlines = 0
        self.ended = False
        self.last_inp = 0
        self.cps: list[list] = []  # out, inp, bits, header, window, crc, newlines, before
        self.next_cp = 0  # the first checkpoint not yet reached by processing
        self.marks: dict[int, tuple[int, int] | None] = {}  # offset: (newlines before it, the byte before it)
        self.pending_marks: list[int] = []  # a heap of marks not yet reached
        self.decoder.start_member(0)
        self._checkpoint(0, 0, 0, True)

    def _checkpoint(self, out: int, inp: int, bits: int, header: bool) -> None:
        window = b"" if header else bytes(self.buffer[max(0, out - WINDOW - self.base) : out - self.base])
        before = self.buffer[out - 1 - self.base] if out > 0 else -1
        self.cps.append([out, inp, bits, header, window, 0, 0, before])
        self.last_inp = inp

    def _process_to(self, target: int) -> None:
        view = memoryview(self.buffer)
        while True:
            while self.next_cp < len(self.cps) and self.cps[self.next_cp][0] == self.processed:
                if self.next_cp > 0:
                    self.cps[self.next_cp - 1][5] = self.crc
                self.cps[self.next_cp][6] = self.newlines
                self.crc = 0
                self.next_cp += 1
            while self.pending_marks and self.pending_marks[0] == self.processed:
                mark = heapq.heappop(self.pending_marks)
                self.marks[mark] = (self.newlines, self.buffer[mark - 1 - self.base] if mark > 0 else -1)
            if self.processed >= target:
                return
            stop = target
            if self.next_cp < len(self.cps):
                stop = min(stop, self.cps[self.next_cp][0])
            if self.pending_marks:
                stop = min(stop, self.pending_marks[0])
            start, end = self.processed - self.base, stop - self.base
            self.crc = isal_zlib.crc32(view[start:end], self.crc)
            self.newlines += self.buffer.count(b"\n", start, end)
            self.processed = stop

    def _make_room(self) -> None:
        """Drop processed bytes from the buffer (keeping a window's worth); grow it if that frees too little."""
        self._process_to(self.pos)
        keep_from = max(self.base, min(self.processed, self.base + self.fill - WINDOW))
        keep = self.base + self.fill - keep_from
        self.buffer[:keep] = self.buffer[keep_from - self.base : self.fill]
        self.base, self.fill = keep_from, keep
        if len(self.buffer) - self.fill < (1 << 20):  # a read wider than the buffer (a huge pax header): grow
            self.buffer = self.buffer + bytearray(len(self.buffer))
            self.address = _address(self.buffer)

    def _decode_more(self) -> bool:
        """Decode the next piece into the buffer; False at the end of the stream."""
        if self.ended:
            return False
        if len(self.buffer) - self.fill < (1 << 20):
            self._make_room()
        decoder = self.decoder
        due = decoder.in_pos - self.last_inp >= self.spacing
        out = self.base + self.fill
        written, event = decoder.inflate(self.address + self.fill, len(self.buffer) - self.fill, out, due, self.last_inp + self.spacing)
        self.fill += written
        out += written
        if event == decoder.BOUNDARY and due and out > self.cps[-1][0]:
            self._checkpoint(out, decoder.in_pos, decoder.bits, False)
        elif event == decoder.MEMBER and decoder.in_pos - self.last_inp >= self.spacing and out > self.cps[-1][0]:
            self._checkpoint(out, decoder.in_pos, 0, True)
        elif event == decoder.END:
            self.ended = True
        return True

    # the file object tarfile reads
    def tell(self) -> int:
        return self.pos

    def seek(self, offset: int, whence: int = 0) -> int:
        if whence != 0 or offset < self.pos:
            raise ValueError("the indexing pass reads forward only")
        while self.base + self.fill < offset:
            self.pos = self.base + self.fill
            if not self._decode_more():
                break
        self.pos = min(offset, self.base + self.fill)
        self._process_to(self.pos)
        return self.pos

    def read(self, n: int = -1) -> bytes:
        if n < 0:
            raise ValueError("the indexing pass reads a given number of bytes")
        while self.base + self.fill < self.pos + n and self._decode_more():
            pass
        end = min(self.pos + n, self.base + self.fill)
        data = bytes(self.buffer[self.pos - self.base : end - self.base])
        self.pos = end
        self._process_to(end)
        return data

    def drain(self) -> int:
        """Decode and process the rest of the stream (after the tar archive's end: its padding); return its length."""
        while True:
            self.pos = self.base + self.fill
            if not self._decode_more():
                break
        self.pos = self.base + self.fill
        self._process_to(self.pos)
        self.cps[-1][5] = self.crc
        return self.pos

    def mark(self, offset: int) -> None:
        """Count the newlines before ``offset`` (not yet processed) when processing reaches it."""
        if offset in self.marks:
            return
        if offset < self.processed:
            raise RuntimeError(f"offset {offset} was already processed")
        self.marks[offset] = None
        heapq.heappush(self.pending_marks, offset)
        self._process_to(self.processed)


def build_index(raw: BinaryIO, path: str, spacing: int = DEFAULT_SPACING, tar: bool | None = None) -> GzipIndex:
    """Inflate the whole file once, checking it, and record checkpoints and tar members.

    ``raw`` is any seekable binary file object (a local file, Beam's ``FileSystems.open``
    stream). ``tar`` (default: ``path`` ends in ``.tar.gz`` or ``.tgz``) lists the
    archive's regular files; otherwise the whole stream is one member named ``""``.
    ``spacing`` is the compressed bytes between checkpoints. A stream cut short or
    corrupt raises ``GzipStreamError`` naming ``path`` and the offsets; a .tar.gz whose
    content is no tar archive, ``NotATarError``.
    """
    if spacing < MIN_SPACING:
        raise ValueError(f"spacing must be at least {MIN_SPACING} bytes")
    if tar is None:
        tar = path.endswith((".tar.gz", ".tgz"))
    size, fingerprint = _fingerprint(raw)
    work = _Pass(raw, path, size, spacing)
    try:
        found: list[tuple[str, int, int]] = []
        if not tar:
            work.mark(0)
        if tar:
            try:
                archive = tarfile.open(fileobj=work, mode="r:")  # noqa: SIM115 (closed below; it owns nothing)
                for info in archive:
                    if info.isreg():
                        work.mark(info.offset_data)
                        work.mark(info.offset_data + info.size)
                        found.append((info.name, info.offset_data, info.size))
                archive.close()
            except tarfile.TarError as error:
                raise NotATarError(f"{path}: no readable tar archive in the gzip stream (at uncompressed byte {work.pos:,}): {error}") from None
        total = work.drain()
        if not tar:
            work.mark(total)
            found = [("", 0, total)]
        members = []
        for name, offset, length in found:
            (first, _), (last, last_byte) = work.marks[offset], work.marks[offset + length]
            members.append(TarMember(name, offset, length, first, last - first + (1 if length and last_byte != 10 else 0)))
        checkpoints = tuple(Checkpoint(*fields) for fields in work.cps)
        return GzipIndex(size, total, fingerprint, spacing, work.decoder.members + 1, checkpoints, tuple(members), tar)
    finally:
        work.decoder.close()


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
        self.decoder = _Decoder(raw, path, index.compressed_size)
        if cp.header:
            self.decoder.start_member(cp.inp)
        else:
            self.decoder.start_checkpoint(cp.inp, cp.bits, cp.window)
        self.buffer = bytearray(BUFFER)
        self.address = _address(self.buffer)
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
            if event == _Decoder.END:
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
