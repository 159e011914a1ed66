"""No silent data loss: damaged dumps fail naming the file, partial builds are marked, the console says what happened.

Written from the user's side: the command, what it prints, what it exits with.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import fuzz_bench
import pytest
from conftest import EVAL, TRAIN

from clirmatrix.cli import main
from clirmatrix.pipeline.method.dumps import discover
from clirmatrix.pipeline.output import layout
from clirmatrix.pipeline.tools.loader import QuerySplit


@pytest.fixture(scope="module")
def clean_dumps(tmp_path_factory):
    """A clean 2-language sample (en CirrusSearch .gz, de CirrusSearch .gz, Wikidata .gz)."""
    from clirmatrix.pipeline.tools.sample import write_sample_dumps

    dumps = tmp_path_factory.mktemp("reliability") / "dumps"
    write_sample_dumps(dumps, docs_per_lang=200, langs=("en", "de"), seed=3, broken=False, inputs="classic")
    return dumps


def _build_args(dumps: Path, out: Path) -> list[str]:
    return ["build", "--dumps", str(dumps), "--out", str(out), "--min-docs", "50", "--train-size", "20", "--eval-size", "5", "--workers", "1"]


def _cut(path: Path, fraction: float) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * fraction)])


def test_damaged_dumps_fail_naming_the_file_or_account_for_every_record(tmp_path):
    # Every input kind x every damage, twice each; bench/fuzz_bench.py runs hundreds.
    inputs = fuzz_bench.prepare_inputs(tmp_path, docs_per_lang=120)
    outcomes = fuzz_bench.run_cases(inputs, 2 * len(inputs) * len(fuzz_bench.MUTATIONS), seed=11, work=tmp_path / "damaged")
    bad = [f"{o.verdict}: {o.input} {o.damage}: {o.detail}" for o in outcomes if o.verdict in ("lost", "crashed")]
    assert not bad, "\n".join(bad)
    assert all(o.verdict == "failed" for o in outcomes if o.mutation == "truncate")  # a cut file never passes
    assert {o.verdict for o in outcomes} == {"passed", "failed"}


def test_a_truncated_dump_stops_the_build_and_leaves_nothing_that_validates(clean_dumps, tmp_path, capsys):
    dumps = tmp_path / "dumps"
    shutil.copytree(clean_dumps, dumps)
    (english,) = dumps.glob("enwiki-*.json.gz")
    _cut(english, 0.6)
    out = tmp_path / "out"
    assert main(_build_args(dumps, out)) == 2
    err = capsys.readouterr().err
    assert f"{english}: truncated_stream at line" in err and "Traceback" not in err
    assert (out / layout.IN_PROGRESS).exists()
    assert main(["validate", str(out)]) == 2
    assert "incomplete build: rerun clirmatrix build" in capsys.readouterr().err
    assert main(["download", "docs", "--tgt", "en", "--base-url", str(out), "--to", str(tmp_path / "got")]) == 2
    assert "incomplete build" in capsys.readouterr().err
    with pytest.raises(layout.IncompleteBuildError):
        QuerySplit(out, "bi139-base", "en", "de", "train")


def test_a_truncated_wikidata_dump_is_fatal(clean_dumps, tmp_path, capsys):
    dumps = tmp_path / "dumps"
    shutil.copytree(clean_dumps, dumps)
    _cut(dumps / "latest-all.json.gz", 0.5)
    assert main(["extract", "--dumps", str(dumps), "--out", str(tmp_path / "work"), "--min-docs", "50", "--workers", "1"]) == 2
    err = capsys.readouterr().err
    assert "latest-all.json.gz: truncated_stream" in err and "Traceback" not in err


@pytest.mark.slow
def test_a_build_killed_while_writing_is_refused_until_it_is_rerun(clean_dumps, tmp_path, capsys):
    out = tmp_path / "out"
    command = [sys.executable, "-m", "clirmatrix.cli", *_build_args(clean_dumps, out)]
    build = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 300
        while not any((out / "BI-139").rglob("*.jl.gz")) and build.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert build.poll() is None, "the build ended before it was killed"
        os.killpg(build.pid, signal.SIGKILL)  # the build and its worker processes, as a crash would
    finally:
        build.wait()
    assert any((out / "BI-139").rglob("*.jl.gz")) and not (out / layout.MANIFEST).exists()
    assert main(["validate", str(out)]) == 2
    assert "incomplete build: rerun clirmatrix build" in capsys.readouterr().err
    assert main(_build_args(clean_dumps, out)) == 0  # the rerun resumes and finishes: the mark is gone
    assert not (out / layout.IN_PROGRESS).exists()
    assert main(["validate", str(out), "--train-size", "20", "--eval-size", "5"]) == 0


def test_validate_fails_a_build_with_an_indexed_file_missing(built, tmp_path, capsys):
    out, _, _ = built
    copy = tmp_path / "out"
    shutil.copytree(out, copy, ignore=shutil.ignore_patterns(".work"))
    (copy / "DOCS" / "ja.tsv.gz").unlink()
    assert main(["validate", str(copy), "--train-size", str(TRAIN), "--eval-size", str(EVAL)]) == 1
    err = capsys.readouterr().err  # piped (not a terminal): one whole line per finding
    assert "failure: DOCS/ja.tsv.gz: [missing-file] listed in downloads.json.gz (clirmatrix_docs / docs/ja) but not in the build" in err


def test_languages_without_a_dump_are_errors_unless_skipped(clean_dumps, tmp_path, capsys):
    assert main(_build_args(clean_dumps, tmp_path / "out") + ["--langs", "en,de,xx,yo"]) == 2
    err = capsys.readouterr().err
    assert "xx: not a Wikipedia language code (nearest: " in err and f"yo: no CirrusSearch, Enterprise HTML or XML dump found in {clean_dumps}" in err
    assert "--skip-missing" in err and not (tmp_path / "out").exists()  # nothing written before the check
    found = discover(str(clean_dumps), ["en", "de", "xx"], skip_missing=True)
    assert sorted(found.docs) == ["de", "en"] and any(note.startswith("xx: not a Wikipedia language code") for note in found.notes)


def test_a_dumps_folder_that_does_not_exist_says_so(tmp_path, capsys):
    assert main(_build_args(tmp_path / "nowhere", tmp_path / "out")) == 2
    assert f"the dumps folder {tmp_path / 'nowhere'} does not exist" in capsys.readouterr().err


def test_the_build_summary_shows_bad_records_by_kind(world8, tmp_path, capsys):
    dumps, _ = world8  # the sample's deliberate bad records: one per dump, as its truth file says
    truth = json.loads((dumps / "sample-truth.json").read_text())["bad_records"]
    args = _build_args(dumps, tmp_path / "out") + ["--langs", "en,de", "--max-bad-fraction", "0.01"]
    assert main(args) == 0
    err = capsys.readouterr().err
    assert "docs/_reports/en.json" in err
    for name in ("en", "de", "wikidata"):
        assert f"bad input {name}: {truth[name]} 1" in err


def test_a_bug_keeps_its_traceback_while_input_errors_are_messages(tmp_path, monkeypatch):
    import clirmatrix.pipeline.tools.validate as validate_module

    def buggy(*args, **kwargs):
        raise ValueError("a bug in our code")

    monkeypatch.setattr(validate_module, "validate", buggy)
    with pytest.raises(ValueError, match="a bug in our code"):
        main(["validate", str(tmp_path)])


def test_index_entries_are_matched_to_files_by_their_url(built, tmp_path):
    from clirmatrix.pipeline.tools.validate import validate

    out, _, _ = built
    copy = tmp_path / "download"
    shutil.copytree(out / "MULTI-8", copy / "MULTI-8")
    shutil.copy(out / layout.INDEX, copy / layout.INDEX)
    report = validate(str(copy), train_size=TRAIN, eval_size=EVAL)  # a partial download: absent files are one warning
    assert report.ok
    (warning,) = [w for w in report.warnings if w.rule == "missing-file"]
    assert "not here (a partial download)" in warning.message
    assert gzip.decompress((copy / layout.INDEX).read_bytes())


def test_damaged_released_files_never_pass_silently_through_download_validate_or_irds(built, tmp_path, monkeypatch):
    """bench/fuzz_bench.py --consumer in small: every served damage and every tree damage, twice each, on part of the sample build."""
    import fuzz_consumer

    monkeypatch.setenv("CLIRMATRIX_HOME", str(tmp_path / "home"))
    out = built[0]
    release = tmp_path / "release"  # a download of en <-> de: its files and the build's index
    for path in fuzz_consumer.released_files(out):
        item = layout.parse_path(path)
        if {item.src, item.tgt or item.src} <= {"en", "de"} and (item.split in (None, "dev", "test1")):
            (release / path).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(out / path, release / path)
    shutil.copy(out / layout.INDEX, release / layout.INDEX)
    cases = 2 * 2 * len(fuzz_consumer.SERVED)  # each served damage twice, with and without the index
    outcomes = fuzz_consumer.run_consumer_cases(release, cases, seed=5, work=tmp_path / "work")
    bad = [o for o in outcomes if o.verdict in fuzz_consumer.BAD]
    assert not bad, "\n".join(f"{o.verdict}: {o.side} {o.damage} {o.path}: {o.detail}" for o in bad)
    verdicts = {(o.side, o.damage): o.verdict for o in outcomes}
    assert verdicts[("download", "cut")] == verdicts[("download", "html")] == "refused" and verdicts[("download", "drop")] == "verified"
    tree = [o for o in outcomes if o.side == "validate"]
    assert {o.damage for o in tree} == set(fuzz_consumer.TREE) and all(o.verdict in ("failed", "warned") for o in tree)
    assert all(o.verdict == "error" for o in outcomes if o.side == "irds" and o.damage in ("cut", "html") and not o.path.startswith("DOCS-FULL"))
