"""Training examples drawn from query records: ids and labels only, no text, no torch.

Every function takes an explicit ``random.Random`` (**[ours]**: the stdlib generator, the
same type everywhere, so a run is reproduced by its seed and a worker's generator can be
derived as ``random.Random(f"{seed}-{rank}-{epoch}")``). Records are
``data.QueryRecord``s (any object with ``tgt_results``, a sequence of ``(doc_id, label)``).
"""

from __future__ import annotations

import bisect
import random
from collections.abc import Callable, Iterator, Sequence
from itertools import accumulate
from typing import NamedTuple

from clirmatrix.models.data import QueryRecord, QueryStore


def sample_ranking_pair(record: QueryRecord, rng: random.Random) -> tuple[str, str] | None:
    """``(positive_id, negative_id)`` for the pairwise ranker (docs/models.md section 1, steps 2-4).

    d+ is uniform among the candidates with label > 0 that have some lower-labelled
    candidate; d- is uniform among the candidates labelled below d+. **[ours]** Restricting
    d+ to those with a possible d- means a query is skipped (``None``) only when no valid
    pair exists at all (no label > 0, or every candidate has the same label).
    """
    results = record.tgt_results
    if not results:
        return None
    lowest = min(label for _, label in results)
    positives = [(doc_id, label) for doc_id, label in results if label > 0 and label > lowest]
    if not positives:
        return None
    positive, positive_label = rng.choice(positives)
    negative = rng.choice([doc_id for doc_id, label in results if label < positive_label])
    return positive, negative


class RankingPair(NamedTuple):
    """A pairwise example: the query (and the store it came from) with a better and a worse candidate."""

    store_index: int
    record: QueryRecord
    pos_id: str
    neg_id: str


PairPicker = Callable[[QueryRecord, random.Random], tuple[str, str] | None]


class RankingPairSampler:
    """Ranking pairs with queries drawn uniformly over the union of ``stores`` (docs/models.md 8.3).

    One store is a bilingual model's direction; the 56 MULTI-8 directions together are the
    multilingual model's data. Each draw picks a query uniformly among all queries of all
    stores (so a direction weighs by its size), then a pair of its candidates with ``pick``
    (``sample_ranking_pair``, or another of ``PAIR_PICKERS``); queries that admit no pair are
    redrawn. Iterating never ends: take what a budget needs, e.g.
    ``itertools.islice(sampler, 1024)``.
    """

    def __init__(self, stores: Sequence[QueryStore], rng: random.Random, pick: PairPicker = sample_ranking_pair) -> None:
        self.stores = list(stores)
        self.rng = rng
        self.pick = pick
        self._ends = list(accumulate(len(store) for store in self.stores))
        self.total = self._ends[-1] if self._ends else 0
        if self.total == 0:
            raise ValueError("no queries to sample from: the stores are empty")
        self._impossible: set[int] = set()  # global positions found to admit no pair

    def draw(self) -> RankingPair:
        """One pair; ``ValueError`` once every query has proved to admit none."""
        while len(self._impossible) < self.total:
            position = self.rng.randrange(self.total)
            if position in self._impossible:
                continue
            store_index = bisect.bisect_right(self._ends, position)
            offset = position - (self._ends[store_index - 1] if store_index else 0)
            record = self.stores[store_index][offset]
            pair = self.pick(record, self.rng)
            if pair is None:
                self._impossible.add(position)
                continue
            return RankingPair(store_index, record, *pair)
        raise ValueError(f"none of the {self.total} queries has two candidates with different labels and one above 0")

    def __iter__(self) -> Iterator[RankingPair]:
        while True:
            yield self.draw()


def pointwise_triples(record: QueryRecord, rng: random.Random) -> list[tuple[str, int]]:
    """``(doc_id, label)`` for the cosine bi-encoder (docs/models.md 2a, 8.11).

    All candidates with label > 0, then as many label-0 candidates drawn at random without
    replacement (all of them when there are fewer), each group in candidate order.
    """
    labelled = [(doc_id, label) for doc_id, label in record.tgt_results if label > 0]
    zeros = [(doc_id, label) for doc_id, label in record.tgt_results if label == 0]
    chosen = sorted(rng.sample(range(len(zeros)), min(len(labelled), len(zeros))))
    return labelled + [zeros[i] for i in chosen]


def dpr_example(record: QueryRecord, rng: random.Random) -> tuple[str, str] | None:
    """``(positive_id, hard_negative_id)`` for the DPR dual encoder (docs/models.md 2b, "Data mapping").

    The positive is the highest-labelled candidate (6 when present; the first in candidate
    order on ties). The hard negative is a random label-0 candidate, else the lowest-labelled
    other one (first on ties). ``None`` when no candidate is above 0 or the negative would not
    be labelled below the positive.
    """
    results = record.tgt_results
    if not results:
        return None
    best = max(range(len(results)), key=lambda i: (results[i][1], -i))
    positive, positive_label = results[best]
    if positive_label <= 0:
        return None
    zeros = [doc_id for doc_id, label in results if label == 0]
    if zeros:
        return positive, rng.choice(zeros)
    others = [i for i in range(len(results)) if i != best]
    if not others:
        return None
    worst = min(others, key=lambda i: (results[i][1], i))
    if results[worst][1] >= positive_label:
        return None
    return positive, results[worst][0]


# The cross-encoder's pairs (``--pairs``): a candidate against one labelled lower ([D] §7.3.1,
# the default), or the query's best candidate against one of its lowest (DPR's pair, docs/models.md 8.3).
PAIR_PICKERS: dict[str, PairPicker] = {"lower": sample_ranking_pair, "top": dpr_example}
