"""The inputs Wikimedia publishes today: Enterprise HTML dumps, multistream XML, and links without the Wikidata JSON dump."""

from __future__ import annotations

import gzip
import json
import shutil
from dataclasses import replace

import pyarrow.parquet as pq
import pytest

from clirmatrix.pipeline.io.badinput import FileReport
from clirmatrix.pipeline.method import dumps
from clirmatrix.pipeline.tools.sample import FRESH, FRESH_DATE, write_sample_dumps

LANGS = ("en", "de", "fr", "zh")


@pytest.fixture(scope="module")
def fresh(tmp_path_factory):
    """Today's inputs for 4 languages: HTML for en, de, zh; multistream XML and page_props for fr; wb_items_per_site."""
    root = tmp_path_factory.mktemp("fresh") / "dumps"
    world = write_sample_dumps(root, docs_per_lang=250, langs=LANGS, seed=3, inputs=FRESH)
    return root, world


def _touch(folder, name: str) -> None:
    (folder / name).write_bytes(b"")


def test_discovery_takes_the_newest_dump_whatever_its_kind(tmp_path):
    _touch(tmp_path, "enwiki-20240301-cirrussearch-content.json.gz")
    _touch(tmp_path, "enwiki-NS0-20261101-ENTERPRISE-HTML.json.tar.gz")
    _touch(tmp_path, "enwiki-20261101-pages-articles-multistream.xml.bz2")
    _touch(tmp_path, "enwiki-20261101-pages-articles-multistream-index.txt.bz2")
    _touch(tmp_path, "dewiki-20261101-pages-articles-multistream.xml.bz2")
    _touch(tmp_path, "dewiki-20261020-page_props.sql.gz")
    _touch(tmp_path, "dewiki-20261101-page_props.sql.gz")
    _touch(tmp_path, "wikidatawiki-20261101-wb_items_per_site.sql.gz")
    found = dumps.discover(str(tmp_path))
    # Same date: HTML before XML; the 2024 CirrusSearch dump is older, so it is not read.
    assert [(d.kind, d.date) for d in found.docs["en"]] == [(dumps.HTML, "20261101")]
    assert any("also found" in note and "cirrus 20240301" in note for note in found.notes)
    assert [d.kind for d in found.docs["de"]] == [dumps.XML]
    assert found.page_props["de"].endswith("dewiki-20261101-page_props.sql.gz")
    assert [p.rsplit("/", 1)[-1] for p in found.items_per_site] == ["wikidatawiki-20261101-wb_items_per_site.sql.gz"]
    # --source names one kind.
    assert dumps.discover(str(tmp_path), source="cirrus").docs["en"][0].kind == dumps.CIRRUS


def test_links_auto_prefers_items_per_site_and_refuses_a_language_left_without_links(tmp_path):
    _touch(tmp_path, "enwiki-NS0-20261101-ENTERPRISE-HTML.json.tar.gz")
    _touch(tmp_path, "dewiki-20261101-pages-articles-multistream.xml.bz2")
    found = dumps.discover(str(tmp_path))
    # An HTML record names its item; an XML page does not: de has no source of links at all.
    with pytest.raises(dumps.MissingLinksError, match=r"^de: its XML dump names no Wikidata items .*wb_items_per_site"):
        dumps.choose_links(found, "auto", str(tmp_path))
    with pytest.raises(dumps.MissingLinksError, match="--links items-per-site: no wikidatawiki-YYYYMMDD-wb_items_per_site.sql.gz in"):
        dumps.choose_links(found, dumps.ITEMS_PER_SITE, str(tmp_path))
    _touch(tmp_path, "dewiki-20261101-page_props.sql.gz")
    found = dumps.discover(str(tmp_path))
    chosen = dumps.choose_links(found, "auto", str(tmp_path))
    assert chosen.sitelinks_kind is None and [lang for lang, _ in chosen.page_props] == ["de"]
    _touch(tmp_path, "latest-all.json.bz2")
    _touch(tmp_path, "latest-all.json.gz")  # the same dump twice: the bz2 copy is read (in ranges), never both
    _touch(tmp_path, "wikidatawiki-20261101-wb_items_per_site.sql.gz")
    found = dumps.discover(str(tmp_path))
    assert dumps.choose_links(found, "auto", str(tmp_path)).sitelinks_kind == dumps.ITEMS_PER_SITE
    json_files = dumps.choose_links(found, dumps.WIKIDATA_JSON, str(tmp_path)).sitelinks_files
    assert [path.rsplit("/", 1)[-1] for path in json_files] == ["latest-all.json.bz2"]
    assert dumps.choose_links(found, dumps.RECORD, str(tmp_path)).sitelinks_kind is None


def test_an_enterprise_dump_is_read_as_a_stream_with_every_record_counted(fresh):
    from clirmatrix.pipeline.formats import enterprise_html

    root, world = fresh
    path = root / f"enwiki-NS0-{FRESH_DATE}-ENTERPRISE-HTML.json.tar.gz"
    report = FileReport(str(path), "en")
    with gzip.open(path, "rb") as stream:
        articles = list(enterprise_html.read_articles(enterprise_html.tar_lines(stream, report), report))
    members = [e for e in world.entities if "en" in e.langs]
    assert len(articles) == len(members) + 1  # one page is in the dump twice; the docs stage keeps its first
    assert report.rejected == {"malformed_json": 1}
    by_id = {a.doc_id: a for a in articles}
    for entity in members[:50]:
        article = by_id[entity.doc_ids["en"]]
        assert article.title == entity.titles["en"]
        assert article.entity == ("Q42" if (entity.qid, "en") in world.wrong_items else entity.qid)
        # As in CirrusSearch's text: no infobox, reference marker, caption, heading or navbox; the reference list stays.
        for dropped in ("Infobox", "[1]", "Caption", "Navbox", "Notes", "↑"):
            assert dropped not in article.text
        assert article.text.startswith(entity.titles["en"]) and article.text.endswith("Source")


def _cut_enterprise_dump(fresh, tmp_path):
    """(the de Enterprise HTML dump, the dumps found in a folder holding it cut at two thirds)."""
    root, _ = fresh
    source = root / f"dewiki-NS0-{FRESH_DATE}-ENTERPRISE-HTML.json.tar.gz"
    cut = tmp_path / "dumps" / source.name
    cut.parent.mkdir()
    cut.write_bytes(source.read_bytes()[: source.stat().st_size * 2 // 3])
    return source, dumps.discover(str(cut.parent))


def test_a_cut_enterprise_dump_is_fatal_and_named(fresh, tmp_path):
    from clirmatrix.beam_jobs.extract_docs import DocsSettings, ExtractDocs
    from clirmatrix.pipeline.io.badinput import DamagedInputError

    source, found = _cut_enterprise_dump(fresh, tmp_path)
    with pytest.raises(DamagedInputError, match=source.name):
        ExtractDocs(str(tmp_path), found.docs, DocsSettings(min_docs=10, max_bad_fraction=0.5)).run(workers=1)


def test_a_cut_enterprise_dump_through_the_index_units_is_named_once(fresh, tmp_path):
    """``extraction.docs``, no Beam: the index units of a cut dump; the part that meets the cut reports it, the join names the part it misses."""
    from clirmatrix.pipeline.extraction import docs
    from clirmatrix.pipeline.io.badinput import DamagedInputError

    source, found = _cut_enterprise_dump(fresh, tmp_path)
    split = 20_000
    units = docs.index_units(found.docs, split)
    assert [unit.step for unit in units] == [docs.INDEX_PART] * (len(units) - 1) + [docs.INDEX_JOIN] and len(units) > 2
    assert [unit.name for unit in units][-2:] == [f"{source.name}.{len(units) - 2:05d}", source.name]
    out = str(tmp_path / "docs")
    parts = [docs.index_dump_part(out, unit.task, split) for unit in units[:-1]]
    damaged = [part.part for part in parts if part.error]
    assert damaged and all(part.decoded for part in parts if not part.error)
    join = docs.join_dump_index(out, units[-1].task, split)
    assert join.missing_parts == damaged and not join.error and join.checkpoints is None
    with pytest.raises(DamagedInputError) as raised:
        docs.check_indexes([*parts, join])
    assert str(raised.value).count(source.name) == len({part.error for part in parts if part.error})


def test_fresh_inputs_build_end_to_end_with_links_from_items_per_site_records_and_page_props(fresh, tmp_path):
    from clirmatrix.beam_jobs.extract import run_extract
    from clirmatrix.pipeline.config import BuildConfig

    root, world = fresh
    result = run_extract(replace(BuildConfig(), dumps=str(root), min_docs=100, max_bad_fraction=0.01, workers=1), str(tmp_path / "work"))
    assert sorted(result.docs.languages) == sorted(LANGS)
    assert result.sitelinks.source == dumps.ITEMS_PER_SITE
    assert result.sitelinks.page_props == {"fr": sum("fr" in e.langs for e in world.entities)}
    links = result.entity_docs.languages
    for lang in LANGS:
        members = sum(lang in e.langs for e in world.entities)
        assert links[lang].linked_wikidata + links[lang].linked_dump == members
        assert links[lang].unlinked == 0
    # Pages without a sitelink are linked by their own record (HTML) or their wiki's page_props (XML).
    missing = {lang: sum(1 for _, where in world.missing_sitelinks if where == lang) for lang in LANGS}
    assert {lang: links[lang].linked_dump for lang in LANGS} == missing
    assert links["fr"].page_props == sum("fr" in e.langs for e in world.entities)
    assert sum(links[lang].disagreements for lang in LANGS) == len([1 for _, lang in world.wrong_items if lang != "fr"])
    entity_docs = pq.read_table(tmp_path / "work" / "entity_docs" / "fr.parquet").to_pylist()
    truth = {(e.qid, e.doc_ids["fr"]) for e in world.entities if "fr" in e.langs}
    assert {(row["entity"], row["doc_id"]) for row in entity_docs} == truth


def test_links_from_the_records_alone_need_no_wikidata_dump(fresh, tmp_path):
    from clirmatrix.beam_jobs.extract import run_extract
    from clirmatrix.pipeline.config import BuildConfig

    root, world = fresh
    folder = tmp_path / "dumps"
    folder.mkdir()
    for path in root.iterdir():
        if "wb_items_per_site" not in path.name:
            shutil.copy(path, folder / path.name)
    result = run_extract(replace(BuildConfig(), dumps=str(folder), min_docs=100, max_bad_fraction=0.01, workers=1, links=dumps.RECORD), str(tmp_path / "work"))
    assert result.sitelinks.source is None
    for lang in LANGS:
        link = result.entity_docs.languages[lang]
        wrong = sum(1 for _, where in world.wrong_items if where == lang)  # pages whose record names Q42: the first keeps it
        assert link.linked_wikidata == 0 and link.unlinked == max(0, wrong - 1)


def _rows(folder, lang: str) -> list[dict]:
    return [row for path in sorted((folder / lang).glob("*.parquet")) for row in pq.read_table(path).to_pylist()]


@pytest.mark.parametrize(("lang", "splits", "ranges"), [("fr", (3_000, 20_000, 1 << 30), 3), ("zh", (16_384, 150_000, 1 << 30), 5)])
def test_a_dump_read_in_ranges_gives_the_same_documents_whatever_the_split(fresh, tmp_path, lang, splits, ranges):
    """fr: a bz2 multistream XML dump cut at block boundaries; zh: an Enterprise HTML tar.gz cut at its index's checkpoints."""
    from clirmatrix.beam_jobs.extract_docs import DocsSettings, ExtractDocs

    root, world = fresh
    found = dumps.discover(str(root), [lang])
    results = {}
    for split in splits:  # many ranges, a few, one
        out = tmp_path / f"work-{split}" / "docs"
        summary = ExtractDocs(str(out.parent), found.docs, DocsSettings(min_docs=10, max_bad_fraction=0.01, split_bytes=split)).run(workers=1)
        results[split] = _rows(out, lang)
        assert summary.languages[lang].docs == sum(lang in e.langs for e in world.entities)
    assert len(list((tmp_path / f"work-{splits[0]}" / "docs" / lang).glob("*.parquet"))) >= ranges
    assert results[splits[0]] == results[splits[1]] == results[splits[2]]  # every column, positions included
    if lang == "zh":  # the index itself was made in parts at the smaller splits, and in one at the largest
        kinds = [[json.loads(p.read_text())["report_type"] for p in (tmp_path / f"work-{split}" / "docs" / "_index" / "_reports").glob("*.json")] for split in splits]
        parts = [names.count("IndexPartReport") for names in kinds]
        assert parts[0] >= 3 and parts[-1] == 1 and all(names.count("IndexJoinReport") == 1 for names in kinds), kinds


def test_the_wikidata_json_dump_in_bz2_is_read_in_ranges_with_the_same_sitelinks(tmp_path):
    import bz2

    from clirmatrix.beam_jobs.extract_sitelinks import ExtractSitelinks
    from clirmatrix.pipeline.errors import InputError
    from clirmatrix.pipeline.tools.sample import _wikidata_dump as wikidata_dump
    from clirmatrix.pipeline.tools.sample import make_world

    text = wikidata_dump(make_world(400, ("en", "de", "fr"), seed=4), broken=False)
    whole = tmp_path / "dumps" / "latest-all.json.gz"
    whole.parent.mkdir()
    whole.write_bytes(gzip.compress(text))
    ranged = tmp_path / "ranged" / "latest-all.json.bz2"
    ranged.parent.mkdir()
    ranged.write_bytes(bz2.compress(text, compresslevel=1))
    langs = ["de", "en", "fr"]

    def sitelinks(path, split, name):
        sources = dumps.LinkInputs.wikidata_wide(dumps.WIKIDATA_JSON, [str(path)])
        summary = ExtractSitelinks(str(tmp_path / name), sources, langs, split_bytes=split).run(workers=1)
        return summary, {lang: _rows(tmp_path / name / "sitelinks", lang) for lang in langs}

    reference, expected = sitelinks(whole, 1 << 30, "gz")
    for split in (2_000, 1 << 30):
        summary, found = sitelinks(ranged, split, f"bz2-{split}")
        assert found == expected and summary.languages == reference.languages
        assert summary.entities_read == reference.entities_read
    assert len(list((tmp_path / "bz2-2000" / "sitelinks" / "_reports").glob("*.json"))) >= 3  # one range per 100 kB block

    cut = tmp_path / "cut" / "latest-all.json.bz2"
    cut.parent.mkdir()
    cut.write_bytes(ranged.read_bytes()[: ranged.stat().st_size // 2])
    with pytest.raises(InputError, match=r"latest-all\.json\.bz2: .*cut short"):
        sitelinks(cut, 2_000, "cut")


FIXTURES = __import__("pathlib").Path(__file__).parent / "fixtures"


def test_real_enterprise_records_go_through_the_docs_stage(tmp_path):
    """The real records of tests/fixtures/html, packed as a dump is: ids, titles, items and text come from each record."""
    import io
    import json
    import tarfile

    from clirmatrix.beam_jobs.extract_docs import DocsSettings, ExtractDocs
    from clirmatrix.pipeline.method.html_text import html_to_text

    records = [path.read_bytes() for path in sorted((FIXTURES / "html").glob("enwiki_*.ndjson"))]
    dump = tmp_path / "dumps" / "enwiki-NS0-20261101-ENTERPRISE-HTML.json.tar.gz"
    dump.parent.mkdir()
    data = b"".join(line if line.endswith(b"\n") else line + b"\n" for line in records)
    with open(dump, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as zipped, tarfile.open(fileobj=zipped, mode="w|") as archive:
        info = tarfile.TarInfo("enwiki_namespace_0_0.ndjson")
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))
    found = dumps.discover(str(dump.parent))
    summary = ExtractDocs(str(tmp_path), found.docs, DocsSettings(min_docs=1)).run()
    assert summary.languages["en"].docs == len(records) and not summary.languages["en"].rejected
    rows = _rows(tmp_path / "docs", "en")
    for row, line in zip(rows, records, strict=True):
        record = json.loads(line)
        assert (row["doc_id"], row["title"], row["entity"]) == (str(record["identifier"]), record["name"], record["main_entity"]["identifier"])
        assert row["text_full"] == html_to_text(record["article_body"]["html"]) and row["text_full"]
    clark = next(row for row in rows if row["title"] == "William Clark (inventor)")
    assert "Calcutta" in clark["text_full"] and "[1]" not in clark["text_full"]


def test_a_real_xml_dump_read_in_ranges_gives_what_a_whole_read_gives(tmp_path):
    """gensim's real enwiki excerpt as a multistream dump, one page a stream: ranges of any size give the whole read's articles."""
    from clirmatrix.beam_jobs.extract_docs import DocsSettings, ExtractDocs
    from clirmatrix.pipeline.formats import mediawiki_xml
    from clirmatrix.pipeline.tools.sample import _multistream as multistream

    xml = (FIXTURES / "wikitext" / "enwiki-excerpt.xml").read_bytes()
    report = FileReport("whole")
    whole = [(a.doc_id, a.title, a.text) for a in mediawiki_xml.read_articles(__import__("io").BytesIO(xml), report)]
    assert whole and report.filtered["redirect"] == 1
    data, _ = multistream(xml, pages_per_stream=1)
    dump = tmp_path / "dumps" / "enwiki-20261101-pages-articles-multistream.xml.bz2"
    dump.parent.mkdir()
    dump.write_bytes(data)
    found = dumps.discover(str(dump.parent))
    for split in (4_000, 1 << 30):
        ExtractDocs(str(tmp_path / f"work-{split}"), found.docs, DocsSettings(min_docs=1, split_bytes=split)).run()
        assert [(row["doc_id"], row["title"], row["text_full"]) for row in _rows(tmp_path / f"work-{split}" / "docs", "en")] == whole


@pytest.mark.slow
def test_a_build_from_todays_inputs_is_a_valid_release(fresh, tmp_path):
    """Enterprise HTML, multistream XML and wb_items_per_site, through every stage, to a release validate accepts."""
    from conftest import EVAL, TRAIN, build_config

    from clirmatrix.beam_jobs.build import run_build
    from clirmatrix.pipeline.tools.validate import validate

    root, world = fresh
    out = tmp_path / "out"
    result = run_build(build_config(root, out, multi_langs=()))
    assert sorted(result.summaries["extract_docs"].languages) == sorted(LANGS)
    assert result.summaries["extract_sitelinks"].source == dumps.ITEMS_PER_SITE
    report = validate(str(out), train_size=TRAIN, eval_size=EVAL)
    assert report.ok, report.failures[:5]
    manifest = __import__("json").loads((out / "manifest.json").read_text())
    assert any(entry["path"].endswith("wb_items_per_site.sql.gz") for entry in manifest["inputs"])
    assert (out / "BI-139" / "base" / "fr" / "fr.zh.test1.base.jl.gz").exists()
