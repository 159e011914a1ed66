"""What the layers hand each other besides Parquet: units of work, their tasks, and the plan of a language.

The driver (beam_jobs/) plans every unit of a stage before it starts; a unit
travels to a worker, which calls the library function (pipeline/) its task names
with the task's fields. Tasks are frozen dataclasses, one per kind of work, so a
unit says what it does by its type, not by the position of values in a tuple,
and a stage routes it with a ``match`` on that type. ``LanguagePlan`` is how one
language is cut: every stage from retrieval on records it in its summary, and
the next stage reads it back from there.

Everything here is plain data: picklable for the runner, comparable, and with
no import above ``schemas/``.
"""

from __future__ import annotations

from dataclasses import dataclass


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
    shards: int
    block_size: int

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


def language_plans(summary: dict) -> list[LanguagePlan]:
    """The plans a stage's summary records, by language (every stage after retrieval keeps retrieval's blocks)."""
    return [LanguagePlan.from_dict(entry["plan"]) for _, entry in sorted(summary["languages"].items())]


@dataclass(frozen=True, order=True)
class Unit:
    """One unit of work: run by ``step`` (units of a later step wait for every unit of an earlier one), reported under ``name``."""

    step: str
    name: str  # unique in its stage: the report's file name
    task: object = None  # one of the task types below (or a stage's own frozen dataclass)


# The tasks of the stages. Each names the data one unit reads and writes; the
# settings that apply to all of a stage's units travel with the stage, not here.


@dataclass(frozen=True)
class LanguageTask:
    """One language's documents matched to their entities (link_entities)."""

    lang: str


@dataclass(frozen=True)
class SplitsTask:
    """One language's queries given their eval role, priority and key (write_release)."""

    lang: str


@dataclass(frozen=True)
class DocsTask:
    """One language's ``DOCS`` and ``DOCS-FULL`` files (write_release)."""

    lang: str


@dataclass(frozen=True)
class BlockTask:
    """One block of a language's queries: labelled (label), or gathered for MULTI-8 (write_release)."""

    plan: LanguagePlan
    block: int


@dataclass(frozen=True)
class PairingTask:
    """One language's documents paired with the same entity's article in each of ``langs`` (propagate)."""

    lang: str
    langs: tuple[str, ...]


@dataclass(frozen=True)
class CarryTask:
    """One block of a language's labels carried into each of ``langs`` (propagate)."""

    plan: LanguagePlan
    block: int
    langs: tuple[str, ...]


@dataclass(frozen=True)
class EvalTask:
    """The dev and test sets of every direction from one query language (write_release)."""

    plan: LanguagePlan
    others: tuple[str, ...]


@dataclass(frozen=True)
class Multi8EvalTask:
    """MULTI-8's dev and test entities (write_release)."""


@dataclass(frozen=True)
class EvalKeysTask:
    """The union of every eval set's keys, then MULTI-8's queries when it is built (write_release)."""

    langs: tuple[str, ...]
    multi8: bool


@dataclass(frozen=True)
class DirectionTask:
    """One BI-139 direction's files, ``full`` and ``base``, of every split (write_release)."""

    src: LanguagePlan
    tgt: LanguagePlan


@dataclass(frozen=True)
class Multi8TargetTask:
    """The MULTI-8 files of one document language (write_release)."""

    tgt: LanguagePlan


@dataclass(frozen=True)
class FileTask:
    """One file of a tree, by its path relative to the tree (stats' counts of a download)."""

    path: str
