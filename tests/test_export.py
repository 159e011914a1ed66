"""``clirmatrix export`` read back by the real tools: Hugging Face datasets, BEIR's loader, Anserini; and the dataset card."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import orjson
import pytest
import yaml
from conftest import build_config, write_sample

from clirmatrix.beam_jobs.export import run_export
from clirmatrix.cli import main
from clirmatrix.pipeline.output import layout
from clirmatrix.pipeline.output.jsonl import iter_docs, walk_release
from clirmatrix.pipeline.tools.export import IN_PROGRESS, REPORTS, plan_export
from clirmatrix.pipeline.tools.loader import QuerySplit

LANGS = ("de", "en", "fr")


@pytest.fixture(scope="module")
def build(tmp_path_factory):
    """A build of 3 languages with BI-139 and MULTI-8 (all 3 as its languages)."""
    from clirmatrix.beam_jobs.build import run_build

    dumps, _ = write_sample(tmp_path_factory, LANGS, seed=11)
    out = tmp_path_factory.mktemp("export-build") / "out"
    run_build(build_config(dumps, out, multi_langs=LANGS))
    return out


def _query_files(out: Path) -> list[layout.ReleasedFile]:
    return [item for _, item in walk_release(out) if item is not None and item.dataset in layout.QUERY_SETS]


def _triples(out: Path, item: layout.ReleasedFile) -> list[tuple[str, str, int]]:
    """What the project's own loader reads of a released file: (query id, document id, label), in file order."""
    return list(QuerySplit(out, item.dataset, item.src, item.tgt, item.split).qrels())


def _queries(out: Path, item: layout.ReleasedFile) -> dict[str, str]:
    return dict(QuerySplit(out, item.dataset, item.src, item.tgt, item.split).queries())


def test_hf_every_config_and_split_loads_offline_with_the_builds_counts_and_triples(build, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    import datasets

    to = tmp_path / "hf"
    result = run_export(plan_export(build, "hf"), str(to), workers=2)
    card = (to / "README.md").read_text()
    front = yaml.safe_load(card.split("---\n")[1])
    configs = {config["config_name"]: {entry["split"]: entry["path"] for entry in config["data_files"]} for config in front["configs"]}
    files = _query_files(build)
    assert len(configs) == len({(f.dataset, f.src, f.tgt) for f in files}) + len(LANGS)
    manifest = orjson.loads((build / layout.MANIFEST).read_bytes())
    for item in files:
        name = f"{item.dataset}_{item.src}_{item.tgt}"
        loaded = datasets.load_dataset(str(to), name, split=item.split, cache_dir=str(tmp_path / "cache"))
        assert loaded.num_rows == manifest["files"][item.path]["records"]
        got = [(row["src_id"], result["doc_id"], result["label"]) for row in loaded for result in row["tgt_results"]]
        assert got == _triples(build, item), item.path
        assert dict(zip(loaded["src_id"], loaded["src_query"], strict=True)) == _queries(build, item)
    for lang in LANGS:
        corpus = datasets.load_dataset(str(to), f"docs_{lang}", split="corpus", cache_dir=str(tmp_path / "cache"))
        assert list(zip(corpus["doc_id"], corpus["text"], strict=True)) == list(iter_docs(build / layout.docs_file("docs", lang)))
    assert result.rows == sum(manifest["files"][f.path]["records"] for f in files) + manifest["counts"]["sets"]["docs"]["lines"]
    assert "## Licences" in card and "CC BY-SA 4.0" in card and "CC0" in card and "@inproceedings{sun-duh-2020-clirmatrix" in card


def test_beir_loads_every_direction_and_split_with_one_corpus_per_language(build, tmp_path):
    from beir.datasets.data_loader import GenericDataLoader

    to = tmp_path / "beir"
    assert main(["export", str(build), "--format", "beir", "--to", str(to)]) == 0
    files = _query_files(build)
    inodes = defaultdict(set)
    for item in files:
        folder = to / item.dataset / f"{item.src}_{item.tgt}"
        corpus, queries, qrels = GenericDataLoader(data_folder=str(folder)).load(split=item.split)
        docs = dict(iter_docs(build / layout.docs_file("docs", item.tgt)))
        assert {doc_id: entry["text"] for doc_id, entry in corpus.items()} == docs
        triples = _triples(build, item)
        assert sorted((q, d, s) for q, judged in qrels.items() for d, s in judged.items()) == sorted(triples)
        assert queries == {q: text for q, text in _queries(build, item).items() if q in qrels}
        inodes[item.tgt].add(os.stat(folder / "corpus.jsonl").st_ino)
    assert all(len(found) == 1 for found in inodes.values())  # one corpus file per document language, linked into its directions
    assert sorted(p.parent.name for p in (to / "corpora").glob("*/corpus.jsonl")) == sorted(LANGS)


def test_pyserini_round_trips_and_anserini_indexes_and_searches_it(build, tmp_path):
    import ir_measures

    to = tmp_path / "pyserini"
    run_export(plan_export(build, "pyserini"), str(to))
    for item in _query_files(build):
        stem = f"{item.dataset}/{item.src}_{item.tgt}.{item.split}"
        topics = dict(line.split("\t", 1) for line in (to / "topics" / f"{stem}.tsv").read_text().splitlines())
        assert topics == _queries(build, item)
        qrels = [(q.query_id, q.doc_id, q.relevance) for q in ir_measures.read_trec_qrels(str(to / "qrels" / f"{stem}.txt"))]
        assert qrels == _triples(build, item)
    from support import lucene_jar

    reason = lucene_jar.available()
    if reason:
        pytest.skip(f"Anserini cannot run here: {reason}")
    java = [str(lucene_jar.java_home() / "bin" / "java"), "-cp", str(lucene_jar.anserini_jar())]
    index = tmp_path / "index-de"
    indexed = subprocess.run(java + ["io.anserini.index.IndexCollection", "-collection", "JsonCollection", "-input", str(to / "collections" / "de"),
                                     "-index", str(index), "-generator", "DefaultLuceneDocumentGenerator", "-threads", "1", "-language", "de"],
                             capture_output=True, text=True, check=True)
    docs = sum(1 for _ in iter_docs(build / layout.docs_file("docs", "de")))
    assert f"Total {docs:,} documents indexed" in indexed.stdout + indexed.stderr
    run = tmp_path / "run.txt"
    topics = to / "topics" / "bi139-base" / "en_de.test1.tsv"
    searched = subprocess.run(java + ["io.anserini.search.SearchCollection", "-index", str(index), "-topics", str(topics), "-topicReader", "TsvString",
                                      "-output", str(run), "-bm25", "-hits", "100", "-language", "de"], capture_output=True, text=True, check=True)
    assert f"{len(topics.read_text().splitlines())} queries processed" in searched.stdout + searched.stderr
    qrels = list(ir_measures.read_trec_qrels(str(to / "qrels" / "bi139-base" / "en_de.test1.txt")))
    scored = ir_measures.calc_aggregate([ir_measures.nDCG @ 10, ir_measures.R @ 100], qrels, list(ir_measures.read_trec_run(str(run))))
    assert set(scored) == {ir_measures.nDCG @ 10, ir_measures.R @ 100} and all(0 <= value <= 1 for value in scored.values())
    # The sample's languages share no words, so BM25 across them finds little; the ids it finds are the collection's.
    collection = {orjson.loads(line)["id"] for line in (to / "collections" / "de" / "docs.jsonl").read_bytes().splitlines()}
    assert {hit.doc_id for hit in ir_measures.read_trec_run(str(run))} <= collection


def test_an_export_resumes_skipping_what_is_done_and_marks_itself_unfinished_until_the_end(build, tmp_path):
    to = tmp_path / "beir"
    plan = plan_export(build, "beir", sets=["multi8"])
    first = run_export(plan, str(to))
    assert first.skipped == 0 and not (to / IN_PROGRESS).exists()
    lost = to / plan.tasks[-1].outputs[0]
    lost.unlink()
    (to / IN_PROGRESS).write_text("killed\n")  # as a killed run leaves it
    again = run_export(plan, str(to))
    assert again.skipped == len(plan.tasks) - 1 and lost.exists() and not (to / IN_PROGRESS).exists()
    assert again.rows == first.rows and again.qrels == first.qrels


def test_bad_choices_are_refused_naming_what_the_folder_has(build, tmp_path, capsys):
    assert main(["export", str(build), "--format", "hf", "--to", str(tmp_path / "x"), "--src", "sw"]) == 2
    assert "--src: sw not in this folder (it has de, en, fr)" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


def test_every_build_writes_its_dataset_card_and_the_report_links_it(build):
    card = (build / layout.CARD).read_text()
    manifest = orjson.loads((build / layout.MANIFEST).read_bytes())
    for entry in manifest["inputs"]:
        assert f"`{Path(entry['path']).name}`" in card and entry["md5"] in card
    front = yaml.safe_load(card.split("---\n")[1])
    assert front["license"] == "cc-by-sa-4.0" and front["language"] == list(LANGS)
    assert str(build) not in card and manifest["settings"]["dumps"] not in card  # no local path: the same inputs give the same card
    for name in ("## How it was built", "## Size", "## Statistics", "## Known limits", "## Licences", "## Citation"):
        assert name in card
    assert f"href='{layout.CARD}'" in (build / layout.REPORT).read_text()


def _export_command(root: Path, to: Path, *more: str) -> list[str]:
    return [sys.executable, "-m", "clirmatrix.cli", "export", str(root), "--format", "hf", "--to", str(to), "--workers", "1", *more]


def test_a_damaged_released_file_fails_the_export_in_one_line_naming_it_and_leaves_it_unfinished(build, tmp_path):
    """The real command: its stderr is the one error line (no pyarrow "Exception ignored in ParquetWriter.__del__"
    before it), exit 2, the folder marked, nothing written from the damaged file, no temporary file left."""
    import shutil

    copy = tmp_path / "copy"
    for folder in ("BI-139", "DOCS"):
        shutil.copytree(build / folder, copy / folder)
    damaged = copy / layout.query_file("bi139-base", "en", "de", "test1")
    damaged.write_bytes(damaged.read_bytes()[:200])
    to = tmp_path / "hf"
    done = subprocess.run(_export_command(copy, to, "--src", "en", "--tgt", "de", "--sets", "bi139-base", "--split", "test1"),
                          capture_output=True, text=True, env={**os.environ, "COLUMNS": "80"}, timeout=120)
    assert done.returncode == 2 and done.stderr.splitlines() == [
        f"error: {damaged}:1: damaged gzip stream (EOFError: Compressed file ended before the end-of-stream marker was reached); "
        f"nothing was exported from this released file and {to} stays unfinished (fetch it again, then rerun)"], done.stderr
    assert (to / IN_PROGRESS).exists() and not (to / "bi139-base" / "en_de" / "test1.parquet").exists()
    assert not [p for p in to.rglob("*") if ".tmp-" in p.name]


def test_ctrl_c_mid_export_is_one_line_and_130_and_a_rerun_finishes_it(build, tmp_path):
    """A SIGINT once the first unit is done: exit 130, one line, nothing unfinished under a final name; the rerun completes."""
    import signal
    import time

    import pyarrow.parquet as pq
    from conftest import sigint_as_in_a_terminal

    to = tmp_path / "hf"
    process = subprocess.Popen(_export_command(build, to), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=sigint_as_in_a_terminal,
                               env={**os.environ, "COLUMNS": "1000"})
    deadline = time.monotonic() + 60
    while not list((to / REPORTS).rglob("*.json")):  # a unit's report: its file written, and known to a rerun
        assert process.poll() is None and time.monotonic() < deadline, process.communicate()
        time.sleep(0.005)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=30)
    assert process.returncode == 130, (out, err)
    assert (out + err).split("\n") == [f"interrupted: {to} stays marked unfinished ({IN_PROGRESS}); the files exported so far are kept; "
                                       "run the same command again to resume", ""], out + err
    assert (to / IN_PROGRESS).exists() and not (to / "README.md").exists()
    for written in to.rglob("*.parquet"):  # under its own name: whole
        pq.read_metadata(written)
    (to / "docs" / ".de.parquet.tmp-0123456789ab").write_bytes(b"PAR1 half")  # what a worker ended by the Ctrl-C leaves
    plan = plan_export(build, "hf")
    again = run_export(plan, str(to), workers=1)
    manifest = orjson.loads((build / layout.MANIFEST).read_bytes())
    assert 0 < again.skipped < len(plan.tasks) and not (to / IN_PROGRESS).exists()
    assert again.rows == sum(manifest["files"][f.path]["records"] for f in _query_files(build)) + manifest["counts"]["sets"]["docs"]["lines"]
    assert not [p for p in to.rglob("*") if ".tmp-" in p.name]
