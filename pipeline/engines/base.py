"""The contract every retrieval engine keeps (docs/method.md section 4).

An engine indexes one language's documents, each with a ``title`` and a ``text``
field, and answers batches of queries with the top ``k`` documents by BM25 over
both fields (``multi_match`` on ``["title^2", "text"]``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import NamedTuple, Protocol

import numpy as np

COMBINATIONS = ("best_fields", "most_fields")


@dataclass(frozen=True)
class Bm25Settings:
    """BM25 parameters (the paper's footnote 9) and how the two fields' scores combine.

    ``best_fields``: a document's score is the larger of its title and text scores
    (Elasticsearch ``multi_match`` default, tie_breaker 0); ``most_fields``: their sum.
    """

    k1: float = 1.2
    b: float = 0.3
    title_boost: float = 2.0
    combine: str = "best_fields"

    def __post_init__(self) -> None:
        if self.combine not in COMBINATIONS:
            raise ValueError(f"combine must be one of {COMBINATIONS}, not {self.combine!r}")
        if not (np.isfinite(self.k1) and self.k1 >= 0):
            raise ValueError(f"k1 must be a non-negative finite number, not {self.k1!r}")
        if not 0 <= self.b <= 1:
            raise ValueError(f"b must be between 0 and 1, not {self.b!r}")
        if not (np.isfinite(self.title_boost) and self.title_boost > 0):
            raise ValueError(f"title_boost must be positive, not {self.title_boost!r}")


@dataclass(frozen=True)
class FieldStatistics:
    """What BM25 needs of a field over the whole collection: documents with the field, and its tokens."""

    doc_count: int  # documents with at least one token in the field (Lucene's docCount)
    sum_total_term_freq: int  # tokens in the field over all documents

    def __add__(self, other: FieldStatistics) -> FieldStatistics:
        return FieldStatistics(self.doc_count + other.doc_count, self.sum_total_term_freq + other.sum_total_term_freq)


@dataclass(frozen=True)
class CollectionStatistics:
    """Per-field statistics of a collection; an engine over one shard scores with those of the whole language.

    Together with each term's document frequency per field, this is all a BM25
    score depends on besides the document itself, so a shard scored with the
    language's statistics gives every document exactly its unsharded score (as
    Elasticsearch's ``dfs_query_then_fetch`` does).
    """

    title: FieldStatistics
    text: FieldStatistics

    def __add__(self, other: CollectionStatistics) -> CollectionStatistics:
        return CollectionStatistics(self.title + other.title, self.text + other.text)


class Hits(NamedTuple):
    """One query's results, best first; equal scores in ascending document position."""

    positions: np.ndarray  # int32 indexes into the engine's doc_ids
    scores: np.ndarray  # float32, descending


class FlatHits(NamedTuple):
    """Many queries' results as three flat arrays: query i's hits are the ``lengths[i]`` after those of the queries before it.

    What a batch of queries gives without one object a query (``EmbeddedEngine.search_flat``).
    """

    lengths: np.ndarray  # int32 [queries]: hits of each query
    positions: np.ndarray  # int32 [lengths.sum()]: each query's, best first
    scores: np.ndarray  # float32 [lengths.sum()]

    def split(self) -> list[Hits]:
        """One ``Hits`` a query (views of the flat arrays)."""
        if len(self.lengths) == 0:
            return []
        bounds = np.cumsum(self.lengths[:-1], dtype=np.int64)
        return [Hits(p, s) for p, s in zip(np.split(self.positions, bounds), np.split(self.scores, bounds))]


def empty_hits() -> Hits:
    """No results: a query with no tokens, or whose tokens no document has."""
    return Hits(np.zeros(0, np.int32), np.zeros(0, np.float32))


def flat_hits(hits: Sequence[Hits]) -> FlatHits:
    """Queries' ``Hits`` as one ``FlatHits`` (what ``FlatHits.split`` cuts apart)."""
    lengths = np.array([len(h.positions) for h in hits], dtype=np.int32)
    if not hits:
        return FlatHits(lengths, np.zeros(0, np.int32), np.zeros(0, np.float32))
    return FlatHits(lengths, np.concatenate([h.positions for h in hits]).astype(np.int32), np.concatenate([h.scores for h in hits]).astype(np.float32))


# One batch of documents, in index order: (doc_ids, titles, texts).
DocBatch = tuple[Sequence[str], Sequence[str], Sequence[str]]


class Engine(Protocol):
    """What the retrieve stage asks of every engine (``engines.registry`` makes them by name).

    Documents are numbered by their position in the order they were indexed; hits
    give those positions, best first, equal scores in position order.
    """

    reused: bool  # after ``index``: the engine found an index already holding the documents and kept it

    @property
    def docs(self) -> int:
        """Documents indexed."""
        ...

    def index(self, batches: Iterable[DocBatch]) -> None:
        """Index the documents, batch after batch, in position order; once per engine."""
        ...

    def search(self, queries: Sequence[str], k: int = 100) -> list[Hits]:
        """The top ``k`` of each query."""
        ...

    def search_flat(self, queries: Sequence[str], k: int = 100) -> FlatHits:
        """``search``'s results as flat arrays, as the retrieve stage writes them."""
        ...


class LocalEngine(Engine, Protocol):
    """An engine whose index lives in the searching process (``EngineKind.shards_itself`` false), so that a language is cut into shards.

    Sharded retrieval (``retrieval``) stores a shard's index (``save``, then the
    registry's ``load``) and scores it with the whole language's statistics.
    """

    def terms(self) -> list[str]:
        """The index's terms by term id."""
        ...

    def local_statistics(self) -> CollectionStatistics:
        """This index's own per-field statistics."""
        ...

    def local_document_frequencies(self) -> tuple[np.ndarray, np.ndarray]:
        """(title, text) document frequencies of this index's terms, by term id."""
        ...

    def use_statistics(self, statistics: CollectionStatistics, df_title: np.ndarray, df_text: np.ndarray) -> None:
        """Score with a larger collection's statistics: its per-field counts and, by this index's term id, its document frequencies."""
        ...

    def save(self, folder: str) -> None:
        """Store the index in ``folder``."""
        ...
