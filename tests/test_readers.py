"""The dump readers on hand-made lines: pairing, filters, every kind of bad input."""

import bz2
import gzip
import io
import json
import random

import orjson
import pytest
from conftest import real_fixture

from clirmatrix.pipeline.formats import cirrus, mediawiki_xml
from clirmatrix.pipeline.formats.wikidata import SitelinkFilter, read_sitelinks
from clirmatrix.pipeline.io import fileio
from clirmatrix.pipeline.io.badinput import DamagedInputError, FileReport, TooManyBadRecords, check_bad_fraction
from clirmatrix.pipeline.method.wikitext import WikitextConverter


def numbered(lines):
    return list(enumerate(lines, 1))


def doc(title, text="Some text.", namespace=0, **extra):
    return orjson.dumps({"namespace": namespace, "title": title, "text": text, **extra})


def read(lines):
    report = FileReport("dump.json")
    return list(cirrus.read_articles(numbered(lines), report)), report


def read_dump_file(path, background=True):
    """Articles and report of a CirrusSearch dump file, opened as the job opens it."""
    report = FileReport(str(path))
    with fileio.open_raw(str(path)) as raw:
        return list(cirrus.read_articles(fileio.iter_lines(fileio.open_dump(raw, str(path), background), report), report)), report


def assert_accounted(report):
    assert report.records == report.kept + sum(report.filtered.values()) + sum(report.rejected.values())


@pytest.mark.parametrize(
    "action",
    [{"_type": "page", "_id": "12"}, {"_type": "_doc", "_id": "12"}, {"_id": "12"}, {"_id": 12}],
    ids=["page", "_doc", "no-type", "numeric-id"],
)
def test_every_action_layout_gives_the_id_from_the_action_line(action):
    articles, report = read([orjson.dumps({"index": action}), doc("Aruba", page_id=999, wikibase_item="Q21203")])
    assert [(a.doc_id, a.title, a.entity, a.line) for a in articles] == [("12", "Aruba", "Q21203", 2)]
    assert report.kept == 1 and not report.rejected


def test_filters_are_counted_not_rejected():
    lines = []
    for i, document in enumerate(
        [doc("Talk", namespace=1), doc("Empty", text="  "), doc("R", page_type="redirect"), doc("Kept"), doc("NoItem", wikibase_item="")]
    ):
        lines += [orjson.dumps({"index": {"_id": str(i)}}), document]
    articles, report = read(lines)
    assert [a.title for a in articles] == ["Kept", "NoItem"]
    assert articles[1].entity is None
    assert dict(report.filtered) == {"other_namespace": 1, "empty_text": 1, "redirect": 1}
    assert_accounted(report)


def test_each_kind_of_bad_line_costs_one_record_and_names_its_line():
    a = lambda i: orjson.dumps({"index": {"_id": str(i)}})  # noqa: E731
    lines = [
        a(1), doc("One"),
        b'{"index":{"_id":"2"}',  # malformed action: its document must not count again
        doc("Two"),
        doc("Orphan"),  # document without action
        a(4), a(5), doc("Five"),  # action 4 has no document
        a(6), orjson.dumps({"namespace": 0, "title": "No text"}),  # missing field
        a(7), b"[1, 2]",  # not an object
        a(8),  # action at end of file without document
    ]
    articles, report = read(lines)
    assert [a.title for a in articles] == ["One", "Five"]
    assert dict(report.rejected) == {
        "malformed_json": 1, "document_without_action": 1, "action_without_document": 2, "missing_field": 1, "not_an_object": 1,
    }
    assert sorted((e["line"], e["kind"]) for e in report.examples) == [
        (3, "malformed_json"), (5, "document_without_action"), (6, "action_without_document"),
        (10, "missing_field"), (12, "not_an_object"), (13, "action_without_document"),
    ]
    assert_accounted(report)


def test_real_cirrussearch_document_is_read(tmp_path):
    bulk = json.loads(real_fixture("cirrussearch", "dataSender_sendData-request-defaults.expected.json").read_text())
    document = bulk["data"][1]["doc"]
    path = tmp_path / "fixturewiki-20190325-cirrussearch-content.json.gz"
    path.write_bytes(gzip.compress(orjson.dumps({"index": {"_type": "page", "_id": bulk["data"][0]["update"]["_id"]}}) + b"\n" + orjson.dumps(document) + b"\n"))
    articles, report = read_dump_file(path)
    assert [(a.doc_id, a.title) for a in articles] == [("1", "Main Page")]
    assert articles[0].text == document["text"]


@pytest.mark.parametrize("suffix, background", [(".gz", True), (".gz", False), (".bz2", True)])
def test_truncated_stream_is_one_reject_with_the_line_it_stopped_at(tmp_path, suffix, background):
    rng = random.Random(1)
    words = lambda: " ".join(f"{rng.getrandbits(40):x}" for _ in range(60))  # noqa: E731  (incompressible)
    payload = b"".join(orjson.dumps({"index": {"_id": str(i)}}) + b"\n" + doc(f"T{i}", words()) + b"\n" for i in range(3000))
    data = gzip.compress(payload) if suffix == ".gz" else bz2.compress(payload)
    path = tmp_path / f"cut{suffix}"
    path.write_bytes(data[: len(data) // 2])
    articles, report = read_dump_file(path, background)
    assert 0 < len(articles) < 3000
    intact = payload[: len(payload) // 3].count(b"\n") // 2  # the first third surely decompresses
    assert len(articles) >= intact
    assert report.rejected["truncated_stream"] == 1
    stop = next(e for e in report.examples if e["kind"] == "truncated_stream")
    assert stop["line"] >= 2 * len(articles)
    # One bad record among thousands, yet the rest of the file is lost: fatal whatever the limit.
    with pytest.raises(DamagedInputError, match=rf"cut{suffix}: truncated_stream at line {stop['line']:,}, after"):
        check_bad_fraction({"en": [report]}, 1.0)


def test_a_plain_dump_cut_inside_a_line_is_truncated(tmp_path):
    payload = b"".join(orjson.dumps({"index": {"_id": str(i)}}) + b"\n" + doc(f"T{i}") + b"\n" for i in range(10))
    path = tmp_path / "enwiki-20240101-cirrussearch-content.json"
    path.write_bytes(payload[:-7])
    articles, report = read_dump_file(path)
    assert len(articles) == 9
    assert report.rejected["truncated_stream"] == 1
    with pytest.raises(DamagedInputError, match=r"line 20.*no final newline"):
        check_bad_fraction({"en": [report]}, 1.0)


@pytest.mark.parametrize("background", [True, False])
def test_corrupt_gzip_is_reported_not_raised(tmp_path, background):
    path = tmp_path / "bad.json.gz"
    path.write_bytes(b"\x1f\x8b\x08\x00garbage-not-deflate" * 10)
    report = FileReport(str(path))
    with fileio.open_raw(str(path)) as raw:
        assert list(fileio.iter_lines(fileio.open_dump(raw, str(path), background), report)) == []
    assert report.bad == 1 and set(report.rejected) <= {"corrupt_stream", "truncated_stream"}


def test_bad_fraction_limit_names_language_file_and_line():
    report = FileReport("enwiki.json.gz", "en")
    report.keep(999)
    report.reject(17, "malformed_json", "unexpected character")
    check_bad_fraction({"en": [report]}, 0.001)  # 1 in 1,000: at the limit, fine
    report.reject(40, "missing_field", "title")
    with pytest.raises(TooManyBadRecords, match=r"(?s)en: 2 of 1,001.*enwiki.json.gz line 17: malformed_json"):
        check_bad_fraction({"en": [report]}, 0.001)


# --- Wikidata ---------------------------------------------------------------------------

def wikidata_lines(entities):
    body = ",\n".join(json.dumps(e, ensure_ascii=True).replace("/", "\\/") for e in entities)
    return numbered(("[\n" + body + "\n]\n").encode().splitlines(keepends=True))


def real_wikidata_lines():
    """Numbered lines of the real entities, in the dump's framing (skips without shared/)."""
    path = real_fixture("wikidata", "latest-all.DERIVED-sample.json.gz")
    return numbered(gzip.decompress(path.read_bytes()).splitlines(keepends=True))


def test_exact_site_keys_only_and_the_framing():
    entity = {
        "type": "item", "id": "Q1",
        "sitelinks": {
            "enwiki": {"site": "enwiki", "title": "Universe", "badges": []},
            "enwikiquote": {"site": "enwikiquote", "title": "Universe q", "badges": []},
            "commonswiki": {"site": "commonswiki", "title": "Category:Universe", "badges": []},
            "zh_min_nanwiki": {"site": "zh_min_nanwiki", "title": "Ú-tiū", "badges": []},
        },
    }
    lexeme = {"type": "lexeme", "id": "L1", "lemmas": {"en": {"language": "en", "value": "enwiki"}}}
    report = FileReport("wd")
    links = list(read_sitelinks(wikidata_lines([entity, lexeme]), SitelinkFilter(["en", "zh-min-nan", "de"]), report))
    assert links == [("Q1", "en", "Universe"), ("Q1", "zh-min-nan", "Ú-tiū")]
    assert report.kept == 1 and report.filtered["no_selected_sitelink"] == 1 and not report.rejected


def test_prefilter_never_hides_a_key_written_with_escapes():
    line = b'{"type":"item","id":"Q5","sitelinks":{"\\u0065nwiki":{"site":"enwiki","title":"Human","badges":[]}}}'
    for prefilter in (True, False):
        links = list(read_sitelinks(numbered([line]), SitelinkFilter(["en"], prefilter), FileReport("wd")))
        assert links == [("Q5", "en", "Human")]


@pytest.mark.parametrize("langs", [["en"], ["en", "de", "fr", "zh", "ja", "ru", "ar"], ["fi", "be-x-old", "zh-min-nan"]])
def test_prefilter_gives_exactly_the_full_parse_on_real_entities(langs):
    lines = real_wikidata_lines()
    fast, slow = FileReport("wd"), FileReport("wd")
    with_filter = list(read_sitelinks(lines, SitelinkFilter(langs, True), fast))
    without = list(read_sitelinks(lines, SitelinkFilter(langs, False), slow))
    assert with_filter == without and fast.to_dict() == slow.to_dict()
    assert with_filter  # the real entities do have these sitelinks


def test_real_entities_give_their_real_sitelinks():
    lines = real_wikidata_lines()
    links = {(link.entity, link.lang): link.title for link in read_sitelinks(lines, SitelinkFilter(["en", "de", "zh-min-nan", "be-x-old"]), FileReport("wd"))}
    assert links[("Q42", "en")] == "Douglas Adams"
    assert links[("Q1040", "de")] == "Karlsruhe"
    assert ("Q1040", "zh-min-nan") in links and ("Q1040", "be-x-old") in links
    assert not any(entity.startswith("P") for entity, _ in links)


def test_a_cut_entity_line_is_counted_even_where_the_prefilter_would_skip_it():
    lines = numbered([
        b"[\n",
        b'{"type":"item","id":"Q1","sitelinks":{"enwiki":{"title":"Cut\n',  # cut inside a selected sitelink
        b'{"type":"item","id":"Q2","claims":{"P31":[{"mainsnak":\n',  # cut before any sitelink: no site key to see
        b'{"type":"item","id":"Q3","sitelinks":{"enwiki":{"title":"Kept"}}},\n',
        b'{"type":"item","id":"Q4","sitelinks":{"enwiki":{"title":"Last"}}}\n',
        b"]\n",
    ])
    report = FileReport("wd")
    assert [link.title for link in read_sitelinks(lines, SitelinkFilter(["en"]), report)] == ["Kept", "Last"]
    assert [(e["line"], e["kind"]) for e in report.examples] == [(2, "incomplete_line"), (3, "incomplete_line")]
    assert report.records == 4 and report.kept == 2
    assert_accounted(report)


def test_a_wikidata_array_never_closed_is_a_truncated_file():
    lines = numbered([b"[\n", b'{"type":"item","id":"Q3","sitelinks":{"enwiki":{"title":"Kept"}}},\n'])
    report = FileReport("latest-all.json")
    assert [link.title for link in read_sitelinks(lines, SitelinkFilter(["en"]), report)] == ["Kept"]
    assert [(e["line"], e["kind"]) for e in report.examples] == [(3, "truncated_stream")]
    with pytest.raises(DamagedInputError, match=r"latest-all.json: truncated_stream at line 3, after 1 records .*never closed"):
        check_bad_fraction({"wd": [report]}, 0.5)


# --- MediaWiki XML ------------------------------------------------------------------------

def test_wikitext_keeps_running_text_and_drops_markup():
    text = WikitextConverter({"Fichier", "Catégorie"}).to_text(
        "{{Infobox|a=1}}'''Paris''' est la [[capitale|capitale de la France]].<ref>{{cite|x}}</ref>\n"
        "== Histoire ==\n{| class=\"wikitable\"\n| a || b\n|}\n[[Fichier:P.jpg|vignette|Légende]] "
        "[[File:Q.png|thumb|x]] [[Catégorie:Ville]] [[de:Paris]] __NOTOC__ <!-- c --> Voir [http://x.fr le site] &amp; [[Lyon]]."
    )
    assert text == "Paris est la capitale de la France. Voir le site & Lyon."


XML = b"""<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.10/">
  <siteinfo><namespaces><namespace key="6">Datei</namespace><namespace key="14">Kategorie</namespace></namespaces></siteinfo>
  <page><title>Haus</title><ns>0</ns><id>7</id><revision><id>1</id><model>wikitext</model><text>Ein '''Haus''' [[Datei:H.jpg|mini|Bild]] ist [[Bau|gebaut]].[[Kategorie:Bau]]</text></revision></page>
  <page><title>Heim</title><ns>0</ns><id>8</id><redirect title="Haus" /><revision><id>2</id><text>#WEITERLEITUNG [[Haus]]</text></revision></page>
  <page><title>Vorlage:X</title><ns>10</ns><id>9</id><revision><id>3</id><text>{{{1}}}</text></revision></page>
  <page><title>Ohne</title><ns>0</ns><revision><id>4</id><text>kein id</text></revision></page>
</mediawiki>
"""


def test_xml_pages_namespace_redirects_and_missing_fields():
    report = FileReport("dewiki.xml")
    articles = list(mediawiki_xml.read_articles(io.BytesIO(XML), report))
    assert [(a.doc_id, a.title, a.text, a.line) for a in articles] == [("7", "Haus", "Ein Haus ist gebaut.", 3)]
    assert dict(report.filtered) == {"redirect": 1, "other_namespace": 1}
    assert report.examples == [{"line": 6, "kind": "missing_field", "detail": "page missing id"}]
    assert_accounted(report)


def test_malformed_xml_is_reported_with_its_line():
    broken = XML.replace(b"</page>\n  <page><title>Heim", b"</pag>\n  <page><title>Heim")
    report = FileReport("dewiki.xml")
    list(mediawiki_xml.read_articles(io.BytesIO(broken), report))
    assert report.rejected["malformed_xml"] == 1 and report.examples[-1]["line"] == 3
