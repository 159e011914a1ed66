"""Carry one language's labels to another through Wikidata links (docs/method.md section 6).

For a query in X, every labelled X document whose entity has a Y article passes
its label to that article; the others are lost. **[ours]** if two X documents
reach the same Y document (Wikidata sitelinks are 1:1, so it should not happen)
the higher label wins. A query appears in X -> Y only when at least one Y
document got a label (every stored label is >= 1).

Two kinds of units, neither holding more of a language than a number or two per
document: ``write_doc_links`` (one per query language X) pairs X's positions with
those of the same entity in every other language; ``propagate_block`` (one per
block of X's queries) carries that block's labels into every other language.

``propagate`` states the rule in numpy: a gather of every label row through a
dense X -> Y map, a three-key sort, a dedupe. The stage gets the same rows in the
same order with less work (issue 36), in numba where numpy has no call for a step
(a CSR join, a pass over sorted keys):

1. once per block (``BlockCarrier``), one int64 a label row, ``doc << 32 | query
   offset << 8 | 127 - label``, sorted (numpy's SIMD sort; a counting sort by document
   was twice as slow, all random access): the rows grouped by X document, and
   ``starts[p]:starts[p+1]`` the rows of document ``p``;
2. per target Y, each link ``(x, y)`` of the links file (x ascending, so the reads
   of ``starts`` go forward; no dense map of X is built) gives the rows of ``x`` as
   keys ``query offset << 39 | y << 8 | 127 - label``: work in links and carried
   rows, not in label rows, so a small Y costs little however large X is;
3. one ``np.sort`` of those keys orders them by (query, Y position, label
   descending); one pass keeps the first key of each (query, Y position) -- the
   higher label where two X documents reach one Y document, nothing to drop when
   the links are one-to-one -- unpacks the three columns and counts the queries.

A block whose queries span ``MAX_PACKED_SPAN`` or more positions (a block size of
16.7 M queries) does not fit the keys and is carried by ``propagate`` itself.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import NamedTuple

import numba
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from clirmatrix.pipeline.io.fileio import atomic_create
from clirmatrix.pipeline.io.parquet_io import read_table
from clirmatrix.pipeline.method.corpus import NO_ENTITY, WorkDirs, catalog_numbers
from clirmatrix.schemas import DOC_LINKS, LABELS, PROPAGATED, check
from clirmatrix.schemas.contracts import CarryReport, LanguagePlan, PairingReport

# A carried row as one sortable int64: query offset (24 bits) | Y position (31 bits) | 127 - label (8 bits).
_LABEL_BITS = 8
_QUERY_SHIFT = _LABEL_BITS + 31
MAX_PACKED_SPAN = 1 << (63 - _QUERY_SHIFT)  # a block whose queries span more is carried by ``propagate``


class Labelled(NamedTuple):
    """Parallel arrays: query position, document position, label; grouped by query."""

    query: np.ndarray
    doc: np.ndarray
    label: np.ndarray


def propagate(labels: Labelled, x_to_y: np.ndarray) -> Labelled:
    """The labels of X's queries on Y's documents, sorted by (query, Y position): the rule, in numpy.

    ``x_to_y[p]`` is the Y position of X document ``p``'s entity, or -1.
    """
    target = x_to_y[labels.doc]
    linked = target >= 0
    query, doc, label = labels.query[linked], target[linked].astype(np.int32), labels.label[linked]
    # Sort by (query, doc, label descending) and keep the first row of each (query, doc).
    order = np.lexsort((-label.astype(np.int16), doc, query))
    query, doc, label = query[order], doc[order], label[order]
    first = np.ones(len(query), dtype=bool)
    first[1:] = (query[1:] != query[:-1]) | (doc[1:] != doc[:-1])
    return Labelled(query[first], doc[first], label[first])


def group_bounds(query: np.ndarray, source: str = "rows") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(queries, start, end) of the runs of equal values in a sorted query column; a ValueError naming ``source`` if it is not sorted."""
    if len(query) == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty
    starts = np.flatnonzero(np.r_[True, query[1:] != query[:-1]])
    ends = np.r_[starts[1:], len(query)]
    queries = query[starts]
    if np.any(queries[1:] < queries[:-1]):
        raise ValueError(f"{source}: not grouped by query in ascending order")
    return queries, starts, ends


def query_groups(query: np.ndarray, source: str = "rows") -> np.ndarray:
    """Row offsets of the runs of a sorted query column, with the end: ``len(groups) + 1`` values (``group_bounds``' check)."""
    _, starts, _ = group_bounds(query, source)
    return np.r_[starts, len(query)].astype(np.int64)


def doc_links(src_entities: np.ndarray, tgt_entities: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(X positions ascending, Y positions) of the entities both languages have (``NO_ENTITY`` is none)."""
    x = np.flatnonzero(src_entities != NO_ENTITY)
    y = np.flatnonzero(tgt_entities != NO_ENTITY)
    _, in_x, in_y = np.intersect1d(src_entities[x], tgt_entities[y], assume_unique=True, return_indices=True)
    order = np.argsort(x[in_x], kind="stable")
    return x[in_x][order].astype(np.int32), y[in_y][order].astype(np.int32)


def write_doc_links(work_root: str, src: str, langs: Sequence[str]) -> PairingReport:
    """One unit per query language X: ``propagated/_links/{X}/{Y}.parquet`` for every other language Y."""
    work = WorkDirs(work_root)
    src_entities = catalog_numbers(work, src, "entity")
    counts = {}
    for tgt in langs:
        if tgt == src:
            continue
        x, y = doc_links(src_entities, catalog_numbers(work, tgt, "entity"))
        write_links_file(work.doc_links_file(src, tgt), x, y)
        counts[tgt] = len(x)
    return PairingReport(lang=src, links=counts)


def write_links_file(path: str, x: np.ndarray, y: np.ndarray) -> None:
    """One ``propagated/_links/{X}/{Y}.parquet`` (x ascending), atomically."""
    _write(path, pa.table([pa.array(x), pa.array(y)], schema=DOC_LINKS), DOC_LINKS, LINKS_PARQUET)


def read_doc_links(path: str) -> tuple[np.ndarray, np.ndarray]:
    """(x, y) of a links file."""
    links = read_table([path], DOC_LINKS)
    return links.column("x").to_numpy(), links.column("y").to_numpy()


def check_links(x: np.ndarray, y: np.ndarray, n_src: int, where: str) -> None:
    """Raise naming ``where`` unless x is strictly ascending positions of X's ``n_src`` documents and y positions.

    The carry kernels rely on it: each label row is then carried at most once, within bounds.
    """
    if len(x) != len(y):
        raise ValueError(f"{where}: {len(x)} x but {len(y)} y")
    if len(x):
        if x[0] < 0 or x[-1] >= n_src or (len(x) > 1 and bool(np.any(x[1:] <= x[:-1]))):
            raise ValueError(f"{where}: x is not strictly ascending within X's {n_src:,} documents")
        if int(y.min()) < 0:
            raise ValueError(f"{where}: y has a negative position (row {int(np.argmax(y < 0))})")


@numba.njit(cache=True, nogil=True)
def _row_keys(query, doc, label, first):  # pragma: no cover - compiled
    """One int64 a label row: ``doc << 32 | query offset << 8 | 127 - label``."""
    keys = np.empty(doc.shape[0], np.int64)
    for i in range(doc.shape[0]):
        keys[i] = (np.int64(doc[i]) << 32) | ((np.int64(query[i]) - first) << 8) | (127 - np.int64(label[i]))
    return keys


@numba.njit(cache=True, nogil=True)
def _doc_starts(keys, n_src):  # pragma: no cover - compiled
    """Sorted row keys -> ``starts`` (n_src + 1: document ``p``'s rows are ``starts[p]:starts[p+1]``) and each row's low half."""
    starts = np.empty(n_src + 1, np.int32)
    rows = np.empty(keys.shape[0], np.uint32)  # query offset << 8 | 127 - label
    p = 0
    for i in range(keys.shape[0]):
        doc = keys[i] >> 32
        while p <= doc:
            starts[p] = i
            p += 1
        rows[i] = keys[i] & 0xFFFFFFFF
    while p <= n_src:
        starts[p] = keys.shape[0]
        p += 1
    return starts, rows


@numba.njit(cache=True, nogil=True)
def _carried_keys(starts, rows, x, y, out):  # pragma: no cover - compiled
    """The rows of the linked documents into ``out`` as unsorted keys ``query offset << 39 | y << 8 | 127 - label``; how many."""
    k = 0
    for j in range(x.shape[0]):
        high = np.int64(y[j]) << 8
        for r in range(starts[x[j]], starts[x[j] + 1]):
            row = np.int64(rows[r])
            out[k] = ((row >> 8) << 39) | high | (row & 255)
            k += 1
    return k


@numba.njit(cache=True, nogil=True)
def _unpack(keys, first):  # pragma: no cover - compiled
    """Sorted keys -> (query, doc, label) keeping the first (highest label) of each (query, doc); and the queries."""
    n = keys.shape[0]
    query = np.empty(n, np.int32)
    doc = np.empty(n, np.int32)
    label = np.empty(n, np.int8)
    k = 0
    queries = 0
    last_pair = np.int64(-1)
    last_query = np.int64(-1)
    for i in range(n):
        pair = keys[i] >> 8
        if pair == last_pair:
            continue
        last_pair = pair
        offset = pair >> 31
        if offset != last_query:
            queries += 1
            last_query = offset
        query[k] = first + offset
        doc[k] = pair & 0x7FFFFFFF
        label[k] = 127 - (keys[i] & 255)
        k += 1
    return query[:k], doc[:k], label[:k], queries


class BlockCarrier:
    """One block's label rows, grouped by X document once, to be carried into any number of languages.

    Holds 12 bytes a label row (each row's query and label, and a buffer for one
    language's carried keys, which are at most as many) and 4 bytes a document of X.
    """

    def __init__(self, labels: Labelled, n_src: int, where: str = "labels") -> None:
        self.n_src = n_src
        self.size = n = len(labels.doc)  # label rows
        if n and (int(labels.doc.min()) < 0 or int(labels.doc.max()) >= n_src):
            raise ValueError(f"{where}: a document position outside X's {n_src:,} documents")
        self.first = int(labels.query.min()) if n else 0
        self.packed_keys = n < 2**31 and (not n or int(labels.query.max()) - self.first < MAX_PACKED_SPAN)
        if not self.packed_keys:
            self.labels = labels
            return
        query, doc = (np.ascontiguousarray(column, dtype=np.int32) for column in labels[:2])
        keys = _row_keys(query, doc, np.ascontiguousarray(labels.label, dtype=np.int8), self.first)
        keys.sort()
        self.starts, self.rows = _doc_starts(keys, n_src)
        self.carried = keys  # its rows are in ``rows`` now: the buffer of each language's keys

    def carry(self, x: np.ndarray, y: np.ndarray, where: str = "links") -> tuple[Labelled, int]:
        """The block's labels on Y (links ``x`` ascending -> ``y``, from ``where``), as ``propagate`` gives them; and their query count."""
        check_links(x, y, self.n_src, where)
        if not self.packed_keys:
            x_to_y = np.full(self.n_src, -1, dtype=np.int32)
            x_to_y[x] = y
            carried = propagate(self.labels, x_to_y)
            return carried, len(group_bounds(carried.query)[0])
        keys = self.carried[: _carried_keys(self.starts, self.rows, np.ascontiguousarray(x, np.int32), np.ascontiguousarray(y, np.int32), self.carried)]
        keys.sort()
        query, doc, label, queries = _unpack(keys, self.first)
        return Labelled(query, doc, label), int(queries)


# The stage's two intermediate files are read whole, by this stage and the write stage, and never
# released; their Parquet settings are chosen for the reads and writes measured in
# bench/propagate_bench.py, not the artefacts' (parquet_io.open_writer). Links are read once per
# block of X: x ascending delta-packs, y (positions in no order) stays plain, uncompressed: half
# zstd's read CPU in files ~0.8x as large. Carried rows: zstd as elsewhere on query (runs) and doc,
# lz4 on label (int8 stored as INT32, six values in no order), where zstd spent about half the
# write's CPU to save 0.7 bytes a row.
LINKS_PARQUET = {"compression": "none", "use_dictionary": False, "write_statistics": False, "column_encoding": {"x": "DELTA_BINARY_PACKED", "y": "PLAIN"}}
CARRIED_PARQUET = {"compression": {"query": "zstd", "doc": "zstd", "label": "lz4"}, "use_dictionary": False, "write_statistics": False}


def _write(path: str, table: pa.Table, schema: pa.Schema, settings: dict) -> None:
    table = check(table, schema, path)
    with atomic_create(path) as handle:
        pq.write_table(table, handle, row_group_size=100_000, **settings)


def write_carried(path: str, carried: Labelled) -> None:
    """One ``propagated/{X}/{Y}/{block}.parquet``, atomically."""
    _write(path, pa.table([pa.array(carried.query), pa.array(carried.doc), pa.array(carried.label)], schema=PROPAGATED), PROPAGATED, CARRIED_PARQUET)


def read_block(path: str, n_src: int) -> BlockCarrier:
    """A block's labels file, grouped for carrying (the file's columns are let go once grouped)."""
    table = read_table([path], LABELS)
    return BlockCarrier(Labelled(*(table.column(name).to_numpy() for name in ("query", "doc", "label"))), n_src, path)


def propagate_block(work_root: str, plan: LanguagePlan, block: int, langs: Sequence[str]) -> CarryReport:
    """One unit per block of X's queries: its labels carried into every other language, one file per language."""
    work = WorkDirs(work_root)
    started = time.process_time()
    carrier = read_block(work.labels_file(plan.lang, block), plan.docs)
    grouped = time.process_time()
    directions = {}
    for tgt in langs:
        if tgt == plan.lang:
            continue
        links = work.doc_links_file(plan.lang, tgt)
        carried, queries = carrier.carry(*read_doc_links(links), links)
        write_carried(work.propagated_file(plan.lang, tgt, block), carried)
        directions[tgt] = {"queries": queries, "labels": int(len(carried.label))}
    # The block's own cost and the cost per target language apart: a planner scales them differently.
    return CarryReport(
        lang=plan.lang, block=block, label_rows=carrier.size, directions=directions,
        group_cpu_seconds=round(grouped - started, 3), carry_cpu_seconds=round(time.process_time() - grouped, 3),
    )  # fmt: skip
