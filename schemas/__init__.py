"""Schemas of every clirmatrix artefact, as code."""

from clirmatrix.schemas.parquet import DOCS, ENTITY_DOCS, LABELS, LINK_SOURCES, PROPAGATED, RETRIEVAL, SITELINKS, SchemaMismatchError, check

__all__ = ["DOCS", "ENTITY_DOCS", "LABELS", "LINK_SOURCES", "PROPAGATED", "RETRIEVAL", "SITELINKS", "SchemaMismatchError", "check"]
