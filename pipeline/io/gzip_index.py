"""The seek index of a gzip dump: one pass that inflates it all, and the index's file format.

A dump of 100+ GB (the Wikimedia Enterprise HTML dumps, ``{wiki}-NS0-{date}-ENTERPRISE-
HTML.json.tar.gz``: a tar of NDJSON files, one article a line) is read in ranges
(``gzip_ranges``), each from a checkpoint this index records. ``build_index`` is ONE
sequential pass that only inflates (``gzip_decoder.Decoder``). Every ``spacing`` bytes
of compressed input it stops at the next deflate block boundary and records a
checkpoint (the compressed byte and bit, the uncompressed offset, the last 32 KiB of
output, which a resumed decoder needs as its dictionary). It also lists the tar members
(name, data offset, size; GNU long names and pax headers are Python's ``tarfile``'s
business: it walks the decoded stream and seeks over the data), the CRC-32 of the data
between consecutive checkpoints and the newlines before each checkpoint and member.
Every gzip member's CRC and length are checked (zlib does it); a stream cut short,
corrupt, or followed by bytes that are no gzip member is fatal (``GzipStreamError``).

``GzipIndex`` is what the pass learnt, and ``to_bytes``/``from_bytes`` its file: the
same kind ``gzip_parts`` makes from parallel parts. An index refuses a file other than
the one it was made from (its size and a hash of both ends), and another version's.
"""

from __future__ import annotations

import hashlib
import heapq
import struct
import tarfile
import zlib
from dataclasses import dataclass
from typing import BinaryIO

import orjson
from isal import isal_zlib

from clirmatrix.pipeline.errors import InvalidInputError
from clirmatrix.pipeline.io.gzip_decoder import BUFFER, WINDOW, Decoder, buffer_address

FORMAT_VERSION = 1
MAGIC = b"CLIRGZIX"
DEFAULT_SPACING = 64 << 20  # compressed bytes between checkpoints: ~2,000 for 120 GB, ~25 MB of index
MIN_SPACING = 2 * WINDOW  # closer checkpoints would store more window than they save
FINGERPRINT_BYTES = 65536  # bytes hashed at each end of the file to tell files of one size apart


class IndexMismatchError(InvalidInputError):
    """An index that was not made from this file, or by another version of this module."""


class NotATarError(InvalidInputError):
    """A .tar.gz whose decoded stream is not a tar archive."""


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
        size, fingerprint = file_fingerprint(raw)
        if size != self.compressed_size or fingerprint != self.fingerprint:
            raise IndexMismatchError(
                f"{path}: the index was made from another file ({self.compressed_size:,} bytes, fingerprint {self.fingerprint[:12]}; "
                f"this one has {size:,} bytes, fingerprint {fingerprint[:12]}): build the index again"
            )


def file_fingerprint(raw: BinaryIO) -> tuple[int, str]:
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
        self.decoder = Decoder(raw, path, size)
        self.path, self.spacing = path, spacing
        self.buffer = bytearray(BUFFER)
        self.address = buffer_address(self.buffer)
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
            self.address = buffer_address(self.buffer)

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
    size, fingerprint = file_fingerprint(raw)
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
