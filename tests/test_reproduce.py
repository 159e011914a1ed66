"""``clirmatrix reproduce`` end to end on CPU: a toy release in three MULTI-8 languages, a tiny BERT, a few steps.

What a user checks: the tables come out whole (every cell of ours, the paper's figure
only where the dissertation printed one for that model and setting), with heat maps;
a rerun trains and evaluates nothing and writes the same bytes; a changed evaluation
setting recomputes the evaluations alone; bad input is one clear message.
"""

from __future__ import annotations

import re
import shutil

import pytest

torch = pytest.importorskip("torch", reason="reproduce trains: it needs the train extra (torch, transformers)")
pytest.importorskip("transformers", reason="reproduce needs the train extra")
pytest.importorskip("ir_measures", reason="reproduce needs the train extra")

from support.toy import build_tiny_backbone, write_toy_release  # noqa: E402

from clirmatrix.cli import main  # noqa: E402
from clirmatrix.models.metrics import MIXED, PAPER_MULTI8_MM_BEAT_BM, PAPER_NDCG10, ResultRow, read_results  # noqa: E402
from clirmatrix.models.reproduce import bi139_png, bi139_tsv, mixed_language_tsv, single_language_png, single_language_tsv  # noqa: E402
from clirmatrix.pipeline.method.languages import BI139_LANGUAGES, MULTI8_LANGUAGES  # noqa: E402
from clirmatrix.pipeline.output.jsonl import iter_docs  # noqa: E402

LANGS = ("de", "en", "fr")  # three MULTI-8 languages the toy can spell
PNG = b"\x89PNG\r\n\x1a\n"
# A few steps of a tiny cross-encoder: the tables' shape, not the models' quality, is under test here.
QUICK = ["--epochs", "1", "--steps", "2", "--batch-size", "4", "--dev-queries", "2", "--max-len", "48", "--eval-batch-size", "128", "--limit", "5", "--device", "cpu"]


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    """(release, model): MULTI-8 and BI-139 base files of the same three toy languages, and a tiny BERT.

    While the module's tests use it, torch runs on one thread: of the two cores pytest
    sees, one is enough for a tiny BERT, and timings stay steady.
    """
    root = tmp_path_factory.mktemp("toy")
    for dataset in ("multi8", "bi139-base"):  # the same DOCS both times: the toy is a pure function of its seed
        release = write_toy_release(root / "release", langs=LANGS, dataset=dataset, entities=120, splits={"train": 60, "dev": 20, "test1": 20})
    texts = [text for lang in release.langs for _, text in iter_docs(root / "release" / "DOCS" / f"{lang}.tsv.gz")]
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield root / "release", build_tiny_backbone(root / "model", texts)
    torch.set_num_threads(threads)


def reproduce(capsys, *args: str) -> tuple[int, str]:
    code = main(["reproduce", *args])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def summary_count(output: str, what: str) -> int:
    return int(re.search(rf"{re.escape(what)}\W+(\d+)", output).group(1))


def read_tsv(path) -> list[list[str]]:
    return [line.split("\t") for line in path.read_text(encoding="utf-8").splitlines()]


def finished_files(runs):
    return {path: path.stat().st_mtime_ns for pattern in ("*/state.json", "*/best/model.pt", "eval/*.json") for path in runs.glob(pattern)}


@pytest.mark.slow
def test_multi8_writes_tables_7_8_and_7_9_and_a_rerun_only_rewrites_them(toy, tmp_path, capsys):
    release, model = toy
    runs = tmp_path / "runs"
    command = ["multi8", "--data", str(release), "--init", str(model), "--runs", str(runs), "--langs", "fr,de,en", *QUICK]
    code, output = reproduce(capsys, *command)
    assert code == 0, output
    assert (summary_count(output, "runs trained"), summary_count(output, "evaluations computed")) == (7, 18)
    assert sorted(path.name for path in runs.iterdir() if path.name.startswith(("bm-", "mm"))) == ["bm-de-en", "bm-de-fr", "bm-en-de", "bm-en-fr", "bm-fr-de", "bm-fr-en", "mm"]

    tables = runs / "tables"
    single = read_tsv(tables / "table-7.8.tsv")
    assert single[0] == ["grid", "query", *LANGS]  # MULTI-8 order, whatever --langs' order
    grids = {}
    for name, src, *cells in single[1:]:
        grids.setdefault(name, {})[src] = dict(zip(LANGS, cells))
    assert list(grids) == ["BM", "BM paper", "BM - paper", "MM", "MM - BM", "MM > BM paper"]
    for name, grid in grids.items():
        assert list(grid) == list(LANGS), name
        assert all(grid[lang][lang] == "" for lang in LANGS), f"{name}: the diagonal is empty"
    pairs = [(s, t) for s in LANGS for t in LANGS if s != t]
    for s, t in pairs:
        bm, mm, paper = float(grids["BM"][s][t]), float(grids["MM"][s][t]), float(grids["BM paper"][s][t])
        assert 0.0 <= bm <= 1.0 and 0.0 <= mm <= 1.0
        assert paper == PAPER_NDCG10["multi8_bm"][(s, t)]  # a cross-encoder BM on a printed cell
        assert float(grids["BM - paper"][s][t]) == pytest.approx(bm - paper, abs=1e-4)
        assert float(grids["MM - BM"][s][t]) == pytest.approx(mm - bm, abs=2e-4)
        assert grids["MM > BM paper"][s][t] == ("▲" if (s, t) in PAPER_MULTI8_MM_BEAT_BM else "∇")

    mixed = read_tsv(tables / "table-7.9.tsv")
    assert mixed[0] == ["row", *LANGS]
    rows = {name: cells for name, *cells in mixed[1:]}
    assert list(rows) == ["BM z-norm", "BM z-norm paper", "BM z-norm - paper", "MM", "MM paper", "MM - paper", "MM over BM z-norm (%)"]
    assert all(0.0 <= float(cell) <= 1.0 for name in ("BM z-norm", "MM") for cell in rows[name])
    # Table 7.9 pools all 7 other languages; over two it is another setting, with no printed figure.
    assert all(cell == "" for name in ("BM z-norm paper", "BM z-norm - paper", "MM paper", "MM - paper") for cell in rows[name])
    for name in ("table-7.8.png", "table-7.9.png"):
        assert (tables / name).read_bytes().startswith(PNG)
    results = read_results(tables / "results-multi8.json")
    assert len(results) == 6 + 6 + 3 + 3 and {row.model_kind for row in results} == {"cross-encoder"}
    assert sorted((row.src, row.mixed_targets) for row in results if row.tgt == MIXED and row.training == "bm") == [("de", ("en", "fr")), ("en", ("de", "fr")), ("fr", ("de", "en"))]
    assert not [path for path in runs.rglob(".*")], "no temporary file is left behind"

    before, tsv = finished_files(runs), {name: (tables / name).read_bytes() for name in ("table-7.8.tsv", "table-7.9.tsv")}
    code, output = reproduce(capsys, *command)
    assert code == 0, output
    assert [summary_count(output, what) for what in ("runs trained", "runs reused (finished)", "evaluations computed", "evaluations from cache")] == [0, 7, 0, 18]
    assert finished_files(runs) == before
    assert {name: (tables / name).read_bytes() for name in tsv} == tsv

    # Another query limit is another evaluation: recomputed, still without training.
    code, output = reproduce(capsys, *command[:-4], "--limit", "3", "--device", "cpu")
    assert code == 0, output
    assert [summary_count(output, what) for what in ("runs trained", "evaluations computed")] == [0, 18]
    assert {row.queries for row in read_results(tables / "results-multi8.json")} == {3}

    # Other training settings in the same folder are refused before anything trains.
    code, output = reproduce(capsys, *command[:-4], "--limit", "3", "--device", "cpu", "--epochs", "2")
    assert code == 2 and "other settings (epochs in bm-de-en, bm-de-fr, bm-en-de and 4 more)" in output


def test_bi139_writes_table_7_6_with_paper_figures_for_the_cross_encoder_only(toy, tmp_path, capsys):
    release, model = toy
    code, output = reproduce(capsys, "bi139", "--data", str(release), "--init", str(model), "--runs", str(tmp_path / "cross"), "--src", "en", "--tgt", "fr", *QUICK)
    assert code == 0, output
    table = read_tsv(tmp_path / "cross" / "tables" / "table-7.6.tsv")
    assert table[0] == ["query", "document", "BM", "BM paper", "BM - paper"]
    ((src, tgt, ours, paper, delta),) = table[1:]
    assert (src, tgt, float(paper)) == ("en", "fr", PAPER_NDCG10["bi139_base_en_x"]["fr"])
    assert float(delta) == pytest.approx(float(ours) - float(paper), abs=1e-4)

    # A bi-encoder has no printed counterpart; without --tgt every target in the data is taken.
    code, output = reproduce(capsys, "bi139", "--data", str(release), "--init", str(model), "--runs", str(tmp_path / "bi"), "--model", "bi-encoder", *QUICK)
    assert code == 0, output
    assert summary_count(output, "runs trained") == 2
    table = read_tsv(tmp_path / "bi" / "tables" / "table-7.6.tsv")
    assert [(src, tgt, paper, delta) for src, tgt, _, paper, delta in table[1:]] == [("en", "de", "", ""), ("en", "fr", "", "")]
    assert all(0.0 <= float(ours) <= 1.0 for _, _, ours, _, _ in table[1:])
    assert (tmp_path / "bi" / "tables" / "table-7.6.png").read_bytes().startswith(PNG)


@pytest.mark.parametrize(
    "args, message",
    [(["multi8", "--langs", "en,xx"], "--langs xx: not a MULTI-8 language"),
     (["multi8", "--langs", "en"], "needs at least 2"),
     (["multi8", "--langs", "en,es"], "lacks MULTI-8/en/en.es.train.jl.gz"),
     (["multi8"], "MULTI-8 languages present: de, en, fr (choose with --langs)"),
     (["bi139", "--src", "en", "--tgt", "qq"], "--tgt qq: not a BI-139 language"),
     (["bi139", "--src", "en", "--tgt", "en"], "names no direction"),
     (["bi139", "--src", "es"], "no BI-139 base test1 files for es queries")],
)  # fmt: skip
def test_bad_input_is_one_clear_message(toy, tmp_path, capsys, args, message):
    release, model = toy
    code, output = reproduce(capsys, *args, "--data", str(release), "--init", str(model), "--runs", str(tmp_path / "runs"))
    assert code == 2 and message in output and "Traceback" not in output
    assert not (tmp_path / "runs").exists(), "nothing is trained or written"


def test_a_folder_without_multi8_files_is_named(toy, tmp_path, capsys):
    code, output = reproduce(capsys, "multi8", "--data", str(tmp_path), "--init", str(toy[1]), "--runs", str(tmp_path / "runs"))
    assert code == 2 and f"{tmp_path} holds no MULTI-8 files" in output and "clirmatrix download multi8" in output


def test_full_tables_have_every_printed_figure_and_no_other(tmp_path):
    """All 8 languages (too many runs for a test): rows as evaluate makes them, a measure derived from the direction."""

    def row(src, tgt, training, kind="cross-encoder"):
        score = (MULTI8_LANGUAGES.index(src) * 8 + (MULTI8_LANGUAGES.index(tgt) if tgt in MULTI8_LANGUAGES else 8)) / 100
        targets = tuple(lang for lang in MULTI8_LANGUAGES if lang != src) if tgt == MIXED else ()
        return ResultRow("run", "multi8", src, tgt, "test1", {"ndcg@10": score}, training=training, model_kind=kind, mixed_targets=targets)

    pairs = [(s, t) for s in MULTI8_LANGUAGES for t in MULTI8_LANGUAGES if s != t]
    bm, mm = {pair: row(*pair, "bm") for pair in pairs}, {pair: row(*pair, "mm") for pair in pairs}
    grids = {}
    for name, src, *cells in (line.split("\t") for line in single_language_tsv(bm, mm, MULTI8_LANGUAGES).decode().splitlines()[1:]):
        grids.setdefault(name, {}).update({(src, tgt): cell for tgt, cell in zip(MULTI8_LANGUAGES, cells) if tgt != src})
    assert {pair: float(cell) for pair, cell in grids["BM paper"].items()} == PAPER_NDCG10["multi8_bm"]
    assert {pair for pair, mark in grids["MM > BM paper"].items() if mark == "▲"} == PAPER_MULTI8_MM_BEAT_BM
    assert all(cell for cell in grids["MM"].values())

    mixed = {
        name: cells
        for name, *cells in (
            line.split("\t")
            for line in mixed_language_tsv({src: row(src, MIXED, "bm") for src in MULTI8_LANGUAGES}, {src: row(src, MIXED, "mm") for src in MULTI8_LANGUAGES}, MULTI8_LANGUAGES).decode().splitlines()
        )
    }
    assert [float(cell) for cell in mixed["BM z-norm paper"]] == [PAPER_NDCG10["multi8_mixed_bm_znorm"][src] for src in MULTI8_LANGUAGES]
    assert [float(cell) for cell in mixed["MM paper"]] == [PAPER_NDCG10["multi8_mixed_mm"][src] for src in MULTI8_LANGUAGES]

    bi = {("en", tgt): ResultRow("run", "bi139-base", "en", tgt, "test1", {"ndcg@10": 0.5}, model_kind="cross-encoder") for tgt in BI139_LANGUAGES if tgt != "en"}
    lines = [line.split("\t") for line in bi139_tsv(bi).decode().splitlines()[1:]]
    assert len(lines) == 138 and {tgt for _, tgt, _, paper, _ in lines if not paper} == {"id"}  # "id .00": an extraction error (docs/models.md §8.5)
    assert bi139_png(bi).startswith(PNG) and single_language_png(bm, mm, MULTI8_LANGUAGES).startswith(PNG)


@pytest.mark.slow
def test_multi8_on_a_sample_build_writes_complete_grids(built, tmp_path, capsys):
    """``clirmatrix build`` output, not the toy: ids, candidates and DOCS as the pipeline writes them."""
    out = tmp_path / "build"  # a copy: training caches its stores inside the data folder, and other tests compare the build's bytes
    shutil.copytree(built[0], out)
    texts = [text for lang in ("de", "en", "fr") for _, text in iter_docs(out / "DOCS" / f"{lang}.tsv.gz")]
    model = build_tiny_backbone(tmp_path / "model", texts)
    runs = tmp_path / "runs"
    code, output = reproduce(capsys, "multi8", "--data", str(out), "--init", str(model), "--runs", str(runs), "--langs", "de,en,fr", *QUICK)
    assert code == 0, output
    grids: dict = {}
    for name, src, *cells in read_tsv(runs / "tables" / "table-7.8.tsv")[1:]:
        grids.setdefault(name, {})[src] = dict(zip(LANGS, cells))
    for name in ("BM", "MM", "MM - BM"):
        assert all(grids[name][s][t] != "" for s in LANGS for t in LANGS if s != t), f"{name} has empty cells"
    mixed = {name: cells for name, *cells in read_tsv(runs / "tables" / "table-7.9.tsv")[1:]}
    assert all(cell != "" for name in ("BM z-norm", "MM", "MM over BM z-norm (%)") for cell in mixed[name])
