"""models.data and models.sampling on a tiny release written in the real layout."""

from __future__ import annotations

import gzip
import os
import pickle
import random
import shutil
import threading
from collections import Counter
from itertools import islice
from pathlib import Path

import pytest

from clirmatrix.models.arguments import TrainArguments
from clirmatrix.models.data import (
    DocStore,
    ParallelPair,
    QueryRecord,
    QueryStore,
    default_cache_dir,
    mine_parallel_pairs,
    multi8_directions,
    read_parallel_tsv,
    sentence_windows,
    split_sentences,
    write_parallel_tsv,
)
from clirmatrix.models.sampling import PAIR_PICKERS, RankingPairSampler, dpr_example, pointwise_triples, sample_ranking_pair
from clirmatrix.pipeline.errors import InvalidInputError
from clirmatrix.pipeline.method.languages import MULTI8_LANGUAGES
from clirmatrix.pipeline.output import layout
from clirmatrix.pipeline.output.writers import query_line

DOCS = {
    "en": {
        "1": "Aruba is an island. It lies in the Caribbean.",
        "2": "Death is the end of life! Everyone dies.",
        "3": "Zürich is a city in Switzerland. It has a lake.",
        "4": "Nowhere.",
        "5": "Berg means mountain.",
        "007": "Flat text – no end",
    },
    # "13" is judged in en->de but missing from DOCS (docs/formats.md 1.7).
    "de": {
        "10": "Aruba ist eine Insel. Sie liegt in der Karibik.",
        "11": "Der Tod ist das Ende des Lebens. Alle sterben.",
        "12": "Zürich ist eine Stadt in der Schweiz. Sie hat einen See.",
        "14": "Straße über den Fluß.",
    },
    "ja": {"30": "東京は日本の首都です。人口が多い！"},
}

# (src, tgt, split) -> [(src_id, src_query, tgt_results)], results already in released order.
QUERIES = {
    ("en", "de", "train"): [
        ("1", "Aruba", [("10", 6), ("11", 3), ("12", 0), ("13", 0)]),
        ("2", "Death", [("11", 6), ("10", 2), ("13", 0)]),
        ("3", "Zürich", [("12", 6), ("14", 1), ("13", 0)]),
        ("4", "Nowhere", [("13", 2), ("14", 0)]),  # no label 6
        ("5", "Berg", [("13", 6), ("10", 0)]),  # de 13 is no de query and not in DOCS
        ("007", "Flat", [("10", 0), ("11", 0)]),  # no ranking pair possible
    ],
    ("de", "en", "train"): [
        ("10", "Aruba (Insel)", [("1", 6), ("2", 0)]),
        ("11", "Tod", [("2", 6), ("1", 1), ("3", 0)]),
    ],
    # de 12's title is known only from another target and split.
    ("de", "ja", "dev"): [("12", "Zürich", [("30", 1)])],
    # fr has no query files: fr titles are unknown.
    ("en", "fr", "train"): [
        ("1", "Aruba", [("20", 6), ("21", 0)]),
        ("2", "Death", [("21", 6), ("20", 0)]),
    ],
    ("en", "fr", "dev"): [("1", "Aruba", [("20", 0), ("21", 0)])],
}


def write_docs(root: Path, lang: str, docs: dict[str, str]) -> Path:
    path = root / layout.docs_file("docs", lang)
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt", encoding="utf-8") as out:
        for doc_id, text in docs.items():
            out.write(f"{doc_id}\t{text}\n")
    return path


@pytest.fixture
def release(tmp_path: Path) -> Path:
    root = tmp_path / "release"
    for lang, docs in DOCS.items():
        write_docs(root, lang, docs)
    for (src, tgt, split), queries in QUERIES.items():
        path = root / layout.query_file("bi139-base", src, tgt, split)
        path.parent.mkdir(parents=True, exist_ok=True)
        with gzip.open(path, "wb") as out:
            for src_id, title, results in queries:
                out.write(query_line(src_id, title, results) + b"\n")
            out.write(b"\n")  # a blank line, as loaders tolerate
    return root


def records(src: str, tgt: str, split: str) -> list[QueryRecord]:
    return [QueryRecord(i, q, tuple(r)) for i, q, r in QUERIES[(src, tgt, split)]]


def identity(path: Path) -> tuple[int, int]:
    stat = path.stat()
    return stat.st_ino, stat.st_mtime_ns


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    """Each test builds its indexes afresh: they are named by content, and the fixtures' files repeat across tests."""
    monkeypatch.setenv("CLIRMATRIX_TRAIN_CACHE", str(tmp_path / "train-cache"))


# DocStore


def test_docstore_returns_the_files_texts(release):
    store = DocStore(release, "en")
    assert len(store) == len(DOCS["en"])
    assert {doc_id: store[doc_id] for doc_id in DOCS["en"]} == DOCS["en"]
    assert store["007"] == "Flat text – no end"  # the id stays a string, leading zeros and all
    assert "007" in store and "7" not in store
    assert store.get_many(["3", "1", "3"]) == [DOCS["en"]["3"], DOCS["en"]["1"], DOCS["en"]["3"]]
    assert DocStore(release, "ja")["30"] == DOCS["ja"]["30"]
    assert store.index_path == default_cache_dir() / "DOCS" / f"en.tsv.gz.{store.key}.sqlite"
    assert not (release / ".cache").exists()  # the data folder is not written


def test_docstore_key_error_names_the_id_and_the_file(release):
    store = DocStore(release, "de")
    with pytest.raises(KeyError, match=r"'13'.*DOCS/de\.tsv\.gz"):
        store["13"]
    with pytest.raises(KeyError, match=r"'13'.*DOCS/de\.tsv\.gz"):
        store.get_many(["10", "13"])
    assert store.get("13") is None


def test_docstore_missing_file_names_it(release):
    with pytest.raises(FileNotFoundError, match=r"DOCS/xx\.tsv\.gz.*clirmatrix download docs"):
        DocStore(release, "xx")


def test_docstore_rebuilds_only_when_the_source_changes(release):
    first = DocStore(release, "de")
    assert first.built
    before = identity(first.index_path)
    again = DocStore(release, "de")
    assert not again.built and identity(again.index_path) == before

    source = write_docs(release, "de", {"10": "Neu.", "99": "Ganz neu."})
    stat = source.stat()
    os.utime(source, ns=(stat.st_atime_ns, stat.st_mtime_ns + 2_000_000_000))
    changed = DocStore(release, "de")
    assert changed.built and identity(changed.index_path) != before
    assert len(changed) == 2 and changed["99"] == "Ganz neu." and "11" not in changed
    assert first["11"] == DOCS["de"]["11"]  # an open reader keeps the file it opened


def test_docstore_cache_dir_leaves_the_root_alone(release, tmp_path):
    store = DocStore(release, "en", cache_dir=tmp_path / "cache")
    assert store.index_path.parent == tmp_path / "cache" / "DOCS" and store.index_path.is_file()
    assert store["1"] == DOCS["en"]["1"]
    assert not (release / ".cache").exists()


def test_indexes_are_named_by_content_so_copies_share_one(release, tmp_path):
    """A copy of the data elsewhere (another mount, another user's download) uses the index already built; a file's digest is computed once."""
    cache = tmp_path / "cache"
    first = DocStore(release, "ja", cache_dir=cache)
    copy = tmp_path / "copy"
    shutil.copytree(release, copy)
    again = DocStore(copy, "ja", cache_dir=cache)
    assert first.built and not again.built and again.index_path == first.index_path
    assert again["30"] == DOCS["ja"]["30"]
    assert len(list((cache / ".digests").iterdir())) == 2  # one a file path
    write_docs(copy, "ja", {"30": "Changed."})
    changed = DocStore(copy, "ja", cache_dir=cache)
    assert changed.built and changed.key != first.key and changed["30"] == "Changed."


def test_docstore_concurrent_openers_and_pickling(release):
    stores, errors = [], []

    def open_store():
        try:
            stores.append(DocStore(release, "en"))
        except Exception as error:  # noqa: BLE001 - reported below
            errors.append(error)

    threads = [threading.Thread(target=open_store) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert sum(store.built for store in stores) == 1  # the others waited for the first build
    assert [store["2"] for store in stores] == [DOCS["en"]["2"]] * 4
    assert pickle.loads(pickle.dumps(stores[0]))["5"] == DOCS["en"]["5"]
    leftovers = [p.name for p in stores[0].index_path.parent.iterdir() if ".tmp-" in p.name]
    assert not leftovers


# QueryStore


def test_querystore_returns_the_files_records(release):
    store = QueryStore(release, "bi139-base", "en", "de", "train")
    expected = records("en", "de", "train")
    assert len(store) == len(expected)
    assert list(store) == expected
    assert [store[i] for i in range(len(store))] == expected
    assert store[-1] == expected[-1] and store[-1].src_id == "007"
    assert store[2].src_query == "Zürich" and store[0].tgt_results[0] == ("10", 6)
    with pytest.raises(IndexError):
        store[len(expected)]
    again = QueryStore(release, "bi139-base", "en", "de", "train")
    assert not again.built and again[1] == expected[1]


def test_querystore_missing_file_names_it(release):
    with pytest.raises(FileNotFoundError, match=r"BI-139/base/de/de\.fr\.train\.base\.jl\.gz.*clirmatrix download bi139-base"):
        QueryStore(release, "bi139-base", "de", "fr", "train")


def test_multi8_directions():
    directions = multi8_directions()
    assert len(directions) == len(set(directions)) == 56
    assert all(src != tgt for src, tgt in directions)
    assert {lang for pair in directions for lang in pair} == set(MULTI8_LANGUAGES)


# Parallel pairs


def test_title_pairs_link_through_label_6_and_skip_unknown_titles(release):
    skipped = Counter()
    pairs = list(mine_parallel_pairs(release, [("en", "de"), ("en", "fr"), ("de", "en")], skipped=skipped))
    assert pairs == [
        ParallelPair("en", "de", "Aruba", "Aruba (Insel)"),
        ParallelPair("en", "de", "Death", "Tod"),
        ParallelPair("en", "de", "Zürich", "Zürich"),  # de title from de->ja dev
        ParallelPair("de", "en", "Aruba (Insel)", "Aruba"),
        ParallelPair("de", "en", "Tod", "Death"),
    ]
    assert skipped == Counter({"no_link": 2, "title_unknown": 3})


def test_lead_pairs_are_first_sentences_of_both_articles(release):
    skipped = Counter()
    pairs = list(mine_parallel_pairs(release, [("en", "de")], kind="lead", skipped=skipped))
    assert pairs == [
        ParallelPair("en", "de", "Aruba is an island.", "Aruba ist eine Insel."),
        ParallelPair("en", "de", "Death is the end of life!", "Der Tod ist das Ende des Lebens."),
        ParallelPair("en", "de", "Zürich is a city in Switzerland.", "Zürich ist eine Stadt in der Schweiz."),
    ]
    assert skipped == Counter({"no_link": 2, "doc_missing": 1})


def test_mining_checks_its_arguments_at_once(release):
    with pytest.raises(ValueError, match="sentence"):
        mine_parallel_pairs(release, [("en", "de")], kind="sentence")
    with pytest.raises(FileNotFoundError, match=r"en\.de\.test1\.base\.jl\.gz"):
        mine_parallel_pairs(release, [("en", "de")], splits=("train", "test1"))


@pytest.mark.parametrize("name", ["pairs.tsv", "pairs.tsv.gz"])
def test_parallel_tsv_round_trip(tmp_path, name):
    pairs = [ParallelPair("en", "de", "a\tb", "c\nd\r"), ParallelPair("en", "ja", "Tokyo", "東京")]
    assert write_parallel_tsv(tmp_path / name, iter(pairs)) == 2
    assert list(read_parallel_tsv(tmp_path / name)) == [ParallelPair("en", "de", "a b", "c d "), pairs[1]]
    assert [p.name for p in tmp_path.iterdir()] == [name]


def test_read_parallel_tsv_rejects_bad_lines(tmp_path):
    (tmp_path / "bad.tsv").write_text("en\tde\tonly three\n")
    with pytest.raises(ValueError, match=r"bad\.tsv:1"):
        list(read_parallel_tsv(tmp_path / "bad.tsv"))


# Sentences


@pytest.mark.parametrize(
    ("text", "sentences"),
    [
        ("Hello world. Pi is 3.14! Right?  Yes", ["Hello world.", "Pi is 3.14!", "Right?", "Yes"]),
        ('He said "stop." Then left...', ['He said "stop."', "Then left..."]),
        ("東京は首都です。人口が多い！本当？", ["東京は首都です。", "人口が多い！", "本当？"]),
        ("「はい。」そうです。", ["「はい。」", "そうです。"]),
        ("यह एक वाक्य है। यह दूसरा है।", ["यह एक वाक्य है।", "यह दूसरा है।"]),
        ("هل هذا سؤال؟ نعم.", ["هل هذا سؤال؟", "نعم."]),
        ("no end at all", ["no end at all"]),
        ("  ", []),
    ],
)
def test_split_sentences(text, sentences):
    assert split_sentences(text) == sentences


def test_sentence_windows():
    eleven = " ".join(f"S{i}." for i in range(11))
    windows = list(sentence_windows(iter(["A. B. C.", eleven, "x. y. z. w. v."]), window=5))
    assert windows == [[f"S{i}." for i in range(5)], [f"S{i}." for i in range(5, 10)], ["x.", "y.", "z.", "w.", "v."]]
    assert list(sentence_windows(["a. b. c."], window=2)) == [["a.", "b."]]
    with pytest.raises(ValueError):
        list(sentence_windows(["a. b."], window=1))


# Sampling


def test_ranking_pairs_respect_labels_and_cover_every_option():
    record = QueryRecord("1", "Aruba", (("10", 6), ("11", 3), ("12", 0), ("13", 0)))
    labels = dict(record.tgt_results)
    rng = random.Random(0)
    drawn = Counter(sample_ranking_pair(record, rng) for _ in range(3000))
    assert set(drawn) == {("10", "11"), ("10", "12"), ("10", "13"), ("11", "12"), ("11", "13")}
    assert all(labels[pos] > labels[neg] and labels[pos] > 0 for pos, neg in drawn)
    positives = Counter()
    for (pos, _), n in drawn.items():
        positives[pos] += n
    assert 0.45 < positives["10"] / 3000 < 0.55  # d+ uniform over the two labelled candidates
    assert 0.13 < drawn[("10", "11")] / 3000 < 0.2  # d- uniform below d+: 1/2 * 1/3


@pytest.mark.parametrize(
    ("results", "possible"),
    [
        ((("a", 0), ("b", 0)), None),
        ((("a", 3), ("b", 3)), None),
        ((), None),
        ((("a", 3), ("b", 1), ("c", 1)), {("a", "b"), ("a", "c")}),  # the lowest label 1 is no d+
    ],
)
def test_ranking_pair_edge_cases(results, possible):
    record = QueryRecord("q", "q", results)
    rng = random.Random(1)
    drawn = {sample_ranking_pair(record, rng) for _ in range(200)}
    assert drawn == ({None} if possible is None else possible)


def test_sampler_draws_uniformly_over_the_union_and_skips_impossible(release):
    stores = [QueryStore(release, "bi139-base", "en", "de", "train"), QueryStore(release, "bi139-base", "de", "en", "train")]
    sampler = RankingPairSampler(stores, random.Random(7))
    draws = [sampler.draw() for _ in range(3500)]
    queries = Counter((d.store_index, d.record.src_id) for d in draws)
    possible = {(0, "1"), (0, "2"), (0, "3"), (0, "4"), (0, "5"), (1, "10"), (1, "11")}
    assert set(queries) == possible  # en 007 has only label-0 candidates
    assert all(0.11 < n / len(draws) < 0.175 for n in queries.values())  # 1/7 each
    for store_index, record, pos, neg in draws:
        assert record == stores[store_index][[r.src_id for r in stores[store_index]].index(record.src_id)]
        labels = dict(record.tgt_results)
        assert labels[pos] > labels[neg] and labels[pos] > 0

    def run(seed):
        return [(d.store_index, d.record.src_id, d.pos_id, d.neg_id) for d in islice(RankingPairSampler(stores, random.Random(seed)), 50)]

    assert run(3) == run(3)
    assert run(3) != run(4)


def test_top_pairs_set_each_querys_best_candidate_against_one_of_its_lowest(release):
    stores = [QueryStore(release, "bi139-base", "en", "de", "train")]
    draws = list(islice(RankingPairSampler(stores, random.Random(5), PAIR_PICKERS["top"]), 600))
    assert len({d.record.src_id for d in draws}) == 5  # the same queries as the default pairs: all with a pair
    for draw in draws:
        results = draw.record.tgt_results
        best = max(label for _, label in results)
        lowest = min(label for _, label in results)
        assert draw.pos_id == next(doc for doc, label in results if label == best)  # the best; the first of ties
        assert dict(results)[draw.neg_id] == lowest < best
    with pytest.raises(InvalidInputError, match="unknown --pairs 'best'; expected one of lower, top"):
        TrainArguments(model="cross-encoder", pairs="best").resolved()


def test_sampler_refuses_when_nothing_can_be_drawn(release):
    impossible = QueryStore(release, "bi139-base", "en", "fr", "dev")
    with pytest.raises(ValueError, match="none of the 1 queries"):
        RankingPairSampler([impossible], random.Random(0)).draw()
    with pytest.raises(ValueError, match="empty"):
        RankingPairSampler([], random.Random(0))


def test_pointwise_triples_take_all_labelled_and_as_many_zeros():
    record = QueryRecord("q", "q", (("a", 6), ("b", 2), ("z1", 0), ("z2", 0), ("z3", 0), ("z4", 0)))
    seen = set()
    for seed in range(100):
        triples = pointwise_triples(record, random.Random(seed))
        assert triples[:2] == [("a", 6), ("b", 2)]
        zeros = triples[2:]
        assert len(zeros) == 2 and len(set(zeros)) == 2 and all(label == 0 for _, label in zeros)
        seen.update(zeros)
    assert seen == {("z1", 0), ("z2", 0), ("z3", 0), ("z4", 0)}
    few = QueryRecord("q", "q", (("a", 6), ("b", 2), ("c", 1), ("z", 0)))
    assert pointwise_triples(few, random.Random(0)) == [("a", 6), ("b", 2), ("c", 1), ("z", 0)]
    assert pointwise_triples(record, random.Random(5)) == pointwise_triples(record, random.Random(5))


def test_dpr_examples():
    rng = random.Random(0)
    record = QueryRecord("1", "Aruba", (("10", 6), ("11", 3), ("12", 0), ("13", 0)))
    assert {dpr_example(record, rng) for _ in range(100)} == {("10", "12"), ("10", "13")}
    no_zero = QueryRecord("q", "q", (("c", 1), ("a", 3), ("b", 3), ("d", 1)))
    assert dpr_example(no_zero, rng) == ("a", "c")  # ties: first in candidate order
    assert dpr_example(QueryRecord("q", "q", (("a", 0), ("b", 0))), rng) is None
    assert dpr_example(QueryRecord("q", "q", (("a", 2), ("b", 2))), rng) is None
    assert dpr_example(QueryRecord("q", "q", (("a", 2),)), rng) is None
