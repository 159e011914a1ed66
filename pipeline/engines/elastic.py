"""The Elasticsearch engine: the embedded engine's contract, one index per language on a cluster.

Index a language (bulk, refresh once at the end), then answer batches of title
queries with ``msearch``. Settings and bodies come from ``es_settings`` so the
analysis and BM25 match the embedded engine. An index whose ``_meta`` holds the
same document fingerprint is reused, not rebuilt. 429/502/503/504 answers and
timeouts are retried with exponential backoff; an unreachable cluster is a
clear error naming the URL. Credentials come from the environment only
(``CLIRMATRIX_ES_API_KEY``, or ``CLIRMATRIX_ES_USER`` and ``CLIRMATRIX_ES_PASSWORD``).
Needs the ``es`` extra (``pip install 'clirmatrix[es]'``).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from clirmatrix.pipeline.engines.base import Bm25Settings, FlatHits, Hits, flat_hits
from clirmatrix.pipeline.engines.es_settings import index_body, index_name, msearch_lines
from clirmatrix.pipeline.errors import InputError

RETRY_STATUS = frozenset({429, 502, 503, 504})
BULK_DOCS = 1_000


class ClusterUnreachableError(InputError, ConnectionError):
    """No Elasticsearch answers at the configured URL."""


class ClusterRequestError(InputError, RuntimeError):
    """Elasticsearch refused a request for a reason retrying cannot fix."""


def connect(url: str, timeout: float = 60.0) -> Any:
    """A client for ``url`` with credentials from the environment; our own retries, not the client's."""
    try:
        from elasticsearch import Elasticsearch
    except ImportError as error:  # the es extra is optional
        raise ClusterRequestError("the Elasticsearch engine needs the es extra: pip install 'clirmatrix[es]'") from error
    auth: dict[str, Any] = {}
    if os.environ.get("CLIRMATRIX_ES_API_KEY"):
        auth["api_key"] = os.environ["CLIRMATRIX_ES_API_KEY"]
    elif os.environ.get("CLIRMATRIX_ES_USER"):
        auth["basic_auth"] = (os.environ["CLIRMATRIX_ES_USER"], os.environ.get("CLIRMATRIX_ES_PASSWORD", ""))
    return Elasticsearch(url, request_timeout=timeout, max_retries=0, retry_on_timeout=False, **auth)


def with_retries(call: Callable[[], Any], url: str, what: str, retries: int = 5, backoff: float = 0.5, sleep: Callable[[float], None] = time.sleep) -> Any:
    """Run one request, retrying busy answers and timeouts; other failures raise with the reason."""
    from elasticsearch import ApiError, ConnectionTimeout
    from elasticsearch import ConnectionError as TransportConnectionError

    for attempt in range(retries + 1):
        try:
            return call()
        except ConnectionTimeout:
            if attempt == retries:
                raise ClusterRequestError(f"{what} at {url} timed out {retries + 1} times") from None
        except TransportConnectionError as error:
            raise ClusterUnreachableError(
                f"no Elasticsearch answers at {url} ({error.message}); start it with `docker compose up -d` or pass the right --es-url"
            ) from None
        except ApiError as error:
            if error.status_code not in RETRY_STATUS or attempt == retries:
                raise ClusterRequestError(f"{what} at {url} failed with {error.status_code}: {_reason(error.body)}") from None
        sleep(backoff * 2**attempt)
    raise AssertionError("unreachable")


def _reason(body: Any) -> str:
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        return f"{body['error'].get('type')}: {body['error'].get('reason')}"
    return str(body)[:300]


class ElasticsearchEngine:
    """One language's index on a cluster; ``index`` then ``search``, like ``EmbeddedEngine`` (the ``Engine`` contract of ``base``).

    Documents are stored with ``_id`` = their position, so hits map back to
    positions; ties are put in position order here, as Lucene's document order
    cannot be relied on across segments.
    """

    def __init__(
        self,
        client: Any,
        url: str,
        lang: str,
        settings: Bm25Settings = Bm25Settings(),
        fingerprint: str = "",
        prefix: str = "clirmatrix",
        batch_size: int = 200,
        retries: int = 5,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.client, self.url, self.lang, self.settings = client, url, lang, settings
        self.fingerprint = fingerprint
        self.index_name = index_name(lang, prefix)
        self.batch_size = batch_size
        self.docs = 0  # documents given to ``index`` (a count: the ids may be millions)
        self.reused = False
        self._retry = lambda call, what: with_retries(call, url, what, retries, sleep=sleep)

    def _existing_fingerprint(self) -> str | None:
        if not self._retry(lambda: bool(self.client.indices.exists(index=self.index_name)), "index lookup"):
            return None
        mapping = self._retry(lambda: self.client.indices.get_mapping(index=self.index_name), "mapping lookup")
        meta = dict(mapping).get(self.index_name, {}).get("mappings", {}).get("_meta", {})
        return meta.get("clirmatrix_fingerprint", "")

    def index(self, batches: Iterable[tuple[Sequence[str], Sequence[str], Sequence[str]]]) -> None:
        """Index the documents in order, or reuse an index that already holds exactly them."""
        self.reused = bool(self.fingerprint) and self._existing_fingerprint() == self.fingerprint
        if not self.reused:
            self._retry(lambda: self.client.indices.delete(index=self.index_name, ignore_unavailable=True), "index delete")
            body = index_body(self.lang, self.settings, self.fingerprint)
            self._retry(lambda: self.client.indices.create(index=self.index_name, **body), "index create")
        for doc_ids, titles, texts in batches:
            start = self.docs
            self.docs += len(doc_ids)
            if not self.reused:
                for offset in range(0, len(doc_ids), BULK_DOCS):
                    self._bulk(start + offset, doc_ids[offset : offset + BULK_DOCS], titles[offset : offset + BULK_DOCS], texts[offset : offset + BULK_DOCS])
        if not self.reused:
            self._retry(lambda: self.client.indices.refresh(index=self.index_name), "refresh")

    def _bulk(self, first: int, doc_ids: Sequence[str], titles: Sequence[str], texts: Sequence[str]) -> None:
        operations: list[dict] = []
        for position, (doc_id, title, text) in enumerate(zip(doc_ids, titles, texts), start=first):
            operations += [{"index": {"_index": self.index_name, "_id": str(position)}}, {"doc_id": doc_id, "title": title, "text": text or ""}]
        answer = self._retry(lambda: self.client.bulk(operations=operations), "bulk indexing")
        if answer.get("errors"):
            failed = next(item["index"] for item in answer["items"] if "error" in item["index"])
            raise ClusterRequestError(f"bulk indexing at {self.url} refused document {failed.get('_id')}: {_reason(failed)}")

    def search(self, queries: Sequence[str], k: int = 100) -> list[Hits]:
        """Top ``k`` (position, score) per title, best first, ties by position."""
        hits: list[Hits] = []
        for start in range(0, len(queries), self.batch_size):
            batch = list(queries[start : start + self.batch_size])
            searches = msearch_lines(self.index_name, batch, self.settings, k)
            answer = self._retry(lambda searches=searches: self._msearch(searches), "msearch")
            hits += [_hits(response) for response in answer["responses"]]
        return hits

    def search_flat(self, queries: Sequence[str], k: int = 100) -> FlatHits:
        """``search``'s results as flat arrays (``FlatHits``), as the retrieve stage writes them."""
        return flat_hits(self.search(queries, k))

    def _msearch(self, searches: list[dict]) -> dict:
        from elasticsearch import ApiError

        answer = dict(self.client.msearch(searches=searches))
        for response in answer["responses"]:
            if "error" in response:  # one failed search fails the batch; busy ones are retried as a whole
                raise ApiError(message=_reason(response), meta=_StatusOnly(response.get("status", 500)), body=response)
        return answer


class _StatusOnly:
    """The part of a transport response ``ApiError.status_code`` reads."""

    def __init__(self, status: int) -> None:
        self.status = status


def _hits(response: dict) -> Hits:
    found = response["hits"]["hits"]
    positions = np.array([int(hit["_id"]) for hit in found], dtype=np.int32)
    scores = np.array([hit["_score"] for hit in found], dtype=np.float32)
    order = np.lexsort((positions, -scores))
    return Hits(positions[order], scores[order])
