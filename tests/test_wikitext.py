"""Wikitext to text on real pages (tests/fixtures/wikitext) and on the inputs that stall parsers."""

from __future__ import annotations

import re
from pathlib import Path

import mwparserfromhell
import pytest

from clirmatrix.pipeline.formats import mediawiki_xml
from clirmatrix.pipeline.io.badinput import FileReport
from clirmatrix.pipeline.method.wikitext import WikitextConverter

FIXTURES = Path(__file__).parent / "fixtures" / "wikitext"
DUMPS = sorted(FIXTURES.glob("*.xml"))
MARKUP = re.compile(r"\{\{|\}\}|\[\[|\]\]|<ref|</?div|\{\||\|\}|\|-|''")


def articles(path: Path) -> dict[str, str]:
    report = FileReport(path.name)
    with path.open("rb") as stream:
        found = {article.title: article.text for article in mediawiki_xml.read_articles(stream, report)}
    assert not report.rejected
    return found


def test_the_c_tokenizer_is_in_use():
    assert mwparserfromhell.parser.use_c


@pytest.mark.parametrize("dump", DUMPS, ids=[path.stem for path in DUMPS])
def test_real_dump_pages_become_text_without_markup(dump):
    texts = articles(dump)
    assert texts
    for title, text in texts.items():
        assert len(text) > 2000, title
        assert not MARKUP.search(text), (title, MARKUP.search(text).group(0))


def test_a_real_enwiki_excerpt_keeps_articles_and_drops_the_redirect():
    report = FileReport("enwiki-excerpt.xml")
    with (FIXTURES / "enwiki-excerpt.xml").open("rb") as stream:
        titles = [article.title for article in mediawiki_xml.read_articles(stream, report)]
    assert titles == ["Alaska", "International Atomic Time"]
    assert dict(report.filtered) == {"redirect": 1}


def test_alaska_keeps_the_section_the_whole_page_parse_lost():
    # mwparserfromhell on the whole page swallowed the Economy section into a template.
    text = articles(FIXTURES / "enwiki-excerpt.xml")["Alaska"]
    assert "The 2007 gross state product was $44.9 billion, 45th in the nation." in text
    assert "It is a small (15 – 17 in) Arctic grouse" in text  # {{convert|15|–|17|in}}
    assert "Alaska Railroad" in text
    assert "Infobox" not in text and "thumb|" not in text


def test_inline_language_templates_keep_their_text_in_other_scripts():
    japanese = articles(FIXTURES / "jawiki-excerpt.xml")
    assert japanese["自然言語処理"].startswith("自然言語処理（しぜんげんごしょり、natural language processing、略称：NLP）は、")
    assert "ファイル" not in japanese["アンパサンド"]  # the localised File namespace
    ukrainian = articles(FIXTURES / "ukwiki-excerpt.xml")
    assert ukrainian["Точка"].startswith("Точка — одне з основних понять геометрії.")
    assert "Категорія" not in ukrainian["Речення"]


def test_a_plain_german_page_from_a_text_file():
    text = WikitextConverter({"Datei", "Kategorie"}).to_text((FIXTURES / "dewiki-Keilwelle.txt").read_text("utf-8"))
    assert text.startswith("Als Keilwellen werden Wellen bezeichnet, bei denen ein Formschluss zur Nabe")
    assert "thumb" not in text and "Datei:" not in text


@pytest.mark.parametrize(
    ("wikitext", "expected"),
    [
        ("Paris ({{lang|fr|Ville Lumière}}) is", "Paris (Ville Lumière) is"),
        ("Madrid ({{lang-es|Madrid}}) is", "Madrid (Madrid) is"),
        ("a {{convert|5|km|mi}} walk", "a 5 km walk"),
        ("some {{convert|110|and|125|mph|km/h|abbr=on}} winds", "some 110 and 125 mph winds"),
        ("{{nihongo|Tokyo|東京|Tōkyō}} is", "Tokyo 東京 Tōkyō is"),
        ("water is {{chem|H|2|O}}.", "water is H2O."),
        ("{{仮リンク|計算言語学|en|Computational linguistics}}とは", "計算言語学とは"),
        ("{{ill|Marcel Raymond|fr|lt=Raymond}} wrote", "Raymond wrote"),
        ("{{nowrap|[[New York]] City}}", "New York City"),
        ("{{lang|fr|{{nowrap|la [[Seine]]}}}}", "la Seine"),
        ("born {{birth date|1950|1|2}} in", "born in"),  # not inline text: dropped
        ("x{{cite web|url=http://a|title=T}}y", "x y"),
    ],
)
def test_inline_templates(wikitext, expected):
    assert WikitextConverter().to_text(wikitext) == expected


def test_inline_templates_can_be_turned_off():
    assert WikitextConverter(inline_templates=False).to_text("Paris ({{lang|fr|Paris}})") == "Paris ()"


@pytest.mark.parametrize(
    ("wikitext", "expected"),
    [
        ("[[वाई]]<nowiki/>जवळ", "वाईजवळ"),  # <nowiki/> only separates the link from its suffix
        ("ex<!-- note -->ample", "example"),  # a comment leaves no trace, as in MediaWiki
        ("<nowiki>{{not a template}} [[nor a link]]</nowiki> text", "{{not a template}} [[nor a link]] text"),
        ("a <math>\\frac{{a}}{b}</math> b", "a b"),
        ("{{{1|default}}} text", "text"),
        ("text {{unclosed", "text {{unclosed"),  # unpaired braces are text, as MediaWiki shows them
        ("before\n{| class=wikitable\n| a || b\n|-\n{|\n| nested\n|}\n|}\nafter", "before after"),
        ("before\n{|\n| a table never closed\nmore", "before"),  # MediaWiki closes it at the page's end
        ("a <ref name=x/> b <ref>{{cite|x}}</ref> c", "a b c"),
        ("a <div>b</div> c </div> d <span>e", "a b c d e"),  # unpaired tags leave no markup
        ("[http://example.org a link] and [http://x.org no end", "a link and [ no end"),
    ],
)
def test_markup_edge_cases(wikitext, expected):
    assert WikitextConverter().to_text(wikitext) == expected


@pytest.mark.parametrize(
    "wikitext",
    [
        "{{" * 20000,
        "{{a|" * 5000 + "x",  # 23 s through mwparserfromhell alone (its issue 364)
        "[[a|<b><i><span>" * 3000,  # nested unclosed tags in links (its issue 286): 13 s
        "<ref>x " * 20000,
        "<div>x " * 20000,  # 40 s
        "[http://x.org a " * 20000,  # over a minute
        "{|\n|a\n" * 5000,
        "[[" * 20000,
        "{|\n" + "|-\n| a || b\n" * 50000 + "|}\ntext",  # 25 s
    ],
    ids=["flat-braces", "nested-braces", "tags-in-links", "refs", "divs", "urls", "tables", "links", "huge-table"],
)
def test_pathological_pages_convert_without_markup(wikitext):
    text = WikitextConverter().to_text(wikitext)
    assert "<div" not in text and "<ref" not in text and "|-" not in text
