"""Streaming raw inflate with the calls Python's ``zlib`` module does not expose, from zlib-ng.

Reading a huge gzip dump in ranges (``gzip_decoder``, which ``gzip_index`` and
``gzip_ranges`` drive; ``gzip_parts``) needs ``inflate(Z_BLOCK)`` (stop at each
deflate block boundary), ``inflatePrime`` (start at a bit offset) and
``inflateSetDictionary`` (start with a known window). Those are
zlib's C API, reached here through ctypes. The library is zlib-ng, the one the
``zlib-ng`` package (python-zlib-ng, the pycompression project's) builds into its
extension module and exports in its native ``zng_`` names: it inflates the Enterprise
HTML dumps 3.4x as fast as the system zlib on one core (docs/benchmarks.md,
2026-11-26, "zlib-ng"), where inflating had become the largest cost of reading them.
The bytes are the same whichever library inflates (deflate has one decoding), and both
check the same things. ctypes releases the GIL around every call.
"""

from __future__ import annotations

import ctypes
from types import SimpleNamespace

from zlib_ng import zlib_ng

# zlib.h's constants (zlib-ng keeps them)
Z_NO_FLUSH, Z_BLOCK = 0, 5
Z_OK, Z_STREAM_END, Z_NEED_DICT = 0, 1, 2
Z_DATA_ERROR, Z_MEM_ERROR, Z_BUF_ERROR = -3, -4, -5


class ZStream(ctypes.Structure):
    """zlib-ng's ``zng_stream`` (zlib-ng.h): zlib's ``z_stream`` with 32-bit ``adler``."""

    _fields_ = [
        ("next_in", ctypes.c_void_p),
        ("avail_in", ctypes.c_uint32),
        ("total_in", ctypes.c_size_t),
        ("next_out", ctypes.c_void_p),
        ("avail_out", ctypes.c_uint32),
        ("total_out", ctypes.c_size_t),
        ("msg", ctypes.c_char_p),
        ("state", ctypes.c_void_p),
        ("zalloc", ctypes.c_void_p),
        ("zfree", ctypes.c_void_p),
        ("opaque", ctypes.c_void_p),
        ("data_type", ctypes.c_int),
        ("adler", ctypes.c_uint32),
        ("reserved", ctypes.c_ulong),
    ]


_LIB: SimpleNamespace | None = None


def library() -> SimpleNamespace:
    """zlib-ng's functions, typed, loaded once: ``init2``, ``reset2``, ``inflate``, ``end``, ``prime``, ``set_dictionary``, ``crc32_combine``."""
    global _LIB
    if _LIB is None:
        lib = ctypes.CDLL(zlib_ng.__file__)
        stream = ctypes.POINTER(ZStream)
        functions = {
            "init2": ("zng_inflateInit2", [stream, ctypes.c_int32], ctypes.c_int32),
            "reset2": ("zng_inflateReset2", [stream, ctypes.c_int32], ctypes.c_int32),
            "inflate": ("zng_inflate", [stream, ctypes.c_int32], ctypes.c_int32),
            "end": ("zng_inflateEnd", [stream], ctypes.c_int32),
            "prime": ("zng_inflatePrime", [stream, ctypes.c_int32, ctypes.c_int32], ctypes.c_int32),
            "set_dictionary": ("zng_inflateSetDictionary", [stream, ctypes.c_char_p, ctypes.c_uint32], ctypes.c_int32),
            "crc32_combine": ("zng_crc32_combine", [ctypes.c_uint32, ctypes.c_uint32, ctypes.c_int64], ctypes.c_uint32),
        }
        bound = {}
        for name, (symbol, argtypes, restype) in functions.items():
            function = getattr(lib, symbol)
            function.argtypes, function.restype = argtypes, restype
            bound[name] = function
        _LIB = SimpleNamespace(**bound)
    return _LIB


class Inflater:
    """One zlib-ng inflate stream; ``stream`` is its ``zng_stream`` (set ``next_in``/``avail_in``/``next_out``/``avail_out`` on it)."""

    def __init__(self) -> None:
        self.lib = library()
        self.stream = ZStream()
        self.ref = ctypes.byref(self.stream)
        self.started = False

    def reset(self, window_bits: int) -> None:
        """Start a stream: ``window_bits`` 31 for a gzip member, -15 for raw deflate (zlib's meaning)."""
        ret = self.lib.reset2(self.ref, window_bits) if self.started else self.lib.init2(self.ref, window_bits)
        self.started = self.started or ret == Z_OK
        if ret != Z_OK:
            raise MemoryError(f"zlib-ng could not start a decoder (code {ret})")

    def prime(self, bits: int, value: int) -> None:
        """Feed ``bits`` low bits of ``value`` first: the rest of a byte a block starts inside."""
        if self.lib.prime(self.ref, bits, value) != Z_OK:
            raise MemoryError("zlib-ng refused inflatePrime")

    def set_dictionary(self, window: bytes) -> None:
        """The 32 KiB before a raw stream's start, which its back-references may reach."""
        if self.lib.set_dictionary(self.ref, window, len(window)) != Z_OK:
            raise MemoryError("zlib-ng refused inflateSetDictionary")

    def inflate(self, flush: int) -> int:
        """One ``inflate`` call: zlib's return code."""
        return self.lib.inflate(self.ref, flush)

    def message(self) -> str:
        """The decoder's last error message ("" if none)."""
        return (self.stream.msg or b"").decode("ascii", "replace")

    def close(self) -> None:
        if self.started:
            self.lib.end(self.ref)
            self.started = False


def crc32_combine(first: int, second: int, second_length: int) -> int:
    """The CRC-32 of two stretches from theirs and the second's length (Python's ``zlib`` lacks it)."""
    return library().crc32_combine(first, second, second_length) & 0xFFFFFFFF
