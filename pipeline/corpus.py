"""A language's documents by position, as the build stages after extraction see them.

A document's *position* is its row number in the language's ``docs`` Parquet
files read in order (file name, then row): the order of the dump, and the
order of the search index. Ids, titles and entities are Arrow arrays indexed
by position, so propagation and writing are array lookups, not joins.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from clirmatrix.pipeline import fileio
from clirmatrix.pipeline.parquet_io import read_table
from clirmatrix.schemas import DOCS, ENTITY_DOCS


@dataclass(frozen=True)
class WorkDirs:
    """Where the stages of one build keep their intermediate Parquet."""

    root: str

    def stage(self, name: str) -> str:
        return fileio.join(self.root, name)

    def docs_files(self, lang: str) -> list[str]:
        return fileio.list_files(fileio.join(self.stage("docs"), lang, "*.parquet"))

    def entity_docs_file(self, lang: str) -> str:
        return fileio.join(self.stage("entity_docs"), f"{lang}.parquet")


@dataclass(frozen=True)
class Corpus:
    """One language: page id, title and entity (null when unlinked) of every document, by position."""

    lang: str
    doc_ids: pa.Array
    titles: pa.Array
    entities: pa.Array

    def __len__(self) -> int:
        return len(self.doc_ids)


def read_docs(work: WorkDirs, lang: str, columns: Sequence[str]) -> pa.Table:
    """A few columns of the language's documents, in position order (no entities joined)."""
    return read_table(work.docs_files(lang), DOCS, list(columns))


def load_corpus(work: WorkDirs, lang: str, with_titles: bool = True) -> Corpus:
    """Ids (and titles) from ``docs``, entities from ``entity_docs``, aligned by position."""
    docs = read_docs(work, lang, ["doc_id", "title"] if with_titles else ["doc_id"])
    doc_ids = docs.column("doc_id").combine_chunks()
    titles = docs.column("title").combine_chunks() if with_titles else pa.nulls(len(doc_ids), pa.string())
    links = read_table([work.entity_docs_file(lang)], ENTITY_DOCS, ["entity", "doc_id"])
    positions = pc.index_in(links.column("doc_id"), value_set=doc_ids)
    entities = [None] * len(doc_ids)
    for position, entity in zip(positions.to_pylist(), links.column("entity").to_pylist()):
        if position is not None:
            entities[position] = entity
    return Corpus(lang, doc_ids, titles, pa.array(entities, pa.string()))


def iter_doc_batches(work: WorkDirs, lang: str, columns: Sequence[str], batch_rows: int = 10_000) -> Iterator[pa.RecordBatch]:
    """The language's documents in position order, a few columns at a time, never all texts at once."""
    for path in work.docs_files(lang):
        with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as handle:
            yield from pq.ParquetFile(handle).iter_batches(batch_size=batch_rows, columns=list(columns))
