"""DAP's training-only modules (docs/models.md §4, [DAP] §3): the TR projection and the RTL head g.

Both serve only the training losses in ``clirmatrix.models.losses.dap``; the sentence
embedding at test time is the encoder's raw final-layer CLS vector.
"""

from __future__ import annotations

import copy

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from transformers import BertConfig, PreTrainedModel
from transformers.models.bert.modeling_bert import BertEmbeddings, BertForMaskedLM, BertLayer, BertOnlyMLMHead


class TranslationProjection(nn.Module):
    """dense + tanh over the CLS vector, used only for the TR loss (docs/models.md §4, DAP code's ``MLPLayer``).

    Args:
        hidden_size: width of the CLS vector (in and out).
    """

    def __init__(self, hidden_size: int):
        super().__init__()
        self.dense = nn.Linear(hidden_size, hidden_size)
        self.activation = nn.Tanh()

    def forward(self, cls_states: Tensor) -> Tensor:
        """[..., H] CLS vectors -> [..., H] tanh(W h + b)."""
        return self.activation(self.dense(cls_states))


class RtlHead(nn.Module):
    """The representation-translation-learning head g of [DAP] eq. 4 (docs/models.md §4).

    K transformer layers and an MLM vocabulary head over
    ``(h_1..h_Sx, [MASK] x Sy)``: the source encoder's final token states followed by Sy
    ``[MASK]`` embeddings, from which the English target is predicted position by position.

    Built with :meth:`from_masked_lm` (an independent copy of a pre-trained masked LM's
    embedding layer, last K layers and MLM head, as the DAP code does); ``__init__`` gives
    the same architecture with fresh weights, for loading a saved ``state_dict``.

    Target position ids are ``0..Sy-1``: the ``[MASK]`` queries are embedded by the copied
    embedding layer as a sequence of their own (word + position + token-type 0, then
    LayerNorm and dropout), exactly as the DAP code builds them, so target slot t carries
    the position the t-th token of y has when y is encoded alone (slot 0 = y's leading
    special token). The source states enter unchanged: they already carry positions, and
    eq. 4 adds nothing to them. (The DAP code feeds the concatenation through the embedding
    layer a second time, adding positions ``0..Sx+Sy-1``; we leave that out, as eq. 4 does, so
    the logits do not depend on how far the source batch is padded, and only
    ``Sy <= max_position_embeddings`` is needed.)

    Attention runs with the config's "eager" or "sdpa" kernel (any other, e.g. flash
    attention, is replaced by "sdpa" in the head's copy of the config: the extended mask is
    an additive float mask).

    Args:
        config: the masked LM's ``BertConfig`` (copied).
        num_layers: K, the number of transformer layers (2 is best, [DAP] §5.3).
        mask_token_id: id of ``[MASK]``; defaults to ``config.mask_token_id``.

    Raises:
        ValueError: no mask token id, or ``num_layers`` < 1.
    """

    def __init__(self, config: BertConfig, num_layers: int = 2, mask_token_id: int | None = None):
        super().__init__()
        if num_layers < 1:
            raise ValueError(f"num_layers must be at least 1, got {num_layers}")
        if mask_token_id is None:
            mask_token_id = getattr(config, "mask_token_id", None)
        if mask_token_id is None:
            raise ValueError("RtlHead needs mask_token_id: pass it, or set config.mask_token_id")
        self.config = copy.deepcopy(config)
        if getattr(self.config, "_attn_implementation", None) not in ("eager", "sdpa"):
            # forward passes an additive float mask [B, 1, 1, S], which these two kernels take.
            self.config._attn_implementation = "sdpa"
        self.mask_token_id = int(mask_token_id)
        self.embeddings = BertEmbeddings(self.config)
        self.layers = nn.ModuleList(BertLayer(self.config) for _ in range(num_layers))
        self.cls = BertOnlyMLMHead(self.config)
        if getattr(self.config, "tie_word_embeddings", True):
            # The same ties BertForMaskedLM makes (its _tied_weights_keys), within this copy.
            self.cls.predictions.decoder.weight = self.embeddings.word_embeddings.weight
            self.cls.predictions.decoder.bias = self.cls.predictions.bias

    @classmethod
    def from_masked_lm(
        cls, mlm: PreTrainedModel, num_layers: int = 2, mask_token_id: int | None = None
    ) -> RtlHead:
        """An RTL head whose weights are copies of ``mlm``'s embeddings, last ``num_layers`` layers and MLM head.

        The copy owns its parameters: later changes to ``mlm`` do not reach it.

        Args:
            mlm: a pre-trained ``BertForMaskedLM`` (``.bert`` and ``.cls``).
            num_layers: K, how many of the last layers to copy.
            mask_token_id: id of ``[MASK]``; defaults to ``mlm.config.mask_token_id``.

        Raises:
            ValueError: ``mlm`` is not a ``BertForMaskedLM``, it has fewer than ``num_layers``
                layers, or no mask token id is known.
        """
        if not isinstance(mlm, BertForMaskedLM):
            raise ValueError(
                f"RtlHead.from_masked_lm supports the BERT family (BertForMaskedLM), not {type(mlm).__name__}"
            )
        source_layers = mlm.bert.encoder.layer
        if num_layers > len(source_layers):
            raise ValueError(f"num_layers={num_layers} but {type(mlm).__name__} has {len(source_layers)} layers")
        head = cls(mlm.config, num_layers=num_layers, mask_token_id=mask_token_id)
        head.embeddings.load_state_dict(mlm.bert.embeddings.state_dict())
        for target, source in zip(head.layers, source_layers[len(source_layers) - num_layers :]):
            target.load_state_dict(source.state_dict())
        head.cls.load_state_dict(mlm.cls.state_dict())
        return head.to(device=mlm.device, dtype=mlm.dtype)

    def forward(
        self, source_states: Tensor, source_mask: Tensor, target_mask: Tensor, vocab_ids: Tensor | None = None
    ) -> Tensor:
        """Vocabulary logits for each of the Sy target positions.

        Keys masked out of attention: the source CLS (position 0: including it hurts TR,
        [DAP] §3.3.2), source padding and target padding. To also block the target's leading
        special-token slot, as the DAP code does, pass ``target_mask[:, 0] = 0``.

        Args:
            source_states: [B, Sx, H] final-layer encoder states of x, CLS first.
            source_mask: [B, Sx] 1 for real tokens of x, 0 for padding.
            target_mask: [B, Sy] 1 for the target positions of y, 0 for padding.
            vocab_ids: optional [V'] token ids; the logits are then over these ids only, in
                this order (e.g. English token ids, as the DAP code can do for speed).

        Returns:
            [B, Sy, V] logits (V' columns with ``vocab_ids``).

        Raises:
            ValueError: mismatched shapes, or Sy beyond ``max_position_embeddings``.
        """
        batch, source_len, _ = source_states.shape
        if source_mask.shape != (batch, source_len) or target_mask.dim() != 2 or target_mask.shape[0] != batch:
            raise ValueError(
                f"masks must be [B, Sx] and [B, Sy] for states {tuple(source_states.shape)}, "
                f"got {tuple(source_mask.shape)} and {tuple(target_mask.shape)}"
            )
        target_len = target_mask.shape[1]
        if target_len > self.config.max_position_embeddings:
            raise ValueError(f"Sy={target_len} exceeds max_position_embeddings={self.config.max_position_embeddings}")
        device = source_states.device

        # The [MASK] queries, embedded as a sequence of their own: positions 0..Sy-1.
        mask_ids = torch.full((batch, target_len), self.mask_token_id, dtype=torch.long, device=device)
        positions = torch.arange(target_len, device=device).expand(batch, -1)
        queries = self.embeddings(
            input_ids=mask_ids, position_ids=positions, token_type_ids=torch.zeros_like(mask_ids)
        )
        hidden = torch.cat([source_states, queries.to(source_states.dtype)], dim=1)

        # Keys each query may attend to: real tokens of both parts, never the source CLS.
        keep = torch.cat([source_mask.bool(), target_mask.bool()], dim=1)
        keep[:, 0] = False
        additive = torch.zeros(keep.shape, dtype=hidden.dtype, device=device)
        additive = additive.masked_fill(~keep, torch.finfo(hidden.dtype).min)[:, None, None, :]
        for layer in self.layers:
            output = layer(hidden, additive)
            hidden = output[0] if isinstance(output, tuple) else output

        target_states = hidden[:, source_len:]
        if vocab_ids is None:
            return self.cls(target_states)
        predictions = self.cls.predictions
        decoder = predictions.decoder
        bias = None if decoder.bias is None else decoder.bias[vocab_ids]
        return F.linear(predictions.transform(target_states), decoder.weight[vocab_ids], bias)
