"""Retrieval engines: the embedded BM25 engine (default, ``embedded``) and Elasticsearch (``elastic``).

``base`` holds the contract they keep (``Engine``) and ``registry`` the engines by
name, which is how a build makes one.
"""
