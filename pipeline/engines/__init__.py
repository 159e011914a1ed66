"""Retrieval engines: the embedded BM25 engine (default) and, later, Elasticsearch."""
