"""Entity links of one language: Wikidata sitelinks matched to documents by title.

docs/method.md section 3. Titles are matched as MediaWiki normalises them
(underscores or spaces, first-letter case). **[ours]** When Wikidata has no
sitelink for a page, the dump's own ``wikibase_item`` links it instead, unless
that entity already has a page in this language; how often the two sources
disagree is counted. Every entity has at most one document per language and
every document at most one entity, so propagation stays one-to-one.

The result is an entity number per document position. ``write_links`` streams the
language twice: titles into match-key partitions (matched one partition at a
time), then ids and titles to write ``catalog`` and ``entity_docs``. Across the
language it holds only numbers, a few tens of bytes a document.
"""

from __future__ import annotations

import contextlib
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, replace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from clirmatrix.pipeline.io import fileio
from clirmatrix.pipeline.io.parquet_io import ParquetSink, iter_row_range, read_table, row_counts
from clirmatrix.pipeline.method.corpus import NO_ENTITY, WorkDirs, iter_docs
from clirmatrix.pipeline.method.dedup import first_rows
from clirmatrix.pipeline.method.languages import normalize_title
from clirmatrix.schemas import CATALOG, ENTITY_DOCS, LINK_SOURCES
from clirmatrix.schemas.contracts import LinkReport

_WIKIDATA, _DUMP = 1, 2  # link source codes by position (0: unlinked); names in LINK_SOURCES
PARTITION_ROWS = 500_000  # pages and sitelinks per partition: what a unit holds as strings at once
# The partition files: a title's match key with the row it came from.
_PAGE_KEYS = pa.schema([pa.field("key", pa.string(), nullable=False), pa.field("row", pa.int64(), nullable=False), pa.field("dump_entity", pa.int64())])
_LINK_KEYS = pa.schema(
    [pa.field("key", pa.string(), nullable=False), pa.field("entity_number", pa.int64(), nullable=False), pa.field("link_row", pa.int64(), nullable=False)]
)


@dataclass
class LinkStats:
    """Counts of one language's linking as they are made; the unit reports them as a ``LinkReport``."""

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
    page_props: int = 0  # pages whose own entity came from the wiki's page_props (their record named none)
    page_props_disagreements: int = 0  # the record names another entity than page_props does (the record is kept)


def entity_numbers(entities: pa.Array | pa.ChunkedArray) -> pa.Array:
    """``Q42`` -> 42 (nulls stay null)."""
    return pc.cast(pc.utf8_slice_codeunits(entities, 1), pa.int64())


def entity_names(numbers: np.ndarray) -> pa.Array:
    """42 -> ``Q42``: the inverse of ``entity_numbers``."""
    return pc.binary_join_element_wise("Q", pc.cast(pa.array(numbers, pa.int64()), pa.string()), "")


def _title_keys(titles: pa.Array, lang: str) -> list[str]:
    return [normalize_title(title, lang) for title in titles.to_pylist()]


def _first_per_key(table: pa.Table, key: str, order: list[str]) -> pa.Table:
    """One row per ``key``: the first by ``order`` (which must end in a unique column)."""
    if table.num_rows == 0:
        return table
    sort_keys = [(key, "ascending")] + [(column, "ascending") for column in order]
    ordered = table.take(pc.sort_indices(table, sort_keys=sort_keys))
    keys = ordered.column(key).combine_chunks()
    starts_group = pc.not_equal(keys.slice(1), keys.slice(0, len(keys) - 1))
    return ordered.filter(pa.concat_arrays([pa.array([True]), starts_group]))


class _Spill:
    """Rows split by a hash of their title key into partition files, so each partition is matched on its own."""

    def __init__(self, folder: str, side: str, schema: pa.Schema, partitions: int) -> None:
        self.paths = [fileio.join(folder, f"{side}-{part:05d}.parquet") for part in range(partitions)]
        self.schema = schema
        self._stack = contextlib.ExitStack()
        self.sinks: list[ParquetSink] = []

    def __enter__(self) -> _Spill:
        self.sinks = [self._stack.enter_context(ParquetSink(path, self.schema)) for path in self.paths]
        return self

    def add(self, keys: list[str], columns: list[pa.Array]) -> None:
        part = np.fromiter((zlib.crc32(key.encode()) for key in keys), dtype=np.int64, count=len(keys)) % len(self.paths)
        table = pa.table([pa.array(keys, pa.string()), *columns], schema=self.schema)
        for number, sink in enumerate(self.sinks):
            sink.add_rows(table.filter(pa.array(part == number)))

    def __exit__(self, *exc) -> bool:
        return self._stack.__exit__(*exc)

    def read(self, part: int) -> pa.Table:
        return read_table([self.paths[part]], self.schema)


def link_language(lang: str, docs: Iterable[pa.RecordBatch], sitelinks: Iterable[pa.RecordBatch], spill_dir: str, partitions: int = 1) -> tuple[np.ndarray, np.ndarray, LinkStats]:
    """Match one language's documents to entities.

    Titles are matched exactly, one hash partition of their keys at a time (pages and
    sitelinks with the same key are in the same partition), so a unit holds one
    partition's strings and, for the whole language, only numbers (9 bytes a document
    for the result, a few more while it is computed). The partitions are written to
    ``spill_dir`` first.

    Args:
        docs: batches with ``title`` and ``entity`` (the dump's wikibase_item, nullable), in position order.
        sitelinks: batches with ``entity`` and ``title`` of this language.
    Returns:
        The entity number of each position (``NO_ENTITY`` when unlinked), the link
        source of each position (0 none, 1 Wikidata, 2 the dump), and the counts.
    """
    with _Spill(spill_dir, "pages", _PAGE_KEYS, partitions) as pages, _Spill(spill_dir, "links", _LINK_KEYS, partitions) as links:
        n = 0
        for batch in docs:
            pages.add(_title_keys(batch.column("title"), lang), [pa.array(np.arange(n, n + batch.num_rows, dtype=np.int64)), entity_numbers(batch.column("entity"))])
            n += batch.num_rows
        n_links = 0
        for batch in sitelinks:
            rows = pa.array(np.arange(n_links, n_links + batch.num_rows, dtype=np.int64))
            links.add(_title_keys(batch.column("title"), lang), [entity_numbers(batch.column("entity")), rows])
            n_links += batch.num_rows
    stats = LinkStats(lang, docs=n, sitelinks=n_links)

    # Wikidata allows one page per entity and site and one entity per page; should a dump break
    # that, the smallest entity number and the first title win: first per title (within a
    # partition), then first per entity (across partitions, in numbers).
    kept_entity, kept_row = [], []
    for part in range(partitions):
        found = _first_per_key(links.read(part), "key", ["entity_number", "link_row"])
        kept_entity.append(found.column("entity_number").to_numpy())
        kept_row.append(found.column("link_row").to_numpy().astype(np.int32))
    link_entities, link_rows = np.concatenate(kept_entity or [np.zeros(0, np.int64)]), np.concatenate(kept_row or [np.zeros(0, np.int32)])
    surviving = np.sort(link_rows[first_rows(link_entities, link_rows)])
    del kept_entity, kept_row, link_entities, link_rows

    entity = np.full(n, NO_ENTITY, dtype=np.int64)
    source = np.zeros(n, dtype=np.int8)
    unmatched_rows, unmatched_named = [], []  # pages Wikidata did not link that name an entity themselves: few
    for part in range(partitions):
        part_pages = pages.read(part)
        unique_pages = _first_per_key(part_pages, "key", ["row"])
        stats.duplicate_titles += part_pages.num_rows - unique_pages.num_rows
        del part_pages
        part_links = links.read(part)  # the rows that survived both rules above: at most one a key
        part_links = part_links.filter(pa.array(np.isin(part_links.column("link_row").to_numpy(), surviving)))
        matched = unique_pages.join(part_links, keys="key", join_type="inner", use_threads=False)
        rows = matched.column("row").to_numpy()
        entity[rows] = matched.column("entity_number").to_numpy()
        source[rows] = _WIKIDATA
        stats.linked_wikidata += len(rows)
        stats.disagreements += int(pc.sum(pc.not_equal(matched.column("dump_entity"), matched.column("entity_number")).fill_null(False)).as_py() or 0)
        named = unique_pages.filter(pc.is_valid(unique_pages.column("dump_entity")))
        rows = named.column("row").to_numpy()
        free = source[rows] == 0
        unmatched_rows.append(rows[free])
        unmatched_named.append(named.column("dump_entity").to_numpy()[free])
    stats.sitelinks_without_doc = stats.sitelinks - stats.linked_wikidata

    # Fallback: pages Wikidata did not link, with an entity of their own that has no page here
    # yet; among pages naming the same entity the first in dump order wins.
    empty = np.zeros(0, np.int64)
    rows, named = np.concatenate(unmatched_rows or [empty]), np.concatenate(unmatched_named or [empty])
    usable = ~np.isin(named, entity[source == _WIKIDATA])
    first = first_rows(named[usable], rows[usable])
    fallback_rows, fallback_entities = rows[usable][first], named[usable][first]
    stats.dump_links_conflicting = len(rows) - len(fallback_rows)
    entity[fallback_rows] = fallback_entities
    source[fallback_rows] = _DUMP
    stats.linked_dump = len(fallback_rows)
    stats.unlinked = n - stats.duplicate_titles - stats.linked_wikidata - stats.linked_dump
    return entity, source, stats


class PageEntities:
    """A wiki's page_props entities as two sorted number arrays (16 bytes a page), looked up by page id."""

    def __init__(self, batches: Iterable[pa.RecordBatch]) -> None:
        ids, entities = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)]
        for batch in batches:
            ids.append(pc.cast(batch.column("doc_id"), pa.int64()).to_numpy())
            entities.append(entity_numbers(batch.column("entity")).to_numpy())
        page_ids, numbers = np.concatenate(ids), np.concatenate(entities)
        first = first_rows(page_ids)  # a page listed twice: its first row; in page id order, as searchsorted needs
        self.page_ids, self.entities = page_ids[first], numbers[first]

    def fill(self, batches: Iterable[pa.RecordBatch], stats: LinkStats) -> Iterator[pa.RecordBatch]:
        """The batches with ``entity`` taken from page_props where the record named none; counts both cases."""
        for batch in batches:
            found = np.zeros(batch.num_rows, dtype=bool)
            numbers = np.full(batch.num_rows, NO_ENTITY, dtype=np.int64)
            if len(self.page_ids):
                ids = pc.cast(batch.column("doc_id"), pa.int64()).to_numpy()
                where = np.minimum(np.searchsorted(self.page_ids, ids), len(self.page_ids) - 1)
                found = self.page_ids[where] == ids
                numbers = np.where(found, self.entities[where], NO_ENTITY)
            own = entity_numbers(batch.column("entity"))
            has_own = pc.is_valid(own).to_numpy(zero_copy_only=False)
            stats.page_props_disagreements += int(np.sum(has_own & found & (own.fill_null(NO_ENTITY).to_numpy() != numbers)))
            take = found & ~has_own
            stats.page_props += int(take.sum())
            if take.any():
                entity = pc.if_else(pa.array(take), entity_names(numbers), batch.column("entity"))
                batch = batch.set_column(batch.schema.get_field_index("entity"), "entity", entity)
            yield batch


def write_links(work_root: str, lang: str, page_props_dir: str | None = None) -> LinkReport:
    """One language's unit: link it, then write ``catalog/{lang}.parquet`` and ``entity_docs/{lang}.parquet``.

    ``page_props_dir`` holds the language's page_props entities when the build read them.
    """
    work = WorkDirs(work_root)
    sitelink_files = fileio.list_files(fileio.join(work.stage("sitelinks"), lang, "*.parquet"))
    partitions = max(1, -(-(sum(row_counts(work.docs_files(lang))) + sum(row_counts(sitelink_files))) // PARTITION_ROWS))
    spill_dir = fileio.join(work.stage("entity_docs"), "_keys", lang)
    stats = LinkStats(lang)
    docs = iter_docs(work, lang, ["doc_id", "title", "entity"])
    props_files = fileio.list_files(fileio.join(page_props_dir, "*.parquet")) if page_props_dir else []
    if props_files:
        docs = PageEntities(iter_row_range(props_files, ["doc_id", "entity"])).fill(docs, stats)
    entity, source, link_stats = link_language(lang, docs, iter_row_range(sitelink_files, ["entity", "title"]), spill_dir, partitions)
    stats = replace(link_stats, page_props=stats.page_props, page_props_disagreements=stats.page_props_disagreements)
    fileio.remove_tree(spill_dir)
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
                names = entity_names(numbers[linked])
                sources = pa.array(np.array(LINK_SOURCES)[source[position:stop][linked] - 1].tolist(), pa.string())
                entity_docs.add_rows(
                    pa.table(
                        [names, pa.repeat(pa.scalar(lang), len(where)), batch.column("doc_id").take(where), batch.column("title").take(where), sources],
                        schema=ENTITY_DOCS,
                    )
                )
            position = stop
    return LinkReport(**asdict(stats))
