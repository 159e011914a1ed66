"""Train/dev/test assignment, once per entity for the whole build (PIPELINE.md sections 7-8).

**[ours]** Every entity gets one split from a seeded hash, the same in every
direction and language, so a test query of one direction can never be a train
or dev query of another, even through a translation of its title. A query
whose article has no entity is assigned by a seeded hash of (language, page id).
A second seeded hash orders the queries of a split; base and MULTI-8 take the
first ``train_size`` / ``eval_size`` of that order, so the same entities are
chosen in every direction where they exist.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from clirmatrix.pipeline.corpus import WorkDirs, iter_catalog
from clirmatrix.pipeline.layout import SPLITS
from clirmatrix.pipeline.parquet_io import ParquetSink
from clirmatrix.schemas import QUERY_SPLITS

_SCALE = float(1 << 64)


@dataclass(frozen=True)
class SplitSettings:
    """How queries are divided; ``eval_fraction`` is the share of entities in each of dev, test1, test2."""

    seed: int = 13
    eval_fraction: float = 0.1
    train_size: int = 10_000
    eval_size: int = 1_000

    def __post_init__(self) -> None:
        if not 0 < self.eval_fraction < 1 / 3:
            raise ValueError(f"eval_fraction must be in (0, 1/3), got {self.eval_fraction}")

    def size_of(self, split: str) -> int:
        return self.train_size if split == "train" else self.eval_size


def query_key(lang: str, doc_id: str, entity: str | None) -> str:
    """What a query is split by: its entity, or its own (language, page id) when it has none."""
    return f"e:{entity}" if entity else f"d:{lang}:{doc_id}"


def _hash64(seed: int, purpose: str, key: str) -> int:
    digest = hashlib.blake2b(f"{seed}\x1f{purpose}\x1f{key}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def seeded_rng(seed: int, purpose: str, key: str) -> np.random.Generator:
    """A random generator for one purpose and file, independent of every other one."""
    return np.random.default_rng(_hash64(seed, purpose, key))


def assign(keys: Sequence[str], settings: SplitSettings) -> tuple[np.ndarray, np.ndarray]:
    """(split index into ``SPLITS``, order key) per query key; both depend only on the key and the seed."""
    split = np.empty(len(keys), dtype=np.int8)
    order = np.empty(len(keys), dtype=np.uint64)
    edges = np.array([settings.eval_fraction * i for i in (1, 2, 3)])  # dev, test1, test2, then train
    for i, key in enumerate(keys):
        u = _hash64(settings.seed, "split", key) / _SCALE
        bucket = int(np.searchsorted(edges, u, side="right"))
        split[i] = SPLITS.index(("dev", "test1", "test2", "train")[bucket])
        order[i] = _hash64(settings.seed, "order", key)
    return split, order


def choose(split_of: np.ndarray, order: np.ndarray, candidates: np.ndarray, split: str, size: int) -> np.ndarray:
    """The first ``size`` of ``candidates`` (query positions) in ``split`` by seeded order, returned sorted."""
    mask = split_of[candidates] == SPLITS.index(split)
    pool = candidates[mask]
    chosen = pool[np.argsort(order[pool], kind="stable")[:size]]
    return np.sort(chosen)


def write_query_splits(work_root: str, lang: str, settings: SplitSettings) -> dict:
    """One unit per language: the split and seeded order of each of its queries (``release/_splits/{lang}.parquet``)."""
    work = WorkDirs(work_root)
    counts = np.zeros(len(SPLITS), dtype=np.int64)
    with ParquetSink(work.query_splits_file(lang), QUERY_SPLITS) as sink:
        for batch in iter_catalog(work, lang, ["page_id", "entity"]):
            keys = [
                query_key(lang, str(page_id), f"Q{entity}" if entity is not None else None)
                for page_id, entity in zip(batch.column("page_id").to_pylist(), batch.column("entity").to_pylist())
            ]
            split, order = assign(keys, settings)
            counts += np.bincount(split, minlength=len(SPLITS))
            sink.add_rows(pa.table([pa.array(split), pa.array(order)], schema=QUERY_SPLITS))
    return {"lang": lang, "queries": {name: int(counts[i]) for i, name in enumerate(SPLITS)}}
