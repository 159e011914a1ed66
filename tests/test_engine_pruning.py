"""The embedded engine's pruned and merged searches against its exhaustive oracle, and the packed postings.

Pruning (block-max MaxScore) must change nothing a user can see: the same top k, the
same float32 scores to the bit, the same tie order, for both field combinations, every
analyzer family, repeated query terms, shards scored with a collection's statistics,
and the corner cases where pruning logic tends to break (all ties, one term, terms in
every document, k beyond the matches).
"""

from __future__ import annotations

import functools
import operator
import random

import numpy as np
import pytest

from clirmatrix.pipeline.engines import embedded
from clirmatrix.pipeline.engines.analyzers import analyzer_named
from clirmatrix.pipeline.engines.base import Bm25Settings
from clirmatrix.pipeline.engines.embedded import BLOCK, FLOOR_K, EmbeddedEngine, Postings

COMBINES = ("best_fields", "most_fields")


INDEX_ONLY = {"test_packed_postings_round_trip_extreme_gaps_and_frequencies", "test_postings_pack_to_under_two_and_a_half_bytes_on_a_zipfian_corpus"}
INDEX_ONLY |= {"test_each_terms_floor_is_the_kth_best_value_of_its_list"}


@pytest.fixture(autouse=True, params=["pruned", "merged"])
def kernel(request, monkeypatch) -> str:
    """Every search test with each kernel: all queries pruned, and all merged (every posting decoded and summed)."""
    if request.param == "merged" and request.node.originalname in INDEX_ONLY:
        pytest.skip("searches nothing")
    monkeypatch.setattr(embedded.merged, "MERGE_DENSITY", -1.0 if request.param == "pruned" else float("inf"))
    if request.param == "pruned":
        monkeypatch.setattr(embedded.merged, "MERGE_BALANCED_POSTINGS", -1)
    return request.param


def build(docs: list[tuple[str, str]], analyzer: str = "plain", combine: str = "best_fields") -> EmbeddedEngine:
    engine = EmbeddedEngine(analyzer_named(analyzer), Bm25Settings(combine=combine))
    engine.index([([f"d{i}" for i in range(len(docs))], [t for t, _ in docs], [x for _, x in docs])])
    return engine


def zipf_docs(rng: random.Random, words: list[str], n: int, title_words: int = 4, text_words: int = 60) -> list[tuple[str, str]]:
    weights = [1 / (i + 1) for i in range(len(words))]
    return [(" ".join(rng.choices(words, weights, k=rng.randint(0, title_words))), " ".join(rng.choices(words, weights, k=rng.randint(0, text_words)))) for _ in range(n)]


def assert_same_as_oracle(engine: EmbeddedEngine, queries: list[str], ks: tuple[int, ...] = (1, 10, 100)) -> None:
    for k in ks:
        pruned, oracle = engine.search(queries, k), engine.search(queries, k, exhaustive=True)
        for query, a, b in zip(queries, pruned, oracle):
            assert a.positions.tolist() == b.positions.tolist(), (query, k)
            assert a.scores.view(np.uint32).tolist() == b.scores.view(np.uint32).tolist(), (query, k)  # bit for bit


@pytest.mark.parametrize("combine", COMBINES)
def test_pruned_search_equals_the_exhaustive_oracle_on_a_zipfian_corpus(combine):
    rng = random.Random(5)
    words = [f"w{i}" for i in range(400)]
    engine = build(zipf_docs(rng, words, 6_000), combine=combine)
    weights = [1 / (i + 1) for i in range(len(words))]
    queries = [" ".join(rng.choices(words, weights, k=rng.randint(1, 6))) for _ in range(1_500)]
    queries += ["w0 w0 w0 w1", "w399 w0", "w5 w5"]  # repeated terms count once per occurrence
    assert_same_as_oracle(engine, queries, ks=(1, 10, 100, 7_000))


@pytest.mark.parametrize("analyzer,texts", [
    ("plain", ["The cat sat on the mat", "Dogs and cats", "A mat of cats", "the the the"]),
    ("bigram", ["東京都の大学", "北京大学水", "中文维基百科", "水"]),
    ("english", ["The runners were running", "A run of bad luck", "Running late again", "luck runs out"]),
    ("german", ["Die Häuser am Fluss", "Ein Haus am See", "Straße und Häuser", "Fußball am Sonntag"]),
    ("russian", ["Дома на реке", "Дом у реки", "Большие дома", "река и дом"]),
])  # fmt: skip
def test_every_analyzer_family_prunes_to_the_oracles_results(analyzer, texts):
    rng = random.Random(analyzer)
    docs = [(rng.choice(texts), " ".join(rng.choices(texts, k=rng.randint(1, 8)))) for _ in range(1_500)]
    for combine in COMBINES:
        engine = build(docs, analyzer, combine)
        queries = [" ".join(rng.choices(texts, k=rng.randint(1, 2))) for _ in range(200)] + texts
        assert_same_as_oracle(engine, queries)


def test_all_ties_come_back_in_document_order_including_at_the_kth_place():
    engine = build([("same title", "same text")] * 700)
    for k in (1, 100, 129, 699):
        hits = engine.search(["same"], k)[0]
        assert hits.positions.tolist() == list(range(k)) and len(set(hits.scores.tolist())) == 1
    assert_same_as_oracle(engine, ["same", "title", "text same", "same same"], ks=(1, 100, 500, 700))


def test_one_term_queries_and_terms_in_every_document():
    rng = random.Random(9)
    words = [f"w{i}" for i in range(50)]
    docs = [(f"common {rng.choice(words)}", "common " + " ".join(rng.choices(words, k=rng.randint(1, 300)))) for _ in range(3_000)]
    engine = build(docs)
    assert all(df == 3_000 for df in (engine.local_document_frequencies()[f][engine.vocab["common"]] for f in (0, 1)))
    assert_same_as_oracle(engine, ["common", *words, *(f"common {w}" for w in words), "common common"], ks=(1, 10, 100, 2_999))


def test_k_larger_than_the_matches_returns_every_match():
    engine = build([("rare", "x")] + [("other", "y")] * 400 + [("", "rare rare")])
    hits = engine.search(["rare"], 100)[0]
    assert sorted(hits.positions.tolist()) == [0, 401]
    assert_same_as_oracle(engine, ["rare", "rare other", "nothing", ""], ks=(1, 2, 100, 402))


def test_a_shard_scored_with_the_collections_statistics_prunes_exactly():
    rng = random.Random(13)
    words = [f"w{i}" for i in range(300)]
    docs = zipf_docs(rng, words, 4_000)
    whole = build(docs)
    shard = build(docs[1_000:2_500])
    dfs = [np.array([whole_df[whole.vocab[t]] for t in shard.terms()]) for whole_df in whole.local_document_frequencies()]
    shard.use_statistics(whole.local_statistics(), *dfs)
    queries = [" ".join(rng.choices(words[:60], k=rng.randint(1, 4))) for _ in range(400)]
    assert_same_as_oracle(shard, queries)
    # and each shard hit scores what the whole index gives that document
    for query in queries[:50]:
        everything = whole.search([query], 4_000)[0]
        by_position = dict(zip(everything.positions.tolist(), everything.scores.tolist()))
        for position, score in zip(*shard.search([query], 20)[0]):
            assert by_position[int(position) + 1_000] == score


def test_stored_and_loaded_index_searches_alike():
    rng = random.Random(21)
    engine = build(zipf_docs(rng, [f"w{i}" for i in range(200)], 2_000))
    loaded = EmbeddedEngine.from_arrays(engine.analyzer, engine.settings, {k: v.copy() for k, v in engine.arrays().items()}, engine.terms())
    queries = [f"w{rng.randrange(200)} w{rng.randrange(20)}" for _ in range(300)]
    for a, b in zip(engine.search(queries, 50), loaded.search(queries, 50)):
        assert a.positions.tolist() == b.positions.tolist() and a.scores.tolist() == b.scores.tolist()


def csr(lists: list[list[tuple[int, int]]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    indptr = np.zeros(len(lists) + 1, np.int64)
    np.cumsum([len(postings) for postings in lists], out=indptr[1:])
    docs = np.array([d for postings in lists for d, _ in postings], np.int32)
    tfs = np.array([tf for postings in lists for _, tf in postings], np.uint32)
    return indptr, docs, tfs


def test_packed_postings_round_trip_extreme_gaps_and_frequencies():
    rng = np.random.default_rng(3)
    top = np.iinfo(np.int32).max - 1
    title = [[(0, 1), (top, 2**32 - 1)], [], [(5, 1)]]
    dense = sorted(set(rng.integers(0, 5_000, 3_000).tolist()))
    text = [[(d, int(rng.integers(1, 70_000))) for d in dense], [(d, 1) for d in range(0, 3 * BLOCK + 7)], [(d, 3) for d in range(0, 10**9, 10**7)]]
    fields = [csr(title), csr(text)]
    packed = Postings.pack(fields, np.zeros((2, 1), np.uint8), np.zeros((2, 2), np.int64))
    for f, (indptr, docs, tfs) in enumerate(fields):
        got_docs, got_tfs = packed.unpack(f)
        assert np.array_equal(packed.indptr[f], indptr)
        assert got_docs.tolist() == docs.tolist() and got_tfs.tolist() == tfs.astype(np.int64).tolist()
    consecutive = packed.block_ptr[1, 1]  # the run of documents 0, 1, 2, ... packs to no bits at all
    assert packed.doc_bits[consecutive] == 0 and packed.tf_bits[consecutive] == 0


def test_postings_pack_to_under_two_and_a_half_bytes_on_a_zipfian_corpus():
    rng = random.Random(4)
    words = [f"w{i}" for i in range(3_000)]
    engine = build(zipf_docs(rng, words, 20_000, text_words=150))
    memory = engine.memory()
    assert memory["posting_bytes"] / memory["postings"] < 2.5  # int32 document + uint16 frequency took 6
    assert memory["index_bytes"] / memory["postings"] < 3.0  # with term offsets, norms and block maxima


def test_each_terms_floor_is_the_kth_best_value_of_its_list():
    rng = random.Random(17)
    engine = build(zipf_docs(rng, [f"w{i}" for i in range(150)], 3_000))
    postings = engine.postings
    caches = engine._kernel_index().caches  # the norm caches under the statistics in use
    _, term_maxima, floors = postings.maxima(caches)
    for f in range(2):
        docs, tfs = postings.unpack(f)
        for term in range(len(engine.vocab)):
            lo, hi = postings.indptr[f, term], postings.indptr[f, term + 1]
            values = np.sort(np.float32(1) + tfs[lo:hi].astype(np.float32) * caches[f][postings.norms[f, docs[lo:hi]]])[::-1]
            assert floors[f, term] == (values[FLOOR_K - 1] if hi - lo >= FLOOR_K else 0)
            assert term_maxima[f, term] == (values[0] if hi > lo else 0)


def test_rare_terms_far_apart_beside_common_ones():
    # Windows where a rare clause's next document lies far ahead, windows split into
    # sub-windows, and floors from the common terms, all at once.
    rng = random.Random(29)
    words = [f"w{i}" for i in range(40)]
    docs = []
    for i in range(40_000):
        rare = f"r{i % 7}" if i % 997 == 0 else ""
        docs.append((f"{rng.choice(words)} {rare}".strip(), " ".join(rng.choices(words, k=rng.randint(1, 12))) + f" {rare}"))
    queries = [f"r{j} {w}" for j in range(7) for w in words[:6]] + [f"w0 w1 r{j}" for j in range(7)] + ["w0 w0 w1", "w3"]
    for combine in COMBINES:
        assert_same_as_oracle(build(docs, combine=combine), queries, ks=(1, 10, 100, 150))


def test_title_signatures_rule_out_only_absent_terms_even_where_terms_share_a_bit():
    # 150 title words over 16 signature bits: many words share a bit, so a set bit
    # often belongs to another word and the probe must still find the term absent.
    rng = random.Random(31)
    words = [f"t{i}" for i in range(150)]
    docs = [(" ".join(rng.choices(words[:12] + words, k=rng.randint(1, 4))), " ".join(rng.choices(words, k=rng.randint(1, 20)))) for _ in range(12_000)]
    queries = [f"{a} {b}" for a in words[:12] for b in words[:12]] + [f"{a} {b} {c}" for a, b, c in (rng.sample(words[:40], 3) for _ in range(200))]
    for combine in COMBINES:
        engine = build(docs, combine=combine)
        bit = {term: 1 << ((term_id * 0x9E3779B97F4A7C15 % 2**64) >> 60) for term, term_id in engine.vocab.items()}
        assert len(set(bit.values())) < len(bit)  # shared bits: the case under test
        expected = [functools.reduce(operator.or_, (bit[word] for word in title.split()), 0) for title, _ in docs]
        assert engine.postings.signatures().tolist() == expected
        assert_same_as_oracle(engine, queries)


def zipf_engine(seed: int) -> tuple[random.Random, list[str], EmbeddedEngine]:
    """An engine over 3,000 Zipfian documents of 400 words, with the generator that made them and the words."""
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(400)]
    return rng, words, build(zipf_docs(rng, words, 3_000))


def test_the_engine_mixes_the_kernels_by_postings_and_still_equals_the_oracle(kernel, monkeypatch):
    if kernel != "pruned":
        pytest.skip("the density is set here: one run")
    rng, words, engine = zipf_engine(21)
    queries = [" ".join(rng.choices(words[:5] if i % 3 == 0 else words[50:], k=rng.randint(1, 4))) for i in range(300)]  # common words or rare
    monkeypatch.setattr(embedded.merged, "MERGE_DENSITY", 0.05)
    monkeypatch.setattr(embedded.merged, "MERGE_BALANCED_POSTINGS", -1)
    q_ptr, q_terms, _ = engine.query_arrays(queries)
    merged = embedded.choose_merged(q_ptr, q_terms, engine._kernel_index(), engine.size)
    assert 0.2 < merged.mean() < 0.9  # both kernels run
    assert_same_as_oracle(engine, queries)


def test_queries_of_balanced_lists_are_merged_up_to_a_count_of_postings_whatever_the_density(kernel, monkeypatch):
    if kernel != "pruned":
        pytest.skip("the limits are set here: one run")
    rng, words, engine = zipf_engine(22)
    queries = [" ".join(rng.sample(words[: 5 if i % 2 else 60], k=rng.randint(1, 3))) for i in range(300)]
    monkeypatch.setattr(embedded.merged, "MERGE_DENSITY", -1.0)  # only the balanced rule merges
    monkeypatch.setattr(embedded.merged, "MERGE_BALANCED_POSTINGS", 4_000)
    monkeypatch.setattr(embedded.merged, "MERGE_BALANCED_SHARE", 0.7)
    q_ptr, q_terms, _ = engine.query_arrays(queries)
    index = engine._kernel_index()
    lists = [[int(index.indptr[f, t + 1] - index.indptr[f, t]) for t in q_terms[q_ptr[q] : q_ptr[q + 1]] for f in (0, 1)] for q in range(len(queries))]
    expected = [sum(sizes) <= 4_000 and max(sizes) <= 0.7 * sum(sizes) for sizes in lists]
    assert embedded.choose_merged(q_ptr, q_terms, index, engine.size).tolist() == expected
    assert 0.1 < np.mean(expected) < 0.9  # one-word and lopsided queries stay pruned, balanced ones merge
    assert_same_as_oracle(engine, queries)


def test_rank_keys_order_hits_as_the_heap_does_and_keep_the_best_k(kernel: str) -> None:
    """The merged kernel ranks hits by int64 keys: the same order as ``_worse`` (score, then the lower document), any k."""
    if kernel == "pruned":
        pytest.skip("the merged kernel's keys")
    rng = random.Random(5)
    scores = [rng.choice([0.0, 1e-30, 0.5, 0.5000001, 2.0, 7.25, 3.4e38]) for _ in range(600)]
    hits = [(np.float32(s), d) for s, d in zip(scores, rng.sample(range(2**31 - 1), 600))]
    keys = np.array([embedded._rank_key(s, d) for s, d in hits], np.int64)
    by_key = [hits[i] for i in np.argsort(-keys, kind="stable")]
    by_rank = sorted(hits, key=functools.cmp_to_key(lambda a, b: -1 if embedded._worse(b[0], b[1], a[0], a[1]) else 1))
    assert by_key == by_rank
    assert all(embedded._key_score(key) == s for key, (s, _) in zip(keys, hits))
    for k in (1, 7, 100, 600, 900):
        kept = keys.copy()
        n = embedded._keep_best(kept, len(kept), k)
        assert n == min(k, 600) and sorted(kept[:n], reverse=True) == sorted(keys, reverse=True)[:n]
        assert k >= 600 or kept[k - 1] == sorted(keys, reverse=True)[k - 1]  # cut from more than k: the k-th best, where the kernel reads its threshold
