"""Reading one huge .bz2 file as independent, bounded ranges cut at bzip2 block boundaries.

A Wikidata dump (``latest-all.json.bz2``, ~90 GB) or English's XML dump (~25 GB) is
too much for one unit of work. bzip2 compresses in independent blocks (at most 900 kB
of input each); every block starts with the 48-bit magic ``0x314159265359`` at an
arbitrary *bit* offset, followed by its CRC, and a stream ends with
``0x177245385090``, the stream's combined CRC and padding to a byte. A multistream
file (Wikimedia's ``pages-articles-multistream``) is several streams concatenated,
each starting byte-aligned with ``BZh1``..``BZh9``.

- ``plan_ranges`` cuts the file near every ``target_bytes`` at a real block start,
  reading a few MB around each cut (never the whole file). The bit patterns are found
  with ``bytes.find`` at all 8 bit alignments; since the pattern can occur by chance
  inside compressed data, a candidate counts only once the block there decodes with
  its CRC.
- A range is read block by block: the block's bits, shifted to byte alignment, are
  wrapped in a one-block stream in memory (``BZh9`` + block + end-of-stream magic +
  combined CRC, which for one block is the block's own CRC) and decompressed by the
  standard library's ``bz2``, which checks the CRC. A block ends where the next magic
  starts; a chance occurrence of the magic inside it shows up as a failed decode, and
  the next candidate is tried.
- Records belong to the range in which their first byte lies (``iter_line_records``
  for NDJSON and the Wikidata JSON dump, ``iter_page_records`` for MediaWiki XML
  ``<page>`` elements). A range reads on past its end only to finish its last record,
  and reads the block just before it (``BlockRange.prev_bit``, found by the planner)
  to know whether its first byte starts a record.
- Positions (``pack_position``) are the byte offset of the block a record starts in
  and the record's byte offset inside the block's text: the same whatever the split,
  and they sort in file order.

Hand-written because no library does this within a bounded unit: ``bz2`` (and
``BZ2File``) reads a stream from its start; ``indexed_bzip2`` seeks only after an
index of block offsets built by a pass over the whole file. Neither gives the records
a range owns. The decoding itself is libbzip2's, through the standard library, which
checks every block's CRC.
"""

from __future__ import annotations

import bisect
import bz2
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import BinaryIO, NamedTuple

from clirmatrix.pipeline.errors import InputError
from clirmatrix.pipeline.io.badinput import CORRUPT_STREAM, TRUNCATED_STREAM, DamagedInputError
from clirmatrix.pipeline.io.positions import pack_position

BLOCK_MAGIC = 0x314159265359
EOS_MAGIC = 0x177245385090
_BLOCK, _EOS = 0, 1
_HEADER_BITS = 48 + 32  # a block's magic and CRC; likewise an end-of-stream marker's magic and combined CRC
# A block's compressed size is bounded: at most 900,000 symbols of at most 20 bits, plus
# tables (libbzip2's encoder keeps codes to 17 bits; a random 900 kB block takes ~905 kB).
# Past this span a block that has not decoded never will: it is damaged.
MAX_BLOCK_BYTES = (900_000 * 20) // 8 + 64 * 1024
_CHUNK = 8 << 20  # bytes per read: large reads for object stores, a little over-read past a range
_PAGE_OPEN = b"<page>"
_PAGE_CLOSE = b"</page>"
_XML_END = b"</mediawiki>"



class Bz2StreamError(InputError):
    """A .bz2 file that cannot be read to its end; ``kind`` is the FileReport reject kind."""

    kind = CORRUPT_STREAM

    def __init__(self, file: str, byte_offset: int, detail: str) -> None:
        super().__init__(f"{file}: {detail} (at byte {byte_offset:,})")
        self.file = file
        self.byte_offset = byte_offset
        self.detail = detail

    @property
    def position(self) -> int:
        """Where the file broke, as a record position (``pack_position``), for a FileReport reject."""
        return pack_position(self.byte_offset * 8, 0)


class TruncatedStreamError(Bz2StreamError, EOFError):
    """The file ends before its end-of-stream marker: it was cut short."""

    kind = TRUNCATED_STREAM


class CorruptStreamError(Bz2StreamError, OSError):
    """A block that does not decode or whose CRC does not match, or bytes that are not bzip2 at all."""

    kind = CORRUPT_STREAM


@dataclass(frozen=True)
class BlockRange:
    """One unit of work: the blocks starting in bits ``[start_bit, end_bit)`` of the compressed file.

    ``prev_bit`` is the block just before ``start_bit`` (-1 for the first range), which a
    reader decodes to know whether its first byte starts a record. Range 0 starts at bit
    0 (the file's first stream header); the last ends at the file's end.
    """

    index: int
    start_bit: int
    end_bit: int
    prev_bit: int = -1

    @property
    def compressed_bytes(self) -> int:
        return (self.end_bit >> 3) - (self.start_bit >> 3)

    def describe(self) -> str:
        return f"range {self.index} (bytes {self.start_bit >> 3:,} to {self.end_bit >> 3:,})"


class Block(NamedTuple):
    """A decoded block: the bit offset of its magic in the file, and its text."""

    bit: int
    data: bytes


class Record(NamedTuple):
    """A record (a line, a ``<page>`` element) and its position (``pack_position``)."""

    position: int
    data: bytes


class CrcPiece(NamedTuple):
    """What a range saw of a stream that crosses its start or end, for that stream's combined CRC.

    A stream's combined CRC folds all its block CRCs (``c = rotl1(c) ^ block_crc``),
    so a range holding only part of a stream cannot check it alone. ``started``: the
    stream's header lies in this range; ``blocks`` and ``crc``: this range's blocks of
    it and their CRCs folded from 0; ``stored``: the CRC its end-of-stream marker holds,
    when the marker lies in this range; ``byte``: where the piece ends, for messages.
    Plain values: a unit's report can store them as a list.
    """

    started: bool
    blocks: int
    crc: int
    stored: int | None
    byte: int


def check_stream_crcs(name: str, pieces_by_range: Sequence[Sequence[CrcPiece | Sequence]]) -> None:
    """Check the combined CRC of every stream that crosses a range boundary; ranges in file order.

    Streams lying wholly inside one range are checked by the reader. Raises
    ``CorruptStreamError`` at the end-of-stream marker whose CRC does not match.
    """
    open_crc: int | None = None
    for pieces in pieces_by_range:
        for piece in map(CrcPiece._make, pieces):
            if piece.started:
                open_crc = piece.crc
            elif open_crc is None:
                raise ValueError(f"{name}: the pieces of a stream's CRC do not join; give every range's, in file order")
            else:
                shift = piece.blocks % 32
                open_crc = (((open_crc << shift) | (open_crc >> (32 - shift))) & 0xFFFFFFFF) ^ piece.crc
            if piece.stored is not None:
                if open_crc != piece.stored:
                    raise CorruptStreamError(name, piece.byte, "corrupt bz2 stream: its combined CRC does not match its blocks")
                open_crc = None


def check_range_reports(parts: Iterable[tuple[str, dict]]) -> dict[str, list[dict]]:
    """Check, per file, the combined CRC of every stream that crosses a range boundary, from the ranges' reports.

    ``parts``: ``(file, report)`` of each range read, its report holding ``index`` and
    ``crc_pieces`` (as stored in JSON). Raises ``DamagedInputError`` naming the file;
    returns the reports per file in file order, for checks of the file's framing.
    """
    by_file: dict[str, list[dict]] = {}
    for path, part in parts:
        by_file.setdefault(path, []).append(part)
    for path, file_parts in sorted(by_file.items()):
        file_parts.sort(key=lambda part: part["index"])
        try:
            check_stream_crcs(path, [part["crc_pieces"] for part in file_parts])
        except Bz2StreamError as error:
            raise DamagedInputError(f"{path}: {error.detail} (at byte {error.byte_offset:,}); download it again and check it against the md5sums") from None
    return by_file


def _patterns() -> list[tuple[int, int, bytes, int, int, int, int]]:
    """For each magic and bit shift: (kind, shift, 5 whole middle bytes, head value, head mask, tail value, tail mask)."""
    found = []
    for magic, kind in ((BLOCK_MAGIC, _BLOCK), (EOS_MAGIC, _EOS)):
        for shift in range(8):
            window = (magic << (8 - shift)).to_bytes(7, "big")  # the magic starting at bit `shift` of byte 0
            head_mask = 0xFF >> shift
            tail_mask = (0xFF << (8 - shift)) & 0xFF
            found.append((kind, shift, window[1:6], window[0] & head_mask, head_mask, window[6] & tail_mask, tail_mask))
    return found


_PATTERNS = _patterns()


def _scan(data: bytes, lo: int, hi: int, base_bit: int) -> list[tuple[int, int]]:
    """Every ``(bit offset, kind)`` of a magic starting in bytes ``[lo, hi)`` of ``data``, sorted.

    One ``bytes.find`` pass per pattern over the 5 whole bytes every alignment has,
    then a check of the partial bytes at either end.
    """
    found = []
    end = len(data)
    for kind, shift, core, head, head_mask, tail, tail_mask in _PATTERNS:
        j = data.find(core, lo + 1, min(hi + 6, end))
        while j != -1:
            b = j - 1
            if data[b] & head_mask == head and (not tail_mask or (b + 6 < end and data[b + 6] & tail_mask == tail)):
                found.append((base_bit + 8 * b + shift, kind))
            j = data.find(core, j + 1, min(hi + 6, end))
    found.sort()
    return found


def _rotl1(value: int) -> int:
    return ((value << 1) | (value >> 31)) & 0xFFFFFFFF


class _Source:
    """A window of the compressed file, the magics found in it, and block decoding.

    Reads whole chunks ahead, but not past ``soft_end`` (a range's end) unless asked:
    a range reads past its end only what finishing its last record needs.
    """

    def __init__(self, raw: BinaryIO, size: int, name: str, chunk: int = _CHUNK, soft_end: int | None = None) -> None:
        self.raw = raw
        self.size = size
        self.total_bits = size * 8
        self.name = name
        self.chunk = chunk
        self.soft_end = size if soft_end is None else soft_end
        self.buf = b""
        self.buf_start = 0
        self.scanned_to = 0  # every magic starting before this byte is in cand_bits
        self.cand_bits: list[int] = []
        self.cand_kinds: list[int] = []
        self._tail_ok: bool | None = None

    # -- reading --

    def _read(self, offset: int, n: int) -> bytes:
        self.raw.seek(offset)
        parts, got = [], 0
        while got < n:
            data = self.raw.read(n - got)
            if not data:
                break
            parts.append(data)
            got += len(data)
        if got < n:
            raise TruncatedStreamError(self.name, offset + got, f"the file ends before its listed size of {self.size:,} bytes")
        return b"".join(parts)

    def load(self, lo: int, hi: int) -> None:
        """Make the window cover bytes ``[lo, hi)`` (clipped to the file), starting at ``lo`` when it moves."""
        hi = min(hi, self.size)
        buf_end = self.buf_start + len(self.buf)
        if self.buf_start <= lo and hi <= buf_end and lo - self.buf_start < self.chunk:
            return
        if self.buf_start <= lo <= buf_end:  # slide forward, keeping what is already read
            read_end = min(self.size, max(hi, min(buf_end + self.chunk, self.soft_end)))
            added = self._read(buf_end, read_end - buf_end) if read_end > buf_end else b""
            self.buf = self.buf[lo - self.buf_start :] + added
            keep = bisect.bisect_left(self.cand_bits, lo * 8)
            del self.cand_bits[:keep], self.cand_kinds[:keep]
        else:
            read_end = min(self.size, max(hi, min(lo + self.chunk, self.soft_end)))
            self.buf = self._read(lo, read_end - lo)
            self.cand_bits, self.cand_kinds, self.scanned_to = [], [], lo
        self.buf_start = lo
        buf_end = lo + len(self.buf)
        limit = buf_end if buf_end == self.size else buf_end - 6  # a magic starting later is not whole yet
        if limit > self.scanned_to:
            for bit, kind in _scan(self.buf, self.scanned_to - lo, limit - lo, lo * 8):
                self.cand_bits.append(bit)
                self.cand_kinds.append(kind)
            self.scanned_to = limit

    def next_candidate(self, after: int, limit: int) -> tuple[int, int] | None:
        """The first ``(bit, kind)`` of a magic after bit ``after`` (inside the window) and at or before ``limit``."""
        while True:
            i = bisect.bisect_right(self.cand_bits, after)
            if i < len(self.cand_bits):
                return (self.cand_bits[i], self.cand_kinds[i]) if self.cand_bits[i] <= limit else None
            if self.scanned_to >= self.size or self.scanned_to * 8 > limit:
                return None
            self.load(self.buf_start, self.buf_start + len(self.buf) + (256 << 10))

    def bits(self, pos: int, n: int) -> int:
        """The ``n`` bits at bit ``pos`` as an integer (loads them)."""
        lo, hi = pos >> 3, (pos + n + 7) >> 3
        self.load(lo, hi)
        value = int.from_bytes(self.buf[lo - self.buf_start : hi - self.buf_start], "big")
        return (value >> (hi * 8 - pos - n)) & ((1 << n) - 1)

    @property
    def tail_ok(self) -> bool:
        """Whether the file ends with an end-of-stream marker, its CRC and at most 7 bits of padding."""
        if self._tail_ok is None:
            n = min(self.size, 11)
            self.raw.seek(self.size - n)
            tail = int.from_bytes(self.raw.read(n), "big")
            self._tail_ok = any(
                n * 8 >= _HEADER_BITS + pad and tail >> (pad + 32) & ((1 << 48) - 1) == EOS_MAGIC for pad in range(8)
            )
        return self._tail_ok

    # -- decoding --

    def _decode_span(self, p: int, q: int, crc: int) -> bytes | None:
        """Bits ``[p, q)`` as a one-block stream, decoded; None when they are not exactly one whole block."""
        b0, b1 = p >> 3, (q + 7) >> 3
        n = q - p
        value = int.from_bytes(self.buf[b0 - self.buf_start : b1 - self.buf_start], "big")
        value = (value >> (b1 * 8 - q)) & ((1 << n) - 1)
        total = n + _HEADER_BITS
        pad = -total % 8
        value = ((value << _HEADER_BITS) | (EOS_MAGIC << 32) | crc) << pad
        decompressor = bz2.BZ2Decompressor()
        try:
            text = decompressor.decompress(b"BZh9" + value.to_bytes((total + pad) >> 3, "big"))
        except OSError:
            return None
        return text if decompressor.eof and not decompressor.unused_data else None

    def decode_block(self, p: int) -> tuple[bytes, int, int]:
        """``(text, bit where the block ends, block CRC)`` of the block whose magic is at bit ``p``.

        The block ends where the next magic starts; a chance match inside it fails to
        decode, and the next one is tried, up to the largest size a block can have.
        """
        self.load(p >> 3, (p >> 3) + 16)
        if self.total_bits - p < _HEADER_BITS:
            raise TruncatedStreamError(self.name, p >> 3, "the bz2 stream is cut short inside a block header")
        crc = self.bits(p + 48, 32)
        limit = p + MAX_BLOCK_BYTES * 8
        after = p + _HEADER_BITS
        while (found := self.next_candidate(after, limit)) is not None:
            after = found[0]
            text = self._decode_span(p, after, crc)
            if text is not None:
                return text, after, crc
        if self.total_bits <= limit:  # the file cut right after a whole block: decodes, then fails at the marker
            self.load(self.buf_start, self.size)
            text = self._decode_span(p, self.total_bits, crc)
            if text is not None:
                return text, self.total_bits, crc
            if not self.tail_ok:
                raise TruncatedStreamError(
                    self.name, p >> 3, f"the bz2 stream is cut short: it ends inside the block at byte {p >> 3:,}, with no end-of-stream marker"
                )
        raise CorruptStreamError(self.name, p >> 3, f"corrupt bz2 block at byte {p >> 3:,}: it does not decode or its CRC does not match")

    def kind_at(self, pos: int) -> int | None:
        """Which magic starts at bit ``pos``, if any."""
        value = self.bits(pos, 48)
        return _BLOCK if value == BLOCK_MAGIC else _EOS if value == EOS_MAGIC else None

    def blocks(self, start_bit: int, stop_bit: int | None = None, crc_pieces: list[CrcPiece] | None = None) -> Iterator[Block]:
        """Decoded blocks from ``start_bit`` (0: the file's start; else a block's magic) to the end of the file.

        Checks the structure between blocks (end-of-stream markers, the next stream's
        header) and the combined CRC of every stream read from its header. What a
        stream's combined CRC needs from the blocks before ``start_bit`` or after
        ``stop_bit`` goes into ``crc_pieces`` (``check_stream_crcs`` joins the ranges').
        """
        stop = self.total_bits + 1 if stop_bit is None else stop_bit
        pos = start_bit
        expect_header = pos == 0
        started, blocks, fold = False, 0, 0  # the stream being read: its header seen here?, blocks here, their CRCs folded
        while True:
            if expect_header:
                if pos == self.total_bits and pos:
                    return  # the end of the last stream is the end of the file
                byte = pos >> 3
                self.load(byte, byte + 4)
                header = self.buf[byte - self.buf_start : byte - self.buf_start + 4]
                if len(header) < 4 or header[:3] != b"BZh" or not 0x31 <= header[3] <= 0x39:
                    self._header_error(byte, header)
                pos += 32
                started, blocks, fold = True, 0, 0
                expect_header = False
            if self.total_bits - pos < 48:
                raise TruncatedStreamError(
                    self.name, pos >> 3, "the bz2 stream is cut short: the file ends without its end-of-stream marker"
                )
            kind = self.kind_at(pos)
            if kind == _BLOCK:
                if pos >= stop and crc_pieces is not None:
                    crc_pieces.append(CrcPiece(started, blocks, fold, None, pos >> 3))
                    crc_pieces = None  # this range's part is done; what follows is the next range's
                text, end, crc = self.decode_block(pos)
                yield Block(pos, text)
                blocks, fold = blocks + 1, _rotl1(fold) ^ crc
                pos = end
            elif kind == _EOS:
                if self.total_bits - pos < _HEADER_BITS:
                    raise TruncatedStreamError(self.name, pos >> 3, "the bz2 stream is cut short inside its end-of-stream marker")
                stored = self.bits(pos + 48, 32)
                if started and stored != fold:
                    raise CorruptStreamError(self.name, pos >> 3, "corrupt bz2 stream: its combined CRC does not match its blocks")
                if not started and crc_pieces is not None:
                    crc_pieces.append(CrcPiece(False, blocks, fold, stored, pos >> 3))
                pos = (pos + _HEADER_BITS + 7) & ~7
                expect_header = True
                started, blocks, fold = False, 0, 0
            else:
                raise CorruptStreamError(self.name, pos >> 3, f"no bz2 block or end-of-stream marker at bit {pos:,}")

    def _header_error(self, byte: int, header: bytes) -> None:
        if len(header) < 4 and b"BZh"[: len(header)] == header[:3]:
            raise TruncatedStreamError(self.name, byte, "the file is cut short inside a bz2 stream header")
        if byte == 0:
            raise CorruptStreamError(self.name, 0, "not a bz2 file (no BZh header)")
        raise CorruptStreamError(self.name, byte, "bytes after the end of a bz2 stream are not another bz2 stream")

    def next_block_start(self, end: int) -> int | None:
        """The first block magic at or after bit ``end`` (where a verified block ended), through stream ends and headers."""
        pos = end
        while True:
            if self.total_bits - pos < 48:
                return None
            kind = self.kind_at(pos)
            if kind == _BLOCK:
                return pos
            if kind != _EOS:
                return None
            pos = (pos + _HEADER_BITS + 7) & ~7
            if pos + 32 > self.total_bits:
                return None
            self.load(pos >> 3, (pos >> 3) + 4)
            header = self.buf[(pos >> 3) - self.buf_start : (pos >> 3) - self.buf_start + 4]
            if header[:3] != b"BZh" or not 0x31 <= header[3] <= 0x39:
                return None
            pos += 32


def plan_ranges(raw: BinaryIO, size: int, target_bytes: int, name: str = "<bz2>") -> list[BlockRange]:
    """Cut a .bz2 file into ranges of about ``target_bytes`` compressed bytes, at real block starts.

    Reads the file's first and last bytes (a missing end-of-stream marker is a file cut
    short: ``TruncatedStreamError`` before any work), then a few MB around each cut: the
    first block whose magic lies at or after the target decodes (so it is real, not a
    chance match), and the cut goes at the block right after it, which that block's
    decoding proves to start where it ended. The ranges cover the file exactly.
    """
    if target_bytes < 1:
        raise ValueError("target_bytes must be positive")
    source = _Source(raw, size, name, chunk=1 << 20)
    if size < 4:
        raise TruncatedStreamError(name, 0, "not a bz2 file, or cut short: fewer than 4 bytes")
    source.load(0, 4)
    if source.buf[:3] != b"BZh" or not 0x31 <= source.buf[3] <= 0x39:
        raise CorruptStreamError(name, 0, "not a bz2 file (no BZh header)")
    if not source.tail_ok:
        raise TruncatedStreamError(name, size, "the bz2 stream is cut short: the file does not end with an end-of-stream marker")
    cuts: list[tuple[int, int]] = []  # (cut bit, the block before it)
    step = target_bytes * 8
    k = 1
    last = 0
    while True:
        pos = max(k * step, last)
        if pos >= source.total_bits:
            break
        found = _cut_after(source, pos)
        if found is None:
            break
        cuts.append(found)
        last = found[0]
        k = max(k + 1, last // step)
    ranges = []
    starts = [(0, -1), *cuts]
    for index, (start, prev) in enumerate(starts):
        end = starts[index + 1][0] if index + 1 < len(starts) else source.total_bits
        ranges.append(BlockRange(index, start, end, prev))
    return ranges


def _cut_after(source: _Source, pos: int) -> tuple[int, int] | None:
    """``(start of the block after the first real block at or after bit pos, that block)``; None past the last block."""
    source.load(pos >> 3, (pos >> 3) + 16)
    after = pos - 1
    # A block starts within MAX_BLOCK_BYTES of anywhere, except in a stream's last block.
    while (found := source.next_candidate(after, pos + (MAX_BLOCK_BYTES + 32) * 8)) is not None:
        after, kind = found
        if kind != _BLOCK:
            continue
        try:
            _, end, _ = source.decode_block(after)
        except Bz2StreamError:
            continue  # a chance match inside compressed data (or damage the reader will report)
        following = source.next_block_start(end)
        return None if following is None else (following, after)
    return None


def iter_blocks(raw: BinaryIO, size: int, start_bit: int = 0, name: str = "<bz2>") -> Iterator[Block]:
    """Decoded blocks from ``start_bit`` (0, or a range's ``start_bit``) to the end of the file, lazily.

    Raises ``TruncatedStreamError`` or ``CorruptStreamError`` where the file cannot be read on.
    """
    return _Source(raw, size, name).blocks(start_bit)


def _previous_text(source: _Source, block_range: BlockRange) -> bytes:
    if block_range.prev_bit < 0:
        return b""
    text, _, _ = source.decode_block(block_range.prev_bit)
    return text


def iter_line_records(
    raw: BinaryIO, size: int, block_range: BlockRange, name: str = "<bz2>", crc_pieces: list[CrcPiece] | None = None
) -> Iterator[Record]:
    """The lines (with their ``\\n``) whose first byte lies in ``block_range``, in file order.

    A line running past the range's end is finished from the blocks after it; a line
    started before the range (known from the block before it) is left to its owner.
    The file's last line comes without ``\\n`` when the file has none at its end.
    ``crc_pieces``, when given, receives what ``check_stream_crcs`` needs from this range.
    """
    source = _Source(raw, size, name, soft_end=(block_range.end_bit >> 3) + (64 << 10))
    previous = _previous_text(source, block_range)
    at_line_start = not previous or previous.endswith(b"\n")
    pending: list[bytes] | None = None
    pending_position = 0
    for block in source.blocks(block_range.start_bit, block_range.end_bit, crc_pieces):
        owned = block.bit < block_range.end_bit
        if not owned and pending is None:
            return
        text = block.data
        i = 0
        if pending is not None or not at_line_start:
            j = text.find(b"\n")
            if j < 0:
                if pending is not None:
                    pending.append(text)
                continue
            if pending is not None:
                pending.append(text[: j + 1])
                yield Record(pending_position, b"".join(pending))
                pending = None
            at_line_start = True
            i = j + 1
            if not owned:
                return
        n = len(text)
        find = text.find
        while i < n:
            j = find(b"\n", i)
            if j < 0:
                pending = [text[i:]]
                pending_position = pack_position(block.bit, i)
                break
            yield Record(pack_position(block.bit, i), text[i : j + 1])
            i = j + 1
    if pending is not None:
        yield Record(pending_position, b"".join(pending))


def iter_page_records(
    raw: BinaryIO, size: int, block_range: BlockRange, name: str = "<bz2>", crc_pieces: list[CrcPiece] | None = None
) -> Iterator[Record]:
    """The ``<page>`` .. ``</page>`` elements of a MediaWiki XML dump whose ``<page>`` starts in ``block_range``.

    ``<page>`` cannot occur inside a page's text (XML escapes ``<``), so the next one
    always starts the next page, and a page that reaches it without ``</page>`` ends
    there (broken: its parser rejects it alone). A page running past the range's end is finished from
    the blocks after it; a page the file ends inside is yielded as it is (its parser
    then rejects it). The range holding the file's end also checks that the dump
    closes with ``</mediawiki>``: a multistream file cut exactly between two streams
    is a valid bz2 file, but not a whole dump (``TruncatedStreamError``).
    ``crc_pieces`` as for ``iter_line_records``.
    """
    source = _Source(raw, size, name, soft_end=(block_range.end_bit >> 3) + (64 << 10))
    buf = _previous_text(source, block_range)
    marks = [(0, block_range.prev_bit)] if buf else []  # (index in buf where a block's text starts, its bit)
    scan = 0  # searched up to here
    start = -1  # where the page being read starts in buf, or -1
    start_position = 0
    for block in source.blocks(block_range.start_bit, block_range.end_bit, crc_pieces):
        owned = block.bit < block_range.end_bit
        keep = start if start >= 0 else max(scan, len(buf) - 64)  # a tag may straddle blocks; the trailer is short
        marks = [(index - keep, bit) for index, bit in marks]
        buf = buf[keep:] + block.data
        marks.append((len(buf) - len(block.data), block.bit))
        marks = _trim_marks(marks)
        scan -= keep
        if start >= 0:
            start -= keep
        scan = max(scan, 0)
        while True:
            if start >= 0:
                j = buf.find(_PAGE_CLOSE, max(scan, start + len(_PAGE_OPEN)))
                # A page that never closes before the next one opens is broken (a damaged dump): it
                # ends where the next begins, so it costs its parser one reject and the next page is read.
                k = buf.find(_PAGE_OPEN, max(scan - len(_PAGE_OPEN), start + len(_PAGE_OPEN)), j if j >= 0 else len(buf))
                if k >= 0:
                    yield Record(start_position, buf[start:k])
                    start, scan = -1, k
                    continue
                if j < 0:
                    scan = max(start, len(buf) - len(_PAGE_CLOSE) + 1)
                    break
                end = j + len(_PAGE_CLOSE)
                yield Record(start_position, buf[start:end])
                start, scan = -1, end
                continue
            j = buf.find(_PAGE_OPEN, scan)
            if j < 0:
                if not owned:  # read only for a tag begun in the last block of the range: there was none
                    return
                scan = max(scan, len(buf) - len(_PAGE_OPEN) + 1)
                break
            bit, offset = _locate(marks, j)
            if bit >= block_range.end_bit:
                return
            if bit < block_range.start_bit:  # the previous range's page
                scan = j + len(_PAGE_OPEN)
                continue
            start, start_position, scan = j, pack_position(bit, offset), j + len(_PAGE_OPEN)
    if start >= 0:
        yield Record(start_position, buf[start:])
    elif not buf.rstrip().endswith(_XML_END):
        raise TruncatedStreamError(name, size, "the XML dump ends without </mediawiki>: the file was cut short")


def _trim_marks(marks: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Drop marks of blocks whose text is wholly gone from the buffer (all but the last at or before index 0)."""
    first = 0
    for i, (index, _) in enumerate(marks):
        if index <= 0:
            first = i
    return marks[first:]


def _locate(marks: list[tuple[int, int]], index: int) -> tuple[int, int]:
    """``(block bit, offset in its text)`` of buffer index ``index``."""
    i = bisect.bisect_right([m[0] for m in marks], index) - 1
    return marks[i][1], index - marks[i][0]


def xml_prologue(raw: BinaryIO, size: int, name: str = "<bz2>") -> bytes:
    """The dump's text before its first ``<page>``: the ``<mediawiki>`` start tag and ``<siteinfo>``.

    Decodes blocks from the file's start only until the first ``<page>`` (one block in
    a single-stream dump; Wikimedia's multistream dumps hold it alone in their first
    stream), so a range that does not hold the header gets it cheaply. The whole text
    when the dump has no page.
    """
    text = b""
    for block in iter_blocks(raw, size, 0, name):
        text += block.data
        j = text.find(_PAGE_OPEN)
        if j >= 0:
            return text[:j]
    return text
