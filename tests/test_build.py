"""``clirmatrix build`` end to end on generated dumps of the 8 MULTI-8 languages (docs/method.md sections 2-10)."""

from __future__ import annotations

import gzip
import shutil
from collections import defaultdict
from pathlib import Path

import orjson
import pytest
from conftest import EVAL, TRAIN, build_config, released

from clirmatrix.pipeline.config import DEFAULT_EVAL_SIZE, DEFAULT_TRAIN_SIZE
from clirmatrix.pipeline.method.languages import MULTI8_LANGUAGES
from clirmatrix.pipeline.output import layout
from clirmatrix.pipeline.tools.validate import validate


def _lines(path: Path) -> list[dict]:
    with gzip.open(path, "rb") as handle:
        return [orjson.loads(line) for line in handle if line.strip()]


def _entity_of(world) -> dict[tuple[str, str], str]:
    return {(lang, doc_id): entity.qid for entity in world.entities for lang, doc_id in entity.doc_ids.items()}


def test_output_has_exactly_the_release_layout(built):
    out, result, _ = built
    langs = MULTI8_LANGUAGES
    expected = {layout.query_file(s, x, y, split) for s in layout.QUERY_SETS for x in langs for y in langs if x != y for split in layout.SPLITS}
    expected |= {layout.docs_file(d, lang) for d in layout.DOC_SETS for lang in langs}
    every = {str(p.relative_to(out)) for p in out.rglob("*") if p.is_file() and ".work" not in p.parts}
    files = {path for path in every if layout.parse_path(path)}
    assert files == expected
    others = {path for path in every if not layout.parse_path(path)}
    assert {layout.INDEX, layout.MANIFEST, layout.CARD} <= others
    assert all(path in (layout.INDEX, layout.MANIFEST, layout.REPORT, layout.CARD) or path.startswith("stats/") for path in others)


def test_validate_passes_on_the_build_with_the_sizes_it_was_built_with(built):
    """The build's own --train-size and --eval-size come from its manifest.json; flags still override them."""
    out, _, _ = built
    assert TRAIN < DEFAULT_TRAIN_SIZE and EVAL < DEFAULT_EVAL_SIZE  # the release's sizes would not find what this checks
    report = validate(str(out))
    assert report.ok, report
    smaller = validate(str(out), eval_size=EVAL // 2)
    assert not smaller.ok and any("dev" in failure.path for failure in smaller.failures)


def test_index_lists_every_file_with_its_md5(built):
    import hashlib

    out, _, _ = built
    index = orjson.loads(gzip.decompress((out / layout.INDEX).read_bytes()))
    entries = {entry["cache_path"]: entry for context in index.values() for entry in context.values()}
    assert len(entries) == 3 * 8 * 7 * 4 + 2 * 8
    for path, entry in entries.items():
        assert entry["expected_md5"] == hashlib.md5((out / path).read_bytes()).hexdigest()
    entry = index["clirmatrix_bi139_base"]["queries/en_de/dev"]
    assert entry["url"] == (out / "BI-139/base/en/en.de.dev.base.jl.gz").resolve().as_uri()  # absolute: fetchable from the index alone
    assert entry["size_hint"] == entry["size"] == (out / "BI-139/base/en/en.de.dev.base.jl.gz").stat().st_size


def test_download_all_languages_of_a_build_fetches_what_its_index_lists(built, tmp_path, capsys):
    from clirmatrix.cli import main

    out, _, _ = built
    moved = tmp_path / "published"  # a build moved after it was written: its file:// URLs lead nowhere ...
    shutil.copytree(out, moved, ignore=shutil.ignore_patterns(".work"))
    index_bytes = gzip.decompress((moved / layout.INDEX).read_bytes()).replace(out.resolve().as_uri().encode(), b"file:///gone")
    (moved / layout.INDEX).write_bytes(gzip.compress(index_bytes))  # ... so the files are found beside the index
    for origin in (out, moved):
        got = tmp_path / f"got-{origin.name}"
        assert main(["download", "docs", "--base-url", str(origin), "--to", str(got)]) == 0  # --tgt all: the 8 of the index
        assert sorted(p.name for p in (got / "DOCS").iterdir()) == sorted(f"{lang}.tsv.gz" for lang in MULTI8_LANGUAGES)
        assert main(["download", "bi139-base", "--src", "en", "--split", "dev", "--base-url", str(origin), "--to", str(got)]) == 0
        assert len(list((got / "BI-139" / "base" / "en").iterdir())) == 7
    assert not [line for line in capsys.readouterr().err.splitlines() if line.startswith("failed ")]  # no file failed


def test_base_queries_have_100_candidates_and_their_own_article_at_label_6(built):
    out, _, world = built
    entity_of = _entity_of(world)
    doc_of = {(entity.qid, lang): doc for entity in world.entities for lang, doc in entity.doc_ids.items()}
    checked = 0
    for path in sorted((out / "BI-139" / "base" / "en").glob("en.*.base.jl.gz")):
        tgt = path.name.split(".")[1]
        for record in _lines(path):
            results = dict(map(tuple, record["tgt_results"]))
            assert len(record["tgt_results"]) == len(results) == 100
            assert set(results.values()) <= set(range(7)) and max(results.values()) >= 1
            own = doc_of.get((entity_of.get(("en", record["src_id"])), tgt))
            if own is not None:
                assert results.get(own) == 6
                checked += 1
    assert checked > 100


def test_bi139_lists_queries_by_src_id_and_lines_are_json_dumps_bytes(built):
    import json

    out, _, _ = built
    for path in sorted(out.glob("BI-139/*/*/*.jl.gz")) + sorted(out.glob("MULTI-8/*/*.jl.gz")):
        lines = gzip.decompress(path.read_bytes()).splitlines()
        assert all(line == json.dumps(json.loads(line)).encode() for line in lines), path
        ids = [int(json.loads(line)["src_id"]) for line in lines]
        if "BI-139" in path.parts:
            assert ids == sorted(ids), path  # as the release: numeric src_id order
    multi8 = [int(json.loads(line)["src_id"]) for line in gzip.decompress((out / layout.query_file("multi8", "en", "de", "train")).read_bytes()).splitlines()]
    assert multi8 != sorted(multi8)  # one seeded order, shared by every target


def test_full_holds_only_labelled_documents_and_contains_base(built):
    out, _, _ = built
    for split in layout.SPLITS:
        full = {r["src_id"]: dict(map(tuple, r["tgt_results"])) for r in _lines(out / layout.query_file("bi139-full", "de", "fr", split))}
        base = _lines(out / layout.query_file("bi139-base", "de", "fr", split))
        assert all(min(results.values()) >= 1 for results in full.values())
        for record in base:
            labelled = {doc: label for doc, label in record["tgt_results"] if label > 0}
            assert labelled.items() <= full[record["src_id"]].items()


def test_eval_sets_have_eval_size_queries_and_full_shares_them_with_base(built):
    out, _, _ = built
    directions = 0
    for src in MULTI8_LANGUAGES:
        for tgt in (lang for lang in MULTI8_LANGUAGES if lang != src):
            full = {split: [r["src_id"] for r in _lines(out / layout.query_file("bi139-full", src, tgt, split))] for split in layout.SPLITS}
            base = {split: [r["src_id"] for r in _lines(out / layout.query_file("bi139-base", src, tgt, split))] for split in layout.SPLITS}
            queries = sum(len(ids) for ids in full.values())
            assert queries >= 4 * EVAL  # the sample's directions are all large enough for ...
            for split in layout.EVAL_SPLITS:
                assert len(full[split]) == EVAL and base[split] == full[split]  # ... eval_size each, the same in base and full
            assert len(base["train"]) == min(TRAIN, len(full["train"])) and set(base["train"]) <= set(full["train"])
            directions += 1
    assert directions == 56


def test_split_sizes_and_no_entity_crosses_splits(built):
    out, _, world = built
    entity_of = _entity_of(world)
    split_of_entity: dict[str, set[str]] = defaultdict(set)
    for path in released(out):
        found = layout.parse_path(path)
        if found is None or found.dataset not in layout.QUERY_SETS:
            continue
        records = _lines(out / path)
        if found.dataset != "bi139-full":
            assert len(records) <= (TRAIN if found.split == "train" else EVAL)
        for record in records:
            entity = entity_of.get((found.src, record["src_id"]))
            if entity:
                split_of_entity[entity].add(found.split)
    assert split_of_entity and all(len(splits) == 1 for splits in split_of_entity.values())
    assert len(_lines(out / layout.query_file("bi139-base", "en", "de", "train"))) == TRAIN


def test_multi8_queries_are_aligned_across_target_languages(built):
    out, _, _ = built
    for split in ("train", "test1"):
        orders = {tgt: [r["src_id"] for r in _lines(out / layout.query_file("multi8", "en", tgt, split))] for tgt in MULTI8_LANGUAGES if tgt != "en"}
        first = next(iter(orders.values()))
        assert first and all(order == first for order in orders.values())
    # A target's list is the same whichever language asks.
    de_from_en = _lines(out / layout.query_file("multi8", "en", "de", "dev"))
    de_from_fr = _lines(out / layout.query_file("multi8", "fr", "de", "dev"))
    assert [r["tgt_results"] for r in de_from_en] == [r["tgt_results"] for r in de_from_fr]
    assert all(len(r["tgt_results"]) == 100 for r in de_from_en)


def test_docs_files_hold_every_document_once(built):
    out, result, _ = built
    rows = gzip.decompress((out / "DOCS" / "ja.tsv.gz").read_bytes()).decode().splitlines()
    ids = [row.split("\t", 1)[0] for row in rows]
    assert len(ids) == len(set(ids)) == result.summaries["extract_docs"].languages["ja"].docs
    assert all(row.count("\t") == 1 for row in rows)
    full = gzip.decompress((out / "DOCS-FULL" / "ja.tsv.gz").read_bytes()).decode().splitlines()
    assert [row.split("\t", 1)[0] for row in full] == ids
    assert sum(map(len, full)) >= sum(map(len, rows))


def test_stats_counted_while_writing_equal_a_count_of_the_files(built, tmp_path):
    from clirmatrix.beam_jobs.stats import counted_while_writing, run

    out, result, _ = built
    written = sorted(counted_while_writing(result.work), key=lambda row: (row.dataset, row.src, row.tgt, row.split))
    recount = tmp_path / "recount"
    for folder in ("BI-139", "MULTI-8"):
        shutil.copytree(out / folder, recount / folder)
    run(["--out", str(recount), "--work", str(tmp_path / "counts"), "--runner=FnApiRunner"])
    assert (recount / layout.STATS_DIR / "bi139_full.tsv").read_bytes() == (out / layout.STATS_DIR / "bi139_full.tsv").read_bytes()
    assert len(written) == 3 * 8 * 7 * 4 and any(row.docs_ge4 for row in written)
    assert {p.suffix for p in (out / layout.STATS_DIR).iterdir()} == {".tsv", ".png"}


@pytest.mark.slow
def test_same_inputs_give_byte_identical_output_and_a_rerun_skips_every_stage(built, world8, tmp_path):
    from clirmatrix.beam_jobs.all_stages import STAGE_NAMES
    from clirmatrix.beam_jobs.build import run_build

    out, first, _ = built
    dumps, _ = world8
    other = tmp_path / "again"
    run_build(build_config(dumps, other))
    assert released(out) == released(other)

    records = {p.name: p.stat().st_mtime_ns for p in (other / ".work" / "_stages").glob("*.json")}
    rerun = run_build(build_config(dumps, other))
    assert {p.name: p.stat().st_mtime_ns for p in (other / ".work" / "_stages").glob("*.json")} == records
    assert rerun.skipped == list(STAGE_NAMES)


@pytest.mark.slow
def test_a_new_seed_reruns_only_what_depends_on_it(world8, built, tmp_path):
    from clirmatrix.beam_jobs.build import run_build

    dumps, _ = world8
    out = tmp_path / "seeded"
    run_build(build_config(dumps, out))
    stages = out / ".work" / "_stages"
    before = {p.stem: p.stat().st_mtime_ns for p in stages.glob("*.json") if p.stem != "checksums"}
    train = _lines(out / layout.query_file("bi139-base", "en", "de", "train"))
    run_build(build_config(dumps, out, seed=99))
    after = {p.stem: p.stat().st_mtime_ns for p in stages.glob("*.json") if p.stem != "checksums"}
    assert {name for name in before if before[name] != after[name]} == {"write_release", "stats"}
    assert _lines(out / layout.query_file("bi139-base", "en", "de", "train")) != train


def test_build_command_with_a_config_file_and_a_missing_language(world8, tmp_path, capsys):
    from clirmatrix.cli import main

    dumps, _ = world8
    config = tmp_path / "build.yaml"
    config.write_text(f"dumps: {dumps}\nout: {tmp_path / 'out'}\nlangs: [en, de, xx]\nmin_docs: 100\nmax_bad_fraction: 0.01\nworkers: 1\n")
    assert main(["build", "--config", str(config), "--train-size", "20"]) == 2  # xx is no Wikipedia: an error ...
    assert "xx: not a Wikipedia language code" in capsys.readouterr().err and not (tmp_path / "out").exists()
    config.write_text(config.read_text() + "skip_missing: true\n")  # ... unless asked to skip it
    assert main(["build", "--config", str(config), "--train-size", "20"]) == 0
    assert len(_lines(tmp_path / "out" / layout.query_file("bi139-base", "en", "de", "train"))) == 20
    assert not (tmp_path / "out" / "MULTI-8").exists()
    manifest = orjson.loads((tmp_path / "out" / layout.MANIFEST).read_bytes())
    assert manifest["languages"] == ["de", "en"] and any("xx" in note for note in manifest["notes"])
    assert all(len(entry["md5"]) == 32 for entry in manifest["inputs"])


@pytest.mark.slow
def test_a_build_with_worker_processes_prints_progress_without_beams_start_up_lines(world8, tmp_path, capfd):
    from clirmatrix.cli import main

    dumps, _ = world8
    args = ["build", "--dumps", str(dumps), "--out", str(tmp_path / "out"), "--langs", "en,de", "--min-docs", "100"]
    assert main(args + ["--max-bad-fraction", "0.01", "--train-size", "20", "--workers", "2"]) == 0
    err = capfd.readouterr().err  # the worker processes write to the terminal's file descriptor, not to sys.stderr
    assert "retrieve: done in" in err and "write_release: done in" in err
    for beam_line in ("Logging handler created", "Pipeline_options", "sdk_worker", "apitools", "state cache"):
        assert beam_line not in err


def test_elasticsearch_without_a_cluster_is_a_clear_error_before_any_work(world8, tmp_path, capsys, monkeypatch):
    import socket

    from clirmatrix.cli import main

    pytest.importorskip("elasticsearch", reason="the es extra is not installed")
    monkeypatch.delenv("CLIRMATRIX_ES_URL", raising=False)
    dumps, _ = world8
    args = ["build", "--dumps", str(dumps), "--out", str(tmp_path / "o"), "--engine", "elasticsearch"]
    assert main(args) == 2 and "needs --es-url" in capsys.readouterr().err
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}"
    assert main(args + ["--es-url", url]) == 2
    assert url in capsys.readouterr().err and not (tmp_path / "o").exists()


def test_label_stage_gives_a_query_without_hits_its_own_article():
    import numpy as np

    from clirmatrix.pipeline.method.labels import label_queries

    table = label_queries(np.array([1, 1], np.int32), np.array([4, 1], np.int32), np.array([3.0, 2.0], np.float32), 0, 3)
    rows = list(zip(*(table.column(name).to_pylist() for name in ("query", "doc", "label"))))
    assert rows == [(0, 0, 6), (1, 4, 5), (1, 1, 6), (2, 2, 6)]


def test_validate_command_exit_codes(built, tmp_path, capsys):
    from clirmatrix.cli import main

    out, _, _ = built
    assert main(["validate", str(out)]) == 0
    broken = tmp_path / "broken"
    shutil.copytree(out / "MULTI-8", broken / "MULTI-8")
    (broken / "MULTI-8" / "en" / "en.de.dev.jl.gz").write_bytes(gzip.compress(b'{"src_id": 5, "src_query": "x", "tgt_results": []}\n'))
    assert main(["validate", str(broken), "--train-size", str(TRAIN), "--eval-size", str(EVAL)]) == 1
    captured = capsys.readouterr()
    assert "malformed" in captured.err and "multi8-alignment" in captured.err  # the rules broken, in the table


@pytest.mark.slow
def test_a_killed_build_resumes_and_two_workers_write_the_same_bytes(built, world8, tmp_path, monkeypatch):
    from clirmatrix.beam_jobs.build import run_build
    from clirmatrix.pipeline.output import release

    out, _, _ = built
    dumps, _ = world8
    again = tmp_path / "killed"
    real_write_docs = release.write_docs

    def dies_on_zh(work_root, out_root, lang):
        if lang == "zh":
            raise KeyboardInterrupt("killed while writing DOCS/zh")
        return real_write_docs(work_root, out_root, lang)

    monkeypatch.setattr(release, "write_docs", dies_on_zh)
    with pytest.raises(BaseException, match="killed"):
        run_build(build_config(dumps, again))
    assert not any(p.name.startswith(".") and ".tmp-" in p.name for p in again.rglob("*"))  # no half-written file left
    assert not (again / layout.INDEX).exists()
    assert (again / layout.IN_PROGRESS).exists()  # marked unfinished: validate, download and the loader refuse it
    with pytest.raises(layout.IncompleteBuildError, match="incomplete build: rerun clirmatrix build"):
        validate(str(again))
    monkeypatch.setattr(release, "write_docs", real_write_docs)

    resumed = run_build(build_config(dumps, again, workers=2))
    assert not (again / layout.IN_PROGRESS).exists()
    assert resumed.skipped == ["extract_docs", "extract_sitelinks", "link_entities", "retrieve", "label", "propagate"]
    assert released(out) == released(again)


@pytest.mark.slow
def test_each_stage_command_in_turn_writes_what_the_build_writes(tmp_path_factory, tmp_path):
    """`python -m clirmatrix.beam_jobs.{stage}` for every stage, with the build's config file: the build's released bytes."""
    import importlib

    from conftest import write_sample

    from clirmatrix.beam_jobs.all_stages import STAGE_NAMES
    from clirmatrix.beam_jobs.build import run_build
    from clirmatrix.pipeline.config import resolve

    dumps, _ = write_sample(tmp_path_factory, ("en", "de"), seed=3)
    config = tmp_path / "build.toml"
    config.write_text(
        f'dumps = "{dumps}"\nmin_docs = 100\nmax_bad_fraction = 0.01\ntrain_size = {TRAIN}\neval_size = {EVAL}\nworkers = 1\nmulti_langs = ["de", "en"]\n'
    )
    run_build(resolve(str(config), {"out": str(tmp_path / "built")}))
    work, out = tmp_path / "work", tmp_path / "out"
    for name in STAGE_NAMES[:-1]:  # stats draws its tables in the build only
        argv = ["--config", str(config), "--work", str(work)] + (["--out", str(out)] if name == "write_release" else [])
        summary = importlib.import_module(f"clirmatrix.beam_jobs.{name}").run(argv)
        assert summary.stage == name
    mine = {path: data for path, data in released(tmp_path / "built").items() if not path.startswith(("stats/", "report", "README"))}
    assert released(out) == mine and any(path.startswith("MULTI-8/") for path in mine)
