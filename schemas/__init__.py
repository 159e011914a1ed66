"""Schemas of every artefact clirmatrix writes, as code (Arrow for Parquet)."""

from clirmatrix.schemas.parquet import DOCS, ENTITY_DOCS, LINK_SOURCES, SITELINKS, SchemaMismatchError, check

__all__ = ["DOCS", "ENTITY_DOCS", "LINK_SOURCES", "SITELINKS", "SchemaMismatchError", "check"]
