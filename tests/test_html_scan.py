"""The one-pass scan of Parsoid pages (pipeline/method/html_scan.py) gives lexbor's text or refuses.

What a user checks: every real Parsoid page is read by the scan, with the same text as
the parse; a page whose tags the HTML parser would rearrange (text in a table outside its
cells, a <p> closed by a block, nested links, HTML inside MathML, ...) is never given a
different text: the scan refuses it and the parse reads it. Generated tag soup, seeded,
holds every such construct; on each document the scan's text is the parse's, or None.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path

import pytest

from clirmatrix.pipeline.method.html_scan import refusal, scan_text
from clirmatrix.pipeline.method.html_text import html_to_text, parsed_text

FIXTURES = Path(__file__).parent / "fixtures" / "html"


def real_pages() -> list[tuple[str, str]]:
    pages = []
    for path in sorted(FIXTURES.iterdir()):
        if path.suffix == ".ndjson":
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines()):
                pages.append((f"{path.name}:{number}", json.loads(line)["article_body"]["html"]))
        elif path.suffix == ".html":
            pages.append((path.name, path.read_text(encoding="utf-8")))
    return pages


@pytest.mark.parametrize(("name", "html"), real_pages(), ids=[name for name, _ in real_pages()])
def test_real_parsoid_pages_are_scanned_to_the_parsed_text(name: str, html: str) -> None:
    source = html.encode()
    assert refusal(source) is None, name
    text = scan_text(source)
    assert text == parsed_text(html) and len(text) > 100
    assert html_to_text(html) == text


def document(body: str, head: str = '<meta charset="utf-8"/><title>A &amp; B</title>') -> str:
    return f"<!DOCTYPE html>\n<html><head>{head}</head><body>{body}</body></html>"


# Pages whose text the scan gives (what it reads as Parsoid writes it).
ACCEPTED = {
    "blocks and removed elements": (
        '<p>Lead <b>bold</b><sup class="mw-ref reference"><a>[1]</a></sup>.</p><h2>Heading</h2>'
        '<div class="hatnote dablink">hat</div><table><tbody><tr><td>cell</td></tr></tbody></table>'
        '<ul><li>one</li><li>two<br/>three</li></ul><figure><figcaption>cap</figcaption></figure>',
        "Lead bold. one two three",
    ),
    "references and spaces": (
        "a&amp;b&lt;c&gt; &#160;x&#x2D;y &quot;q&apos; &#32;z\n\t<span>w</span>&nbsp;",
        "a&b<c> \u00a0x-y \"q' z w\u00a0",
    ),
    "a <p> closed by a block, and an empty one": ("<p>one<div>two</div>three</p>four</p>", "one two three four"),
    "a link in a table row goes before the table": (
        '<table><tr><td>x</td><link rel="mw-deduplicated-inline-style" href="mw-data:x"/></tr></table>after',
        "after",
    ),
    "MathML, self-closed": ('<math><semantics><mi>x</mi><mspace width="1em"/><mo>+</mo></semantics></math>', "x+"),
    "rel back-links": ('<span rel="mw:referencedBy"><a>↑</a></span>kept', "kept"),
    "style and comments": ("<style>.a<b{}</style><!-- <p>no</p> -->text", "text"),
}

# Pages the HTML parser rearranges or reads by rules the scan leaves to lexbor.
REFUSED = {
    "text in a table outside its cells": "<table><tr>fostered<td>x</td></tr></table>",
    "a lone < in a table outside its cells": "<table><tr> < <td>x</td></tr></table>",
    "a <p> closed with an element open in it": "<p><span>a<div>b</div>c</span></p>",
    "nested links": "<a>one<a>two</a></a>",
    "a heading in a heading": "<h2>a<h3>b</h3></h2>",
    "a list item in a list item": "<li>a<div><li>b</li></div></li>",
    "HTML in MathML": "<math><mi>x</mi><div>y</div></math>",
    "a </p> in SVG": "<svg><g>a</p>b</g></svg>c",
    "an unclosed element": "<div>a",
    "an upper-case tag": "<DIV>a</DIV>",
    "a self-closed div": "<div/>a",
    "a named reference not among the six": "a&hellip;b",
    "a reference without its semicolon": "a&amp b",
    "a numeric reference the parser maps": "a&#128;b",
    "a select": "<select><option>a</option></select>",
    "a script with a comment": "<script><!-- x --></script>",
    "a bogus comment": "<!x>a",
    "an entity in a class": '<div class="dab&#108;ink">a</div>',
}


@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_what_the_scan_reads(name: str) -> None:
    body, expected = ACCEPTED[name]
    html = document(body)
    assert scan_text(html.encode()) == expected == parsed_text(html)


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_what_the_scan_leaves_to_the_parser(name: str) -> None:
    html = document(REFUSED[name])
    assert scan_text(html.encode()) is None
    assert html_to_text(html) == parsed_text(html)


def test_documents_that_are_not_whole_pages_are_refused() -> None:
    assert refusal(b"<p>a fragment</p>") is not None
    assert refusal(document("x").replace("<head>", "<head>text").encode()) is not None
    assert refusal((document("x") + "<p>after the page</p>").encode()) is not None
    assert refusal(document("x").encode()[:-10]) is not None  # cut inside a tag
    assert refusal(document("x").encode()) is None


# --- generated tag soup -------------------------------------------------------------------------

INLINE = ("span", "a", "b", "i", "sup", "small", "abbr", "cite", "code", "bdi", "font", "u", "s", "q", "var")
BLOCK = ("div", "p", "section", "blockquote", "figure", "figcaption", "pre", "center", "nav", "header", "h2", "h3",
         "audio", "video", "address", "aside", "main", "footer", "output", "canvas", "fieldset")  # fmt: skip
RARE = ("form", "button", "ruby", "rt", "rp", "select", "textarea", "template", "noscript", "iframe", "nobr",
        "marquee", "object", "search", "details", "summary")  # fmt: skip
VOID = ("br", "img", "link", "meta", "hr", "wbr", "input", "source", "track", "col", "area", "embed")
CLASSES = ("reference", "mw-ref reference", "thumbcaption", "dablink hatnote", " dablink ", "\tdablink\n",
           "navigation-not-searchable", "autocollapse", "mw-editsection", "searchaux", "rellink",
           "wbmi-entityview-emptyCaption", "wbmi-entityview-emptycaption", "x reference", "mw-cite-backlink",
           "infobox", "Dablink")  # fmt: skip
TEXTS = ("foo", "bar baz", " ", "\n", "\r\n", "\t", "&amp;", "&lt;b&gt;", "&nbsp;", "&#160;", "&#32;", "&#x2D;",
         "&#13;", "&#10;", "a < b", "é漢字", "&quot;x&apos;", "&#x1F600;", "&#9;", "& b", "&#x10FFFD;")  # fmt: skip
ODD_TEXTS = ("&hellip;", "&amp", "AT&T", "&#0;", "&#128;", "&#xD800;", "&#65535;", "x\x0by", "x\x00y", "&AMP;",
             "&#x;", "&#1114112;", "x\x0cy", "&#11;")  # fmt: skip


class Soup:
    """Random pages: mostly well formed, as Parsoid writes them, with every kind of fault now and then."""

    def __init__(self, seed: int, fault: float) -> None:
        self.random = random.Random(seed)
        self.fault = fault

    def chance(self, p: float) -> bool:
        return self.random.random() < p

    def attributes(self) -> str:
        r = self.random
        parts = []
        if self.chance(0.5):
            quote = r.choice(('"', '"', "'"))
            parts.append(f"class={quote}{r.choice(CLASSES)}{quote}")
        if self.chance(0.1):
            parts.append(f'class="{r.choice(CLASSES)}"')  # a second class attribute is ignored
        if self.chance(0.1):
            parts.append(r.choice(('rel="mw:referencedBy"', "rel=mw:referencedBy", 'REL="mw:referencedBy"',
                                   'rel="mw:referencedBy x"', 'rel="nofollow"')))  # fmt: skip
        if self.chance(0.3):
            parts.append(r.choice(('data-mw=\'{"html":"<div class=\\"dablink\\">x</div>"}\'', 'title="a > b"',
                                   "id=mwAB", "typeof=mw:Transclusion", 'about="#mwt1"', "hidden",
                                   'style="x:y"', 'title="&quot;"', "a=b=c")))  # fmt: skip
        if self.chance(self.fault / 4):
            parts.append(r.choice(('class="a&amp;b"', "class", 'x="unclosed', "/ x", 'class="reference\fx"')))
        return "".join(" " + part for part in parts)

    def text(self) -> str:
        r = self.random
        return "".join(r.choice(ODD_TEXTS if self.chance(self.fault / 3) else TEXTS) for _ in range(r.randint(1, 3)))

    def element(self, depth: int, context: str = "flow") -> str:
        r = self.random
        if context == "table":
            return self.table(depth)
        if depth > 5 or self.chance(0.3):
            return self.text()
        roll = r.random()
        if roll < self.fault / 2:
            return r.choice(("<!-- c -->", "<!-->", "<!--x--!>", "<!x>", "<?x>", "</>", "</p>", "</br>",
                             "<DIV>u</DIV>", "<div/>", "<span/>", "<![CDATA[x]]>", "</span>", "<", "<3"))  # fmt: skip
        if roll < 0.08:
            return self.table(depth + 1)
        if roll < 0.13:
            return f"<{r.choice(VOID)}{self.attributes()}{r.choice(('/', ''))}>"
        if roll < 0.16:
            return self.foreign(depth + 1)
        if roll < 0.19:
            name = r.choice(("style", "script"))
            content = r.choice(("a<b", ".x{}", "</stylex>", "<!-- c -->", "x</STYLE >y"))
            return f"<{name}{self.attributes()}>{content}</{name}>"
        if roll < 0.25:
            ordered = r.choice(("ul", "ol", "dl"))
            item = "li" if ordered != "dl" else r.choice(("dd", "dt"))
            items = "".join(f"<{item}>{self.children(depth + 1)}</{item}>" for _ in range(r.randint(1, 3)))
            return f"<{ordered}{self.attributes()}>{items}</{ordered}>"
        if roll < 0.25 + self.fault:
            name = r.choice(RARE + ("li", "dd", "td", "tr", "caption", "col", "tbody", "h4", "title", "body"))
        elif roll < 0.6:
            name = r.choice(INLINE)
        else:
            name = r.choice(BLOCK)
        close = f"</{name}>"
        if self.chance(self.fault / 3):
            close = r.choice(("", f"</{name.upper()}>", "</p>", f"</{name} x>"))
        return f"<{name}{self.attributes()}>{self.children(depth + 1)}{close}"

    def children(self, depth: int) -> str:
        return "".join(self.element(depth) for _ in range(self.random.randint(0, 3)))

    def table(self, depth: int) -> str:
        r = self.random
        rows = []
        for _ in range(r.randint(1, 3)):
            cells = ""
            for _ in range(r.randint(1, 2)):
                cell = r.choice(("td", "th"))
                cells += f"<{cell}{self.attributes()}>{self.children(depth + 1)}</{cell}>"
            extra = ""
            if self.chance(self.fault):
                extra = r.choice(("fostered", " ", "<link rel=x/>", "<span>f</span>", "<style>s</style>", "<br>",
                                  "<meta/>", "&#32;", "<!-- c -->", "<", "a < b", "&lt;"))  # fmt: skip
            rows.append(f"<tr>{extra}{cells}</tr>")
        body = "".join(rows)
        if self.chance(0.5):
            body = f"<tbody>{body}</tbody>"
        caption = f"<caption>{self.text()}</caption>" if self.chance(0.2) else ""
        return f"<table{self.attributes()}>{caption}{body}</table>"

    def foreign(self, depth: int) -> str:
        r = self.random
        root = r.choice(("math", "svg"))
        inner = r.choice(("mi", "mo", "mtext", "semantics", "g", "path", "title", "annotation", "foreignObject"))
        content = self.text()
        if self.chance(self.fault):
            content = r.choice(("<div>x</div>", "<span>y</span>", "<style>s</style>", "<b>z</b>", "<mspace/>", "<a>k</a>",
                                "a</p>b", "<section>s</section>"))  # fmt: skip
        closing = r.choice((f"<{inner}>{content}</{inner}>", f"<{inner}/>", f"<{inner}>{content}</{inner.upper()}>"))
        return f"<{root}>{closing}</{root}>"

    def page(self) -> str:
        html = document("".join(self.element(0) for _ in range(self.random.randint(1, 6))))
        if self.chance(self.fault / 5):
            html = self.random.choice((html[:-7], html + "<p>x</p>", " \n" + html, html.replace("<head>", "<head>t"),
                                       html.replace("<!DOCTYPE html>", ""), html.replace("</head>", "</head><link/>")))  # fmt: skip
        return html


def soup_outcomes(seed: int, pages: int, fault: float) -> tuple[Counter, list[str]]:
    soup = Soup(seed, fault)
    outcomes: Counter = Counter()
    wrong = []
    for _ in range(pages):
        html = soup.page()
        text = scan_text(html.encode("utf-8", "surrogatepass"))
        if text is None:
            outcomes["refused"] += 1
        elif text == parsed_text(html):
            outcomes["same"] += 1
        else:
            wrong.append(html)
    return outcomes, wrong


@pytest.mark.parametrize(("seed", "fault"), [(1, 0.02), (2, 0.1), (3, 0.3)])
def test_generated_soup_is_read_as_the_parser_reads_it_or_refused(seed: int, fault: float) -> None:
    outcomes, wrong = soup_outcomes(seed, 600, fault)
    assert wrong == [], wrong[:3]
    assert outcomes["same"] >= 60, outcomes  # the scan reads a good part of it, faults and all
    assert outcomes["refused"] >= 60, outcomes
