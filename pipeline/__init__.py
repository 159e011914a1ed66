"""The clirmatrix library under the Beam jobs: dump formats, text extraction, retrieval, labels, release writing and the consumer tools (download, validate, loaders)."""
