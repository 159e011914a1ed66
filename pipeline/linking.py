"""Entity links of one language: Wikidata sitelinks matched to documents by title.

PIPELINE.md section 3. Titles are matched as MediaWiki normalises them
(underscores or spaces, first-letter case). **[ours]** When Wikidata has no
sitelink for a page, the dump's own ``wikibase_item`` links it instead, unless
that entity already has a page in this language; how often the two sources
disagree is counted. Every entity has at most one document per language and
every document at most one entity, so propagation stays one-to-one.

The result is an entity number per document position. ``write_links`` streams the
language twice (titles to match, then ids and titles to write ``catalog`` and
``entity_docs``); what it holds in between is the titles' match keys as Arrow
strings and a few numbers a document, never Python objects per document.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from clirmatrix.pipeline import fileio
from clirmatrix.pipeline.corpus import NO_ENTITY, WorkDirs, iter_docs
from clirmatrix.pipeline.languages import normalize_title
from clirmatrix.pipeline.parquet_io import ParquetSink, iter_row_range
from clirmatrix.schemas import CATALOG, ENTITY_DOCS, LINK_SOURCES

_WIKIDATA, _DUMP = 1, 2  # link source codes by position (0: unlinked); names in LINK_SOURCES


@dataclass
class LinkStats:
    """Counts of one language's linking, for the job summary."""

    lang: str
    docs: int = 0
    sitelinks: int = 0
    linked_wikidata: int = 0
    linked_dump: int = 0
    unlinked: int = 0
    disagreements: int = 0  # Wikidata linked the page to another entity than the dump names
    sitelinks_without_doc: int = 0  # e.g. sitelinks to redirects, or pages newer than the dump
    dump_links_conflicting: int = 0  # dump entity already has another page here; not used
    duplicate_titles: int = 0

    def to_dict(self) -> dict:
        return asdict(self)


def entity_numbers(entities: pa.Array | pa.ChunkedArray) -> pa.Array:
    """``Q42`` -> 42 (nulls stay null)."""
    return pc.cast(pc.utf8_slice_codeunits(entities, 1), pa.int64())


def _title_keys(titles: pa.Array, lang: str) -> pa.Array:
    return pa.array([normalize_title(title, lang) for title in titles.to_pylist()], pa.string())


def _first_per_key(table: pa.Table, key: str, order: list[str]) -> pa.Table:
    """One row per ``key``: the first by ``order`` (which must end in a unique column)."""
    if table.num_rows == 0:
        return table
    sort_keys = [(key, "ascending")] + [(column, "ascending") for column in order]
    ordered = table.take(pc.sort_indices(table, sort_keys=sort_keys))
    keys = ordered.column(key).combine_chunks()
    starts_group = pc.not_equal(keys.slice(1), keys.slice(0, len(keys) - 1))
    return ordered.filter(pa.concat_arrays([pa.array([True]), starts_group]))


def _pages(lang: str, docs: Iterable[pa.RecordBatch]) -> pa.Table:
    """key, dump entity number and position of every document (batches of ``title``, ``entity``)."""
    keys, dump = [], []
    for batch in docs:
        keys.append(_title_keys(batch.column("title"), lang))
        dump.append(entity_numbers(batch.column("entity")))
    key = pa.chunked_array(keys, pa.string())
    return pa.table({"key": key, "dump_entity": pa.chunked_array(dump, pa.int64()), "row": pa.array(np.arange(len(key), dtype=np.int64))})


def _sitelinks(lang: str, sitelinks: Iterable[pa.RecordBatch]) -> pa.Table:
    keys, numbers = [], []
    for batch in sitelinks:
        keys.append(_title_keys(batch.column("title"), lang))
        numbers.append(entity_numbers(batch.column("entity")))
    key = pa.chunked_array(keys, pa.string())
    return pa.table({"key": key, "entity_number": pa.chunked_array(numbers, pa.int64()), "link_row": pa.array(np.arange(len(key), dtype=np.int64))})


def link_language(lang: str, docs: Iterable[pa.RecordBatch], sitelinks: Iterable[pa.RecordBatch]) -> tuple[np.ndarray, np.ndarray, LinkStats]:
    """Match one language's documents to entities.

    Args:
        docs: batches with ``title`` and ``entity`` (the dump's wikibase_item, nullable), in position order.
        sitelinks: batches with ``entity`` and ``title`` of this language.
    Returns:
        The entity number of each position (``NO_ENTITY`` when unlinked), the link
        source of each position (0 none, 1 Wikidata, 2 the dump), and the counts.
    """
    pages = _pages(lang, docs)
    links = _sitelinks(lang, sitelinks)
    n = pages.num_rows
    stats = LinkStats(lang, docs=n, sitelinks=links.num_rows)
    unique_pages = _first_per_key(pages, "key", ["row"])
    stats.duplicate_titles = n - unique_pages.num_rows
    # Wikidata allows one page per entity and site and one entity per page; should a
    # dump break that, the smallest entity number and the first title win.
    links = _first_per_key(_first_per_key(links, "key", ["entity_number", "link_row"]), "entity_number", ["link_row"])

    matched = unique_pages.join(links, keys="key", join_type="inner", use_threads=False)
    matched_row = matched.column("row").to_numpy()
    matched_entity = matched.column("entity_number").to_numpy()
    stats.linked_wikidata = len(matched_row)
    stats.sitelinks_without_doc = stats.sitelinks - len(matched_row)
    dump_of_matched = matched.column("dump_entity")
    stats.disagreements = int(pc.sum(pc.not_equal(dump_of_matched, matched.column("entity_number")).fill_null(False)).as_py() or 0)

    entity = np.full(n, NO_ENTITY, dtype=np.int64)
    source = np.zeros(n, dtype=np.int8)
    entity[matched_row] = matched_entity
    source[matched_row] = _WIKIDATA

    # Fallback: pages Wikidata did not link, with an entity of their own that has no page here
    # yet; among pages naming the same entity the first in dump order wins.
    candidates = unique_pages.filter(pc.is_valid(unique_pages.column("dump_entity")))
    rows = candidates.column("row").to_numpy()
    named = candidates.column("dump_entity").to_numpy()
    by_row = np.argsort(rows, kind="stable")
    rows, named = rows[by_row], named[by_row]
    free = source[rows] == 0
    rows, named = rows[free], named[free]
    usable = ~np.isin(named, matched_entity)
    _, first = np.unique(named[usable], return_index=True)
    chosen = np.zeros(int(usable.sum()), dtype=bool)
    chosen[first] = True
    fallback_rows, fallback_entities = rows[usable][chosen], named[usable][chosen]
    stats.dump_links_conflicting = len(rows) - len(fallback_rows)
    entity[fallback_rows] = fallback_entities
    source[fallback_rows] = _DUMP
    stats.linked_dump = len(fallback_rows)
    stats.unlinked = n - stats.duplicate_titles - stats.linked_wikidata - stats.linked_dump
    return entity, source, stats


def write_links(work_root: str, lang: str) -> dict:
    """One language's unit: link it, then write ``catalog/{lang}.parquet`` and ``entity_docs/{lang}.parquet``."""
    work = WorkDirs(work_root)
    sitelinks = iter_row_range(fileio.list_files(fileio.join(work.stage("sitelinks"), lang, "*.parquet")), ["entity", "title"])
    entity, source, stats = link_language(lang, iter_docs(work, lang, ["title", "entity"]), sitelinks)
    position = 0
    with ParquetSink(work.catalog_file(lang), CATALOG) as catalog, ParquetSink(work.entity_docs_file(lang), ENTITY_DOCS) as entity_docs:
        for batch in iter_docs(work, lang, ["doc_id", "title"]):
            stop = position + batch.num_rows
            numbers = entity[position:stop]
            linked = numbers != NO_ENTITY
            page_ids = pc.cast(batch.column("doc_id"), pa.int64())
            catalog.add_rows(pa.table([page_ids, pa.array(numbers, pa.int64(), mask=~linked), batch.column("title")], schema=CATALOG))
            if linked.any():
                where = pa.array(np.flatnonzero(linked))
                names = pc.binary_join_element_wise("Q", pc.cast(pa.array(numbers[linked]), pa.string()), "")
                sources = pa.array(np.array(LINK_SOURCES)[source[position:stop][linked] - 1].tolist(), pa.string())
                entity_docs.add_rows(
                    pa.table(
                        [names, pa.repeat(pa.scalar(lang), len(where)), batch.column("doc_id").take(where), batch.column("title").take(where), sources],
                        schema=ENTITY_DOCS,
                    )
                )
            position = stop
    return stats.to_dict()
