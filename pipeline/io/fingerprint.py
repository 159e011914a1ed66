"""Short stable hashes of settings and inputs: stage records, reused indexes, cached files."""

from __future__ import annotations

import hashlib

import orjson


def fingerprint(*parts: object) -> str:
    """A short stable hash of JSON-serialisable parts (dict keys sorted)."""
    return hashlib.sha256(orjson.dumps(parts, option=orjson.OPT_SORT_KEYS)).hexdigest()[:24]
