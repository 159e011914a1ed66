"""Metrics of docs/models.md §0/§1 through ir-measures: exponential-gain nDCG, ties, exclusions, z-merging, reports."""

from __future__ import annotations

import dataclasses
import math
import re
import statistics

import pytest
from conftest import REPO

from clirmatrix.models import metrics
from clirmatrix.models.metrics import (
    MIXED,
    MRR100,
    NDCG10,
    PAPER_NDCG10,
    RECALL100,
    ResultRow,
    evaluate_rankings,
    format_table,
    mixed_qrels,
    mixed_ranking,
    rank_candidates,
    read_results,
    write_results,
    zscore_merge,
)
from clirmatrix.pipeline.method.languages import MULTI8_LANGUAGES

pytest.importorskip("ir_measures")


def direct_ndcg(labels_in_predicted_order: list[int], k: int = 10) -> float:
    """docs/models.md §0: DCG@k = Σ (2^r − 1)/log2(i+1) over ranks i = 1..k, divided by the ideal order's DCG@k."""
    def dcg(labels: list[int]) -> float:
        return sum((2**label - 1) / math.log2(rank + 1) for rank, label in enumerate(labels[:k], start=1))

    return dcg(labels_in_predicted_order) / dcg(sorted(labels_in_predicted_order, reverse=True))


def ranking_of(labels: list[int]) -> tuple[dict[str, int], list[tuple[str, float]]]:
    """Qrels and a ranking that puts the documents in the given order (descending scores)."""
    docs = [f"d{i:02d}" for i in range(len(labels))]
    return dict(zip(docs, labels)), [(doc, float(len(docs) - i)) for i, doc in enumerate(docs)]


MIXED_LABELS = [0, 3, 6, 1, 0, 2, 5, 0, 4, 1, 0, 2, 6, 0]  # 0–6, relevant beyond rank 10 too


@pytest.mark.parametrize("labels", [
    MIXED_LABELS,
    [1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 6],  # the 6 is outside the top 10
    [2, 2, 0, 4],
])
def test_ndcg_uses_exponential_gain(labels):
    qrels, ranking = ranking_of(labels)
    result = evaluate_rankings({"q": qrels}, {"q": ranking})
    assert result.per_query[NDCG10]["q"] == pytest.approx(direct_ndcg(labels), abs=1e-9)
    # trec_eval's linear gain would give another value, so the gains really are applied
    linear = evaluate_rankings({"q": qrels}, {"q": ranking}, measures={"linear": "nDCG@10"})
    assert linear.measures["linear"] != pytest.approx(result.measures[NDCG10], abs=1e-6)


def test_ideal_and_reversed_rankings():
    ideal = sorted(MIXED_LABELS, reverse=True)
    qrels, ranking = ranking_of(ideal)
    assert evaluate_rankings({"q": qrels}, {"q": ranking}).measures[NDCG10] == pytest.approx(1.0)
    reversed_ranking = [(doc, -score) for doc, score in ranking]
    value = evaluate_rankings({"q": qrels}, {"q": reversed_ranking}).measures[NDCG10]
    assert value == pytest.approx(direct_ndcg(ideal[::-1]), abs=1e-9)
    assert value < 0.5


def test_mean_over_queries():
    qrels_a, ranking_a = ranking_of([0, 6, 1])
    qrels_b, ranking_b = ranking_of([3, 0, 0, 2])
    result = evaluate_rankings({"a": qrels_a, "b": qrels_b}, {"a": ranking_a, "b": ranking_b})
    assert result.queries == 2
    assert result.measures[NDCG10] == pytest.approx((direct_ndcg([0, 6, 1]) + direct_ndcg([3, 0, 0, 2])) / 2)


def test_ties_keep_candidate_order():
    # "z" (label 0) and "a" (label 6) tie; trec_eval alone would rank "z" first (doc id order, descending)
    assert rank_candidates(["z", "a", "m"], [1.0, 1.0, 0.5]) == [("z", 3.0), ("a", 2.0), ("m", 1.0)]
    qrels = {"q": {"z": 0, "a": 6, "m": 1}}
    first_zero = evaluate_rankings(qrels, {"q": [("z", 1.0), ("a", 1.0), ("m", 0.5)]})
    first_six = evaluate_rankings(qrels, {"q": [("a", 1.0), ("z", 1.0), ("m", 0.5)]})
    assert first_zero.measures[NDCG10] == pytest.approx(direct_ndcg([0, 6, 1]))
    assert first_six.measures[NDCG10] == pytest.approx(direct_ndcg([6, 0, 1]))
    assert first_zero.measures[NDCG10] < first_six.measures[NDCG10]


def test_rank_candidates_rejects_bad_input():
    with pytest.raises(ValueError):
        rank_candidates(["a", "b"], [1.0])
    with pytest.raises(ValueError):
        rank_candidates(["a", "a"], [1.0, 2.0])
    with pytest.raises(ValueError):
        rank_candidates(["a", "b"], [1.0, math.nan])


def test_queries_without_relevant_candidates_are_excluded():
    qrels_ok, ranking_ok = ranking_of([0, 6])
    qrels_zero, ranking_zero = ranking_of([0, 0, 0])
    # "outside": its only relevant document is not among the candidates, so IDCG over them is 0
    qrels = {"ok": qrels_ok, "zero": qrels_zero, "outside": {"elsewhere": 6, "d00": 0}}
    rankings = {"ok": ranking_ok, "zero": ranking_zero, "outside": [("d00", 1.0)], "unjudged": [("x", 1.0)]}
    result = evaluate_rankings(qrels, rankings)
    assert result.queries == 1
    assert result.excluded == 3
    assert set(result.excluded_ids) == {"zero", "outside", "unjudged"}
    assert result.per_query[NDCG10] == {"ok": pytest.approx(direct_ndcg([0, 6]))}
    assert result.measures[NDCG10] == pytest.approx(direct_ndcg([0, 6]))


def test_nothing_to_evaluate_gives_nan():
    result = evaluate_rankings({}, {"q": [("a", 1.0)]})
    assert result.queries == 0 and result.excluded == 1
    assert math.isnan(result.measures[NDCG10])


def test_mrr_and_recall_at_100():
    labels = [0] * 150
    labels[3] = 2  # first relevant at rank 4
    labels[50] = 1
    labels[120] = 6  # beyond the cutoff
    qrels, ranking = ranking_of(labels)
    result = evaluate_rankings({"q": qrels}, {"q": ranking})
    assert result.measures[MRR100] == pytest.approx(1 / 4)
    assert result.measures[RECALL100] == pytest.approx(2 / 3)

    late = [0] * 150
    late[100] = 3  # rank 101: RR@100 is 0, recall@100 is 0
    qrels, ranking = ranking_of(late)
    result = evaluate_rankings({"q": qrels}, {"q": ranking})
    assert result.measures[MRR100] == 0.0
    assert result.measures[RECALL100] == 0.0
    assert result.queries == 1


def test_labels_without_gain_are_refused():
    with pytest.raises(ValueError, match="no gain"):
        evaluate_rankings({"q": {"a": 7}}, {"q": [("a", 1.0)]})


def test_zscore_merge_standardises_each_list():
    per_target = {
        "de": [("1", 3.0), ("2", -1.0), ("3", 0.5), ("4", 10.0)],
        "fr": [("1", 0.1), ("2", 0.2), ("3", 0.3)],  # doc ids collide with de's on purpose
        "ja": [("9", 2.5), ("8", 2.5)],  # all equal: z = 0, no division by zero
    }
    merged = zscore_merge(per_target)
    assert len(merged) == 9
    for lang in ("de", "fr"):
        z = [value for tgt, _, value in merged if tgt == lang]
        assert statistics.fmean(z) == pytest.approx(0.0, abs=1e-9)
        std = statistics.pstdev(score for _, score in per_target[lang])
        assert statistics.pstdev(z) == pytest.approx(std / (std + 1e-6), rel=1e-9)  # ε = 1e-6 on the std
        assert statistics.pstdev(z) == pytest.approx(1.0, abs=1e-4)
    assert [(doc, z) for tgt, doc, z in merged if tgt == "ja"] == [("9", 0.0), ("8", 0.0)]
    values = [z for _, _, z in merged]
    assert values == sorted(values, reverse=True)
    de = per_target["de"]
    mean = statistics.fmean(score for _, score in de)
    assert merged[0] == ("de", "4", pytest.approx((10.0 - mean) / (statistics.pstdev(s for _, s in de) + 1e-6)))


def test_zscore_merge_ties_in_target_then_candidate_order():
    # Identical lists: every z ties across languages, so target order decides, then candidate order
    same = [("x", 1.0), ("y", 1.0), ("w", 0.0)]
    merged = zscore_merge({"ru": same, "ar": same})
    assert [(lang, doc) for lang, doc, _ in merged] == [
        ("ru", "x"), ("ru", "y"), ("ar", "x"), ("ar", "y"), ("ru", "w"), ("ar", "w"),
    ]


def test_mixed_language_evaluation_keys_documents_by_language():
    labels = {"de": {"1": 6, "2": 0}, "fr": {"1": 0, "2": 3}}
    scores = {"de": [("1", 1.0), ("2", 0.0)], "fr": [("1", 5.0), ("2", 4.0)]}
    merged = zscore_merge(scores)
    qrels = mixed_qrels(labels)
    assert qrels == {"de:1": 6, "de:2": 0, "fr:1": 0, "fr:2": 3}
    ranking = mixed_ranking(merged)
    # z: de:1 and fr:1 tie at +1 (de first), then de:2 and fr:2 at −1
    assert [doc for doc, _ in ranking] == ["de:1", "fr:1", "de:2", "fr:2"]
    result = evaluate_rankings({"q": qrels}, {"q": ranking})
    assert result.measures[NDCG10] == pytest.approx(direct_ndcg([6, 0, 0, 3]))


def test_reference_numbers_spot_checks():
    assert PAPER_NDCG10["bi139_base_en_x"]["de"] == 0.88
    assert PAPER_NDCG10["bi139_base_en_x"]["si"] == 0.48
    assert PAPER_NDCG10["multi8_bm"][("ar", "en")] == 0.60
    assert PAPER_NDCG10["multi8_bm"][("zh", "ru")] == 0.66
    assert PAPER_NDCG10["multi8_mixed_mm"]["en"] == 0.75
    assert PAPER_NDCG10["multi8_mixed_bm_znorm"]["ar"] == 0.52
    assert len(PAPER_NDCG10["bi139_base_en_x"]) == 138 and len(PAPER_NDCG10["multi8_bm"]) == 56
    # docs/models.md: "The mean of these printed values is 0.833"
    assert statistics.fmean(PAPER_NDCG10["bi139_base_en_x"].values()) == pytest.approx(0.833, abs=5e-4)
    cross = {"model_kind": "cross-encoder"}
    all_others = {**cross, "mixed_targets": [lang for lang in MULTI8_LANGUAGES if lang != "en"]}
    assert metrics.paper_ndcg10("bi139-base", "en", "de", "test1", **cross) == 0.88
    assert metrics.paper_ndcg10("bi139-base", "en", "id", "test1", **cross) is None  # unreliable, §8.5
    assert metrics.paper_ndcg10("bi139-base", "en", "de", "dev", **cross) is None
    assert metrics.paper_ndcg10("multi8", "en", MIXED, "test1", "mm", **all_others) == 0.75
    assert metrics.paper_ndcg10("multi8", "en", MIXED, "test1", "bm", **all_others) == 0.66
    assert metrics.paper_ndcg10("multi8", "en", "de", "test1", "mm", **cross) is None  # not printed


@pytest.mark.parametrize("kind", ["bi-encoder", "contrastive", "dap", "ccp", None])
def test_the_papers_figures_belong_to_its_cross_encoder_alone(kind):
    """[D] §7.3.1 trains the mBERT cross-encoder for Tables 7.6, 7.8 and 7.9: another model (or an unknown one) gets no figure."""
    others = tuple(lang for lang in MULTI8_LANGUAGES if lang != "en")
    settings = [("bi139-base", "en", "de", "bm", ()), ("multi8", "en", "de", "bm", ()),
                ("multi8", "en", MIXED, "bm", others), ("multi8", "en", MIXED, "mm", others)]
    for dataset, src, tgt, training, targets in settings:
        cross = ResultRow("run", dataset, src, tgt, "test1", training=training, model_kind="cross-encoder", mixed_targets=targets)
        other = dataclasses.replace(cross, model_kind=kind)
        assert cross.paper_ndcg10 is not None and other.paper_ndcg10 is None, (dataset, tgt, training)
    assert ResultRow("bm", "multi8", "en", "de", "test1", model_kind="cross-encoder").paper_ndcg10 == 0.82


def test_mixed_retrieval_over_fewer_languages_has_no_paper_figure():
    """Table 7.9 pools the 7 other languages; a ranking over a subset is another setting."""
    row = ResultRow("mm", "multi8", "en", MIXED, "test1", training="mm", model_kind="cross-encoder", mixed_targets=("de", "fr"))
    assert row.paper_ndcg10 is None
    assert dataclasses.replace(row, mixed_targets=("ar", "de", "es", "fr", "ja", "ru", "zh")).paper_ndcg10 == 0.75


def test_results_files_written_before_the_model_kind_was_recorded_still_read(tmp_path):
    path = tmp_path / "old.json"
    path.write_text('''{"results": [{"model": "en-de", "dataset": "bi139-base", "src": "en", "tgt": "de", "split": "test1",
        "measures": {"ndcg@10": 0.5, "mrr@100": null}, "queries": 10, "excluded": 0, "training": "bm", "paper_ndcg@10": 0.88}]}''')
    (row,) = read_results(path)
    assert (row.model, row.model_kind, row.mixed_targets, row.measures[NDCG10]) == ("en-de", None, (), 0.5)
    assert math.isnan(row.measures[MRR100])
    assert row.paper_ndcg10 is None  # which model wrote it is unknown


def test_reference_numbers_match_models_md():
    """Every number of Tables 7.6, 7.8 and 7.9 as the project's source spec prints them (../shared/docs/MODELS.md, where at hand)."""
    models_md = REPO.parent / "shared" / "docs" / "MODELS.md"
    if not models_md.exists():
        pytest.skip(f"{models_md} not present")
    text = models_md.read_text(encoding="utf-8")
    table_76 = text.split("**Headline numbers")[1].split(":**", 1)[1].split("The mean")[0]
    assert {lang: float(value) for lang, value in re.findall(r"([a-z]+) (\.\d\d)", table_76)} == (
        PAPER_NDCG10["bi139_base_en_x"]
    )
    table_78 = text.split("**[D] Table 7.8")[1].split("MM numbers")[0]
    langs = ["ar", "de", "en", "es", "fr", "ja", "ru", "zh"]
    printed, beaten = {}, set()
    for src, row in re.findall(r"^- (\w\w): (.*)$", table_78, re.M):
        for tgt, (value, mark) in zip([lang for lang in langs if lang != src], re.findall(r"(\.\d\d)([▲∇])", row)):
            printed[(src, tgt)] = float(value)
            if mark == "▲":
                beaten.add((src, tgt))
    assert printed == PAPER_NDCG10["multi8_bm"]
    assert beaten == metrics.PAPER_MULTI8_MM_BEAT_BM
    table_79 = text.split("**[D] Table 7.9")[1]
    for label, key in (("BM z-norm", "multi8_mixed_bm_znorm"), ("MM", "multi8_mixed_mm")):
        cells = re.search(rf"^\| {label} \|(.*)\|$", table_79, re.M).group(1).split("|")
        assert dict(zip(langs, (float(cell) for cell in cells))) == PAPER_NDCG10[key]


def test_results_json_round_trip_and_table(tmp_path):
    rows = [
        ResultRow("mbert-bm", "bi139-base", "en", "de", "test1",
                  {NDCG10: 0.8712, MRR100: 0.9, RECALL100: 1.0}, queries=998, excluded=2, model_kind="cross-encoder"),
        ResultRow("mbert-mm", "multi8", "en", MIXED, "test1", {NDCG10: 0.70, MRR100: 0.8, RECALL100: 0.95},
                  queries=1000, training="mm", model_kind="cross-encoder", mixed_targets=("ar", "de", "es", "fr", "ja", "ru", "zh")),
        ResultRow("mbert-bm", "multi8", "fr", "de", "dev", {NDCG10: math.nan}, queries=0, excluded=5),
    ]
    path = tmp_path / "out" / "results.json"
    write_results(path, rows, path_table=tmp_path / "out" / "results.txt")
    back = read_results(path)
    assert back[:2] == rows[:2]
    assert math.isnan(back[2].measures[NDCG10]) and back[2].excluded == 5
    assert b'"paper_ndcg@10": 0.88' in path.read_bytes()
    assert not [p for p in path.parent.iterdir() if p.name.startswith(".")]

    table = format_table(rows)
    assert (tmp_path / "out" / "results.txt").read_text(encoding="utf-8") == table
    lines = table.splitlines()
    assert "nDCG@10" in lines[0] and "paper nDCG@10" in lines[0]
    bi = next(line for line in lines if "en→de" in line)
    assert re.search(r"bi139-base\s+en→de\s+test1\s+mbert-bm\s+cross-encoder\s+bm\s+998\s+2\s+0\.871\s+0\.900\s+1\.000\s+0\.88\s+-0\.009$", bi)
    mixed = next(line for line in lines if "en→mixed" in line)
    assert mixed.endswith("0.75  -0.050")
    dev = next(line for line in lines if "fr→de" in line)
    assert dev.split()[-5:] == ["-", "-", "-", "-", "-"]


def test_result_row_from_evaluation():
    qrels, ranking = ranking_of([0, 6, 0])
    evaluation = evaluate_rankings({"q": qrels, "z": {}}, {"q": ranking, "z": [("a", 0.0)]})
    row = ResultRow.from_evaluation(evaluation, model="m", dataset="multi8", src="ar", tgt="de", split="test1", model_kind="cross-encoder")
    assert (row.queries, row.excluded, row.paper_ndcg10) == (1, 1, 0.65)
    assert row.measures[NDCG10] == pytest.approx(direct_ndcg([0, 6, 0]))
    with pytest.raises(ValueError):
        ResultRow("m", "multi8", "ar", "de", "test1", training="both")
