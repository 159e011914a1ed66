"""``--model ccp``: contrastive context prediction with MLM, then calibration (docs/models.md §5).

A step is an MLM step (chance ``--mlm-probability``) or a CCP step: ``batch_size``
windows of ``--ccp-window`` consecutive sentences from one language's documents,
each giving its centre sentence and one other; their CLS vectors go through the
projection head with asymmetric BatchNorm (the centre side uses batch statistics on
even steps, the context side on odd ones) into the contrastive loss against the
batch and that language's memory bank.

Retrieval uses the calibrated CLS vectors: shifted and scaled per language with
statistics of ``--calibration-docs`` documents, the query side rotated into the
document language by Procrustes on the run's title pairs ("supervised
calibration", §8.10; ``--calibration shift-scale`` stops before the rotation). Calibration is refitted before every dev evaluation and once
more for the best model, saved as ``RUN_DIR/calibration.pt``.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from torch import nn

from clirmatrix.models.data import split_sentences, windows_of
from clirmatrix.models.distributed import gather
from clirmatrix.models.losses import ccp_contrastive
from clirmatrix.models.modeling.ccp import Calibration, MemoryBanks, ProjectionHead
from clirmatrix.models.modeling.encoder import Encoder, base_model
from clirmatrix.models.recipes.base import Batch, DualEncoderRanker, LossTerms, Ranker, Recipe

CALIBRATION = "calibration.pt"
CALIBRATIONS = ("procrustes", "shift-scale")
MASKED_FRACTION = 0.15  # BERT's MLM masking rate


class CcpRecipe(Recipe):

    def build(self, masked_lm: nn.Module) -> nn.Module:
        self.encoder = Encoder(base_model(masked_lm), self.args.pooling)  # shares the MLM's transformer
        hidden = self.encoder.hidden_size
        self.banks = MemoryBanks(self.args.ccp_bank, hidden)
        self.calibration: Calibration | None = None
        self._steps_seen = self._calibrated_at = -1
        return nn.ModuleDict({"mlm": masked_lm, "head": ProjectionHead(hidden)})

    def draw(self, rng: random.Random, size: int, step: int, shared: random.Random) -> Batch:
        """An MLM batch (chance ``--mlm-probability``), masked here, or one language's CCP windows (kind and language: ``shared``)."""
        mlm = shared.random() < self.args.mlm_probability
        lang = shared.choice(self.languages())
        if mlm:
            batch = self.drawing.texts([self.random_doc(lang, rng) for _ in range(size)])
            torch.manual_seed(rng.getrandbits(63))  # the masking draws from torch's generator
            input_ids, labels = mask_tokens(batch["input_ids"], self.tokenizer, batch["attention_mask"])
            return {"mlm": {**batch, "input_ids": input_ids}, "labels": labels}
        centres, partners = self._windows(lang, rng, size)
        return {"lang": lang, "centres": self.drawing.texts(centres), "partners": self.drawing.texts(partners)}

    def losses(self, batch: Batch, step: int) -> LossTerms:
        self._steps_seen = step
        if "mlm" in batch:
            yield {"mlm": self.module["mlm"](**batch["mlm"], labels=batch["labels"]).loss}
            return
        vectors, _ = self.vectors(batch, step)
        yield self.batch_losses(vectors, batch, step)

    def vectors(self, batch: Batch, step: int, local: bool = False) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]] | None:
        """The encoder's CLS vectors of the windows' centres and partners; None for an MLM step (its loss is each micro-batch's own)."""
        if "mlm" in batch:
            return None
        self._steps_seen = step
        return {"centres": self.encoder(batch["centres"]), "partners": self.encoder(batch["partners"])}, {}

    def batch_losses(self, vectors: dict[str, torch.Tensor], batch: Batch, step: int) -> dict[str, torch.Tensor]:
        """The projection head (its BatchNorm over the whole batch), then the contrastive loss against the batch and the language's bank, which then takes the batch."""
        head = self.module["head"]
        centre_batch_stats = step % 2 == 0  # asymmetric BN: the roles swap every step (Algorithm 1)
        # Gathered over the processes, which all drew this language (``shared``): one batch, one bank.
        z_centre = gather(head(vectors["centres"], batch_stats=centre_batch_stats))
        z_partner = gather(head(vectors["partners"], batch_stats=not centre_batch_stats))
        lang = batch["lang"]
        loss = ccp_contrastive(z_centre, z_partner, bank=self.banks.negatives(lang), temperature=self.args.ccp_temperature)
        self.banks.push(lang, torch.cat([z_centre, z_partner]))
        return {"ccp": loss}

    def _windows(self, lang: str, rng: random.Random, size: int) -> tuple[list[str], list[str]]:
        """Centre and partner sentences of ``size`` windows of ``lang``, each from another document (docs/models.md §5 "Batch").

        A window is one of a document's non-overlapping runs of ``--ccp-window``
        sentences (``windows_of``, as ``sentence_windows``; all of a shorter document's, from 2 up). One
        window per document: two windows of one document in a batch would be negatives
        of each other while sharing its topic, or a sentence.
        """
        centres, partners = [], []
        used: set[str] = set()
        misses = 0
        while len(centres) < size:
            text = self.random_doc(lang, rng)
            sentences = split_sentences(text) if text not in used else []
            if len(sentences) < 2:
                misses += 1
                if misses > 1000 + 100 * size:
                    raise ValueError(f"{lang} documents give too few distinct texts of two sentences or more for CCP windows of {size}")
                continue
            used.add(text)
            window = rng.choice(windows_of(sentences, min(self.args.ccp_window, len(sentences))))
            centre = len(window) // 2
            centres.append(window[centre])
            partners.append(window[rng.choice([i for i in range(len(window)) if i != centre])])
        return centres, partners

    def init_transformer(self) -> nn.Module:
        return self.encoder.transformer

    def export_masked_lm(self) -> nn.Module:
        return self.module["mlm"]  # trained whole, MLM head included: the DPR fine-tuning of [CCP] starts here

    def extra_state(self) -> dict[str, Any]:
        return {"banks": self.banks.state_dict()}

    def load_extra_state(self, state: dict[str, Any]) -> None:
        self.banks.load_state_dict(state["banks"])

    # -- calibration -----------------------------------------------------------------------

    @torch.no_grad()
    def calibrate(self) -> Calibration:
        """Fit shift, scale and the query-side rotations for the current encoder."""
        was_training = self.module.training
        self.module.eval()
        calibration = Calibration()
        rng = random.Random(self.args.seed)
        size = self.args.eval_batch_size
        for lang in self.languages():
            texts = [self.random_doc(lang, rng) for _ in range(self.args.calibration_docs)]
            for start in range(0, len(texts), size):
                calibration.update(lang, self.embed(self.encoder, texts[start : start + size]))
        if self.args.calibration not in CALIBRATIONS:
            raise ValueError(f"unknown calibration {self.args.calibration!r}; expected one of {', '.join(CALIBRATIONS)}")
        pairs = self.parallel_pairs() if self.args.calibration == "procrustes" else []
        for src, tgt in self.directions if pairs else ():
            chosen = [p for p in pairs if {p.lang_a, p.lang_b} == {src, tgt}]
            src_texts = [p.text_a if p.lang_a == src else p.text_b for p in chosen]
            tgt_texts = [p.text_b if p.lang_a == src else p.text_a for p in chosen]
            x = calibration.transform(src, self.embed(self.encoder, src_texts))
            y = calibration.transform(tgt, self.embed(self.encoder, tgt_texts))
            calibration.fit_rotation(src, tgt, x, y)
        self.module.train(was_training)
        self.calibration, self._calibrated_at = calibration, self._steps_seen
        return calibration

    def finish(self, run_dir: Path) -> None:
        self.calibrate().save(Path(run_dir) / CALIBRATION)

    def load_finished(self, run_dir: Path) -> None:
        path = Path(run_dir) / CALIBRATION
        if not path.is_file():
            raise FileNotFoundError(f"{path} is missing: the CCP run did not finish (its calibration is written last)")
        self.calibration, self._calibrated_at = Calibration.load(path), self._steps_seen

    def ranker(self) -> Ranker:
        if self.calibration is None or self._calibrated_at != self._steps_seen:
            self.calibrate()
        return CalibratedRanker(self, self.calibration)


class CalibratedRanker(DualEncoderRanker):
    """Cosine of calibrated CLS vectors: queries shifted, scaled and rotated into the document language."""

    def __init__(self, recipe: CcpRecipe, calibration: Calibration) -> None:
        super().__init__(recipe, recipe.encoder, recipe.encoder, "cosine")
        self.calibration = calibration

    def embed(self, encoder: Encoder, lang: str, texts: Sequence[str], into: str | None = None) -> torch.Tensor:
        rotate = into if self.recipe.args.calibration == "procrustes" else None
        return self.calibration.transform(lang, super().embed(encoder, lang, texts), into=rotate).float()


def mask_tokens(input_ids: torch.Tensor, tokenizer, attention_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """BERT masking by transformers' collator (15% of real tokens; 80% [MASK], 10% random, 10% kept).

    Draws from torch's global generator, which ``draw`` seeds from its own generator.
    """
    from transformers import DataCollatorForLanguageModeling

    special = [tokenizer.get_special_tokens_mask(ids, already_has_special_tokens=True) for ids in input_ids.tolist()]
    keep = torch.tensor(special, dtype=torch.bool, device=input_ids.device) | ~attention_mask.bool()
    collator = DataCollatorForLanguageModeling(tokenizer, mlm_probability=MASKED_FRACTION)
    return collator.torch_mask_tokens(input_ids.clone(), special_tokens_mask=keep)
