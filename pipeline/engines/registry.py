"""The retrieval engines by name: what ``--engine`` chooses, and how the retrieve stage makes each.

Light on purpose: ``config`` reads ``ENGINES`` from here, so naming the engines
imports neither numba nor a client; an engine's module is imported when one is made.
Where the engines differ in how a build uses them, their entry says so
(``EngineKind.shards_itself``), so the retrieve stage never asks which engine it has.
An engine is made from ``EngineSettings`` alone, not from the stage's settings, so the
engines import nothing of the method above them (docs/architecture.md).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

from clirmatrix.pipeline.engines.base import Bm25Settings, Engine, LocalEngine
from clirmatrix.pipeline.settings import ConfigError, comma_list


@dataclass(frozen=True)
class EngineSettings:
    """What an engine is made with: its BM25 parameters, search threads, where its cluster is, and which documents it holds.

    The retrieve stage's settings give them, with their defaults (``engine_settings``); the
    rest of those (``k``, how the work is cut) is the stage's, which no engine reads.
    """

    bm25: Bm25Settings
    threads: int
    es_url: str  # one URL for every language, or "en=URL,de=URL" (one node per language)
    docs_key: str  # fingerprint of the documents: an Elasticsearch index holding them is reused

    def es_urls(self) -> dict[str, str]:
        """Language -> URL of ``es_url``; ``"*"`` -> URL when one cluster serves every language."""
        if "=" not in self.es_url:
            return {"*": self.es_url}
        return dict(item.split("=", 1) for item in comma_list(self.es_url))

    def es_url_for(self, lang: str) -> str:
        urls = self.es_urls()
        if "*" in urls:
            return urls["*"]
        if lang not in urls:
            raise ConfigError(f"--es-url names no Elasticsearch for {lang} (it has {', '.join(sorted(urls))})")
        return urls[lang]


def _embedded(settings: EngineSettings, lang: str) -> LocalEngine:
    from clirmatrix.pipeline.engines.analyzers import analyzer_for
    from clirmatrix.pipeline.engines.embedded import EmbeddedEngine

    return EmbeddedEngine(analyzer_for(lang), settings.bm25, threads=settings.threads)


def _load_embedded(folder: str, settings: EngineSettings, lang: str) -> LocalEngine:
    from clirmatrix.pipeline.engines.analyzers import analyzer_for
    from clirmatrix.pipeline.engines.embedded import EmbeddedEngine

    return EmbeddedEngine.load(folder, analyzer_for(lang), settings.bm25, threads=settings.threads)


def _elasticsearch(settings: EngineSettings, lang: str) -> Engine:
    from clirmatrix.pipeline.engines.analyzers import analyzer_for
    from clirmatrix.pipeline.engines.elastic import ElasticsearchEngine, connect
    from clirmatrix.pipeline.io.fingerprint import fingerprint

    url = settings.es_url_for(lang)
    # The index is reused only for the same documents *and* the same analysis and BM25 settings.
    key = fingerprint(settings.docs_key, lang, asdict(settings.bm25), analyzer_for(lang).spec) if settings.docs_key else ""
    return ElasticsearchEngine(connect(url), url, lang, settings.bm25, fingerprint=key)


def _check_elasticsearch(settings: EngineSettings, langs: Sequence[str]) -> None:
    """Every language has a node, and every node answers."""
    from clirmatrix.pipeline.engines.elastic import connect, with_retries

    if not settings.es_url:
        raise ConfigError("--engine elasticsearch needs --es-url (or CLIRMATRIX_ES_URL); start the nodes with `docker compose up -d`")
    for lang in langs:
        settings.es_url_for(lang)  # every language has a node
    for url in sorted(set(settings.es_urls().values())):
        with_retries(connect(url, timeout=10).info, url, "cluster check", retries=2)


def _nothing_to_check(settings: EngineSettings, langs: Sequence[str]) -> None:
    """An engine in the process needs no server."""


@dataclass(frozen=True)
class EngineKind:
    """One engine a build can retrieve with: how to make one for a language, and how it holds its index.

    ``shards_itself``: the engine's own servers hold each language's index and shard
    it (Elasticsearch): one unit indexes a language there, then every block of queries
    is searched on its own, and nothing is stored locally. Otherwise (the embedded
    engine) the index lives in the process that searches, so a large language is cut
    into shards of ``shard_docs`` documents, each shard's index is stored between the
    steps (``load`` reads it back) and scored with the language's statistics.
    """

    name: str
    make: Callable[[EngineSettings, str], Engine]  # a fresh engine for one language (or shard)
    shards_itself: bool
    check: Callable[[EngineSettings, Sequence[str]], None] = _nothing_to_check  # before any work: fail when the engine cannot run
    load: Callable[[str, EngineSettings, str], LocalEngine] | None = None  # the engine over a shard's stored index (engines that do not shard themselves)


REGISTRY: dict[str, EngineKind] = {
    kind.name: kind
    for kind in (
        EngineKind("embedded", _embedded, shards_itself=False, load=_load_embedded),
        EngineKind("elasticsearch", _elasticsearch, shards_itself=True, check=_check_elasticsearch),
    )
}
ENGINES = tuple(REGISTRY)  # the default first


def engine_kind(name: str) -> EngineKind:
    """The registry's entry for ``name``; a ``ValueError`` naming the choices for an unknown one."""
    try:
        return REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown engine {name!r}; choose from {', '.join(ENGINES)}") from None
