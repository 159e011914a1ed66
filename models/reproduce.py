"""``clirmatrix reproduce``: the dissertation's CLIRMatrix tables (7.6, 7.8, 7.9), trained, evaluated and compared.

The tables take many runs (MULTI-8: a bilingual model per ordered language pair and
one multilingual model; BI-139: a bilingual model per direction) and hundreds of
evaluations, so a crash or a kill half-way must cost nothing already done:

- runs go to ``RUNS/<name>`` (``bm-de-fr``, ``mm``, ``bi139-en-de``). A finished run
  (``state.json`` says done) is not touched; an interrupted one resumes from its
  checkpoints (``run_training``); a run with other settings is refused before
  anything trains, since mixing settings would make a table of two recipes;
- every evaluation is cached as ``RUNS/eval/<what>.json`` together with what it was
  computed from (the runs' ``args.json`` and ``state.json``, the data, the query
  limit), so a rerun computes only what is missing or stale;
- ``RUNS/tables/`` gets TSV grids laid out as the dissertation prints them, with
  our nDCG@10, the dissertation's (only where it printed one for this model and
  setting: ``metrics.paper_ndcg10``) and ours - paper, heat maps of them, and every
  row with MRR@100 and R@100 (``results-*.json``/``.txt``).

Everything is evaluated on test1, the split of every printed figure (docs/models.md §1).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import io
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import orjson

from clirmatrix.models.arguments import TrainArguments
from clirmatrix.models.evaluate import direction_row, evaluate_mixed, load_run, training_kind
from clirmatrix.models.metrics import MIXED, NDCG10, PAPER_MULTI8_MM_BEAT_BM, ResultRow, read_results, write_results
from clirmatrix.models.recipes.base import resolve_directions
from clirmatrix.models.train import ARGS, RunDirError, changed_settings, fit_max_len, run_training
from clirmatrix.pipeline.config import comma_list
from clirmatrix.pipeline.errors import InvalidInputError, MissingInputError
from clirmatrix.pipeline.io.localio import atomic_write
from clirmatrix.pipeline.method.languages import BI139_LANGUAGES, MULTI8_LANGUAGES, check_langs
from clirmatrix.pipeline.output import layout

SPLIT = "test1"  # every figure of Tables 7.6, 7.8 and 7.9 is on test1
TRAIN_SPLITS = ("train", "dev", SPLIT)  # what a run reads: training, checkpoint selection, the table
EVAL_DIR, TABLES_DIR = "eval", "tables"
MISSING_SHOWN = 5  # missing files named in an error; the rest are counted


@dataclass(frozen=True)
class PlannedRun:
    """One training run of a table: its directory name, query set and directions (as ``--src``/``--tgt``)."""

    name: str
    dataset: str
    src: str
    tgt: str

    @property
    def directions(self) -> list[tuple[str, str]]:
        return resolve_directions(self.src, self.tgt)

    @property
    def training(self) -> str:
        """``mm`` for the multilingual model (several directions), ``bm`` for a bilingual one."""
        return training_kind(self.directions)

    def arguments(self, template: TrainArguments, data: Path, init: str, runs: Path) -> TrainArguments:
        """The template's settings with this run's data, directions and directory."""
        return dataclasses.replace(template, data=str(data), init=init, out=str(runs / self.name), dataset=self.dataset, src=self.src, tgt=self.tgt)


@dataclass
class Summary:
    """What an invocation did: the end-of-command report and what the tests check."""

    trained: list[str] = field(default_factory=list)  # runs trained (or resumed) now
    reused: list[str] = field(default_factory=list)  # runs found finished
    evaluated: int = 0  # evaluations computed now
    cached: int = 0  # evaluations read from RUNS/eval
    files: list[Path] = field(default_factory=list)  # tables, heat maps and results written


# ---------------------------------------------------------------------------- checking the input


def multi8_languages(data: str | Path, langs: str | None = None) -> list[str]:
    """The MULTI-8 languages to reproduce (``--langs``, or all 8), in MULTI-8 order; every file their runs read must exist."""
    chosen = check_langs(langs, MULTI8_LANGUAGES, "--langs", "MULTI-8 language") if langs else list(MULTI8_LANGUAGES)
    chosen = [lang for lang in MULTI8_LANGUAGES if lang in chosen]
    if len(chosen) < 2:
        raise InvalidInputError(f"--langs names {len(chosen)} language ({', '.join(chosen)}); MULTI-8 retrieval needs at least 2")
    data = Path(data)
    layout.refuse_incomplete(data)
    present = sorted(path.name for path in (data / "MULTI-8").glob("*") if path.is_dir() and any(path.glob("*.jl.gz")))
    if not present:
        raise MissingInputError(f"{data} holds no MULTI-8 files; build them with clirmatrix build or fetch them with: clirmatrix download multi8 --to {data}")
    _check_files(data, "multi8", resolve_directions(",".join(chosen), ",".join(chosen)), f"MULTI-8 languages present: {', '.join(present)} (choose with --langs)")
    return chosen


def bi139_targets(data: str | Path, src: str, tgt: str | None = None) -> list[str]:
    """The BI-139 base targets of ``src`` queries: ``tgt``'s, or every one whose files are in ``data``."""
    data = Path(data)
    layout.refuse_incomplete(data)
    for flag, langs in (("--src", [src]), ("--tgt", comma_list(tgt or ""))):
        check_langs(langs, BI139_LANGUAGES, flag, "BI-139 language")
    if tgt:
        targets = [lang for lang in BI139_LANGUAGES if lang in comma_list(tgt) and lang != src]
        if not targets:
            raise InvalidInputError(f"--tgt {tgt} names no direction from {src} (source and target must differ)")
    else:
        suffix = f".{SPLIT}.base.jl.gz"
        found = {path.name[len(src) + 1 : -len(suffix)] for path in (data / "BI-139" / "base" / src).glob(f"{src}.*{suffix}")}
        targets = [lang for lang in BI139_LANGUAGES if lang in found]
        if not targets:
            raise MissingInputError(f"{data} holds no BI-139 base {SPLIT} files for {src} queries; fetch them with: clirmatrix download bi139-base --src {src} --to {data}")
    _check_files(data, "bi139-base", [(src, lang) for lang in targets], "choose the targets present with --tgt")
    return targets


def _check_files(data: Path, dataset: str, directions: Sequence[tuple[str, str]], hint: str) -> None:
    """Every query file and DOCS file the runs read, so a missing one stops us before hours of training, not after."""
    wanted = [layout.query_file(dataset, s, t, split) for s, t in directions for split in TRAIN_SPLITS]
    wanted += [layout.docs_file("docs", lang) for lang in sorted({lang for direction in directions for lang in direction})]
    missing = [path for path in wanted if not (data / path).is_file()]
    if missing:
        more = f" and {len(missing) - MISSING_SHOWN} more" if len(missing) > MISSING_SHOWN else ""
        raise MissingInputError(f"{data} lacks {', '.join(missing[:MISSING_SHOWN])}{more}; {hint}")


def multi8_plan(langs: Sequence[str]) -> list[PlannedRun]:
    """A bilingual run per ordered pair of ``langs`` (56 for all 8), then the multilingual run over all of them."""
    every = ",".join(langs)
    return [PlannedRun(f"bm-{s}-{t}", "multi8", s, t) for s, t in resolve_directions(every, every)] + [PlannedRun("mm", "multi8", every, every)]


def bi139_plan(src: str, targets: Sequence[str]) -> list[PlannedRun]:
    """A bilingual BI-139 base run per direction (named apart from MULTI-8's, which may share RUNS)."""
    return [PlannedRun(f"bi139-{src}-{tgt}", "bi139-base", src, tgt) for tgt in targets]


# ---------------------------------------------------------------------------- training


def finished(run_dir: Path) -> bool:
    """A run whose training ended (``state.json`` with done): nothing left to train."""
    state = run_dir / "state.json"
    return state.is_file() and bool(orjson.loads(state.read_bytes()).get("done"))


def _refuse_other_settings(arguments: Mapping[str, TrainArguments], runs: Path) -> None:
    """Stop before training anything when a run of the plan was trained with other settings: a table mixes no recipes."""
    clashes: dict[tuple[str, ...], list[str]] = {}
    for name, args in arguments.items():
        saved = runs / name / ARGS
        if saved.is_file() and (changed := tuple(changed_settings(args, saved))):
            clashes.setdefault(changed, []).append(name)
    if clashes:
        shown = "; ".join(f"{', '.join(changed)} in {', '.join(names[:3])}{f' and {len(names) - 3} more' if len(names) > 3 else ''}" for changed, names in clashes.items())
        raise RunDirError(f"{runs} holds runs trained with other settings ({shown}); give another --runs folder to train with these settings, or delete those runs")


def train_plan(plan: Sequence[PlannedRun], template: TrainArguments, data: Path, init: str, runs: Path, summary: Summary, show_progress: bool = True) -> None:
    """Train every planned run that has not finished; a half-finished one resumes from its checkpoints."""
    default_len = template.resolved().max_len
    fitted = fit_max_len(default_len, template.max_len is not None, init, template.model)  # before anything trains
    if fitted != default_len:  # the model's default cut to --init's positions: every run gets (and records) the cut length
        template = dataclasses.replace(template, max_len=fitted)
    arguments = {run.name: run.arguments(template, data, init, runs) for run in plan}
    _refuse_other_settings(arguments, runs)
    console = _console()
    for number, run in enumerate(plan, start=1):
        if finished(runs / run.name):
            summary.reused.append(run.name)
            continue
        directions = ", ".join(f"{s}→{t}" for s, t in run.directions)
        if show_progress:
            console.print(f"[bold]run {number}/{len(plan)}[/] {run.name}: {run.dataset} {directions}", highlight=False)
        run_training(arguments[run.name], show_progress=show_progress)
        summary.trained.append(run.name)


# ---------------------------------------------------------------------------- evaluating, with a cache


def _identity(run_dir: Path) -> str:
    """What a run's evaluations depend on: its settings and its end state (a retrained run differs)."""
    digest = hashlib.sha256()
    for name in (ARGS, "state.json"):
        digest.update((run_dir / name).read_bytes())
    return digest.hexdigest()[:16]


class Evaluations:
    """test1 results of the runs in ``runs``, each computed once and cached in ``RUNS/eval``."""

    def __init__(self, runs: Path, data: Path, limit: int, device: str, summary: Summary, advance: Callable[[], None]) -> None:
        self.runs, self.data, self.limit, self.device, self.summary, self.advance = runs, data, limit, device, summary, advance

    def _cached(self, name: str, run_names: Sequence[str], compute: Callable[[], ResultRow]) -> ResultRow:
        path = self.runs / EVAL_DIR / f"{name}.json"
        key = {"runs": {run: _identity(self.runs / run) for run in sorted(run_names)}, "data": str(self.data.resolve()), "limit": self.limit, "split": SPLIT}
        if path.is_file() and orjson.loads(path.read_bytes()).get("key") == key:
            self.summary.cached += 1
            (row,) = read_results(path)
        else:
            row = compute()
            write_results(path, [row], extra={"key": key})
            self.summary.evaluated += 1
        self.advance()
        return row

    def single(self, run: PlannedRun) -> dict[tuple[str, str], ResultRow]:
        """The run on each of its directions; the model is loaded once, and only if a result is missing."""
        model = functools.cache(lambda: load_run(self.runs / run.name, self.device, str(self.data)))

        def compute(src: str, tgt: str) -> ResultRow:
            return direction_row(model(), run.name, self.data, run.dataset, src, tgt, SPLIT, self.limit)

        return {(s, t): self._cached(f"{run.dataset}.{run.training}.{s}.{t}.{SPLIT}", [run.name], lambda s=s, t=t: compute(s, t)) for s, t in run.directions}

    def mixed(self, runs: Sequence[PlannedRun], src: str, langs: Sequence[str]) -> ResultRow:
        """Mixed-language retrieval of ``src`` queries over the other ``langs``: one MM, or BMs merged by z-score."""
        training = "mm" if len(runs) == 1 else "bm"
        targets = [lang for lang in langs if lang != src]
        return self._cached(
            f"multi8.{training}.{src}.{MIXED}-{'-'.join(targets)}.{SPLIT}",
            [run.name for run in runs],
            lambda: evaluate_mixed([self.runs / run.name for run in runs], self.data, SPLIT, src, self.limit, self.device, targets=targets),
        )


@contextmanager
def _evaluations(runs: Path, data: Path, limit: int, device: str, summary: Summary, total: int, show_progress: bool) -> Iterator[Evaluations]:
    """An ``Evaluations`` whose every result (computed or cached) advances a progress bar."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    with Progress(TextColumn("evaluating"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(), console=_console(), disable=not show_progress) as bar:
        task = bar.add_task("evaluate", total=total)
        yield Evaluations(runs, data, limit, device, summary, lambda: bar.advance(task))


def _console():
    from rich import get_console

    return get_console()  # the console run_training's progress bar draws on


# ---------------------------------------------------------------------------- the two commands


def reproduce_multi8(
    data: str | Path,
    init: str,
    runs: str | Path,
    template: TrainArguments | None = None,
    langs: str | None = None,
    limit: int = 0,
    show_progress: bool = True,
) -> Summary:
    """Tables 7.8 and 7.9: train the bilingual runs and the multilingual run, evaluate single- and mixed-language, write the tables."""
    data, runs, template = Path(data), Path(runs), template or TrainArguments()
    chosen = multi8_languages(data, langs)
    plan = multi8_plan(chosen)
    summary = Summary()
    train_plan(plan, template, data, init, runs, summary, show_progress)
    bilingual, multilingual = plan[:-1], plan[-1]
    total = 2 * len(bilingual) + 2 * len(chosen)
    with _evaluations(runs, data, limit, template.device, summary, total, show_progress) as evaluations:
        bm = {direction: row for run in bilingual for direction, row in evaluations.single(run).items()}
        mm = evaluations.single(multilingual)
        bm_mixed = {src: evaluations.mixed([run for run in bilingual if run.src == src], src, chosen) for src in chosen}
        mm_mixed = {src: evaluations.mixed([multilingual], src, chosen) for src in chosen}
    tables = runs / TABLES_DIR
    files = {
        "table-7.8.tsv": single_language_tsv(bm, mm, chosen),
        "table-7.8.png": single_language_png(bm, mm, chosen),
        "table-7.9.tsv": mixed_language_tsv(bm_mixed, mm_mixed, chosen),
        "table-7.9.png": mixed_language_png(bm_mixed, mm_mixed, chosen),
    }
    rows = [*bm.values(), *mm.values(), *bm_mixed.values(), *mm_mixed.values()]
    summary.files = _write_tables(tables, files, rows, "results-multi8")
    return summary


def reproduce_bi139(
    data: str | Path,
    init: str,
    runs: str | Path,
    template: TrainArguments | None = None,
    src: str = "en",
    tgt: str | None = None,
    limit: int = 0,
    show_progress: bool = True,
) -> Summary:
    """Table 7.6: a bilingual run per BI-139 base direction from ``src``, evaluated and written beside the printed figures."""
    data, runs, template = Path(data), Path(runs), template or TrainArguments()
    plan = bi139_plan(src, bi139_targets(data, src, tgt))
    summary = Summary()
    train_plan(plan, template, data, init, runs, summary, show_progress)
    with _evaluations(runs, data, limit, template.device, summary, len(plan), show_progress) as evaluations:
        rows = {direction: row for run in plan for direction, row in evaluations.single(run).items()}
    files = {"table-7.6.tsv": bi139_tsv(rows), "table-7.6.png": bi139_png(rows)}
    summary.files = _write_tables(runs / TABLES_DIR, files, list(rows.values()), "results-bi139")
    return summary


def _write_tables(tables: Path, files: Mapping[str, bytes], rows: Sequence[ResultRow], results: str) -> list[Path]:
    written = []
    for name, content in files.items():
        with atomic_write(tables / name) as handle:
            handle.write(content)
        written.append(tables / name)
    json_path, text_path = tables / f"{results}.json", tables / f"{results}.txt"
    write_results(json_path, rows, path_table=text_path)
    return [*written, json_path, text_path]


# ---------------------------------------------------------------------------- tables


def _ndcg(row: ResultRow | None) -> float | None:
    value = None if row is None else row.measures.get(NDCG10)
    return None if value is None or math.isnan(value) else value


def _paper(row: ResultRow | None) -> float | None:
    return None if row is None else row.paper_ndcg10


def _minus(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a - b


def _cell(value: float | None, digits: int = 4, signed: bool = False) -> str:
    """A TSV cell: empty where there is no value (the diagonal, a figure the paper did not print)."""
    if value is None:
        return ""
    return f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"


def _tsv(lines: Sequence[Sequence[str]]) -> bytes:
    return "".join("\t".join(line) + "\n" for line in lines).encode("utf-8")


def _single_grids(bm: Mapping[tuple[str, str], ResultRow], mm: Mapping[tuple[str, str], ResultRow]) -> dict[str, Callable[[str, str], str]]:
    """Table 7.8's grids by name: cell text of (query language, document language).

    The dissertation prints BM figures only, and marks where its MM did better (▲) or not (∇).
    """

    def beat(src: str, tgt: str) -> str:  # the paper's ▲ (MM beat BM) and ∇ marks; it prints no MM figure
        paper_bm = _paper(bm.get((src, tgt)))
        return "" if paper_bm is None else "▲" if (src, tgt) in PAPER_MULTI8_MM_BEAT_BM else "∇"

    return {
        "BM": lambda s, t: _cell(_ndcg(bm.get((s, t)))),
        "BM paper": lambda s, t: _cell(_paper(bm.get((s, t))), 2),
        "BM - paper": lambda s, t: _cell(_minus(_ndcg(bm.get((s, t))), _paper(bm.get((s, t)))), signed=True),
        "MM": lambda s, t: _cell(_ndcg(mm.get((s, t)))),
        "MM - BM": lambda s, t: _cell(_minus(_ndcg(mm.get((s, t))), _ndcg(bm.get((s, t)))), signed=True),
        "MM > BM paper": beat,
    }


def single_language_tsv(bm: Mapping[tuple[str, str], ResultRow], mm: Mapping[tuple[str, str], ResultRow], langs: Sequence[str]) -> bytes:
    """Table 7.8 as TSV: one src x tgt grid after another, each row named by its grid and query language."""
    lines = [["grid", "query", *langs]]
    for name, cell in _single_grids(bm, mm).items():
        lines += [[name, src, *("" if src == tgt else cell(src, tgt) for tgt in langs)] for src in langs]
    return _tsv(lines)


def _mixed_lines(bm: Mapping[str, ResultRow], mm: Mapping[str, ResultRow], langs: Sequence[str]) -> dict[str, list[float | None]]:
    ours = {"BM z-norm": [_ndcg(bm.get(src)) for src in langs], "MM": [_ndcg(mm.get(src)) for src in langs]}
    papers = {"BM z-norm": [_paper(bm.get(src)) for src in langs], "MM": [_paper(mm.get(src)) for src in langs]}
    lines: dict[str, list[float | None]] = {}
    for name in ours:
        lines[name], lines[f"{name} paper"] = ours[name], papers[name]
        lines[f"{name} - paper"] = [_minus(a, b) for a, b in zip(ours[name], papers[name])]
    lines["MM over BM z-norm (%)"] = [None if a is None or not b else 100 * (a - b) / b for a, b in zip(ours["MM"], ours["BM z-norm"])]
    return lines


def mixed_language_tsv(bm: Mapping[str, ResultRow], mm: Mapping[str, ResultRow], langs: Sequence[str]) -> bytes:
    """Table 7.9 as TSV: a row per model (ours, the paper's, the difference), a column per query language."""
    lines = [["row", *langs]]
    for name, values in _mixed_lines(bm, mm, langs).items():
        if name.endswith("(%)"):
            cells = [_cell(value, 1, signed=True) for value in values]
        elif name.endswith(" paper"):
            cells = [_cell(value, 2) for value in values]
        else:
            cells = [_cell(value, signed=name.endswith("- paper")) for value in values]
        lines.append([name, *cells])
    return _tsv(lines)


def bi139_tsv(rows: Mapping[tuple[str, str], ResultRow]) -> bytes:
    """Table 7.6 as TSV: a line per direction with ours, the paper's and the difference."""
    lines = [["query", "document", "BM", "BM paper", "BM - paper"]]
    for (src, tgt), row in rows.items():
        ours, paper = _ndcg(row), _paper(row)
        lines.append([src, tgt, _cell(ours), _cell(paper, 2), _cell(_minus(ours, paper), signed=True)])
    return _tsv(lines)


# ---------------------------------------------------------------------------- heat maps


@dataclass
class Panel:
    """One heat map: values (NaN = no value, drawn grey), axis labels, and how to colour them."""

    title: str
    values: np.ndarray
    rows: list[str]
    columns: list[str]
    difference: bool = False  # ours - something: a diverging scale centred on 0
    texts: list[list[str]] | None = None  # cell labels, default the values


def _matrix(cells: Callable[[str, str], float | None], rows: Sequence[str], columns: Sequence[str]) -> np.ndarray:
    return np.array([[np.nan if (value := cells(r, c)) is None else value for c in columns] for r in rows], dtype=float).reshape(len(rows), len(columns))


def heatmaps_png(panels: Sequence[Panel], title: str) -> bytes:
    """Panels side by side, drawn by matplotlib's Agg canvas (no display, no pyplot state), as PNG bytes without date or software metadata."""
    from matplotlib import colormaps
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.colors import Normalize
    from matplotlib.figure import Figure

    width = sum(1.6 + 0.62 * len(panel.columns) for panel in panels)
    height = 1.6 + 0.5 * max(len(panel.rows) for panel in panels)
    figure = Figure(figsize=(max(width, 5.0), max(height, 2.6)), dpi=100)
    FigureCanvasAgg(figure)
    for index, panel in enumerate(panels, start=1):
        axes = figure.add_subplot(1, len(panels), index)
        finite = panel.values[np.isfinite(panel.values)]
        if panel.difference:
            reach = max(float(np.abs(finite).max()) if finite.size else 0.0, 0.05)
            norm, cmap = Normalize(-reach, reach), colormaps["RdBu"]
        else:
            norm, cmap = Normalize(0.0, 1.0), colormaps["viridis"]
        image = axes.imshow(np.ma.masked_invalid(panel.values), norm=norm, cmap=cmap.with_extremes(bad="#dddddd"), aspect="auto", interpolation="nearest")
        axes.set_xticks(range(len(panel.columns)), labels=panel.columns, fontsize=8)
        axes.set_yticks(range(len(panel.rows)), labels=panel.rows, fontsize=8)
        axes.set_title(panel.title, fontsize=9)
        for (i, j), value in np.ndenumerate(panel.values):
            text = panel.texts[i][j] if panel.texts else "" if np.isnan(value) else f"{value:+.2f}" if panel.difference else f"{value:.2f}"
            shade = float(norm(value)) if np.isfinite(value) else 1.0
            dark = (shade < 0.2 or shade > 0.8) if panel.difference else shade < 0.35
            axes.text(j, i, text, ha="center", va="center", fontsize=7, color="white" if dark else "black")
        figure.colorbar(image, ax=axes, shrink=0.7)
    figure.suptitle(title, fontsize=10)
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", metadata={"Software": None})
    return buffer.getvalue()


def single_language_png(bm: Mapping[tuple[str, str], ResultRow], mm: Mapping[tuple[str, str], ResultRow], langs: Sequence[str]) -> bytes:
    """Table 7.8's heat maps: BM and MM nDCG@10 (query language x document language), and BM - paper."""
    langs = list(langs)
    panels = [
        Panel("BM nDCG@10 (ours)", _matrix(lambda s, t: _ndcg(bm.get((s, t))), langs, langs), langs, langs),
        Panel("MM nDCG@10 (ours)", _matrix(lambda s, t: _ndcg(mm.get((s, t))), langs, langs), langs, langs),
        Panel("BM: ours - paper", _matrix(lambda s, t: _minus(_ndcg(bm.get((s, t))), _paper(bm.get((s, t)))), langs, langs), langs, langs, difference=True),
    ]
    return heatmaps_png(panels, f"Table 7.8: MULTI-8 single-language retrieval, {SPLIT} (rows: query language, columns: document language)")


def mixed_language_png(bm: Mapping[str, ResultRow], mm: Mapping[str, ResultRow], langs: Sequence[str]) -> bytes:
    """Table 7.9's heat maps: BM z-norm and MM by query language, ours, the paper's, and the difference."""
    lines = _mixed_lines(bm, mm, langs)
    models = ["BM z-norm", "MM"]

    def grid(suffix: str) -> np.ndarray:
        return _matrix(lambda model, src: lines[f"{model}{suffix}"][list(langs).index(src)], models, langs)

    panels = [Panel("ours", grid(""), models, list(langs)), Panel("paper", grid(" paper"), models, list(langs)), Panel("ours - paper", grid(" - paper"), models, list(langs), difference=True)]
    note = "" if len(langs) == len(MULTI8_LANGUAGES) else "; the paper's figures pool all 7 other languages, so none is shown"
    return heatmaps_png(panels, f"Table 7.9: MULTI-8 mixed-language retrieval over {', '.join(langs)}, {SPLIT} (columns: query language{note})")


def bi139_png(rows: Mapping[tuple[str, str], ResultRow], per_line: int = 10) -> bytes:
    """Table 7.6's heat map, laid out as the dissertation prints it: targets in lines of ten, ours and ours - paper."""
    items = list(rows.items())
    lines = [items[start : start + per_line] for start in range(0, len(items), per_line)]
    width = min(per_line, len(items))
    labels = [f"{line[0][0][1]}-{line[-1][0][1]}" for line in lines]

    def grid(value: Callable[[ResultRow], float | None], signed: bool) -> Panel:
        values = np.full((len(lines), width), np.nan)
        texts = [["" for _ in range(width)] for _ in lines]
        for i, line in enumerate(lines):
            for j, ((_, tgt), row) in enumerate(line):
                number = value(row)
                values[i, j] = np.nan if number is None else number
                texts[i][j] = f"{tgt}\n{_cell(number, 2, signed) or '-'}"
        return Panel("ours - paper" if signed else "nDCG@10 (ours)", values, labels, [str(j + 1) for j in range(width)], difference=signed, texts=texts)

    sources = sorted({src for src, _ in rows})
    panels = [grid(_ndcg, False), grid(lambda row: _minus(_ndcg(row), _paper(row)), True)]
    return heatmaps_png(panels, f"Table 7.6: BI-139 base, {'/'.join(sources)} queries, {SPLIT}")
