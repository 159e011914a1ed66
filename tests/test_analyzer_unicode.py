"""The analyzers read the Unicode version of Elasticsearch's JDK, whatever Python runs them (issue 30, item 8).

Java's ``\\p{L}``, ``\\p{M}``, ``\\p{N}`` (the ``pattern`` tokenizers) and ``Character.toLowerCase``
(the ``lowercase`` filter) use the Unicode data of the JDK that runs Elasticsearch: ES 8.15.3,
the image ``compose.py`` runs, bundles JDK 22, whose Unicode is 15.1. Python 3.11's own
database is Unicode 14, which would drop the 5,052 letters, marks and digits that Unicode 15.0
and 15.1 added (CJK Extensions H and I, Kawi, Nag Mundari, ...); ``analyzers.unicode_database``
is Unicode 15.1 on any Python. Pure-Python checks on known code points here, and every code
point that Unicode 15.1 assigns through Lucene itself (skipped, with the reason, without a JDK
21+, or on a JDK whose Unicode is older than 15.1).
"""

from __future__ import annotations

import re
import unicodedata

import pytest
from conftest import REPO
from support import lucene_jar
from test_analyzer_parity import lucene_tokens

from clirmatrix.pipeline.engines import analyzers as an
from clirmatrix.pipeline.tools.compose import DEFAULT_IMAGE

# The JDK that Elasticsearch 8 minor releases bundle (``bundled_jdk`` in their
# build-tools-internal/version.properties), and the Unicode version of each JDK
# (java.lang.Character's documentation). A newer ES image needs both looked up here.
ES_BUNDLED_JDK = {"8.14": 22, "8.15": 22, "8.18": 24}
JDK_UNICODE = {21: "15.0.0", 22: "15.1.0", 23: "15.1.0", 24: "16.0.0", 25: "16.0.0"}

# (text, plain tokens, bigram tokens) in characters that Unicode 15.0 and 15.1 added
# (Python 3.11's database has none of them), a Unicode 14 capital, and Unicode 16
# characters, which ES 8.15's JDK 22 does not know: separators, as any unassigned code point.
NEW_CHARACTERS = [
    ("\U00011f04\U00011f34\U00011f05 \U00011f50", ["\U00011f04\U00011f34\U00011f05", "\U00011f50"], None),  # Kawi letters, vowel sign, digit
    ("\U0001e4d0\U0001e4ec-\U0001e4f0", ["\U0001e4d0\U0001e4ec", "\U0001e4f0"], None),  # Nag Mundari letter, sign, digit
    # Kaktovik numeral, Cyrillic modifier, Latin small letter, Kannada and Lao (an unspaced script) signs, Khojki, Egyptian, Arabic
    (
        "\U0001d2c0\U0001e030\U0001df25\u0cf3\u0ece\U0001123f\U00013440\U00010efd",
        ["\U0001d2c0\U0001e030\U0001df25\u0cf3\u0ece\U0001123f\U00013440\U00010efd"],
        ["\U0001d2c0\U0001e030\U0001df25\u0cf3", "\u0ece", "\U0001123f\U00013440\U00010efd"],
    ),
    ("\U00031350\U00031351\U0002ebf0 \U0001b132", ["\U00031350\U00031351\U0002ebf0", "\U0001b132"], ["\U00031350\U00031351", "\U00031351\U0002ebf0", "\U0001b132"]),  # CJK Ext. H, I; small kana
    ("\U00010570\U00010571", ["\U00010597\U00010598"], None),  # Vithkuqi capitals (Unicode 14) lowercase
    ("a\ua7cbb\U00010d50c\U00013460d\u1c89e\U000116d0", ["a", "b", "c", "d", "e"], None),  # Unicode 16: not word characters
]


def test_the_unicode_database_is_that_of_elasticsearchs_jdk():
    ucd = an.unicode_database()
    assert ucd.unidata_version == an.UNICODE_VERSION
    minor = re.search(r":(\d+\.\d+)\.\d+$", DEFAULT_IMAGE).group(1)
    assert minor in ES_BUNDLED_JDK, f"look up the JDK that Elasticsearch {minor} bundles and its Unicode version ({DEFAULT_IMAGE})"
    jdk = ES_BUNDLED_JDK[minor]
    assert JDK_UNICODE[jdk] == an.UNICODE_VERSION, f"{DEFAULT_IMAGE} runs JDK {jdk}, Unicode {JDK_UNICODE[jdk]}: set analyzers.UNICODE_VERSION and the unicodedata2 pin"
    assert f'"unicodedata2=={an.UNICODE_VERSION};' in (REPO / "pyproject.toml").read_text()


@pytest.mark.parametrize(("text", "plain", "bigram"), NEW_CHARACTERS)
def test_characters_new_since_unicode_14_are_tokenized_as_lucene_does(text, plain, bigram):
    assert an.analyzer_named("plain")(text) == plain
    assert an.analyzer_named("bigram")(text) == (plain if bigram is None else bigram)


def test_the_word_class_is_unicode_15_1s_letters_marks_and_digits():
    ucd = an.unicode_database()
    words = an.word_ranges()
    assert sum(hi - lo + 1 for lo, hi in words) == 141_007  # L, M and N of Unicode 15.1
    assert all(ucd.category(chr(cp))[0] in "LMN" for lo, hi in words for cp in (lo, hi))
    # Python's own lowercase mapping, corrected, is the JDK's on every word character: the
    # corrections table is 'İ' and 'Σ' on Python 3.11-3.13, and Unicode 14's capitals are right
    if an._version(unicodedata.unidata_version) >= (14,):
        assert all(chr(upper).lower() == chr(lower) for upper, lower in an._LOWERCASE_SINCE_14.items())
    assert an.lowercase_corrections()[0x130] == "i" and an.lowercase_corrections()[0x3A3] == "\u03c3"


def _jdk_unicode() -> str | None:
    release = (lucene_jar.java_home() / "release").read_text(errors="replace")
    major = int(re.search(r'JAVA_VERSION="(\d+)', release).group(1))
    return JDK_UNICODE.get(major, "newer")


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(".")) if text != "newer" else (999,)


def test_every_assigned_code_point_gives_lucenes_tokens():
    """All code points that Unicode 15.1 assigns (but private use), one per token, and the texts above, through Lucene."""
    reason = lucene_jar.available()
    if reason:
        pytest.skip(reason)
    jdk = _jdk_unicode()
    if _version(jdk) < _version(an.UNICODE_VERSION):
        pytest.skip(f"this JDK has Unicode {jdk}, older than the analyzers' {an.UNICODE_VERSION} (Elasticsearch 8.15's JDK 22)")
    ucd = an.unicode_database()
    assigned = [cp for cp in range(0x110000) if ucd.category(chr(cp)) not in ("Cn", "Co", "Cs")]
    chunks = [assigned[i : i + 5000] for i in range(0, len(assigned), 5000)]
    texts = [" ".join(map(chr, chunk)) for chunk in chunks] + [text for text, _, _ in NEW_CHARACTERS[:-1]]
    chains = [an.analyzer_named("plain"), an.analyzer_named("bigram")]
    answers = lucene_tokens(chains, [(text, None) for text in texts])
    for text, answer in zip(texts, answers):
        for chain, theirs in zip(chains, answer):
            ours = chain(text)
            if ours != theirs:
                only_ours = sorted({t for t in ours} - set(theirs))[:10]
                only_theirs = sorted(set(theirs) - set(ours))[:10]
                pytest.fail(f"{chain.name}: tokens only ours {[f'{ord(t[0]):04X}' for t in only_ours]}, only Lucene's {[f'{ord(t[0]):04X}' for t in only_theirs]}")
    assert len(assigned) > 149_000
