"""Wikipedia and Wikidata dumps of realistic size, in the formats Wikimedia publishes today.

The sample dumps (``clirmatrix.pipeline.tools.sample``) are small and of one size; per-core
speeds measured on them do not extrapolate to the real inputs, whose articles range from
a 300-byte stub to a megabyte list. This generator writes, for one language and a given
article count, articles whose sizes and structure follow published statistics
(docs/benchmarks.md, "Realistic dumps: the published figures"), in the real formats:

- ``{wiki}-NS0-{date}-ENTERPRISE-HTML.json.tar.gz``: one gzip stream over a tar of
  NDJSON members of at most ``lines_per_member`` lines (``{wiki}_namespace_0_{k}.ndjson``),
  one Enterprise record a line with the fields of a real 2023 record and Go's JSON
  escaping (``<`` as ``\\u003c``), Parsoid HTML with sections, linked prose,
  TemplateStyles, hatnotes, infoboxes with ``data-mw``, references and their list,
  figures, tables, navboxes and category links, and the record's wikitext;
- ``{wiki}-{date}-pages-articles-multistream.xml.bz2`` and its index: the same
  articles' wikitext (infobox, cite, convert, lang, nowrap, navbox templates, refs,
  tables, files, categories, a few interlanguage links) with redirects and pages of
  other namespaces in their published shares, 100 pages per bz2 stream;
- ``latest-all.json.gz`` and ``.bz2``: one Wikidata item per article (claims with
  qualifiers and references, labels, descriptions, aliases, sitelinks to other wikis
  and sister projects) plus items without sitelinks, in the dump's framing and PHP
  escaping; ``wikidatawiki-{date}-wb_items_per_site.sql.gz`` with the same sitelinks.

Every article depends only on (seed, language, index), so the output is the same for
any number of processes: parts are generated in worker processes and spliced in order
(gzip: raw deflate pieces joined into one member, CRC-32s combined; bz2: one stream per
100 pages, or per part for Wikidata, as the real files are multi-stream). Hand-written
because no library generates Parsoid HTML or these dumps; the CRC combination is
zlib's ``crc32_combine``, which the standard library does not expose.

What each size is calibrated to, and what was assumed where no figure was found, is in
``PUBLISHED`` and ``LangProfile`` below and in docs/benchmarks.md.

Titles are as selective against the text as real English titles are against real article
text (``TITLE_KINDS``, measured by ``bench/title_selectivity.py``). ``--partner LANG:N`` also
writes a second language's Enterprise HTML dump whose N articles are the first of this
language's items with a sitelink to it (``partner_world``), so a build has directions.

Usage: python bench/realistic_dumps.py --out DIR --lang en --articles 100000
       --formats html,xml,wikidata,items-per-site [--seed 1] [--processes 2] [--partner de:20000]
"""

from __future__ import annotations

import argparse
import base64
import bz2
import functools
import hashlib
import json
import math
import multiprocessing
import os
import random
import re
import struct
import sys
import tarfile
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import orjson

FORMATS = ("html", "xml", "wikidata", "items-per-site")
DEFAULT_DATE = "20261101"
DEFAULT_LINES_PER_MEMBER = 17_500  # enwiki-NS0-20250120 had 392 members (0..391) for ~6.9 M articles
PAGES_PER_STREAM = 100  # pages-articles-multistream: 100 pages per bz2 stream
MAX_ARTICLE_BYTES = 2 * 1024 * 1024  # $wgMaxArticleSize on Wikimedia wikis (2,048 KB)
STATS_FILE = "realistic-stats.json"

# Published figures the generator is calibrated to or checked against (docs/benchmarks.md).
PUBLISHED = {
    "en_articles": (7_210_627, "meta.wikimedia.org/wiki/List_of_Wikipedias, 2026-07-19 (AnySoftKeyboard/janus 7e5b4ee)"),
    "en_pages": (65_922_751, "same"),
    "bi139_articles": (65_747_190, "same, summed over the 139 BI-139 languages"),
    "en_pages_articles_bz2_gb": (24.05, "en.wikipedia.org/wiki/Wikipedia:Size_of_Wikipedia, 2024-10-16"),
    "en_words_per_article": (702, "Wikipedia:Size of Wikipedia, 2025-07-26 (words of the wikitext)"),
    "en_plain_words_per_article": (383, "allenai/OLMo pretrain_data/wikipedia/README.md, 2023-03-20 dump, WikiExtractor text"),
    "en_redirect_share_pages_articles": (0.451, "9,468,507 redirects of 20,993,369 pages, enwiki 2020-04/2021-02 (a public README)"),
    "wikidata_json_gz_gb": (96, "neelguha/simple-wikidata-db#11, 2025-06-05 (~960 GB uncompressed)"),
    "wikidata_entities": (112_600_000, "brawer/wikidata-qrank#35, 2024-05 (page_entities of wikidatawiki)"),
}


@dataclass(frozen=True)
class LangProfile:
    """What sets one language's dumps apart; sizes relative to English.

    ``size_factor`` scales the median wikitext size: OLMo's plain-text words per
    article (2023-03) relative to English's 383, times the bytes a word takes in the
    script (Cyrillic and Arabic letters are 2 bytes in UTF-8), rounded; an assumption
    where marked in docs. ``bot_share`` is the share of bot-made geographic stubs
    (Lsjbot in ceb, war and sv; arz's bot articles).
    """

    code: str
    script: str
    articles: int  # Meta's List of Wikipedias, 2026-07-19
    size_factor: float = 0.35
    redirects_per_article: float = 0.8  # assumed outside en
    other_pages_per_article: float = 0.6  # assumed outside en
    bot_share: float = 0.0
    namespaces: tuple[str, str, str] = ("Template", "Category", "File")
    redirect_word: str = "#REDIRECT"


_LATIN = "latin"
PROFILES: dict[str, LangProfile] = {
    p.code: p
    for p in (
        LangProfile("en", _LATIN, 7_210_627, 1.0, 1.55, 0.86),
        LangProfile("ceb", _LATIN, 6_115_368, 0.25, 0.15, 0.2, 0.97, ("Plantilya", "Kategoriya", "Payl")),
        LangProfile("de", _LATIN, 3_136_954, 0.97, 0.6, 0.5, 0.0, ("Vorlage", "Kategorie", "Datei"), "#WEITERLEITUNG"),
        LangProfile("fr", _LATIN, 2_770_056, 0.9, 1.1, 0.9, 0.0, ("Modèle", "Catégorie", "Fichier"), "#REDIRECTION"),
        LangProfile("sv", _LATIN, 2_626_646, 0.4, 0.5, 0.3, 0.55, ("Mall", "Kategori", "Fil"), "#OMDIRIGERING"),
        LangProfile("nl", _LATIN, 2_223_344, 0.37, 0.5, 0.4, 0.0, ("Sjabloon", "Categorie", "Bestand"), "#DOORVERWIJZING"),
        LangProfile("ru", "cyrillic", 2_110_183, 1.3, 1.0, 0.8, 0.0, ("Шаблон", "Категория", "Файл"), "#перенаправление"),
        LangProfile("es", _LATIN, 2_126_116, 1.04, 1.0, 0.7, 0.0, ("Plantilla", "Categoría", "Archivo"), "#REDIRECCIÓN"),
        LangProfile("it", _LATIN, 1_978_111, 0.85, 0.7, 0.7, 0.0, ("Template", "Categoria", "File"), "#RINVIA"),
        LangProfile("pl", _LATIN, 1_701_911, 0.5, 0.5, 0.5, 0.0, ("Szablon", "Kategoria", "Plik"), "#PATRZ"),
        LangProfile("arz", "arabic", 1_632_444, 0.3, 0.3, 0.2, 0.9, ("قالب", "تصنيف", "ملف")),
        LangProfile("zh", "han", 1_544_615, 0.6, 1.0, 0.8, 0.0, ("Template", "Category", "File")),
        LangProfile("ja", "kana", 1_510_526, 0.9, 0.9, 0.7, 0.0, ("Template", "Category", "ファイル"), "#転送"),
        LangProfile("uk", "cyrillic", 1_428_353, 1.0, 0.6, 0.6, 0.0, ("Шаблон", "Категорія", "Файл"), "#ПЕРЕНАПРАВЛЕННЯ"),
        LangProfile("vi", _LATIN, 1_303_719, 0.4, 0.6, 0.4, 0.3, ("Bản mẫu", "Thể loại", "Tập tin"), "#đổi"),
        LangProfile("war", _LATIN, 1_266_913, 0.25, 0.1, 0.2, 0.97, ("Batakan", "Kaarangay", "Fayl")),
        LangProfile("ar", "arabic", 1_324_863, 0.75, 0.9, 0.7, 0.1, ("قالب", "تصنيف", "ملف"), "#تحويل"),
        LangProfile("pt", _LATIN, 1_178_248, 0.75, 1.0, 0.7, 0.0, ("Predefinição", "Categoria", "Ficheiro"), "#REDIRECIONAMENTO"),
        LangProfile("fa", "arabic", 1_080_126, 0.58, 1.0, 0.7, 0.1, ("الگو", "رده", "پرونده"), "#تغییرمسیر"),
    )
}

# English wikitext bytes per article: the body is drawn lognormal (median 4,000, sigma 1.3), and the
# references, categories and navboxes around it add ~1 kB: realised median ~5 kB, mean ~10.5 kB
# (docs/benchmarks.md derives the mean from the 24 GB pages-articles.xml.bz2).
EN_WIKITEXT_MEDIAN = 4_000
WIKITEXT_SIGMA = 1.3
MIN_ARTICLE_BYTES = 150
BOT_STUB_MEDIAN, BOT_STUB_SIGMA = 2_100, 0.35

# Sites an item links to besides this wiki, weighted by their article counts in thousands (Meta,
# 2026-07; every wiki over ~140,000 articles). The scale benchmark's projection reads them too.
WIKI_SIZES = (
    ("en", 7211), ("ceb", 6115), ("de", 3137), ("fr", 2770), ("sv", 2627), ("nl", 2223), ("es", 2126), ("ru", 2110),
    ("it", 1978), ("pl", 1702), ("arz", 1632), ("zh", 1545), ("ja", 1511), ("uk", 1428), ("ar", 1325), ("vi", 1304),
    ("war", 1267), ("pt", 1178), ("fa", 1080), ("ca", 785), ("id", 757), ("ko", 732), ("sr", 713), ("ce", 688), ("no", 662),
    ("tr", 655), ("fi", 609), ("cs", 582), ("hu", 564), ("tt", 562), ("ro", 519), ("eu", 477), ("sh", 461), ("ms", 435),
    ("zh_min_nan", 434), ("he", 387), ("eo", 379), ("hy", 323), ("uz", 319), ("da", 312), ("bg", 307), ("cy", 284),
    ("simple", 277), ("el", 262), ("sk", 257), ("et", 256), ("be", 258), ("azb", 244), ("kk", 241), ("ur", 236),
    ("min", 229), ("gl", 228), ("hr", 229), ("lt", 224), ("az", 210), ("sl", 196), ("ka", 188), ("lld", 181),
    ("ta", 179), ("th", 178), ("bn", 178), ("nn", 177), ("hi", 167), ("mk", 157), ("la", 141), ("lv", 139),
)
_SISTER_SITES = (("commonswiki", 0.22), ("wikiquote", 0.03), ("wikisource", 0.02), ("wikivoyage", 0.01), ("wikibooks", 0.005))


# --- vocabulary and Zipf sampling --------------------------------------------------------

_SCRIPT_LETTERS = {
    "latin": ("b c d f g h j k l m n p r s t v w z br st tr ch sh th nd ng".split(), "a e i o u a e i o ei ou ia".split()),
    "cyrillic": (list("бвгджзклмнпрстфхцчшщ"), list("аеиоуыяюэ")),
    "arabic": (list("بتثجحخدذرزسشصضطظعغفقكلمنهوي"), ["ا", "و", "ي", "", "ة"]),
}
_EXTRA_LETTERS = {"de": "äöüß", "fr": "éèàç", "es": "ñáéó", "pl": "łśżą", "sv": "åäö", "vi": "ăâđêôơư", "pt": "ãçé", "it": "àè"}
_UNSPACED = {"zh", "ja"}
VOCABULARY_SIZE = 100_000
_FREQUENT_WORDS = 60  # the most frequent ranks (function words): qualifiers of other languages skip them
# A title word's share of each band of prose ranks (upper rank, share): real titles' terms by their document
# frequency (>= 20 %, 5-20 %, 1-5 %, 0.1-1 %, rarer), docs/benchmarks.md 2026-11-29 (``_title_weights``).
# Titles as real English titles are against real article text (bench/title_selectivity.py on 42,185 articles of three
# samples, docs/benchmarks.md 2026-11-29): 53 % are names, every term in under 1 % of the texts, 47 % describe
# (a list, a season, a film) with at least one term in 1 % or more. Per kind: its share, its words' count (1-5)
# and their shares of the bands of prose ranks by document frequency in the truncated text (``TITLE_BANDS``:
# >= 20 %, 5-20 %, 1-5 %, 0.1-1 %, rarer), from the real titles' terms in those bands (``_title_weights``).
TITLE_BANDS = (70, 313, 1_598, 16_557, VOCABULARY_SIZE)
TITLE_KINDS = {
    "names": (0.53, (0.15, 0.67, 0.15, 0.03, 0.0), (0.0, 0.0, 0.0, 0.26, 0.74)),
    "descriptive": (0.47, (0.0, 0.2, 0.31, 0.22, 0.27), (0.026, 0.194, 0.344, 0.235, 0.201)),
}


def _make_word(rng: random.Random, script: str, syllables: int, extra: str) -> str:
    if script == "han":
        return "".join(chr(0x4E00 + rng.randrange(0x4E00)) for _ in range(max(1, syllables - 1)))
    if script == "kana":
        kanji = "".join(chr(0x4E00 + rng.randrange(0x4E00)) for _ in range(rng.choice((1, 2))))
        return kanji + "".join(chr(0x3041 + rng.randrange(83)) for _ in range(rng.choice((0, 1, 2))))
    consonants, vowels = _SCRIPT_LETTERS[script]
    word = "".join(rng.choice(consonants) + rng.choice(vowels) for _ in range(syllables))
    if extra and rng.random() < 0.15:
        at = rng.randrange(len(word))
        word = word[:at] + rng.choice(extra) + word[at + 1 :]
    return word


class Vocabulary:
    """A language's pseudo-words ranked by frequency (short words frequent) and Zipf samplers over them."""

    def __init__(self, lang: str, seed: int, size: int = VOCABULARY_SIZE) -> None:
        profile = profile_of(lang)
        rng = random.Random(f"vocab:{seed}:{lang}")
        extra = _EXTRA_LETTERS.get(lang, "")
        words: set[str] = set()
        ordered: list[str] = []
        while len(ordered) < size:
            rank = len(ordered)
            syllables = 1 + (rank > 40) + (rank > 2_000) + (rng.random() < 0.5) + (rank > 30_000 and rng.random() < 0.5)
            word = _make_word(rng, profile.script, syllables, extra)
            if word not in words:
                words.add(word)
                ordered.append(word)
        self.words = ordered
        self.capitalized = [w[:1].upper() + w[1:] for w in ordered]
        ranks = np.arange(size, dtype=np.float64)
        prose = 1.0 / (ranks + 2.7) ** 1.0  # Zipf-Mandelbrot, exponent 1
        self.prose_cdf = np.cumsum(prose) / prose.sum()
        self.title_cdfs = {kind: np.cumsum(_title_weights(size, shares)) for kind, (_, _, shares) in TITLE_KINDS.items()}

    def prose_ids(self, rng: np.random.Generator, n: int) -> list[int]:
        return np.searchsorted(self.prose_cdf, rng.random(n)).tolist()

    def title_ids(self, rng: np.random.Generator, n: int, kind: str = "names") -> np.ndarray:
        return np.minimum(np.searchsorted(self.title_cdfs[kind], rng.random(n)), len(self.words) - 1)


def _title_weights(size: int, shares: tuple[float, ...]) -> np.ndarray:
    """A title word's chance of each rank: Zipf within bands of the prose's document frequency, each band at ``shares``.

    A word's rank sets its document frequency in the truncated text (the prose is Zipf,
    exponent 1): on 20,000 articles, ranks below 70 are in at least 20 % of the texts,
    below 313 in 5 %, below 1,598 in 1 %, below 16,557 in 0.1 % (``TITLE_BANDS``).
    """
    ranks = np.arange(size, dtype=np.float64)
    zipf = 1.0 / (ranks + 5.0) ** 0.95
    weights = np.zeros(size)
    low = 0
    for high, share in zip(TITLE_BANDS, shares, strict=True):
        high = min(high, size)
        if high > low:
            weights[low:high] = share * zipf[low:high] / zipf[low:high].sum()
        low = high
    return weights / weights.sum()


def profile_of(lang: str) -> LangProfile:
    """The language's profile; a small Latin-script wiki's for a language without one."""
    return PROFILES.get(lang) or LangProfile(lang, _LATIN, 100_000)


# --- the world: titles, ids, link popularity, page layout (built once, inherited by workers) --

_QUALIFIERS_EN = ("film", "album", "band", "song", "novel", "footballer", "politician", "river", "village", "company", "ship", "journal")


@dataclass
class World:
    """Everything decided before the articles: shared by every worker (fork) so parts agree."""

    lang: str
    seed: int
    articles: int
    vocabulary: Vocabulary
    titles: list[str]
    page_ids: np.ndarray
    qids: np.ndarray
    link_cdf: np.ndarray
    link_scatter: int
    hrefs: list[str] = field(default_factory=list)
    redirects: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    others: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    unlinked_items: int = 0

    @property
    def wiki(self) -> str:
        return self.lang.replace("-", "_") + "wiki"


def _lang_number(lang: str) -> int:
    return zlib.crc32(lang.encode())


def make_world(lang: str, articles: int, seed: int, unlinked_ratio: float = 1.0) -> World:
    """Titles (Zipf words, 1-5 of them, some qualified in parentheses, all distinct), ids and layout."""
    vocabulary = Vocabulary(lang, seed)
    rng = np.random.default_rng([seed, _lang_number(lang), 1])
    described = rng.random(articles) < TITLE_KINDS["descriptive"][0]
    lengths = np.where(described, rng.choice([1, 2, 3, 4, 5], size=articles, p=TITLE_KINDS["descriptive"][1]),
                       rng.choice([1, 2, 3, 4, 5], size=articles, p=TITLE_KINDS["names"][1]))
    drawn = {kind: vocabulary.title_ids(rng, int(lengths[mask].sum()), kind) for kind, mask in (("names", ~described), ("descriptive", described))}
    kinds = np.repeat(described, lengths)
    ids = np.empty(int(lengths.sum()), dtype=np.int64)
    ids[~kinds], ids[kinds] = drawn["names"], drawn["descriptive"]
    ids = ids.tolist()
    capital = (rng.random(len(ids)) < 0.6).tolist()
    qualified = (rng.random(articles) < 0.12).tolist()
    years = rng.integers(1850, 2026, size=articles).tolist()
    picks = rng.integers(0, 1 << 30, size=articles).tolist()
    unspaced = lang in _UNSPACED
    words, caps = vocabulary.words, vocabulary.capitalized
    titles: list[str] = []
    seen: set[str] = set()
    at = 0
    for i in range(articles):
        n = int(lengths[i])
        chosen = [caps[w] if (k == 0 or capital[at + k]) and not unspaced else words[w] for k, w in enumerate(ids[at : at + n])]
        at += n
        title = ("" if unspaced else " ").join(chosen)
        if qualified[i]:
            title += f" ({_qualifier(lang, words, picks[i], years[i])})"
        suffix = 0
        base = title
        while title in seen:  # a clash: qualify it as Wikipedia does
            suffix += 1
            title = f"{base} ({_qualifier(lang, words, picks[i] + suffix, years[i] + suffix)})"
        seen.add(title)
        titles.append(title)
    qids = 100 + 16 * np.arange(articles, dtype=np.int64) + rng.integers(0, 16, size=articles)
    return _world(lang, seed, vocabulary, titles, qids, unlinked_ratio)


def _world(lang: str, seed: int, vocabulary: Vocabulary, titles: list[str], qids: np.ndarray, unlinked_ratio: float) -> World:
    """The world of these titles and items: page ids, link popularity and page layout."""
    profile = profile_of(lang)
    articles = len(titles)
    page_ids = 12 + 9 * np.arange(articles, dtype=np.int64)  # 8 ids after each article for its redirects and other pages
    ranks = np.arange(articles, dtype=np.float64)
    popularity = 1.0 / (ranks + 1.0) ** 0.9  # in-links are heavy-tailed
    link_cdf = np.cumsum(popularity) / popularity.sum()
    scatter = next(p for p in (1_000_003, 999_983, 15_485_863, 32_452_843) if math.gcd(p, max(articles, 1)) == 1)
    layout = np.random.default_rng([seed, _lang_number(lang), 2])
    redirects = np.minimum(layout.poisson(profile.redirects_per_article, size=articles), 6)
    others = np.minimum(layout.poisson(profile.other_pages_per_article, size=articles), 8 - redirects)
    hrefs = [title.replace(" ", "_") for title in titles]
    return World(lang, seed, articles, vocabulary, titles, page_ids, qids, link_cdf, scatter, hrefs, redirects, others, int(articles * unlinked_ratio))


def partner_world(main: World, lang: str, articles: int) -> World:
    """A second language whose articles are the first ``articles`` of ``main``'s items with a sitelink to it, titled as
    those sitelinks are: its Enterprise records name the same items, and ``main``'s Wikidata dumps link them by title.

    So a build of ``main``'s dumps (with its ``wikidata`` or ``items-per-site``) and this
    language's ``html`` has BI-139 directions between the two (the scale benchmark's partner).
    """
    site, titles, qids, seen = f"{lang.replace('-', '_')}wiki", [], [], set()
    for index in range(main.articles):
        title = item_sitelinks(main, index).get(site)
        if title is not None and title not in seen:
            seen.add(title)
            titles.append(title)
            qids.append(int(main.qids[index]))
            if len(titles) == articles:
                break
    if len(titles) < articles:
        raise ValueError(f"{main.lang}'s {main.articles:,} items have only {len(titles):,} sitelinks to {site}, not {articles:,}")
    return _world(lang, main.seed, Vocabulary(lang, main.seed), titles, np.array(qids, dtype=np.int64), 0.0)


def _qualifier(lang: str, words: list[str], pick: int, year: int) -> str:
    if lang == "en":
        kind = _QUALIFIERS_EN[pick % len(_QUALIFIERS_EN)]
        return f"{year} {kind}" if pick % 5 == 0 and kind in ("film", "album", "song", "ship") else kind
    return words[_FREQUENT_WORDS + pick % 3_000]


_WORLD: World | None = None  # set in the parent before the pool forks


# --- Parsoid HTML and wikitext, built side by side -------------------------------------------

_B64 = [base64.b64encode(n.to_bytes(max(1, (n.bit_length() + 7) // 8), "little")).decode().rstrip("=") for n in range(1 << 14)]


@functools.cache
def _css(name: str, length: int) -> str:
    """TemplateStyles-like CSS of about ``length`` bytes (what the first use of a style inlines)."""
    rules = (
        f".mw-parser-output .{name}{{margin:0.5em 0;padding:0.2em}}",
        f".mw-parser-output .{name} .{name}-title{{font-weight:bold;text-align:center;background-color:#ccf}}",
        f".mw-parser-output .{name} a{{white-space:nowrap;color:inherit}}@media screen{{html.skin-theme-clientpref-night .mw-parser-output .{name}{{background:#1f1f23}}}}",
        f".mw-parser-output .{name} ul li{{display:inline;margin:0}}.mw-parser-output .{name}-subgroup{{border-top:1px solid #fdfdfd;font-size:88%}}",
    )
    text = "".join(rules)
    return (text * (length // len(text) + 1))[:length]


_STYLES = {  # TemplateStyles revision and size of the CSS the first use inlines
    "cite": ("r1238218222", "Module:Citation/CS1/styles.css", 2_600),
    "hatnote": ("r1236090951", "Module:Hatnote/styles.css", 300),
    "infobox": ("r1257001546", "Module:Infobox/styles.css", 1_500),
    "navbox": ("r1129693374", "Hlist/styles.css", 3_100),
    "reflist": ("r1239543626", "Reflist/styles.css", 600),
    "stub": ("r1217611005", "Module:Message box/ambox.css", 1_200),
    "authority": ("r1038841319", "Authority control/styles.css", 300),
}
_INFOBOXES = ("Infobox person", "Infobox settlement", "Infobox film", "Infobox album", "Infobox company", "Infobox football biography",
              "Infobox officeholder", "Infobox species", "Infobox river", "Infobox school", "Infobox military conflict", "Infobox book")
_PARAMS = ("name", "image", "image_size", "caption", "birth_date", "birth_place", "death_date", "death_place", "nationality", "occupation",
           "years_active", "known_for", "spouse", "children", "website", "country", "subdivision_type", "subdivision_name", "population_total",
           "population_as_of", "area_total_km2", "elevation_m", "coordinates", "established_date", "founder", "headquarters", "industry",
           "genre", "label", "released", "recorded", "length", "producer", "director", "starring", "language", "budget", "gross",
           "alma_mater", "party", "office", "term_start", "term_end", "predecessor", "successor", "awards", "height", "position",
           "clubs", "caps", "goals", "nationalteam", "leader_title", "leader_name", "timezone", "postal_code", "area_code", "blank_name")
_CITES = (("cite web", 0.55), ("cite book", 0.2), ("cite news", 0.15), ("cite journal", 0.1))
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December")
_DOMAINS = ("www.bbc.co.uk", "www.nytimes.com", "books.google.com", "www.theguardian.com", "archive.org", "www.census.gov",
            "www.jstor.org", "doi.org", "www.imdb.com", "www.allmusic.com", "news.google.com", "www.britannica.com")


def _attr(value: str) -> str:
    """A single-quoted attribute value as Parsoid serialises data-mw."""
    return value.replace("&", "&amp;").replace("'", "&#39;").replace("<", "&lt;").replace(">", "&gt;")


def _data_mw(template: str, href: str, params: dict[str, str]) -> str:
    body = {"parts": [{"template": {"target": {"wt": template, "href": href}, "params": {k: {"wt": v} for k, v in params.items()}, "i": 0}}]}
    return _attr(orjson.dumps(body).decode())


class _Article:
    """One article's wikitext and Parsoid HTML, element by element from one random stream."""

    def __init__(self, world: World, index: int) -> None:
        self.world = world
        self.index = index
        self.lang = world.lang
        self.profile = profile_of(world.lang)
        self.title = world.titles[index]
        self.href = self.title.replace(" ", "_")
        self.rng = random.Random(f"{world.seed}:{world.lang}:{index}")
        self.np = np.random.default_rng([world.seed, _lang_number(world.lang), 3, index])
        self.words: list[int] = []
        self.word_at = 0
        self.targets: list[int] = []
        self.wt: list[str] = []
        self.html: list[str] = []
        self.ids = 0
        self.transclusions = 0
        self.templates: dict[str, None] = {}
        self.categories: list[str] = []
        self.notes: list[str] = []  # reference list items, in order
        self.named: list[tuple[str, int]] = []  # (ref name, note number) for reuse
        self.styled: set[str] = set()
        self.links = 0
        self.sections = 0
        self.wt_size = 0
        self.space = "" if self.lang in _UNSPACED else " "
        self.stop = "。" if self.lang in _UNSPACED else "."
        self.tpl_ns, self.cat_ns, self.file_ns = self.profile.namespaces
        self.link_rate = 0.05
        self.ref_rate = 0.5 if self.profile.size_factor >= 0.7 else 0.3

    # -- small helpers
    def _r(self, low: int, high: int | None = None) -> int:
        """random.randrange(low, high) (or (0, low)), several times faster: the hot paths draw millions."""
        if high is None:
            low, high = 0, low
        return low + int(self.rng.random() * (high - low))

    def _id(self) -> str:
        self.ids += 1
        return "mw" + (_B64[self.ids] if self.ids < len(_B64) else _B64[self.ids & 0x3FFF] + _B64[self.ids >> 14])

    def _about(self) -> str:
        self.transclusions += 1
        return f"#mwt{self.transclusions}"

    def _add(self, wikitext: str, html: str) -> None:
        self.wt.append(wikitext)
        self.html.append(html)
        self.wt_size += len(wikitext)

    def _word_ids(self, n: int) -> list[int]:
        if self.word_at + n > len(self.words):
            self.words = self.words[self.word_at :] + self.world.vocabulary.prose_ids(self.np, max(n, 1_024))
            self.word_at = 0
        self.word_at += n
        return self.words[self.word_at - n : self.word_at]

    def _phrase(self, n: int, capital: bool = False) -> str:
        words = self.world.vocabulary.words
        text = self.space.join([words[w] for w in self._word_ids(n)])
        return text[:1].upper() + text[1:] if capital else text

    def _target(self) -> int:
        if not self.targets:
            world = self.world
            ranks = np.searchsorted(world.link_cdf, self.np.random(256))
            self.targets = ((ranks * world.link_scatter) % world.articles).tolist()
        return self.targets.pop()

    def _link(self, label: str | None = None) -> tuple[str, str]:
        target = self._target()
        title, href = self.world.titles[target], self.world.hrefs[target]
        self.links += 1
        if label is None:
            return f"[[{title}]]", f'<a rel="mw:WikiLink" href="./{href}" title="{title}" id="{self._id()}">{title}</a>'
        return f"[[{title}|{label}]]", f'<a rel="mw:WikiLink" href="./{href}" title="{title}" id="{self._id()}">{label}</a>'

    def _template(self, name: str) -> str:
        self.templates[name] = None
        return f"./{self.tpl_ns}:{name.replace(' ', '_')}"

    def _style(self, kind: str) -> str:
        revision, source, size = _STYLES[kind]
        about = self._about()
        if kind in self.styled:
            return (f'<link rel="mw-deduplicated-inline-style" href="mw-data:TemplateStyles:{revision}" about="{about}" typeof="mw:Extension/templatestyles" '
                    f'data-mw=\'{{"name":"templatestyles","attrs":{{"src":"{source}"}},"body":{{"extsrc":""}}}}\' id="{self._id()}"/>')
        self.styled.add(kind)
        return (f'<style data-mw-deduplicate="TemplateStyles:{revision}" typeof="mw:Extension/templatestyles" about="{about}" '
                f'data-mw=\'{{"name":"templatestyles","attrs":{{"src":"{source}"}},"body":{{"extsrc":""}}}}\' id="{self._id()}">{_css(kind, size)}</style>')

    def _date(self) -> tuple[int, int, int]:
        return self._r(1, 29), self._r(12), self._r(1990, 2026)

    # -- inline elements
    def _inline_template(self) -> tuple[str, str]:
        kind = self.rng.random()
        about = self._about()
        if kind < 0.45:
            value = self._r(2, 5000)
            unit, other, factor = self.rng.choice((("km", "mi", 0.6214), ("m", "ft", 3.281), ("kg", "lb", 2.205), ("km2", "sqmi", 0.3861)))
            href = self._template("Convert")
            return (f"{{{{convert|{value}|{unit}|{other}}}}}",
                    f'<span about="{about}" typeof="mw:Transclusion" data-mw=\'{_data_mw("convert", href, {"1": str(value), "2": unit, "3": other})}\' '
                    f'id="{self._id()}">{value}&nbsp;{unit} ({value * factor:.1f}&nbsp;{other})</span>')
        if kind < 0.75:
            code = self.rng.choice(("fr", "de", "la", "es", "it", "ru", "ja", "ar"))
            text = self._phrase(self._r(1, 4))
            href = self._template("Lang")
            return (f"{{{{lang|{code}|{text}}}}}",
                    f'<i lang="{code}" about="{about}" typeof="mw:Transclusion" data-mw=\'{_data_mw("lang", href, {"1": code, "2": text})}\' id="{self._id()}">{text}</i>')
        day, month, year = self._date()
        text = f"{day} {_MONTHS[month]} {year}"
        href = self._template("Nowrap")
        return (f"{{{{nowrap|{text}}}}}",
                f'<span class="nowrap" about="{about}" typeof="mw:Transclusion" data-mw=\'{_data_mw("nowrap", href, {"1": text})}\' id="{self._id()}">{text}</span>')

    def _citation(self) -> tuple[str, dict[str, str], str]:
        """A cite template's name, parameters and rendered <cite> with its COinS span."""
        roll, name = self.rng.random(), "cite web"
        for cite, share in _CITES:
            if roll < share:
                name = cite
                break
            roll -= share
        title = self._phrase(self._r(3, 11), capital=True)
        domain = self.rng.choice(_DOMAINS)
        url = f"https://{domain}/{self._phrase(2).replace(' ', '-')}/{self._r(10**6)}"
        day, month, year = self._date()
        params = {"url": url, "title": title}
        if self.rng.random() < 0.5:
            params["last"] = self.world.vocabulary.capitalized[self._word_ids(1)[0]]
            params["first"] = self.world.vocabulary.capitalized[self._word_ids(1)[0]]
        work = {"cite web": "website", "cite news": "work", "cite book": "publisher", "cite journal": "journal"}[name]
        params[work] = self._phrase(self._r(1, 4), capital=True)
        params["date"] = f"{day} {_MONTHS[month]} {year}"
        if name == "cite book":
            params["isbn"] = f"978-{self._r(10**9):09d}-{self._r(10)}"
            params["pages"] = str(self._r(1, 600))
        elif name == "cite journal":
            params["volume"], params["issue"] = str(self._r(1, 90)), str(self._r(1, 12))
            params["doi"] = f"10.{self._r(1000, 9999)}/{self._r(10**7)}"
        params["access-date"] = f"{self._r(1, 29)} {_MONTHS[self._r(12)]} {self._r(2010, 2026)}"
        archived = ""
        if self.rng.random() < 0.35:
            params["archive-url"] = f"https://web.archive.org/web/{year + 1}0{month % 9 + 1}{day:02d}083015/{url}"
            params["archive-date"] = f"{day} {_MONTHS[(month + 3) % 12]} {year + 1}"
            params["url-status"] = self.rng.choice(("live", "dead"))
            archived = (f'. <a rel="mw:ExtLink nofollow" href="{params["archive-url"]}" class="external text" id="{self._id()}">Archived</a> from the original '
                        f'on {params["archive-date"]}')
        author = f'{params["last"]}, {params["first"]} ({year}). ' if "last" in params else ""
        coins = (f'ctx_ver=Z39.88-2004&amp;rft_val_fmt=info%3Aofi%2Ffmt%3Akev%3Amtx%3Abook&amp;rft.genre=unknown&amp;rft.btitle={title.replace(" ", "+")}'
                 f'&amp;rft.pub={params[work].replace(" ", "+")}&amp;rft.date={year}&amp;rft_id={url.replace(":", "%3A").replace("/", "%2F")}'
                 f'&amp;rfr_id=info%3Asid%2F{self.lang}.wikipedia.org%3A{self.href}')
        about = self._about()
        rendered = (f'<cite id="CITEREF{params.get("last", "")}{year}" class="citation {name.split()[1]} cs1" about="{about}" typeof="mw:Transclusion" '
                    f'data-mw=\'{_data_mw(name, self._template(name[:1].upper() + name[1:]), params)}\'>{author}'
                    f'<a rel="mw:ExtLink nofollow" href="{url}" class="external text" id="{self._id()}">"{title}"</a>. <i id="{self._id()}">{params[work]}</i>. '
                    f'{params["date"]}{archived}<span class="reference-accessdate">. Retrieved <span class="nowrap">{params["access-date"]}</span></span>.</cite>'
                    f'<span title="{coins}" class="Z3988" id="{self._id()}"></span>')
        return name, params, rendered

    def _ref(self) -> tuple[str, str]:
        """A footnote: a new citation (sometimes named) or a reuse of a named one."""
        if self.named and self.rng.random() < 0.25:
            name, number = self.rng.choice(self.named)
            wikitext = f'<ref name="{name}" />'
        else:
            cite, params, rendered = self._citation()
            number = len(self.notes) + 1
            wikitext = "<ref>{{" + cite + "".join(f" |{k}={v}" for k, v in params.items()) + "}}</ref>"
            if self.rng.random() < 0.3:
                name = f"{self.world.vocabulary.words[self._word_ids(1)[0]]}{number}"
                self.named.append((name, number))
                wikitext = wikitext.replace("<ref>", f'<ref name="{name}">', 1)
            self.notes.append(
                f'<li about="#cite_note-{number}" id="cite_note-{number}"><span class="mw-cite-backlink" id="{self._id()}">'
                f'<a href="./{self.href}#cite_ref-{number}" rel="mw:referencedBy" id="{self._id()}"><span class="mw-linkback-text" id="{self._id()}">↑ </span></a></span> '
                f'<span id="mw-reference-text-cite_note-{number}" class="mw-reference-text">{self._style("cite")}{rendered}</span></li>')
        about = self._about()
        html = (f'<sup about="{about}" class="mw-ref reference" id="cite_ref-{number}" rel="dc:references" typeof="mw:Extension/ref" '
                f'data-mw=\'{{"name":"ref","attrs":{{}},"body":{{"id":"mw-reference-text-cite_note-{number}"}}}}\'>'
                f'<a href="./{self.href}#cite_note-{number}" style="counter-reset: mw-Ref {number};" id="{self._id()}">'
                f'<span class="mw-reflink-text" id="{self._id()}">[{number}]</span></a></sup>')
        return wikitext, html

    def _prose(self, n_words: int, lead: bool = False) -> tuple[str, str]:
        """Sentences of Zipf words with links, inline templates and footnotes (built in bulk: positions first, then one join)."""
        rng, vocabulary = self.rng, self.world.vocabulary
        n = max(1, n_words)
        tokens = [vocabulary.words[w] for w in self._word_ids(n)]
        ends, at = [], self._r(8, 28) - 1
        while at < n - 1:
            ends.append(at)
            at += self._r(8, 28)
        ends.append(n - 1)
        if self.space:
            tokens[0] = tokens[0][:1].upper() + tokens[0][1:]
            for end in ends[:-1]:
                token = tokens[end + 1]
                tokens[end + 1] = token[:1].upper() + token[1:]
        wt, html = list(tokens), list(tokens)
        links = int(self.np.binomial(n, self.link_rate))
        for position in rng.sample(range(n), min(links, n)):
            pair = self._link(tokens[position] if rng.random() < 0.4 else None)
            wt[position], html[position] = pair
        for _ in range(int(self.np.binomial(n, 0.004))):
            position = self._r(n)
            wt[position], html[position] = self._inline_template()
        for end in ends:
            if rng.random() < self.ref_rate:
                ref_wt, ref_html = self._ref()
                wt[end] += self.stop + ref_wt
                html[end] += self.stop + ref_html
            else:
                wt[end] += self.stop
                html[end] += self.stop
        if lead:
            wt[0] = "'''" + self.title + "''' " + wt[0]
            html[0] = f'<b id="{self._id()}">{self.title}</b> ' + html[0]
        return self.space.join(wt), self.space.join(html)

    # -- block elements
    def _paragraph(self, n_words: int, lead: bool = False) -> None:
        wt, html = self._prose(n_words, lead)
        self._add(wt + "\n\n", f'<p id="{self._id()}">{html}</p>\n')

    def _heading(self, level: int = 2, text: str | None = None) -> None:
        text = text or self._phrase(self._r(1, 4), capital=True)
        marks = "=" * level
        if level == 2:
            self.sections += 1
            self._add("", f'</section><section data-mw-section-id="{self.sections}" id="{self._id()}">')
        self._add(f"{marks} {text} {marks}\n", f'<h{level} id="{text.replace(" ", "_")}">{text}</h{level}>\n')

    def _hatnote(self) -> None:
        other = self.world.titles[self._target()]
        about = self._about()
        href = self._template("About")
        self._add(f"{{{{About|{self._phrase(2)}|{other}}}}}\n",
                  f'{self._style("hatnote")}<div role="note" class="hatnote navigation-not-searchable" about="{about}" typeof="mw:Transclusion" '
                  f'data-mw=\'{_data_mw("About", href, {"1": "x", "2": other})}\' id="{self._id()}">This article is about {self._phrase(3)}. For other uses, see '
                  f'<a rel="mw:WikiLink" href="./{other.replace(" ", "_")}" title="{other}" id="{self._id()}">{other}</a>.</div>\n')

    def _maintenance(self) -> None:
        if self.lang == "en" and self.rng.random() < 0.85:
            text = self._phrase(self._r(2, 7), capital=True)
            about = self._about()
            self._add(f"{{{{Short description|{text}}}}}\n",
                      f'<div class="shortdescription nomobile noexcerpt noprint searchaux" style="display:none" about="{about}" typeof="mw:Transclusion" '
                      f'data-mw=\'{_data_mw("Short description", self._template("Short description"), {"1": text})}\' id="{self._id()}">{text}</div>'
                      f'<link rel="mw:PageProp/Category" href="./Category:Articles_with_short_description" about="{about}" id="{self._id()}"/>\n')
        if self.rng.random() < 0.3:
            day, month, year = self._date()
            name = self.rng.choice(("Use dmy dates", "Use mdy dates", "Use British English"))
            about = self._about()
            self._add(f"{{{{{name}|date={_MONTHS[month]} {year}}}}}\n",
                      f'<span typeof="mw:Nowiki mw:Transclusion" about="{about}" data-mw=\'{_data_mw(name, self._template(name), {"date": f"{_MONTHS[month]} {year}"})}\' '
                      f'id="{self._id()}"></span><link rel="mw:PageProp/Category" href="./Category:{name.replace(" ", "_")}_from_{_MONTHS[month]}_{year}" about="{about}" id="{self._id()}"/>\n')

    def _infobox_value(self) -> tuple[str, str]:
        roll = self.rng.random()
        if roll < 0.3:
            return self._link()
        if roll < 0.45:
            day, month, year = self._date()
            about = self._about()
            return (f"{{{{birth date and age|{year}|{month + 1}|{day}}}}}",
                    f'<span about="{about}" typeof="mw:Transclusion" '
                    f'data-mw=\'{_data_mw("birth date and age", self._template("Birth date and age"), {"1": str(year), "2": str(month + 1), "3": str(day)})}\' '
                    f'id="{self._id()}">{day} {_MONTHS[month]} {year}<span class="noprint ForceAgeToShow"> (age&nbsp;{2026 - year})</span></span>')
        if roll < 0.55:
            value = f"{self._r(10, 10**7):,}"
            return value, value
        if roll < 0.62:
            return self._inline_template()
        text = self._phrase(self._r(1, 6), capital=True)
        return text, text

    def _infobox(self, rows: int) -> None:
        name = self.rng.choice(_INFOBOXES)
        params: dict[str, str] = {"name": self.title}
        cells: list[str] = []
        image = f"{self._phrase(2).replace(' ', '_')}.jpg"
        params["image"] = image
        for param in self.rng.sample(_PARAMS[4:], min(rows, len(_PARAMS) - 4)):
            wt, html = self._infobox_value()
            params[param] = wt
            label = param.replace("_", " ").capitalize()
            cells.append(f'<tr id="{self._id()}"><th scope="row" class="infobox-label" id="{self._id()}">{label}</th>'
                         f'<td class="infobox-data" id="{self._id()}">{html}</td></tr>')
        about = self._about()
        wikitext = "{{" + name + "\n" + "".join(f"| {k} = {v}\n" for k, v in params.items()) + "}}\n"
        html = (f'{self._style("infobox")}<table class="infobox vcard" about="{about}" typeof="mw:Transclusion" '
                f'data-mw=\'{_data_mw(name, self._template(name), params)}\' id="{self._id()}"><tbody>'
                f'<tr><th colspan="2" class="infobox-above fn">{self.title}</th></tr>'
                f'<tr><td colspan="2" class="infobox-image"><span typeof="mw:File"><a href="./{self.file_ns}:{image}" class="mw-file-description">'
                f'<img resource="./{self.file_ns}:{image}" src="//upload.wikimedia.org/wikipedia/commons/thumb/a/ab/{image}/250px-{image}" decoding="async" '
                f'data-file-width="1200" data-file-height="900" data-file-type="bitmap" height="188" width="250" class="mw-file-element"/></a></span></td></tr>'
                + "".join(cells) + "</tbody></table>\n")
        self._add(wikitext, html)

    def _figure(self) -> None:
        name = f"{self._phrase(self._r(1, 4)).replace(' ', '_')}.jpg"
        caption_wt, caption_html = self._prose(self._r(4, 18))
        width = self.rng.choice((220, 250, 300))
        self._add(f"[[{self.file_ns}:{name}|thumb|{caption_wt}]]\n",
                  f'<figure class="mw-default-size" typeof="mw:File/Thumb" id="{self._id()}"><a href="./{self.file_ns}:{name}" class="mw-file-description" id="{self._id()}">'
                  f'<img resource="./{self.file_ns}:{name}" src="//upload.wikimedia.org/wikipedia/commons/thumb/c/cd/{name}/{width}px-{name}" decoding="async" '
                  f'data-file-width="3000" data-file-height="2000" data-file-type="bitmap" height="{width * 2 // 3}" width="{width}" '
                  f'srcset="//upload.wikimedia.org/wikipedia/commons/thumb/c/cd/{name}/{width * 3 // 2}px-{name} 1.5x, '
                  f'//upload.wikimedia.org/wikipedia/commons/thumb/c/cd/{name}/{width * 2}px-{name} 2x" '
                  f'class="mw-file-element" id="{self._id()}"/></a><figcaption id="{self._id()}">{caption_html}</figcaption></figure>\n')

    def _list(self, items: int, links_only: bool = False) -> None:
        wt, html = [], [f'<ul id="{self._id()}">']
        for _ in range(items):
            if links_only:
                item_wt, item_html = self._link()
            else:
                item_wt, item_html = self._prose(self._r(3, 16))
            wt.append(f"* {item_wt}\n")
            html.append(f'<li id="{self._id()}">{item_html}</li>')
        html.append("</ul>\n")
        self._add("".join(wt) + "\n", "".join(html))

    def _table(self) -> None:
        cols, rows = self._r(3, 7), self._r(4, 30)
        wt = ['{| class="wikitable sortable"\n', f"|+ {self._phrase(3, capital=True)}\n"]
        html = [f'<table class="wikitable sortable" id="{self._id()}"><caption id="{self._id()}">{wt[1][3:-1]}</caption><tbody id="{self._id()}">']
        heads = [self._phrase(self._r(1, 3), capital=True) for _ in range(cols)]
        wt.append("! " + " !! ".join(heads) + "\n")
        html.append(f'<tr id="{self._id()}">' + "".join(f'<th id="{self._id()}">{h}</th>' for h in heads) + "</tr>")
        for _ in range(rows):
            cells = []
            for c in range(cols):
                cells.append(self._link() if c == 0 and self.rng.random() < 0.6 else ((v := str(self._r(1, 99_999))), v))
            wt.append("|-\n| " + " || ".join(c[0] for c in cells) + "\n")
            html.append(f'<tr id="{self._id()}">' + "".join(f'<td id="{self._id()}">{c[1]}</td>' for c in cells) + "</tr>")
        wt.append("|}\n\n")
        html.append("</tbody></table>\n")
        self._add("".join(wt), "".join(html))

    def _references(self) -> None:
        self._heading(text="References")
        href = self._template("Reflist")
        about = self._about()
        self._add("{{Reflist}}\n",
                  f'{self._style("reflist")}<div class="mw-references-wrap mw-references-columns" typeof="mw:Extension/references" about="{about}" '
                  f'data-mw=\'{{"name":"references","attrs":{{"group":"","responsive":"1"}},"body":{{"html":""}},'
                  f'"parts":[{{"template":{{"target":{{"wt":"Reflist","href":"{href}"}},"params":{{}},"i":0}}}}]}}\' '
                  f'id="{self._id()}"><ol class="mw-references references" id="{self._id()}">' + "".join(self.notes) + "</ol></div>\n")

    def _external_links(self) -> None:
        items = self._r(1, 7)
        wt, html = [], [f'<ul id="{self._id()}">']
        for _ in range(items):
            url = f"https://{self.rng.choice(_DOMAINS)}/{self._phrase(1)}/{self._r(10**6)}"
            label = self._phrase(self._r(1, 5), capital=True)
            wt.append(f"* [{url} {label}]\n")
            html.append(f'<li id="{self._id()}"><a rel="mw:ExtLink nofollow" href="{url}" class="external text" id="{self._id()}">{label}</a></li>')
        html.append("</ul>\n")
        self._add("".join(wt), "".join(html))

    def _navbox(self) -> None:
        name = f"{self._phrase(self._r(1, 3), capital=True)} navbox"
        groups = self._r(2, 9)
        about = self._about()
        rows = []
        for _ in range(groups):
            links = "".join(f"<li>{self._link()[1]}</li>" for _ in range(self._r(4, 30)))
            rows.append(f'<tr><th scope="row" class="navbox-group" style="width:1%">{self._phrase(2, capital=True)}</th>'
                        f'<td class="navbox-list-with-group navbox-list navbox-odd" style="width:100%;padding:0"><div style="padding:0 0.25em"><ul>{links}</ul></div></td></tr>')
        self._add(f"{{{{{name}}}}}\n",
                  f'{self._style("navbox")}<div role="navigation" class="navbox" aria-labelledby="{name.replace(" ", "_")}" style="padding:3px" about="{about}" '
                  f'typeof="mw:Transclusion" data-mw=\'{_data_mw(name, self._template(name), {})}\' id="{self._id()}"><table class="nowraplinks mw-collapsible autocollapse navbox-inner" '
                  f'style="border-spacing:0;background:transparent;color:inherit"><tbody><tr><th scope="col" class="navbox-title" colspan="2">'
                  f'<div id="{name.replace(" ", "_")}" style="font-size:114%;margin:0 4em">{name}</div></th></tr>' + "".join(rows) + "</tbody></table></div>\n")

    def _authority_control(self) -> None:
        about = self._about()
        ids = "".join(f'<li><span class="uid"><a rel="mw:ExtLink nofollow" href="https://catalogue.example.org/{k}/{self._r(10**8)}" class="external text">{k}</a></span></li>'
                      for k in ("VIAF", "GND", "ISNI", "Library of Congress", "BnF", "NKC")[: self._r(2, 7)])
        self._add("{{Authority control}}\n",
                  f'{self._style("authority")}<div class="navbox authority-control" role="navigation" aria-labelledby="Authority_control_databases" about="{about}" '
                  f'typeof="mw:Transclusion" data-mw=\'{_data_mw("Authority control", self._template("Authority control"), {})}\' id="{self._id()}">'
                  f'<table class="nowraplinks hlist navbox-inner"><tbody><tr><th class="navbox-group">Authority control databases</th><td '
                  f'class="navbox-list"><ul>{ids}</ul></td></tr></tbody></table></div>\n')

    def _stub(self) -> None:
        name = f"{self._phrase(1)}-stub"
        about = self._about()
        self._add(f"{{{{{name}}}}}\n",
                  f'{self._style("stub")}<div role="note" class="metadata plainlinks asbox stub" about="{about}" typeof="mw:Transclusion" '
                  f'data-mw=\'{_data_mw(name, self._template(name), {})}\' id="{self._id()}"><table role="presentation"><tbody><tr class="noresize"><td>'
                  f'<span typeof="mw:File"><a href="./{self.file_ns}:Stub_icon.svg" class="mw-file-description"><img resource="./{self.file_ns}:Stub_icon.svg" '
                  f'src="//upload.wikimedia.org/wikipedia/commons/thumb/1/1a/Stub_icon.svg/40px-Stub_icon.svg.png" decoding="async" width="40" height="30" class="mw-file-element"/></a></span></td>'
                  f'<td><p class="asbox-body">This article about {self._phrase(2)} is a <a rel="mw:WikiLink" href="./Wikipedia:Stub" title="Wikipedia:Stub">stub</a>. '
                  f'You can help Wikipedia by <a rel="mw:ExtLink" href="https://{self.lang}.wikipedia.org/w/index.php?title={self.href}&amp;action=edit" class="external text">expanding it</a>.</p>'
                  f'</td></tr></tbody></table></div>\n')

    def _tail(self, categories: int, interlanguage: int) -> None:
        wt, html = [], []
        if self.rng.random() < 0.25:
            key = self._phrase(2, capital=True)
            wt.append(f"{{{{DEFAULTSORT:{key}}}}}\n")
            html.append(f'<meta property="mw:PageProp/categorydefaultsort" content="{key}" id="{self._id()}"/>\n')
        for _ in range(categories):
            name = self._phrase(self._r(2, 5), capital=True)
            if self.rng.random() < 0.2:
                name = f"{self._r(1800, 2020)} {self._phrase(1)}"
            self.categories.append(name)
            wt.append(f"[[{self.cat_ns}:{name}]]\n")
            html.append(f'<link rel="mw:PageProp/Category" href="./{self.cat_ns}:{name.replace(" ", "_")}" id="{self._id()}"/>\n')
        for _ in range(interlanguage):
            code = self.rng.choice(("fr", "de", "es", "it", "nl", "pl"))
            name = self._phrase(2, capital=True)
            wt.append(f"[[{code}:{name}]]\n")
            html.append(f'<link rel="mw:PageProp/Language" href="https://{code}.wikipedia.org/wiki/{name.replace(" ", "_")}" id="{self._id()}"/>\n')
        self._add("".join(wt), "".join(html))

    # -- whole articles
    def build(self) -> None:
        rng = self.rng
        bot = rng.random() < self.profile.bot_share
        if bot:
            target = int(BOT_STUB_MEDIAN * math.exp(rng.gauss(0, BOT_STUB_SIGMA)))
        else:
            median = EN_WIKITEXT_MEDIAN * self.profile.size_factor
            target = int(median * math.exp(rng.gauss(0, WIKITEXT_SIGMA)))
        target = max(MIN_ARTICLE_BYTES, min(target, MAX_ARTICLE_BYTES))
        self.target = target
        self._add("", f'<section data-mw-section-id="0" id="{self._id()}">')
        if bot:
            self._infobox(self._r(16, 26))
            self._paragraph(max(10, (target - self.wt_size) // 9))
            self._references()
            self._tail(self._r(2, 5), 0)
            return
        if rng.random() < 0.12:
            self._hatnote()
        self._maintenance()
        infobox = rng.random() < (0.3 if target < 3_000 else 0.55 if target < 15_000 else 0.75)
        if infobox:
            self._infobox(min(45, 4 + int(target / 900 * rng.uniform(0.5, 1.5))))
        word_bytes = 8.5 if self.space else 3.5 * (3 if self.lang in _UNSPACED else 1)
        # the tail (references, categories, navboxes) takes about a sixth of the wikitext
        body_budget = int(target * 0.83) - self.wt_size
        lead_words = max(12, min(int(body_budget / word_bytes * rng.uniform(0.15, 0.35)), 400))
        self._paragraph(lead_words, lead=True)
        section_every = rng.uniform(1_500, 4_000)
        since_heading = 0.0
        figures_left = self.np.poisson(target / 7_000)
        tables_left = int(target > 4_000 and rng.random() < 0.2) + int(rng.random() < target / 60_000)
        while self.wt_size < int(target * 0.83):
            if since_heading > section_every or self.sections == 0 and self.wt_size > 900:
                self._heading(3 if self.sections and rng.random() < 0.3 else 2)
                since_heading = 0.0
                if figures_left and rng.random() < 0.5:
                    self._figure()
                    figures_left -= 1
            before = self.wt_size
            roll = rng.random()
            if tables_left and roll < 0.08:
                self._table()
                tables_left -= 1
            elif roll < 0.16:
                self._list(self._r(2, 10))
            else:
                self._paragraph(self._r(30, 170))
            since_heading += self.wt_size - before
        if target > 2_500 and rng.random() < 0.4:
            self._heading()
            self._list(self._r(2, 8), links_only=True)
        if self.notes:
            self._references()
        if rng.random() < (0.3 if target < 5_000 else 0.6):
            self._heading()
            self._external_links()
        navboxes = self.np.poisson(0.1 if target < 4_000 else 0.45 if target < 20_000 else 1.2)
        for _ in range(min(navboxes, 6)):
            self._navbox()
        if target > 3_000 and rng.random() < 0.45:
            self._authority_control()
        if target < 2_500 and rng.random() < 0.6:
            self._stub()
        self._tail(min(40, 2 + int(self.np.poisson(target / 3_000))), int(rng.random() < 0.01) * self._r(1, 5))

    def wikitext(self) -> str:
        return "".join(self.wt).rstrip("\n") + "\n"

    def parsoid_html(self, revision: int) -> str:
        lang, title = self.lang, self.title
        head = (f'<!DOCTYPE html>\n<html prefix="dc: http://purl.org/dc/terms/ mw: http://mediawiki.org/rdf/" about="https://{lang}.wikipedia.org/wiki/Special:Redirect/revision/{revision}">'
                f'<head prefix="mwr: https://{lang}.wikipedia.org/wiki/Special:Redirect/"><meta property="mw:TimeUuid" content="{self._uuid()}"/><meta charset="utf-8"/>'
                f'<meta property="mw:pageId" content="{self.world.page_ids[self.index]}"/><meta property="mw:pageNamespace" content="0"/>'
                f'<link rel="dc:replaces" resource="mwr:revision/{revision - 1 - self._r(10**5)}"/><meta property="mw:revisionSHA1" content="{self._sha1()}"/>'
                f'<meta property="dc:modified" content="2026-10-{self._r(1, 29):02d}T{self._r(24):02d}:{self._r(60):02d}:00.000Z"/>'
                f'<meta property="mw:htmlVersion" content="2.8.0"/><meta property="mw:html:version" content="2.8.0"/><link rel="dc:isVersionOf" href="//{lang}.wikipedia.org/wiki/{self.href}"/>'
                f'<base href="//{lang}.wikipedia.org/wiki/"/><title>{title}</title><meta property="mw:generalModules" content="ext.cite.ux-enhancements"/>'
                f'<meta property="mw:moduleStyles" content="ext.cite.parsoid.styles|ext.cite.styles|mediawiki.page.gallery.styles"/>'
                f'<link rel="stylesheet" href="/w/load.php?lang={lang}&amp;modules=ext.cite.parsoid.styles%7Cext.cite.styles%7Cmediawiki.skinning.content.parsoid'
                f'%7Cmediawiki.skinning.interface%7Csite.styles&amp;only=styles&amp;skin=vector"/>'
                f'<meta http-equiv="content-language" content="{lang}"/><meta http-equiv="vary" content="Accept"/></head>'
                f'<body id="mwAA" lang="{lang}" class="mw-content-ltr sitedir-ltr ltr mw-body-content parsoid-body mediawiki mw-parser-output" dir="ltr">')
        return head + "".join(self.html) + "</section></body></html>"

    def _uuid(self) -> str:
        bits = self.rng.getrandbits(128)
        text = f"{bits:032x}"
        return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"

    def _sha1(self) -> str:
        return f"{self.rng.getrandbits(160):040x}"

    def abstract(self) -> str:
        first = next((part for part in self.html if part.startswith("<p ")), "")
        text = re.sub(r"<sup.*?</sup>|<[^>]+>", "", first).strip()
        return text[:600]


# --- Enterprise records ----------------------------------------------------------------------

_LANGUAGE_NAMES = {"en": "English", "de": "Deutsch", "fr": "français", "ru": "русский", "es": "español", "ja": "日本語", "zh": "中文", "ar": "العربية"}


def go_json(value: dict) -> bytes:
    """JSON as Go's encoding/json writes it (the 2023 Enterprise records): <, >, & as \\u003c, \\u003e, \\u0026."""
    return orjson.dumps(value).replace(b"<", b"\\u003c").replace(b">", b"\\u003e").replace(b"&", b"\\u0026")


def enterprise_record(article: _Article) -> dict:
    """An Enterprise snapshot record with the fields of a real 2023 NS0 record, in its order."""
    world, lang, i = article.world, article.lang, article.index
    revision = 1_000_000_000 + 97 * i + article.rng.randrange(90)
    qid = f"Q{world.qids[i]}"
    html = article.parsoid_html(revision)
    base = f"https://{lang}.wikipedia.org/wiki/"
    return {
        "name": article.title,
        "identifier": int(world.page_ids[i]),
        "abstract": article.abstract(),
        "date_modified": f"2026-10-{article.rng.randrange(1, 29):02d}T{article.rng.randrange(24):02d}:{article.rng.randrange(60):02d}:{article.rng.randrange(60):02d}Z",
        "version": {"identifier": revision, "editor": {"identifier": article.rng.randrange(10**8), "name": article._phrase(1, capital=True)}},
        "url": base + article.href,
        "namespace": {"name": "Article", "identifier": 0},
        "in_language": {"name": _LANGUAGE_NAMES.get(lang, lang), "identifier": lang},
        "main_entity": {"identifier": qid, "url": f"https://www.wikidata.org/entity/{qid}"},
        "additional_entities": [{"identifier": qid, "url": f"https://www.wikidata.org/entity/{qid}", "aspects": ["C.P31", "C.P18", "S", "T"]}],
        "categories": [{"name": f"{article.cat_ns}:{c}", "url": f"{base}{article.cat_ns}:{c.replace(' ', '_')}"} for c in article.categories],
        "templates": [{"name": f"{article.tpl_ns}:{t}", "url": f"{base}{article.tpl_ns}:{t.replace(' ', '_')}"} for t in article.templates],
        "is_part_of": {"name": "Wikipedia", "identifier": world.wiki, "url": f"https://{lang}.wikipedia.org"},
        "article_body": {"html": html, "wikitext": article.wikitext()},
        "license": [{"name": "Creative Commons Attribution Share Alike 4.0", "identifier": "CC-BY-SA-4.0", "url": "https://creativecommons.org/licenses/by-sa/4.0/"}],
        "event": {"identifier": article._uuid(), "type": "update", "date_created": "2026-11-01T04:12:31.509299Z"},
    }


# --- splicing compressed pieces ---------------------------------------------------------------


def _gf2_times(matrix: list[int], vector: int) -> int:
    total, row = 0, 0
    while vector:
        if vector & 1:
            total ^= matrix[row]
        vector >>= 1
        row += 1
    return total


def _gf2_square(matrix: list[int]) -> list[int]:
    return [_gf2_times(matrix, matrix[n]) for n in range(32)]


def crc32_combine(crc1: int, crc2: int, length2: int) -> int:
    """CRC-32 of A+B from crc(A), crc(B) and len(B) (zlib's method: apply len(B) zero bytes to crc(A) in GF(2))."""
    if length2 <= 0:
        return crc1
    odd = [0xEDB88320] + [1 << n for n in range(31)]  # the operator for one zero bit
    even = _gf2_square(odd)  # two zero bits
    odd = _gf2_square(even)  # four zero bits
    while True:
        even = _gf2_square(odd)  # the first pass gives one zero byte
        if length2 & 1:
            crc1 = _gf2_times(even, crc1)
        length2 >>= 1
        if not length2:
            break
        odd = _gf2_square(even)
        if length2 & 1:
            crc1 = _gf2_times(odd, crc1)
        length2 >>= 1
        if not length2:
            break
    return crc1 ^ crc2


@dataclass
class Piece:
    """Raw deflate data ending on a byte boundary (sync flush), with the CRC-32 and length of what it holds."""

    data: bytes
    crc: int
    size: int


FAST = None  # the gzip "level" that means isal at level 2: ~10x zlib 6's speed, files ~15% larger


class Deflater:
    """Compresses one piece of a gzip member; pieces from separate processes join into one stream.

    ``level`` 1-9 is zlib's; ``FAST`` (None) is isal's level 2, for large runs.
    """

    def __init__(self, level: int | None) -> None:
        if level is FAST:
            from isal import isal_zlib

            self._zip = isal_zlib.compressobj(2, isal_zlib.DEFLATED, -15)
        else:
            self._zip = zlib.compressobj(level, zlib.DEFLATED, -15, 9)
        self._out: list[bytes] = []
        self.crc = 0
        self.size = 0

    def write(self, data: bytes) -> None:
        self._out.append(self._zip.compress(data))
        self.crc = zlib.crc32(data, self.crc)
        self.size += len(data)

    def piece(self) -> Piece:
        self._out.append(self._zip.flush(zlib.Z_SYNC_FLUSH))
        return Piece(b"".join(self._out), self.crc, self.size)


def deflate_piece(data: bytes, level: int | None) -> Piece:
    deflater = Deflater(level)
    deflater.write(data)
    return deflater.piece()


class GzipSplicer:
    """Writes one gzip member from pieces in order: header, pieces, a final empty block, CRC and size."""

    def __init__(self, out, level: int | None) -> None:
        self.out, self.level = out, level
        self.crc, self.size = 0, 0
        out.write(b"\x1f\x8b\x08\x00" + struct.pack("<I", 0) + b"\x00\xff")  # no name, mtime 0: deterministic

    def add(self, piece: Piece) -> None:
        self.out.write(piece.data)
        self.crc = crc32_combine(self.crc, piece.crc, piece.size)
        self.size += piece.size

    def add_bytes(self, data: bytes) -> None:
        self.add(deflate_piece(data, self.level))

    def close(self) -> None:
        self.out.write(zlib.compressobj(6, zlib.DEFLATED, -15).flush(zlib.Z_FINISH))  # the empty final block
        self.out.write(struct.pack("<II", self.crc, self.size & 0xFFFFFFFF))


# --- workers (run in forked processes; read the world from _WORLD) -----------------------------


@dataclass
class ArticleStats:
    """Per-article sizes of one part, merged in the parent."""

    wikitext: list[int] = field(default_factory=list)
    html: list[int] = field(default_factory=list)
    line: list[int] = field(default_factory=list)
    text: list[int] = field(default_factory=list)  # sampled articles only
    text_wikitext: list[int] = field(default_factory=list)  # the wikitext of the sampled ones
    text_html: list[int] = field(default_factory=list)
    templates: list[int] = field(default_factory=list)
    refs: list[int] = field(default_factory=list)
    links: list[int] = field(default_factory=list)
    sections: list[int] = field(default_factory=list)

    def merge(self, other: ArticleStats) -> None:
        for name in self.__dataclass_fields__:
            getattr(self, name).extend(getattr(other, name))


def _html_part(job: tuple[int, int, int | None, int]) -> tuple[Piece, ArticleStats]:
    """NDJSON lines of articles [first, last), deflated; every ``text_every``-th article's text measured."""
    first, last, level, text_every = job
    world = _WORLD
    from clirmatrix.pipeline.method.html_text import html_to_text

    deflater, stats = Deflater(level), ArticleStats()
    for i in range(first, last):
        article = _Article(world, i)
        article.build()
        record = enterprise_record(article)
        line = go_json(record) + b"\n"
        deflater.write(line)
        body = record["article_body"]
        wikitext_bytes, html_bytes = len(body["wikitext"].encode()), len(body["html"].encode())
        stats.wikitext.append(wikitext_bytes)
        stats.html.append(html_bytes)
        stats.line.append(len(line))
        stats.templates.append(body["wikitext"].count("{{"))
        stats.refs.append(len(article.notes))
        stats.links.append(article.links)
        stats.sections.append(article.sections)
        if text_every and i % text_every == 0:
            stats.text.append(len(html_to_text(body["html"]).encode()))
            stats.text_wikitext.append(wikitext_bytes)
            stats.text_html.append(html_bytes)
    return deflater.piece(), stats


def _xml_escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def _sha1_base36(data: bytes) -> str:
    number, digits = int.from_bytes(hashlib.sha1(data).digest(), "big"), []
    while number:
        number, rest = divmod(number, 36)
        digits.append("0123456789abcdefghijklmnopqrstuvwxyz"[rest])
    return "".join(reversed(digits)).rjust(31, "0")


def xml_page(title: str, ns: int, page_id: int, text: str, revision: int, rng: random.Random, redirect: str | None = None) -> str:
    """A ``<page>`` as the export-0.11 dumps write it."""
    data = text.encode()
    redirect_element = f'    <redirect title="{_xml_escape(redirect)}" />\n' if redirect is not None else ""
    minor = "      <minor />\n" if rng.random() < 0.25 else ""
    return (f"  <page>\n    <title>{_xml_escape(title)}</title>\n    <ns>{ns}</ns>\n    <id>{page_id}</id>\n{redirect_element}"
            f"    <revision>\n      <id>{revision}</id>\n      <parentid>{revision - 1 - rng.randrange(10**6)}</parentid>\n"
            f"      <timestamp>2026-10-{rng.randrange(1, 29):02d}T{rng.randrange(24):02d}:{rng.randrange(60):02d}:{rng.randrange(60):02d}Z</timestamp>\n"
            f"      <contributor>\n        <username>Editor{rng.randrange(10**5)}</username>\n        <id>{rng.randrange(10**8)}</id>\n      </contributor>\n{minor}"
            f"      <comment>{_xml_escape('copyedit' if rng.random() < 0.5 else 'added citation')}</comment>\n      <origin>{revision}</origin>\n"
            f"      <model>{'Scribunto' if ns == 828 else 'wikitext'}</model>\n      <format>{'text/plain' if ns == 828 else 'text/x-wiki'}</format>\n"
            f'      <text bytes="{len(data)}" sha1="{_sha1_base36(data)}" xml:space="preserve">{_xml_escape(text)}</text>\n'
            f"      <sha1>{_sha1_base36(data)}</sha1>\n    </revision>\n  </page>\n")


_OTHER_KINDS = ((14, 0.4), (6, 0.2), (10, 0.12), (4, 0.15), (118, 0.06), (100, 0.02), (828, 0.01), (12, 0.04))


def _other_page(world: World, slot: int, k: int) -> tuple[int, str, str]:
    """A page of another namespace in pages-articles: (ns, title, wikitext)."""
    rng = random.Random(f"{world.seed}:{world.lang}:other:{slot}:{k}")
    vocab = world.vocabulary
    roll, ns = rng.random(), 14
    for namespace, share in _OTHER_KINDS:
        if roll < share:
            ns = namespace
            break
        roll -= share
    nprng = np.random.default_rng([world.seed, _lang_number(world.lang), 4, slot, k])
    words = [vocab.words[w] for w in vocab.prose_ids(nprng, 4_000)]
    name = " ".join(words[:3]).capitalize()
    tpl, cat, file = profile_of(world.lang).namespaces
    prefix = {14: cat, 6: file, 10: tpl, 4: "Wikipedia", 118: "Draft", 100: "Portal", 828: "Module", 12: "Help"}[ns]
    size = int({14: 160, 6: 700, 10: 2_500, 4: 1_800, 118: 3_000, 100: 1_200, 828: 4_000, 12: 2_000}[ns] * math.exp(rng.gauss(0, 1.0)))
    body = " ".join(words[3:]) * (1 + size // 24_000)
    if ns == 14:
        text = f"{{{{Commons category|{name}}}}}\n[[{cat}:{words[4].capitalize()} {words[5]}]]\n"
    elif ns == 6:
        text = (f"== Summary ==\n{{{{Information\n|description={body[: size // 2]}\n|source={{{{own}}}}\n|date=2019-0{rng.randrange(1, 10)}-1{rng.randrange(10)}\n"
                f"|author=[[User:{words[6]}]]\n}}}}\n== Licensing ==\n{{{{cc-by-sa-4.0}}}}\n")
    elif ns == 828:
        text = "local p = {}\n" + "".join(f"function p.{w}(frame)\n  return frame.args[1] or '{w}'\nend\n" for w in words[3 : 3 + size // 60]) + "return p\n"
    elif ns == 10:
        text = "{{Navbox\n| name = " + name + "\n" + "".join(f"| list{n} = [[{w}]] • [[{w} {n}]]\n" for n, w in enumerate(words[3 : 3 + size // 40])) + "}}<noinclude>{{Documentation}}</noinclude>\n"
    else:
        text = body[:size] + "\n"
    return ns, f"{prefix}:{name} {slot}", text


def _redirect_page(world: World, slot: int, k: int) -> tuple[str, str, str]:
    """(title, target, wikitext) of a redirect: another name for a popular article."""
    rng = random.Random(f"{world.seed}:{world.lang}:redirect:{slot}:{k}")
    rank = int(np.searchsorted(world.link_cdf, rng.random()))
    target = world.titles[(rank * world.link_scatter) % world.articles]
    words = target.split(" ")
    variant = rng.random()
    extra = world.vocabulary.words[_FREQUENT_WORDS + rng.randrange(20_000)]
    if variant < 0.4 and len(words) > 1:
        title = " ".join(reversed(words))
    elif variant < 0.7:
        title = f"{target} {extra}"
    else:
        title = f"{extra.capitalize()} {target.lower()}"
    title = f"{title} ({slot % 97 + k})" if rng.random() < 0.1 else title
    shell = "\n\n{{Redirect category shell|\n{{R from alternative name}}\n}}" if rng.random() < 0.6 else ""
    return title, target, f"{profile_of(world.lang).redirect_word} [[{target}]]{shell}"


def _xml_part(job: tuple[int, int]) -> tuple[list[bytes], list[tuple[int, int, str]], dict]:
    """bz2 streams of pages [first, last) of the layout, with their index entries (stream number, page id, title)."""
    first_page, last_page = job
    world = _WORLD
    layout = _page_layout(world)
    streams: list[bytes] = []
    index: list[tuple[int, int, str]] = []
    counts = {"articles": 0, "redirects": 0, "other": 0, "article_bytes": 0, "redirect_bytes": 0, "other_bytes": 0, "xml_bytes": 0}
    pages: list[str] = []
    for p in range(first_page, last_page):
        slot, k = int(layout[0][p]), int(layout[1][p])
        page_id = int(world.page_ids[slot]) + k
        rng = random.Random(f"{world.seed}:{world.lang}:revision:{slot}:{k}")
        revision = 1_000_000_000 + 97 * slot + rng.randrange(90)
        if k == 0:
            article = _Article(world, slot)
            article.build()
            text = article.wikitext()
            page = xml_page(article.title, 0, page_id, text, revision, rng)
            counts["articles"] += 1
            counts["article_bytes"] += len(text.encode())
        elif k <= world.redirects[slot]:
            title, target, text = _redirect_page(world, slot, k)
            page = xml_page(title, 0, page_id, text, revision, rng, redirect=target)
            counts["redirects"] += 1
            counts["redirect_bytes"] += len(text.encode())
        else:
            ns, title, text = _other_page(world, slot, k)
            page = xml_page(title, ns, page_id, text, revision, rng)
            counts["other"] += 1
            counts["other_bytes"] += len(text.encode())
        pages.append(page)
        index.append((len(streams), page_id, page.split("<title>", 1)[1].split("</title>", 1)[0]))
        if len(pages) == PAGES_PER_STREAM or p == last_page - 1:
            data = "".join(pages).encode()
            counts["xml_bytes"] += len(data)
            streams.append(bz2.compress(data, 9))
            pages = []
    return streams, index, counts


_LAYOUT_CACHE: dict[int, tuple[np.ndarray, np.ndarray]] = {}


def _page_layout(world: World) -> tuple[np.ndarray, np.ndarray]:
    """(article slot, page number within the slot: 0 the article, then redirects, then other pages) of every page, in id order."""
    key = id(world)
    if key not in _LAYOUT_CACHE:
        per_slot = 1 + world.redirects + world.others
        slots = np.repeat(np.arange(world.articles, dtype=np.int64), per_slot)
        starts = np.cumsum(per_slot) - per_slot
        within = np.arange(len(slots), dtype=np.int64) - np.repeat(starts, per_slot)
        _LAYOUT_CACHE.clear()
        _LAYOUT_CACHE[key] = (slots, within)
    return _LAYOUT_CACHE[key]


def _xml_header(world: World) -> bytes:
    tpl, cat, file = profile_of(world.lang).namespaces
    names = {-2: "Media", -1: "Special", 0: "", 1: "Talk", 2: "User", 3: "User talk", 4: "Wikipedia", 5: "Wikipedia talk", 6: file, 7: f"{file} talk",
             8: "MediaWiki", 9: "MediaWiki talk", 10: tpl, 11: f"{tpl} talk", 12: "Help", 13: "Help talk", 14: cat, 15: f"{cat} talk", 100: "Portal",
             101: "Portal talk", 118: "Draft", 119: "Draft talk", 710: "TimedText", 711: "TimedText talk", 828: "Module", 829: "Module talk"}
    spaces = "".join(f'      <namespace key="{k}" case="first-letter" />\n' if not v else f'      <namespace key="{k}" case="first-letter">{_xml_escape(v)}</namespace>\n'
                     for k, v in names.items())
    return (f'<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.11/" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" '
            f'xsi:schemaLocation="http://www.mediawiki.org/xml/export-0.11/ http://www.mediawiki.org/xml/export-0.11.xsd" version="0.11" xml:lang="{world.lang}">\n'
            f"  <siteinfo>\n    <sitename>Wikipedia</sitename>\n    <dbname>{world.wiki}</dbname>\n    <base>https://{world.lang}.wikipedia.org/wiki/Main_Page</base>\n"
            f"    <generator>MediaWiki 1.46.0-wmf.3</generator>\n    <case>first-letter</case>\n    <namespaces>\n{spaces}    </namespaces>\n  </siteinfo>\n").encode()


# Wikidata ----------------------------------------------------------------------------------

_PROPERTIES = (("P31", "wikibase-item"), ("P279", "wikibase-item"), ("P17", "wikibase-item"), ("P131", "wikibase-item"), ("P625", "globe-coordinate"),
               ("P569", "time"), ("P570", "time"), ("P571", "time"), ("P577", "time"), ("P106", "wikibase-item"), ("P27", "wikibase-item"),
               ("P735", "wikibase-item"), ("P734", "wikibase-item"), ("P18", "commonsMedia"), ("P214", "external-id"), ("P227", "external-id"),
               ("P244", "external-id"), ("P213", "external-id"), ("P646", "external-id"), ("P2044", "quantity"), ("P1082", "quantity"),
               ("P856", "url"), ("P1476", "monolingualtext"), ("P373", "string"), ("P910", "wikibase-item"), ("P361", "wikibase-item"))
_REFERENCE_PROPS = (("P248", "wikibase-item"), ("P813", "time"), ("P854", "url"), ("P143", "wikibase-item"))
_LABEL_LANGS = ("en", "de", "fr", "es", "it", "nl", "pl", "ru", "ja", "zh", "pt", "sv", "uk", "ar", "fa", "ca", "cs", "fi", "hu", "ko", "tr", "he",
                "id", "vi", "da", "nb", "ro", "sk", "bg", "el", "sr", "hr", "lt", "et", "sl", "lv", "eo", "eu", "gl", "ms", "hy", "ka", "be", "kk")


def _datavalue(rng: random.Random, datatype: str, vocab: Vocabulary) -> dict:
    if datatype == "wikibase-item":
        n = rng.randrange(1, 10**8)
        return {"value": {"entity-type": "item", "numeric-id": n, "id": f"Q{n}"}, "type": "wikibase-entityid"}
    if datatype == "time":
        return {"value": {"time": f"+{rng.randrange(1500, 2026)}-{rng.randrange(1, 13):02d}-{rng.randrange(1, 29):02d}T00:00:00Z", "timezone": 0, "before": 0,
                          "after": 0, "precision": rng.choice((9, 11)), "calendarmodel": "http://www.wikidata.org/entity/Q1985727"}, "type": "time"}
    if datatype == "globe-coordinate":
        return {"value": {"latitude": rng.uniform(-80, 80), "longitude": rng.uniform(-180, 180), "altitude": None, "precision": 0.0001,
                          "globe": "http://www.wikidata.org/entity/Q2"}, "type": "globecoordinate"}
    if datatype == "quantity":
        return {"value": {"amount": f"+{rng.randrange(1, 10**7)}", "unit": rng.choice(("1", "http://www.wikidata.org/entity/Q11573"))}, "type": "quantity"}
    if datatype == "monolingualtext":
        return {"value": {"text": " ".join(vocab.words[rng.randrange(5_000)] for _ in range(3)), "language": "en"}, "type": "monolingualtext"}
    if datatype == "url":
        return {"value": f"https://www.{vocab.words[rng.randrange(5_000)]}.org/{rng.randrange(10**6)}", "type": "string"}
    if datatype == "commonsMedia":
        return {"value": f"{vocab.words[rng.randrange(20_000)].capitalize()} {rng.randrange(10**4)}.jpg", "type": "string"}
    return {"value": f"{rng.randrange(10**9)}", "type": "string"}


def _snak(rng: random.Random, prop: str, datatype: str, vocab: Vocabulary) -> dict:
    return {"snaktype": "value", "property": prop, "hash": f"{rng.getrandbits(160):040x}", "datavalue": _datavalue(rng, datatype, vocab), "datatype": datatype}


def _statement(rng: random.Random, qid: str, prop: str, datatype: str, vocab: Vocabulary) -> dict:
    statement = {"mainsnak": _snak(rng, prop, datatype, vocab), "type": "statement"}
    if rng.random() < 0.3:
        qualifier = rng.choice(_PROPERTIES[5:9])
        statement["qualifiers"] = {qualifier[0]: [_snak(rng, qualifier[0], qualifier[1], vocab)]}
        statement["qualifiers-order"] = [qualifier[0]]
    uid = f"{rng.getrandbits(128):032X}"
    statement["id"] = f"{qid}${uid[:8]}-{uid[8:12]}-{uid[12:16]}-{uid[16:20]}-{uid[20:]}"
    statement["rank"] = "normal" if rng.random() < 0.95 else "preferred"
    references = []
    for _ in range(rng.choice((0, 0, 1, 1, 1, 2))):
        props = rng.sample(_REFERENCE_PROPS, rng.randrange(1, 3))
        references.append({"hash": f"{rng.getrandbits(160):040x}", "snaks": {p: [_snak(rng, p, t, vocab)] for p, t in props}, "snaks-order": [p for p, _ in props]})
    if references:
        statement["references"] = references
    return statement


def php_json(value: dict) -> str:
    """JSON as PHP json_encode writes it with flags 0: ASCII only, ``\\/`` escaped (the Wikidata dump)."""
    return json.dumps(value, ensure_ascii=True, separators=(",", ":")).replace("/", "\\/")


def item_sitelinks(world: World, index: int) -> dict[str, str]:
    """Site key -> title of item ``index`` (an article's item, or one of the items no Wikipedia links)."""
    if index >= world.articles:
        return {}
    rng = random.Random(f"{world.seed}:{world.lang}:sitelinks:{index}")
    title = world.titles[index]
    sites = {world.wiki: title}
    others = min(int(math.exp(rng.gauss(0.8, 1.3))) - 1, len(WIKI_SIZES) - 1)
    if others > 0:
        codes = [code for code, _ in WIKI_SIZES if code != world.lang]
        weights = [weight for code, weight in WIKI_SIZES if code != world.lang]
        chosen: set[str] = set()
        while len(chosen) < others:
            chosen.update(rng.choices(codes, weights, k=others - len(chosen)))
        for code in sorted(chosen):
            sites[f"{code}wiki"] = title if rng.random() < 0.5 else " ".join(reversed(title.split(" ")))
    for site, share in _SISTER_SITES:
        if rng.random() < share * (1 + others / 10):
            key = site if site == "commonswiki" else f"{world.lang if rng.random() < 0.5 else 'en'}{site}"
            sites[key] = f"Category:{title}" if site == "commonswiki" else title
    return dict(sorted(sites.items()))


def wikidata_entity(world: World, index: int) -> str:
    """Item ``index`` as a dump line (without the separator)."""
    rng = random.Random(f"{world.seed}:{world.lang}:item:{index}")
    vocab = world.vocabulary
    linked = index < world.articles
    qid = f"Q{world.qids[index]}" if linked else f"Q{100 + 16 * world.articles + 3 * (index - world.articles)}"
    sitelinks = item_sitelinks(world, index)
    label = world.titles[index] if linked else " ".join(vocab.words[rng.randrange(VOCABULARY_SIZE // 2)] for _ in range(rng.randrange(4, 12))).capitalize()
    n_labels = min(len(_LABEL_LANGS), (len(sitelinks) + rng.randrange(0, 6)) if linked else rng.randrange(1, 4))
    labels = {code: {"language": code, "value": label} for code in ([world.lang] + [c for c in _LABEL_LANGS if c != world.lang])[:n_labels]}
    descriptions = {code: {"language": code, "value": " ".join(vocab.words[rng.randrange(8_000)] for _ in range(rng.randrange(2, 8)))}
                    for code in _LABEL_LANGS[: rng.randrange(1, 10 if linked else 4)]}
    aliases = {}
    if rng.random() < (0.35 if linked else 0.05):
        aliases = {world.lang: [{"language": world.lang, "value": " ".join(vocab.words[rng.randrange(20_000)] for _ in range(2))} for _ in range(rng.randrange(1, 5))]}
    # statements: lognormal counts, more for linked items (scholarly-article-like items carry author strings)
    n_statements = max(1, int(math.exp(rng.gauss(2.3, 0.8) if linked else rng.gauss(2.1, 0.4))))
    claims: dict[str, list] = {}
    for _ in range(min(n_statements, 400)):
        prop, datatype = rng.choice(_PROPERTIES) if linked or rng.random() < 0.3 else ("P2093", "string")
        claims.setdefault(prop, []).append(_statement(rng, qid, prop, datatype, vocab))
    entity = {"type": "item", "id": qid, "labels": labels, "descriptions": descriptions, "aliases": aliases, "claims": claims,
              "sitelinks": {site: {"site": site, "title": title, "badges": ["Q17437798"] if rng.random() < 0.01 else []} for site, title in sitelinks.items()},
              "pageid": int(world.qids[index] // 2) if linked else 10**8 + index, "ns": 0, "title": qid, "lastrevid": 2_100_000_000 + index,
              "modified": f"2026-10-{rng.randrange(1, 29):02d}T{rng.randrange(24):02d}:{rng.randrange(60):02d}:{rng.randrange(60):02d}Z"}
    return php_json(entity)


def _wikidata_part(job: tuple[int, int, bool, int]) -> tuple[Piece, bytes, dict]:
    """Entity lines [first, last), each followed by ``,\\n`` but the dump's last (``\\n]\\n``): deflated and as one bz2 stream."""
    first, last, is_last, level = job
    world = _WORLD
    lines = [wikidata_entity(world, i) for i in range(first, last)]
    sizes = [len(line) for line in lines]
    data = (",\n".join(lines) + ("\n]\n" if is_last else ",\n")).encode()
    sitelinks = [len(item_sitelinks(world, i)) for i in range(first, min(last, world.articles))]
    return deflate_piece(data, level), bz2.compress(data, 9), {"line": sizes, "sitelinks": sitelinks}


def _sql_string(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


_SQL_STATEMENT_BYTES = 1_046_528  # mysqldump's default net_buffer_length: extended INSERTs stop near 1 MB


def _items_per_site_part(job: tuple[int, int, int, int]) -> tuple[Piece, int]:
    """INSERT statements of the sitelinks of items [first, last); row ids from ``first_row``."""
    first, last, first_row, level = job
    world = _WORLD
    head = "INSERT INTO `wb_items_per_site` VALUES "
    statements, rows, size, row_id = [], [], len(head), first_row
    for i in range(first, last):
        item = int(world.qids[i])
        for site, title in item_sitelinks(world, i).items():
            row = f"({row_id},{item},{_sql_string(site)},{_sql_string(title)})"
            row_id += 1
            if rows and size + len(row) + 1 > _SQL_STATEMENT_BYTES:
                statements.append(head + ",".join(rows) + ";\n")
                rows, size = [], len(head)
            rows.append(row)
            size += len(row) + 1
    if rows:
        statements.append(head + ",".join(rows) + ";\n")
    return deflate_piece("".join(statements).encode(), level), row_id - first_row


def _sql_header(table: str, columns: str) -> str:
    return ("-- MySQL dump 10.19  Distrib 10.3.39-MariaDB, for debian-linux-gnu (x86_64)\n--\n-- Host: 10.64.0.1    Database: wikidatawiki\n"
            "-- ------------------------------------------------------\n-- Server version\t10.6.17-MariaDB-log\n\n"
            "/*!40101 SET @OLD_CHARACTER_SET_CLIENT=@@CHARACTER_SET_CLIENT */;\n/*!40101 SET NAMES utf8mb4 */;\n\n"
            f"--\n-- Table structure for table `{table}`\n--\n\nDROP TABLE IF EXISTS `{table}`;\n"
            f"CREATE TABLE `{table}` (\n{columns}\n) ENGINE=InnoDB DEFAULT CHARSET=binary;\n\n"
            f"--\n-- Dumping data for table `{table}`\n--\n\nLOCK TABLES `{table}` WRITE;\n/*!40000 ALTER TABLE `{table}` DISABLE KEYS */;\n")


def _sql_footer(table: str) -> str:
    return (f"/*!40000 ALTER TABLE `{table}` ENABLE KEYS */;\nUNLOCK TABLES;\n\n/*!40101 SET CHARACTER_SET_CLIENT=@OLD_CHARACTER_SET_CLIENT */;\n\n"
            "-- Dump completed on 2026-11-02  4:12:31\n")


_ITEMS_PER_SITE_COLUMNS = ("  `ips_row_id` bigint(20) unsigned NOT NULL AUTO_INCREMENT,\n  `ips_item_id` int(10) unsigned NOT NULL,\n"
                           "  `ips_site_id` varbinary(32) NOT NULL,\n  `ips_site_page` varbinary(310) NOT NULL,\n  PRIMARY KEY (`ips_row_id`),\n"
                           "  UNIQUE KEY `wb_ips_item_site_page` (`ips_site_id`,`ips_site_page`),\n  KEY `wb_ips_item_id` (`ips_item_id`)")


# --- orchestration -------------------------------------------------------------------------------


def _map(function, jobs: list, processes: int) -> Iterator:
    """Results in job order, from a pool of forked workers (or in this process for one)."""
    if processes <= 1 or len(jobs) <= 1:
        yield from map(function, jobs)
        return
    context = multiprocessing.get_context("fork")
    with context.Pool(processes) as pool:
        yield from pool.imap(function, jobs)


def _chunks(first: int, last: int, size: int) -> list[tuple[int, int]]:
    return [(start, min(start + size, last)) for start in range(first, last, size)]


def _write_html(out: Path, world: World, date: str, processes: int, lines_per_member: int, level: int | None, text_every: int) -> dict:
    """The Enterprise tar.gz: members of ``lines_per_member`` lines, each generated in sub-parts of at most 1,000 articles."""
    path = out / f"{world.wiki}-NS0-{date}-ENTERPRISE-HTML.json.tar.gz"
    members = _chunks(0, world.articles, lines_per_member)
    jobs, owner = [], []
    for number, (first, last) in enumerate(members):
        for a, b in _chunks(first, last, 1_000):
            jobs.append((a, b, level, text_every))
            owner.append(number)
    stats = ArticleStats()
    with open(path, "wb") as raw:
        splicer = GzipSplicer(raw, level)
        offset, waiting, current = 0, [], 0
        for job_number, (piece, part_stats) in enumerate(_map(_html_part, jobs, processes)):
            stats.merge(part_stats)
            waiting.append(piece)
            if job_number + 1 == len(jobs) or owner[job_number + 1] != current:  # the member is complete: header, data, padding
                size = sum(p.size for p in waiting)
                info = tarfile.TarInfo(f"{world.wiki}_namespace_0_{current}.ndjson")
                info.size, info.mtime, info.mode, info.uname, info.gname = size, 1_761_955_200, 0o644, "root", "root"
                splicer.add_bytes(info.tobuf(format=tarfile.GNU_FORMAT))
                for p in waiting:
                    splicer.add(p)
                padding = (-size) % tarfile.BLOCKSIZE
                if padding:
                    splicer.add_bytes(b"\0" * padding)
                offset += tarfile.BLOCKSIZE + size + padding
                waiting, current = [], current + 1
        end = 2 * tarfile.BLOCKSIZE
        end += (-(offset + end)) % tarfile.RECORDSIZE
        splicer.add_bytes(b"\0" * end)
        splicer.close()
    return {"file": path.name, "compressed_bytes": path.stat().st_size, "uncompressed_bytes": splicer.size, "members": len(members),
            "articles": _article_summary(stats)}


def _write_xml(out: Path, world: World, date: str, processes: int) -> dict:
    """pages-articles-multistream and its index: the header, every 100 pages and the footer in their own bz2 streams."""
    path = out / f"{world.wiki}-{date}-pages-articles-multistream.xml.bz2"
    index_path = out / f"{world.wiki}-{date}-pages-articles-multistream-index.txt.bz2"
    slots, _ = _page_layout(world)
    per_part = PAGES_PER_STREAM * max(1, min(50, len(slots) // (PAGES_PER_STREAM * max(processes, 1) * 8) or 1))
    jobs = _chunks(0, len(slots), per_part)
    totals: dict[str, int] = {}
    index_lines: list[str] = []
    with open(path, "wb") as out_file:
        header = bz2.compress(_xml_header(world), 9)
        out_file.write(header)
        offset = len(header)
        for streams, index, counts in _map(_xml_part, jobs, processes):
            starts = []
            for stream in streams:
                starts.append(offset)
                out_file.write(stream)
                offset += len(stream)
            index_lines.extend(f"{starts[s]}:{page_id}:{title}" for s, page_id, title in index)
            for key, value in counts.items():
                totals[key] = totals.get(key, 0) + value
        out_file.write(bz2.compress(b"</mediawiki>\n", 9))
    index_path.write_bytes(bz2.compress(("\n".join(index_lines) + "\n").encode(), 9))
    pages = totals["articles"] + totals["redirects"] + totals["other"]
    return {"file": path.name, "index": index_path.name, "compressed_bytes": path.stat().st_size, "index_bytes": index_path.stat().st_size,
            "uncompressed_bytes": totals["xml_bytes"] + len(_xml_header(world)) + 13, "pages": pages, "articles": totals["articles"],
            "redirects": totals["redirects"], "other_namespace_pages": totals["other"], "redirect_share": totals["redirects"] / pages,
            "article_share": totals["articles"] / pages, "article_wikitext_bytes": totals["article_bytes"], "redirect_wikitext_bytes": totals["redirect_bytes"],
            "other_wikitext_bytes": totals["other_bytes"]}


def _write_wikidata(out: Path, world: World, processes: int, level: int | None) -> dict:
    items = world.articles + world.unlinked_items
    jobs = [(a, b, b == items, level) for a, b in _chunks(0, items, 2_000)]
    gz_path, bz2_path = out / "latest-all.json.gz", out / "latest-all.json.bz2"
    lines: list[int] = []
    sitelinks: list[int] = []
    with open(gz_path, "wb") as gz_file, open(bz2_path, "wb") as bz2_file:
        splicer = GzipSplicer(gz_file, level)
        splicer.add_bytes(b"[\n")
        bz2_file.write(bz2.compress(b"[\n", 9))
        for piece, stream, counts in _map(_wikidata_part, jobs, processes):
            splicer.add(piece)
            bz2_file.write(stream)
            lines.extend(counts["line"])
            sitelinks.extend(counts["sitelinks"])
        splicer.close()
    linked = np.array(lines[: world.articles])
    return {"files": [gz_path.name, bz2_path.name], "gz_bytes": gz_path.stat().st_size, "bz2_bytes": bz2_path.stat().st_size,
            "uncompressed_bytes": splicer.size, "entities": items, "linked_items": world.articles, "entity_line_bytes": summarize(lines),
            "linked_entity_line_bytes": summarize(linked.tolist()), "sitelinks_per_linked_item": summarize(sitelinks)}


def _write_items_per_site(out: Path, world: World, date: str, processes: int, level: int | None) -> dict:
    path = out / f"wikidatawiki-{date}-wb_items_per_site.sql.gz"
    counts = [len(item_sitelinks(world, i)) for i in range(world.articles)]
    first_rows = np.concatenate(([1], 1 + np.cumsum(counts)))
    jobs = [(a, b, int(first_rows[a]), level) for a, b in _chunks(0, world.articles, 5_000)]
    rows = 0
    with open(path, "wb") as raw:
        splicer = GzipSplicer(raw, level)
        splicer.add_bytes(_sql_header("wb_items_per_site", _ITEMS_PER_SITE_COLUMNS).encode())
        for piece, written in _map(_items_per_site_part, jobs, processes):
            splicer.add(piece)
            rows += written
        splicer.add_bytes(_sql_footer("wb_items_per_site").encode())
        splicer.close()
    return {"file": path.name, "compressed_bytes": path.stat().st_size, "uncompressed_bytes": splicer.size, "rows": rows, "rows_per_item": rows / max(world.articles, 1)}


def summarize(values: list[int] | np.ndarray) -> dict:
    """Mean, median, p90, p99 and max of a list of sizes (empty: zeros)."""
    array = np.asarray(values, dtype=np.float64)
    if not array.size:
        return {"n": 0, "mean": 0.0, "median": 0.0, "p90": 0.0, "p99": 0.0, "max": 0.0}
    return {"n": int(array.size), "mean": float(array.mean()), "median": float(np.median(array)), "p90": float(np.percentile(array, 90)),
            "p99": float(np.percentile(array, 99)), "max": float(array.max())}


def _article_summary(stats: ArticleStats) -> dict:
    wikitext, html = np.asarray(stats.wikitext, dtype=np.float64), np.asarray(stats.html, dtype=np.float64)
    sampled_wt, sampled_text = np.asarray(stats.text_wikitext, dtype=np.float64), np.asarray(stats.text, dtype=np.float64)
    return {
        "wikitext_bytes": summarize(stats.wikitext), "html_bytes": summarize(stats.html), "record_line_bytes": summarize(stats.line),
        "text_bytes_sampled": summarize(stats.text), "html_per_wikitext": float(html.sum() / max(wikitext.sum(), 1)),
        "html_per_wikitext_median": float(np.median(html / np.maximum(wikitext, 1))) if html.size else 0.0,
        "text_per_wikitext": float(sampled_text.sum() / max(sampled_wt.sum(), 1)),
        "templates_per_article": summarize(stats.templates), "refs_per_article": summarize(stats.refs), "links_per_article": summarize(stats.links),
        "sections_per_article": summarize(stats.sections),
    }


def write_realistic_dumps(out_dir: str | Path, lang: str = "en", articles: int = 10_000, formats: tuple[str, ...] = FORMATS, seed: int = 1,
                          processes: int | None = None, lines_per_member: int = DEFAULT_LINES_PER_MEMBER, date: str = DEFAULT_DATE,
                          unlinked_ratio: float = 1.0, gzip_level: int | None = FAST, text_every: int = 20, partner: tuple[str, int] | None = None) -> dict:
    """Write the dumps of ``formats`` for ``articles`` articles of ``lang``; returns the realised statistics (also in ``realistic-stats.json``).

    The output depends only on the arguments other than ``processes``. ``unlinked_ratio``
    adds that many Wikidata items without sitelinks per article (most of Wikidata's
    ~113 M items link no Wikipedia). ``gzip_level`` 1-9 compresses with zlib (6 is
    gzip's default, for realistic sizes), ``FAST`` with isal. ``text_every`` measures CirrusSearch-style text
    (``html_to_text``) on every n-th article (0: none). ``partner`` (language, articles) also writes that
    language's Enterprise HTML dump (``partner_world``: articles of ``lang``'s items, linked by their sitelinks).
    """
    global _WORLD
    unknown = set(formats) - set(FORMATS)
    if unknown:
        raise ValueError(f"unknown formats {sorted(unknown)}: choose from {', '.join(FORMATS)}")
    if articles < 1:
        raise ValueError("articles must be at least 1")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    processes = processes or os.cpu_count() or 1
    started = time.perf_counter()
    world = make_world(lang, articles, seed, unlinked_ratio)
    _WORLD = world
    stats: dict = {"lang": lang, "articles": articles, "seed": seed, "processes": processes, "formats": list(formats),
                   "profile": profile_of(lang).__dict__, "timings_s": {"world": time.perf_counter() - started}}
    writers = {
        "html": lambda: _write_html(out, world, date, processes, lines_per_member, gzip_level, text_every),
        "xml": lambda: _write_xml(out, world, date, processes),
        "wikidata": lambda: _write_wikidata(out, world, processes, gzip_level),
        "items-per-site": lambda: _write_items_per_site(out, world, date, processes, gzip_level),
    }
    stats["cpu_s"] = {}
    for name in FORMATS:
        if name in formats:
            begun, cpu = time.perf_counter(), _cpu_seconds()
            stats[name] = writers[name]()
            stats["timings_s"][name] = time.perf_counter() - begun
            stats["cpu_s"][name] = _cpu_seconds() - cpu
    if partner:
        begun, cpu = time.perf_counter(), _cpu_seconds()
        _WORLD = partner_world(world, *partner)
        stats["partner"] = {"lang": partner[0], "html": _write_html(out, _WORLD, date, processes, lines_per_member, gzip_level, 0)}
        stats["timings_s"]["partner"] = time.perf_counter() - begun
        stats["cpu_s"]["partner"] = _cpu_seconds() - cpu
        _WORLD = world
    stats["timings_s"]["total"] = time.perf_counter() - started
    stats["projection"] = project(stats, profile_of(lang).articles)
    (out / STATS_FILE).write_text(json.dumps(stats, indent=1, ensure_ascii=False) + "\n")
    return stats


def _cpu_seconds() -> float:
    """CPU time of this process and of its finished workers (the machine is shared: wall time alone misleads)."""
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


def project(stats: dict, real_articles: int) -> dict:
    """The realised per-article compressed sizes scaled to the language's real article count (GB = 10^9 bytes)."""
    n = stats["articles"]
    scale = real_articles / n
    projection = {"real_articles": real_articles}
    if "html" in stats:
        projection["enterprise_html_tar_gz_gb"] = stats["html"]["compressed_bytes"] * scale / 1e9
        projection["enterprise_html_uncompressed_gb"] = stats["html"]["uncompressed_bytes"] * scale / 1e9
    if "xml" in stats:
        projection["pages_articles_multistream_bz2_gb"] = stats["xml"]["compressed_bytes"] * scale / 1e9
    if "items-per-site" in stats:
        projection["items_per_site_rows_for_this_wiki_items"] = int(stats["items-per-site"]["rows_per_item"] * real_articles)
    return projection


def _format_summary(name: str, values: dict) -> str:
    return f"  {name:<28} mean {values['mean']:>10,.0f}  median {values['median']:>10,.0f}  p90 {values['p90']:>10,.0f}  p99 {values['p99']:>11,.0f}  max {values['max']:>11,.0f}"


def print_stats(stats: dict, stream=sys.stdout) -> None:
    """The realised statistics beside the published figures they were calibrated to."""
    print(f"{stats['lang']}: {stats['articles']:,} articles, seed {stats['seed']}, {stats['processes']} processes", file=stream)
    if "html" in stats:
        html = stats["html"]
        a = html["articles"]
        print(f"Enterprise HTML {html['file']}: {html['compressed_bytes'] / 1e6:,.1f} MB gz, {html['uncompressed_bytes'] / 1e6:,.1f} MB tar, {html['members']} members", file=stream)
        for key in ("wikitext_bytes", "html_bytes", "record_line_bytes", "text_bytes_sampled", "templates_per_article", "refs_per_article", "links_per_article"):
            print(_format_summary(key, a[key]), file=stream)
        print(f"  html/wikitext (bytes summed) {a['html_per_wikitext']:.2f}, per-article median {a['html_per_wikitext_median']:.2f}; "
              f"text/wikitext {a['text_per_wikitext']:.3f}; gzip ratio {html['uncompressed_bytes'] / html['compressed_bytes']:.2f}", file=stream)
    if "xml" in stats:
        xml = stats["xml"]
        print(f"pages-articles-multistream {xml['file']}: {xml['compressed_bytes'] / 1e6:,.1f} MB bz2 ({xml['uncompressed_bytes'] / 1e6:,.1f} MB XML), "
              f"{xml['pages']:,} pages: {xml['article_share']:.1%} articles, {xml['redirect_share']:.1%} redirects "
              f"(published en: {PUBLISHED['en_redirect_share_pages_articles'][0]:.1%}), index {xml['index_bytes'] / 1e3:,.0f} kB", file=stream)
    if "wikidata" in stats:
        wd = stats["wikidata"]
        print(f"Wikidata: {wd['entities']:,} entities ({wd['linked_items']:,} with sitelinks): {wd['gz_bytes'] / 1e6:,.1f} MB gz, {wd['bz2_bytes'] / 1e6:,.1f} MB bz2, "
              f"{wd['uncompressed_bytes'] / 1e6:,.1f} MB JSON", file=stream)
        print(_format_summary("entity_line_bytes", wd["entity_line_bytes"]), file=stream)
        print(_format_summary("linked_entity_line_bytes", wd["linked_entity_line_bytes"]), file=stream)
        print(_format_summary("sitelinks_per_linked_item", wd["sitelinks_per_linked_item"]), file=stream)
    if "items-per-site" in stats:
        ips = stats["items-per-site"]
        print(f"wb_items_per_site {ips['file']}: {ips['rows']:,} rows, {ips['compressed_bytes'] / 1e6:,.1f} MB gz ({ips['uncompressed_bytes'] / 1e6:,.1f} MB SQL)", file=stream)
    if "partner" in stats:
        html = stats["partner"]["html"]
        print(f"partner {stats['partner']['lang']} {html['file']}: {html['compressed_bytes'] / 1e6:,.1f} MB gz, {html['articles']['html_bytes']['n']:,} articles", file=stream)
    projection = stats["projection"]
    print(f"projected to {projection['real_articles']:,} articles: " + ", ".join(f"{k} {v:,.1f}" for k, v in projection.items() if k != "real_articles"), file=stream)
    print("wall (s): " + ", ".join(f"{k} {v:.1f}" for k, v in stats["timings_s"].items()), file=stream)
    print("CPU, all processes (s): " + ", ".join(f"{k} {v:.1f}" for k, v in stats.get("cpu_s", {}).items()), file=stream)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, help="folder for the dumps (created)")
    parser.add_argument("--lang", default="en", help=f"language code; profiles for {', '.join(PROFILES)}")
    parser.add_argument("--articles", type=int, default=10_000)
    parser.add_argument("--formats", default=",".join(FORMATS), help=f"comma-separated, of {', '.join(FORMATS)}")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--processes", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--lines-per-member", type=int, default=DEFAULT_LINES_PER_MEMBER, help="NDJSON lines per tar member of the HTML dump")
    parser.add_argument("--date", default=DEFAULT_DATE)
    parser.add_argument("--unlinked-ratio", type=float, default=1.0, help="Wikidata items without sitelinks per article")
    parser.add_argument("--gzip-level", type=int, choices=range(1, 10), default=FAST,
                        help="zlib level for the .gz files (6: gzip's default, realistic sizes, slow); default: isal level 2, ~15%% larger")
    parser.add_argument("--text-every", type=int, default=20, help="measure the extracted text of every n-th article (0: none)")
    parser.add_argument("--partner", help="LANG:N: also an Enterprise HTML dump of N articles in LANG, of this language's items that link to it")
    args = parser.parse_args(argv)
    partner = None
    if args.partner:
        code, _, count = args.partner.partition(":")
        if not code or not count.isdigit() or int(count) < 1:
            print(f"realistic_dumps: --partner {args.partner}: give LANG:N, N at least 1", file=sys.stderr)
            return 2
        partner = (code, int(count))
    formats = tuple(f.strip() for f in args.formats.split(",") if f.strip())
    try:
        stats = write_realistic_dumps(args.out, args.lang, args.articles, formats, args.seed, args.processes, args.lines_per_member, args.date,
                                      args.unlinked_ratio, args.gzip_level, args.text_every, partner)
    except ValueError as error:
        print(f"realistic_dumps: {error}", file=sys.stderr)
        return 2
    print_stats(stats)
    return 0


if __name__ == "__main__":
    sys.exit(main())
