"""Stage summaries stored as JSON and read back as their types, a language's entry (and its plan) typed too; older records read as unfinished."""

from __future__ import annotations

import json

import pytest

from clirmatrix.beam_jobs.stages import StageLog
from clirmatrix.pipeline.io import fileio
from clirmatrix.pipeline.io.reports import SUCCESS, IncompleteStageError, finish_stage, require_complete
from clirmatrix.schemas.contracts import (
    DocsLanguage,
    DocsSummary,
    LabelLanguage,
    LabelSummary,
    LanguagePlan,
    LinkReport,
    LinkSummary,
    PropagationLanguage,
    PropagationSummary,
    RetrievalLanguage,
    RetrievalSummary,
    SitelinksSummary,
    StaleSummaryError,
    language_plans,
    read_summary,
)

EN, DE = LanguagePlan("en", 250, 2, 100), LanguagePlan("de", 90, 1, 100)
SITELINKS = SitelinksSummary(
    stage="extract_sitelinks", links="wikidata", source="wikidata-json", languages={"en": 240}, entities_read=500, entities_with_sitelinks=260,
    rejected={}, page_props={}, files=["latest-all.json.bz2"], max_bad_fraction=0.001,
)  # fmt: skip


def _summaries() -> list:
    docs = DocsLanguage(docs=250, records=300, filtered={"redirect": 40}, rejected={"bad_json": 1}, files=["enwiki-1.xml.bz2", "enwiki-2.xml.bz2"])
    small = DocsLanguage(docs=3, records=3, filtered={}, rejected={}, files=["xxwiki.xml.bz2"])
    link = LinkReport(
        lang="en", docs=250, sitelinks=240, linked_wikidata=230, linked_dump=5, unlinked=15, disagreements=2, sitelinks_without_doc=10,
        dump_links_conflicting=0, duplicate_titles=1, page_props=0, page_props_disagreements=0, unit_seconds=1.5, unit_cpu_seconds=1.25,
    )  # fmt: skip
    found = RetrievalLanguage(
        lang="en", docs=250, shards=2, blocks=3, plan=EN, queries=250, queries_without_hits=4, hits=2_400, index_seconds=0.5, search_seconds=1.25, queries_per_second=200.0,
    )  # fmt: skip
    unsearched = RetrievalLanguage(
        lang="de", docs=90, shards=1, blocks=1, plan=DE, queries=90, queries_without_hits=0, hits=800, index_seconds=0.0, search_seconds=0.0, queries_per_second=None,
    )  # fmt: skip
    return [
        DocsSummary(stage="extract_docs", settings={"min_docs": 10}, languages={"en": docs}, dropped={"xx": small}),
        LinkSummary(stage="link_entities", languages={"en": link}, totals={"docs": 250, "unlinked": 15}),
        RetrievalSummary(stage="retrieve", settings={"k": 100}, languages={"de": unsearched, "en": found}, totals={"docs": 340}),
        LabelSummary(stage="label", languages={"de": LabelLanguage("de", 90, {"1": 10, "6": 90}, DE), "en": LabelLanguage("en", 250, {"6": 250}, EN)}),
        PropagationSummary(
            stage="propagate",
            languages={"de": PropagationLanguage("de", 90, {"en": {"queries": 80, "labels": 400}}, DE), "en": PropagationLanguage("en", 250, {"de": {"queries": 70, "labels": 300}}, EN)},
        ),
        SITELINKS,
    ]


@pytest.mark.parametrize("summary", _summaries(), ids=lambda summary: type(summary).__name__)
def test_a_summary_reads_back_as_the_typed_objects_it_was(summary, tmp_path):
    """Written as the stage's _SUCCESS.json and as its _stages record, then read back: equal, every language's entry of its type."""
    finish_stage(str(tmp_path), summary)
    again = require_complete(str(tmp_path), summary.stage)
    assert again == summary and type(again) is type(summary)
    log = StageLog(str(tmp_path))
    log.run(summary.stage, "key", lambda: summary)
    assert log.finished(summary.stage, "key") == summary
    if isinstance(summary, (RetrievalSummary, LabelSummary, PropagationSummary)):
        assert all(isinstance(entry.plan, LanguagePlan) for entry in again.languages.values())
        assert language_plans(again) == [DE, EN]


def test_a_language_entry_is_stored_as_a_mapping_of_its_fields(tmp_path):
    """The JSON holds each entry's fields by name and the plan as its own mapping: what a person reading _SUCCESS.json sees."""
    retrieval = _summaries()[2]
    finish_stage(str(tmp_path), retrieval)
    stored = fileio.read_json(str(tmp_path / SUCCESS))
    assert stored["summary_type"] == "RetrievalSummary" and stored["summary_shape"] == 2
    assert stored["languages"]["en"]["plan"] == {"lang": "en", "docs": 250, "shards": 2, "block_size": 100}
    assert sorted(stored["languages"]["en"]) == sorted(["lang", "docs", "shards", "blocks", "plan", "queries", "queries_without_hits", "hits", "index_seconds", "search_seconds", "queries_per_second"])
    assert read_summary(stored) == retrieval


# Records as the clirmatrix before typed language entries wrote them: typed summaries, their entries mappings, no shape.
_PLAN = {"lang": "en", "docs": 5, "shards": 1, "block_size": 100}
_BEFORE = {
    "extract_docs": {
        "summary_type": "DocsSummary", "stage": "extract_docs", "settings": {}, "dropped": {},
        "languages": {"en": {"docs": 5, "records": 5, "filtered": {}, "rejected": {}, "files": []}},
    },
    "label": {"summary_type": "LabelSummary", "stage": "label", "languages": {"en": {"lang": "en", "queries": 5, "labels": {"6": 5}, "plan": _PLAN}}},
}  # fmt: skip


@pytest.mark.parametrize("stage", sorted(_BEFORE))
def test_a_record_with_mappings_for_entries_reads_as_unfinished(stage, tmp_path):
    """A stage finished before language entries were typed: its _SUCCESS.json is refused (run that stage again), its _stages record reruns it."""
    old = _BEFORE[stage]
    with pytest.raises(StaleSummaryError):
        read_summary(old)
    (tmp_path / SUCCESS).write_text(json.dumps(old))
    with pytest.raises(IncompleteStageError, match="older clirmatrix; run that stage again"):
        require_complete(str(tmp_path), stage)
    (tmp_path / "_stages").mkdir()
    (tmp_path / "_stages" / f"{stage}.json").write_text(json.dumps({"stage": stage, "fingerprint": "f", "summary": old}))
    log = StageLog(str(tmp_path))
    fresh = _summaries()[0] if stage == "extract_docs" else _summaries()[3]
    assert log.run(stage, "f", lambda: fresh) == fresh and log.skipped == []  # the record of mappings: run again
    assert log.run(stage, "f", lambda: pytest.fail("a record of typed entries is up to date")) == fresh and log.skipped == [stage]


def test_a_summary_whose_shape_did_not_change_still_reads():
    """The sitelinks summary holds no language entries: a record from before (no shape) is still up to date."""
    stored = SITELINKS.to_dict()
    del stored["summary_shape"]
    assert read_summary(stored) == SITELINKS


def test_a_report_with_a_list_of_reports_reads_back_typed(tmp_path):
    """A language's docs report holds its units' reports: stored as they were written (their costs kept), read back as ``DocsUnitReport``s."""
    from dataclasses import replace

    from clirmatrix.pipeline.io.reports import read_report, write_report
    from clirmatrix.schemas.contracts import DocsLanguageReport, DocsUnitReport, IndexJoinReport, read_typed_report

    file_report = {"file": "en.json.gz", "lang": "en", "records": 3, "kept": 2, "filtered": {"redirect": 1}, "rejected": {}, "examples": []}
    unit = DocsUnitReport(rank=0, output="docs/en/00000-en.parquet", part={"index": 0, "crc_pieces": [[1, 2, 3]]}, seconds=0.5, report=file_report, unit_seconds=0.6)
    language = DocsLanguageReport(lang="en", docs=2, duplicates=0, dropped=False, units=[unit, replace(unit, rank=1, part=None)], unit_cpu_seconds=0.1)
    write_report(str(tmp_path), "en", language.to_dict())
    again = read_typed_report(read_report(str(tmp_path), "en"))
    assert again == language and all(type(entry) is DocsUnitReport for entry in again.units)
    join = IndexJoinReport(file="d.tar.gz", seconds=0.1, missing_parts=[2])
    assert read_typed_report(join.to_dict()) == join
