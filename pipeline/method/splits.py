"""Train/dev/test sets of every direction, as the release sizes them and without leakage (docs/method.md sections 7-8).

Sizes, as the release (dissertation 7.2.4): per direction, dev, test1 and test2 hold
``eval_size`` queries each whenever the direction has at least 4 x ``eval_size``
queries; a smaller direction splits what it has evenly across the three and train.
BI-139 base train takes up to ``train_size`` of the rest, full train all the rest; base
and full share their dev and test sets.

**[ours]** No leakage, across every direction and language: every query key (its
Wikidata entity, or its language and page id without one) has one seeded priority and
one eval role (dev, test1 or test2, by a second hash) for the whole build. Each
direction fills each eval set with its lowest-priority queries of that role, and a key
in any direction's (or MULTI-8's) eval sets is in no train set anywhere. So a test
query of one direction is never a train or dev query of another, even through a
translation of its title; a key may sit in the same eval set of several directions.

Units: ``write_query_splits`` (per language: each query's role, priority and key),
``write_eval_picks`` (per query language: each direction's eval sets),
``write_eval_keys`` (once: the union of every eval key, sorted).
"""

from __future__ import annotations

import hashlib
import io
from collections.abc import Sequence
from dataclasses import dataclass

import numba
import numpy as np
import pyarrow as pa

from clirmatrix.pipeline.io import fileio
from clirmatrix.pipeline.io.parquet_io import ParquetSink, read_table, write_table
from clirmatrix.pipeline.method.corpus import WorkDirs, iter_catalog
from clirmatrix.pipeline.method.propagation import query_groups
from clirmatrix.pipeline.method.split_names import EVAL_SPLITS, SPLITS
from clirmatrix.pipeline.settings import DEFAULT_EVAL_SIZE, DEFAULT_SEED, DEFAULT_TRAIN_SIZE
from clirmatrix.schemas import EVAL_PICKS, PROPAGATED, QUERY_SPLITS
from clirmatrix.schemas.contracts import EvalReport, SplitsReport

TRAIN = SPLITS.index("train")
EVAL_INDICES = tuple(SPLITS.index(split) for split in EVAL_SPLITS)
NOT_CHOSEN = -1


@dataclass(frozen=True)
class SplitSettings:
    """How many queries each set of a direction takes, and the seed of who they are."""

    seed: int = DEFAULT_SEED
    train_size: int = DEFAULT_TRAIN_SIZE
    eval_size: int = DEFAULT_EVAL_SIZE


def query_key(lang: str, doc_id: str, entity: str | None) -> str:
    """What a query is split by: its entity, or its own (language, page id) when it has none."""
    return f"e:{entity}" if entity else f"d:{lang}:{doc_id}"


def _hash64(seed: int, purpose: str, key: str) -> int:
    digest = hashlib.blake2b(f"{seed}\x1f{purpose}\x1f{key}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def seeded_rng(seed: int, purpose: str, key: str) -> np.random.Generator:
    """A random generator for one purpose and file, independent of every other one."""
    return np.random.default_rng(_hash64(seed, purpose, key))


def assign(keys: Sequence[str], settings: SplitSettings) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(eval role as an index into ``SPLITS``, priority, identity) per query key; each depends only on the key (and the seed)."""
    role = np.empty(len(keys), dtype=np.int8)
    priority = np.empty(len(keys), dtype=np.uint64)
    identity = np.empty(len(keys), dtype=np.uint64)
    for i, key in enumerate(keys):
        role[i] = EVAL_INDICES[_hash64(settings.seed, "role", key) % len(EVAL_INDICES)]
        priority[i] = _hash64(settings.seed, "order", key)
        identity[i] = _hash64(0, "key", key)  # seed-free: the same key is the same query in every build
    return role, priority, identity


def eval_sets(role: np.ndarray, priority: np.ndarray, eval_size: int) -> np.ndarray:
    """Per query of one direction (or of MULTI-8): the index into ``SPLITS`` of the eval set it joins, or ``NOT_CHOSEN``.

    ``eval_size`` each when there are at least 4 x ``eval_size`` queries, else a quarter
    each; within a role, the lowest priorities first (fewer if the role has fewer).
    """
    per_set = eval_size if len(role) >= 4 * eval_size else len(role) // 4
    chosen = np.full(len(role), NOT_CHOSEN, dtype=np.int8)
    for split in EVAL_INDICES:
        chosen[lowest(priority, np.flatnonzero(role == split), per_set)] = split
    return chosen


def lowest(priority: np.ndarray, candidates: np.ndarray, size: int) -> np.ndarray:
    """The ``size`` candidates (positions) of lowest priority, returned sorted; of equal priorities, the first candidates.

    The first ``size`` of a stable argsort, found with a partition (linear) rather than a
    full sort: the train set picks 10,000 of up to millions of queries per direction.
    """
    if size <= 0:
        return candidates[:0]
    values = priority[candidates]
    if size >= len(values):
        return np.sort(candidates)
    kth = np.partition(values, size - 1)[size - 1]
    below = values < kth
    ties = np.flatnonzero(values == kth)[: size - int(np.count_nonzero(below))]
    return np.sort(np.concatenate([candidates[below], candidates[ties]]))


def write_query_splits(work_root: str, lang: str, settings: SplitSettings) -> SplitsReport:
    """One unit per language: the role, priority and key of each of its queries (``release/_splits/{lang}.parquet``)."""
    work = WorkDirs(work_root)
    counts = np.zeros(len(SPLITS), dtype=np.int64)
    with ParquetSink(work.query_splits_file(lang), QUERY_SPLITS) as sink:
        for batch in iter_catalog(work, lang, ["page_id", "entity"]):
            keys = [
                query_key(lang, str(page_id), f"Q{entity}" if entity is not None else None)
                for page_id, entity in zip(batch.column("page_id").to_pylist(), batch.column("entity").to_pylist())
            ]
            role, priority, identity = assign(keys, settings)
            counts += np.bincount(role, minlength=len(SPLITS))
            sink.add_rows(pa.table([pa.array(role), pa.array(priority), pa.array(identity)], schema=QUERY_SPLITS))
    return SplitsReport(lang=lang, roles={SPLITS[i]: int(counts[i]) for i in EVAL_INDICES})


def direction_runs(work: WorkDirs, src: str, tgt: str, blocks: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per block of X -> Y (rows grouped by query, ascending): its queries (int32) and where each one's rows start, with the end (int64)."""
    runs = []
    for block in range(blocks):
        path = work.propagated_file(src, tgt, block)
        query = read_table([path], PROPAGATED, ["query"]).column("query").to_numpy()
        groups = query_groups(query, path)
        runs.append((query[groups[:-1]].astype(np.int32), groups))
    return runs


def runs_queries(runs: Sequence[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """The queries of a direction's runs (``direction_runs``), ascending."""
    return np.concatenate([queries for queries, _ in runs]) if runs else np.zeros(0, np.int32)


def direction_queries(work: WorkDirs, src: str, tgt: str, blocks: int) -> np.ndarray:
    """The queries of X -> Y (those with a label in Y), ascending."""
    return runs_queries(direction_runs(work, src, tgt, blocks))


def write_eval_picks(work_root: str, src: str, blocks: int, targets: Sequence[str], settings: SplitSettings) -> EvalReport:
    """One unit per query language X: the dev/test1/test2 queries of every direction X -> Y (``release/_eval/{X}.parquet``).

    Holds X's roles and priorities and one direction's queries at a time.
    """
    work = WorkDirs(work_root)
    splits = read_table([work.query_splits_file(src)], QUERY_SPLITS)
    role, priority, identity = (splits.column(name).to_numpy() for name in ("role", "order", "key"))
    parts, sizes = [], {}
    for tgt in targets:
        queries = direction_queries(work, src, tgt, blocks)
        chosen = eval_sets(role[queries], priority[queries], settings.eval_size)
        picked = np.flatnonzero(chosen != NOT_CHOSEN)
        parts.append(pa.table(
            [pa.array([tgt] * len(picked), pa.string()), pa.array(queries[picked].astype(np.int32)), pa.array(chosen[picked]), pa.array(identity[queries[picked]])],
            schema=EVAL_PICKS,
        ))  # fmt: skip
        sizes[tgt] = {"queries": len(queries), "eval_each": int((chosen == EVAL_INDICES[0]).sum())}
    write_table(work.eval_picks_file(src), pa.concat_tables(parts) if parts else EVAL_PICKS.empty_table(), EVAL_PICKS)
    return EvalReport(lang=src, directions=sizes)


def write_eval_keys(work_root: str, pick_files: Sequence[str]) -> int:
    """The union of the keys of every eval set (``release/_eval/keys.npy``, sorted); returns how many."""
    work = WorkDirs(work_root)
    keys = [read_table([path], EVAL_PICKS, ["key"]).column("key").to_numpy() for path in pick_files]
    union = np.unique(np.concatenate(keys)) if keys else np.zeros(0, np.uint64)
    buffer = io.BytesIO()
    np.save(buffer, union.astype(np.uint64))
    fileio.write_bytes(work.eval_keys_file(), buffer.getvalue())
    return len(union)


def read_eval_keys(work: WorkDirs) -> np.ndarray:
    """The sorted keys no train set may hold."""
    with fileio.open_raw(work.eval_keys_file()) as handle:
        return np.load(io.BytesIO(handle.read()))


DIRECTORY_BITS = 20  # at most 2**20 buckets: a build's tens of millions of eval keys get ~50 a bucket, six steps of search


@numba.njit(cache=True)
def _in_sorted(values, keys, shift, first):
    found = np.zeros(values.shape[0], np.bool_)
    for i in range(values.shape[0]):
        value = values[i]
        bucket = value >> shift
        low, high = first[bucket], first[bucket + 1]
        while low < high:  # a binary search within the bucket: one or two keys when they are hashes, any skew still correct
            middle = (low + high) // 2
            if keys[middle] < value:
                low = middle + 1
            else:
                high = middle
        found[i] = low < first[bucket + 1] and keys[low] == value
    return found


def in_sorted(values: np.ndarray, sorted_keys: np.ndarray) -> np.ndarray:
    """Whether each value is in ``sorted_keys`` (a sorted unique array of uint64 query keys).

    The keys are hashes, so their top bits spread them evenly: a directory by the top
    bits finds each value's one or two candidates in one step. numpy's binary search
    took 80 ns a value (a twentieth of writing a direction).
    """
    values = np.ascontiguousarray(values, dtype=np.uint64)
    if not len(sorted_keys):
        return np.zeros(len(values), bool)
    keys = np.ascontiguousarray(sorted_keys, dtype=np.uint64)
    bits = min(max(1, len(keys).bit_length() - 1), DIRECTORY_BITS)  # a bucket for every one or two keys, up to 8 MB of directory
    shift = np.uint64(64 - bits)
    first = np.empty((1 << bits) + 1, np.int64)
    first[:-1] = np.searchsorted(keys, np.arange(1 << bits, dtype=np.uint64) << shift)
    first[-1] = len(keys)
    return _in_sorted(values, keys, shift, first)


def direction_splits(queries: np.ndarray, picks: pa.Table, identity: np.ndarray, priority: np.ndarray, eval_keys: np.ndarray, train_size: int) -> tuple[np.ndarray, np.ndarray]:
    """(split of each query of a direction in full, ``NOT_CHOSEN`` for a key another eval set holds; whether base holds it).

    ``queries`` ascending; ``picks`` the direction's rows of ``write_eval_picks``.
    """
    split = np.full(len(queries), NOT_CHOSEN, dtype=np.int8)
    at = np.searchsorted(queries, picks.column("query").to_numpy())
    split[at] = picks.column("split").to_numpy()
    train = (split == NOT_CHOSEN) & ~in_sorted(identity[queries], eval_keys)
    split[train] = TRAIN
    in_base = split != NOT_CHOSEN
    in_base[np.flatnonzero(train)] = False
    in_base[lowest(priority[queries], np.flatnonzero(train), train_size)] = True
    return split, in_base
