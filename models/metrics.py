"""Re-ranking metrics (docs/models.md §0 "Metrics", §1 "Evaluation", §8.4–8.5) on top of ir-measures.

- ``rank_candidates`` turns one query's scores into strictly decreasing rank scores: a stable
  sort by (−score, candidate position), so ties keep candidate order (§8.4). trec_eval would
  otherwise break ties by document id.
- ``evaluate_rankings`` scores rankings with ir-measures: nDCG@10 with the exponential gain
  2^r − 1 of docs/models.md (trec_eval's own gain is the label itself, so the labels are mapped
  through ir-measures' ``gains``), RR@100 (MRR) and R@100 with "relevant" = label ≥ 1.
  Queries whose candidates carry no label > 0 (IDCG = 0) are excluded and counted (§1).
- ``zscore_merge`` merges the per-target lists of one MULTI-8 mixed-language query by z-score
  (§1 "MULTI-8"); ``mixed_key``/``mixed_qrels``/``mixed_ranking`` key documents by language.
- ``PAPER_NDCG10`` holds the dissertation's NDCG@10 tables 7.6, 7.8 and 7.9 as printed; they are
  figures of one model (``PAPER_MODEL``, the mBERT cross-encoder), so ``paper_ndcg10`` gives one only
  for a row of that model in the very setting printed. ``ResultRow``, ``write_results``,
  ``read_results`` and ``format_table`` report a run next to them.

ir-measures comes with the ``train`` extra and is imported only when a ranking is evaluated.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import orjson

from clirmatrix.pipeline.io.localio import atomic_write
from clirmatrix.pipeline.method.languages import MULTI8_LANGUAGES

NDCG10 = "ndcg@10"
MRR100 = "mrr@100"
RECALL100 = "recall@100"
MAX_LABEL = 6  # labels are 0–6 (docs/models.md §0)
MIXED = "mixed"  # ``tgt`` of a mixed-language result (all other MULTI-8 languages at once)
ZSCORE_EPSILON = 1e-6  # added to the population std (docs/models.md §8.4)
TRAININGS = ("bm", "mm")  # bilingual model of one direction; multilingual model of all MULTI-8 directions


def exponential_gains(max_label: int = MAX_LABEL) -> dict[int, int]:
    """The gain 2^r − 1 of docs/models.md §0 for every label r in 0..max_label."""
    return {label: 2**label - 1 for label in range(max_label + 1)}


def _ir_measures() -> Any:
    try:
        import ir_measures
    except ImportError as error:  # the train extra is optional
        raise ImportError("evaluating rankings needs ir-measures: pip install 'clirmatrix[train]'") from error
    return ir_measures


def default_measures() -> dict[str, Any]:
    """Our report's measures by name: nDCG@10 (exponential gain), RR@100 and R@100 (relevant = label ≥ 1)."""
    ir = _ir_measures()
    return {NDCG10: ir.nDCG(gains=exponential_gains()) @ 10, MRR100: ir.RR @ 100, RECALL100: ir.R @ 100}


def rank_candidates(candidates: Sequence[str], scores: Sequence[float]) -> list[tuple[str, float]]:
    """One query's candidates, best first, each with a strictly decreasing rank score (n, n−1, …, 1).

    The order is a stable sort by (−score, position in ``candidates``), so equal scores keep
    candidate order (docs/models.md §8.4) whatever tie rule the evaluator applies.

    Raises:
        ValueError: lengths differ, a candidate repeats, or a score is NaN.
    """
    if len(candidates) != len(scores):
        raise ValueError(f"{len(candidates)} candidates but {len(scores)} scores")
    if len(set(candidates)) != len(candidates):
        raise ValueError("a candidate id repeats; key mixed-language documents with mixed_key(lang, doc_id)")
    values = [float(score) for score in scores]
    if any(math.isnan(value) for value in values):
        raise ValueError("a score is NaN")
    order = sorted(range(len(values)), key=lambda position: (-values[position], position))
    return [(candidates[position], float(len(order) - rank)) for rank, position in enumerate(order)]


@dataclass(frozen=True)
class Evaluation:
    """Measures of one set of rankings.

    Attributes:
        measures: mean over the evaluated queries, by measure name (NaN when none was evaluable).
        queries: how many queries were evaluated.
        excluded_ids: queries left out because no candidate has a label > 0 (IDCG = 0).
        per_query: measure name -> query id -> value, for significance tests and inspection.
    """

    measures: dict[str, float]
    queries: int
    excluded_ids: tuple[str, ...]
    per_query: dict[str, dict[str, float]]

    @property
    def excluded(self) -> int:
        """How many queries were excluded (IDCG = 0)."""
        return len(self.excluded_ids)


def _measure_objects(ir: Any, measures: Mapping[str, Any] | None) -> dict[str, Any]:
    chosen = default_measures() if measures is None else dict(measures)
    if not chosen:
        raise ValueError("no measures to compute")
    built = {name: ir.parse_measure(m) if isinstance(m, str) else m for name, m in chosen.items()}
    if len(set(built.values())) != len(built):
        raise ValueError("two names stand for the same measure")
    return built


def _check_gains(built: Mapping[str, Any], labels: set[int]) -> None:
    # ir-measures maps only the labels listed in ``gains``; any other would silently keep a linear gain.
    for name, measure in built.items():
        if measure.NAME == "nDCG" and isinstance(measure.params.get("gains"), dict):
            unmapped = labels - set(measure["gains"])
            if unmapped:
                raise ValueError(f"{name}: labels {sorted(unmapped)} have no gain")


def evaluate_rankings(
    qrels: Mapping[str, Mapping[str, int]],
    rankings: Mapping[str, Sequence[tuple[str, float]]],
    measures: Mapping[str, Any] | None = None,
) -> Evaluation:
    """Measures of re-ranked candidate lists (docs/models.md §0 "Metrics", §1 "Evaluation").

    Each ranking lists a query's candidates as (doc_id, score) in candidate order; it is put in
    order with ``rank_candidates`` (ties keep candidate order). IDCG comes from the labels of
    the same candidates: judgments of documents not among them are ignored, and a candidate
    without a judgment has label 0. Queries of ``rankings`` whose candidates have no label > 0
    are excluded (and counted); queries only in ``qrels`` are not evaluated.

    Args:
        qrels: query id -> doc id -> label (0–6 for CLIRMatrix).
        rankings: query id -> [(doc_id, score), ...].
        measures: name -> ir-measures measure (object or string such as "P@1");
            default ``default_measures()``: ndcg@10, mrr@100, recall@100.

    Returns:
        The mean of each measure over the evaluated queries, the counts and per-query values.

    Raises:
        ValueError: a ranking is malformed, a label is negative or has no gain, or two names
            stand for the same measure.
    """
    ir = _ir_measures()
    built = _measure_objects(ir, measures)
    run: dict[str, dict[str, float]] = {}
    run_qrels: dict[str, dict[str, int]] = {}
    excluded: list[str] = []
    labels_seen: set[int] = set()
    for query_id, ranking in rankings.items():
        docs = [doc_id for doc_id, _ in ranking]
        judged = qrels.get(query_id, {})
        labels = {doc_id: int(judged[doc_id]) for doc_id in docs if doc_id in judged}
        if any(label < 0 for label in labels.values()):
            raise ValueError(f"query {query_id}: negative label")
        if not any(label > 0 for label in labels.values()):
            excluded.append(query_id)
            continue
        run[query_id] = dict(rank_candidates(docs, [score for _, score in ranking]))
        run_qrels[query_id] = labels
        labels_seen.update(labels.values())
    _check_gains(built, labels_seen)

    per_query: dict[str, dict[str, float]] = {name: {} for name in built}
    if run:
        names = {measure: name for name, measure in built.items()}
        for metric in ir.evaluator(list(built.values()), run_qrels).iter_calc(run):
            per_query[names[metric.measure]][metric.query_id] = float(metric.value)
    for values in per_query.values():  # a provider may stay silent where the value is 0
        for query_id in run:
            values.setdefault(query_id, 0.0)
    means = {name: math.fsum(values.values()) / len(run) if run else math.nan for name, values in per_query.items()}
    return Evaluation(measures=means, queries=len(run), excluded_ids=tuple(excluded), per_query=per_query)


def zscore_merge(per_target: Mapping[str, Sequence[tuple[str, float]]]) -> list[tuple[str, str, float]]:
    """Merge one query's per-target-language lists by z-score (docs/models.md §1 "MULTI-8", mixed-language).

    Within each target's list z = (s − mean) / (std + 1e-6), with the population std; a list of
    equal scores gets z = 0. The union is sorted by z, best first, ties in target order then
    candidate order.

    Args:
        per_target: target language -> [(doc_id, score), ...] in candidate order.

    Returns:
        [(lang, doc_id, z), ...], best first.

    Raises:
        ValueError: a score is NaN.
    """
    merged: list[tuple[str, str, float]] = []
    for lang, ranking in per_target.items():
        scores = [float(score) for _, score in ranking]
        if any(math.isnan(score) for score in scores):
            raise ValueError(f"{lang}: a score is NaN")
        if not scores:
            continue
        if min(scores) == max(scores):
            merged.extend((lang, doc_id, 0.0) for doc_id, _ in ranking)
            continue
        mean = math.fsum(scores) / len(scores)
        std = math.sqrt(math.fsum((score - mean) ** 2 for score in scores) / len(scores))
        scale = std + ZSCORE_EPSILON
        merged.extend((lang, doc_id, (score - mean) / scale) for (doc_id, _), score in zip(ranking, scores))
    order = sorted(range(len(merged)), key=lambda position: (-merged[position][2], position))
    return [merged[position] for position in order]


def mixed_key(lang: str, doc_id: str) -> str:
    """The id of a document in a mixed-language list: ids of different languages can collide."""
    return f"{lang}:{doc_id}"


def mixed_qrels(per_target: Mapping[str, Mapping[str, int]]) -> dict[str, int]:
    """One query's labels of all target languages, keyed by ``mixed_key``."""
    return {mixed_key(lang, doc_id): label for lang, labels in per_target.items() for doc_id, label in labels.items()}


def mixed_ranking(merged: Sequence[tuple[str, str, float]]) -> list[tuple[str, float]]:
    """(lang, doc_id, score) triples (``zscore_merge``'s, or an MM's scores) as a ranking of ``mixed_key`` ids."""
    return [(mixed_key(lang, doc_id), score) for lang, doc_id, score in merged]


# Whose figures PAPER_NDCG10 holds: [D] §7.3.1 trains one model for Tables 7.6, 7.8 and 7.9, the mBERT
# cross-encoder (CEDR's vanilla BERT ranker, pairwise hinge, Adam, 20 epochs of ~1,000 pairs; docs/models.md §1).
# A bi-encoder, DPR, DAP or CCP run has no printed counterpart on CLIRMatrix (§2-§5).
PAPER_MODEL = "cross-encoder"

# The dissertation's NDCG@10 (test1) as printed, copied from docs/models.md §1.
# bi139_base_en_x: Table 7.6, BI-139 base, en→X, by target language.
# multi8_bm: Table 7.8, MULTI-8 single-language bilingual models, by (query language, target language).
# multi8_mixed_bm_znorm / multi8_mixed_mm: Table 7.9, mixed-language retrieval, by query language.
PAPER_NDCG10: dict[str, dict[Any, float]] = {
    "bi139_base_en_x": {
        "af": 0.90, "als": 0.88, "am": 0.56, "an": 0.90, "ar": 0.80, "arz": 0.86, "ast": 0.88,
        "az": 0.80, "azb": 0.87, "ba": 0.87, "bar": 0.89, "be": 0.83, "bg": 0.85, "bn": 0.78,
        "bpy": 0.85, "br": 0.84, "bs": 0.89, "bug": 0.91, "ca": 0.88, "cdo": 0.85, "ce": 0.90,
        "ceb": 0.89, "ckb": 0.72, "cs": 0.89, "cv": 0.84, "cy": 0.87, "da": 0.90, "de": 0.88,
        "diq": 0.81, "el": 0.83, "eml": 0.80, "eo": 0.87, "es": 0.87, "et": 0.83, "eu": 0.86,
        "fa": 0.85, "fi": 0.86, "fo": 0.87, "fr": 0.84, "fy": 0.90, "ga": 0.78, "gd": 0.79, "gl": 0.87,
        "gu": 0.78, "he": 0.82, "hi": 0.79, "hr": 0.88, "hsb": 0.86, "ht": 0.88, "hu": 0.86,
        "hy": 0.82, "ia": 0.90, "id": 0.00, "ilo": 0.88, "io": 0.86, "is": 0.83, "it": 0.84,
        "ja": 0.84, "jv": 0.89, "ka": 0.81, "kk": 0.85, "kn": 0.67, "ko": 0.86, "ku": 0.76, "ky": 0.82,
        "la": 0.88, "lb": 0.88, "li": 0.85, "lmo": 0.83, "lt": 0.86, "lv": 0.85, "mai": 0.80,
        "mg": 0.88, "mhr": 0.84, "min": 0.92, "mk": 0.86, "ml": 0.87, "mn": 0.86, "mr": 0.74,
        "mrj": 0.82, "ms": 0.89, "my": 0.77, "mzn": 0.85, "nap": 0.85, "nds": 0.88, "ne": 0.73,
        "new": 0.75, "nl": 0.89, "nn": 0.90, "no": 0.89, "oc": 0.91, "or": 0.71, "os": 0.83,
        "pa": 0.76, "pl": 0.86, "pms": 0.78, "pnb": 0.70, "ps": 0.72, "pt": 0.86, "qu": 0.81,
        "ro": 0.89, "ru": 0.85, "sa": 0.73, "sah": 0.77, "scn": 0.81, "sco": 0.94, "sd": 0.78,
        "sh": 0.87, "si": 0.48, "simple": 0.93, "sk": 0.86, "sl": 0.89, "sq": 0.88, "sr": 0.88,
        "su": 0.91, "sv": 0.88, "sw": 0.87, "szl": 0.92, "ta": 0.85, "te": 0.81, "tg": 0.85,
        "th": 0.81, "tl": 0.89, "tr": 0.87, "tt": 0.87, "uk": 0.85, "ur": 0.85, "uz": 0.84,
        "vec": 0.88, "vi": 0.89, "vo": 0.89, "wa": 0.75, "war": 0.86, "wuu": 0.83, "xmf": 0.79,
        "yi": 0.65, "yo": 0.89, "zh": 0.84,
    },
    "multi8_bm": {
        ("ar", "de"): 0.65, ("ar", "en"): 0.60, ("ar", "es"): 0.65, ("ar", "fr"): 0.64,
        ("ar", "ja"): 0.65, ("ar", "ru"): 0.60, ("ar", "zh"): 0.64,
        ("de", "ar"): 0.75, ("de", "en"): 0.75, ("de", "es"): 0.77, ("de", "fr"): 0.72,
        ("de", "ja"): 0.72, ("de", "ru"): 0.74, ("de", "zh"): 0.71,
        ("en", "ar"): 0.79, ("en", "de"): 0.82, ("en", "es"): 0.83, ("en", "fr"): 0.79,
        ("en", "ja"): 0.83, ("en", "ru"): 0.82, ("en", "zh"): 0.82,
        ("es", "ar"): 0.74, ("es", "de"): 0.72, ("es", "en"): 0.76, ("es", "fr"): 0.75,
        ("es", "ja"): 0.74, ("es", "ru"): 0.74, ("es", "zh"): 0.74,
        ("fr", "ar"): 0.75, ("fr", "de"): 0.75, ("fr", "en"): 0.76, ("fr", "es"): 0.79,
        ("fr", "ja"): 0.75, ("fr", "ru"): 0.74, ("fr", "zh"): 0.76,
        ("ja", "ar"): 0.71, ("ja", "de"): 0.68, ("ja", "en"): 0.67, ("ja", "es"): 0.68,
        ("ja", "fr"): 0.67, ("ja", "ru"): 0.69, ("ja", "zh"): 0.70,
        ("ru", "ar"): 0.73, ("ru", "de"): 0.71, ("ru", "en"): 0.71, ("ru", "es"): 0.73,
        ("ru", "fr"): 0.73, ("ru", "ja"): 0.72, ("ru", "zh"): 0.71,
        ("zh", "ar"): 0.67, ("zh", "de"): 0.67, ("zh", "en"): 0.63, ("zh", "es"): 0.66,
        ("zh", "fr"): 0.66, ("zh", "ja"): 0.64, ("zh", "ru"): 0.66,
    },
    "multi8_mixed_bm_znorm": {
        "ar": 0.52, "de": 0.58, "en": 0.66, "es": 0.60, "fr": 0.63, "ja": 0.59, "ru": 0.57, "zh": 0.58,
    },
    "multi8_mixed_mm": {
        "ar": 0.59, "de": 0.72, "en": 0.75, "es": 0.73, "fr": 0.65, "ja": 0.68, "ru": 0.62, "zh": 0.68,
    },
}
# Printed values not to compare against (docs/models.md §8.5: BI-139 "id .00" is probably an extraction error).
PAPER_UNRELIABLE: dict[str, frozenset[Any]] = {"bi139_base_en_x": frozenset({"id"})}
# Table 7.8's ▲: directions where the MM beat the BM (the MM's own values are not printed).
PAPER_MULTI8_MM_BEAT_BM: frozenset[tuple[str, str]] = frozenset({
    ("ar", "en"), ("ar", "es"), ("ar", "ru"), ("ar", "zh"),
    ("de", "en"), ("de", "es"), ("de", "fr"), ("de", "ja"), ("de", "ru"), ("de", "zh"),
    ("en", "ar"), ("en", "de"), ("en", "es"), ("en", "fr"),
    ("es", "ar"), ("es", "de"), ("es", "en"), ("es", "fr"), ("es", "ru"),
    ("fr", "ar"), ("fr", "de"), ("fr", "en"), ("fr", "es"), ("fr", "ru"),
    ("ja", "de"), ("ja", "en"), ("ja", "es"),
    ("ru", "de"), ("ru", "en"), ("ru", "es"), ("ru", "zh"),
    ("zh", "ar"), ("zh", "de"), ("zh", "en"), ("zh", "es"), ("zh", "ja"), ("zh", "ru"),
})


def paper_ndcg10(
    dataset: str, src: str, tgt: str, split: str, training: str = "bm", *, model_kind: str | None, mixed_targets: Sequence[str] = ()
) -> float | None:
    """The dissertation's NDCG@10 for a model in a setting, or None where it printed none (or an unreliable one).

    Args:
        dataset: "bi139-base", "bi139-full" or "multi8" (the ir_datasets names of docs/formats.md).
        src: query language.
        tgt: document language, or ``MIXED``.
        split: only "test1" has reference numbers.
        training: "bm" (bilingual model of this direction) or "mm" (multilingual model).
        model_kind: the run's ``--model``; only ``PAPER_MODEL`` has printed figures (None: unknown, so none).
        mixed_targets: for ``MIXED``, the document languages pooled; Table 7.9 pools all 7 others,
            and a ranking over fewer languages is another, easier setting.
    """
    if split != "test1" or model_kind != PAPER_MODEL:
        return None
    if dataset == "bi139-base" and src == "en" and training == "bm":
        table, key = "bi139_base_en_x", tgt
    elif dataset == "multi8" and tgt == MIXED:
        if set(mixed_targets) != set(MULTI8_LANGUAGES) - {src}:
            return None
        table, key = ("multi8_mixed_bm_znorm" if training == "bm" else "multi8_mixed_mm"), src
    elif dataset == "multi8" and training == "bm":
        table, key = "multi8_bm", (src, tgt)
    else:
        return None
    if key in PAPER_UNRELIABLE.get(table, ()):
        return None
    return PAPER_NDCG10[table].get(key)


@dataclass(frozen=True)
class ResultRow:
    """One evaluated setting: a model on one direction (or mixed-language) and split.

    Attributes:
        model: name of the run or checkpoint.
        dataset: "bi139-base", "bi139-full" or "multi8".
        src: query language.
        tgt: document language, or ``MIXED`` for mixed-language retrieval.
        split: "dev", "test1" or "test2".
        measures: measure name -> mean value (``Evaluation.measures``).
        queries: queries evaluated.
        excluded: queries excluded for IDCG = 0.
        training: "bm" (bilingual model, z-score merged when mixed) or "mm" (multilingual model).
        model_kind: the run's ``--model`` (``cross-encoder``, ``bi-encoder``, ...); None in files
            written before it was recorded, which therefore get no paper figure.
        mixed_targets: for mixed-language rows, the document languages pooled (else empty).
    """

    model: str
    dataset: str
    src: str
    tgt: str
    split: str
    measures: dict[str, float] = field(default_factory=dict)
    queries: int = 0
    excluded: int = 0
    training: str = "bm"
    model_kind: str | None = None
    mixed_targets: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.training not in TRAININGS:
            raise ValueError(f"training must be one of {TRAININGS}, not {self.training!r}")
        object.__setattr__(self, "mixed_targets", tuple(self.mixed_targets))  # a JSON list comes back as a tuple

    @classmethod
    def from_evaluation(
        cls, evaluation: Evaluation, *, model: str, dataset: str, src: str, tgt: str, split: str, training: str = "bm",
        model_kind: str | None = None, mixed_targets: Sequence[str] = (),
    ) -> ResultRow:
        """The row of an ``evaluate_rankings`` result."""
        return cls(model, dataset, src, tgt, split, dict(evaluation.measures), queries=evaluation.queries,
                   excluded=evaluation.excluded, training=training, model_kind=model_kind, mixed_targets=tuple(mixed_targets))

    @property
    def direction(self) -> str:
        """"src→tgt" (or "src→mixed")."""
        return f"{self.src}→{self.tgt}"

    @property
    def paper_ndcg10(self) -> float | None:
        """The dissertation's NDCG@10 for this model and setting, if it printed a usable one."""
        return paper_ndcg10(self.dataset, self.src, self.tgt, self.split, self.training, model_kind=self.model_kind, mixed_targets=self.mixed_targets)


def write_results(
    path_json: str | os.PathLike, results: Sequence[ResultRow], *, path_table: str | os.PathLike | None = None, extra: Mapping[str, Any] | None = None
) -> None:
    """Write the rows as JSON ({"results": [row, ...]}, each with its "paper_ndcg@10"), atomically.

    NaN measures are written as null. With ``path_table``, ``format_table`` goes there too.
    ``extra`` adds top-level keys beside "results" (what a cache needs to tell a stale file).
    """
    payload = {**(extra or {}), "results": [{**asdict(row), f"paper_{NDCG10}": row.paper_ndcg10} for row in results]}
    with atomic_write(path_json) as handle:
        handle.write(orjson.dumps(payload, option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE))
    if path_table is not None:
        with atomic_write(path_table) as handle:
            handle.write(format_table(results).encode("utf-8"))


def read_results(path_json: str | os.PathLike) -> list[ResultRow]:
    """The rows of a ``write_results`` file (null measures come back as NaN; older files, without
    ``model_kind`` and ``mixed_targets``, read as rows of an unknown model)."""
    with open(path_json, "rb") as handle:
        payload = orjson.loads(handle.read())
    rows = []
    for item in payload["results"]:
        item = {key: value for key, value in item.items() if key != f"paper_{NDCG10}"}
        item["measures"] = {name: math.nan if value is None else value for name, value in item["measures"].items()}
        rows.append(ResultRow(**item))
    return rows


def _number(value: float | None, digits: int = 3, signed: bool = False) -> str:
    if value is None or math.isnan(value):
        return "-"
    return f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"


def format_table(results: Sequence[ResultRow]) -> str:
    """A fixed-width text table of the rows, with the paper's NDCG@10 and Δ = ours − paper where printed."""
    header = ("dataset", "direction", "split", "model", "kind", "training", "queries", "excluded",
              "nDCG@10", "MRR@100", "R@100", "paper nDCG@10", "Δ")
    lines = [header]
    for row in results:
        ndcg, paper = row.measures.get(NDCG10), row.paper_ndcg10
        delta = None if ndcg is None or paper is None else ndcg - paper
        lines.append((
            row.dataset, row.direction, row.split, row.model, row.model_kind or "-", row.training, str(row.queries), str(row.excluded),
            _number(ndcg), _number(row.measures.get(MRR100)), _number(row.measures.get(RECALL100)),
            _number(paper, 2), _number(delta, signed=True),
        ))
    widths = [max(len(line[column]) for line in lines) for column in range(len(header))]
    text_columns = 6  # left-aligned; the numbers are right-aligned
    rendered = [
        "  ".join(cell.ljust(width) if column < text_columns else cell.rjust(width)
                  for column, (cell, width) in enumerate(zip(line, widths))).rstrip()
        for line in lines
    ]
    rendered.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(rendered) + "\n"
