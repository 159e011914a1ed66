"""The compiled truncation of whole columns gives exactly the strings of ``truncate``."""

import random
import sys

import pyarrow as pa
import pytest

from clirmatrix.pipeline.method.truncate import CLOSERS, STOPS_ANYWHERE, STOPS_BEFORE_SPACE, rule_for, truncate
from clirmatrix.pipeline.method.truncate_arrow import truncate_array

SPACES = [chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace()]


def _both(texts, rule):
    return truncate_array(pa.array(texts, pa.string()), rule).to_pylist(), [truncate(text, rule) for text in texts]


def _code_points():
    """Every code point of the BMP (no surrogates) and a sample of the planes above."""
    return [chr(c) for c in range(0x10000) if not 0xD800 <= c <= 0xDFFF] + [chr(c) for c in range(0x10000, sys.maxunicode + 1, 97)]


@pytest.mark.parametrize("unspaced", [False, True])
def test_every_code_point_is_treated_as_truncate_treats_it(unspaced):
    """As separator, as stop, as closer, at the edges: spaces, sentence ends and strip all agree."""
    texts = []
    for c in _code_points():
        texts += [f"a{c} bb cc", f"a{c}b cc dd", f"a.{c} bb cc", f"{c}a bb{c}", f"a{c}"]
    rule = rule_for(unspaced, max_tokens=2, max_chars=3)
    got, expected = _both(texts, rule)
    mismatches = [(text, g, e) for text, g, e in zip(texts, got, expected) if g != e]
    assert not mismatches, mismatches[:5]


def test_random_texts_in_many_scripts_give_the_same_strings():
    alphabet = SPACES + list(STOPS_BEFORE_SPACE + STOPS_ANYWHERE + CLOSERS) + list("ab1é字ßя\u05d0\u0e01") + ["\u200b", "\ufeff", "\U0001f600", "\U00020000"]
    rng = random.Random(11)
    for _ in range(300):
        rule = rule_for(rng.random() < 0.3, max_tokens=rng.randint(0, 12), max_chars=rng.randint(0, 40))
        texts = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 80))) for _ in range(20)]
        got, expected = _both(texts, rule)
        assert got == expected, rule


def test_long_articles_with_the_default_rules():
    rng = random.Random(2)
    words = ["word", "Straße", "слово", "3.14", "end.", "\u201cquoted.\u201d", "кінець!", "x" * 40]
    texts = [" ".join(rng.choice(words) for _ in range(rng.randint(0, 900))) for _ in range(200)]
    texts += ["这是一个句子。" * rng.randint(0, 200) for _ in range(50)]
    for unspaced in (False, True):
        got, expected = _both(texts, rule_for(unspaced))
        assert got == expected


def test_sliced_and_empty_arrays():
    texts = pa.array(["One two. Three four five", "", "  a  ", "x y z. w"], pa.string())
    rule = rule_for(False, max_tokens=3)
    assert truncate_array(texts.slice(1, 3), rule).to_pylist() == ["", "a", "x y z."]
    assert truncate_array(texts.slice(0, 0), rule).to_pylist() == []
    assert truncate_array(pa.array([], pa.string()), rule).to_pylist() == []


def test_nulls_and_other_types_are_refused():
    with pytest.raises(ValueError, match="null"):
        truncate_array(pa.array(["a", None]), rule_for(False))
    with pytest.raises(TypeError, match="large_string"):
        truncate_array(pa.array(["a"], pa.large_string()), rule_for(False))
