"""Units of work: the bounded pieces a build stage is cut into, planned before it runs.

A unit names the step that runs it, a name unique in its stage (its report is
stored under it) and the plain values the step's function is called with: a
language and a shard of its documents, a language and a block of its queries, a
direction. Every unit is sized so that no unit holds a whole large language:
see ``docs/scale.md``.
"""

from __future__ import annotations

from dataclasses import dataclass

# Defaults of how work is cut (docs/scale.md has the measurements behind them).
DEFAULT_SHARD_DOCS = 500_000  # documents per retrieval shard: ~1 GB per unit while its index is built
DEFAULT_BLOCK_SIZE = 100_000  # queries per block: ~10 M labelled rows in a label or propagation unit
# Queries one search unit of a sharded language runs against its shard: ~4 core-minutes at the
# measured ~220 us a query and shard, so English (7.2 M titles) is 8 units a shard, not one of ~26 minutes.
DEFAULT_SEARCH_UNIT_QUERIES = 1_000_000


@dataclass(frozen=True, order=True)
class Unit:
    """One unit of work: ``step``'s function called with ``args``; reported under ``name``."""

    step: str
    name: str
    args: tuple = ()


def even_bounds(n: int, parts: int) -> list[tuple[int, int]]:
    """``[start, end)`` of ``parts`` near-equal consecutive ranges of ``range(n)``."""
    edges = [n * i // parts for i in range(parts + 1)]
    return list(zip(edges[:-1], edges[1:]))


@dataclass(frozen=True)
class LanguagePlan:
    """How one language is cut into units: shards of its documents, blocks of its queries.

    Shards (retrieval, docs/method.md section 4) are near-equal ranges of document
    positions; blocks (retrieval's output, labels, propagation, writing) are
    ``block_size`` consecutive query positions. Every query is the title of the
    document at the same position, so a language has ``docs`` queries.
    """

    lang: str
    docs: int
    shards: int = 1
    block_size: int = DEFAULT_BLOCK_SIZE

    @property
    def blocks(self) -> int:
        return -(-self.docs // self.block_size)

    def block(self, index: int) -> tuple[int, int]:
        """Query positions ``[start, end)`` of a block."""
        start = index * self.block_size
        return start, min(self.docs, start + self.block_size)

    def block_groups(self, queries: int) -> list[tuple[int, int]]:
        """``[first, end)`` block numbers of consecutive groups of at most ``queries`` queries (at least one block each)."""
        per_group = max(1, queries // self.block_size)
        return [(first, min(self.blocks, first + per_group)) for first in range(0, self.blocks, per_group)]

    def shard(self, index: int) -> tuple[int, int]:
        """Document positions ``[start, end)`` of a shard."""
        return even_bounds(self.docs, self.shards)[index]

    def to_dict(self) -> dict:
        return {"lang": self.lang, "docs": self.docs, "shards": self.shards, "block_size": self.block_size}

    @classmethod
    def from_dict(cls, value: dict) -> LanguagePlan:
        return cls(value["lang"], value["docs"], value["shards"], value["block_size"])
