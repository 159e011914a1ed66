"""ir_datasets loads the sample build through ``clirmatrix.pipeline.tools.irds``: offline, in place, with this build's counts.

Everything is checked through ``ir_datasets.load(id)`` against what gzip + json read from
the files themselves, so a wrong count or a dropped line fails.
"""

from __future__ import annotations

import gzip
import importlib
import importlib.util
import json
import shutil
import socket
from pathlib import Path

import pytest

from clirmatrix.pipeline.output.layout import IN_PROGRESS, MANIFEST, IncompleteBuildError, docs_file, query_file

if importlib.util.find_spec("ir_datasets") is None:
    pytest.skip("ir_datasets is not installed (pip install 'clirmatrix[irds]')", allow_module_level=True)

PREFIX = "clirmatrix-local"
# (set, query language, doc language, split): one of each query set of the sample build.
SPLITS = [("bi139-base", "en", "de", "test1"), ("bi139-full", "fr", "de", "dev"), ("multi8", "zh", "ja", "test2")]


def _no_network(*args, **kwargs):
    raise AssertionError(f"network access attempted: {args!r}")


@pytest.fixture(scope="module")
def irds(tmp_path_factory):
    """The module under test, with ir_datasets' home in a temporary folder and every socket connection refused."""
    home = tmp_path_factory.mktemp("ir_datasets_home")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("IR_DATASETS_HOME", str(home))  # read by ir_datasets at import and on every use
        patch.setattr(socket.socket, "connect", _no_network)
        patch.setattr(socket.socket, "connect_ex", _no_network)
        patch.setattr(socket, "getaddrinfo", _no_network)
        module = importlib.import_module("clirmatrix.pipeline.tools.irds")
        yield module


@pytest.fixture(scope="module")
def loaded(irds, built):
    """(release root, ids) of the sample build registered under PREFIX."""
    out = built[0]
    return out, irds.register(out, PREFIX)


def read_queries(path: Path) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as stream:
        return [json.loads(line) for line in stream if line.strip()]


def read_docs(path: Path) -> list[tuple[str, str]]:
    with gzip.open(path, "rt", encoding="utf-8", newline="\n") as stream:
        return [tuple(line.rstrip("\n").split("\t")) for line in stream if line.strip()]


def test_network_is_blocked(irds):
    with pytest.raises(AssertionError, match="network"):
        socket.create_connection(("example.org", 80), timeout=1)


def test_ids_name_every_released_file(loaded, irds):
    out, ids = loaded
    query_files = sorted(p.relative_to(out).as_posix() for p in out.rglob("*.jl.gz"))
    langs = sorted(p.name.split(".")[0] for p in (out / "DOCS").glob("*.tsv.gz"))
    assert len(query_files) == 3 * 4 * 8 * 7 and len(langs) == 8  # 8 languages: every direction, set and split
    expected = {f"{PREFIX}/{lang}" for lang in langs}
    for dataset in ("bi139-base", "bi139-full", "multi8"):
        for src in langs:
            for tgt in (lang for lang in langs if lang != src):
                for split in ("train", "dev", "test1", "test2"):
                    assert query_file(dataset, src, tgt, split) in query_files
                    expected.add(f"{PREFIX}/{tgt}/{dataset}/{src}/{split}")
    assert ids == sorted(expected)
    assert irds.registered_ids(out, PREFIX) == ids
    assert not any(name.startswith("clirmatrix/") for name in ids)


@pytest.mark.parametrize("dataset, src, tgt, split", SPLITS)
def test_split_matches_its_file(loaded, dataset, src, tgt, split):
    import ir_datasets

    ir_measures = pytest.importorskip("ir_measures", reason="ir-measures comes with the train extra: pip install -e '.[train]'")
    ScoredDoc, nDCG = ir_measures.ScoredDoc, ir_measures.nDCG

    out, _ = loaded
    records = read_queries(out / query_file(dataset, src, tgt, split))
    docs = read_docs(out / docs_file("docs", tgt))
    pairs = sum(len(record["tgt_results"]) for record in records)
    assert records and pairs > len(records) and docs  # a real split, so equal counts mean something

    split_set = ir_datasets.load(f"{PREFIX}/{tgt}/{dataset}/{src}/{split}")
    assert split_set.queries_count() == len(records)
    assert split_set.qrels_count() == pairs
    assert split_set.docs_count() == len(docs)
    assert split_set.queries_lang() == src and split_set.docs_lang() == tgt
    assert split_set.queries_namespace() == PREFIX and split_set.docs_namespace() == f"{PREFIX}/{tgt}"
    assert [(q.query_id, q.text) for q in split_set.queries_iter()] == [(r["src_id"], r["src_query"]) for r in records]
    expected_qrels = [(r["src_id"], doc_id, label) for r in records for doc_id, label in r["tgt_results"]]
    assert [(q.query_id, q.doc_id, q.relevance) for q in split_set.qrels_iter()] == expected_qrels
    assert [(d.doc_id, d.text) for d in split_set.docs_iter()] == docs

    # Scored by ir_measures over ir_datasets' qrels: the file's order (best first) beats its reverse.
    def run(order: int) -> list:
        return [ScoredDoc(r["src_id"], doc_id, order * -rank) for r in records for rank, (doc_id, _) in enumerate(r["tgt_results"])]

    file_order = ir_measures.calc_aggregate([nDCG @ 10], split_set.qrels_iter(), run(1))[nDCG @ 10]
    reversed_order = ir_measures.calc_aggregate([nDCG @ 10], split_set.qrels_iter(), run(-1))[nDCG @ 10]
    assert 0 < file_order <= 1 and reversed_order < file_order


def test_docs_corpus_and_store(loaded, irds):
    import ir_datasets

    out, _ = loaded
    docs = read_docs(out / docs_file("docs", "de"))
    corpus = ir_datasets.load(f"{PREFIX}/de")
    assert not corpus.has_queries() and corpus.docs_count() == len(docs) > 100
    assert [(d.doc_id, d.text) for d in corpus.docs_iter()] == docs
    store = corpus.docs_store()
    for doc_id, text in (docs[0], docs[len(docs) // 2], docs[-1]):
        assert store.get(doc_id).text == text
    # The store lives in ir_datasets' home, not in the release, and the official metadata was never fetched.
    home = Path(ir_datasets.util.home_path())
    assert list(home.rglob("*.pklz4")) and not list(out.rglob("*.pklz4"))
    assert not (home / "clirmatrix").exists() or not any((home / "clirmatrix").iterdir())


def test_register_again_and_refusals(loaded, irds, tmp_path):
    out, ids = loaded
    assert irds.register(out, PREFIX) == ids  # same root and prefix: nothing new, no error
    assert irds.register(str(out) + "/", PREFIX) == ids

    other = tmp_path / "other"
    (other / "DOCS").mkdir(parents=True)
    shutil.copy(out / docs_file("docs", "de"), other / docs_file("docs", "de"))
    with pytest.raises(ValueError, match="already registered"):
        irds.register(other, PREFIX)
    with pytest.raises(ValueError, match="prefix"):
        irds.register(other, "clirmatrix")
    with pytest.raises(FileNotFoundError):
        irds.register(tmp_path / "empty", "test-empty")

    (other / IN_PROGRESS).write_text("")
    with pytest.raises(IncompleteBuildError):
        irds.register(other, "test-unfinished")
    with pytest.raises(IncompleteBuildError):
        irds.registered_ids(other, "test-unfinished")


def test_counts_from_manifest_else_from_the_file(loaded, irds, tmp_path):
    """A manifest entry wins (builds); a file it does not list is counted when asked, not at registration."""
    import ir_datasets

    from clirmatrix.pipeline.output.jsonl import MalformedRecordError

    out, _ = loaded
    root = tmp_path / "release"
    listed = query_file("bi139-base", "en", "de", "test1")
    damaged = query_file("bi139-base", "en", "de", "dev")
    for relative in (listed, docs_file("docs", "de")):
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(out / relative, root / relative)
    (root / damaged).write_bytes(b"not gzip")
    (root / MANIFEST).write_text(json.dumps({"files": {listed: {"records": 7777, "qrels": 8888}}}))

    assert irds.register(root, "test-manifest") == sorted(
        ["test-manifest/de", "test-manifest/de/bi139-base/en/test1", "test-manifest/de/bi139-base/en/dev"]
    )
    split_set = ir_datasets.load("test-manifest/de/bi139-base/en/test1")
    assert (split_set.queries_count(), split_set.qrels_count()) == (7777, 8888)
    assert split_set.docs_count() == len(read_docs(out / docs_file("docs", "de")))
    with pytest.raises(MalformedRecordError):
        ir_datasets.load("test-manifest/de/bi139-base/en/dev").queries_count()


def test_the_irds_command_lists_the_ids_and_how_to_load_them(built, capsys):
    from clirmatrix.cli import main

    out, _, _ = built
    assert main(["irds", str(out), "--prefix", "mine"]) == 0
    captured = capsys.readouterr()
    ids = captured.out.split()
    assert "mine/de" in ids and "mine/de/bi139-base/en/test1" in ids and "mine/ja/multi8/zh/test2" in ids
    assert "irds.register(" in captured.err and "ir_datasets.load('mine/" in captured.err


def test_query_files_without_their_docs_give_queries_and_qrels_and_a_clear_error_for_docs(loaded, irds, tmp_path, capsys):
    """A download of query files alone: no corpus id for the missing DOCS; its query ids say which file to fetch."""
    import ir_datasets

    from clirmatrix.cli import main

    out, _ = loaded
    root = tmp_path / "queries-only"
    path = query_file("bi139-base", "en", "de", "test1")
    (root / path).parent.mkdir(parents=True)
    shutil.copy(out / path, root / path)
    assert irds.register(root, "test-nodocs") == ["test-nodocs/de/bi139-base/en/test1"]  # no "test-nodocs/de" corpus
    assert irds.without_docs(irds.registered_ids(root, "test-nodocs"), "test-nodocs") == {"test-nodocs/de/bi139-base/en/test1": "DOCS/de.tsv.gz"}
    dataset = ir_datasets.load("test-nodocs/de/bi139-base/en/test1")
    assert not dataset.has_docs() and dataset.has_queries() and dataset.has_qrels()
    assert [q.query_id for q in dataset.queries_iter()] == [r["src_id"] for r in read_queries(root / path)]
    with pytest.raises(irds.DocsNotDownloadedError, match=r"DOCS/de\.tsv\.gz is not there.*clirmatrix download docs --tgt de"):
        dataset.docs_iter()
    assert main(["irds", str(root), "--prefix", "test-nodocs"]) == 0
    captured = capsys.readouterr()
    assert captured.out.split() == ["test-nodocs/de/bi139-base/en/test1"] and "DOCS/de.tsv.gz is not there" in captured.err
