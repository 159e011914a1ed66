"""``--model dap``: translation ranking plus representation translation learning (docs/models.md §4).

Pairs (x, y) are Wikidata-linked titles (or lead sentences) of the run's
directions, x the non-English side and y the English one (src and tgt when neither
is English). L = L_TR + ``--rtl-weight`` · L_RTL; the TR projection and the RTL
head serve training only: retrieval compares raw CLS vectors by cosine.
"""

from __future__ import annotations

import random

import torch
from torch import nn

from clirmatrix.models.distributed import gather
from clirmatrix.models.losses import rtl_loss, translation_ranking
from clirmatrix.models.modeling.dap import RtlHead, TranslationProjection
from clirmatrix.models.modeling.encoder import Encoder, base_model
from clirmatrix.models.recipes.base import Batch, DualEncoderRanker, LossTerms, Ranker, Recipe

PIVOT = "en"
TR_SCALE = 20.0  # φ = cos / 0.05 (DAP code, docs/models.md §8.8)
IGNORE = -100


class DapRecipe(Recipe):

    def build(self, masked_lm: nn.Module) -> nn.Module:
        encoder = Encoder(base_model(masked_lm), self.args.pooling)
        rtl = RtlHead.from_masked_lm(masked_lm, num_layers=self.args.rtl_layers, mask_token_id=self.tokenizer.mask_token_id)
        return nn.ModuleDict({"encoder": encoder, "projection": TranslationProjection(encoder.hidden_size), "rtl": rtl})

    def weight(self, term: str) -> float:
        return self.args.rtl_weight if term == "rtl" else 1.0

    def draw(self, rng: random.Random, size: int, step: int, shared: random.Random) -> Batch:
        pairs = [rng.choice(self.parallel_pairs()) for _ in range(size)]
        english_first = [pair.lang_a == PIVOT and pair.lang_b != PIVOT for pair in pairs]
        sources = [p.text_b if flip else p.text_a for p, flip in zip(pairs, english_first)]
        targets = [p.text_a if flip else p.text_b for p, flip in zip(pairs, english_first)]
        return {"source": self.drawing.texts(sources), "target": self.drawing.texts(targets)}

    def losses(self, batch: Batch, step: int) -> LossTerms:
        vectors, local = self.vectors(batch, step, local=True)
        yield {**self.batch_losses(vectors, batch, step), **local}

    def vectors(self, batch: Batch, step: int, local: bool = False) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]] | None:
        """The CLS vectors of both sides (translation ranking compares them over the batch); ``local``: the RTL term, from the source's states."""
        encoder, source, target = self.module["encoder"], batch["source"], batch["target"]
        source_states = encoder.states(source)
        vectors = {"source": source_states[:, 0], "target": encoder.states(target)[:, 0]}
        if not local:
            return vectors, {}
        target_mask = target["attention_mask"].clone()
        target_mask[:, 0] = 0  # the target's leading special token is not predicted (docs/models.md §4)
        logits = self.module["rtl"](source_states, source["attention_mask"], target_mask)
        labels = target["input_ids"].masked_fill(target_mask == 0, IGNORE)
        return vectors, {"rtl": rtl_loss(logits, labels, ignore_index=IGNORE)}

    def batch_losses(self, vectors: dict[str, torch.Tensor], batch: Batch, step: int) -> dict[str, torch.Tensor]:
        projection = self.module["projection"]
        return {"tr": translation_ranking(gather(projection(vectors["source"])), gather(projection(vectors["target"])), scale=TR_SCALE, similarity="cosine")}

    def init_transformer(self) -> nn.Module:
        return self.module["encoder"].transformer

    def ranker(self) -> Ranker:
        return DualEncoderRanker(self, self.module["encoder"], self.module["encoder"], "cosine")
