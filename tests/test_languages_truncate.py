import pytest

from clirmatrix.pipeline.method.languages import UnknownWikiError, lang_from_dbname, normalize_title, site_key
from clirmatrix.pipeline.method.truncate import rule_for, truncate


@pytest.mark.parametrize(("lang", "key"), [("en", "enwiki"), ("simple", "simplewiki"), ("zh-min-nan", "zh_min_nanwiki")])
def test_site_key_and_back(lang, key):
    assert site_key(lang) == key
    assert lang_from_dbname(key) == lang


@pytest.mark.parametrize("dbname", ["enwikiquote", "commonswiki", "wikidatawiki", "dewikivoyage"])
def test_sister_projects_are_not_wikipedias(dbname):
    with pytest.raises(UnknownWikiError):
        lang_from_dbname(dbname)


def test_title_normalisation_matches_mediawiki():
    assert normalize_title("foo_bar  baz ", "en") == "Foo bar baz"
    assert normalize_title("istanbul", "tr") == "\u0130stanbul"
    assert normalize_title("istanbul", "en") == "Istanbul"
    assert normalize_title("ßtraße", "de") == "ßtraße"  # no one-letter capital: left as is
    assert normalize_title("e\u0301cole", "fr") == "\u00c9cole"  # NFC first, then the capital


def test_spaced_text_keeps_200_tokens_and_cuts_at_a_sentence_end():
    sentence = " ".join(["word"] * 9) + " end."
    text = " ".join([sentence] * 30)  # 300 tokens, a sentence end every 10 tokens
    out = truncate(text, rule_for(unspaced=False))
    assert out.endswith("end.")
    assert len(out.split()) == 200


def test_spaced_text_without_sentence_end_is_cut_hard_at_the_limit():
    text = " ".join(f"w{i}" for i in range(500))
    out = truncate(text, rule_for(unspaced=False, max_tokens=200))
    assert out.split() == [f"w{i}" for i in range(200)]


def test_last_sentence_end_inside_the_limit_wins():
    text = "One two. Three four five six seven eight nine ten"
    assert truncate(text, rule_for(unspaced=False, max_tokens=6)) == "One two."


def test_decimal_point_is_not_a_sentence_end():
    text = "Pi is 3.14 or so and more words follow here"
    assert truncate(text, rule_for(unspaced=False, max_tokens=5)) == "Pi is 3.14 or so"


def test_short_text_is_unchanged():
    assert truncate("  A short text.  ", rule_for(unspaced=False)) == "A short text."


def test_unspaced_text_keeps_600_characters_up_to_the_last_full_stop():
    text = ("这是一个句子" * 9 + "。") * 20  # 55 characters per sentence
    out = truncate(text, rule_for(unspaced=True))
    assert out.endswith("。") and len(out) <= 600
    assert len(out) == 55 * (600 // 55)


def test_unspaced_text_without_stop_is_cut_at_600():
    assert len(truncate("字" * 1000, rule_for(unspaced=True))) == 600


def test_token_limit_matches_a_regex_over_every_kind_of_whitespace():
    """The split-based token limit equals ``\\s*(?:\\S+\\s*){0,n}``, with Unicode and control spaces."""
    import random
    import re
    import sys

    from clirmatrix.pipeline.method.truncate import _limit_end

    spaces = [chr(c) for c in range(sys.maxunicode + 1) if re.match(r"\s", chr(c))]
    assert "\x1c" in spaces and "\u3000" in spaces and "\xa0" in spaces
    alphabet = spaces + list("ab.。!") + ["\u200b", "\ufeff", "\u180e"]  # zero-width: not spaces
    rng = random.Random(3)
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        limit = rng.randint(0, 12)
        reference = re.compile(rf"\s*(?:\S+\s*){{0,{limit}}}").match(text).end()
        assert _limit_end(text, rule_for(unspaced=False, max_tokens=limit)) == reference, (text, limit)
