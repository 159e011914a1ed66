"""Schemas of every clirmatrix artefact, as code."""

from clirmatrix.schemas.parquet import (
    CATALOG,
    DOC_LINKS,
    DOCS,
    ENTITY_DOCS,
    EVAL_PICKS,
    LABELS,
    LINK_SOURCES,
    MULTI8_QUERIES,
    PAGE_ENTITIES,
    PROPAGATED,
    QUERY_SPLITS,
    RETRIEVAL,
    SITELINKS,
    TERM_COUNTS,
    SchemaMismatchError,
    check,
)

__all__ = [
    "CATALOG", "DOC_LINKS", "DOCS", "ENTITY_DOCS", "EVAL_PICKS", "LABELS", "LINK_SOURCES", "MULTI8_QUERIES", "PAGE_ENTITIES", "PROPAGATED", "QUERY_SPLITS",
    "RETRIEVAL", "SITELINKS", "TERM_COUNTS", "SchemaMismatchError", "check",
]
