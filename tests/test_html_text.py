"""HTML -> CirrusSearch text on real Parsoid pages (tests/fixtures/html, README.md there).

What a user checks: the lead's sentences are there and opening_text is the lead;
reference marks, headings, infoboxes, navboxes, captions, hatnotes and stylesheets are
not in the text; the fast path gives what the literal port of MediaWiki's algorithm
gives, and what it gave before it was made faster (digests pinned at 91f059b); bad input
never raises.
"""

from __future__ import annotations

import hashlib
import json
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from selectolax.lexbor import LexborHTMLParser

from clirmatrix.pipeline.method import html_text
from clirmatrix.pipeline.method.html_text import HtmlText, html_to_parts, html_to_text, html_to_text_reference

FIXTURES = Path(__file__).parent / "fixtures" / "html"
PAGES = sorted(p.name for p in FIXTURES.iterdir() if p.suffix in (".html", ".ndjson"))


def page(name: str) -> str:
    """The page's HTML: the file itself, or article_body.html of the Enterprise record."""
    raw = (FIXTURES / name).read_text(encoding="utf-8")
    return json.loads(raw)["article_body"]["html"] if name.endswith(".ndjson") else raw


@pytest.fixture(scope="module")
def parts() -> dict[str, HtmlText]:
    return {name: html_to_parts(page(name)) for name in PAGES}


# The first sentence of each lead, as the page renders it.
LEADS = {
    "enwiki_Foobar.html": "The terms foobar (/ˈfuːbɑːr/), foo, bar, baz, and others are used as metasyntactic "
    "variables and placeholder names in computer programming or computer-related documentation.",
    "enwiki_Caryophyllales.html": "Caryophyllales (/ˌkæri.oʊfɪˈleɪliːz/ KARR-ee-oh-fih-LAY-leez) is a diverse and "
    "heterogeneous order of flowering plants that includes the cacti, carnations, amaranths, ice plants, beets, "
    "and many carnivorous plants.",
    "enwiki_William_Clark_inventor.ndjson": "William Clark (17 March 1821 – 22 January 1880) was an English civil "
    "engineer and inventor.",
    "ruwiki_Squirrel.ndjson": "Squirrel (с англ.\u2009—\u2009«белка») — интерпретируемый язык программирования, "
    "разработанный специально для использования в качестве скриптового языка в приложениях реального времени, "
    "таких как компьютерные игры.",
}


@pytest.mark.parametrize("name", sorted(LEADS))
def test_opening_text_is_the_lead_and_text_starts_with_it(parts: dict[str, HtmlText], name: str) -> None:
    result = parts[name]
    assert result.opening_text is not None and result.opening_text.startswith(LEADS[name])
    assert result.text.startswith(result.opening_text + " ")
    assert result.text == html_to_text(page(name))


def test_opening_text_stops_at_the_first_heading(parts: dict[str, HtmlText]) -> None:
    # William Clark's lead is one sentence; "Born at Colchester" opens the section "Life".
    result = parts["enwiki_William_Clark_inventor.ndjson"]
    assert result.opening_text == LEADS["enwiki_William_Clark_inventor.ndjson"]
    assert result.headings == ["Life", "References"]
    assert result.text[len(result.opening_text) :].startswith(" Born at Colchester, Clark attended")


def test_page_without_headings_has_no_opening_text(parts: dict[str, HtmlText]) -> None:
    # CirrusSearch's opening_text is null when the page has no heading.
    for name in ("enwiki_Mike_Potts.ndjson", "dewiki_Squirrel.ndjson"):
        assert parts[name].opening_text is None
        assert parts[name].headings == []
    assert parts["enwiki_Mike_Potts.ndjson"].text.startswith("Mike or Michael Potts may refer to: Michael Potts (actor)")
    assert parts["dewiki_Squirrel.ndjson"].text.startswith("Squirrel (englisch für Hörnchen) steht für:")


@pytest.mark.parametrize("name", ["enwiki_Foobar.html", "enwiki_Caryophyllales.html", "ruwiki_Squirrel.ndjson",
                                  "enwiki_William_Clark_inventor.ndjson"])
def test_reference_marks_and_backlinks_are_absent(parts: dict[str, HtmlText], name: str) -> None:
    html = page(name)
    assert re.search(r">\[\d+\]<", html), "the page has reference marks to remove"
    assert not re.search(r"\[\d+\]", parts[name].text)
    # Parsoid's back-links from the reference list ("↑", or "1 2" for a reused reference).
    assert 'rel="mw:referencedBy"' in html and "↑" not in parts[name].text


def test_headings_are_listed_and_absent_from_text(parts: dict[str, HtmlText]) -> None:
    foobar = parts["enwiki_Foobar.html"]
    assert foobar.headings == ["History and etymology", "Examples in culture", "See also", "References", "External links"]
    for heading in ("History and etymology", "Examples in culture", "External links"):
        assert heading not in foobar.text
    squirrel = parts["ruwiki_Squirrel.ndjson"]
    assert squirrel.headings[:3] == ["Основные особенности", "Отличия от Lua", "Типы данных"]
    assert "Основные особенности" not in squirrel.text and "Приложения, использующие язык" not in squirrel.text


def test_infobox_navbox_captions_and_short_description_are_auxiliary(parts: dict[str, HtmlText]) -> None:
    plants = parts["enwiki_Caryophyllales.html"]
    for aux in ("Scientific classification", "Pupalia lappacea Forest Burr from family Amaranthaceae",
                "Order of flowering plants", "Taxon identifiers"):
        assert aux not in plants.text
        assert any(aux in entry for entry in plants.auxiliary_text), aux
    squirrel = parts["ruwiki_Squirrel.ndjson"]
    assert "Класс языка" not in squirrel.text  # infobox
    assert "Хронология" not in squirrel.text  # navbox (a collapsed table)
    assert any(entry.startswith("Squirrel Класс языка мультипарадигменный") for entry in squirrel.auxiliary_text)


def test_hatnotes_and_stylesheets_are_excluded(parts: dict[str, HtmlText]) -> None:
    foobar = parts["enwiki_Foobar.html"]
    # enwiki's hatnotes carry navigation-not-searchable: excluded from every field.
    assert "Not to be confused with" not in foobar.text
    assert not any("Not to be confused with" in entry for entry in foobar.auxiliary_text)
    assert "For other people named William Clark" not in parts["enwiki_William_Clark_inventor.ndjson"].text
    for result in parts.values():  # TemplateStyles CSS
        assert ".mw-parser-output" not in result.text and "font-style:" not in result.text


def test_reference_list_text_is_kept_as_cirrussearch_keeps_it(parts: dict[str, HtmlText]) -> None:
    assert parts["enwiki_Caryophyllales.html"].text.endswith("Tree of Life Characteristics and Phylogenetic Relationships")
    assert "Dictionary of National Biography" in parts["enwiki_William_Clark_inventor.ndjson"].text


@pytest.mark.parametrize("name", PAGES)
def test_fast_path_equals_the_literal_port(parts: dict[str, HtmlText], name: str) -> None:
    """Same text and opening text as removing, serializing and stripping tags as MediaWiki does."""
    reference = html_to_text_reference(page(name))
    assert parts[name].text == reference.text
    assert parts[name].opening_text == reference.opening_text


def test_mediawiki_own_cases() -> None:
    """MediaWiki's WikitextStructureTest (testTexts, testPreservesWordSpacing), on its parser's HTML."""
    legacy = (
        '<div class="mw-parser-output"><p>Opening text is opening.\n</p>\n'
        '<h2 class="hello">Then comes header</h2>\n<p>Then we got more<br />text\n</p>\n'
        '<h3><span class="mw-headline" id="And_more_headers">And more headers</span></h3>\n'
        '<table class="wikitable">\n<tbody><tr>\n<th>Header table\n</th></tr>\n<tr>\n<td>row in table\n'
        "</td></tr>\n<tr>\n<td>another row in table\n</td></tr></tbody></table>\n</div>"
    )
    assert html_to_parts(legacy) == HtmlText(
        "Opening text is opening. Then we got more text",
        "Opening text is opening.",
        ["Then comes header", "And more headers"],
        ["Header table row in table another row in table"],
    )
    assert html_to_text('<div class="mw-parser-output"><dd><dl>foo</dl><dl>bar</dl></dd><p>baz</p></div>') == "foo bar baz"


def test_legacy_parser_markup_gets_the_same_treatment() -> None:
    """The legacy parser's forms of what Parsoid marks up differently (2019 enwiki markup, trimmed)."""
    legacy = (
        '<div class="mw-parser-output"><div class="thumb tright"><div class="thumbinner"><a class="image"><img alt="A"></a>'
        '<div class="thumbcaption"><div class="magnify"><a title="Enlarge"></a></div>Caption here</div></div></div>'
        '<p>Lead sentence.<sup id="cite_ref-1" class="reference"><a href="#cite_note-1">&#91;1&#93;</a></sup></p>\n'
        '<h2><span class="mw-headline" id="History">History</span><span class="mw-editsection">'
        '<span class="mw-editsection-bracket">[</span><a>edit</a><span class="mw-editsection-bracket">]</span></span></h2>\n'
        '<p>Body.</p><div class="reflist"><div class="mw-references-wrap"><ol class="references"><li id="cite_note-1">'
        '<span class="mw-cite-backlink"><b><a href="#cite_ref-1">^</a></b></span> <span class="reference-text">A source.</span>'
        "</li></ol></div></div></div>"
    )
    assert html_to_parts(legacy) == HtmlText("Lead sentence. Body. A source.", "Lead sentence.", ["History"], ["Caption here"])


def test_inline_markup_joins_and_block_markup_separates() -> None:
    html = "<p><b>Squirrel</b>s eat E=mc<sup>2</sup>&nbsp;nuts</p><ul><li>one</li><li>two</li></ul>a<br>b<center>c</center>"
    # No space at inline tags; one at p, li, br; none at <center> (not in MediaWiki's list); NBSP kept.
    assert html_to_text(html) == "Squirrels eat E=mc2\u00a0nuts one two a bc"


def test_parsoid_language_variant_text_is_shown() -> None:
    # Parsoid leaves -{...}- spans empty (MediaWiki DOM spec, "Language conversion blocks").
    html = (
        "<p>foo<span typeof=\"mw:LanguageVariant\" data-mw-variant='{\"disabled\":{\"t\":\"bar baz\"}}'></span> quux "
        "<span typeof=\"mw:LanguageVariant\" data-mw-variant='{\"twoway\":[{\"l\":\"zh-hant\",\"t\":\"發\"},"
        "{\"l\":\"zh-hans\",\"t\":\"发\"}]}'></span> "
        "<meta typeof=\"mw:LanguageVariant\" data-mw-variant='{\"disabled\":{\"t\":\"hidden\"}}'/>"
        "<span typeof=\"mw:LanguageVariant\" data-mw-variant='not json'></span>end</p>"
    )
    assert html_to_text(html) == "foobar baz quux 发 end"


@pytest.mark.parametrize(
    "html, expected",
    [
        ("", ""),
        ("   \n\t ", ""),
        ("<html><head><title>T</title></head><body></body></html>", ""),
        ("<div><p>unclosed <b>bold", "unclosed bold"),
        ("</p></div><<<>>>", "<<<>>>"),
        ("<table><tr><td>only a table", ""),
        ("text \ud800 with a lone surrogate", "text with a lone surrogate"),  # from a JSON "\ud800"
        ("<p>a\x00b</p>", "ab"),  # the HTML tree builder drops NUL
    ],
)
def test_bad_input_never_raises(html: str, expected: str) -> None:
    assert html_to_text(html) == expected
    assert html_to_parts(html).text == expected


# sha256 (first 16 hex digits) of html_to_text's output and of html_to_parts' four fields
# (json.dumps, ensure_ascii=False) on each fixture, made by the module at 91f059b, before
# the speed work of issue 31: any change of a character shows here.
PINNED = {
    "dewiki_Squirrel.ndjson": ("c4fe26129bf29b1d", "4f298c5b48669bd0"),
    "enwiki_Caryophyllales.html": ("925399460879a1c5", "0c91cb6f4d017e6f"),
    "enwiki_Foobar.html": ("f48926c47fe602b5", "6750a549375de4eb"),
    "enwiki_Mike_Potts.ndjson": ("20f8b6d77683a815", "45d420b9901a06f0"),
    "enwiki_William_Clark_inventor.ndjson": ("702ff7f5e3307971", "0842c785272f2fdd"),
    "ruwiki_Squirrel.ndjson": ("d6e0040a70f294db", "701025fe13c03361"),
}


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def test_every_fixture_is_pinned() -> None:
    assert sorted(PINNED) == PAGES


@pytest.mark.parametrize("name", sorted(PINNED))
def test_output_is_byte_identical_to_the_pinned_one(parts: dict[str, HtmlText], name: str) -> None:
    text_digest, parts_digest = PINNED[name]
    assert digest(html_to_text(page(name))) == text_digest
    assert digest(json.dumps(parts[name], ensure_ascii=False)) == parts_digest


def test_the_bytes_pre_pass_puts_spaces_where_the_text_one_does() -> None:
    """The pre-pass runs on UTF-8; a tag name ends at the same characters as in the text pattern."""
    assert set(html_text._TAG_NAME_ENDS) == {chr(c) for c in range(0x110000) if chr(c).isspace()} | {"/", ">"}
    samples = [chr(c) for c in (*range(0x100), 0x1680, 0x180E, 0x2000, 0x200A, 0x200B, 0x2028, 0x202F, 0x205F,
                                0x3000, 0xFEFF, 0x1F600)]
    for tag in ("p", "div", "li", "br", "pre", "param", "link", "thead", "table"):
        for end in samples:
            source = f"a<{tag}{end}b</{tag}{end}c"
            assert html_text._BLOCK_TAG_START.sub(b" <", source.encode()) == (
                html_text._BLOCK_TAG_START_TEXT.sub(" <", source).encode()
            ), (tag, end)


@pytest.mark.parametrize(
    "html, expected",
    [
        # A lone surrogate is dropped after the pre-pass, as before: inside a tag name it
        # keeps the tag from counting as block-level (no space), elsewhere nothing changes.
        ("a<p\ud800>b</p>c", "ab c"),
        ("<div\ud800>a</div>b", "a b"),
        ("x\ud800<br>y", "x y"),
    ],
)
def test_lone_surrogates_keep_their_old_treatment(html: str, expected: str) -> None:
    assert html_to_text(html) == expected
    assert html_to_parts(html).text == expected


@pytest.mark.parametrize(
    "text",
    ["", " a \t b\n\r\nc  ", "\x00 a \x00", "a\x0bb \x0c c", "\x0b a \x0b", "e\xa0f\u3000g\u2009h  i",
     "中文 \n 文", "\U0001f600  x", " \x00\x0b"],
)
def test_bytes_whitespace_collapse_equals_the_text_one(text: str) -> None:
    assert html_text._collapse(text) == html_text._collapse_text(text)


@pytest.mark.parametrize(
    "shown",
    ["發", "plain text", " 中 文 ", "a\x0cb\x0bc\x01", "\ufeffx", "<b>bold</b> and <i>it", "x &amp; y &lt;",
     "a\r\nb\rc", "a\x00b", "a\ud800b"],
)
def test_variant_text_without_markup_skips_the_fragment_parse(shown: str) -> None:
    """The shortcut for plain variant text gives what parsing it as a fragment gives."""
    assert html_text._fragment_text(shown) == LexborHTMLParser(shown, is_fragment=True).text()


def test_threads_get_their_own_selector_engine() -> None:
    """Beam's SDK harness runs bundles in threads: each thread has its own lexbor selector."""
    expected = {name: html_to_text(page(name)) for name in PAGES}
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda name: (name, html_to_text(page(name))), PAGES * 4))
    assert all(text == expected[name] for name, text in got)
