"""Text analyzers of the embedded engine, each the twin of an Elasticsearch analysis chain.

docs/method.md section 4 wants the language's analyzer in the embedded engine and in
Elasticsearch alike, so every analyzer here is a chain of Lucene components that
Elasticsearch exposes, and ``Analyzer.spec`` writes that chain down:

=============  ================================================  =========================================
step           here (Python)                                     Elasticsearch (Lucene) twin
=============  ================================================  =========================================
lowercase      per code point: ``str.lower`` except that 'İ'     ``lowercase`` filter (LowerCaseFilter:
               gives 'i' and 'Σ' always 'σ'                      ``Character.toLowerCase`` per code point)
words          maximal runs of letters, marks and digits         ``pattern`` tokenizer, group 0,
               (general categories L, M, N)                      ``[\\p{L}\\p{M}\\p{N}]+``
bigrams        words, except that runs of an unspaced script     ``pattern`` tokenizer, group 1: a look-ahead
               (``UNSPACED_BLOCKS``: Han, kana, Hangul, Thai,    captures a word, each two-letter window of a
               Lao, Myanmar, Khmer, Tibetan) become overlapping  run, or a lone letter
               two-letter tokens; a lone letter stays one        (``BIGRAM_PATTERN_JAVA``)
length         drop tokens over 255 UTF-16 units (Lucene         ``length`` filter, max 255
               rejects a document with an immense term)
stop           drop listed words (``stopwords.STOPWORDS``)       ``stop`` filter, the same explicit list
snowball       PyStemmer 2.2.0.3 (Snowball 2.2.0 in C); for      ``snowball`` filter, ``language`` as named
               German2 ``german2_prelude`` first                 (org.tartarus.snowball.ext.<language>Stemmer)
=============  ================================================  =========================================

Lowercasing the whole text before tokenizing gives the same tokens as ES's order
(tokenizer, then ``lowercase``) because the mapping never moves a character in or out
of the classes above (a test checks every code point).

Which Unicode: Java's ``\\p{L}`` and ``Character.toLowerCase`` read the Unicode data of
the JDK that runs Elasticsearch (no tables built into Lucene take part in these chains),
and ES 8.15.3, the image ``compose.py`` runs, bundles JDK 22: Unicode 15.1
(``UNICODE_VERSION``). The classes here come from that version's database whatever
Python runs them: Python 3.13's own ``unicodedata`` is 15.1, other Pythons get
``unicodedata2==15.1.0`` (a dependency). Python 3.11's own database (Unicode 14) would
drop the 5,052 letters, marks and digits of Unicode 15.0 and 15.1 (CJK Extensions H and
I, Kawi, Nag Mundari, ...) that ES keeps. Lowercasing is Python's, corrected where its
Unicode is not 15.1 (``lowercase_corrections``). Identical to Lucene on every code point
Unicode 15.1 assigns (``tests/test_analyzer_unicode.py``); a JDK of Unicode 16 (ES 8.18
on) also keeps Unicode 16's 4,433 new ones, which this does not (docs/analyzers.md).

Checked against Lucene 9.9.1 itself (the Anserini 1.7.1 jar that the test support
``bench/support/lucene_jar.py`` finds; Elasticsearch 8 runs Lucene 9), each chain built from
``spec`` by ``bench/support/java/LuceneAnalyze.java`` as ES builds it: on 1.7 million real texts in 200 languages
(the Wikidata fixtures and the gettext catalogs of a Debian machine) and on the sample
dumps, every language's chain gives Lucene's tokens, and so do ``plain`` and ``bigram``
on all of them. ``tests/test_analyzer_parity.py`` repeats this on the fixtures and the sample
dumps; docs/analyzers.md has the numbers per language and the command.

Which stemmer: Lucene 9's Snowball was generated from a 2020 Snowball commit (newer than
release 2.0, older than 2.1), with Armenian and an early Estonian patched in and German2
built. PyStemmer 3.x (Snowball 3) stems English, Danish, Finnish, French, German,
Lithuanian, Norwegian, Romanian, Spanish and Swedish words differently (up to 2.6% of a
language's tokens), so the dependency is pinned to PyStemmer 2.2.0.3 (Snowball 2.2.0),
whose stems equal Lucene's in every language here on all that text. PyStemmer 2.0.1
lacks Armenian and Serbian; the pure-Python snowballstemmer 2.1/2.2 agrees too but is
50-75x slower. Three languages need more:

- German: ES's ``German2`` is German with a prelude that also reads ae, oe, ue as ä, ö,
  ü. PyStemmer 2.2 has no german2, so ``german2_prelude`` does that part and PyStemmer's
  ``german`` the rest (the tests check it on 20,000 random words as well).
- Dutch: ES's ``Dutch`` is the original Snowball Dutch, PyStemmer 2.2's ``dutch``
  (PyStemmer 3 renamed it ``dutch_porter``).
- Estonian and Yiddish get no stemmer, on either side: Lucene's Estonian (the 2019
  contribution; Snowball 3's differs) and Yiddish (without the ``-et`` rules of
  Snowball 2.1) are in no Python package; the closest, Snowball 3's, differ on 1.1% of
  Estonian and 0.7% of Yiddish tokens. Estonian keeps its Lucene stop list; Yiddish is
  ``plain``.
"""

from __future__ import annotations

import functools
import re
import threading
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field

import Stemmer

from clirmatrix.pipeline.engines.stopwords import STOPWORDS

MAX_TOKEN_UTF16 = 255
STEM_CACHE = 0  # PyStemmer's own cache of stems: slower than stemming itself (measured)

# Blocks of the scripts written without spaces between words (and Hangul, which the
# CJK analyzers of Lucene also cut into bigrams). Only their letters, marks and
# digits are bigrammed; the rest of a block (punctuation, symbols) separates tokens.
UNSPACED_BLOCKS: tuple[tuple[int, int], ...] = (
    (0x0E00, 0x0E7F),  # Thai
    (0x0E80, 0x0EFF),  # Lao
    (0x0F00, 0x0FFF),  # Tibetan
    (0x1000, 0x109F),  # Myanmar
    (0x1100, 0x11FF),  # Hangul Jamo
    (0x1780, 0x17FF),  # Khmer
    (0x19E0, 0x19FF),  # Khmer Symbols
    (0x2E80, 0x2FDF),  # CJK Radicals Supplement, Kangxi Radicals
    (0x3000, 0x303F),  # CJK Symbols and Punctuation (々 〆 〇 〻)
    (0x3040, 0x30FF),  # Hiragana, Katakana
    (0x3100, 0x312F),  # Bopomofo
    (0x3130, 0x318F),  # Hangul Compatibility Jamo
    (0x3190, 0x31FF),  # Kanbun, Bopomofo Extended, CJK Strokes, Katakana Phonetic Extensions
    (0x3200, 0x33FF),  # Enclosed CJK Letters and Months, CJK Compatibility
    (0x3400, 0x4DBF),  # CJK Unified Ideographs Extension A
    (0x4E00, 0x9FFF),  # CJK Unified Ideographs
    (0xA960, 0xA97F),  # Hangul Jamo Extended-A
    (0xA9E0, 0xA9FF),  # Myanmar Extended-B
    (0xAA60, 0xAA7F),  # Myanmar Extended-A
    (0xAC00, 0xD7FF),  # Hangul Syllables, Hangul Jamo Extended-B
    (0xF900, 0xFAFF),  # CJK Compatibility Ideographs
    (0xFF65, 0xFFDC),  # Halfwidth Katakana and Hangul
    (0x1AFF0, 0x1B16F),  # Kana Extended-B, Kana Supplement, Kana Extended-A, Small Kana Extension
    (0x20000, 0x3FFFF),  # Supplementary and Tertiary Ideographic Planes
)

_JAVA_WORD = r"\p{L}\p{M}\p{N}"
_JAVA_BLOCKS = "".join(f"\\x{{{lo:X}}}-\\x{{{hi:X}}}" for lo, hi in UNSPACED_BLOCKS)
_JAVA_SPACED = f"[{_JAVA_WORD}&&[^{_JAVA_BLOCKS}]]"
_JAVA_UNSPACED = f"[{_JAVA_WORD}&&[{_JAVA_BLOCKS}]]"
WORD_PATTERN_JAVA = f"[{_JAVA_WORD}]+"


def lookahead_bigram_pattern(spaced: str, unspaced: str) -> str:
    """The bigram tokenizer as one regex whose group 1 is each token, given two character classes.

    A zero-width look-ahead captures a word, the bigram starting here, or a lone
    letter. The rest consumes a whole word, or a run's last bigram with its final
    letter, so no search starts inside a word or on a run's last letter. There is no
    look-behind: Java checks one UTF-16 unit behind, which fails after supplementary
    letters (measured against Lucene's PatternTokenizer).
    """
    s, u = spaced, unspaced
    return f"(?=({s}+|{u}{u}|{u}))(?:{s}+|{u}{u}(?!{u})|{u}(?!{u}))?"


BIGRAM_PATTERN_JAVA = lookahead_bigram_pattern(_JAVA_SPACED, _JAVA_UNSPACED)

# The Unicode version of the JDK that Elasticsearch runs (ES 8.15.3 bundles JDK 22:
# Unicode 15.1). Java's \p{L}, \p{M}, \p{N} and Character.toLowerCase read the running
# JDK's Unicode data, so this decides which characters are word characters over there.
UNICODE_VERSION = "15.1.0"

# Simple lowercase mappings of the capital letters that Unicode 14.0 assigned (Glagolitic,
# Latin, Vithkuqi): a Python whose database is older (3.10: Unicode 13) leaves them as
# they are. Unicode 15.0 and 15.1 assigned no letter with a lowercase mapping.
_LOWERCASE_SINCE_14: dict[int, int] = {
    0x2C2F: 0x2C5F, 0xA7C0: 0xA7C1, 0xA7D0: 0xA7D1, 0xA7D6: 0xA7D7, 0xA7D8: 0xA7D9,
    **{cp: cp + 0x27 for cp in range(0x10570, 0x10596) if cp not in (0x1057B, 0x1058B, 0x10593)},
}  # fmt: skip


@functools.cache
def unicode_database():
    """The ``unicodedata`` module of Unicode ``UNICODE_VERSION``: Python's own if it is that version, else unicodedata2."""
    if unicodedata.unidata_version == UNICODE_VERSION:
        return unicodedata
    try:
        import unicodedata2
    except ImportError:
        unicodedata2 = None
    found = getattr(unicodedata2, "unidata_version", None)
    if found != UNICODE_VERSION:
        raise RuntimeError(
            f"the analyzers need Unicode {UNICODE_VERSION}, Elasticsearch's (its JDK's); Python {unicodedata.unidata_version} "
            f"and unicodedata2 {found or '(not installed)'} are not: pip install unicodedata2=={UNICODE_VERSION}"
        )
    return unicodedata2


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


_LUCENE_LOWER = str.maketrans({"\u0130": "i", "\u03a3": "\u03c3"})
# Python 3.11-3.13 (Unicode 14.0-15.1) lowercase every other code point as the JDK does.
_PYTHON_LOWERCASES_AS_TARGET = (14,) <= _version(unicodedata.unidata_version) <= _version(UNICODE_VERSION)


@functools.cache
def lowercase_corrections() -> dict[int, str]:
    """What ``str.lower`` needs, per code point, to lowercase as Lucene does on Unicode ``UNICODE_VERSION``.

    Always: 'İ' -> 'i' (Python's full mapping gives 'i' and a combining dot) and 'Σ' ->
    'σ' (Python writes 'ς' word-finally). A Python older than Unicode 14 lacks Unicode
    14's capital letters (``_LOWERCASE_SINCE_14``). A Python newer than the target
    lowercases letters that the JDK does not know (Unicode 16's U+A7CB would become
    'ɤ', a letter): they are not word characters there, so they become a space.
    """
    corrections = {0x130: "i", 0x3A3: "\u03c3"}
    python = _version(unicodedata.unidata_version)
    if python < (14,):
        corrections.update({upper: chr(lower) for upper, lower in _LOWERCASE_SINCE_14.items()})
    if python > _version(UNICODE_VERSION):
        ucd = unicode_database()
        for cp in range(0x110000):
            ch = chr(cp)
            if ch.lower() != ch and ucd.category(ch) == "Cn":
                corrections[cp] = " "
    return corrections


@functools.cache
def _lowercase_table() -> dict[int, str]:
    return str.maketrans(lowercase_corrections())


def lucene_lowercase(text: str) -> str:
    """Lowercase as Lucene's LowerCaseFilter does (per code point, Unicode ``UNICODE_VERSION``): 'İ' -> 'i', 'Σ' -> 'σ' even word-finally."""
    if _PYTHON_LOWERCASES_AS_TARGET:
        if "\u0130" in text or "\u03a3" in text:
            text = text.translate(_LUCENE_LOWER)
    else:
        text = text.translate(_lowercase_table())
    return text.lower()


@functools.cache
def word_ranges() -> tuple[tuple[int, int], ...]:
    """Code point ranges of general categories L, M and N in Unicode ``UNICODE_VERSION`` (Java's ``[\\p{L}\\p{M}\\p{N}]``)."""
    category = unicode_database().category
    ranges: list[tuple[int, int]] = []
    start = -1
    for cp in range(0x110000):
        if category(chr(cp))[0] in "LMN":
            if start < 0:
                start = cp
        elif start >= 0:
            ranges.append((start, cp - 1))
            start = -1
    if start >= 0:
        ranges.append((start, 0x10FFFF))
    return tuple(ranges)


def _intersect(a: tuple[tuple[int, int], ...], b: tuple[tuple[int, int], ...]) -> list[tuple[int, int]]:
    out = []
    for lo, hi in a:
        for blo, bhi in b:
            if blo <= hi and lo <= bhi:
                out.append((max(lo, blo), min(hi, bhi)))
    return sorted(out)


def _subtract(a: tuple[tuple[int, int], ...], b: tuple[tuple[int, int], ...]) -> list[tuple[int, int]]:
    out = []
    for lo, hi in a:
        pieces = [(lo, hi)]
        for blo, bhi in b:
            pieces = [p for plo, phi in pieces for p in ((plo, min(phi, blo - 1)), (max(plo, bhi + 1), phi)) if p[0] <= p[1]]
        out.extend(pieces)
    return sorted(out)


def char_class(ranges: list[tuple[int, int]] | tuple[tuple[int, int], ...]) -> str:
    """A Python regex character class body for code point ranges."""
    return "".join(f"\\U{lo:08x}" if lo == hi else f"\\U{lo:08x}-\\U{hi:08x}" for lo, hi in ranges)


def _bmp(ranges: list[tuple[int, int]] | tuple[tuple[int, int], ...]) -> list[tuple[int, int]]:
    return [(lo, min(hi, 0xFFFF)) for lo, hi in ranges if lo <= 0xFFFF]


@functools.cache
def token_classes() -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """Code point ranges of the letters of spaced scripts and of unspaced scripts."""
    words = word_ranges()
    return _subtract(words, UNSPACED_BLOCKS), _intersect(words, UNSPACED_BLOCKS)


# Each tokenizer has two regexes: one for text within the Basic Multilingual Plane,
# whose character classes Python compiles to bitmaps (3-10x faster), and one for all.
_SUPPLEMENTARY = re.compile("[\U00010000-\U0010FFFF]")


@functools.cache
def _word_regexes() -> tuple[re.Pattern[str], re.Pattern[str]]:
    words = word_ranges()
    return re.compile(f"[{char_class(_bmp(words))}]+"), re.compile(f"[{char_class(words)}]+")


@functools.cache
def _bigram_regexes() -> tuple[re.Pattern[str], re.Pattern[str]]:
    spaced, unspaced = token_classes()
    return (
        re.compile(f"([{char_class(_bmp(spaced))}]+)|([{char_class(_bmp(unspaced))}]+)"),
        re.compile(f"([{char_class(spaced)}]+)|([{char_class(unspaced)}]+)"),
    )


def _pick(regexes: tuple[re.Pattern[str], re.Pattern[str]], text: str) -> re.Pattern[str]:
    return regexes[0] if text.isascii() or not _SUPPLEMENTARY.search(text) else regexes[1]


# Bulk tokenizing (``Analyzer.raw_tokens_many``) joins many texts with a separator that is
# no word character, so no token can hold or equal it, and reads it back as a boundary.
SEPARATORS = ("\n", "\x00", "\x1f", "\ufffe")


@functools.cache
def _word_regexes_with(separator: str) -> tuple[re.Pattern[str], re.Pattern[str]]:
    words, escaped = word_ranges(), re.escape(separator)
    return re.compile(f"[{char_class(_bmp(words))}]+|{escaped}"), re.compile(f"[{char_class(words)}]+|{escaped}")


def word_tokens(text: str) -> list[str]:
    """Maximal runs of letters, marks and digits."""
    return _pick(_word_regexes(), text).findall(text)


def bigram_tokens(text: str) -> list[str]:
    """Words of spaced scripts; overlapping bigrams (or a lone letter) of unspaced runs."""
    tokens: list[str] = []
    for spaced, run in _pick(_bigram_regexes(), text).findall(text):
        if spaced:
            tokens.append(spaced)
        elif len(run) == 1:
            tokens.append(run)
        else:
            tokens.extend(run[i : i + 2] for i in range(len(run) - 1))
    return tokens


def _utf16_length(token: str) -> int:
    return len(token) + sum(1 for c in token if ord(c) > 0xFFFF)


_TOKENIZERS = {"words": word_tokens, "bigrams": bigram_tokens}
_STEMMERS = threading.local()  # PyStemmer objects are not thread-safe: one per thread


def _stemmer(algorithm: str) -> Stemmer.Stemmer:
    cache = _STEMMERS.__dict__
    stemmer = cache.get(algorithm)
    if stemmer is None:
        stemmer = cache[algorithm] = Stemmer.Stemmer(algorithm, STEM_CACHE)
    return stemmer


# Lucene's German2Stemmer is Snowball's German with a longer prelude; PyStemmer 2.2 has
# only German, so german2_prelude does the difference before PyStemmer's german runs.
_GERMAN_VOWELS = frozenset("aeiouyäöü")
_UMLAUT_SPELLINGS = {"ae": "ä", "oe": "ö", "ue": "ü"}
# A ß that German2's prelude leaves alone stays ß in Lucene, but PyStemmer's german would
# make it ss: it travels as this private-use character, which no token holds (not L/M/N).
_KEPT_SHARP_S = "\ue000"


def german2_prelude(word: str) -> str:
    """Rewrite a lowercased word as German2's prelude does, leaving German's prelude to PyStemmer.

    First u and y between vowels become U and Y (consonants to the stemmer; its postlude
    lowercases them). Then, left to right: ae, oe, ue become ä, ö, ü and ß becomes ss,
    except that "qu" skips itself and the two letters after it, and the scan stops where
    fewer than two follow a "qu". Checked against Lucene's German2Stemmer on real and
    random words (tests/test_analyzer_parity.py).
    """
    chars = list(word)
    i = 0
    while i + 2 < len(chars):
        if chars[i] in _GERMAN_VOWELS and chars[i + 1] in "uy" and chars[i + 2] in _GERMAN_VOWELS:
            chars[i + 1] = chars[i + 1].upper()
            i += 2
        else:
            i += 1
    marked = "".join(chars)
    out: list[str] = []
    i = 0
    while i < len(marked):
        pair = marked[i : i + 2]
        if pair in _UMLAUT_SPELLINGS:
            out.append(_UMLAUT_SPELLINGS[pair])
            i += 2
        elif pair == "qu":
            skipped = marked[i : i + 4]  # all of the rest when the scan stops here
            out.append(skipped.replace("ß", _KEPT_SHARP_S))
            i += 4
        elif marked[i] == "ß":
            out.append("ss")
            i += 1
        else:
            out.append(marked[i])
            i += 1
    return "".join(out)


def _german2_stems(stemmer: Stemmer.Stemmer, tokens: list[str]) -> list[str]:
    # Words without ae, oe, ue or q come out of both preludes alike (most words): only the others are rewritten.
    rewritten = [i for i, t in enumerate(tokens) if "ae" in t or "oe" in t or "ue" in t or "q" in t]
    if not rewritten:
        return stemmer.stemWords(tokens)
    prepared = list(tokens)
    for i in rewritten:
        prepared[i] = german2_prelude(tokens[i])
    stems = stemmer.stemWords(prepared)
    for i in rewritten:
        if _KEPT_SHARP_S in stems[i]:
            stems[i] = stems[i].replace(_KEPT_SHARP_S, "ß")
    return stems


def stem_words(algorithm: str, es_language: str, tokens: list[str]) -> list[str]:
    """Stems of tokens as Lucene's Snowball ``es_language`` gives them, using PyStemmer's ``algorithm``."""
    stemmer = _stemmer(algorithm)
    if es_language == "German2":
        return _german2_stems(stemmer, tokens)
    return stemmer.stemWords(tokens)


@dataclass(frozen=True)
class Analyzer:
    """A callable ``text -> tokens``; ``spec`` is its Elasticsearch twin.

    ``name`` names the chain (``english``, ``plain``, ``bigram``), not a language:
    several languages may share one.
    """

    name: str
    tokenizer: str = "words"
    stopwords: tuple[str, ...] = ()
    stemmer: str | None = None  # PyStemmer algorithm (of the pinned PyStemmer 2.2.0.3)
    es_stemmer: str | None = None  # Elasticsearch ``snowball`` filter language (Lucene's <language>Stemmer)
    _stopset: frozenset[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.tokenizer not in _TOKENIZERS:
            raise ValueError(f"unknown tokenizer {self.tokenizer!r}; choose from {sorted(_TOKENIZERS)}")
        if (self.stemmer is None) != (self.es_stemmer is None):
            raise ValueError("a stemmer needs both its PyStemmer and its Elasticsearch name")
        object.__setattr__(self, "_stopset", frozenset(self.stopwords))

    def __call__(self, text: str) -> list[str]:
        tokens = _TOKENIZERS[self.tokenizer](lucene_lowercase(text))
        if tokens and max(map(len, tokens)) > MAX_TOKEN_UTF16 // 2:
            tokens = [t for t in tokens if _utf16_length(t) <= MAX_TOKEN_UTF16]
        if self._stopset:
            stop = self._stopset
            tokens = [t for t in tokens if t not in stop]
        if self.stemmer is not None and self.es_stemmer is not None and tokens:
            tokens = stem_words(self.stemmer, self.es_stemmer, tokens)
        return tokens

    def raw_tokens_many(self, texts: Sequence[str]) -> tuple[list[str], str]:
        """The tokens of many texts before the per-token filters, flat, each text's followed by a separator; and the separator.

        The two steps of ``__call__`` that depend on a token's neighbours (lowercasing,
        which is per code point, and tokenizing) done for all texts at once: for the
        ``words`` tokenizer one lowercasing and one regex pass over the texts joined by
        the separator (a separator found inside a text makes it try the next, and the
        last resort is one pass a text). ``normalize_tokens`` does the rest, token by
        token: ``[t for t in normalize_tokens(raw) if t is not None]`` is ``self(text)``.
        """
        if not texts:
            return [], SEPARATORS[0]
        if self.tokenizer == "words":
            for separator in SEPARATORS:
                joined = separator.join(texts)
                if joined.count(separator) == len(texts) - 1:
                    lowered = lucene_lowercase(joined)
                    tokens = _pick(_word_regexes_with(separator), lowered).findall(lowered)
                    tokens.append(separator)
                    return tokens, separator
        separator = SEPARATORS[0]
        tokenize = _TOKENIZERS[self.tokenizer]
        tokens = []
        for text in texts:
            tokens += tokenize(lucene_lowercase(text))
            tokens.append(separator)
        return tokens, separator

    def normalize_tokens(self, tokens: Sequence[str]) -> list[str | None]:
        """Each raw token (``raw_tokens_many``) as ``__call__`` leaves it: its stem, or None when the length or stop filter drops it.

        These filters look at one token alone, so a token's result is the same in any
        text: callers may keep it (a cache keyed by the token).
        """
        kept = [t for t in tokens if _utf16_length(t) <= MAX_TOKEN_UTF16 and t not in self._stopset]
        if self.stemmer is not None and self.es_stemmer is not None and kept:
            stems = dict(zip(kept, stem_words(self.stemmer, self.es_stemmer, kept)))
        else:
            stems = dict(zip(kept, kept))
        return [stems.get(t) for t in tokens]

    @property
    def spec(self) -> dict:
        """The chain in Elasticsearch's vocabulary: ``{"tokenizer": {...}, "filter": [...]}``."""
        if self.tokenizer == "words":
            tokenizer = {"type": "pattern", "pattern": WORD_PATTERN_JAVA, "group": 0}
        else:
            tokenizer = {"type": "pattern", "pattern": BIGRAM_PATTERN_JAVA, "group": 1}
        filters: list[dict] = [{"type": "length", "min": 0, "max": MAX_TOKEN_UTF16}, {"type": "lowercase"}]
        if self.stopwords:
            filters.append({"type": "stop", "stopwords": list(self.stopwords), "ignore_case": False})
        if self.es_stemmer is not None:
            filters.append({"type": "snowball", "language": self.es_stemmer})
        return {"name": self.name, "tokenizer": tokenizer, "filter": filters}


# Chains with a stop list and/or a Snowball stemmer:
# name -> (stop list, PyStemmer algorithm, Elasticsearch snowball language).
# A stemmer is used only where PyStemmer 2.2.0.3 stems as Lucene 9 (ES 8) does
# (see the module docstring: not Estonian, not Yiddish).
_CHAINS: dict[str, tuple[str | None, str | None, str | None]] = {
    "arabic": ("ar", "arabic", "Arabic"),
    "armenian": ("hy", "armenian", "Armenian"),
    "basque": ("eu", "basque", "Basque"),
    "bengali": ("bn", None, None),
    "bulgarian": ("bg", None, None),
    "catalan": ("ca", "catalan", "Catalan"),
    "czech": ("cs", None, None),
    "danish": ("da", "danish", "Danish"),
    "dutch": ("nl", "dutch", "Dutch"),  # the original Snowball Dutch, Lucene's DutchStemmer
    "english": ("en", "english", "English"),
    "estonian": ("et", None, None),  # Lucene's Estonian is in no Python stemmer
    "finnish": ("fi", "finnish", "Finnish"),
    "french": ("fr", "french", "French"),
    "galician": ("gl", None, None),
    "german": ("de", "german", "German2"),  # with german2_prelude
    "greek": ("el", "greek", "Greek"),
    "hindi": ("hi", "hindi", "Hindi"),
    "hungarian": ("hu", "hungarian", "Hungarian"),
    "indonesian": ("id", "indonesian", "Indonesian"),
    "irish": ("ga", "irish", "Irish"),
    "italian": ("it", "italian", "Italian"),
    "latvian": ("lv", None, None),
    "lithuanian": ("lt", "lithuanian", "Lithuanian"),
    "nepali": (None, "nepali", "Nepali"),
    "norwegian": ("no", "norwegian", "Norwegian"),
    "persian": ("fa", None, None),
    "polish": ("pl", None, None),
    "portuguese": ("pt", "portuguese", "Portuguese"),
    "romanian": ("ro", "romanian", "Romanian"),
    "russian": ("ru", "russian", "Russian"),
    "serbian": (None, "serbian", "Serbian"),
    "sorani": ("ckb", None, None),
    "spanish": ("es", "spanish", "Spanish"),
    "swedish": ("sv", "swedish", "Swedish"),
    "tamil": (None, "tamil", "Tamil"),
    "turkish": ("tr", "turkish", "Turkish"),
}

# THE table: which analyzer each language gets. "plain" = words + lowercase only,
# "bigram" = bigrams + lowercase only; other names are the chains above. It covers
# the 139 BI-139 languages (docs/method.md section 11) and a few unspaced others;
# a language missing here gets "plain".
LANGUAGE_ANALYZERS: dict[str, str] = {
    # Snowball stemmer (and the language's Lucene stop list where Lucene has one)
    "ar": "arabic", "ca": "catalan", "da": "danish", "de": "german", "el": "greek", "en": "english",
    "es": "spanish", "eu": "basque", "fi": "finnish", "fr": "french", "ga": "irish",
    "hi": "hindi", "hu": "hungarian", "hy": "armenian", "id": "indonesian", "it": "italian",
    "lt": "lithuanian", "ne": "nepali", "nl": "dutch", "no": "norwegian", "pt": "portuguese",
    "ro": "romanian", "ru": "russian", "sv": "swedish", "ta": "tamil", "tr": "turkish",
    "simple": "english",  # Simple English Wikipedia
    # Serbo-Croatian standards share Serbian's inflection; Snowball's Serbian reads both scripts
    "sr": "serbian", "sh": "serbian", "hr": "serbian", "bs": "serbian",
    # Lucene stop list, no Snowball stemmer in Lucene 9 (Estonian: Lucene's is in no Python package)
    "bg": "bulgarian", "bn": "bengali", "ckb": "sorani", "cs": "czech", "et": "estonian", "fa": "persian",
    "gl": "galician", "lv": "latvian", "pl": "polish",
    # unspaced scripts (and Korean, as Lucene's CJK analyzer does)
    "zh": "bigram", "ja": "bigram", "ko": "bigram", "th": "bigram", "my": "bigram", "wuu": "bigram",
    "lo": "bigram", "km": "bigram", "bo": "bigram", "gan": "bigram", "zh-yue": "bigram", "yue": "bigram",
    "zh-classical": "bigram", "lzh": "bigram",
    # the rest of BI-139: tokenize and lowercase only (Yiddish: Lucene's stemmer is in no Python package)
    **dict.fromkeys(
        """af als am an arz ast az azb ba bar be bpy br bug cdo ce ceb cv cy diq eml eo fo fy gd gu he hsb
        ht ia ilo io is jv ka kk kn ku ky la lb li lmo mai mg mhr min mk ml mn mr mrj ms mzn nap nds new nn
        oc or os pa pms pnb ps qu sa sah scn sco sd si sk sl sq su sw szl te tg tl tt uk ur uz vec vi vo wa
        war xmf yi yo""".split(),
        "plain",
    ),
}


@functools.cache
def analyzer_named(name: str) -> Analyzer:
    """The analyzer of a chain name (``plain``, ``bigram``, ``english``, ...)."""
    if name == "plain":
        return Analyzer("plain")
    if name == "bigram":
        return Analyzer("bigram", tokenizer="bigrams")
    if name not in _CHAINS:
        raise ValueError(f"unknown analyzer {name!r}; choose from {', '.join(analyzer_names())}")
    stop, stemmer, es_stemmer = _CHAINS[name]
    return Analyzer(name, stopwords=STOPWORDS[stop] if stop else (), stemmer=stemmer, es_stemmer=es_stemmer)


def analyzer_names() -> list[str]:
    return ["plain", "bigram", *sorted(_CHAINS)]


def analyzer_for(lang: str) -> Analyzer:
    """The analyzer of a Wikipedia language code; ``plain`` for languages not in the table."""
    return analyzer_named(LANGUAGE_ANALYZERS.get(lang, "plain"))


def plain_analyzer() -> Analyzer:
    """Standard tokenization and lowercasing only."""
    return analyzer_named("plain")
