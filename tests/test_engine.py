"""The embedded BM25 engine: Lucene's scores by hand, field combination, ties, analyzers, run files."""

from __future__ import annotations

import gzip
import math
import random
import re
import unicodedata

import numpy as np
import orjson
import pytest

from clirmatrix.pipeline.engines import analyzers as an
from clirmatrix.pipeline.engines.analyzers import analyzer_for, lucene_lowercase, plain_analyzer
from clirmatrix.pipeline.engines.base import Bm25Settings
from clirmatrix.pipeline.engines.embedded import EmbeddedEngine
from clirmatrix.pipeline.engines.lucene_bm25 import byte4_to_int, int_to_byte4
from clirmatrix.pipeline.engines.search import BadInputError, run_search
from clirmatrix.pipeline.method.languages import BI139_LANGUAGES

F = np.float32


def lucene_term(boost, df, n_docs, tf, norm_length, avgdl, k1=1.2, b=0.3):
    """Lucene's BM25Scorer by hand: float32, weight - weight / (1 + tf / (k1 (1 - b + b dl / avgdl)))."""
    idf = F(math.log(1 + (n_docs - df + 0.5) / (df + 0.5)))
    weight = F(boost) * idf
    norm_inverse = F(1) / (F(k1) * ((F(1) - F(b)) + F(b) * F(norm_length) / F(avgdl)))
    return weight - weight / (F(1) + F(tf) * norm_inverse)


def words(prefix: str, n: int) -> str:
    return " ".join(f"{prefix}{i}" for i in range(n))


def engine(docs: list[tuple[str, str]], analyzer=None, **settings) -> EmbeddedEngine:
    e = EmbeddedEngine(analyzer or plain_analyzer(), Bm25Settings(**settings))
    ids = [f"d{i}" for i in range(len(docs))]
    e.index([(ids, [t for t, _ in docs], [x for _, x in docs])])
    return e


def score_of(e: EmbeddedEngine, query: str, position: int) -> np.float32:
    hits = e.search([query], k=len(e.doc_ids))[0]
    return hits.scores[list(hits.positions).index(position)]


def test_norm_byte_keeps_small_lengths_and_rounds_large_ones_down():
    assert [int(byte4_to_int(int_to_byte4(n))) for n in range(24)] == list(range(24))
    # 100 - 24 = 76 = 0b1001100: 4 significant bits keep 0b1001000 = 72, so 96.
    assert int(int_to_byte4(100)) == 57 and int(byte4_to_int(57)) == 96
    assert int(byte4_to_int(int_to_byte4(40))) == 40 and int(byte4_to_int(int_to_byte4(41))) == 40
    decoded = byte4_to_int(np.arange(256))
    assert (np.diff(decoded) > 0).all() and decoded[255] >= 2**31 - 2**27


def test_score_is_lucenes_formula_with_the_quantised_length():
    # Text lengths 100 and 41 are stored as 96 and 40; avgdl uses the exact (100 + 41) / 2.
    e = engine([("", "apple " + words("x", 99)), ("", "apple apple " + words("y", 39))])
    got = [score_of(e, "apple", 0), score_of(e, "apple", 1)]
    expected = [lucene_term(1, 2, 2, 1, 96, 70.5), lucene_term(1, 2, 2, 2, 40, 70.5)]
    assert got == expected  # bit for bit
    assert got[0] != lucene_term(1, 2, 2, 1, 100, 70.5)
    assert got[1] != lucene_term(1, 2, 2, 2, 41, 70.5)


def test_fields_have_their_own_statistics_and_the_title_boost():
    docs = [("zebra", "zebra " + words("a", 9)), ("", "zebra " + words("b", 19)), ("horse", "zebra " + words("c", 29))]
    e = engine(docs, combine="most_fields")
    # title: 2 documents have the field (avgdl 1), 1 has zebra; text: 3 documents (avgdl 20), 3 have zebra.
    title = lucene_term(2.0, 1, 2, 1, 1, 1.0)
    text = lucene_term(1.0, 3, 3, 1, 10, 20.0)
    assert score_of(e, "zebra", 0) == F(np.float64(title) + np.float64(text))
    unboosted = engine(docs, combine="most_fields", title_boost=1.0)
    assert score_of(unboosted, "zebra", 0) == F(np.float64(lucene_term(1.0, 1, 2, 1, 1, 1.0)) + np.float64(text))


def test_best_fields_takes_the_larger_field_score_and_most_fields_the_sum():
    docs = [("red apple", "apple pie " + words("p", 8)), ("pear", "apple " + words("q", 9)), ("plum", words("r", 10))]
    best, most = engine(docs), engine(docs, combine="most_fields")
    title = lucene_term(2.0, 1, 3, 1, 2, 4 / 3)  # 3 titles of 4 tokens, 1 with apple
    text = lucene_term(1.0, 2, 3, 1, 10, 10.0)  # 3 texts of 10 tokens, 2 with apple
    assert score_of(best, "apple", 0) == max(title, text) == title
    assert score_of(most, "apple", 0) == F(np.float64(title) + np.float64(text))
    assert score_of(best, "apple", 1) == score_of(most, "apple", 1) == text  # no title match
    assert best.search(["apple"], 10)[0].positions.tolist() == [0, 1]


def test_query_clauses_add_up_in_double_and_repeats_count_each_time():
    docs = [("cat dog", words("t", 5)), ("dog", "cat " + words("u", 4)), ("bird", words("v", 5))]
    e = engine(docs)
    cat, dog = lucene_term(2.0, 1, 3, 1, 2, 4 / 3), lucene_term(2.0, 2, 3, 1, 2, 4 / 3)
    assert score_of(e, "cat dog", 0) == F(np.float64(cat) + np.float64(dog))
    assert score_of(e, "cat cat", 0) == 2 * score_of(e, "cat", 0) == lucene_term(4.0, 1, 3, 1, 2, 4 / 3)


def test_equal_scores_come_in_document_order_and_k_cuts_after_ties():
    docs = [("other", "noise")] + [("same", "text")] * 6 + [("same same", "text")]
    e = engine(docs)
    hits = e.search(["same"], k=4)[0]
    assert hits.positions.tolist() == [7, 1, 2, 3]  # tf 2 first, then the tie in index order
    assert hits.positions.dtype == np.int32 and hits.scores.dtype == np.float32
    assert len(set(hits.scores[1:].tolist())) == 1
    assert e.search(["same"], k=100)[0].positions.tolist() == [7, 1, 2, 3, 4, 5, 6]


def test_queries_without_tokens_or_matches_return_nothing():
    e = engine([("the cat", "a dog")], analyzer=analyzer_for("en"))
    for hits in e.search(["", "!!! ...", "the of and", "unicorn"], k=10):
        assert len(hits.positions) == 0 and len(hits.scores) == 0
    assert e.search([], k=10) == []
    assert len(e.search(["cat"], k=10)[0].positions) == 1  # k larger than the matches


def test_threads_give_the_same_results():
    rng = random.Random(3)
    docs = [(" ".join(rng.choices("abcdefgh", k=2)), " ".join(rng.choices("abcdefghijklmnop", k=rng.randint(1, 40)))) for _ in range(300)]
    queries = [" ".join(rng.choices("abcdefghijklmnopq", k=rng.randint(0, 3))) for _ in range(500)]
    one = engine(docs).search(queries, 20)
    two = EmbeddedEngine(plain_analyzer(), threads=2)
    two.index([([str(i) for i in range(300)], [d[0] for d in docs], [d[1] for d in docs])])
    for a, b in zip(one, two.search(queries, 20)):
        assert a.positions.tolist() == b.positions.tolist() and a.scores.tolist() == b.scores.tolist()


def test_scores_agree_with_bm25s_lucene_method_on_a_random_corpus():
    bm25s = pytest.importorskip("bm25s")
    rng = random.Random(11)
    vocab = [f"w{i}" for i in range(60)]
    # Lengths up to 23 are stored exactly, so bm25s's exact lengths give the same scores.
    docs = [[rng.choice(vocab[: rng.randint(5, 60)]) for _ in range(rng.randint(1, 23))] for _ in range(400)]
    ours = EmbeddedEngine(plain_analyzer())
    ours.index([([str(i) for i in range(len(docs))], [""] * len(docs), [" ".join(d) for d in docs])])
    reference = bm25s.BM25(k1=1.2, b=0.3, method="lucene")
    reference.index(docs, show_progress=False)
    present = sorted({w for d in docs for w in d})
    for query in [rng.sample(present, rng.randint(1, 4)) for _ in range(50)]:
        expected = reference.get_scores(query)
        hits = ours.search([" ".join(query)], k=len(docs))[0]
        assert set(hits.positions.tolist()) == set(np.flatnonzero(expected).tolist())
        np.testing.assert_allclose(hits.scores, expected[hits.positions], rtol=2e-6)
        top = hits.positions[:10]
        assert (expected[top] >= np.sort(expected)[::-1][9] * (1 - 1e-6)).all()


def test_settings_are_checked():
    with pytest.raises(ValueError):
        Bm25Settings(combine="cross_fields")
    with pytest.raises(ValueError):
        Bm25Settings(b=1.5)


# Analyzers


def test_english_german_russian_drop_stop_words_and_stem():
    assert analyzer_for("en")("The running dogs of the city") == ["run", "dog", "citi"]
    assert analyzer_for("simple")("Running") == ["run"]
    assert analyzer_for("de")("Die Häuser und die Bäume") == ["haus", "baum"]
    assert analyzer_for("ru")("Книги по истории России") == ["книг", "истор", "росс"]


def test_cjk_and_other_unspaced_scripts_become_bigrams():
    assert analyzer_for("zh")("北京大学 水") == ["北京", "京大", "大学", "水"]
    assert analyzer_for("ja")("東京都のCAFE") == ["東京", "京都", "都の", "cafe"]
    assert analyzer_for("th")("ภาษา") == ["ภา", "าษ", "ษา"]
    assert analyzer_for("zh")("𠀀𠀁中") == ["𠀀𠀁", "𠀁中"]  # supplementary ideographs


def test_unknown_languages_get_plain_tokenize_and_lowercase():
    assert analyzer_for("xx").name == "plain"
    assert analyzer_for("xx")("The RUNNING dogs, l'été 3.14") == ["the", "running", "dogs", "l", "été", "3", "14"]
    assert plain_analyzer()("हिन्दी भाषा") == ["हिन्दी", "भाषा"]  # combining marks stay inside words


def test_lowercasing_is_lucenes_per_code_point_mapping():
    assert lucene_lowercase("İSTANBUL") == "istanbul" != "İSTANBUL".lower()
    assert lucene_lowercase("ΟΔΟΣ ΣΑΣ") == "οδοσ σασ" != "ΟΔΟΣ ΣΑΣ".lower()
    assert lucene_lowercase("ς ẞ Ǆ") == "ς ß ǆ"
    # Lowercasing never moves a character between word, unspaced-script and other characters,
    # so lowercasing the text first gives ES's tokenizer-then-lowercase tokens.
    spaced, unspaced = an.token_classes()

    def kind(ch: str) -> int:
        cp = ord(ch)
        return 1 + any(lo <= cp <= hi for lo, hi in unspaced) if unicodedata.category(ch)[0] in "LMN" else 0

    changed = [chr(cp) for cp in range(0x110000) if not 0xD800 <= cp <= 0xDFFF and lucene_lowercase(chr(cp)) != chr(cp)]
    assert len(changed) > 1000
    assert all(len(lucene_lowercase(c)) == 1 and kind(lucene_lowercase(c)) == kind(c) for c in changed)


def test_bigram_tokens_equal_the_lookahead_regex_given_to_elasticsearch():
    spaced, unspaced = an.token_classes()
    pattern = re.compile(an.lookahead_bigram_pattern(f"[{an.char_class(spaced)}]", f"[{an.char_class(unspaced)}]"))
    rng = random.Random(5)
    pool = "abcé1ΣД北京大学水中𠀀𠀁のカタ한국ภาษา  .-'"
    for _ in range(300):
        text = "".join(rng.choice(pool) for _ in range(rng.randint(0, 30)))
        lookahead = [m.group(1) for m in pattern.finditer(text) if m.group(1)]
        assert an.bigram_tokens(text) == lookahead, text
    assert "(?<" not in an.BIGRAM_PATTERN_JAVA  # no look-behind (fails on surrogate pairs in Java)


def test_tokens_over_255_utf16_units_are_dropped():
    assert plain_analyzer()("a " + "b" * 255 + " " + "c" * 256) == ["a", "b" * 255]
    assert plain_analyzer()("𝐀" * 128) == []  # 256 UTF-16 units


def test_the_table_covers_bi139_and_names_real_stemmers():
    import Stemmer

    assert set(BI139_LANGUAGES) <= set(an.LANGUAGE_ANALYZERS)
    algorithms = set(Stemmer.algorithms())
    for lang in an.LANGUAGE_ANALYZERS:
        analyzer = analyzer_for(lang)
        assert analyzer.stemmer is None or analyzer.stemmer in algorithms
        spec = analyzer.spec
        orjson.dumps(spec)
        assert spec["tokenizer"]["type"] == "pattern" and spec["filter"][1] == {"type": "lowercase"}
        if analyzer.stopwords:
            assert all(analyzer(w) == [] for w in analyzer.stopwords[:50])
    assert analyzer_for("en").spec["filter"][-1] == {"type": "snowball", "language": "English"}


# run_search


def write_corpus(path, docs):
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "wb") as out:
        for doc_id, title, text in docs:
            out.write(orjson.dumps({"id": doc_id, "title": title, "text": text}) + b"\n")


def test_run_search_writes_a_deterministic_trec_run(tmp_path):
    docs = [
        ("A1", "Paris", "Paris is the capital of France"),
        ("A2", "France", "France is a country"),
        ("A3", "Berlin", "capital of Germany"),
    ]
    write_corpus(tmp_path / "corpus.jsonl.gz", docs)
    (tmp_path / "queries.tsv").write_text("q1\tParis\nq2\tcapital cities\nq3\tthe\n", encoding="utf-8")
    counts = run_search(str(tmp_path / "corpus.jsonl.gz"), str(tmp_path / "queries.tsv"), str(tmp_path / "run.txt"), lang="en", k=2)
    first = (tmp_path / "run.txt").read_bytes()
    run_search(str(tmp_path / "corpus.jsonl.gz"), str(tmp_path / "queries.tsv"), str(tmp_path / "run2.txt"), lang="en", k=2)
    assert (tmp_path / "run2.txt").read_bytes() == first
    lines = [line.split(" ") for line in first.decode().splitlines()]
    assert [(q, d, r) for q, _, d, r, _, _ in lines] == [("q1", "A1", "1"), ("q2", "A3", "1"), ("q2", "A1", "2")]
    assert all(q0 == "Q0" and tag == "clirmatrix" and re.fullmatch(r"\d+\.\d{6}", s) for _, q0, _, _, s, tag in lines)
    assert float(lines[1][4]) >= float(lines[2][4])
    assert counts == {"analyzer": "english", "docs": 3, "queries": 3, "queries_without_hits": 1, "lines": 3}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["corpus.jsonl.gz", "queries.tsv", "run.txt", "run2.txt"]


def test_run_search_names_the_bad_line(tmp_path):
    corpus, queries, out = tmp_path / "c.jsonl", tmp_path / "q.tsv", tmp_path / "run.txt"
    corpus.write_bytes(b'{"id": "a", "title": "t", "text": "x"}\n{"id": "b", "title": "t"\n')
    queries.write_text("q1\tt\n", encoding="utf-8")
    with pytest.raises(BadInputError, match=r"c\.jsonl line 2"):
        run_search(str(corpus), str(queries), str(out), analyzer="plain")
    write_corpus(corpus, [("a", "t", "x")])
    queries.write_text("q1\tt\nno tab here\n", encoding="utf-8")
    with pytest.raises(BadInputError, match=r"q\.tsv line 2"):
        run_search(str(corpus), str(queries), str(out), analyzer="plain")
    with pytest.raises(ValueError, match="language or an analyzer"):
        run_search(str(corpus), str(queries), str(out))
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["c.jsonl", "q.tsv"]


def test_search_command_writes_the_run_and_reports_bad_input(tmp_path, capsys):
    from clirmatrix.cli import main

    write_corpus(tmp_path / "c.jsonl", [("A1", "Paris", "Paris is the capital of France"), ("A2", "France", "France is a country")])
    (tmp_path / "q.tsv").write_text("q1\tFrance\n", encoding="utf-8")
    args = ["search", "--corpus", str(tmp_path / "c.jsonl"), "--queries", str(tmp_path / "q.tsv"), "--output", str(tmp_path / "run.txt")]
    assert main(args + ["--analyzer", "plain", "--k", "1", "--tag", "t"]) == 0
    assert (tmp_path / "run.txt").read_text().split(" ")[:4] == ["q1", "Q0", "A2", "1"]
    assert main(args) == 2 and "exactly one of --lang" in capsys.readouterr().err
    (tmp_path / "q.tsv").write_text("no tab\n", encoding="utf-8")
    assert main(args + ["--lang", "en"]) == 2 and "q.tsv line 1" in capsys.readouterr().err


# Texts where analysing many at once could go wrong: separators inside a text, final
# sigma and dotted capital I at text ends (lowercasing the joined texts), letters
# beyond the BMP in one text only, immense tokens, stop words, stems, unspaced scripts.
BULK_TEXTS = [
    "", " ", "The running of the Bulls", "ΟΔΥΣΣΕΑΣ", "Σ", "İSTANBUL İ", "line\nbreak", "nul\x00inside\x1fand\ufffe",
    "𠀀𠀁 abc 𝐀𝐁", "a" * 300 + " short", "日本語のテキスト 東京タワー", "Straße Quelle Aepfel Äpfel", "กรุงเทพมหานคร", "한국어 텍스트",
    "Одиссея и другие", "Ünïcödé\u0301 MIXED ca\u0301se", "repeat repeat Repeat", "\n\n",
]  # fmt: skip


@pytest.mark.parametrize("name", an.analyzer_names())
def test_analysing_many_texts_at_once_gives_each_texts_own_tokens(name):
    analyzer = an.analyzer_named(name)
    texts = BULK_TEXTS + [f"{w} {v}" for w, v in zip(BULK_TEXTS[2:], reversed(BULK_TEXTS))]
    raw, separator = analyzer.raw_tokens_many(texts)
    normalized = analyzer.normalize_tokens(raw)
    per_text, current = [], []
    for token, stem in zip(raw, normalized):
        if token == separator:
            per_text.append(current)
            current = []
        elif stem is not None:
            current.append(stem)
    assert per_text == [analyzer(text) for text in texts] and current == []
    assert analyzer.raw_tokens_many([]) == ([], an.SEPARATORS[0])


@pytest.mark.parametrize("name", an.analyzer_names())
def test_an_index_built_in_bulk_holds_each_texts_own_terms_numbered_as_they_first_occur(name, monkeypatch):
    """Indexing analyses a chunk of texts at once, with a cache of raw tokens kept across chunks (and emptied when full)."""
    from clirmatrix.pipeline.engines.embedded import engine as embedded_engine

    monkeypatch.setattr(embedded_engine, "_ANALYZE_DOCS", 7)  # several chunks, so the cache carries tokens over
    monkeypatch.setattr(embedded_engine, "_INDEX_TOKEN_CACHE", 20)  # and is emptied on the way
    analyzer = an.analyzer_named(name)
    texts = BULK_TEXTS + [f"{w} {v}" for w, v in zip(BULK_TEXTS[2:], reversed(BULK_TEXTS))]
    titles = list(reversed(texts))
    engine = EmbeddedEngine(analyzer)
    engine.index([([str(i) for i in range(len(texts))], titles, texts)])
    first_seen = {}
    for start in range(0, len(texts), 7):
        for values in (titles, texts):
            for value in values[start : start + 7]:
                for term in analyzer(value):
                    first_seen.setdefault(term, len(first_seen))
    assert engine.vocab == first_seen and list(engine.vocab) == list(first_seen)
    for field, values in enumerate((titles, texts)):
        docs, tfs = engine.postings.unpack(field)
        indptr = engine.postings.indptr[field]
        held = [{} for _ in values]
        for term, term_id in engine.vocab.items():
            for doc, tf in zip(docs[indptr[term_id] : indptr[term_id + 1]], tfs[indptr[term_id] : indptr[term_id + 1]]):
                held[doc][term] = int(tf)
        assert held == [{t: analyzer(v).count(t) for t in analyzer(v)} for v in values]


def test_a_separator_inside_every_text_falls_back_to_one_pass_a_text():
    texts = ["one" + "".join(an.SEPARATORS) + "two", "three"]
    raw, separator = plain_analyzer().raw_tokens_many(texts)
    assert raw == ["one", "two", separator, "three", separator]


@pytest.mark.parametrize("lang", ["en", "de", "zh", "ru"])
def test_query_arrays_and_flat_hits_equal_the_per_query_path(lang):
    rng = random.Random(5)
    vocabulary = ["Running", "runs", "the", "Straße", "strasse", "東京", "タワー", "Одиссея", "quelle", "Σ", "İ", "apple", "Apples", "𠀀𠀁"]
    docs = [(" ".join(rng.choices(vocabulary, k=rng.randint(0, 3))), " ".join(rng.choices(vocabulary, k=rng.randint(0, 30)))) for _ in range(300)]
    e = engine(docs, analyzer_for(lang))
    queries = [title for title, _ in docs[:100]] + BULK_TEXTS + ["unknown words only", "the the the"]
    q_ptr, q_terms, q_counts = e.query_arrays(queries)
    e.query_arrays(queries)  # the second time from the token cache
    for i, query in enumerate(queries):
        expected = e.query_terms(query)
        assert q_terms[q_ptr[i] : q_ptr[i + 1]].tolist() == list(expected), query
        assert q_counts[q_ptr[i] : q_ptr[i + 1]].tolist() == list(expected.values()), query
    flat = e.search_flat(queries, 20)
    assert flat.lengths.sum() == len(flat.positions) == len(flat.scores) and flat.lengths.dtype == np.int32
    at = 0
    for query, length in zip(queries, flat.lengths):
        alone = e.search([query], 20)[0]
        assert np.array_equal(alone.positions, flat.positions[at : at + length])
        assert np.array_equal(alone.scores.view(np.uint32), flat.scores[at : at + length].view(np.uint32))
        at += length
    assert [h.positions.tolist() for h in e.search(queries, 20, exhaustive=True)] == [h.positions.tolist() for h in flat.split()]
    assert e.search([], 5) == [] and len(e.search_flat([], 5).lengths) == 0


def test_flat_hits_table_is_the_table_of_the_hits_one_by_one():
    from clirmatrix.pipeline.method.retrieval import flat_hits_table, hits_table

    e = engine([("alpha beta", "gamma alpha"), ("beta", "alpha delta"), ("", "gamma"), ("delta", "")])
    queries = ["alpha", "nothing", "gamma beta", "", "delta alpha"]
    for offset in (0, 1_000):
        assert flat_hits_table(70, e.search_flat(queries, 3), offset).equals(hits_table(70, e.search(queries, 3), offset))
    assert flat_hits_table(0, e.search_flat([], 3)).equals(hits_table(0, []))
