"""The pruned search: block-max MaxScore, exact (``_search_pruned``), as Lucene 9's ``MaxScoreBulkScorer``.

Under the collection statistics in use, each block's largest ``1 + tf *
norm_inverse[norm]`` gives its exact largest score for any clause weight (the score is
monotonic in it). Documents are visited in order, window by window; in each window the
clauses whose window maxima together cannot beat the current k-th score are
"non-essential" (a clause whose next document lies past the window counts zero): only
documents of the other clauses are candidates, and a candidate consults the
non-essential clauses (largest first) only while its score can still get in. One
essential clause yields its postings directly; several add their scores term at a
time into a window of ``WINDOW`` documents whose hit bits then list the candidates in
order. A window no clause can win is skipped without decoding; a window's maximum
reads at most ``WINDOW_BLOCKS`` blocks of a list (a list denser than that in the
window takes its whole list's maximum), and cursors skip blocks by galloping, so a
common term's list costs a query the blocks it lands in, not every block. Under
``best_fields`` a field whose clauses left can no longer beat the k-th score is
dropped for the rest of the query: it can no longer decide any document that ranks.
Before the first document, the query's k-th score is known to reach at least the
largest of its clauses' floors (the ``FLOOR_K``-th best score of each list: those
documents score at least that much), so pruning starts at once.

Titles are short, so each document also keeps a 16-bit signature of its title terms
(``Postings.signatures``): a clear bit proves a term absent, so a batch's candidates
are first bounded with only the non-essential title clauses their signatures allow
(without branches), and a title probe whose bit is clear is skipped. Visiting
documents in order, a candidate enters the top k only with a strictly larger score
than the k-th, which is exactly Lucene's tie order, so pruned results equal
``search(..., exhaustive=True)`` (every posting scored, the oracle) hit for hit and bit
for bit: the clause scores are the same float32 values and their double sums are exact
in any order (tested on every analyzer family and on adversarial cases in
tests/test_engine_pruning.py). docs/engine.md gives the argument and the measurements.

A query's clauses move through their lists on cursors, one record a clause
(``CURSOR``: the same int64 layout as a row of a matrix, with named fields). Entering
a block decodes its documents into the clause's row of a buffer; a frequency is
decoded only for a posting that is scored (it sits at a computable bit offset).
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np

from clirmatrix.pipeline.engines.embedded.codec import BLOCK, NO_MORE, _get, _trailing_zeros
from clirmatrix.pipeline.engines.embedded.heap import _drain, _offer
from clirmatrix.pipeline.engines.embedded.index import FLOOR_K, _signature_bit
from clirmatrix.pipeline.engines.embedded.scoring import UP, _clause_buffers, _clauses, _combine, _term_score

WINDOW_BLOCKS = 16  # blocks of one clause read for a window's maximum; a window wider than that takes the list's maximum
WINDOW = 2048  # documents whose essential clause scores are summed at once (two float64 arrays: L1-sized)

# A clause's cursor: where it stands in its posting list.
CURSOR = np.dtype([
    ("field", np.int64),  # 0 title, 1 text
    ("b0", np.int64),  # the list's first block
    ("b1", np.int64),  # past its last block
    ("df", np.int64),  # its postings
    ("blk", np.int64),  # the block it is on (b0 - 1 before the first, b1 past the last)
    ("idx", np.int64),  # the posting it is on, in the block
    ("doc", np.int64),  # that posting's document (-1 before the first, NO_MORE past the last)
    ("n", np.int64),  # postings in the block
    ("bit", np.int64),  # where the block's frequencies start in ``words``
    ("tb", np.int64),  # bits of each frequency in the block
    ("shallow", np.int64),  # the first block that can hold the current window's first document (no decoding)
])  # fmt: skip


class Scratch(NamedTuple):
    """The pruned kernel's buffers, allocated once a call (``_search_pruned``): per clause, per window and per batch of candidates."""

    heap_s: np.ndarray  # float32 [k]: the top k's scores
    heap_d: np.ndarray  # int32 [k]: and documents
    terms: np.ndarray  # int64 [clauses]: ``Clauses``' fields
    fields: np.ndarray  # int64 [clauses]
    weights: np.ndarray  # float32 [clauses]
    docs: np.ndarray  # int32 [clauses, BLOCK]: each clause's block, decoded
    window_max: np.ndarray  # float64 [clauses]: each clause's largest score in the window
    order: np.ndarray  # int64 [clauses]: the non-essential clauses first, each group by window maximum
    pre_t: np.ndarray  # float64 [clauses + 1]: running sums of the window maxima of title clauses, in ``order``
    pre_x: np.ndarray  # float64 [clauses + 1]: of text clauses
    essential: np.ndarray  # bool [clauses]
    term_max: np.ndarray  # float64 [clauses]: each clause's largest score over its whole list
    window_sums: np.ndarray  # float64 [2, WINDOW]: per field, the essential clauses' scores of each document of the window
    window_hits: np.ndarray  # uint64 [WINDOW / 64]: the window's documents that have any
    batch_docs: np.ndarray  # int64 [WINDOW]: candidates, in order
    batch_sums: np.ndarray  # float64 [2, WINDOW]: and their per-field sums
    bits: np.ndarray  # uint64 [clauses]: a title clause's signature bit (0 for text)
    title_bits: np.ndarray  # uint64 [clauses]: the window's non-essential title clauses' bits
    title_max: np.ndarray  # float64 [clauses]: and window maxima


@numba.njit(nogil=True, cache=True, error_model="numpy")
def _search_pruned(queries, merged, lo_q, hi_q, k, ix, out):
    """Allocate the kernel's buffers (the kernel itself allocates nothing, see ``_search_pruned_kernel``)."""
    clauses = _clause_buffers(queries.ptr, lo_q, hi_q)
    m = clauses.terms.shape[0]
    scratch = Scratch(
        np.empty(k, np.float32), np.empty(k, np.int32), clauses.terms, clauses.fields, clauses.weights,
        np.empty((m, BLOCK), np.int32), np.empty(m, np.float64), np.empty(m, np.int64),
        np.empty(m + 1, np.float64), np.empty(m + 1, np.float64), np.empty(m, np.bool_), np.empty(m, np.float64),
        np.zeros((2, WINDOW), np.float64), np.zeros(WINDOW // 64, np.uint64), np.empty(WINDOW, np.int64), np.empty((2, WINDOW), np.float64),
        np.empty(m, np.uint64), np.empty(m, np.uint64), np.empty(m, np.float64),
    )  # fmt: skip
    _search_pruned_kernel(queries, merged, lo_q, hi_q, k, ix, out, np.zeros(m, CURSOR), scratch)


# No reference counting in the kernel (``_nrt=False``): it allocates nothing, and numba's
# increments and decrements of the arrays handed to inlined helpers, left inside the
# per-document loops, took 80-90% of its time (measured with perf on this kernel).
@numba.njit(nogil=True, cache=True, error_model="numpy", _nrt=False)
def _search_pruned_kernel(queries, merged, lo_q, hi_q, k, ix, out, cur, s):
    """Queries ``lo_q:hi_q`` of ``queries`` (``QueryBatch``) not ``merged``, over ``ix`` (``KernelIndex``), into their rows of ``out`` (``Results``).

    ``cur``: a ``CURSOR`` a clause; ``s``: the ``Scratch`` buffers.
    """
    most_fields = ix.most_fields
    for q in range(lo_q, hi_q):
        if merged[q]:
            continue
        n = _clauses(q, queries, ix, s)
        floor = -np.inf  # the k-th hit scores at least this: k documents of one clause's list do
        for c in range(n):
            f, term, w = s.fields[c], s.terms[c], s.weights[c]
            cc = cur[c]
            cc.field = f
            cc.b0 = ix.block_ptr[f, term]
            cc.b1 = ix.block_ptr[f, term + 1]
            cc.df = ix.indptr[f, term + 1] - ix.indptr[f, term]
            cc.blk = ix.block_ptr[f, term] - 1  # before its first block
            cc.doc = -1
            cc.shallow = ix.block_ptr[f, term]
            s.bits[c] = _signature_bit(term) if f == 0 else np.uint64(0)
            top = ix.term_maxima[f, term]
            s.term_max[c] = np.float64(w - w / top) if top > 0 else 0.0
            if k <= FLOOR_K and ix.term_floors[f, term] > 0:
                floor = max(floor, np.float64(w - w / ix.term_floors[f, term]))
            s.essential[c] = True
            s.order[c] = c
        if floor > -np.inf:  # just below: a document scoring exactly the floor may still rank (ties)
            floor = np.float64(np.nextafter(np.float32(floor), np.float32(-np.inf)))
        size = 0
        theta = floor  # a document must score above it
        lo = 0
        while n:
            for c in range(n):  # shallow advance: the first block that can hold lo
                cur[c].shallow = _first_block(ix.block_last, cur[c].shallow, cur[c].b1, lo)
            if not _any_left(n, cur, s.term_max, theta, most_fields):
                break
            hi = _window_end(n, cur, s.essential, s.order, ix.block_last)
            non_essential = 0
            if theta == -np.inf:
                for c in range(n):
                    s.order[c] = c
                    s.essential[c] = True
            else:
                while True:  # a window and its essential clauses depend on each other: shrink until stable
                    non_essential = _partition(n, hi, theta, most_fields, cur, s.weights, ix.block_last, ix.maxima, s.term_max, s.window_max, s.order, s.pre_t, s.pre_x, s.essential)
                    if non_essential == n:
                        break
                    shorter = _window_end(n, cur, s.essential, s.order, ix.block_last)
                    if shorter >= hi:
                        break
                    hi = shorter
            if non_essential < n:
                for i in range(non_essential, n):
                    _advance(s.order[i], lo, cur, s.docs, ix)
                n_title = _title_bounds(non_essential, cur, s)
                rest_x = s.pre_x[non_essential] if non_essential else 0.0  # the non-essential text clauses' maxima (pre_x is set only when some are)
                while True:  # the essential clauses' documents in the window, a batch at a time, in order
                    if non_essential == n - 1:  # one essential clause: its postings are the documents
                        found = _gather_one(s.order[non_essential], hi, cur, s, ix)
                    else:
                        found = _gather_window(non_essential, n, hi, cur, s, ix)
                    if found == 0:
                        break
                    found = _drop_hopeless(found, theta, n_title, rest_x, s, ix)
                    for g in range(found):
                        d = s.batch_docs[g]
                        score = _complete(d, s.batch_sums[0, g], s.batch_sums[1, g], non_essential, theta, cur, s, ix)
                        if score > theta:  # documents come in order: a tie with the k-th ranks below it
                            size = _offer(s.heap_s, s.heap_d, size, k, score, d)
                            if size == k:
                                theta = max(np.float64(s.heap_s[0]), floor)
            if hi >= NO_MORE:
                break
            lo = hi + 1
        _drain(s.heap_s, s.heap_d, size, q, out)


# ---- cursors ---------------------------------------------------------------------------


@numba.njit(nogil=True, cache=True, inline="always", error_model="numpy")
def _enter(c, b, cur, docs, ix):
    """Put clause ``c`` on the first posting of block ``b``, its documents decoded into ``docs[c]``."""
    cc = cur[c]
    n = min(BLOCK, cc.df - (b - cc.b0) * BLOCK)
    bit = np.int64(ix.block_start[b]) * 32
    db = np.int64(ix.doc_bits[b])
    cc.blk = b
    cc.idx = 0
    cc.n = n
    cc.bit = bit + n * db  # where the frequencies start
    cc.tb = np.int64(ix.tf_bits[b])
    doc = np.int64(ix.block_last[b - 1]) if b > cc.b0 else np.int64(-1)
    if db == 0:
        for i in range(n):
            docs[c, i] = doc + 1 + i
    else:
        mask = (np.uint64(1) << np.uint64(db)) - np.uint64(1)
        for i in range(n):
            doc += _get(ix.words, bit, mask) + 1
            bit += db
            docs[c, i] = doc
    cc.doc = docs[c, 0]


@numba.njit(nogil=True, cache=True, inline="always", error_model="numpy")
def _tf(cc, i, words):
    """The frequency of posting ``i`` of the block of the clause whose cursor is ``cc``, as scores use it."""
    tb = cc.tb
    if tb == 0:
        return np.float32(1.0)
    return np.float32(_get(words, cc.bit + i * tb, (np.uint64(1) << np.uint64(tb)) - np.uint64(1)) + 1)


@numba.njit(nogil=True, cache=True, inline="always", error_model="numpy")
def _score(c, d, cur, weights, ix):
    """Clause ``c``'s float32 score of document ``d``, its current posting, in Lucene's order of operations."""
    cc = cur[c]
    f = cc.field
    return _term_score(weights[c], _tf(cc, cc.idx, ix.words), ix.caches[f, ix.norms[f, d]])


@numba.njit(nogil=True, cache=True, inline="always", error_model="numpy")
def _next(c, cur, docs, ix):
    """Move clause ``c`` (on a posting) to its next posting."""
    cc = cur[c]
    i = cc.idx + 1
    if i < cc.n:
        cc.idx = i
        cc.doc = docs[c, i]
    elif cc.blk + 1 < cc.b1:
        _enter(c, cc.blk + 1, cur, docs, ix)
    else:
        cc.doc = NO_MORE


@numba.njit(nogil=True, cache=True, inline="always", error_model="numpy")
def _advance(c, target, cur, docs, ix):
    """Move clause ``c`` to its first document >= ``target``, skipping whole blocks by their last document."""
    cc = cur[c]
    if cc.doc >= target:
        return
    b = cc.blk
    if b < cc.b0 or ix.block_last[b] < target:  # not in this block (or not started): find the block
        b = _first_block(ix.block_last, max(b + 1, cc.shallow), cc.b1, target)
        if b == cc.b1:
            cc.blk = b
            cc.doc = NO_MORE
            return
        _enter(c, b, cur, docs, ix)
    i = cc.idx
    while docs[c, i] < target:  # the block's last document is >= target
        i += 1
    cc.idx = i
    cc.doc = docs[c, i]


@numba.njit(nogil=True, cache=True, inline="always", error_model="numpy")
def _first_block(block_last, s, end, target):
    """The first block from ``s`` (before ``end``) whose last document is >= ``target``, or ``end``.

    Galloping, then halving: a common term's list is skipped over in steps that double,
    so a query pays for the blocks it lands in, not for every block in between.
    """
    if s >= end or block_last[s] >= target:
        return s
    step = 1
    while s + step < end and block_last[s + step] < target:  # block_last[s] < target holds throughout
        s += step
        step *= 2
    hi = min(s + step, end)  # block_last[hi] >= target, or hi == end
    while hi - s > 1:
        mid = (s + hi) // 2
        if block_last[mid] < target:
            s = mid
        else:
            hi = mid
    return hi


@numba.njit(nogil=True, cache=True, inline="always", error_model="numpy")
def _settle(c, j, d, limit, cur, docs, ix):
    """Leave clause ``c`` on posting ``j`` of its block (document ``d``) after reading it up to ``limit``, or on its next block when ``d <= limit`` was its last."""
    if d <= limit:
        cur[c].idx = j - 1
        _next(c, cur, docs, ix)
    else:
        cur[c].idx = j
        cur[c].doc = d


# ---- windows ---------------------------------------------------------------------------

# The three helpers below run once a window, as calls (not inlined), so they take only
# the arrays they read: numba passes a named tuple as every field of every array in it,
# one argument each, and handing them the kernel's bundles (``Scratch`` and
# ``KernelIndex``: ~250 arguments a call) made the pruned kernel ~7% slower (measured on
# the bench corpus at 200k documents, 2026-11-26).


@numba.njit(nogil=True, cache=True, error_model="numpy")
def _any_left(n_clauses, cur, term_max, theta, most_fields):
    """Whether the clauses with postings left could still lift a document past ``theta``.

    Under ``best_fields`` it also puts past their ends the clauses of a field whose
    clauses left cannot (that field decides no document that ranks from here on).
    """
    left_t = 0.0
    left_x = 0.0
    alive = False
    for c in range(n_clauses):
        if cur[c].shallow < cur[c].b1:
            alive = True
            if cur[c].field == 0:
                left_t += term_max[c]
            else:
                left_x += term_max[c]
    if alive and not most_fields:  # best_fields: a field that cannot beat theta any more decides no document that ranks
        for f in range(2):
            if np.float32((left_t if f == 0 else left_x) * UP) <= theta:
                for c in range(n_clauses):
                    cc = cur[c]
                    if cc.field == f and cc.shallow < cc.b1:
                        cc.shallow = cc.b1
                        cc.blk = cc.b1
                        cc.doc = NO_MORE
    return alive and _combine(left_t * UP, left_x * UP, most_fields) > theta


@numba.njit(nogil=True, cache=True, error_model="numpy")
def _window_end(n_clauses, cur, essential, order, block_last):
    """The last document of the next window: the nearest block end of an essential clause (as Lucene's MaxScore).

    With no essential clause left, the clause with the largest maximum leads, so
    that windows stay as short as its blocks; exhausted clauses do not count.
    """
    end = np.int64(NO_MORE)
    for c in range(n_clauses):
        b = cur[c].shallow
        if essential[c] and b < cur[c].b1:
            end = min(end, np.int64(block_last[b]))
    if end == NO_MORE:
        for i in range(n_clauses - 1, -1, -1):
            c = order[i]
            b = cur[c].shallow
            if b < cur[c].b1:
                return np.int64(block_last[b])
    return end


@numba.njit(nogil=True, cache=True, error_model="numpy")
def _partition(n_clauses, hi, theta, most_fields, cur, weights, block_last, maxima, term_max, window_max, order, pre_t, pre_x, essential):
    """Find the clauses that cannot lift a document past ``theta`` in the window on their own.

    They come first in ``order`` (their count is returned), then the essential ones;
    ``pre_t``/``pre_x`` hold the running sums of the window maxima per field in that
    order, which bound what the non-essential clauses before an index can still add.
    ``best_fields`` takes the larger field, so the non-essential clauses of each field
    need only stay below ``theta`` on their own; ``most_fields`` adds them all up.
    """
    for c in range(n_clauses):
        best = np.float32(0.0)
        b = cur[c].shallow if cur[c].doc <= hi else cur[c].b1  # a cursor past the window: nothing in it
        read = 0
        while b < cur[c].b1 and read < WINDOW_BLOCKS:
            best = max(best, maxima[b])
            if block_last[b] >= hi:
                break
            b += 1
            read += 1
        w = weights[c]
        if read == WINDOW_BLOCKS:  # a list dense in a long window: its whole list's maximum bounds it, without reading every block
            window_max[c] = term_max[c]
        else:
            window_max[c] = np.float64(w - w / best) if best > 0 else 0.0
        order[c] = c
    for i in range(1, n_clauses):  # insertion sort, smallest maximum first: a handful of clauses
        c = order[i]
        j = i
        while j > 0 and window_max[order[j - 1]] > window_max[c]:
            order[j] = order[j - 1]
            j -= 1
        order[j] = c
    sum_t = 0.0
    sum_x = 0.0
    open_t = True
    open_x = True
    for i in range(n_clauses):
        c = order[i]
        title = cur[c].field == 0
        add_t = window_max[c] if title else 0.0
        add_x = 0.0 if title else window_max[c]
        if most_fields:  # one running sum: the first clause that does not fit closes it
            fits = open_t and _combine((sum_t + add_t) * UP, (sum_x + add_x) * UP, True) <= theta
            open_t = fits
        else:  # a running sum per field
            fits = (open_t if title else open_x) and np.float32((sum_t + add_t if title else sum_x + add_x) * UP) <= theta
            if title:
                open_t = fits
            else:
                open_x = fits
        essential[c] = not fits
        if fits:
            sum_t += add_t
            sum_x += add_x
    non_essential = 0
    for i in range(n_clauses):  # stable: the non-essential clauses first, each group still by maximum
        if not essential[order[i]]:
            c = order[i]
            for j in range(i, non_essential, -1):
                order[j] = order[j - 1]
            order[non_essential] = c
            non_essential += 1
    pre_t[0] = 0.0
    pre_x[0] = 0.0
    for i in range(n_clauses):
        c = order[i]
        pre_t[i + 1] = pre_t[i] + (window_max[c] if cur[c].field == 0 else 0.0)
        pre_x[i + 1] = pre_x[i] + (window_max[c] if cur[c].field == 1 else 0.0)
    return non_essential


# ---- candidates ------------------------------------------------------------------------


@numba.njit(nogil=True, cache=True, inline="always", error_model="numpy")
def _gather_one(c, hi, cur, s, ix):
    """Clause ``c``'s documents up to ``hi`` in its current block, with its scores, into the batch; returns how many."""
    cc = cur[c]
    f = cc.field
    w = s.weights[c]
    j = cc.idx
    d = cc.doc
    found = 0
    while d <= hi:
        score = np.float64(_term_score(w, _tf(cc, j, ix.words), ix.caches[f, ix.norms[f, d]]))
        s.batch_docs[found] = d
        s.batch_sums[f, found] = score
        s.batch_sums[1 - f, found] = 0.0
        found += 1
        j += 1
        if j == cc.n:
            break
        d = s.docs[c, j]
    _settle(c, j, d, hi, cur, s.docs, ix)
    return found


@numba.njit(nogil=True, cache=True, inline="always", error_model="numpy")
def _gather_window(first, n, hi, cur, s, ix):
    """The documents of clauses ``s.order[first:n]`` in the next ``WINDOW`` documents up to ``hi`` that hold any, in order, with their per-field sums; returns how many.

    Term at a time: each clause's postings add their scores into per-document sums
    and set the document's bit; the set bits then list the documents in order.
    """
    window_sums, window_hits = s.window_sums, s.window_hits
    start = np.int64(NO_MORE)
    for i in range(first, n):
        start = min(start, cur[s.order[i]].doc)
    if start > hi:
        return 0
    end = min(start + WINDOW - 1, hi)
    for i in range(first, n):
        c = s.order[i]
        cc = cur[c]
        f = cc.field
        w = s.weights[c]
        j = cc.idx
        d = cc.doc
        while d <= end:
            at = d - start
            window_sums[f, at] += _term_score(w, _tf(cc, j, ix.words), ix.caches[f, ix.norms[f, d]])
            window_hits[at >> 6] |= np.uint64(1) << np.uint64(at & 63)
            j += 1
            if j == cc.n:
                break
            d = s.docs[c, j]
        _settle(c, j, d, end, cur, s.docs, ix)
    found = 0
    for h in range((end - start) // 64 + 1):
        bits = window_hits[h]
        window_hits[h] = 0
        while bits:
            at = h * 64 + np.int64(_trailing_zeros(bits))
            bits &= bits - np.uint64(1)
            s.batch_docs[found] = start + at
            s.batch_sums[0, found] = window_sums[0, at]
            s.batch_sums[1, found] = window_sums[1, at]
            window_sums[0, at] = 0.0
            window_sums[1, at] = 0.0
            found += 1
    return found


@numba.njit(nogil=True, cache=True, inline="always", error_model="numpy")
def _title_bounds(non_essential, cur, s):
    """The window's non-essential title clauses that can add anything, as (signature bit, window maximum) in ``s.title_bits``/``s.title_max``; returns how many."""
    n_title = 0
    for i in range(non_essential):
        c = s.order[i]
        if cur[c].field == 0 and s.window_max[c] > 0:
            s.title_bits[n_title] = s.bits[c]
            s.title_max[n_title] = s.window_max[c]
            n_title += 1
    return n_title


@numba.njit(nogil=True, cache=True, inline="always", error_model="numpy")
def _drop_hopeless(found, theta, n_title, rest_x, s, ix):
    """Keep, in order, the batch's documents that can still beat ``theta``; returns how many.

    A document's bound is its essential sums plus the window maxima of the
    non-essential title clauses its title signature allows and of every non-essential
    text clause. Without branches: most candidates of a common title word fail it,
    unpredictably, and fail it here at a few nanoseconds each instead of in a probe.
    """
    batch_docs, batch_sums, title_bits, title_max = s.batch_docs, s.batch_sums, s.title_bits, s.title_max
    kept = 0
    for g in range(found):
        d = batch_docs[g]
        sum_t = batch_sums[0, g]
        sum_x = batch_sums[1, g]
        signature = ix.title_sig[d]
        bound_t = sum_t
        for j in range(n_title):
            bound_t += title_max[j] * ((signature & title_bits[j]) == title_bits[j])
        batch_docs[kept] = d
        batch_sums[0, kept] = sum_t
        batch_sums[1, kept] = sum_x
        kept += _combine(bound_t * UP, (sum_x + rest_x) * UP, ix.most_fields) > theta
    return kept


@numba.njit(nogil=True, cache=True, inline="always", error_model="numpy")
def _complete(d, sum_t, sum_x, non_essential, theta, cur, s, ix):
    """Document ``d``'s score from its essential clauses' sums, probing the non-essential clauses (largest window maximum first) only while it can still beat ``theta``; -inf when it cannot."""
    most_fields = ix.most_fields
    for i in range(non_essential, 0, -1):
        bound_t = (sum_t + s.pre_t[i]) * UP
        bound_x = (sum_x + s.pre_x[i]) * UP
        if _combine(bound_t, bound_x, most_fields) <= theta:
            return -np.inf
        c = s.order[i - 1]
        f = cur[c].field
        if not most_fields and np.float32(bound_t if f == 0 else bound_x) <= theta:
            continue  # best_fields: the larger field decides, and this one cannot win, so its exact sum is not needed
        if f == 0 and (ix.title_sig[d] & s.bits[c]) == 0:
            continue  # not in the document's title: its list stays where it is
        _advance(c, d, cur, s.docs, ix)
        if cur[c].doc == d:
            if f == 0:
                sum_t += _score(c, d, cur, s.weights, ix)
            else:
                sum_x += _score(c, d, cur, s.weights, ix)
    return np.float64(_combine(sum_t, sum_x, most_fields))
