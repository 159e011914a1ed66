"""Elasticsearch index settings and query bodies that reproduce the embedded engine's analysis and scoring.

One index per language: the analyzer is the embedded analyzer's Elasticsearch twin
(``Analyzer.spec``: a ``pattern`` tokenizer and ``length`` / ``lowercase`` /
``stop`` / ``snowball`` filters), both fields use a BM25 similarity with the
build's k1 and b, ``_source`` is off, and one shard keeps Lucene's statistics
global, as the embedded engine's are. Title queries are ``multi_match`` over
``["title^2", "text"]`` with the configured combination, sent in ``msearch``
batches. No client code here: these are plain dicts, testable without a server.
"""

from __future__ import annotations

from collections.abc import Sequence

from clirmatrix.pipeline.engines.analyzers import analyzer_for
from clirmatrix.pipeline.engines.base import Bm25Settings

ANALYZER = "clirmatrix"
SIMILARITY = "clirmatrix_bm25"


def index_name(lang: str, prefix: str = "clirmatrix") -> str:
    """Index names must be lowercase and may not contain some characters; language codes are safe."""
    return f"{prefix}-{lang.lower()}"


def analysis_settings(lang: str) -> dict:
    """The ``analysis`` block: the language's analyzer under the name ``clirmatrix``."""
    spec = analyzer_for(lang).spec
    filters = {f"{ANALYZER}_{i}_{step['type']}": step for i, step in enumerate(spec["filter"])}
    return {
        "tokenizer": {f"{ANALYZER}_tokenizer": spec["tokenizer"]},
        "filter": filters,
        "analyzer": {ANALYZER: {"type": "custom", "tokenizer": f"{ANALYZER}_tokenizer", "filter": list(filters)}},
    }


def index_body(lang: str, bm25: Bm25Settings = Bm25Settings(), fingerprint: str = "") -> dict:
    """The body of ``PUT /{index}``; ``fingerprint`` (of the indexed documents) goes into ``_meta``."""
    field = {"type": "text", "analyzer": ANALYZER, "similarity": SIMILARITY}
    return {
        "settings": {
            "index": {
                "number_of_shards": 1,  # one shard: collection statistics over all documents, as in the embedded engine
                "number_of_replicas": 0,
                "refresh_interval": "-1",  # refreshed once, after bulk indexing
                "similarity": {SIMILARITY: {"type": "BM25", "k1": bm25.k1, "b": bm25.b}},
            },
            "analysis": analysis_settings(lang),
        },
        "mappings": {
            "_source": {"enabled": False},
            "_meta": {"clirmatrix_lang": lang, "clirmatrix_fingerprint": fingerprint, "clirmatrix_analyzer": analyzer_for(lang).name},
            "properties": {"doc_id": {"type": "keyword"}, "title": field, "text": field},
        },
    }


def query_body(title: str, bm25: Bm25Settings = Bm25Settings(), k: int = 100) -> dict:
    """One title query: ``multi_match`` over ``title^boost`` and ``text``, top ``k``, no source."""
    return {
        "size": k,
        "_source": False,
        "docvalue_fields": ["doc_id"],
        "query": {"multi_match": {"query": title, "fields": [f"title^{bm25.title_boost:g}", "text"], "type": bm25.combine}},
    }


def msearch_lines(index: str, titles: Sequence[str], bm25: Bm25Settings = Bm25Settings(), k: int = 100) -> list[dict]:
    """The header/body pairs of one ``msearch`` batch, in query order."""
    lines: list[dict] = []
    for title in titles:
        lines += [{"index": index}, query_body(title, bm25, k)]
    return lines
