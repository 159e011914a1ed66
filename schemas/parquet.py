"""Arrow schemas of the intermediate Parquet artefacts, checked on every write.

``docs``         one row per kept article of a language (docs/method.md sections 1-2)
``sitelinks``    Wikidata item -> title on a selected Wikipedia (section 3)
``entity_docs``  Wikidata item -> document of a language, after title matching (section 3)
``catalog``      page id, entity and title of every document of a language, by position
``term_counts``  documents per term and field, of a shard or of a whole language (section 4)
``retrieval``    a language's top-k BM25 hits for every title query (section 4)
``labels``       the labelled documents of every query (section 5)
``doc_links``    position in X -> position in Y of the same entity (section 6)
``propagated``   the labels of one direction X -> Y, on Y's documents (section 6)
``query_splits`` the split and seeded order of every query of a language (section 7)
``multi8_queries`` the MULTI-8 queries: entity, split, order, and each language's article

Everything after ``docs`` addresses documents by *position*: the row number of a
document in its language's ``docs`` files read in order (file name, then row),
which is also the document order of the search index and of ``catalog``.
Positions keep these tables small and joins numeric; writers turn them back into
page ids.
"""

from __future__ import annotations

import pyarrow as pa

DOCS = pa.schema(
    [
        pa.field("lang", pa.string(), nullable=False),
        pa.field("doc_id", pa.string(), nullable=False),
        pa.field("title", pa.string(), nullable=False),
        pa.field("text", pa.string(), nullable=False),  # truncated: what is indexed and released in DOCS/
        pa.field("text_full", pa.string(), nullable=False),
        pa.field("entity", pa.string(), nullable=True),  # the dump's own wikibase_item, when it has one
        pa.field("dump_file", pa.string(), nullable=False),  # provenance: which dump file ...
        pa.field("dump_line", pa.int64(), nullable=False),  # ... and where: its 1-based line, or a bz2 block position (pipeline/io/positions.py)
    ],
    metadata={"clirmatrix.artefact": "docs", "clirmatrix.schema_version": "1"},
)

SITELINKS = pa.schema(
    [
        pa.field("entity", pa.string(), nullable=False),
        pa.field("lang", pa.string(), nullable=False),
        pa.field("title", pa.string(), nullable=False),
    ],
    metadata={"clirmatrix.artefact": "sitelinks", "clirmatrix.schema_version": "1"},
)

# A wiki's own record of each page's Wikidata item (its page_props table, propname wikibase_item).
PAGE_ENTITIES = pa.schema(
    [
        pa.field("doc_id", pa.string(), nullable=False),
        pa.field("entity", pa.string(), nullable=False),
    ],
    metadata={"clirmatrix.artefact": "page_entities", "clirmatrix.schema_version": "1"},
)

# Where an entity link came from: Wikidata's sitelinks, or the dump's wikibase_item
# when Wikidata had no sitelink for the page (docs/method.md section 3, [ours]).
LINK_SOURCES = ("wikidata", "dump")

ENTITY_DOCS = pa.schema(
    [
        pa.field("entity", pa.string(), nullable=False),
        pa.field("lang", pa.string(), nullable=False),
        pa.field("doc_id", pa.string(), nullable=False),
        pa.field("title", pa.string(), nullable=False),
        pa.field("source", pa.string(), nullable=False),
    ],
    metadata={"clirmatrix.artefact": "entity_docs", "clirmatrix.schema_version": "1"},
)


CATALOG = pa.schema(
    [
        pa.field("page_id", pa.int64(), nullable=False),  # the document's id (``docs.doc_id``) as a number
        pa.field("entity", pa.int64(), nullable=True),  # the linked Wikidata item's number (Q42 -> 42); null when unlinked
        pa.field("title", pa.string(), nullable=False),  # the article's title: its query (section 4)
    ],
    metadata={"clirmatrix.artefact": "catalog", "clirmatrix.schema_version": "1"},
)

TERM_COUNTS = pa.schema(
    [
        pa.field("term", pa.string(), nullable=False),  # an analysed token
        pa.field("df_title", pa.int64(), nullable=False),  # documents with the term in their title
        pa.field("df_text", pa.int64(), nullable=False),  # ... in their text
    ],
    metadata={"clirmatrix.artefact": "term_counts", "clirmatrix.schema_version": "1"},
)

RETRIEVAL = pa.schema(
    [
        pa.field("query", pa.int32(), nullable=False),  # position of the query's own article
        pa.field("doc", pa.int32(), nullable=False),
        pa.field("score", pa.float32(), nullable=False),  # rows of a query in rank order
    ],
    metadata={"clirmatrix.artefact": "retrieval", "clirmatrix.schema_version": "1"},
)

LABELS = pa.schema(
    [
        pa.field("query", pa.int32(), nullable=False),
        pa.field("doc", pa.int32(), nullable=False),
        pa.field("label", pa.int8(), nullable=False),  # 1-5 Jenks class, 6 the query's own article
    ],
    metadata={"clirmatrix.artefact": "labels", "clirmatrix.schema_version": "1"},
)

DOC_LINKS = pa.schema(
    [
        pa.field("x", pa.int32(), nullable=False),  # position in the query language X (ascending)
        pa.field("y", pa.int32(), nullable=False),  # position of the same entity's article in Y
    ],
    metadata={"clirmatrix.artefact": "doc_links", "clirmatrix.schema_version": "1"},
)

PROPAGATED = pa.schema(
    [
        pa.field("query", pa.int32(), nullable=False),  # position in the query language X
        pa.field("doc", pa.int32(), nullable=False),  # position in the document language Y
        pa.field("label", pa.int8(), nullable=False),
    ],
    metadata={"clirmatrix.artefact": "propagated", "clirmatrix.schema_version": "1"},
)


QUERY_SPLITS = pa.schema(
    [
        pa.field("role", pa.int8(), nullable=False),  # the eval set it may join: index into layout.SPLITS (dev, test1 or test2)
        pa.field("order", pa.uint64(), nullable=False),  # seeded priority: eval and base sets take the smallest
        pa.field("key", pa.uint64(), nullable=False),  # the query key's identity (entity, or language and page id)
    ],
    metadata={"clirmatrix.artefact": "query_splits", "clirmatrix.schema_version": "2"},
)

EVAL_PICKS = pa.schema(
    [
        pa.field("tgt", pa.string(), nullable=False),  # the direction's document language ("" for MULTI-8)
        pa.field("query", pa.int32(), nullable=False),  # query position in the source language (the entity for MULTI-8)
        pa.field("split", pa.int8(), nullable=False),  # index into layout.SPLITS: dev, test1 or test2
        pa.field("key", pa.uint64(), nullable=False),  # the query key's identity, excluded from every train set
    ],
    metadata={"clirmatrix.artefact": "eval_picks", "clirmatrix.schema_version": "1"},
)

MULTI8_QUERIES = pa.schema(
    [
        pa.field("split", pa.int8(), nullable=False),
        pa.field("rank", pa.int32(), nullable=False),  # line number in the split's files
        pa.field("entity", pa.int64(), nullable=False),
        pa.field("lang", pa.string(), nullable=False),
        pa.field("position", pa.int32(), nullable=False),  # the entity's article in ``lang``
        pa.field("page_id", pa.int64(), nullable=False),
        pa.field("title", pa.string(), nullable=False),
    ],
    metadata={"clirmatrix.artefact": "multi8_queries", "clirmatrix.schema_version": "1"},
)


class SchemaMismatchError(Exception):
    """A table about to be written does not have its artefact's schema.

    Always a bug of ours (the tables are built by our code, not read from the user), so
    it is no ``InputError``: the command line shows it with its traceback.
    """


def check(table: pa.Table, schema: pa.Schema, where: str) -> pa.Table:
    """Return ``table`` with exactly ``schema`` (metadata included) or raise naming ``where``.

    Column names, order and types must match; nulls in a non-nullable column fail.
    """
    if table.schema.names != schema.names:
        raise SchemaMismatchError(f"{where}: columns {table.schema.names} != expected {schema.names}")
    for field in schema:
        column = table.column(field.name)
        if column.type != field.type:
            raise SchemaMismatchError(f"{where}: column {field.name!r} has type {column.type}, expected {field.type}")
        if not field.nullable and column.null_count:
            raise SchemaMismatchError(f"{where}: column {field.name!r} has {column.null_count} nulls but is required")
    return table.replace_schema_metadata(schema.metadata).cast(schema)
