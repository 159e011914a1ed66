"""Elasticsearch settings and query bodies (no server needed) and the compose file."""

from __future__ import annotations

import pytest
import yaml
from conftest import REPO

from clirmatrix.pipeline.engines.analyzers import analyzer_for
from clirmatrix.pipeline.engines.base import Bm25Settings
from clirmatrix.pipeline.engines.es_settings import ANALYZER, SIMILARITY, index_body, msearch_lines
from clirmatrix.pipeline.method.languages import BI139_LANGUAGES
from clirmatrix.pipeline.tools.compose import compose_spec, compose_yaml


@pytest.mark.parametrize("lang", BI139_LANGUAGES)
def test_index_settings_carry_the_embedded_analyzer_and_bm25(lang):
    body = index_body(lang, Bm25Settings(k1=1.2, b=0.3), fingerprint="abc")
    settings, mappings = body["settings"], body["mappings"]
    assert settings["index"]["similarity"][SIMILARITY] == {"type": "BM25", "k1": 1.2, "b": 0.3}
    assert settings["index"]["number_of_shards"] == 1
    analysis = settings["analysis"]
    chain = analysis["analyzer"][ANALYZER]
    spec = analyzer_for(lang).spec
    assert [analysis["filter"][name] for name in chain["filter"]] == spec["filter"]
    assert analysis["tokenizer"][chain["tokenizer"]] == spec["tokenizer"]
    assert mappings["_source"] == {"enabled": False} and mappings["_meta"]["clirmatrix_fingerprint"] == "abc"
    for field in ("title", "text"):
        assert mappings["properties"][field] == {"type": "text", "analyzer": ANALYZER, "similarity": SIMILARITY}


def test_msearch_batches_are_title_queries_over_both_fields():
    lines = msearch_lines("clirmatrix-en", ["Paris", "Berlin"], Bm25Settings(combine="most_fields"), k=100)
    assert [line.get("index") for line in lines[::2]] == ["clirmatrix-en", "clirmatrix-en"]
    body = lines[3]
    assert body["size"] == 100 and body["_source"] is False
    assert body["query"]["multi_match"] == {"query": "Berlin", "fields": ["title^2", "text"], "type": "most_fields"}


def test_compose_file_has_one_node_per_language_and_the_repository_copy_is_current():
    spec = compose_spec(("en", "de", "zh_min_nan"), heap="2g", base_port=9300)
    assert list(spec["services"]) == ["es-en", "es-de", "es-zh-min-nan"]
    node = spec["services"]["es-zh-min-nan"]
    assert node["ports"] == ["127.0.0.1:9302:9200"] and node["environment"]["ES_JAVA_OPTS"] == "-Xms2g -Xmx2g"
    assert node["environment"]["xpack.security.enabled"] == "false" and "healthcheck" in node
    assert set(spec["volumes"]) == {"es-en-data", "es-de-data", "es-zh-min-nan-data"}
    assert (REPO / "docker-compose.yml").read_text() == compose_yaml()
    assert yaml.safe_load(compose_yaml()) == compose_spec()
    with pytest.raises(ValueError, match="repeat"):
        compose_spec(("en", "en"))


def test_compose_command_writes_the_file(tmp_path):
    from clirmatrix.cli import main

    assert main(["compose", "--langs", "en,de", "--heap", "512m", "-o", str(tmp_path / "override.yml")]) == 0
    assert (tmp_path / "override.yml").read_text() == compose_yaml(("en", "de"), heap="512m")
