"""The release's gzip encoder: bytes that are a function of the text alone, on any CPU (docs/release.md, "The same bytes").

Why zlib-ng, and why the gzip frame is written here. A released file's md5 is published
in ``downloads.json.gz``, and a rebuild from the same dumps, settings and seed must give
the same bytes on any machine. ISA-L (``isal``), which the reader keeps for its speed,
chooses its deflate kernels by the CPU's features at run time, and its output differs
between them (126 of 136 test files between this x86-64 machine and aarch64, or an
x86-64 without SSE4.2: issue 54). zlib-ng's deflate makes the same choices on every
CPU: its SIMD parts only compare strings and compute checksums faster, the hash that
picks match candidates is the same everywhere, and the cross-CPU test
(tests/test_gzip_bytes.py, bench/cross_cpu_bench.py) holds it to that under qemu.

The deflate stream comes from zlib-ng, at ``LEVEL``, fed exactly ``CHUNK`` bytes at a
time (so the cut depends on the text alone even for levels whose output depends on how
input arrives); the gzip header and trailer are written here, the same 10 and 8 bytes
on every platform. zlib's own gzip header (``wbits=31``) records the operating system
the library was compiled for (3 on Linux, 19 on macOS, 10 on Windows) and Python's
``gzip`` module has changed how it cuts writes between versions (3.12 buffers them);
neither may decide the bytes.

The encoder's version is part of the promise: ``zlib-ng`` is pinned in pyproject.toml
and recorded in the manifest (``ENCODER``), and ``validate`` says when a release was
written by another. This module imports only the standard library and zlib-ng, so the
cross-CPU test can load it in a bare Python under qemu.
"""

from __future__ import annotations

import struct
from importlib import metadata
from typing import Protocol

from zlib_ng import zlib_ng

LEVEL = 2  # zlib-ng's deflate_fast: the size isal wrote at its level 2 (25.4% of the text) at ~250 MB/s a core
CHUNK = 1 << 20  # bytes of text per call into the compressor
WINDOW_BITS = 15
MEM_LEVEL = 8  # zlib's default
# ID1 ID2 CM=deflate FLG=0 MTIME=0 XFL=0 OS=255 (unknown): no name, no time, no platform
HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"


def _versions() -> tuple[str, str]:
    try:
        package = metadata.version("zlib-ng")
    except metadata.PackageNotFoundError:  # loaded by path (the cross-CPU test's bare Python)
        package = "unknown"
    return package, zlib_ng.ZLIBNG_VERSION


PACKAGE_VERSION, LIBRARY_VERSION = _versions()
ENCODER = {"encoder": "zlib-ng", "package": PACKAGE_VERSION, "library": LIBRARY_VERSION, "level": LEVEL, "chunk": CHUNK}
"""What wrote a release's .gz files, as the manifest records it (``gzip``)."""


class Sink(Protocol):
    def write(self, data: bytes, /) -> object: ...


class GzipEncoder:
    """Compress text into ``sink`` as one gzip member: call ``write`` any way, then ``close`` once.

    The text is cut into ``CHUNK``-byte slices before it reaches zlib-ng, whatever the
    sizes of the ``write`` calls, so the bytes depend only on the text.
    """

    def __init__(self, sink: Sink) -> None:
        self._sink = sink
        self._deflate = zlib_ng.compressobj(LEVEL, zlib_ng.DEFLATED, -WINDOW_BITS, MEM_LEVEL, zlib_ng.Z_DEFAULT_STRATEGY)
        self._pending = bytearray()
        self._crc = 0
        self._size = 0
        sink.write(HEADER)

    def write(self, text: bytes | bytearray | memoryview) -> None:
        """Append text."""
        view = memoryview(text).cast("B")
        self._crc = zlib_ng.crc32(view, self._crc)
        self._size += len(view)
        if self._pending:
            missing = CHUNK - len(self._pending)
            self._pending += view[:missing]
            if len(self._pending) < CHUNK:
                return
            self._compress(self._pending)
            self._pending = bytearray()
            view = view[missing:]
        whole = len(view) - len(view) % CHUNK
        for start in range(0, whole, CHUNK):
            self._compress(view[start : start + CHUNK])
        self._pending += view[whole:]

    def close(self) -> None:
        """Compress what is pending and write the end of the stream and the trailer (CRC-32, size mod 2**32)."""
        if self._pending:
            self._compress(self._pending)
            self._pending = bytearray()
        self._sink.write(self._deflate.flush(zlib_ng.Z_FINISH))
        self._sink.write(struct.pack("<II", self._crc & 0xFFFFFFFF, self._size & 0xFFFFFFFF))

    def _compress(self, piece: bytes | bytearray | memoryview) -> None:
        out = self._deflate.compress(piece)
        if out:
            self._sink.write(out)


class _Buffer(bytearray):
    def write(self, data: bytes) -> None:
        self.extend(data)


def gzip_bytes(text: bytes | bytearray | memoryview) -> bytes:
    """The released bytes of a file holding ``text``: what the writers stream, in one call."""
    out = _Buffer()
    encoder = GzipEncoder(out)
    encoder.write(text)
    encoder.close()
    return bytes(out)
