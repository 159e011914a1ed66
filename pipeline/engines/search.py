"""Search a JSONL corpus with the embedded engine and write a TREC run file.

The corpus holds one ``{"id", "title", "text"}`` object per line (``.gz`` read by
extension), the queries one ``qid<TAB>text`` per line. The run file has one line
``qid Q0 docid rank score tag`` per hit, ranks from 1, scores ``%.6f``, queries in
input order; it is written under a temporary name and renamed when complete, so
the same inputs always give the same bytes.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import IO

import orjson
from isal import igzip

from clirmatrix.pipeline.engines.analyzers import Analyzer, analyzer_for, analyzer_named
from clirmatrix.pipeline.engines.base import Bm25Settings, DocBatch
from clirmatrix.pipeline.engines.embedded import EmbeddedEngine
from clirmatrix.pipeline.errors import InvalidInputError
from clirmatrix.pipeline.io.localio import atomic_write

BATCH_DOCS = 10_000
BATCH_QUERIES = 10_000


class BadInputError(InvalidInputError):
    """A corpus or query line that cannot be read; the message names the file and line."""


def _open(path: str) -> IO[bytes]:
    return igzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb")


def _identifier(value: object) -> str | None:
    """A document or query id as text, or None when it cannot be one (TREC splits on spaces)."""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        return None
    text = str(value)
    return text if text and not any(c.isspace() for c in text) else None


def read_corpus(path: str, batch_size: int = BATCH_DOCS) -> Iterator[DocBatch]:
    """``(ids, titles, texts)`` batches of a JSONL corpus; blank lines are skipped."""
    seen: set[str] = set()
    ids: list[str] = []
    titles: list[str] = []
    texts: list[str] = []
    with _open(path) as stream:
        for number, line in enumerate(stream, 1):
            if not line.strip():
                continue
            try:
                record = orjson.loads(line)
            except orjson.JSONDecodeError as error:
                raise BadInputError(f"{path} line {number}: not JSON: {error}") from None
            if not isinstance(record, dict):
                raise BadInputError(f"{path} line {number}: not a JSON object")
            doc_id = _identifier(record.get("id"))
            if doc_id is None:
                raise BadInputError(f"{path} line {number}: 'id' must be a non-empty string or integer without spaces")
            if doc_id in seen:
                raise BadInputError(f"{path} line {number}: duplicate id {doc_id!r}")
            title, text = record.get("title"), record.get("text")
            if not isinstance(title, str) or not isinstance(text, str):
                raise BadInputError(f"{path} line {number}: 'title' and 'text' must both be strings")
            seen.add(doc_id)
            ids.append(doc_id)
            titles.append(title)
            texts.append(text)
            if len(ids) == batch_size:
                yield ids, titles, texts
                ids, titles, texts = [], [], []
    if ids:
        yield ids, titles, texts


def read_queries(path: str) -> list[tuple[str, str]]:
    """``(qid, text)`` pairs of a ``qid<TAB>text`` file, in file order."""
    queries: list[tuple[str, str]] = []
    seen: set[str] = set()
    with _open(path) as stream:
        for number, raw in enumerate(stream, 1):
            try:
                line = raw.decode("utf-8").rstrip("\r\n")
            except UnicodeDecodeError as error:
                raise BadInputError(f"{path} line {number}: not UTF-8: {error}") from None
            if not line.strip():
                continue
            qid, tab, text = line.partition("\t")
            if not tab:
                raise BadInputError(f"{path} line {number}: expected 'qid<TAB>text'")
            if _identifier(qid) is None:
                raise BadInputError(f"{path} line {number}: empty query id or one with spaces: {qid!r}")
            if qid in seen:
                raise BadInputError(f"{path} line {number}: duplicate query id {qid!r}")
            seen.add(qid)
            queries.append((qid, text))
    return queries


def resolve_analyzer(lang: str | None, analyzer: str | None) -> Analyzer:
    """``analyzer`` by name when given (``plain``, ``bigram``, ``english``, ...), else the language's."""
    if analyzer is not None:
        return analyzer_named(analyzer)
    if lang is not None:
        return analyzer_for(lang)
    raise ValueError("give a language or an analyzer")


def run_search(
    corpus_path: str,
    queries_path: str,
    output_path: str,
    lang: str | None = None,
    analyzer: str | None = None,
    k: int = 100,
    tag: str = "clirmatrix",
    settings: Bm25Settings = Bm25Settings(),
    threads: int = 1,
) -> dict:
    """Index the corpus, search every query, write the TREC run; returns what it counted."""
    if _identifier(tag) is None:
        raise InvalidInputError(f"the run tag must be one word: {tag!r}")
    chosen = resolve_analyzer(lang, analyzer)
    queries = read_queries(queries_path)
    engine = EmbeddedEngine(chosen, settings, threads=threads)
    engine.index(read_corpus(corpus_path))
    lines = without_hits = 0
    with atomic_write(output_path) as out:
        for start in range(0, len(queries), BATCH_QUERIES):
            batch = queries[start : start + BATCH_QUERIES]
            for (qid, _), hits in zip(batch, engine.search([text for _, text in batch], k)):
                without_hits += len(hits.positions) == 0
                out.write(
                    "".join(
                        f"{qid} Q0 {engine.doc_ids[position]} {rank} {score:.6f} {tag}\n"
                        for rank, (position, score) in enumerate(zip(hits.positions.tolist(), hits.scores.tolist()), 1)
                    ).encode()
                )
                lines += len(hits.positions)
    return {
        "analyzer": chosen.name,
        "docs": len(engine.doc_ids),
        "queries": len(queries),
        "queries_without_hits": without_hits,
        "lines": lines,
    }
