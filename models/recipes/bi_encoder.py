"""``--model bi-encoder``: one shared encoder, mean pooling, cosine (docs/models.md §2a).

``--loss cosine`` is the dissertation's regression of cos(q, d) onto label/6 over
pointwise (query, document, label) triples (§2a, §8.11). ``--loss in-batch`` trains
the same network contrastively: each query's best candidate against the batch's
other positives and hard negatives, cosine over ``--temperature``.
"""

from __future__ import annotations

import random

import torch
from torch import nn

from clirmatrix.models.data import QueryRecord
from clirmatrix.models.losses import cosine_regression, in_batch_nll
from clirmatrix.models.metrics import MAX_LABEL
from clirmatrix.models.modeling.encoder import Encoder, base_model
from clirmatrix.models.recipes.base import Batch, DualEncoderRanker, LossTerms, Ranker, Recipe, gather_pairs
from clirmatrix.models.sampling import dpr_example, pointwise_triples

BI_ENCODER_LOSSES = ("cosine", "in-batch")


class BiEncoderRecipe(Recipe):

    def build(self, masked_lm: nn.Module) -> nn.Module:
        if self.args.loss not in BI_ENCODER_LOSSES:
            raise ValueError(f"bi-encoder loss {self.args.loss!r} is unknown; expected one of {', '.join(BI_ENCODER_LOSSES)}")
        return Encoder(base_model(masked_lm), self.args.pooling)

    def draw(self, rng: random.Random, size: int, step: int, shared: random.Random) -> Batch:
        if self.args.loss == "cosine":
            return self._draw_triples(rng, size)
        return draw_dpr_batch(self, rng, size)

    def losses(self, batch: Batch, step: int) -> LossTerms:
        query_vectors = self.module(batch["queries"])
        if self.args.loss == "cosine":
            yield {"cosine": cosine_regression(query_vectors, self.module(batch["docs"]), batch["labels"], max_label=MAX_LABEL)}
        else:
            yield self.batch_losses(dpr_vectors(self.module, self.module, batch), batch, step)

    def vectors(self, batch: Batch, step: int, local: bool = False) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]] | None:
        if self.args.loss == "cosine":
            return None
        return dpr_vectors(self.module, self.module, batch), {}

    def batch_losses(self, vectors: dict[str, torch.Tensor], batch: Batch, step: int) -> dict[str, torch.Tensor]:
        query_vectors, passage_vectors = gather_dpr(vectors)
        return {"in_batch": in_batch_nll(query_vectors, passage_vectors, similarity="cosine", temperature=self.args.temperature)}

    def _draw_triples(self, rng: random.Random, size: int) -> Batch:
        """Pointwise (query, document, label) triples (§2a)."""

        def triple(direction: tuple[str, str], record: QueryRecord) -> tuple[str, str, int] | None:
            triples = pointwise_triples(record, rng)
            if not triples:
                return None
            doc_id, label = rng.choice(triples)
            text = self.docs(direction[1]).get(doc_id)
            return None if text is None else (record.src_query, text, label)

        examples = self.draw_examples(rng, size, triple)
        return {
            "queries": self.drawing.texts([query for query, _, _ in examples]),
            "docs": self.drawing.texts([doc for _, doc, _ in examples]),
            "labels": torch.tensor([label for _, _, label in examples]),
        }

    def ranker(self) -> Ranker:
        return DualEncoderRanker(self, self.module, self.module, "cosine")


def draw_dpr_batch(recipe: Recipe, rng: random.Random, size: int) -> Batch:
    """``size`` queries and their positives then hard negatives, tokenised (docs/models.md §2b "Data mapping")."""

    def example(direction: tuple[str, str], record: QueryRecord) -> tuple[str, str, str] | None:
        ids = dpr_example(record, rng)
        if ids is None:
            return None
        docs = recipe.docs(direction[1])
        positive, negative = docs.get(ids[0]), docs.get(ids[1])
        if positive is None or negative is None:  # judged but absent from DOCS
            return None
        return record.src_query, positive, negative

    examples = recipe.draw_examples(rng, size, example)
    return {
        "queries": recipe.drawing.texts([q for q, _, _ in examples]),
        "passages": recipe.drawing.texts([p for _, p, _ in examples] + [n for _, _, n in examples]),
    }


def dpr_vectors(query_encoder: nn.Module, passage_encoder: nn.Module, batch: Batch) -> dict[str, torch.Tensor]:
    """A DPR micro-batch's vectors: its queries, their positives and their hard negatives, apart (``draw_dpr_batch``'s passages are both)."""
    passages = passage_encoder(batch["passages"])
    n = passages.shape[0] // 2
    return {"queries": query_encoder(batch["queries"]), "positives": passages[:n], "negatives": passages[n:]}


def gather_dpr(vectors: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """Every process's queries, and the passages in_batch_nll compares them with (all positives, then all hard negatives)."""
    return gather_pairs(vectors["queries"], torch.cat([vectors["positives"], vectors["negatives"]]))
