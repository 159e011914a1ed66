"""``--model contrastive``: a DPR dual encoder with semaCL and langCL (docs/models.md §2b, §3).

Each step back-propagates, one after the other ([H] §4): the in-batch retrieval
loss L_IR on (query, best candidate, hard negative) triples with separate query and
passage encoders; then, on the passage encoder only, semaCL over parallel pairs
and langCL over the same pairs plus non-parallel documents of the target
languages, weighted ``--semantic-weight`` and ``--language-weight``.
"""

from __future__ import annotations

import copy
import random

import torch
from torch import nn

from clirmatrix.models.distributed import gather
from clirmatrix.models.losses import in_batch_nll, language_contrastive, semantic_contrastive
from clirmatrix.models.modeling.encoder import Encoder, base_model
from clirmatrix.models.recipes.base import Batch, DualEncoderRanker, LossTerms, Ranker, Recipe
from clirmatrix.models.recipes.bi_encoder import dpr_vectors, draw_dpr_batch, gather_dpr


class ContrastiveRecipe(Recipe):

    def build(self, masked_lm: nn.Module) -> nn.Module:
        transformer = base_model(masked_lm)
        return nn.ModuleDict({"query": Encoder(transformer, self.args.pooling), "passage": Encoder(copy.deepcopy(transformer), self.args.pooling)})

    def weight(self, term: str) -> float:
        return {"semantic": self.args.semantic_weight, "language": self.args.language_weight}.get(term, 1.0)

    def draw(self, rng: random.Random, size: int, step: int, shared: random.Random) -> Batch:
        batch = draw_dpr_batch(self, rng, size)
        if self.args.semantic_weight == 0 and self.args.language_weight == 0:
            return batch
        pairs = [rng.choice(self.parallel_pairs()) for _ in range(size)]
        targets = [tgt for _, tgt in self.directions]
        extra = [self.random_doc(rng.choice(targets), rng) for _ in range(size)]
        return {**batch, "parallel": self.drawing.texts([p.text_a for p in pairs] + [p.text_b for p in pairs] + extra)}

    def losses(self, batch: Batch, step: int) -> LossTerms:
        yield self._ir(dpr_vectors(self.module["query"], self.module["passage"], batch))
        if "parallel" in batch:  # the retrieval graph is freed before the parallel texts are encoded
            yield self._parallel(self._parallel_vectors(batch))

    def vectors(self, batch: Batch, step: int, local: bool = False) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]] | None:
        vectors = dpr_vectors(self.module["query"], self.module["passage"], batch)
        if "parallel" in batch:
            vectors.update(self._parallel_vectors(batch))
        return vectors, {}

    def batch_losses(self, vectors: dict[str, torch.Tensor], batch: Batch, step: int) -> dict[str, torch.Tensor]:
        return {**self._ir(vectors), **(self._parallel(vectors) if "side_a" in vectors else {})}

    def _ir(self, vectors: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        return {"ir": in_batch_nll(*gather_dpr(vectors), similarity="dot")}

    def _parallel_vectors(self, batch: Batch) -> dict[str, torch.Tensor]:
        vectors = self.module["passage"](batch["parallel"])
        size = vectors.shape[0] // 3  # side a, side b, then as many other documents
        return {"side_a": vectors[:size], "side_b": vectors[size : 2 * size], "others": vectors[2 * size :]}

    def _parallel(self, vectors: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        side_a, side_b, others = gather(vectors["side_a"]), gather(vectors["side_b"]), gather(vectors["others"])
        return {"semantic": semantic_contrastive(side_a, side_b, self.args.temperature), "language": language_contrastive(side_a, side_b, others)}

    def init_transformer(self) -> nn.Module:
        return self.module["passage"].transformer  # the encoder every loss trains

    def ranker(self) -> Ranker:
        return DualEncoderRanker(self, self.module["query"], self.module["passage"], "dot")
