"""Where a build keeps its intermediate files, and a language's documents by position.

A document's *position* is its row number in the language's ``docs`` Parquet
files read in order (file name, then row): the order of the dump, of the search
index and of the language's ``catalog`` (page id, entity and title by position).
Every stage after linking addresses documents and queries by position, and reads
only the range of positions its unit of work covers.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from clirmatrix.pipeline.io import fileio
from clirmatrix.pipeline.io.parquet_io import iter_row_range, read_row_range, read_table
from clirmatrix.schemas import CATALOG, DOCS

NO_ENTITY = -1  # an unlinked document's entity in numeric columns


PAGE_PROPS_FOLDER = "_page_props"  # inside the sitelinks stage: {PAGE_PROPS_FOLDER}/{lang}/*.parquet


class Folders:
    """The folders of ``WORK``, one a stage (and ``catalog``, the linking stage's second output): their one spelling."""

    docs = "docs"  # extract_docs
    sitelinks = "sitelinks"  # extract_sitelinks
    entity_docs = "entity_docs"  # link_entities
    catalog = "catalog"  # link_entities
    retrieval = "retrieval"  # retrieve
    labels = "labels"  # label
    propagated = "propagated"  # propagate
    release = "release"  # write_release: its reports and scratch (the files themselves go to OUT)


@dataclass(frozen=True)
class WorkDirs:
    """The layout of a build's work folder: one place names every intermediate file."""

    root: str

    def stage(self, name: str) -> str:
        return fileio.join(self.root, name)

    def docs_files(self, lang: str) -> list[str]:
        return fileio.list_files(fileio.join(self.stage(Folders.docs), lang, "*.parquet"))

    def page_props_dir(self, lang: str) -> str:
        """A language's page_props entities, beside the sitelinks (never matched by ``sitelinks/{lang}/*.parquet``)."""
        return fileio.join(self.stage(Folders.sitelinks), PAGE_PROPS_FOLDER, lang)

    def entity_docs_file(self, lang: str) -> str:
        return fileio.join(self.stage(Folders.entity_docs), f"{lang}.parquet")

    def catalog_file(self, lang: str) -> str:
        return fileio.join(self.stage(Folders.catalog), f"{lang}.parquet")

    def shard_terms_file(self, lang: str, partition: int, shard: int) -> str:
        return fileio.join(self.stage(Folders.retrieval), "_terms", lang, f"{partition:05d}-{shard:05d}.parquet")

    def term_counts_file(self, lang: str, partition: int) -> str:
        return fileio.join(self.stage(Folders.retrieval), "_dfs", lang, f"{partition:05d}.parquet")

    def shard_index_dir(self, lang: str, shard: int) -> str:
        return fileio.join(self.stage(Folders.retrieval), "_index", lang, f"{shard:05d}")

    def shard_hits_file(self, lang: str, block: int, shard: int) -> str:
        return fileio.join(self.stage(Folders.retrieval), "_shards", lang, f"{block:05d}-{shard:05d}.parquet")

    def retrieval_file(self, lang: str, block: int) -> str:
        return fileio.join(self.stage(Folders.retrieval), lang, f"{block:05d}.parquet")

    def labels_file(self, lang: str, block: int) -> str:
        return fileio.join(self.stage(Folders.labels), lang, f"{block:05d}.parquet")

    def doc_links_file(self, src: str, tgt: str) -> str:
        return fileio.join(self.stage(Folders.propagated), "_links", src, f"{tgt}.parquet")

    def propagated_file(self, src: str, tgt: str, block: int) -> str:
        return fileio.join(self.stage(Folders.propagated), src, tgt, f"{block:05d}.parquet")

    def query_splits_file(self, lang: str) -> str:
        return fileio.join(self.stage(Folders.release), "_splits", f"{lang}.parquet")

    def eval_picks_file(self, src: str) -> str:
        return fileio.join(self.stage(Folders.release), "_eval", f"{src}.parquet")

    def eval_keys_file(self) -> str:
        return fileio.join(self.stage(Folders.release), "_eval", "keys.npy")

    def multi8_eval_file(self) -> str:
        return fileio.join(self.stage(Folders.release), "_multi8", "eval.parquet")

    def multi8_queries_file(self) -> str:
        return fileio.join(self.stage(Folders.release), "_multi8", "queries.parquet")

    def multi8_lists_file(self, tgt: str, block: int) -> str:
        return fileio.join(self.stage(Folders.release), "_multi8", "lists", tgt, f"{block:05d}.parquet")


def read_docs(work: WorkDirs, lang: str, columns: Sequence[str]) -> pa.Table:
    """A few columns of all the language's documents, in position order (for tests and small tools)."""
    return read_table(work.docs_files(lang), DOCS, list(columns))


def iter_docs(work: WorkDirs, lang: str, columns: Sequence[str], start: int = 0, stop: int | None = None, batch_rows: int = 10_000) -> Iterator[pa.RecordBatch]:
    """The documents at positions ``[start, stop)``, a few columns and ``batch_rows`` at a time."""
    return iter_row_range(work.docs_files(lang), columns, start, stop, batch_rows)


def read_catalog(work: WorkDirs, lang: str, columns: Sequence[str], start: int = 0, stop: int | None = None) -> pa.Table:
    """Catalog rows ``[start, stop)`` of a language (page id, entity, title by position)."""
    return read_row_range([work.catalog_file(lang)], CATALOG, columns, start, stop)


def iter_catalog(work: WorkDirs, lang: str, columns: Sequence[str], start: int = 0, stop: int | None = None, batch_rows: int = 10_000) -> Iterator[pa.RecordBatch]:
    return iter_row_range([work.catalog_file(lang)], columns, start, stop, batch_rows)


def catalog_numbers(work: WorkDirs, lang: str, column: str) -> np.ndarray:
    """A numeric catalog column of the whole language as int64 (``entity``: ``NO_ENTITY`` when unlinked).

    Eight bytes a document (52 MB for English): the only per-language arrays a unit
    of work holds.
    """
    table = read_row_range([work.catalog_file(lang)], CATALOG, [column])
    values = table.column(column)
    if values.null_count:
        values = values.fill_null(NO_ENTITY)
    return values.to_numpy().astype(np.int64, copy=False)
