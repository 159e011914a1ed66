"""Arrow schemas of the intermediate Parquet artefacts, checked on every write.

``docs``         one row per kept article of a language (PIPELINE.md sections 1-2)
``sitelinks``    Wikidata item -> title on a selected Wikipedia (section 3)
``entity_docs``  Wikidata item -> document of a language, after title matching (section 3)
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
        pa.field("dump_line", pa.int64(), nullable=False),  # ... and which 1-based line the document was on
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

# Where an entity link came from: Wikidata's sitelinks, or the dump's wikibase_item
# when Wikidata had no sitelink for the page (PIPELINE.md section 3, [ours]).
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


class SchemaMismatchError(ValueError):
    """A table about to be written does not have its artefact's schema."""


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
