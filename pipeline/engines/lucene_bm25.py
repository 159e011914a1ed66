"""Lucene's BM25 arithmetic, float for float, so that scores and tie order match Elasticsearch.

Lucene 8-10's ``BM25Similarity`` (Elasticsearch 7.0 on; ES 8 runs Lucene 9) scores a
term in a document's field as::

    weight - weight / (1 + freq * norm_inverse[norm_byte])      (float32 throughout)
    weight       = boost * idf
    idf          = (float) ln(1 + (N - n + 0.5) / (n + 0.5))     (computed in double)
    norm_inverse = 1 / (k1 * ((1 - b) + b * dl / avgdl))         (a 256-entry cache)
    avgdl        = (float) (sumTotalTermFreq / (double) N)

which is ``boost * idf * freq / (freq + k1 * (1 - b + b * dl / avgdl))`` rewritten to
stay monotonic in float arithmetic. There is no ``(k1 + 1)`` numerator factor
(LUCENE-8563, Lucene 8.0; Elasticsearch dropped its legacy similarity in 7.0). N is
the number of documents with the field, n those with the term in the field, and dl
the field's token count as stored in one byte (``SmallFloat.intToByte4``): exact up
to 23, then 4 significant bits, so a 100-token field scores as if it had 96 tokens.
A query's clauses add up in double and the sum is cast to float, as Lucene's
disjunction scorers do.

The norm bytes and the norm cache are computed here; the kernels compute the weights
and the clause scores from them (``embedded.scoring``).
"""

from __future__ import annotations

import numpy as np

# SmallFloat: byte values below this hold the length itself; from here on they hold
# 4-bit floats of (length - 24). 24 = 255 - intToByte4's code of Integer.MAX_VALUE.
_FREE_VALUES = 24


def _int4(values: np.ndarray) -> np.ndarray:
    """``SmallFloat.longToInt4``: 3 explicit mantissa bits, shift + 1 above them."""
    values = values.astype(np.int64)
    bits = np.frexp(values.astype(np.float64))[1].astype(np.int64)  # bit length, exact below 2**53
    shift = np.maximum(bits - 4, 0)
    normal = ((values >> shift) & 0x07) | ((shift + 1) << 3)
    return np.where(bits < 4, values, normal)


def int_to_byte4(lengths: np.ndarray | int) -> np.ndarray:
    """Lucene's norm byte of field lengths (``SmallFloat.intToByte4``), as uint8."""
    lengths = np.asarray(lengths, dtype=np.int64)
    if (lengths < 0).any():
        raise ValueError("field lengths must be non-negative")
    high = _FREE_VALUES + _int4(np.maximum(lengths - _FREE_VALUES, 0))
    return np.where(lengths < _FREE_VALUES, lengths, high).astype(np.uint8)


def byte4_to_int(codes: np.ndarray | int) -> np.ndarray:
    """The field length a norm byte stands for (``SmallFloat.byte4ToInt``)."""
    codes = np.asarray(codes, dtype=np.int64)
    j = np.maximum(codes - _FREE_VALUES, 0)
    shift = (j >> 3) - 1
    decoded = np.where(shift < 0, j & 0x07, ((j & 0x07) | 0x08) << np.maximum(shift, 0))
    return np.where(codes < _FREE_VALUES, codes, _FREE_VALUES + decoded)


LENGTH_TABLE = byte4_to_int(np.arange(256)).astype(np.float32)


def avg_field_length(sum_total_term_freq: int, doc_count: int) -> np.float32:
    """``(float) (sumTotalTermFreq / (double) docCount)``; 1 for a field no document has."""
    if doc_count == 0:
        return np.float32(1.0)
    return np.float32(sum_total_term_freq / doc_count)


def norm_inverse_cache(k1: float, b: float, avgdl: np.float32) -> np.ndarray:
    """``1f / (k1 * ((1 - b) + b * LENGTH_TABLE[i] / avgdl))`` for every norm byte, in float32."""
    k1_, b_, avgdl_ = np.float32(k1), np.float32(b), np.float32(avgdl)
    one = np.float32(1.0)
    with np.errstate(divide="ignore"):  # k1 = 0 gives infinity, as in Java
        return one / (k1_ * ((one - b_) + b_ * LENGTH_TABLE / avgdl_))
