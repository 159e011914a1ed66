"""Labels, propagation, splits, release writers and build settings (docs/method.md sections 5-9)."""

from __future__ import annotations

import gzip
import hashlib
import json

import jenkspy
import numpy as np
import orjson
import pyarrow as pa
import pytest

from clirmatrix.pipeline.config import ConfigError, resolve
from clirmatrix.pipeline.method import splits
from clirmatrix.pipeline.method.labels import class_labels, jenks_inner_breaks, label_queries, query_labels
from clirmatrix.pipeline.method.propagation import Labelled, propagate, query_groups
from clirmatrix.pipeline.method.splits import NOT_CHOSEN, SplitSettings, assign, direction_splits, eval_sets, in_sorted, lowest, query_key, seeded_rng
from clirmatrix.pipeline.output.layout import SPLITS, parse_path, query_file
from clirmatrix.pipeline.output.release import QueryText, Results, base_fill, release_order, render_lines
from clirmatrix.pipeline.output.writers import docs_line, gzip_lines, query_line

# --- labels -----------------------------------------------------------------------------------


def test_jenks_classes_match_a_direct_jenkspy_classification():
    scores = np.random.default_rng(1).gamma(2.0, 3.0, size=100).astype(np.float32)
    labels = class_labels(scores)
    unit = (scores.astype(np.float64) - scores.min()) / (scores.max() - scores.min())
    breaks = jenkspy.jenks_breaks(unit, n_classes=5)
    expected = [1 + sum(value > b for b in breaks[1:-1]) for value in unit]
    assert labels.tolist() == expected
    assert set(labels.tolist()) == {1, 2, 3, 4, 5}


def _adversarial_score_lists(count: int, seed: int) -> list[np.ndarray]:
    """Normalised score lists of 5-100 values with at least 5 distinct: uniform, few values, rounded, half tied at the top, float32."""
    rng = np.random.default_rng(seed)
    lists = []
    for i in range(count):
        n = 100 if i % 3 == 0 else int(rng.integers(5, 101))
        kind = i % 5
        if kind == 0:
            x = rng.random(n)
        elif kind == 1:
            x = rng.integers(0, 6, n).astype(np.float64)
        elif kind == 2:
            x = np.round(rng.exponential(1.0, n), 2)
        elif kind == 3:
            x = np.sort(rng.random(n))[::-1]
            x[: n // 2] = x[0]
        else:
            x = (rng.random(n) * 3).astype(np.float32).astype(np.float64)
        if np.unique(x).size >= 5:
            lists.append((x - x.min()) / (x.max() - x.min()))
    return lists


@pytest.mark.parametrize("order", ["as drawn", "best first", "ascending"])
def test_compiled_jenks_breaks_are_jenkspys_bit_for_bit(order):
    """In any order, and in the two a one-pass path takes (a query's scores come best first)."""
    lists = [{"as drawn": x, "best first": np.sort(x)[::-1], "ascending": np.sort(x)}[order] for x in _adversarial_score_lists(3000, seed=7)]
    ends = np.cumsum([len(x) for x in lists])
    starts = ends - [len(x) for x in lists]
    chosen = np.arange(len(lists)) % 7 != 3  # the others stay zeros
    ours = jenks_inner_breaks(np.concatenate(lists), starts, ends, chosen)
    expected = np.array([jenkspy.jenks_breaks(x, n_classes=5)[1:-1] if keep else [0.0] * 4 for x, keep in zip(lists, chosen)])
    assert len(lists) > 2500
    assert ours.view(np.int64).tolist() == expected.view(np.int64).tolist()


def test_labels_never_decrease_with_the_score_and_are_per_query():
    scores = np.random.default_rng(2).exponential(5.0, size=100)
    labels = class_labels(scores)
    order = np.argsort(scores)
    assert np.all(np.diff(labels[order]) >= 0)
    assert labels[np.argmax(scores)] == 5 and labels[np.argmin(scores)] == 1
    # Per query, after min-max normalisation: scaling and shifting a query's scores changes nothing.
    assert class_labels(scores * 7.5 + 30).tolist() == labels.tolist()


@pytest.mark.parametrize(
    "scores, expected",
    [
        ([4.0], [5]),
        ([2.0, 2.0, 2.0], [5, 5, 5]),
        ([3.0, 1.0, 3.0], [5, 1, 5]),
        ([3.0, 2.0, 1.0], [5, 3, 1]),
        ([4.0, 3.0, 2.0, 1.0, 1.0], [5, 3, 2, 1, 1]),
    ],
)
def test_fewer_than_five_distinct_scores(scores, expected):
    assert class_labels(np.array(scores)).tolist() == expected


def test_own_article_gets_six_where_it_was_returned_or_is_added():
    positions, labels = query_labels(np.array([7, 3, 9]), np.array([9.0, 5.0, 1.0]), own_position=3)
    assert positions.tolist() == [7, 3, 9] and labels.tolist() == [5, 6, 1]
    positions, labels = query_labels(np.array([7, 9]), np.array([9.0, 1.0]), own_position=3)
    assert positions.tolist() == [7, 9, 3] and labels.tolist() == [5, 1, 6]


def test_query_without_hits_gets_only_its_own_article():
    positions, labels = query_labels(np.zeros(0, np.int32), np.zeros(0, np.float32), own_position=11)
    assert positions.tolist() == [11] and labels.tolist() == [6]


def test_a_block_labelled_at_once_equals_each_query_labelled_alone():
    """``label_queries`` (compiled, a block at a time) against ``query_labels`` query by query, on blocks with every edge case."""
    rng = np.random.default_rng(7)
    for _ in range(60):
        first, n = int(rng.integers(0, 50)), int(rng.integers(0, 40))
        query, doc, score = [], [], []
        for q in range(first - 3, first + n + 3):  # hits of queries outside the block too, which are not labelled
            kind = rng.integers(0, 6)
            hits = 0 if kind == 0 else 1 if kind == 1 else int(rng.integers(2, 101))
            docs = rng.choice(500, hits, replace=False).astype(np.int32)
            if hits and rng.random() < 0.5:
                docs[rng.integers(0, hits)] = q  # the query's own article among its hits
            values = {2: np.full(hits, 3.5), 3: rng.integers(0, 3, hits) + 1.25, 4: rng.gamma(2.0, 3.0, hits)}.get(int(kind), rng.exponential(4.0, hits))
            values = np.sort(values.astype(np.float32))[::-1]  # rank order
            query += [q] * hits
            doc += docs.tolist()
            score += values.tolist()
        query, doc, score = np.array(query, np.int32), np.array(doc, np.int32), np.array(score, np.float32)
        table = label_queries(query, doc, score, first, first + n)
        expected_query, expected_doc, expected_label = [], [], []
        for q in range(first, first + n):
            mine = query == q
            positions, labels = query_labels(doc[mine], score[mine], q)
            expected_query += [q] * len(positions)
            expected_doc += positions.tolist()
            expected_label += labels.tolist()
        assert table.column("query").to_pylist() == expected_query
        assert table.column("doc").to_pylist() == expected_doc
        assert table.column("label").to_pylist() == expected_label


def test_labelling_refuses_hits_out_of_query_order():
    with pytest.raises(ValueError, match="ascending"):
        label_queries(np.array([2, 1], np.int32), np.array([4, 1], np.int32), np.array([3.0, 2.0], np.float32), 0, 3)


# --- propagation -----------------------------------------------------------------------------


def test_labels_follow_entities_and_unlinked_documents_are_lost():
    labels = Labelled(np.array([0, 0, 0, 1, 1]), np.array([0, 1, 2, 1, 3]), np.array([6, 4, 2, 6, 5], dtype=np.int8))
    x_to_y = np.array([10, -1, 12, 11], dtype=np.int32)  # X doc 1 has no Y article
    carried = propagate(labels, x_to_y)
    assert list(zip(carried.query.tolist(), carried.doc.tolist(), carried.label.tolist())) == [(0, 10, 6), (0, 12, 2), (1, 11, 5)]


def test_two_source_documents_on_one_target_keep_the_higher_label():
    labels = Labelled(np.array([0, 0]), np.array([0, 1]), np.array([2, 5], dtype=np.int8))
    carried = propagate(labels, np.array([4, 4], dtype=np.int32))
    assert carried.doc.tolist() == [4] and carried.label.tolist() == [5]


def test_a_query_with_nothing_linked_disappears():
    labels = Labelled(np.array([0, 1]), np.array([0, 1]), np.array([6, 6], dtype=np.int8))
    carried = propagate(labels, np.array([-1, 3], dtype=np.int32))
    assert carried.query.tolist() == [1]


# --- splits ----------------------------------------------------------------------------------


def test_an_entity_has_one_role_priority_and_key_in_every_language():
    settings = SplitSettings(seed=13)
    keys = [query_key(lang, "12", "Q42") for lang in ("en", "de", "zh")]
    role, priority, identity = assign(keys, settings)
    assert len(set(role.tolist())) == len(set(priority.tolist())) == len(set(identity.tolist())) == 1
    assert SPLITS[role[0]] in ("dev", "test1", "test2")
    assert query_key("en", "12", None) != query_key("de", "12", None)


def test_roles_are_even_and_follow_the_seed():
    keys = [f"e:Q{i}" for i in range(30_000)]
    role, priority, identity = assign(keys, SplitSettings(seed=1))
    shares = np.bincount(role, minlength=len(SPLITS)) / len(keys)
    assert all(abs(shares[SPLITS.index(name)] - 1 / 3) < 0.015 for name in ("dev", "test1", "test2"))
    other_role, other_priority, other_identity = assign(keys, SplitSettings(seed=2))
    assert (other_role != role).mean() > 0.5 and (other_priority != priority).all()  # another seed, other sets
    assert (other_identity == identity).all()  # the same queries, though


@pytest.mark.parametrize("n, each", [(4_000, 1_000), (10_000, 1_000), (3_999, 999), (10, 2), (3, 0)])
def test_eval_sets_take_eval_size_each_from_4x_and_a_quarter_below(n, each):
    role, priority, _ = assign([f"e:Q{i}" for i in range(n)], SplitSettings(seed=5))
    chosen = eval_sets(role, priority, 1_000)
    for split in ("dev", "test1", "test2"):
        mine = np.flatnonzero(chosen == SPLITS.index(split))
        of_role = np.flatnonzero(role == SPLITS.index(split))
        assert len(mine) == min(each, len(of_role))
        assert (role[mine] == SPLITS.index(split)).all()
        if len(mine):  # the lowest priorities of the role
            assert priority[mine].max() <= np.sort(priority[of_role])[len(mine) - 1]
    assert (chosen == NOT_CHOSEN).sum() == n - sum((chosen == SPLITS.index(s)).sum() for s in ("dev", "test1", "test2"))


def test_lowest_takes_the_first_of_a_stable_sort_by_priority_ties_included():
    """The train and eval sets' pick: what a stable argsort's first ``size`` give, on priorities with many ties."""
    rng = np.random.default_rng(3)
    for _ in range(500):
        priority = rng.integers(0, int(rng.integers(1, 20)), size=int(rng.integers(0, 60))).astype(np.uint64)
        candidates = np.sort(rng.choice(len(priority), int(rng.integers(0, len(priority) + 1)), replace=False)) if len(priority) else np.zeros(0, np.int64)
        size = int(rng.integers(0, len(candidates) + 3))
        expected = np.sort(candidates[np.argsort(priority[candidates], kind="stable")[:size]])
        assert lowest(priority, candidates, size).tolist() == expected.tolist()


def test_a_direction_trains_on_no_key_that_any_eval_set_holds():
    queries = np.arange(10, 30)
    identity = np.arange(100, dtype=np.uint64) * 7
    priority = np.arange(100, dtype=np.uint64)[::-1].copy()  # higher positions first
    picks = pa.table({"tgt": ["de"] * 2, "query": np.array([12, 20], np.int32), "split": np.array([1, 2], np.int8), "key": identity[[12, 20]]})
    elsewhere = np.sort(identity[[15, 16, 99]])  # held by the eval sets of other directions
    split, in_base = direction_splits(queries, picks, identity, priority, np.unique(np.r_[elsewhere, identity[[12, 20]]]), train_size=5)
    assert split[queries.tolist().index(12)] == 1 and split[queries.tolist().index(20)] == 2
    assert split[queries.tolist().index(15)] == split[queries.tolist().index(16)] == NOT_CHOSEN
    train = queries[split == SPLITS.index("train")]
    assert len(train) == 20 - 4 and not set(train.tolist()) & {12, 15, 16, 20}
    assert queries[in_base & (split == SPLITS.index("train"))].tolist() == [25, 26, 27, 28, 29]  # the 5 lowest priorities
    assert in_base[split == 1].all() and in_base[split == 2].all()  # base and full share their eval sets


# --- writers ----------------------------------------------------------------------------------


@pytest.mark.parametrize("keys", ["hashes", "small", "one", "none", "hashes, few buckets"])
def test_the_eval_key_test_answers_as_a_set_would(keys, monkeypatch):
    """``in_sorted`` (a directory on the keys' top bits) says what ``np.isin`` says: on hash keys, on keys all in one corner of the range, on one key and on none."""
    rng = np.random.default_rng(11)
    if keys == "hashes, few buckets":  # many keys a bucket, as a whole build's tens of millions get
        monkeypatch.setattr(splits, "DIRECTORY_BITS", 4)
    stored = {
        "hashes": np.unique([assign([f"e:Q{i}"], SplitSettings())[2][0] for i in range(3_000)]),
        "hashes, few buckets": np.unique([assign([f"e:Q{i}"], SplitSettings())[2][0] for i in range(3_000)]),
        "small": np.arange(0, 20_000, 3, dtype=np.uint64),
        "one": np.array([2**64 - 1], np.uint64),
        "none": np.zeros(0, np.uint64),
    }[keys]
    asked = np.concatenate([stored, stored + np.uint64(1), rng.integers(0, 2**64, 5_000, dtype=np.uint64, endpoint=False), np.array([0, 2**64 - 1], np.uint64)])
    assert in_sorted(asked, stored).tolist() == np.isin(asked, stored).tolist()


def test_results_sorted_by_label_then_numeric_page_id():
    line = orjson.loads(query_line("6267", "Cultural imperialism", [("19028", 5), ("100", 0), ("3383724", 6), ("99", 0), ("20", 5)]))
    assert line == {"src_id": "6267", "src_query": "Cultural imperialism", "tgt_results": [["3383724", 6], ["20", 5], ["19028", 5], ["99", 0], ["100", 0]]}


def _candidates(labelled: dict[int, int], n_docs: int, seed: int) -> list[list]:
    page_ids = np.array([1000 - p for p in range(n_docs)], dtype=np.int64)
    rows = sorted(labelled.items(), key=lambda item: (-item[1], page_ids[item[0]]))
    docs, labels = np.array([p for p, _ in rows], dtype=np.int64), np.array([label for _, label in rows], dtype=np.int8)
    fill, counts = base_fill(seeded_rng(seed, "fill", "en.de.dev"), docs, np.array([0, len(docs)]), np.array([0]), page_ids, 100)
    results = Results(page_ids[docs], labels, np.array([0]), np.array([min(100, len(docs))]), fill, np.array([0]), counts)
    (line,) = render_lines(QueryText.from_strings([1], ["q"]), results, np.array([0])).to_list()
    return orjson.loads(line)["tgt_results"]


def test_base_candidates_are_exactly_k_with_seeded_label_zero_filler():
    labelled = {5: 6, 9: 3, 2: 1}
    first, again = _candidates(labelled, 1_000, 13), _candidates(labelled, 1_000, 13)
    assert first == again and len(first) == 100 and len({doc for doc, _ in first}) == 100
    assert first[:3] == [["995", 6], ["991", 3], ["998", 1]]
    assert all(label == 0 for _, label in first[3:]) and [int(d) for d, _ in first[3:]] == sorted(int(d) for d, _ in first[3:])
    assert _candidates(labelled, 1_000, 14) != first


def test_base_candidates_keep_the_best_labelled_or_all_documents_of_a_tiny_language():
    many = {p: (6 if p == 0 else 1 + p % 5) for p in range(150)}
    best = _candidates(many, 5_000, 1)
    assert len(best) == 100 and best[0] == ["1000", 6] and min(label for _, label in best) >= sorted(many.values(), reverse=True)[99]
    tiny = _candidates({0: 6}, 40, 1)
    assert sorted(int(d) for d, _ in tiny) == list(range(961, 1001))


def test_compiled_rendering_equals_the_reference_line():
    """Many queries rendered at once: the same bytes as ``query_line`` for each, ids from 0 to 18 digits."""
    rng = np.random.default_rng(4)
    n_rows = 3_000
    query = np.sort(rng.integers(0, 200, n_rows)).astype(np.int32)
    page_ids = np.concatenate([[0, 9, 10, 999_999_999_999_999_999], rng.choice(10**12, n_rows - 4, replace=False) + 11])
    label = rng.integers(0, 7, n_rows).astype(np.int8)
    groups = query_groups(query)
    order = release_order(groups, page_ids, label)
    page_ids, label = page_ids[order], label[order]
    assert all(sorted(zip(-label[a:b], page_ids[a:b])) == list(zip(-label[a:b], page_ids[a:b])) for a, b in zip(groups[:-1], groups[1:]))
    firsts = query[groups[:-1]]
    titles = ['Cultural "imperialism" é', "", "\x00\x1f\x7f", "中文 🎉"] * len(firsts)
    text = QueryText.from_strings(firsts, titles[: len(firsts)])
    lines = render_lines(text, Results(page_ids, label, groups[:-1], np.diff(groups)), np.arange(len(firsts))[::-1])
    for line, j in zip(lines.to_list(), reversed(range(len(firsts)))):
        rows = slice(groups[j], groups[j + 1])
        assert line == query_line(str(firsts[j]), titles[j], [(str(p), int(v)) for p, v in zip(page_ids[rows], label[rows])])
    with pytest.raises(ValueError):
        render_lines(QueryText.from_strings([1], ["q"]), Results(np.array([-1]), np.array([1], np.int8), np.array([0]), np.array([1])), np.array([0]))


def test_gzip_files_are_byte_identical_and_their_md5_is_reported(tmp_path):
    digests = []
    for name in ("a.jl.gz", "b.jl.gz"):
        with gzip_lines(str(tmp_path / name)) as out:
            out.write(query_line("1", "x", [("2", 5)]))
        data = (tmp_path / name).read_bytes()
        assert out.record.md5 == hashlib.md5(data).hexdigest() and out.record.size == len(data) and out.record.lines == 1
        assert data[4:8] == b"\0\0\0\0"  # no timestamp
        digests.append(out.record.md5)
    assert digests[0] == digests[1]
    assert gzip.decompress((tmp_path / "a.jl.gz").read_bytes()) == b'{"src_id": "1", "src_query": "x", "tgt_results": [["2", 5]]}\n'


def test_query_lines_are_the_bytes_of_json_dumps_and_escape_line_separators():
    # The release's lines are Python's json.dumps with default settings; ir_datasets splits lines
    # on U+2028, U+2029 and U+0085, so a raw one in a title would break its reader.
    title = "Line\u2028Para\u2029Next\u0085 é 中 🎉 \"q\" \\ \t"
    record = {"src_id": "42", "src_query": title, "tgt_results": [["7", 6], ["3", 0]]}
    line = query_line("42", title, [("3", 0), ("7", 6)])
    assert line == json.dumps(record).encode() and line.isascii()
    assert b"\\u2028" in line and b"\\u2029" in line and b"\\u0085" in line and b"\\ud83c\\udf89" in line
    results = Results(np.array([7, 3]), np.array([6, 0], np.int8), np.array([0]), np.array([2]))
    assert render_lines(QueryText.from_strings([42], [title]), results, np.array([0])).to_list() == [line]
    assert len(line.decode().splitlines()) == 1  # nothing in it that str.splitlines (as ir_datasets) breaks on


def test_a_failed_write_leaves_nothing_behind(tmp_path):
    with pytest.raises(RuntimeError), gzip_lines(str(tmp_path / "half.jl.gz")) as out:
        out.write(b"{}")
        raise RuntimeError("killed")
    assert list(tmp_path.iterdir()) == []


def test_docs_lines_have_no_tabs_or_newlines_in_the_text():
    assert docs_line("12", "a\tb\nc\r\nd") == b"12\ta b c  d"


def test_release_paths_round_trip():
    path = query_file("bi139-base", "en", "de", "test1")
    assert path == "BI-139/base/en/en.de.test1.base.jl.gz"
    assert parse_path(path).tgt == "de" and parse_path("BI-139/full/en/en.de.test1.jl.gz").dataset == "bi139-full"
    assert parse_path("MULTI-8/en/en.de.train.jl.gz").dataset == "multi8" and parse_path("BI-139/base/en/de.en.dev.base.jl.gz") is None


# --- settings ----------------------------------------------------------------------------------


def test_config_file_then_flags(tmp_path):
    toml = tmp_path / "build.toml"
    toml.write_text('dumps = "d"\nout = "o"\nlangs = ["en", "de"]\nseed = 5\n[bm25]\nb = 0.5\n')
    config = resolve(str(toml), {"seed": 9, "min_docs": None})
    assert (config.langs, config.seed, config.b, config.min_docs) == (("en", "de"), 9, 0.5, 10_000)
    yaml_file = tmp_path / "build.yaml"
    yaml_file.write_text("dumps: d\nout: o\nmulti-langs: en,de\ntrain_size: 50\n")
    config = resolve(str(yaml_file), {})
    assert config.multi_langs == ("en", "de") and config.train_size == 50


@pytest.mark.parametrize("text, message", [('dumps = "d"\nmin_dcos = 3\n', r"unknown setting\(s\) min_dcos"), ('seed = "x"\n', "seed must be int"), ("dumps = [\n", "not valid")])
def test_bad_config_names_the_file(tmp_path, text, message):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message) as error:
        resolve(str(path), {"dumps": "d", "out": "o"})
    assert str(path) in str(error.value)


@pytest.mark.parametrize(
    "setting, value, message",
    [("b", 1.5, "--b must be between 0 and 1"), ("k1", float("nan"), "--k1 must be at least 0"), ("engine", "solr", "--engine must be one of embedded, elasticsearch"),
     ("threads", 0, "--threads must be at least 1"), ("title_boost", 0.0, "--title-boost must be above 0")],
)  # fmt: skip
def test_each_setting_is_checked_once_where_it_is_declared(setting, value, message):
    with pytest.raises(ConfigError, match=message):
        resolve(None, {"dumps": "d", "out": "o", setting: value})


def test_the_build_flags_and_help_come_from_the_settings_dataclass():
    from dataclasses import fields

    from click.testing import CliRunner

    from clirmatrix.cli.build import build
    from clirmatrix.pipeline.config import BuildConfig

    assert {param.name for param in build.params} - {"config_file"} == {setting.name for setting in fields(BuildConfig)}
    text = CliRunner().invoke(build, ["--help"], terminal_width=200).output
    assert text.count("[required: as a flag or in the config file]") == 2 and "--train-size INTEGER" in text and "[default: 10000]" in text
