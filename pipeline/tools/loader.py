"""Read a downloaded or built CLIRMatrix split lazily, as ir_datasets does.

    >>> split = QuerySplit("out/", "bi139-base", "en", "de", "test1")
    >>> next(split.queries())            # Query(src_id='690', src_query='Aruba')
    >>> next(split.qrels())              # Qrel(src_id='690', doc_id='14013', label=6)
    >>> next(documents("out/", "de"))    # ('12', 'Alan Smithee steht als ...')

Ids stay strings, blank lines are skipped, nothing is read before it is asked for.
``write_trec_qrels`` and ``write_trec_run`` export a split for trec_eval or
ir-measures (the run ranks each query's candidates in file order).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

from clirmatrix.pipeline.errors import MissingInputError
from clirmatrix.pipeline.io.localio import atomic_write
from clirmatrix.pipeline.output import layout
from clirmatrix.pipeline.output.jsonl import iter_docs, iter_queries


class Query(NamedTuple):
    """A query of a split: the source article's page id and its title (ids stay strings, as released)."""

    src_id: str
    src_query: str


class Qrel(NamedTuple):
    """A judged document of a query: 6 is the query's own article, 5-1 the Jenks classes, 0 a base file's filler."""

    src_id: str
    doc_id: str
    label: int


class QuerySplit:
    """One direction and split of a query set: ``bi139-base``, ``bi139-full`` or ``multi8``."""

    def __init__(self, root: str | os.PathLike, dataset: str, src: str, tgt: str, split: str) -> None:
        layout.refuse_incomplete(root)
        self.path = Path(root) / layout.query_file(dataset, src, tgt, split)
        if not self.path.is_file():
            raise MissingInputError(f"{self.path} is not there; fetch it with: clirmatrix download {dataset} --src {src} --tgt {tgt} --split {split}")

    def queries(self) -> Iterator[Query]:
        """The split's queries in file order, read as they are asked for."""
        for record in iter_queries(self.path):
            yield Query(record.src_id, record.src_query)

    def qrels(self) -> Iterator[Qrel]:
        """Every (query, document, label) of the split, in file order: a query's documents best first."""
        for record in iter_queries(self.path):
            for doc_id, label in record.tgt_results:
                yield Qrel(record.src_id, doc_id, label)

    def write_trec_qrels(self, path: str | os.PathLike) -> int:
        """``qid 0 docid label`` lines; returns how many."""
        return _write_lines(path, (f"{q.src_id} 0 {q.doc_id} {q.label}\n" for q in self.qrels()))

    def write_trec_run(self, path: str | os.PathLike, tag: str = "clirmatrix") -> int:
        """``qid Q0 docid rank score tag``: each query's candidates in file order (score = -rank)."""

        def lines() -> Iterator[str]:
            for record in iter_queries(self.path):
                for rank, (doc_id, _) in enumerate(record.tgt_results, 1):
                    yield f"{record.src_id} Q0 {doc_id} {rank} {-rank} {tag}\n"

        return _write_lines(path, lines())


def documents(root: str | os.PathLike, lang: str, full: bool = False) -> Iterator[tuple[str, str]]:
    """``(doc_id, text)`` of a language's ``DOCS`` (or ``DOCS-FULL``) file."""
    layout.refuse_incomplete(root)
    path = Path(root) / layout.docs_file("docs-full" if full else "docs", lang)
    if not path.is_file():
        raise MissingInputError(f"{path} is not there; fetch it with: clirmatrix download {'docs-full' if full else 'docs'} --tgt {lang}")
    return iter_docs(path)


def _write_lines(path: str | os.PathLike, lines: Iterator[str]) -> int:
    count = 0
    with atomic_write(path) as out:
        for line in lines:
            out.write(line.encode())
            count += 1
    return count
