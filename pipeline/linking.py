"""Entity links of one language: Wikidata sitelinks matched to documents by title.

PIPELINE.md section 3. Titles are matched as MediaWiki normalises them
(underscores or spaces, first-letter case). **[ours]** When Wikidata has no
sitelink for a page, the dump's own ``wikibase_item`` links it instead, unless
that entity already has a page in this language; how often the two sources
disagree is counted. Every entity has at most one document per language and
every document at most one entity, so propagation stays one-to-one.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from clirmatrix.pipeline.languages import normalize_title
from clirmatrix.schemas import ENTITY_DOCS


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


def _entity_number(entities: pa.Array) -> pa.Array:
    return pc.cast(pc.utf8_slice_codeunits(entities, 1), pa.int64())


def _first_per_key(table: pa.Table, key: str, order: list[str]) -> pa.Table:
    """One row per ``key``: the first by ``order`` (which must end in a unique column)."""
    if table.num_rows == 0:
        return table
    sort_keys = [(key, "ascending")] + [(column, "ascending") for column in order]
    ordered = table.take(pc.sort_indices(table, sort_keys=sort_keys))
    keys = ordered.column(key).combine_chunks()
    starts_group = pc.not_equal(keys.slice(1), keys.slice(0, len(keys) - 1))
    return ordered.filter(pa.concat_arrays([pa.array([True]), starts_group]))


def link_language(lang: str, docs: pa.Table, sitelinks: pa.Table) -> tuple[pa.Table, LinkStats]:
    """Match one language's documents to entities.

    Args:
        docs: columns ``doc_id``, ``title``, ``entity`` (the dump's wikibase_item, nullable).
        sitelinks: columns ``entity``, ``title`` of this language.
    Returns:
        The ``entity_docs`` table (sorted by entity number, then doc id) and its counts.
    """
    stats = LinkStats(lang, docs=docs.num_rows, sitelinks=sitelinks.num_rows)
    doc_keys = pa.array([normalize_title(t, lang) for t in docs.column("title").to_pylist()], pa.string())
    pages = pa.table(
        {
            "key": doc_keys,
            "doc_id": docs.column("doc_id"),
            "title": docs.column("title"),
            "dump_entity": docs.column("entity"),
            "row": pa.array(np.arange(docs.num_rows, dtype=np.int64)),
        }
    )
    unique_pages = _first_per_key(pages, "key", ["row"])
    stats.duplicate_titles = pages.num_rows - unique_pages.num_rows

    link_keys = pa.array([normalize_title(t, lang) for t in sitelinks.column("title").to_pylist()], pa.string())
    links = pa.table(
        {
            "key": link_keys,
            "entity_number": _entity_number(sitelinks.column("entity")),
            "link_row": pa.array(np.arange(sitelinks.num_rows, dtype=np.int64)),
        }
    )
    # Wikidata allows one page per entity and site and one entity per page; should a
    # dump break that, the smallest entity number and the first title win.
    links = _first_per_key(_first_per_key(links, "key", ["entity_number", "link_row"]), "entity_number", ["link_row"])

    matched = unique_pages.join(links, keys="key", join_type="inner", use_threads=False)
    stats.linked_wikidata = matched.num_rows
    stats.sitelinks_without_doc = sitelinks.num_rows - matched.num_rows
    matched_entity = pc.binary_join_element_wise("Q", pc.cast(matched.column("entity_number"), pa.string()), "")
    stats.disagreements = pc.sum(
        pc.and_(pc.is_valid(matched.column("dump_entity")), pc.not_equal(matched.column("dump_entity"), matched_entity)).fill_null(False)
    ).as_py() or 0

    # Fallback: pages Wikidata did not link, with an entity of their own that has no page here yet.
    linked_rows = set(matched.column("row").to_pylist())
    linked_entities = set(matched_entity.to_pylist())
    fallback_rows: list[int] = []
    fallback_entities: list[str] = []
    for row, entity in sorted(zip(unique_pages.column("row").to_pylist(), unique_pages.column("dump_entity").to_pylist())):
        if entity is None or row in linked_rows:
            continue
        if entity in linked_entities:
            stats.dump_links_conflicting += 1
            continue
        linked_entities.add(entity)
        fallback_rows.append(row)
        fallback_entities.append(entity)
    stats.linked_dump = len(fallback_rows)
    stats.unlinked = docs.num_rows - stats.duplicate_titles - stats.linked_wikidata - stats.linked_dump

    fallback = pages.take(pa.array(fallback_rows, pa.int64()))
    table = pa.concat_tables(
        [
            _entity_docs(lang, matched_entity, matched.column("doc_id"), matched.column("title"), "wikidata"),
            _entity_docs(lang, pa.array(fallback_entities, pa.string()), fallback.column("doc_id"), fallback.column("title"), "dump"),
        ]
    )
    order = pc.sort_indices(
        pa.table({"n": _entity_number(table.column("entity")), "d": table.column("doc_id")}),
        sort_keys=[("n", "ascending"), ("d", "ascending")],
    )
    return table.take(order), stats


def _entity_docs(lang: str, entity, doc_id, title, source: str) -> pa.Table:
    n = len(doc_id)
    return pa.table(
        [entity, pa.repeat(pa.scalar(lang), n), doc_id, title, pa.repeat(pa.scalar(source), n)],
        schema=ENTITY_DOCS,
    )
