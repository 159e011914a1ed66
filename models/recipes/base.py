"""What every training recipe shares: the directions, the stores, the collator, the rankers.

A recipe is one ``--model`` of docs/models.md: it builds its network from a masked-LM
backbone, draws one micro-batch per call to :meth:`Recipe.draw` from a seeded
``random.Random`` (texts read and tokenised into CPU tensors: the part a DataLoader
worker runs), turns a drawn micro-batch into loss terms with :meth:`Recipe.losses`,
and hands evaluation a :class:`Ranker` that scores a query's candidates. The trainer
knows nothing else about it.
"""

from __future__ import annotations

import contextlib
import random
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

import torch
from torch import nn

from clirmatrix.models.arguments import TrainArguments
from clirmatrix.models.collate import Collator
from clirmatrix.models.data import DocStore, ParallelPair, QueryRecord, QueryStore, mine_parallel_pairs
from clirmatrix.models.distributed import gather
from clirmatrix.models.modeling.encoder import Encoder, base_model, load_masked_lm, load_tokenizer
from clirmatrix.pipeline.config import comma_list
from clirmatrix.pipeline.errors import InvalidInputError
from clirmatrix.pipeline.method.languages import MULTI8_LANGUAGES

# Each yielded dict is back-propagated at once (the sum of its weighted terms); terms
# computed on separate batches come in separate dicts so their graphs never coexist ([H] §4).
T = TypeVar("T")
LossTerms = Iterator[dict[str, torch.Tensor]]
Batch = dict[str, Any]  # a drawn micro-batch: CPU tensors (tokenised texts, labels) and plain values


def resolve_directions(src: str, tgt: str) -> list[tuple[str, str]]:
    """``en``/``de`` -> [(en, de)]; comma lists and ``all`` (the MULTI-8 languages) expand to every pair."""

    def langs(value: str) -> list[str]:
        return list(MULTI8_LANGUAGES) if value.strip() == "all" else comma_list(value)

    directions = [(s, t) for s in langs(src) for t in langs(tgt) if s != t]
    if not directions:
        raise InvalidInputError(f"--src {src} --tgt {tgt} name no direction (source and target must differ)")
    return directions


class Ranker:
    """Scores each query's candidate documents; higher is better. Subclasses fill :meth:`score`."""

    def score(self, src: str, tgt: str, queries: Sequence[str], docs: Sequence[Sequence[str]]) -> list[list[float]]:
        raise NotImplementedError


class DualEncoderRanker(Ranker):
    """Embed queries and documents apart, then compare them by cosine or dot product."""

    def __init__(self, recipe: Recipe, query_encoder: Encoder, doc_encoder: Encoder, similarity: str) -> None:
        self.recipe = recipe
        self.query_encoder = query_encoder
        self.doc_encoder = doc_encoder
        self.similarity = similarity

    def embed(self, encoder: Encoder, lang: str, texts: Sequence[str], into: str | None = None) -> torch.Tensor:
        """Embeddings of ``texts`` (a recipe may post-process them, as CCP's calibration does)."""
        return self.recipe.embed(encoder, texts)

    @torch.no_grad()
    def score(self, src: str, tgt: str, queries: Sequence[str], docs: Sequence[Sequence[str]]) -> list[list[float]]:
        query_vectors = self.embed(self.query_encoder, src, list(queries), into=tgt)
        flat = [text for candidates in docs for text in candidates]
        doc_vectors = self.embed(self.doc_encoder, tgt, flat)
        if self.similarity == "cosine":
            query_vectors = nn.functional.normalize(query_vectors, dim=-1)
            doc_vectors = nn.functional.normalize(doc_vectors, dim=-1)
        scores, start = [], 0
        for query_vector, candidates in zip(query_vectors, docs):
            block = doc_vectors[start : start + len(candidates)]
            scores.append((block @ query_vector).tolist())
            start += len(candidates)
        return scores


def gather_pairs(queries: torch.Tensor, passages: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Queries and their passages (N positives, then N hard negatives) of every process, still aligned.

    Positives and negatives are gathered apart so that query i's positive stays passage i
    in the whole batch too (``distributed.gather``).
    """
    n = queries.shape[0]
    return gather(queries), torch.cat([gather(passages[:n]), gather(passages[n:])])


def compile_transformers(module: nn.Module) -> None:
    """``torch.compile`` every transformer of ``module`` in place, for fixed shapes (heads and losses stay eager)."""
    from transformers import PreTrainedModel

    compiled: list[str] = []
    for name, part in module.named_modules():
        if isinstance(part, PreTrainedModel) and not any(name.startswith(outer + ".") for outer in compiled):  # the outermost: it calls the rest
            part.compile(dynamic=False)
            compiled.append(name)


def by_length(texts: Sequence[str]) -> list[int]:
    """Positions of ``texts`` from shortest to longest: batches of similar length pad little."""
    return sorted(range(len(texts)), key=lambda i: len(texts[i]))


class Recipe:
    """Base of the five recipes; ``build``, ``losses`` and ``ranker`` are theirs to define."""

    def __init__(self, args: TrainArguments, backbone: str | Path, device: torch.device, pretrained: bool = True) -> None:
        """``backbone`` is ``--init`` when training, or the run's config-only copy (``pretrained=False``) when loading."""
        self.args = args
        self.device = device
        self.directions = resolve_directions(args.src, args.tgt)
        self.cache_dir = args.cache_dir or None  # where the stores' indexes go (None: data.default_cache_dir())
        self.backbone = Path(backbone)
        self.tokenizer = load_tokenizer(backbone)
        self.collator = Collator(self.tokenizer, args.max_len, args.max_query_len, device)  # scoring: tensors on the device
        self.drawing = Collator(self.tokenizer, args.max_len, args.max_query_len, "cpu", fixed=args.torch_compile)  # training batches: CPU tensors, moved by the trainer
        self.module = self.build(load_masked_lm(backbone, weights=pretrained)).to(device)
        if args.torch_compile:
            compile_transformers(self.module)
        self._docs: dict[str, DocStore] = {}
        self._queries: list[QueryStore] | None = None
        self._pairs: list[ParallelPair] | None = None

    # -- what a recipe defines ---------------------------------------------------------

    def build(self, masked_lm: nn.Module) -> nn.Module:
        """The trainable network (an ``nn.ModuleDict`` or module) from the loaded masked LM."""
        raise NotImplementedError

    def draw(self, rng: random.Random, size: int, step: int, shared: random.Random) -> Batch:
        """A micro-batch of ``size`` examples for optimizer step ``step``, from ``rng`` and ``shared`` alone.

        Runs in DataLoader workers: it reads the stores and tokenises (``self.drawing``),
        never touches the network or state that training changes, and gives the same
        batch in any process for the same generators. ``rng`` is this process's own;
        ``shared`` is seeded by the step alone, for the choices every process and
        micro-batch of a step must make alike (CCP's step kind and language: its whole
        batch, gathered and gradient-cached, is one language's).
        """
        raise NotImplementedError

    def losses(self, batch: Batch, step: int) -> LossTerms:
        """Yield the loss terms of a drawn micro-batch (already on the device).

        Terms are unweighted (so logs compare across weights); :meth:`weight` scales them.
        """
        raise NotImplementedError

    def weight(self, term: str) -> float:
        """The weight of a named loss term in the objective (1 unless the recipe says otherwise)."""
        return 1.0

    # Gradient caching (Gao et al. 2021; ``trainer.Trainer.step``): a recipe whose losses compare a
    # batch's examples with each other defines both halves; the others return None from ``vectors``.

    def vectors(self, batch: Batch, step: int, local: bool = False) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]] | None:
        """A micro-batch's vectors that the in-batch losses compare, by name, and (``local``) its loss terms that need no other micro-batch.

        Each named tensor's rows are the micro-batch's own, in order: the whole batch's
        are the micro-batches' concatenated. None: this micro-batch's losses are not
        in-batch (every micro-batch back-propagates its own, as without caching).
        """
        return None

    def batch_losses(self, vectors: dict[str, torch.Tensor], batch: Batch, step: int) -> dict[str, torch.Tensor]:
        """The in-batch loss terms over the whole batch's ``vectors`` (``batch``: its first micro-batch, for plain values)."""
        raise NotImplementedError(f"{type(self).__name__} has no in-batch losses")

    def ranker(self) -> Ranker:
        raise NotImplementedError

    def param_groups(self) -> list[dict[str, Any]]:
        """Optimizer groups; one learning rate unless a recipe has heads to treat apart."""
        return [{"params": [p for p in self.module.parameters() if p.requires_grad], "lr": self.args.lr}]

    def extra_state(self) -> dict[str, Any]:
        """State beyond the parameters that a checkpoint must keep (CCP's memory banks)."""
        return {}

    def load_extra_state(self, state: dict[str, Any]) -> None:
        pass

    def init_transformer(self) -> nn.Module:
        """The trained transformer a later run starts from when this run is its ``--init`` (the document side's)."""
        return self.module.transformer

    def export_masked_lm(self) -> nn.Module:
        """A masked-LM model holding :meth:`init_transformer`'s weights, to save as a HuggingFace model directory.

        Its MLM head comes from the run's own ``--init`` while that directory exists
        (the run did not train it), else it is freshly initialised.
        """
        original = Path(self.args.init)
        kept = (original / "config.json").is_file()
        masked_lm = load_masked_lm(original if kept else self.backbone, weights=kept)
        base_model(masked_lm).load_state_dict(self.init_transformer().state_dict())
        return masked_lm

    def finish(self, run_dir: Path) -> None:
        """Work after the last step that evaluation needs (CCP's calibration)."""

    def load_finished(self, run_dir: Path) -> None:
        """Read back what :meth:`finish` wrote."""

    def inference(self) -> contextlib.AbstractContextManager:
        """Scoring without autograd, in bf16 on a GPU when training uses it (the vectors come back as float32)."""
        stack = contextlib.ExitStack()
        stack.enter_context(torch.inference_mode())
        if self.args.torch_compile:  # scoring's batches vary in shape: each would compile a graph
            stack.enter_context(torch.compiler.set_stance("force_eager"))
        if self.args.bf16 and self.device.type == "cuda":
            stack.enter_context(torch.autocast(device_type="cuda", dtype=torch.bfloat16))
        return stack

    def embed(self, encoder: Encoder, texts: Sequence[str]) -> torch.Tensor:
        """``encoder``'s float32 vectors of ``texts``, ``eval_batch_size`` texts per forward pass, batched by length."""
        size = self.args.eval_batch_size
        order = by_length(texts)
        with self.inference():
            parts = [encoder(self.collator.texts([texts[i] for i in order[start : start + size]])).float() for start in range(0, len(texts), size)]
        if not parts:
            return torch.zeros(0, encoder.hidden_size)
        vectors = torch.empty_like(torch.cat(parts))
        vectors[torch.as_tensor(order, device=vectors.device)] = torch.cat(parts)
        return vectors.clone()  # a normal tensor, usable outside inference mode

    # -- shared data access -------------------------------------------------------------

    def docs(self, lang: str) -> DocStore:
        if lang not in self._docs:
            self._docs[lang] = DocStore(self.args.data, lang, cache_dir=self.cache_dir)
        return self._docs[lang]

    def train_queries(self) -> list[QueryStore]:
        """The training split of every direction, in direction order."""
        if self._queries is None:
            self._queries = [QueryStore(self.args.data, self.args.dataset, s, t, "train", cache_dir=self.cache_dir) for s, t in self.directions]
        return self._queries

    def parallel_pairs(self) -> list[ParallelPair]:
        """Title (or lead-sentence, ``--parallel lead``) pairs of the run's directions, mined from the build.

        Bounded by the training queries' count, so they are kept in memory.
        """
        if self._pairs is None:
            skipped: Counter = Counter()
            mined = mine_parallel_pairs(self.args.data, self.directions, kind=self.args.parallel, dataset=self.args.dataset, cache_dir=self.cache_dir, skipped=skipped)
            self._pairs = list(mined)
            if not self._pairs:
                raise InvalidInputError(f"no {self.args.parallel} pairs could be mined for {self.directions} from {self.args.data} (skipped: {dict(skipped)})")
        return self._pairs

    def random_doc(self, lang: str, rng: random.Random) -> str:
        """The text of a random document of ``lang`` among those the training queries reach."""
        involved = [i for i, pair in enumerate(self.directions) if lang in pair]
        for _ in range(1000):
            index = rng.choice(involved)
            src, _ = self.directions[index]
            store = self.train_queries()[index]
            record = store[rng.randrange(len(store))]
            doc_id = record.src_id if lang == src else rng.choice(record.tgt_results)[0]
            text = self.docs(lang).get(doc_id)
            if text:
                return text
        raise InvalidInputError(f"no document text of {lang} found for the training queries of {self.directions}")

    def draw_query(self, rng: random.Random) -> tuple[tuple[str, str], QueryRecord]:
        """A training query drawn uniformly over the union of the directions, with its direction."""
        stores = self.train_queries()
        position = rng.randrange(sum(len(store) for store in stores))
        for direction, store in zip(self.directions, stores):
            if position < len(store):
                return direction, store[position]
            position -= len(store)
        raise AssertionError("unreachable: position is below the total")

    def draw_examples(self, rng: random.Random, size: int, make: Callable[[tuple[str, str], QueryRecord], T | None]) -> list[T]:
        """``size`` examples ``make(direction, record)`` from uniformly drawn queries; ``None`` = draw again."""
        examples: list[T] = []
        misses = 0
        while len(examples) < size:
            direction, record = self.draw_query(rng)
            example = make(direction, record)
            if example is not None:
                examples.append(example)
                continue
            misses += 1
            if misses > 1000 + 100 * size:
                raise InvalidInputError(f"the training queries of {self.directions} give almost no usable example for {self.args.model}")
        return examples

    def languages(self) -> list[str]:
        """Every language of the run's directions, in first-seen order."""
        return list(dict.fromkeys(lang for pair in self.directions for lang in pair))
