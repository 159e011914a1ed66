"""Drive zlib-ng's inflate over a gzip file, from its first byte or from a checkpoint inside it.

A gzip member is one deflate stream: decoding byte N needs everything before it. To read
a huge dump in ranges (``gzip_index`` builds the seek index, ``gzip_ranges`` reads ranges
through it, ``gzip_parts`` builds the index in parallel parts), a decoder must stop at a
deflate block boundary, say where it stopped to the bit, and start again there with the
32 KiB of output before it as its dictionary. ``Decoder`` is that driver, shared by the
three: it decodes into memory its caller owns, across gzip members, and fails with
``GzipStreamError`` (one line naming the file and the offsets) on a stream cut short,
corrupt, or followed by bytes that are no gzip member.

Why a hand-written decoder driver (ctypes to zlib-ng, ``clirmatrix.pipeline.io.inflate``, as
``indexed_gzip``'s zran.c does in C with zlib): checkpoints at bit offsets need ``inflate(Z_BLOCK)``,
``inflatePrime`` and ``inflateSetDictionary``, which Python's ``zlib`` does not expose.
The libraries that do, ``indexed_gzip`` 1.10.3 and ``rapidgzip`` 0.16.2, were measured
to read a gzip file cut short as a shorter file without an error (indexed_gzip at 132,
rapidgzip at 98 of 140 cut points; this decoder at none: ``bench/gzip_ranges_bench.py
--truncation``), which this project must never do, and neither checks the bytes read
through an imported index. ctypes releases the GIL around every inflate call, so the next
compressed chunk is read in a thread meanwhile. See docs/scale.md, "Big files".
"""

from __future__ import annotations

import concurrent.futures
import ctypes
from typing import BinaryIO

from clirmatrix.pipeline.io.badinput import CORRUPT_STREAM, TRUNCATED_STREAM, DamagedInputError
from clirmatrix.pipeline.io.inflate import Z_BLOCK, Z_BUF_ERROR, Z_DATA_ERROR, Z_MEM_ERROR, Z_NEED_DICT, Z_NO_FLUSH, Z_OK, Z_STREAM_END, Inflater

WINDOW = 32768  # deflate's history: what a resumed decoder needs
READ_SIZE = 4 << 20  # compressed bytes per read of ``raw``
BUFFER = 8 << 20  # decoded bytes per buffer

_GZIP_MAGIC = b"\x1f\x8b"


class GzipStreamError(DamagedInputError):
    """A gzip file that cannot be read to its end (``kind``: truncated_stream or corrupt_stream)."""

    def __init__(self, path: str, kind: str, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path
        self.kind = kind


def buffer_address(buffer: bytearray) -> int:
    return ctypes.addressof((ctypes.c_char * len(buffer)).from_buffer(buffer))


class Decoder:
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
