"""The block codec of the embedded engine's postings: FOR-packed blocks of ``BLOCK`` postings.

Every term's posting list (documents in index order) is cut into blocks of ``BLOCK``
postings: the gaps between document ids (minus one) and the frequencies (minus one),
each bit-packed at the width of the block's largest value (FOR coding, as Lucene's
postings do), with each block's last document, word offset and two bit widths beside
it. Common terms pack to a few bits a posting, rare ones to about log2(documents /
df); see ``EmbeddedEngine.memory``.

The codec's readers take the blocks as any tuple with the fields of ``Blocks``
(``block_last``, ``block_start``, ``doc_bits``, ``tf_bits``, ``words``): ``Blocks``
itself, or the ``KernelIndex`` the searches take (numba compiles each for its type).
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np
from llvmlite import ir
from numba.core import types
from numba.extending import intrinsic

BLOCK = 128  # postings per block: the unit of packing, skipping and maximum scores
NO_MORE = np.int32(np.iinfo(np.int32).max)  # a cursor past its last posting


class Blocks(NamedTuple):
    """The packed blocks of both fields (``Postings`` holds them); what the codec reads."""

    block_last: np.ndarray  # int32 [blocks]: the last document of each block
    block_start: np.ndarray  # uint32 [blocks + 1]: each block's first word in ``words``
    doc_bits: np.ndarray  # uint8 [blocks]: bits of each document gap (gap - 1)
    tf_bits: np.ndarray  # uint8 [blocks]: bits of each frequency (tf - 1)
    words: np.ndarray  # uint32 [block_start[-1] + 2]: the packed blocks, and spare words to read past them


def blocks_per_term(indptr: np.ndarray) -> np.ndarray:
    """Blocks of each term's posting list (the last one may hold fewer than ``BLOCK``)."""
    return (np.diff(indptr, axis=-1) + BLOCK - 1) // BLOCK


@numba.njit(nogil=True, cache=True, error_model="numpy")
def _bit_length(value):
    bits = 0
    while value:
        bits += 1
        value >>= 1
    return bits


@numba.njit(nogil=True, cache=True, error_model="numpy")
def _layout(indptr, docs, tfs, b, word, block_last, block_start, doc_bits, tf_bits):
    """Each block's last document, bit widths and first word, from block ``b`` and word ``word`` on; returns where they end."""
    for t in range(indptr.shape[0] - 1):
        prev = -1
        for s in range(indptr[t], indptr[t + 1], BLOCK):
            e = min(s + BLOCK, indptr[t + 1])
            gaps = 0
            freqs = 0
            for p in range(s, e):
                gaps |= docs[p] - prev - 1
                prev = docs[p]
                freqs |= np.int64(tfs[p]) - 1
            doc_bits[b] = _bit_length(gaps)
            tf_bits[b] = _bit_length(freqs)
            block_last[b] = prev
            block_start[b] = word
            word += ((e - s) * (np.int64(doc_bits[b]) + np.int64(tf_bits[b])) + 31) // 32
            b += 1
    return b, word


@numba.njit(nogil=True, cache=True, inline="always", error_model="numpy")
def _put(words, bit, width, value):
    i = bit >> 5
    shifted = np.uint64(value) << np.uint64(bit & 31)
    words[i] |= np.uint32(shifted & np.uint64(0xFFFFFFFF))
    if (bit & 31) + width > 32:
        words[i + 1] |= np.uint32(shifted >> np.uint64(32))


@numba.njit(nogil=True, cache=True, inline="always", error_model="numpy")
def _get(words, bit, mask):
    # Unsigned: numba then skips its negative-index wraparound (measured 2x on this loop).
    i = np.uint64(bit) >> np.uint64(5)
    pair = (np.uint64(words[i + np.uint64(1)]) << np.uint64(32)) | np.uint64(words[i])
    return np.int64((pair >> (np.uint64(bit) & np.uint64(31))) & mask)


@numba.njit(nogil=True, cache=True, error_model="numpy")
def _pack(indptr, docs, tfs, b, block_start, doc_bits, tf_bits, words):
    for t in range(indptr.shape[0] - 1):
        prev = -1
        for s in range(indptr[t], indptr[t + 1], BLOCK):
            e = min(s + BLOCK, indptr[t + 1])
            bit = np.int64(block_start[b]) * 32
            db = np.int64(doc_bits[b])
            for p in range(s, e):
                if db:
                    _put(words, bit, db, docs[p] - prev - 1)
                    bit += db
                prev = docs[p]
            tb = np.int64(tf_bits[b])
            if tb:
                for p in range(s, e):
                    _put(words, bit, tb, np.int64(tfs[p]) - 1)
                    bit += tb
            b += 1
    return b


def pack(fields: list[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> Blocks:
    """The blocks of the fields' posting lists, each given as CSR ``(indptr, docs, tfs)``, one field's terms after another's."""
    blocks = sum(int(blocks_per_term(indptr).sum()) for indptr, _, _ in fields)
    block_last = np.empty(blocks, np.int32)
    block_start = np.empty(blocks + 1, np.int64)
    doc_bits = np.empty(blocks, np.uint8)
    tf_bits = np.empty(blocks, np.uint8)
    block, word = 0, 0
    for indptr, docs, tfs in fields:
        block, word = _layout(indptr, docs, tfs, block, word, block_last, block_start, doc_bits, tf_bits)
    block_start[blocks] = word
    if word >= 2**32:
        raise ValueError(f"{word * 4:,} bytes of postings: more than one index holds (16 GiB); index fewer documents at once")
    block_start = block_start.astype(np.uint32)
    words = np.zeros(word + 2, np.uint32)
    block = 0
    for indptr, docs, tfs in fields:
        block = _pack(indptr, docs, tfs, block, block_start, doc_bits, tf_bits, words)
    return Blocks(block_last, block_start, doc_bits, tf_bits, words)


@numba.njit(nogil=True, cache=True, inline="always", error_model="numpy")
def _decode(words, start_word, n, db, tb, base, out_docs, out_tfs):
    """Block postings into ``out_docs`` (int32) and ``out_tfs`` (float32 as scores use them, or int64)."""
    bit = np.int64(start_word) * 32
    doc = np.int64(base)
    if db == 0:
        for i in range(n):
            doc += 1
            out_docs[i] = doc
    else:
        mask = (np.uint64(1) << np.uint64(db)) - np.uint64(1)
        for i in range(n):
            doc += _get(words, bit, mask) + 1
            bit += db
            out_docs[i] = doc
    if tb == 0:
        for i in range(n):
            out_tfs[i] = 1
    else:
        mask = (np.uint64(1) << np.uint64(tb)) - np.uint64(1)
        for i in range(n):
            out_tfs[i] = _get(words, bit, mask) + 1
            bit += tb


@numba.njit(nogil=True, cache=True, inline="always", error_model="numpy")
def _decode_block(b, b0, df, blocks, out_docs, out_tfs):
    """Decode block ``b`` of the term whose first block is ``b0`` (``blocks``: a ``Blocks`` or a ``KernelIndex``); returns its posting count."""
    n = min(BLOCK, df - (b - b0) * BLOCK)
    base = blocks.block_last[b - 1] if b > b0 else -1
    _decode(blocks.words, blocks.block_start[b], n, np.int64(blocks.doc_bits[b]), np.int64(blocks.tf_bits[b]), base, out_docs, out_tfs)
    return n


@numba.njit(nogil=True, cache=True, error_model="numpy")
def _unpack_all(indptr, block_ptr, blocks, docs, tfs):
    for t in range(indptr.shape[0] - 1):
        df = indptr[t + 1] - indptr[t]
        p = indptr[t]
        for b in range(block_ptr[t], block_ptr[t + 1]):
            n = _decode_block(b, block_ptr[t], df, blocks, docs[p:], tfs[p:])
            p += n


# ---- bits of machine words ---------------------------------------------------------------


@intrinsic
def _trailing_zeros(typingctx, value):
    """The index of the lowest set bit of a non-zero uint64 (LLVM's cttz)."""

    def codegen(context, builder, signature, args):
        return builder.cttz(args[0], ir.Constant(ir.IntType(1), 1))

    return types.uint64(types.uint64), codegen


@intrinsic
def _float_bits(typingctx, value):
    """The IEEE bits of a float32, as a uint32."""

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(32))

    return types.uint32(types.float32), codegen


@intrinsic
def _bits_float(typingctx, value):
    """The float32 whose IEEE bits are a uint32."""

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.FloatType())

    return types.float32(types.uint32), codegen
