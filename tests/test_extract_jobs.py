"""The Beam jobs end to end on generated dumps, checked against what the generator wrote."""

from __future__ import annotations

import bz2
from dataclasses import replace
from pathlib import Path

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import SAMPLE_LANGS

from clirmatrix.beam_jobs.extract_docs import DocsSettings, ExtractDocs
from clirmatrix.beam_jobs.link_entities import LinkEntities
from clirmatrix.cli import main
from clirmatrix.pipeline.io import fileio
from clirmatrix.pipeline.io.badinput import TooManyBadRecords
from clirmatrix.pipeline.io.parquet_io import ParquetSink
from clirmatrix.pipeline.io.reports import SUCCESS, IncompleteStageError, write_report
from clirmatrix.pipeline.method.dumps import discover
from clirmatrix.pipeline.method.languages import UNSPACED_LANGUAGES, is_unspaced
from clirmatrix.pipeline.method.truncate import rule_for, truncate
from clirmatrix.schemas import SITELINKS


def docs_of(work: Path, lang: str):
    return pq.read_table(sorted((work / "docs" / lang).glob("*.parquet"))).to_pylist()


def test_discovery_finds_every_layout(sample):
    dumps, _ = sample
    found = discover(str(dumps))
    assert sorted(found.docs) == sorted(SAMPLE_LANGS)
    assert {lang: files[0].kind for lang, files in found.docs.items()}["fr"] == "xml"
    assert len(found.docs["ar"]) == 2  # the Hive layout's two parts
    assert [Path(p).name for p in found.wikidata] == ["latest-all.json.gz"]


def test_every_article_is_extracted_once_with_its_page_id(extracted):
    work, result, world = extracted
    for lang in SAMPLE_LANGS:
        rows = docs_of(work, lang)
        expected = {e.doc_ids[lang]: e.titles[lang] for e in world.entities if lang in e.langs}
        assert {r["doc_id"]: r["title"] for r in rows} == expected, lang
        assert len(rows) == len(expected) == result.docs.languages[lang].docs


def test_filters_duplicates_and_bad_records_are_counted(extracted):
    _, result, world = extracted
    for lang in SAMPLE_LANGS:
        entry = result.docs.languages[lang]
        assert entry.rejected == {world.bad_records[lang]: 1}, lang  # the one broken record the generator put in each dump
        assert entry.filtered["other_namespace"] > 0
        if lang != "fr":
            assert entry.filtered["duplicate_id"] == 1
    assert result.docs.languages["ar"].filtered["redirect"] > 0
    assert result.docs.languages["fr"].filtered["redirect"] > 0


def test_text_is_truncated_and_the_full_text_kept(extracted):
    work, _, _ = extracted
    for lang in SAMPLE_LANGS:
        rows = docs_of(work, lang)
        rule = rule_for(is_unspaced(lang))
        for row in rows:
            assert row["text"] and row["text"] == truncate(row["text_full"], rule)  # the job's batches follow the definition
            if lang in UNSPACED_LANGUAGES:
                assert len(row["text"]) <= 600
            else:
                assert len(row["text"].split()) <= 200
        assert any(len(r["text"]) < len(r["text_full"]) for r in rows), lang


def test_xml_text_has_no_markup(extracted):
    work, _, _ = extracted
    for row in docs_of(work, "fr"):
        for markup in ("{{", "[[", "<ref", "Catégorie:", "Fichier:", "'''", "{|"):
            assert markup not in row["text_full"]


def test_entity_links_match_wikidata_and_fall_back_to_the_dump(extracted):
    work, result, world = extracted
    for lang in SAMPLE_LANGS:
        rows = pq.read_table(work / "entity_docs" / f"{lang}.parquet").to_pylist()
        expected = {e.qid: e.doc_ids[lang] for e in world.entities if lang in e.langs}
        assert {r["entity"]: r["doc_id"] for r in rows} == expected, lang
        by_source = {r["entity"]: r["source"] for r in rows}
        for qid, missing_lang in world.missing_sitelinks:
            if missing_lang == lang:
                assert by_source[qid] == ("dump" if lang != "fr" else None), (qid, lang)
    stats = result.entity_docs.languages
    assert stats["en"].linked_dump == sum(1 for _, lang in world.missing_sitelinks if lang == "en") > 0
    wrong = sum(1 for qid, lang in world.wrong_items if lang == "en" and (qid, lang) not in world.missing_sitelinks)
    assert stats["en"].disagreements == wrong > 0


def test_sister_project_sitelinks_are_not_taken(extracted):
    work, _, _ = extracted
    titles = pq.read_table(sorted((work / "sitelinks" / "en").glob("*.parquet"))).column("title").to_pylist()
    assert titles and not any(t.endswith(" quotes") or t.startswith("Category:") for t in titles)


def test_outputs_are_complete_and_nothing_temporary_is_left(extracted):
    work, _, _ = extracted
    for stage in ("docs", "sitelinks", "entity_docs"):
        assert (work / stage / SUCCESS).exists()
    assert not [p for p in work.rglob("*") if ".tmp-" in p.name]


def test_two_worker_processes_write_the_same_bytes(sample, extracted, tmp_path):
    """Runner-independent and deterministic: subprocess workers give identical files."""
    dumps, _ = sample
    work, _, _ = extracted
    found = discover(str(dumps), ["en", "ar"])
    ExtractDocs(str(tmp_path), found.docs, DocsSettings(min_docs=100, max_bad_fraction=0.01)).run(workers=2)
    for lang in ("en", "ar"):
        ours = sorted((tmp_path / "docs" / lang).glob("*.parquet"))
        theirs = sorted((work / "docs" / lang).glob("*.parquet"))
        assert [p.name for p in ours] == [p.name for p in theirs]
        assert [p.read_bytes() for p in ours] == [p.read_bytes() for p in theirs]


def test_sink_keeps_row_order_across_row_groups_and_leaves_nothing_on_a_bad_row(tmp_path):
    rows = [(f"Q{i}", "en", f"Title {i}") for i in range(7)]
    with ParquetSink(str(tmp_path / "a.parquet"), SITELINKS, rows_per_group=3) as sink:
        for row in rows:
            sink.add(row)
    written = pq.ParquetFile(tmp_path / "a.parquet")
    assert written.num_row_groups == 3 and [tuple(r.values()) for r in written.read().to_pylist()] == rows
    with pytest.raises(ValueError), ParquetSink(str(tmp_path / "b.parquet"), SITELINKS) as sink:
        sink.add(("Q1", "en", "Title", "extra"))  # wrong length: refused at once
    with pytest.raises(TypeError), ParquetSink(str(tmp_path / "c.parquet"), SITELINKS) as sink:
        sink.add(("Q1", "en", 5))  # wrong type: found when the last rows are written on close
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.parquet"]  # nothing half-written is left


def test_sink_computes_a_derived_column_per_batch(tmp_path):
    """The docs job's ``text`` is computed from each batch's other columns, in schema order."""
    derived_title = {"title": lambda columns: pa.array([f"{lang.as_py()}:{entity.as_py()}" for lang, entity in zip(columns["lang"], columns["entity"])])}
    with ParquetSink(str(tmp_path / "d.parquet"), SITELINKS, rows_per_group=2, derived=derived_title) as sink:
        for i in range(3):
            sink.add((f"Q{i}", "en"))  # title left out: it is derived
    assert pq.read_table(tmp_path / "d.parquet").to_pylist() == [{"entity": f"Q{i}", "lang": "en", "title": f"en:Q{i}"} for i in range(3)]
    with pytest.raises(ValueError, match="not in the schema"):
        ParquetSink(str(tmp_path / "e.parquet"), SITELINKS, derived={"nope": derived_title["title"]})


def test_small_languages_are_dropped_with_a_message(sample, tmp_path, caplog):
    dumps, world = sample
    found = discover(str(dumps), ["en", "ja"])
    sizes = {lang: sum(1 for e in world.entities if lang in e.langs) for lang in ("en", "ja")}
    threshold = (sizes["en"] + sizes["ja"]) // 2
    summary = ExtractDocs(str(tmp_path), found.docs, DocsSettings(min_docs=threshold, max_bad_fraction=0.01)).run(workers=1)
    small = min(sizes, key=sizes.get)
    assert small in summary.dropped and small not in summary.languages
    assert not (tmp_path / "docs" / small).exists()
    assert f"{small} dropped" in caplog.text


def test_duplicates_across_part_files_keep_the_first(tmp_path):
    part_dir = tmp_path / "dumps" / "index_name=svwiki_content"
    part_dir.mkdir(parents=True)

    def part(ids, title_prefix):
        lines = []
        for i in ids:
            lines += [orjson.dumps({"index": {"_id": str(i)}}), orjson.dumps({"namespace": 0, "title": f"{title_prefix}{i}", "text": "Text."})]
        return bz2.compress(b"\n".join(lines) + b"\n")

    (part_dir / "svwiki_content-20240301-00000.json.bz2").write_bytes(part(range(0, 60), "first"))
    (part_dir / "svwiki_content-20240301-00001.json.bz2").write_bytes(part(range(50, 100), "second"))
    found = discover(str(tmp_path / "dumps"))
    summary = ExtractDocs(str(tmp_path), found.docs, DocsSettings(min_docs=1)).run(workers=1)
    rows = docs_of(tmp_path, "sv")
    assert sorted(int(r["doc_id"]) for r in rows) == list(range(100))
    assert {r["title"] for r in rows if 50 <= int(r["doc_id"]) < 60} == {f"first{i}" for i in range(50, 60)}
    assert summary.languages["sv"].filtered["duplicate_id"] == 10


def test_too_much_bad_input_fails_without_marking_the_stage_done(sample, tmp_path):
    dumps, _ = sample
    found = discover(str(dumps), ["de"])
    with pytest.raises(TooManyBadRecords, match=r"(?s)de: 1 of .*dewiki-20240301-cirrussearch-content.json.gz line \d+: document_without_action"):
        ExtractDocs(str(tmp_path), found.docs, DocsSettings(min_docs=1)).run(workers=1)
    assert not (tmp_path / "docs" / SUCCESS).exists()


def test_linking_refuses_an_unfinished_stage(tmp_path):
    (tmp_path / "docs").mkdir()
    with pytest.raises(IncompleteStageError, match="no finished docs"):
        LinkEntities(str(tmp_path)).run()


def test_a_summary_from_before_typed_summaries_reads_as_unfinished(tmp_path):
    """An older clirmatrix's _SUCCESS.json (no summary type) is refused with a clear message; its _stages record reruns the stage."""
    import json

    from clirmatrix.beam_jobs.stages import StageLog
    from clirmatrix.schemas.contracts import StatsSummary

    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / SUCCESS).write_text(json.dumps({"stage": "docs", "languages": {}, "dropped": {}}))
    with pytest.raises(IncompleteStageError, match="older clirmatrix; run that stage again"):
        LinkEntities(str(tmp_path)).run()
    log = StageLog(str(tmp_path))
    (tmp_path / "_stages").mkdir()
    (tmp_path / "_stages" / "stats.json").write_text(json.dumps({"stage": "stats", "fingerprint": "f", "summary": {"stage": "stats", "files": 1, "written": []}}))
    fresh = StatsSummary(stage="stats", files=2, written=["a.tsv"])
    assert log.run("stats", "f", lambda: fresh) == fresh and log.skipped == []  # the untyped record: run again
    assert log.run("stats", "f", lambda: pytest.fail("a typed record is up to date")) == fresh and log.skipped == ["stats"]


def test_cli_reports_bad_input_as_a_message_and_exit_code(sample, tmp_path, capsys):
    dumps, _ = sample
    code = main(["extract", "--dumps", str(dumps), "--out", str(tmp_path / "work"), "--langs", "zh", "--min-docs", "1"])
    err = capsys.readouterr().err
    assert code == 2
    assert "too much bad input" in err and "action_without_document" in err and "Traceback" not in err


def test_cli_extract_runs_and_summarises(sample, tmp_path, capsys):
    dumps, _ = sample
    code = main(["extract", "--dumps", str(dumps), "--out", str(tmp_path / "work"), "--langs", "en,ja", "--min-docs", "10", "--max-bad-fraction", "0.01", "--workers", "1"])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "extraction" in err and "done" in err
    assert (tmp_path / "work" / "entity_docs" / "ja.parquet").exists()


def test_cli_missing_dumps_is_a_clear_error(tmp_path, capsys):
    code = main(["extract", "--dumps", str(tmp_path), "--out", str(tmp_path / "w")])
    assert code == 2 and "no Wikipedia dumps found" in capsys.readouterr().err


def test_a_docs_unit_through_the_library_writes_the_stages_rows(sample, extracted, tmp_path):
    """``extraction.docs``, no Beam: fr's XML dump (one bz2 block: one range) read straight into its Parquet, the language finalised: the stage's rows and summary."""
    from clirmatrix.pipeline.extraction import docs
    from clirmatrix.schemas.contracts import FinalizeTask

    dumps, _ = sample
    work, result, _ = extracted
    found = discover(str(dumps), ["fr"])
    units = docs.plan_units(found.docs, 3_000)
    assert [unit.name for unit in units] == ["fr.00000-frwiki-20240301-pages-articles"]
    settings = DocsSettings(min_docs=100, max_bad_fraction=0.01)  # as the fixture's
    for unit in units:
        report = docs.extract_unit(str(tmp_path), unit, settings)
        assert report.rank == unit.rank and report.output == docs.output_path(str(tmp_path), unit) and report.part["index"] == unit.part.index
        write_report(str(tmp_path), unit.name, report.to_dict())
    language = docs.finalize_language(str(tmp_path), FinalizeTask("fr", tuple(unit.name for unit in units)), settings.min_docs)
    assert [unit.rank for unit in language.units] == list(range(len(units)))
    assert language.docs == result.docs.languages["fr"].docs and not language.dropped
    assert pq.read_table(sorted((tmp_path / "fr").glob("*.parquet"))).equals(pq.read_table(sorted((work / "docs" / "fr").glob("*.parquet"))))
    summary = docs.summarise(str(tmp_path), [language], settings, "extract_docs")
    assert summary.languages["fr"] == replace(result.docs.languages["fr"], files=[fileio.basename(unit.dump.path)] * len(units))


def test_a_links_unit_through_the_library_writes_the_stages_rows(sample, extracted, tmp_path):
    """``extraction.links``, no Beam: the Wikidata dump read for en alone gives the stage's en sitelinks."""
    from clirmatrix.pipeline.extraction import links
    from clirmatrix.pipeline.method.dumps import WIKIDATA_JSON, LinkInputs

    dumps, _ = sample
    work, _, _ = extracted
    (unit,) = links.link_units(LinkInputs.wikidata_wide(WIKIDATA_JSON, discover(str(dumps)).wikidata), ["en"])
    report = links.extract_links(str(tmp_path), unit, prefilter=True)
    assert report.links == {"en": pq.read_metadata(work / "sitelinks" / "en" / f"{unit.name}.parquet").num_rows} and report.part is None
    assert pq.read_table(tmp_path / "en" / f"{unit.name}.parquet").equals(pq.read_table(work / "sitelinks" / "en" / f"{unit.name}.parquet"))
