"""The Elasticsearch engine against a local HTTP server answering as Elasticsearch does, and a live cluster when given.

The local server is real HTTP (the real client talks to it) with real
Elasticsearch error bodies; it checks retries, errors, index reuse and the
requests sent. The parity test needs a cluster: set CLIRMATRIX_ES_URL.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

pytest.importorskip("elasticsearch", reason="the es extra (elasticsearch client) is not installed")

from clirmatrix.pipeline.engines.base import Bm25Settings, Hits  # noqa: E402
from clirmatrix.pipeline.engines.elastic import ClusterRequestError, ClusterUnreachableError, ElasticsearchEngine, connect  # noqa: E402

REJECTED_429 = {
    "error": {
        "root_cause": [{"type": "es_rejected_execution_exception", "reason": "rejected execution of coordinating operation"}],
        "type": "es_rejected_execution_exception",
        "reason": "rejected execution of coordinating operation",
    },
    "status": 429,
}
UNAVAILABLE_503 = {"error": {"root_cause": [], "type": "cluster_block_exception", "reason": "blocked by: [SERVICE_UNAVAILABLE/1/state not recovered / initialized];"}, "status": 503}
BAD_QUERY_400 = {"error": {"root_cause": [], "type": "parsing_exception", "reason": "[multi_match] unknown token [START_ARRAY]"}, "status": 400}


def _search_response(hits: list[tuple[str, float]]) -> dict:
    found = [{"_index": "clirmatrix-en", "_id": i, "_score": s} for i, s in hits]
    return {"took": 1, "timed_out": False, "hits": {"total": {"value": len(hits), "relation": "eq"}, "max_score": None, "hits": found}, "status": 200}


class FakeCluster:
    """Scripted answers per (method, path); each request takes the next one, the last one repeats."""

    def __init__(self) -> None:
        self.routes: dict[tuple[str, str], list[tuple[int, dict | None]]] = {}
        self.delays: list[float] = []  # seconds to wait before answering the next requests
        self.requests: list[tuple[str, str, bytes]] = []
        cluster = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                path = self.path.split("?")[0]
                cluster.requests.append((self.command, path, body))
                script = cluster.routes.get((self.command, path)) or [(404, {"error": {"type": "index_not_found_exception", "reason": "no such index"}, "status": 404})]
                status, answer = script.pop(0) if len(script) > 1 else script[0]
                if cluster.delays:
                    time.sleep(cluster.delays.pop(0))
                payload = b"" if answer is None or self.command == "HEAD" else json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("X-Elastic-Product", "Elasticsearch")
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _answer

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def paths(self, method: str) -> list[str]:
        return [path for m, path, _ in self.requests if m == method]


@pytest.fixture
def cluster():
    fake = FakeCluster()
    yield fake
    fake.server.shutdown()


def _engine(cluster, sleeps, **kwargs) -> ElasticsearchEngine:
    return ElasticsearchEngine(connect(cluster.url, timeout=5), cluster.url, "en", sleep=sleeps.append, **kwargs)


def test_busy_answers_are_retried_with_backoff_and_ties_come_in_position_order(cluster):
    cluster.routes[("POST", "/_msearch")] = [
        (429, REJECTED_429),
        (503, UNAVAILABLE_503),
        (200, {"took": 2, "responses": [_search_response([("7", 3.5), ("9", 2.0), ("4", 2.0)]), _search_response([])]}),
    ]
    sleeps: list[float] = []
    hits = _engine(cluster, sleeps).search(["Paris", "the"], k=3)
    assert sleeps == [0.5, 1.0]
    assert hits[0].positions.tolist() == [7, 4, 9] and hits[0].scores.dtype == np.float32
    assert len(hits[1].positions) == 0
    sent = [json.loads(line) for line in cluster.requests[-1][2].decode().splitlines()]
    assert sent[0] == {"index": "clirmatrix-en"}
    assert sent[1]["query"]["multi_match"] == {"query": "Paris", "fields": ["title^2", "text"], "type": "best_fields"}


def test_a_timeout_is_retried_and_queries_go_in_batches(cluster):
    cluster.routes[("POST", "/_msearch")] = [(200, {"took": 1, "responses": [_search_response([("1", 1.0)])] * 2})]
    cluster.delays = [2.0]  # the first answer comes after the client's 1 s timeout
    sleeps: list[float] = []
    engine = ElasticsearchEngine(connect(cluster.url, timeout=1), cluster.url, "en", sleep=sleeps.append, batch_size=2)
    hits = engine.search(["a", "b", "c", "d"])
    assert sleeps == [0.5] and [h.positions.tolist() for h in hits] == [[1]] * 4
    batches = [body for method, path, body in cluster.requests if path == "/_msearch"]
    assert len(batches) == 3 and all(len(body.decode().splitlines()) == 4 for body in batches)


def test_search_flat_is_search_made_flat(cluster):
    """The retrieve stage writes every engine's hits from ``search_flat``."""
    cluster.routes[("POST", "/_msearch")] = [(200, {"took": 1, "responses": [_search_response([("7", 3.5), ("9", 2.0), ("4", 2.0)]), _search_response([])]})]
    engine = _engine(cluster, [])
    flat = engine.search_flat(["Paris", "the"], k=3)
    assert flat.lengths.tolist() == [3, 0] and flat.positions.tolist() == [7, 4, 9] and flat.scores.dtype == np.float32
    assert [(h.positions.tolist(), h.scores.tolist()) for h in flat.split()] == [(h.positions.tolist(), h.scores.tolist()) for h in engine.search(["Paris", "the"], k=3)]
    assert engine.search_flat([], k=3).lengths.tolist() == []


def test_the_retrieve_stage_plans_by_the_registry_not_by_the_engines_name():
    from clirmatrix.pipeline import config
    from clirmatrix.pipeline.engines.registry import ENGINES, REGISTRY, engine_kind
    from clirmatrix.pipeline.method.retrieval import MERGE, PREPARE, SEARCH, RetrievalSettings, plan_units

    assert config.ENGINES is ENGINES and ENGINES[0] == "embedded"
    assert REGISTRY["elasticsearch"].shards_itself and not REGISTRY["embedded"].shards_itself
    for name in ENGINES:
        settings = RetrievalSettings(name, es_url="http://127.0.0.1:9", shard_docs=10, block_size=10)
        plan = settings.plan("en", 25)
        steps = [unit.step for unit in plan_units([plan], settings)]
        if engine_kind(name).shards_itself:  # one unit indexes the language on the cluster, then a unit a block searches it
            assert plan.shards == 1 and steps == [PREPARE, SEARCH, SEARCH, SEARCH]
        else:  # three shards: counted, summed, searched and merged
            assert plan.shards == 3 and SEARCH in steps and MERGE in steps
    with pytest.raises(ValueError, match="unknown engine 'solr'"):
        engine_kind("solr")
    code = "import sys, clirmatrix.pipeline.config; print(sorted(m for m in ('numba', 'clirmatrix.pipeline.engines.embedded', 'clirmatrix.pipeline.engines.elastic') if m in sys.modules))"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "[]"  # naming the engines loads none


def test_a_busy_search_inside_msearch_is_retried_too(cluster):
    cluster.routes[("POST", "/_msearch")] = [
        (200, {"took": 1, "responses": [{"error": REJECTED_429["error"], "status": 429}]}),
        (200, {"took": 1, "responses": [_search_response([("1", 1.0)])]}),
    ]
    sleeps: list[float] = []
    assert _engine(cluster, sleeps).search(["x"])[0].positions.tolist() == [1] and sleeps == [0.5]


def test_errors_that_retrying_cannot_fix_name_the_url_and_reason(cluster):
    cluster.routes[("POST", "/_msearch")] = [(400, BAD_QUERY_400)]
    with pytest.raises(ClusterRequestError, match=rf"{cluster.url}.*400.*parsing_exception"):
        _engine(cluster, []).search(["x"])
    cluster.routes[("POST", "/_msearch")] = [(429, REJECTED_429)]
    sleeps: list[float] = []
    with pytest.raises(ClusterRequestError, match="429"):
        _engine(cluster, sleeps, retries=2).search(["x"])
    assert sleeps == [0.5, 1.0]


def test_an_unreachable_cluster_says_where_and_what_to_do():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}"
    with pytest.raises(ClusterUnreachableError, match=rf"{url}.*docker compose up"):
        ElasticsearchEngine(connect(url, timeout=2), url, "en").search(["x"])


def test_indexing_creates_the_index_bulk_loads_by_position_and_refreshes(cluster):
    cluster.routes[("HEAD", "/clirmatrix-en")] = [(404, None)]
    cluster.routes[("DELETE", "/clirmatrix-en")] = [(200, {"acknowledged": True})]
    cluster.routes[("PUT", "/clirmatrix-en")] = [(200, {"acknowledged": True, "index": "clirmatrix-en"})]
    cluster.routes[("PUT", "/_bulk")] = cluster.routes[("POST", "/_bulk")] = [(200, {"took": 3, "errors": False, "items": []})]
    cluster.routes[("POST", "/clirmatrix-en/_refresh")] = [(200, {"_shards": {"total": 1, "successful": 1, "failed": 0}})]
    engine = _engine(cluster, [], settings=Bm25Settings(b=0.3), fingerprint="fp1")
    engine.index([(["12", "40"], ["Paris", "Berlin"], ["capital", "city"]), (["7"], ["Rome"], ["eternal"])])
    assert engine.docs == 3 and not engine.reused
    created = json.loads(next(body for m, p, body in cluster.requests if m == "PUT" and p == "/clirmatrix-en"))
    assert created["settings"]["index"]["similarity"]["clirmatrix_bm25"] == {"type": "BM25", "k1": 1.2, "b": 0.3}
    assert created["mappings"]["_meta"]["clirmatrix_fingerprint"] == "fp1"
    bulk = [json.loads(line) for m, p, body in cluster.requests if p == "/_bulk" for line in body.decode().splitlines()]
    assert [op["index"]["_id"] for op in bulk[::2]] == ["0", "1", "2"] and bulk[5] == {"doc_id": "7", "title": "Rome", "text": "eternal"}
    assert cluster.paths("POST")[-1] == "/clirmatrix-en/_refresh"


def test_an_index_with_the_same_fingerprint_is_reused(cluster):
    cluster.routes[("HEAD", "/clirmatrix-en")] = [(200, None)]
    cluster.routes[("GET", "/clirmatrix-en/_mapping")] = [(200, {"clirmatrix-en": {"mappings": {"_meta": {"clirmatrix_fingerprint": "fp1"}}}})]
    engine = _engine(cluster, [], fingerprint="fp1")
    engine.index([(["12", "40"], ["Paris", "Berlin"], ["capital", "city"])])
    assert engine.reused and engine.docs == 2
    assert not cluster.paths("PUT") and not cluster.paths("DELETE") and "/_bulk" not in cluster.paths("POST")


@pytest.mark.skipif(not os.environ.get("CLIRMATRIX_ES_URL"), reason="needs a live Elasticsearch: set CLIRMATRIX_ES_URL (e.g. after docker compose up -d)")
def test_live_cluster_agrees_with_the_embedded_engine():
    from clirmatrix.pipeline.engines.analyzers import analyzer_for
    from clirmatrix.pipeline.engines.embedded import EmbeddedEngine

    url = os.environ["CLIRMATRIX_ES_URL"]
    rng = np.random.default_rng(3)
    words = ["paris", "france", "capital", "river", "city", "museum", "the", "of", "running", "runs", "bridges", "king"]
    docs = [(str(1000 + i), " ".join(rng.choice(words, 2)), " ".join(rng.choice(words, rng.integers(5, 40)))) for i in range(300)]
    batch = ([d[0] for d in docs], [d[1] for d in docs], [d[2] for d in docs])
    live = ElasticsearchEngine(connect(url), url, "en", prefix="clirmatrix-test")
    live.index([batch])
    embedded = EmbeddedEngine(analyzer_for("en"))
    embedded.index([batch])
    queries = [d[1] for d in docs[:50]]
    for ours, theirs in zip(embedded.search(queries, 100), live.search(queries, 100)):
        assert np.allclose(ours.scores, theirs.scores, rtol=1e-5)
        cut = ours.scores[-1] if len(ours.scores) == 100 else -1  # tie-aware: the documents above the last score agree
        assert set(ours.positions[ours.scores > cut].tolist()) == set(theirs.positions[theirs.scores > cut].tolist())


def _h(positions, scores) -> Hits:
    return Hits(np.array(positions, dtype=np.int32), np.array(scores, dtype=np.float32))


def test_compare_counts_overlap_top1_ties_and_score_differences():
    from clirmatrix.pipeline.engines.compare import compare_hits

    same = compare_hits([_h([1, 2, 3], [3, 2, 1])], [_h([1, 2, 3], [3, 2, 1])], k=3)
    assert same["overlap@3"] == same["top1_agreement"] == same["tie_aware_agreement"] == 1.0 and same["max_relative_score_difference"] == 0
    # Documents 3 and 4 tie at the cut: a different pick there is no disagreement.
    tie = compare_hits([_h([1, 2, 3, 4], [3, 2, 1, 1])], [_h([1, 2, 4, 3], [3, 2, 1, 1])], k=3)
    assert tie["overlap@3"] == pytest.approx(2 / 3) and tie["tie_aware_agreement"] == 1.0
    apart = compare_hits([_h([1, 2], [2.0, 1.0])], [_h([2, 1], [2.2, 1.0])], k=3)
    assert apart["top1_agreement"] == 0.0 and apart["tie_aware_agreement"] == 1.0
    assert apart["max_relative_score_difference"] == pytest.approx(1.2, rel=1e-5)  # document 2: |1.0 - 2.2| / 1.0
    with pytest.raises(ValueError, match="same queries"):
        compare_hits([_h([1], [1.0])], [], k=3)


def test_compare_command_names_an_unreachable_cluster(tmp_path, capsys):
    from clirmatrix.cli import main

    (tmp_path / "c.jsonl").write_text('{"id": "a", "title": "Paris", "text": "capital"}\n')
    (tmp_path / "q.tsv").write_text("q1\tParis\n")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}"
    args = ["engines", "compare", "--lang", "en", "--corpus", str(tmp_path / "c.jsonl"), "--queries", str(tmp_path / "q.tsv"), "--es-url", url]
    assert main(args) == 2 and "docker compose up" in capsys.readouterr().err


SCRIPT_SAMPLES = {
    "en": "The Running Bridges of Paris, 1889-1900: ÉTÉ and naïve café!",
    "de": "Die Straßen Münchens und die Größe der Bäume",
    "ru": "Ёлки и Москва: столица России, реки и мосты",
    "ar": "القاهرة هي عاصمة مصر وأكبر مدنها",
    "zh": "北京是中华人民共和国的首都，也是政治中心。",
    "ja": "東京は日本の首都であり、カタカナとひらがなを使う。",
    "ko": "서울은 대한민국의 수도이다",
    "th": "กรุงเทพมหานครเป็นเมืองหลวงของประเทศไทย",
    "hi": "नई दिल्ली भारत की राजधानी है",
    "el": "Η Αθήνα είναι η πρωτεύουσα της Ελλάδας ΟΔΟΣ",
}


@pytest.mark.skipif(not os.environ.get("CLIRMATRIX_ES_URL"), reason="needs a live Elasticsearch: set CLIRMATRIX_ES_URL (e.g. after docker compose up -d)")
@pytest.mark.parametrize("lang", sorted(SCRIPT_SAMPLES))
def test_live_analysis_is_token_for_token_the_embedded_one(lang):
    from clirmatrix.pipeline.engines.analyzers import analyzer_for
    from clirmatrix.pipeline.engines.es_settings import ANALYZER, index_body

    url = os.environ["CLIRMATRIX_ES_URL"]
    client = connect(url)
    name = f"clirmatrix-analyze-{lang}"
    client.indices.delete(index=name, ignore_unavailable=True)
    client.indices.create(index=name, **index_body(lang))
    tokens = [t["token"] for t in client.indices.analyze(index=name, analyzer=ANALYZER, text=SCRIPT_SAMPLES[lang])["tokens"]]
    assert tokens == analyzer_for(lang)(SCRIPT_SAMPLES[lang])


@pytest.mark.skipif(not os.environ.get("CLIRMATRIX_ES_URL"), reason="needs a live Elasticsearch: set CLIRMATRIX_ES_URL (e.g. after docker compose up -d)")
def test_live_compare_reports_full_tie_aware_agreement(tmp_path):
    from clirmatrix.pipeline.engines.compare import run_compare

    rng = np.random.default_rng(5)
    words = ["paris", "france", "capital", "river", "city", "museum", "the", "of", "running", "bridges"]
    with open(tmp_path / "c.jsonl", "w") as out:
        for i in range(200):
            out.write(json.dumps({"id": str(i), "title": " ".join(rng.choice(words, 2)), "text": " ".join(rng.choice(words, 20))}) + "\n")
    (tmp_path / "q.tsv").write_text("".join(f"q{i}\t{' '.join(rng.choice(words, 2))}\n" for i in range(40)))
    report = run_compare(str(tmp_path / "c.jsonl"), str(tmp_path / "q.tsv"), "en", os.environ["CLIRMATRIX_ES_URL"])
    assert report["tie_aware_agreement"] == 1.0 and report["max_relative_score_difference"] < 1e-5


def test_the_reuse_fingerprint_changes_with_bm25_settings():
    from clirmatrix.pipeline.method.retrieval import RetrievalSettings, make_engine

    def key(b: float) -> str:
        settings = RetrievalSettings("elasticsearch", bm25=Bm25Settings(b=b), es_url="http://127.0.0.1:9", docs_key="docs1")
        return make_engine(settings, "en").fingerprint

    assert key(0.3) == key(0.3) != key(0.75)
