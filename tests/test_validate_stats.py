"""``validate``, the release readers and the statistics on small hand-made release trees.

``release()`` gives a tree that keeps every rule (as path -> lines); a test breaks
one rule, ``write()`` puts it on disk with a fresh index (md5s of what was written)
and, for a build, a manifest; the report must name the rule, the file and the line.
"""

import gzip
import hashlib
import json
import shutil

import orjson
import pytest
from conftest import real_fixture

from clirmatrix.pipeline.output.gzip_encoder import ENCODER
from clirmatrix.pipeline.output.jsonl import MalformedRecordError, iter_docs, iter_queries
from clirmatrix.pipeline.output.layout import INDEX, MANIFEST, docs_file, index_key, parse_path, query_file
from clirmatrix.pipeline.output.stats import collect_stats, direction_stats, write_stats
from clirmatrix.pipeline.tools import validate as v

LANGS = ("en", "de", "fr")
NDOCS = 120
QUERIES = {"train": ["1", "2"], "dev": ["3"], "test1": ["4"], "test2": ["5"]}
URL = "http://www.cs.jhu.edu/~shuosun/clirmatrix/data/"


def ordered(pairs):
    """Our builds' order: label descending, then numeric doc id."""
    return sorted(pairs, key=lambda pair: (-pair[1], len(pair[0]), pair[0]))


def labelled(query):
    q = int(query)
    return [(query, 6), (str(q + 10), 4), (str(q + 100), 1)]


def base_results(query):
    pairs = labelled(query)
    taken = {doc for doc, _ in pairs}
    filler = [(str(i), 0) for i in range(1, NDOCS + 1) if str(i) not in taken][: 100 - len(pairs)]
    return ordered(pairs + filler)


def record(query, results):
    return {"src_id": query, "src_query": f"Title {query}", "tgt_results": [list(pair) for pair in results]}


def release():
    """A valid tree: DOCS for 3 languages, BI-139 base+full en/de -> others, MULTI-8 en -> de, fr."""
    files = {docs_file("docs", lang): [f"{i}\t{lang} text {i}." for i in range(1, NDOCS + 1)] for lang in LANGS}
    for src in ("en", "de"):
        for tgt in (lang for lang in LANGS if lang != src):
            for split, ids in QUERIES.items():
                files[query_file("bi139-base", src, tgt, split)] = [record(q, base_results(q)) for q in ids]
                files[query_file("bi139-full", src, tgt, split)] = [record(q, ordered(labelled(q))) for q in ids]
                if src == "en":
                    files[query_file("multi8", src, tgt, split)] = [record(q, base_results(q)) for q in ids]
    return files


def line_bytes(item):
    return item if isinstance(item, bytes) else item.encode() if isinstance(item, str) else json.dumps(item).encode()


def write(root, files, build=True, index=True, size_key="size", encoder=ENCODER):
    """Write the tree as gzip files; the index holds the md5 and size of what was written; a build's manifest records ``encoder`` (unless None)."""
    entries = {}
    for path, lines in files.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        with gzip.GzipFile(target, "wb", mtime=0) as handle:
            handle.write(b"".join(line_bytes(item) + b"\n" for item in lines))
        released = parse_path(path)
        if released is not None:
            context, key = index_key(released.dataset, released.src, released.tgt, released.split)
            data = target.read_bytes()
            entries.setdefault(context, {})[key] = {
                "url": URL + path, "expected_md5": hashlib.md5(data).hexdigest(), "cache_path": path, size_key: len(data),
            }
    if index:
        with gzip.GzipFile(root / INDEX, "wb", mtime=0) as handle:
            handle.write(orjson.dumps(entries))
    if build:
        manifest = {"counts": {"sets": {}}, "files": {path: {"records": len(lines)} for path, lines in files.items()}}
        if encoder is not None:
            manifest["gzip"] = encoder
        (root / MANIFEST).write_bytes(orjson.dumps(manifest))
    return root


def failures(report):
    return {finding.rule for finding in report.failures}


def only(report, rule):
    """The findings of one rule (failures first)."""
    return [f for f in report.failures + report.warnings if f.rule == rule]


BASE = query_file("bi139-base", "en", "de", "train")
FULL = query_file("bi139-full", "en", "de", "train")


@pytest.mark.parametrize("recorded", [None, {**ENCODER, "encoder": "isal", "library": "2.31.0", "package": "1.9.1"}, {**ENCODER, "level": 6}], ids=["unrecorded", "isal", "level"])
def test_a_build_written_by_another_gzip_encoder_is_valid_with_a_warning_naming_it(tmp_path, recorded):
    """The text is what counts for validity; the warning says a rebuild here would not reproduce the md5s."""
    report = v.validate(str(write(tmp_path, release(), encoder=recorded)))
    assert report.ok
    [warning] = report.warnings
    assert (warning.path, warning.rule) == (MANIFEST, v.ENCODER_RULE)
    expected = "isal 2.31.0" if recorded and recorded["encoder"] == "isal" else "level 6" if recorded else "does not record"
    assert expected in warning.message and f"zlib-ng {ENCODER['library']}" in warning.message


# -- a valid tree ------------------------------------------------------------------------------
@pytest.mark.parametrize("build", [True, False], ids=["build", "download"])
def test_compact_lines_and_unsorted_queries_fail_a_build_and_warn_a_download(tmp_path, build):
    files = release()
    files[BASE] = [orjson.dumps(files[BASE][0]), json.dumps(files[BASE][1]).encode()]  # the first line compact
    files[FULL] = list(reversed(files[FULL]))  # src_id 2 before 1
    report = v.validate(str(write(tmp_path, files, build=build)))
    found = {(f.path, f.rule, f.line) for f in (report.failures if build else report.warnings)}
    assert {(BASE, v.LINE_BYTES, 1), (FULL, v.QUERY_ORDER, 2)} <= found
    assert report.ok is not build


@pytest.mark.parametrize("build", [True, False], ids=["build", "download"])
def test_a_valid_tree_passes(tmp_path, build):
    report = v.validate(str(write(tmp_path, release(), build=build)))
    assert report.ok and not report.failures and not report.warnings, [str(f) for f in report.failures + report.warnings]
    assert report.build is build
    assert report.files == 43 and report.docs == 3 * NDOCS
    assert report.queries == (2 * 2 * 2 + 2) * 5  # 8 BI-139 files and 2 MULTI-8 directions, 5 queries each


def test_a_partial_download_without_index_or_docs_passes(tmp_path):
    files = {path: lines for path, lines in release().items() if path.startswith("BI-139/full/en/")}
    report = v.validate(str(write(tmp_path, files, build=False, index=False)))
    assert report.ok and not report.warnings


def test_stats_and_work_folders_are_ignored_unknown_files_are_not(tmp_path):
    write(tmp_path, release())
    for name in ("stats/bi139_base.tsv", ".work/docs/en.parquet", "BI-139/base/en/.en.de.dev.base.jl.gz.tmp-1"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x")
    assert v.validate(str(tmp_path)).ok
    (tmp_path / "BI-139/base/en/notes.txt").write_text("x")
    report = v.validate(str(tmp_path))
    assert failures(report) == {v.LAYOUT} and report.failures[0].path == "BI-139/base/en/notes.txt"


def test_same_language_file_is_a_failure(tmp_path):
    files = release()
    files[query_file("bi139-full", "en", "en", "dev")] = files[query_file("bi139-full", "en", "de", "dev")]
    report = v.validate(str(write(tmp_path, files)))
    assert v.SAME_LANGUAGE in failures(report)
    assert only(report, v.SAME_LANGUAGE)[0].path == "BI-139/full/en/en.en.dev.jl.gz"


# -- one rule broken at a time: the finding names the file and the line -----------------------
def set_line(files, path, number, value):
    files[path] = list(files[path])
    files[path][number - 1] = value


def results_of(files, path, number):
    return [tuple(pair) for pair in files[path][number - 1]["tgt_results"]]


def with_results(files, path, number, results):
    old = files[path][number - 1]
    set_line(files, path, number, {**old, "tgt_results": [list(pair) for pair in results]})


def swap_last_two(files, path, number):
    """Two label-0 fillers out of doc id order: only our builds' order is broken."""
    results = results_of(files, path, number)
    with_results(files, path, number, results[:-2] + results[-2:][::-1])


BREAKS = {
    "not-json": (BASE, 2, lambda files: set_line(files, BASE, 2, b'{"src_id": "2", '), v.MALFORMED),
    "int-id": (BASE, 1, lambda files: set_line(files, BASE, 1, {**files[BASE][0], "src_id": 1}), v.MALFORMED),
    "string-label": (FULL, 1, lambda files: with_results(files, FULL, 1, [("1", "6")]), v.MALFORMED),
    "bool-label": (FULL, 1, lambda files: with_results(files, FULL, 1, [("1", True)]), v.MALFORMED),
    "int-doc-id": (FULL, 2, lambda files: with_results(files, FULL, 2, [(2, 6)]), v.MALFORMED),
    "missing-key": (FULL, 1, lambda files: set_line(files, FULL, 1, {"src_id": "1", "tgt_results": []}), v.MALFORMED),
    "label-7": (BASE, 1, lambda files: with_results(files, BASE, 1, [("1", 7)] + results_of(files, BASE, 1)[1:]), v.LABEL_RANGE),
    "label-0-in-full": (FULL, 1, lambda files: with_results(files, FULL, 1, results_of(files, FULL, 1) + [("99", 0)]), v.LABEL_RANGE),
    "duplicate-result": (FULL, 1, lambda files: with_results(files, FULL, 1, results_of(files, FULL, 1) + [("1", 1)]), v.DUPLICATE_RESULT),
    "label-order": (FULL, 2, lambda files: with_results(files, FULL, 2, results_of(files, FULL, 2)[::-1]), v.LABEL_ORDER),
    "id-order": (BASE, 1, lambda files: swap_last_two(files, BASE, 1), v.ID_ORDER),
    "two-label-6": (FULL, 1, lambda files: with_results(files, FULL, 1, [("1", 6), ("50", 6)]), v.LABEL_6),
    "99-candidates": (BASE, 2, lambda files: with_results(files, BASE, 2, results_of(files, BASE, 2)[:99]), v.CANDIDATES),
    "no-relevant": (
        query_file("multi8", "en", "fr", "dev"), 1,
        lambda files: with_results(files, query_file("multi8", "en", "fr", "dev"), 1, [(str(i), 0) for i in range(1, 101)]),
        v.NO_RELEVANT,
    ),
    "duplicate-query": (FULL, 2, lambda files: set_line(files, FULL, 2, files[FULL][0]), v.DUPLICATE_QUERY),
}


@pytest.mark.parametrize("name", list(BREAKS))
def test_each_broken_record_rule_is_caught_with_file_and_line(tmp_path, name):
    path, line, breaking, rule = BREAKS[name]
    files = release()
    breaking(files)
    report = v.validate(str(write(tmp_path, files)))
    assert not report.ok
    found = [f for f in report.failures if f.rule == rule]
    assert found, [str(f) for f in report.failures]
    assert (found[0].path, found[0].line) == (path, line)
    assert f"{path}:{line}: [{rule}]" in str(found[0])


def test_a_malformed_line_does_not_stop_the_file(tmp_path):
    files = release()
    set_line(files, BASE, 1, b"not json")
    files[BASE].append(b"")  # a blank line is fine
    files[BASE].append({**files[BASE][1], "src_id": "2", "tgt_results": [["1", 9]]})
    report = v.validate(str(write(tmp_path, files)))
    assert (v.MALFORMED, 1) in {(f.rule, f.line) for f in report.failures}
    assert (v.DUPLICATE_QUERY, 4) in {(f.rule, f.line) for f in report.failures}


def test_id_order_is_only_our_builds_rule(tmp_path):
    files = release()
    swap_last_two(files, BASE, 1)
    assert v.validate(str(write(tmp_path, files, build=False))).ok
    assert failures(v.validate(str(write(tmp_path, files)))) == {v.ID_ORDER}


def test_a_small_target_language_may_have_fewer_candidates(tmp_path):
    files = release()
    files[docs_file("docs", "de")] = files[docs_file("docs", "de")][:60]
    for path in list(files):
        released = parse_path(path)
        if released and released.tgt == "de":
            files[path] = [record(r["src_id"], [tuple(p) for p in r["tgt_results"] if int(p[0]) <= 60]) for r in files[path]]
    assert v.validate(str(write(tmp_path, files))).ok
    with_results(files, BASE, 1, results_of(files, BASE, 1)[:-1])
    report = v.validate(str(write(tmp_path, files)))
    assert failures(report) == {v.CANDIDATES} and "DOCS/de.tsv.gz has 60 documents" in report.failures[0].message


def test_split_sizes(tmp_path):
    report = v.validate(str(write(tmp_path, release())), train_size=1)
    assert failures(report) == {v.SPLIT_SIZE}
    assert {f.path for f in report.failures} == {
        query_file(dataset, src, tgt, "train")
        for dataset, src, tgt in [("bi139-base", "en", "de"), ("bi139-base", "en", "fr"), ("bi139-base", "de", "en"),
                                  ("bi139-base", "de", "fr"), ("multi8", "en", "de"), ("multi8", "en", "fr")]
    }


# -- rules across files --------------------------------------------------------------------------
def move_query(files, query, src, tgt, from_split, to_split, datasets=("bi139-base", "bi139-full")):
    for dataset in datasets:
        source, target = query_file(dataset, src, tgt, from_split), query_file(dataset, src, tgt, to_split)
        moving = [r for r in files[source] if r["src_id"] == query]
        files[source] = [r for r in files[source] if r["src_id"] != query]
        files[target] = files[target] + moving


def test_a_test_query_in_another_directions_train_is_leakage(tmp_path):
    files = release()
    move_query(files, "4", "en", "fr", "test1", "train")
    for build in (True, False):  # the paper's own promise: a failure for the release too
        report = v.validate(str(write(tmp_path / str(build), files, build=build)))
        leak = [f for f in report.failures if f.rule == v.LEAKAGE and "across BI-139" in f.message]
        assert leak, [str(f) for f in report.failures]
        assert leak[0].path == query_file("bi139-base", "en", "de", "test1")
        assert "(train, test1)" in leak[0].message and query_file("bi139-base", "en", "fr", "train") in leak[0].message


def test_dev_in_another_directions_train_fails_builds_and_warns_downloads(tmp_path):
    files = release()
    move_query(files, "3", "en", "fr", "dev", "train")
    build = v.validate(str(write(tmp_path / "build", files)))
    assert failures(build) == {v.LEAKAGE}
    download = v.validate(str(write(tmp_path / "download", files, build=False)))
    assert download.ok and v.LEAKAGE in {f.rule for f in download.warnings}


def test_one_query_in_two_splits_of_a_direction(tmp_path):
    files = release()
    for dataset in ("bi139-base", "bi139-full"):
        files[query_file(dataset, "de", "fr", "test2")] += [r for r in files[query_file(dataset, "de", "fr", "train")] if r["src_id"] == "1"]
    report = v.validate(str(write(tmp_path, files, build=False)))
    overlap = only(report, v.SPLIT_OVERLAP)
    assert overlap and overlap[0].path == query_file("bi139-base", "de", "fr", "test2")
    assert query_file("bi139-base", "de", "fr", "train") in overlap[0].message


def test_multi8_query_lists_must_align_across_targets(tmp_path):
    files = release()
    path = query_file("multi8", "en", "fr", "train")
    files[path] = files[path][::-1]
    report = v.validate(str(write(tmp_path, files)))
    assert failures(report) == {v.ALIGNMENT}
    assert report.failures[0].path == path and query_file("multi8", "en", "de", "train") in report.failures[0].message


@pytest.mark.parametrize("change", ["query-not-in-full", "label-differs", "full-has-more"])
def test_base_is_full_plus_filler(tmp_path, change):
    files = release()
    if change == "query-not-in-full":
        files[FULL] = files[FULL][:1]
    elif change == "label-differs":
        with_results(files, FULL, 1, [("1", 6), ("11", 5), ("101", 1)])
    else:
        with_results(files, FULL, 2, results_of(files, FULL, 2) + [("119", 1)])
    report = v.validate(str(write(tmp_path, files)))
    assert failures(report) == {v.BASE_FULL}
    assert report.failures[0].path == BASE


# -- documents and the index ----------------------------------------------------------------------
@pytest.mark.parametrize(
    "line, rule",
    [("7\ttext with\ta tab", v.MALFORMED), ("7", v.MALFORMED), ("6\tagain", v.DUPLICATE_DOC), ("7\tcarriage\rreturn", v.DOC_TEXT)],
    ids=["tab-in-text", "no-tab", "duplicate-id", "carriage-return"],
)
def test_docs_rules(tmp_path, line, rule):
    files = release()
    set_line(files, "DOCS/fr.tsv.gz", 7, line)
    report = v.validate(str(write(tmp_path, files)))
    assert rule in failures(report)
    assert ("DOCS/fr.tsv.gz", 7) in {(f.path, f.line) for f in only(report, rule)}


def test_judged_docs_missing_from_docs_fail_builds_and_warn_downloads(tmp_path):
    files = release()
    files["DOCS/de.tsv.gz"] = [line for line in files["DOCS/de.tsv.gz"] if not line.startswith("101\t")]
    build = v.validate(str(write(tmp_path / "build", files)))
    assert failures(build) == {v.MISSING_DOC}
    assert (FULL, 1) in {(f.path, f.line) for f in build.failures}
    download = v.validate(str(write(tmp_path / "download", files, build=False)))
    assert download.ok and {f.rule for f in download.warnings} == {v.MISSING_DOC}


def test_index_checksum_and_size(tmp_path):
    write(tmp_path, release())
    (tmp_path / FULL).write_bytes(gzip.compress(b'{"src_id": "1", "src_query": "T", "tgt_results": [["1", 6]]}\n', mtime=0))
    report = v.validate(str(tmp_path))
    assert {v.CHECKSUM, v.SIZE} <= failures(report)
    assert {f.path for f in report.failures if f.rule in (v.CHECKSUM, v.SIZE)} == {FULL}


@pytest.mark.parametrize("build", [True, False], ids=["build", "download"])
def test_a_file_missing_from_the_index(tmp_path, build):
    write(tmp_path, release(), build=build)
    extra = {query_file("bi139-full", "fr", "en", "dev"): [record("3", ordered(labelled("3")))]}
    write(tmp_path / "extra", extra, index=False, build=False)
    shutil.move(tmp_path / "extra" / "BI-139" / "full" / "fr", tmp_path / "BI-139" / "full" / "fr")
    shutil.rmtree(tmp_path / "extra")
    report = v.validate(str(tmp_path))
    assert report.ok is not build
    assert [f.path for f in only(report, v.NOT_INDEXED)] == [query_file("bi139-full", "fr", "en", "dev")]


def test_an_index_with_verified_size_is_read(tmp_path):
    write(tmp_path, release(), size_key="verified_size")
    assert v.validate(str(tmp_path)).ok
    (tmp_path / INDEX).write_bytes(gzip.compress(gzip.decompress((tmp_path / INDEX).read_bytes()).replace(b'"verified_size":', b'"verified_size":1', 1)))
    report = v.validate(str(tmp_path))
    assert failures(report) == {v.SIZE}


def test_the_real_index_shape(tmp_path):
    """The fixture has the real url/md5/size values (``verified_size``) and ``_README``-style notes."""
    shutil.copy(real_fixture("clirmatrix", "clirmatrix_downloads_index_partial.json.gz"), tmp_path / INDEX)
    assert v.validate(str(tmp_path)).ok
    files = {query_file("multi8", "ar", "de", "dev"): [record("1", base_results("1"))]}
    write(tmp_path, files, build=False, index=False)
    report = v.validate(str(tmp_path))
    assert failures(report) == {v.CHECKSUM, v.SIZE}
    assert "469,589" in only(report, v.SIZE)[0].message  # the real file's size, from "verified_size"


def test_manifest_must_parse_and_list_counts(tmp_path):
    write(tmp_path, release())
    (tmp_path / MANIFEST).write_text("{not json")
    assert failures(v.validate(str(tmp_path))) == {v.MANIFEST_RULE}
    (tmp_path / MANIFEST).write_text('{"counts": {"sets": {}}, "files": {"%s": {"records": 3}}}' % FULL)
    report = v.validate(str(tmp_path))
    assert failures(report) == {v.MANIFEST_RULE} and "the file holds 2" in report.failures[0].message


def test_findings_are_capped_per_file_and_rule(tmp_path):
    files = release()
    files[FULL] = [record(str(i), [("1", 6), ("2", 6)]) for i in range(30)]
    files[BASE] = []
    report = v.validate(str(write(tmp_path, files)))
    sixes = only(report, v.LABEL_6)
    assert len(sixes) == v.MAX_EXAMPLES + 1 and "20 more" in sixes[-1].message


def test_print_report_renders(tmp_path):
    from rich.console import Console

    files = release()
    set_line(files, BASE, 1, b"oops")
    console = Console(record=True, width=200)
    report = v.validate(str(write(tmp_path, files)))
    v.print_report(report, console)
    text = console.export_text()
    assert "invalid" in text and BASE in text and "malformed" in text
    assert orjson.loads(orjson.dumps(report.to_dict()))["failures"][0] == {"path": BASE, "line": 1, "rule": v.MALFORMED, "message": report.failures[0].message}


# -- readers -------------------------------------------------------------------------------------
def test_readers_skip_blank_lines_and_name_the_bad_line(tmp_path):
    files = {FULL: [record("1", [("5", 6)]), "", record("2", [("7", 3), ("8", 1)]), ""], "DOCS/en.tsv.gz": ["1\tOne.", "", "2\tTwo."]}
    write(tmp_path, files, build=False, index=False)
    assert [(r.src_id, r.tgt_results) for r in iter_queries(tmp_path / FULL)] == [("1", [("5", 6)]), ("2", [("7", 3), ("8", 1)])]
    assert list(iter_docs(tmp_path / "DOCS/en.tsv.gz")) == [("1", "One."), ("2", "Two.")]
    files[FULL].append(b'{"src_id": "3", "src_query": "x", "tgt_results": [["9", 2.0]]}')
    write(tmp_path, files, build=False, index=False)
    with pytest.raises(MalformedRecordError) as caught:
        list(iter_queries(tmp_path / FULL))
    assert caught.value.line == 5 and f"{tmp_path / FULL}:5:" in str(caught.value)
    assert isinstance(caught.value, ValueError)


def test_a_truncated_gzip_names_the_file(tmp_path):
    write(tmp_path, {FULL: [record(str(i), [("5", 6)]) for i in range(2000)]}, build=False, index=False)
    data = (tmp_path / FULL).read_bytes()
    (tmp_path / FULL).write_bytes(data[: len(data) // 2])
    with pytest.raises(MalformedRecordError, match="damaged gzip stream"):
        list(iter_queries(tmp_path / FULL))
    assert failures(v.validate(str(tmp_path))) == {v.MALFORMED}


# -- statistics ----------------------------------------------------------------------------------
def test_direction_stats_by_hand(tmp_path):
    files = {
        BASE: [
            record("1", [("1", 6), ("2", 5), ("3", 4), ("4", 3), ("5", 0)]),  # >=4: 3, >=1: 4
            "",
            record("2", [("1", 4), ("2", 1), ("3", 1), ("4", 0)]),  # >=4: 1, >=1: 3
            record("3", [("9", 2)]),  # >=4: 0, >=1: 1
        ]
    }
    write(tmp_path, files, build=False, index=False)
    stats = direction_stats(str(tmp_path / BASE))
    assert (stats.dataset, stats.src, stats.tgt, stats.split) == ("bi139-base", "en", "de", "train")
    assert (stats.queries, stats.docs_ge4, stats.docs_ge1) == (3, 4, 8)
    assert stats.mean_ge4 == pytest.approx(4 / 3) and stats.mean_ge1 == pytest.approx(8 / 3)


def test_stats_files_are_written_and_byte_identical_on_rerun(tmp_path):
    root = write(tmp_path / "tree", release())
    rows = collect_stats(str(root))
    assert len(rows) == 40
    first = write_stats(str(root), rows)
    contents = {path: open(path, "rb").read() for path in first}
    second = write_stats(str(root), list(reversed(rows)))
    assert second == first and {path: open(path, "rb").read() for path in second} == contents
    names = sorted(path.rsplit("/", 1)[1] for path in first)
    assert names == sorted(
        f"{name}{suffix}" for name in ("bi139_base", "bi139_full", "multi8")
        for suffix in (".tsv", "_queries.png", "_mean_ge4.png", "_mean_ge1.png")
    )
    assert all(contents[path].startswith(b"\x89PNG") and b"Software" not in contents[path] for path in first if path.endswith(".png"))
    full = contents[str(root / "stats" / "bi139_full.tsv")].decode().splitlines()
    assert full[0] == "src\ttgt\tsplit\tqueries\tdocs_ge4\tdocs_ge1\tmean_ge4\tmean_ge1"
    # en -> de pooled: 5 queries, each with labels 6, 4, 1.
    assert "en\tde\tall\t5\t10\t15\t2.000\t3.000" in full
    assert "en\tde\ttrain\t2\t4\t6\t2.000\t3.000" in full
    assert v.validate(str(root)).ok  # stats/ is no unknown file


def test_a_folder_that_is_not_a_build_or_download_is_one_error_not_a_finding_per_file(tmp_path, capsys):
    from clirmatrix.cli import main

    for i in range(30):
        (tmp_path / f"notes-{i}.txt").write_text("x")
    assert main(["validate", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "is not a clirmatrix build or download" in err[0]


def test_stray_files_in_a_release_are_listed_up_to_ten_then_counted(tmp_path):
    write(tmp_path, release())
    for i in range(25):
        (tmp_path / "DOCS" / f"notes-{i}.txt").write_text("x")
    layout_findings = only(v.validate(str(tmp_path)), v.LAYOUT)
    assert len(layout_findings) == v.MAX_EXAMPLES + 1 and "15 more files" in layout_findings[-1].message


def test_two_worker_processes_report_what_one_process_does(tmp_path):
    """validate's units spread over processes: the same findings, in the same order, as read in this process."""
    files = release()
    move_query(files, "4", "en", "fr", "test1", "train")  # leakage across directions: a rule over the units' ids
    files[FULL] = list(reversed(files[FULL]))  # query order
    files[BASE][0]["tgt_results"][0][1] = 9  # a label out of range
    tree = write(tmp_path, files)
    (tmp_path / docs_file("docs", "fr")).write_bytes(gzip.compress(b"1\tx\n1\ty\n"))  # a repeated doc id; the index md5 no longer matches
    alone, spread = v.validate(str(tree), workers=1), v.validate(str(tree), workers=2)
    assert not alone.ok and {v.LEAKAGE, v.QUERY_ORDER, v.LABEL_RANGE, v.DUPLICATE_DOC, v.CHECKSUM} <= {f.rule for f in alone.failures}
    assert (spread.failures, spread.warnings, spread.queries, spread.docs) == (alone.failures, alone.warnings, alone.queries, alone.docs)
