"""Document truncation (docs/method.md section 2, dissertation 7.2.2).

Spaced languages keep about the first 200 whitespace-separated tokens, unspaced
ones (zh, ja, th, ...) about the first 600 characters. **[ours]** the cut falls on
the last sentence end inside that limit when there is one, else hard at the limit.

This module is the readable definition, one string at a time; the docs job runs the
same rule over whole Arrow columns in compiled code (``truncate_arrow``), and a test
holds the two to the same output.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

DEFAULT_MAX_TOKENS = 200
DEFAULT_MAX_CHARS = 600

# A sentence ends at terminal punctuation (Latin, Arabic, Devanagari, Armenian,
# Myanmar, Ethiopic, Khmer, Tibetan), optionally followed by closing quotes or
# brackets, then whitespace (a text within the limit is kept whole, so the end of the
# text never needs to count). Full-width CJK stops need no following space.
# The character sets are shared with the compiled twin (``truncate_arrow``).
STOPS_BEFORE_SPACE = ".!?\u2026\u061f\u06d4\u0964\u0965\u0589\u104b\u1362\u17d4\u0f0d"
STOPS_ANYWHERE = "\u3002\uff01\uff1f\uff61"
CLOSERS = "\"'\u201d\u2019\u00bb)]\u300d\u300f\uff09"
_CLOSE = f"[{re.escape(CLOSERS)}]*"
_SENTENCE_END = rf"(?:[{re.escape(STOPS_BEFORE_SPACE)}]{_CLOSE}(?=\s)|[{re.escape(STOPS_ANYWHERE)}]{_CLOSE})"
# Greedy ".*" first: the regex engine backtracks from the end, so one C-level match
# finds the *last* sentence end.
_LAST_SENTENCE_END = re.compile(rf"(?s).*{_SENTENCE_END}")
# Splitting a whole text into sentences (CCP's windows) uses the same stops, runs of them,
# and also at the end of the text.
SENTENCE_SPLIT = re.compile(rf"[{re.escape(STOPS_BEFORE_SPACE)}]+{_CLOSE}(?=\s|$)|[{re.escape(STOPS_ANYWHERE)}]+{_CLOSE}")
_LEADING_SPACE = re.compile(r"\s*")


@dataclass(frozen=True)
class TruncationRule:
    """How long a truncated document may be, in tokens or characters."""

    by_chars: bool
    limit: int


def rule_for(unspaced: bool, max_tokens: int = DEFAULT_MAX_TOKENS, max_chars: int = DEFAULT_MAX_CHARS) -> TruncationRule:
    """The truncation rule of a language: characters when unspaced, else tokens."""
    return TruncationRule(by_chars=True, limit=max_chars) if unspaced else TruncationRule(by_chars=False, limit=max_tokens)


def _limit_end(text: str, rule: TruncationRule) -> int:
    """Offset where the hard limit falls (len(text) when the text is within it)."""
    if rule.by_chars:
        start = _LEADING_SPACE.match(text).end()
        return min(len(text), start + rule.limit)
    # str.split with maxsplit stops after `limit` tokens and leaves the rest whole,
    # starting at token limit + 1 (Python's whitespace: Py_UNICODE_ISSPACE).
    parts = text.split(None, rule.limit)
    return len(text) - len(parts[rule.limit]) if len(parts) > rule.limit else len(text)


def truncate(text: str, rule: TruncationRule) -> str:
    """The truncated text of a document, stripped of surrounding whitespace."""
    end = _limit_end(text, rule)
    if end >= len(text):
        return text.strip()
    # One character past the limit tells whether a stop right at the limit is followed
    # by a space; it is replaced so that it can never be a stop itself.
    window = text[:end] + (" " if text[end].isspace() else "x")
    match = _LAST_SENTENCE_END.match(window)
    return text[: match.end() if match else end].strip()
