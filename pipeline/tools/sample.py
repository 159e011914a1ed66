"""Deterministic sample dumps in the exact real formats, for the demo, tests and benchmarks.

One set of entities (Wikidata items) with articles in several languages and
scripts; each article is written from its entity's topic and name words in that
language's pseudo-vocabulary, so the same entity reads alike across languages and
BM25 finds related articles. As in real wikis, the Latin-script languages spell
some of a topic's words alike (names) and many nearly alike (cognates), so a title
shares words and word pieces with its articles in the other Latin-script languages;
the other scripts share none. Written as:

- ``en``, ``de``, ``es``, ``ru``, ``zh``, ``ja``: classic CirrusSearch ``.json.gz`` (action
  ``_type`` "page", "_doc" or none);
- ``ar``: the newer Hive layout, ``.json.bz2`` in two parts, with ``page_id`` and
  first-class redirect documents;
- ``fr``: a MediaWiki ``pages-articles.xml.bz2`` with templates, refs, tables,
  files, categories and redirects;
- Wikidata ``latest-all.json.gz`` in the dump's framing, PHP-style escapes,
  sister-project sitelinks, properties and lexemes.

With ``inputs="fresh"``, what Wikimedia publishes today instead: Enterprise HTML dumps
(tar.gz of NDJSON with Parsoid HTML), ``fr`` as a ``pages-articles-multistream`` XML
dump with its index and ``page_props``, and ``wb_items_per_site`` for the links.

Some pages are in other namespaces, some documents repeat an id, some pages
lack a Wikidata sitelink but carry ``wikibase_item``, and with ``broken=True``
each dump has one bad record (below the default 0.1% limit in a language of 1,000+ articles:
``build_flags`` gives the flags a smaller sample builds with).
"""

from __future__ import annotations

import bz2
import functools
import gzip
import io
import json
import random
import tarfile
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from clirmatrix.pipeline.settings import DEFAULT_SEED

DATE = "20240301"  # the classic inputs' date (CirrusSearch dumps stopped in 2025)
FRESH_DATE = "20261101"
CLASSIC, FRESH = "classic", "fresh"
INPUTS = (CLASSIC, FRESH)
DEFAULT_INPUTS = FRESH  # what Wikimedia publishes today; CLASSIC rebuilds past dates
TRUTH = "sample-truth.json"  # what the generator decided, beside the dumps
SCRIPTS = {
    "en": "latin", "de": "latin", "es": "latin", "fr": "latin", "ru": "cyrillic", "ar": "arabic", "zh": "han", "ja": "kana",
}
DEFAULT_LANGS = tuple(SCRIPTS)
_PRESENCE = {"en": 0.97, "de": 0.8, "es": 0.75, "fr": 0.75, "ru": 0.75, "ar": 0.7, "zh": 0.75, "ja": 0.7}
_ACTION_TYPES = {"en": "page", "de": "_doc", "es": None, "ru": None, "zh": "page", "ja": "_doc"}
_UNSPACED = {"zh", "ja"}
_STOP = {"zh": "。", "ja": "。", "ar": ".", "ru": ".", "en": ".", "de": ".", "es": ".", "fr": "."}

_LATIN_C = "b c d f g h k l m n p r s t v z br st tr ch".split()
_LATIN_V = "a e i o u ei au ie".split()
_CYR_C = list("бвгдзклмнпрстфхчш")
_CYR_V = list("аеиоуыя")
_AR_C = list("بتثجحخدذرزسشصضطظعغفقكلمنهوي")
_AR_V = ["ا", "و", "ي", ""]
_KANA = [chr(c) for c in range(0x30A2, 0x30F3)]

# Which kind of bad record each language's sample dump carries (with broken=True).
BROKEN_KIND_BY_LANG = {
    "en": "malformed_json", "de": "document_without_action", "es": "malformed_json", "ru": "missing_field", "zh": "action_without_document",
    "ja": "malformed_json", "ar": "missing_field",
}
BROKEN_WIKIDATA_KIND = "incomplete_line"  # the Wikidata dump's one bad line: an entity cut short

N_TOPICS = 24
WORDS_PER_TOPIC = 40
N_COMMON = 120


# How related the Latin-script languages' words are, as in real wikis: some of a topic's
# concepts are names, spelt alike in every Latin-script language; some are cognates, one
# root that each language spells with its own shift of one syllable (so English never
# shares the word, and two others seldom do, but they share most of their letters); the rest,
# and all common words, are each language's own. Other scripts spell every concept their own way.
NAME_SHARE = 0.15
COGNATE_SHARE = 0.45
# Each language's shift of a cognate's syllable: its consonant (where the map has it), then its vowel (always).
_SHIFTS: dict[str, tuple[dict[str, str], dict[str, str]]] = {
    "en": ({}, {}),  # the root itself
    "de": ({"c": "k", "v": "w", "ch": "sch", "z": "tz"}, {"a": "e", "e": "ei", "i": "ie", "o": "u", "u": "o", "ei": "ai", "au": "o", "ie": "i"}),
    "es": ({"k": "c", "v": "b", "ch": "c", "z": "s"}, {"a": "o", "e": "ie", "i": "e", "o": "ue", "u": "o", "ei": "e", "au": "o", "ie": "i"}),
    "fr": ({"k": "qu", "v": "f", "z": "s"}, {"a": "ai", "e": "eu", "i": "y", "o": "ou", "u": "eu", "ei": "ai", "au": "eau", "ie": "ieu"}),
}


def _syllables(rng: random.Random, consonants: list[str], vowels: list[str]) -> list[tuple[str, str]]:
    """A made-up word's 2 or 3 (consonant, vowel) syllables."""
    return [(rng.choice(consonants), rng.choice(vowels)) for _ in range(rng.choice((2, 2, 3)))]


def _shift(lang: str) -> tuple[dict[str, str], dict[str, str]]:
    """A Latin-script language's cognate shift; one not listed rotates the vowels by an offset of its own."""
    if lang in _SHIFTS:
        return _SHIFTS[lang]
    offset = 1 + sum(map(ord, lang)) % (len(_LATIN_V) - 1)
    return {}, {v: _LATIN_V[(i + offset) % len(_LATIN_V)] for i, v in enumerate(_LATIN_V)}


@functools.cache
def _word(lang: str, concept: int) -> str:
    """The word of a concept in a language: fixed per (language, concept)."""
    script = SCRIPTS.get(lang, "latin")
    if script == "latin" and concept >= N_COMMON:
        kind = random.Random(f"kind:{concept}").random()
        if kind < NAME_SHARE + COGNATE_SHARE:
            root = random.Random(f"root:{concept}")
            syllables = _syllables(root, _LATIN_C, _LATIN_V)
            if kind >= NAME_SHARE:
                at = root.randrange(len(syllables))
                consonants, vowels = _shift(lang)
                consonant, vowel = syllables[at]
                syllables[at] = (consonants.get(consonant, consonant), vowels.get(vowel, vowel))
            return "".join(c + v for c, v in syllables)
    rng = random.Random(f"{lang}:{concept}")
    if script == "han":
        return "".join(chr(0x4E00 + rng.randrange(0x5000)) for _ in range(rng.choice((1, 2, 2))))
    if script == "kana":
        return "".join(rng.choice(_KANA) for _ in range(rng.choice((2, 3))))
    consonants, vowels = {"latin": (_LATIN_C, _LATIN_V), "cyrillic": (_CYR_C, _CYR_V), "arabic": (_AR_C, _AR_V)}[script]
    salt = {"de": "sch", "fr": "eau"}.get(lang, "")
    syllables = [c + v for c, v in _syllables(rng, consonants, vowels)]
    if salt and rng.random() < 0.2:
        syllables.append(salt)
    return "".join(syllables)


@dataclass
class Entity:
    qid: str
    topic: int
    name_concepts: list[int]
    langs: list[str]
    titles: dict[str, str] = field(default_factory=dict)
    doc_ids: dict[str, str] = field(default_factory=dict)


@dataclass
class SampleWorld:
    """Everything the generator decided, so tests can check the extraction against it."""

    langs: tuple[str, ...]
    entities: list[Entity]
    missing_sitelinks: set[tuple[str, str]] = field(default_factory=set)  # (entity, lang) only in wikibase_item
    wrong_items: set[tuple[str, str]] = field(default_factory=set)  # (entity, lang) whose dump names another item
    bad_records: dict[str, str] = field(default_factory=dict)  # dump file name -> the kind of its one bad record

    def to_dict(self) -> dict:
        """The truth as JSON: what a build of these dumps must find (``sample-truth.json`` beside them)."""
        return {
            "langs": list(self.langs),
            "entities": {e.qid: {lang: {"page_id": e.doc_ids[lang], "title": e.titles[lang]} for lang in e.langs} for e in self.entities},
            "missing_sitelinks": sorted(map(list, self.missing_sitelinks)),
            "wrong_items": sorted(map(list, self.wrong_items)),
            "bad_records": dict(sorted(self.bad_records.items())),
        }


def _concept(topic: int, k: int) -> int:
    return N_COMMON + topic * WORDS_PER_TOPIC + k


def _title(lang: str, concepts: list[int]) -> str:
    words = [_word(lang, c) for c in concepts]
    if lang in _UNSPACED:
        return "".join(words)
    return " ".join(w[:1].upper() + w[1:] for w in words)


def _text(rng: random.Random, lang: str, entity: Entity) -> str:
    sentences = []
    for _ in range(rng.randint(6, 40)):
        words = []
        for _ in range(rng.randint(6, 16)):
            r = rng.random()
            if r < 0.35:
                concept = _concept(entity.topic, rng.randrange(WORDS_PER_TOPIC))
            elif r < 0.5:
                concept = rng.choice(entity.name_concepts)
            else:
                concept = rng.randrange(N_COMMON)
            words.append(_word(lang, concept))
        if lang in _UNSPACED:
            sentences.append("".join(words) + _STOP[lang])
        else:
            sentence = " ".join(words)
            sentences.append(sentence[:1].upper() + sentence[1:] + _STOP.get(lang, "."))
    return ("" if lang in _UNSPACED else " ").join(sentences)


def make_world(docs_per_lang: int = 2000, langs: tuple[str, ...] = DEFAULT_LANGS, seed: int = DEFAULT_SEED) -> SampleWorld:
    """Entities with their per-language titles and page ids."""
    rng = random.Random(seed)
    n_entities = int(docs_per_lang / 0.8)
    entities: list[Entity] = []
    used_titles: dict[str, set[str]] = {lang: set() for lang in langs}
    used_ids: dict[str, set[int]] = {lang: set() for lang in langs}
    for i in range(n_entities):
        topic = rng.randrange(N_TOPICS)
        names = [_concept(topic, rng.randrange(WORDS_PER_TOPIC)) for _ in range(rng.choice((1, 2, 2, 3)))]
        present = [lang for lang in langs if rng.random() < _PRESENCE.get(lang, 0.7)]
        entity = Entity(f"Q{1000 + i * 7}", topic, names, present)
        for lang in present:
            concepts = list(names)
            title = _title(lang, concepts)
            while title in used_titles[lang]:
                concepts.append(rng.randrange(N_COMMON, N_COMMON + N_TOPICS * WORDS_PER_TOPIC))
                title = _title(lang, concepts)
            used_titles[lang].add(title)
            entity.titles[lang] = title
            page_id = rng.randrange(10, 10 * n_entities)
            while page_id in used_ids[lang]:
                page_id = rng.randrange(10, 10 * n_entities)
            used_ids[lang].add(page_id)
            entity.doc_ids[lang] = str(page_id)
        entities.append(entity)
    world = SampleWorld(tuple(langs), entities)
    for entity in entities[5::97]:  # a few pages known only through the dump's wikibase_item
        for lang in entity.langs[:1]:
            world.missing_sitelinks.add((entity.qid, lang))
    return world


def _write_gzip(path: Path, data: bytes) -> None:
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as out:
        out.write(data)


def _names_other_item(entity: Entity) -> bool:
    return int(entity.qid[1:]) % 211 == 0


def _cirrus_document(rng: random.Random, lang: str, entity: Entity, with_page_id: bool) -> dict:
    text = _text(rng, lang, entity)
    document = {
        "version": 1000 + rng.randrange(10**6),
        "wiki": f"{lang}wiki",
        "namespace": 0,
        "namespace_text": "",
        "title": entity.titles[lang],
        "timestamp": "2024-02-27T10:00:00Z",
        "text": text,
        "opening_text": text.split(_STOP[lang])[0],
        "language": lang,
        "redirect": [],
        "incoming_links": rng.randrange(100),
        # A few pages whose dump names another item than Wikidata does: counted as disagreements.
        "wikibase_item": "Q42" if _names_other_item(entity) else entity.qid,
    }
    if with_page_id:
        document["page_id"] = int(entity.doc_ids[lang])
    return document


def _cirrus_lines(rng: random.Random, world: SampleWorld, lang: str, action_type: str | None, new_layout: bool, broken: bool) -> list[bytes]:
    lines: list[bytes] = []

    def action(doc_id: str) -> bytes:
        index = {"_id": doc_id} if action_type is None else {"_type": action_type, "_id": doc_id}
        return orjson.dumps({"index": index})

    members = [e for e in world.entities if lang in e.langs]
    world.wrong_items |= {(e.qid, lang) for e in members if _names_other_item(e)}
    for n, entity in enumerate(members):
        lines += [action(entity.doc_ids[lang]), orjson.dumps(_cirrus_document(rng, lang, entity, new_layout))]
        if n % 50 == 7:  # a project page: another namespace in the content dump
            lines += [action(str(900000 + n)), orjson.dumps({"namespace": 4, "title": f"Project:{n}", "text": "policy", "wiki": f"{lang}wiki"})]
        if new_layout and n % 60 == 11:  # a first-class redirect document
            lines += [
                action(str(950000 + n)),
                orjson.dumps({"namespace": 0, "title": f"{entity.titles[lang]} 2", "text": "", "page_type": "redirect", "redirect_target": entity.titles[lang]}),
            ]
        if n == 3:  # the same page twice: keep one
            lines += [action(entity.doc_ids[lang]), orjson.dumps(_cirrus_document(rng, lang, entity, new_layout))]
    if broken and len(lines) > 40:
        # One bad record per dump, its kind depending on the language, inserted between pairs.
        bad = {
            "malformed_json": [b'{"namespace":0,"title":"Broken","text":"cut off'],
            "document_without_action": [orjson.dumps({"namespace": 0, "title": "Orphan", "text": "no action line"})],
            "missing_field": [action("999999"), orjson.dumps({"namespace": 0, "title": "No text"})],
            "action_without_document": [action("999998")],
        }
        kind = BROKEN_KIND_BY_LANG.get(lang, "malformed_json")
        lines[20:20] = bad[kind]
        world.bad_records[lang] = kind
    return lines


def _xml_page(title: str, ns: int, page_id: str, text: str, redirect: str | None = None) -> str:
    from xml.sax.saxutils import escape, quoteattr

    redirect_element = f"    <redirect title={quoteattr(redirect)} />\n" if redirect else ""
    return (
        f"  <page>\n    <title>{escape(title)}</title>\n    <ns>{ns}</ns>\n    <id>{page_id}</id>\n{redirect_element}"
        f"    <revision>\n      <id>{int(page_id) * 3 + 1}</id>\n      <model>wikitext</model>\n      <format>text/x-wiki</format>\n"
        f'      <text bytes="{len(text.encode())}" xml:space="preserve">{escape(text)}</text>\n    </revision>\n  </page>\n'
    )


def _wikitext(rng: random.Random, lang: str, entity: Entity, world: SampleWorld) -> str:
    text = _text(rng, lang, entity)
    sentences = text.split(". ")
    other = rng.choice(world.entities)
    link = f"[[{other.titles[lang]}|{other.titles[lang].lower()}]]" if lang in other.titles else "lien"
    body = ". ".join(sentences[:3]) + f". Voir {link}.<ref>{{{{Lien web|url=http://x.org|titre=Source}}}}</ref> " + ". ".join(sentences[3:])
    return (
        f"{{{{Infobox Sujet|nom={entity.titles[lang]}}}}}\n'''{entity.titles[lang]}''' {body}\n"
        "== Notes ==\n{| class=\"wikitable\"\n|-\n| cellule || 42\n|}\n"
        f"[[Fichier:Image{entity.qid}.jpg|vignette|Légende]]\n<references />\n[[Catégorie:Sujet {entity.topic}]]\n"
    )


def _xml_dump(rng: random.Random, world: SampleWorld, lang: str, broken: bool) -> bytes:
    header = (
        '<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.11/" version="0.11" xml:lang="%s">\n'
        "  <siteinfo>\n    <sitename>Wikipédia</sitename>\n    <dbname>%swiki</dbname>\n    <namespaces>\n"
        '      <namespace key="0" case="first-letter" />\n      <namespace key="4" case="first-letter">Wikipédia</namespace>\n'
        '      <namespace key="6" case="first-letter">Fichier</namespace>\n      <namespace key="10" case="first-letter">Modèle</namespace>\n'
        '      <namespace key="14" case="first-letter">Catégorie</namespace>\n    </namespaces>\n  </siteinfo>\n'
    ) % (lang, lang)
    pages = []
    for n, entity in enumerate(e for e in world.entities if lang in e.langs):
        pages.append(_xml_page(entity.titles[lang], 0, entity.doc_ids[lang], _wikitext(rng, lang, entity, world)))
        if n % 40 == 5:
            pages.append(_xml_page(f"{entity.titles[lang]} (homonymie)", 0, str(800000 + n), f"#REDIRECTION [[{entity.titles[lang]}]]", redirect=entity.titles[lang]))
        if n % 50 == 9:
            pages.append(_xml_page(f"Modèle:Boîte {n}", 10, str(850000 + n), "{{{1}}}"))
    if broken:
        world.bad_records[lang] = "missing_field"
        pages.insert(len(pages) // 2, "  <page>\n    <title>Sans identifiant</title>\n    <ns>0</ns>\n    <revision><text>texte</text></revision>\n  </page>\n")
    return (header + "".join(pages) + "</mediawiki>\n").encode()


def _php_json(value: dict) -> str:
    """JSON as PHP json_encode writes it with flags 0: ASCII only, ``\\/`` escaped."""
    return json.dumps(value, ensure_ascii=True, separators=(",", ":")).replace("/", "\\/")


def _wikidata_dump(world: SampleWorld, broken: bool) -> bytes:
    lines = [_php_json({"type": "property", "datatype": "wikibase-item", "id": "P31", "labels": {"en": {"language": "en", "value": "instance of"}}, "claims": {}, "lastrevid": 7})]
    for entity in world.entities:
        sitelinks = {}
        for lang in entity.langs:
            if (entity.qid, lang) in world.missing_sitelinks:
                continue
            sitelinks[f"{lang}wiki"] = {"site": f"{lang}wiki", "title": entity.titles[lang], "badges": []}
        if "en" in entity.langs and int(entity.qid[1:]) % 3 == 0:
            sitelinks["enwikiquote"] = {"site": "enwikiquote", "title": entity.titles["en"] + " quotes", "badges": []}
            sitelinks["commonswiki"] = {"site": "commonswiki", "title": "Category:" + entity.titles["en"], "badges": []}
        labels = {lang: {"language": lang, "value": entity.titles[lang]} for lang in entity.langs}
        lines.append(
            _php_json(
                {
                    "type": "item", "id": entity.qid, "labels": labels, "descriptions": {}, "aliases": {},
                    "claims": {"P31": [{
                        "mainsnak": {"snaktype": "value", "property": "P31", "datavalue": {"value": {"entity-type": "item", "numeric-id": 5, "id": "Q5"}, "type": "wikibase-entityid"}},
                        "type": "statement", "id": f"{entity.qid}$a/b", "rank": "normal",
                    }]},
                    "sitelinks": sitelinks, "lastrevid": 100 + int(entity.qid[1:]),
                }
            )
        )
    lines.append(_php_json({"type": "lexeme", "id": "L1", "lemmas": {"en": {"language": "en", "value": "enwiki"}}, "lexicalCategory": "Q1084", "language": "Q1860", "claims": {}, "lastrevid": 9}))
    if broken:
        lines.insert(len(lines) // 2, '{"type":"item","id":"Q99999999","sitelinks":{"enwiki":{"site":"enwiki","title":"Cut')
    return ("[\n" + ",\n".join(lines) + "\n]\n").encode()


def _html_escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _parsoid_html(rng: random.Random, lang: str, entity: Entity, world: SampleWorld) -> str:
    """An article as Parsoid renders it: sections, an infobox, references, a figure, a navbox (what the text extraction drops)."""
    title = _html_escape(entity.titles[lang])
    sentences = [_html_escape(sentence) for sentence in _text(rng, lang, entity).split(_STOP[lang]) if sentence.strip()]
    stop = _STOP[lang]
    lead = stop.join(sentences[:3]) + stop
    rest = stop.join(sentences[3:]) + stop if sentences[3:] else ""
    other = rng.choice(world.entities)
    link = f'<a rel="mw:WikiLink" href="./{_html_escape(other.titles[lang])}">{_html_escape(other.titles[lang])}</a>' if lang in other.titles else "x"
    ref = '<sup about="#mwt3" class="mw-ref reference" id="cite_ref-1" rel="dc:references" typeof="mw:Extension/ref"><a href="./T#cite_note-1"><span class="mw-reflink-text">[1]</span></a></sup>'
    return (
        '<!DOCTYPE html>\n<html prefix="dc: http://purl.org/dc/terms/ mw: http://mediawiki.org/rdf/" '
        f'about="https://{lang}.wikipedia.org/wiki/Special:Redirect/revision/{int(entity.doc_ids[lang]) * 3 + 1}">'
        f'<head prefix="mwr: https://{lang}.wikipedia.org/wiki/Special:Redirect/"><meta charset="utf-8"/><title>{title}</title>'
        '<link rel="stylesheet" href="/w/load.php?modules=mediawiki.skinning.content.parsoid"/></head>'
        f'<body id="mwAA" lang="{lang}" class="mw-content-ltr sitedir-ltr ltr mw-body-content parsoid-body mediawiki mw-parser-output" dir="ltr">'
        '<section data-mw-section-id="0" id="mwAQ">'
        f'<table class="infobox" about="#mwt1" typeof="mw:Transclusion"><tbody><tr><th>{title}</th></tr><tr><td>Infobox {entity.qid}</td></tr></tbody></table>'
        f'<p id="mwAg"><b>{title}</b> {lead} {link}{ref}</p></section>'
        '<section data-mw-section-id="1" id="mwBQ"><h2 id="Notes">Notes</h2>'
        f'<figure typeof="mw:File/Thumb"><a href="./File:{entity.qid}.jpg" class="mw-file-description"><img src="//upload.wikimedia.org/x.jpg"/></a>'
        f'<figcaption>Caption {entity.qid}</figcaption></figure>'
        f'<p>{rest}</p>'
        '<div class="mw-references-wrap" typeof="mw:Extension/references"><ol class="mw-references references"><li about="#cite_note-1" id="cite_note-1">'
        '<span class="mw-cite-backlink"><a href="./T#cite_ref-1">↑</a></span> <span id="mw-reference-text-cite_note-1" class="mw-reference-text">Source</span></li></ol></div>'
        f'<div role="navigation" class="navbox" about="#mwt9" typeof="mw:Transclusion"><table class="nowraplinks"><tbody><tr><th>Navbox topic {entity.topic}</th></tr>'
        '</tbody></table></div></section></body></html>'
    )


def _enterprise_record(rng: random.Random, lang: str, entity: Entity, world: SampleWorld) -> dict:
    page_id = int(entity.doc_ids[lang])
    return {
        "name": entity.titles[lang],
        "identifier": page_id,
        "date_modified": "2026-11-01T08:00:00Z",
        "version": {"identifier": page_id * 3 + 1, "comment": "", "is_minor_edit": False},
        "url": f"https://{lang}.wikipedia.org/wiki/{entity.titles[lang].replace(' ', '_')}",
        "namespace": {"identifier": 0},
        "in_language": {"identifier": lang},
        # A few pages whose record names another item than Wikidata does: counted as disagreements.
        "main_entity": {"identifier": "Q42" if _names_other_item(entity) else entity.qid, "url": f"https://www.wikidata.org/entity/{entity.qid}"},
        "is_part_of": {"identifier": f"{lang}wiki"},
        "article_body": {"html": _parsoid_html(rng, lang, entity, world), "wikitext": _wikitext(rng, lang, entity, world)},
        "license": [{"name": "Creative Commons Attribution Share Alike 4.0", "identifier": "CC-BY-SA-4.0", "url": "https://creativecommons.org/licenses/by-sa/4.0/"}],
    }


def _html_dump(rng: random.Random, world: SampleWorld, lang: str, broken: bool) -> bytes:
    """An Enterprise HTML dump: a tar.gz of two NDJSON members, as ``{wiki}-NS0-{date}-ENTERPRISE-HTML.json.tar.gz``."""
    members = [e for e in world.entities if lang in e.langs]
    world.wrong_items |= {(e.qid, lang) for e in members if _names_other_item(e)}
    lines = [orjson.dumps(_enterprise_record(rng, lang, entity, world)) for entity in members]
    lines.insert(3, lines[3])  # the same page twice (the real dumps repeat some): keep one
    if broken:
        lines.insert(20, b'{"name":"Broken","identifier":99999,"article_body":{"html":"<p>cut')
        world.bad_records[lang] = "malformed_json"
    half = len(lines) // 2
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb", mtime=0, filename="") as zipped, tarfile.open(fileobj=zipped, mode="w|", format=tarfile.GNU_FORMAT) as archive:
        for number, chunk in enumerate((lines[:half], lines[half:])):
            data = b"\n".join(chunk) + b"\n"
            info = tarfile.TarInfo(f"{lang}wiki_namespace_0_{number}.ndjson")
            info.size, info.mtime, info.mode = len(data), 1_730_000_000, 0o644
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def _multistream(xml: bytes, pages_per_stream: int = 100) -> tuple[bytes, bytes]:
    """``pages-articles-multistream.xml.bz2`` and its index: the header, every 100 pages and the footer in their own bz2 streams."""
    head, _, rest = xml.partition(b"  <page>")
    pages = [b"  <page>" + page for page in rest.split(b"  <page>")]
    pages[-1], footer = pages[-1].split(b"</mediawiki>")[0], b"</mediawiki>\n"
    streams, index, offset = [bz2.compress(head)], [], 0
    offset = len(streams[0])
    for start in range(0, len(pages), pages_per_stream):
        chunk = pages[start : start + pages_per_stream]
        for page in chunk:
            page_id = page.split(b"<id>", 1)[1].split(b"</id>", 1)[0].decode() if b"<id>" in page else "0"
            title = page.split(b"<title>", 1)[1].split(b"</title>", 1)[0].decode()
            index.append(f"{offset}:{page_id}:{title}")
        streams.append(bz2.compress(b"".join(chunk)))
        offset += len(streams[-1])
    streams.append(bz2.compress(footer))
    return b"".join(streams), bz2.compress(("\n".join(index) + "\n").encode())


def _sql_string(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _sql_dump(table: str, columns: str, rows: list[str], rows_per_insert: int = 500) -> bytes:
    """A table as mysqldump writes it for the dumps site: header, CREATE TABLE, multi-row INSERTs, trailer."""
    inserts = [f"INSERT INTO `{table}` VALUES " + ",".join(rows[i : i + rows_per_insert]) + ";" for i in range(0, len(rows), rows_per_insert)]
    return (
        "-- MySQL dump 10.19  Distrib 10.3.39-MariaDB, for debian-linux-gnu (x86_64)\n--\n-- Host: 10.64.0.1    Database: wikidatawiki\n"
        "-- ------------------------------------------------------\n-- Server version\t10.6.17-MariaDB-log\n\n"
        "/*!40101 SET @OLD_CHARACTER_SET_CLIENT=@@CHARACTER_SET_CLIENT */;\n/*!40101 SET NAMES utf8mb4 */;\n\n"
        f"--\n-- Table structure for table `{table}`\n--\n\nDROP TABLE IF EXISTS `{table}`;\n"
        f"CREATE TABLE `{table}` (\n{columns}\n) ENGINE=InnoDB DEFAULT CHARSET=binary;\n\n"
        f"--\n-- Dumping data for table `{table}`\n--\n\n/*!40000 ALTER TABLE `{table}` DISABLE KEYS */;\n"
        + "\n".join(inserts)
        + f"\n/*!40000 ALTER TABLE `{table}` ENABLE KEYS */;\n\n/*!40101 SET CHARACTER_SET_CLIENT=@OLD_CHARACTER_SET_CLIENT */;\n\n"
        "-- Dump completed on 2026-11-02  4:12:31\n"
    ).encode()


def _items_per_site_dump(world: SampleWorld) -> bytes:
    """``wikidatawiki-{date}-wb_items_per_site.sql.gz``: the sitelinks of every entity, Wikipedias and sister projects."""
    rows = []
    for entity in world.entities:
        sites = [(f"{lang}wiki", entity.titles[lang]) for lang in entity.langs if (entity.qid, lang) not in world.missing_sitelinks]
        if "en" in entity.langs and int(entity.qid[1:]) % 3 == 0:
            sites += [("enwikiquote", entity.titles["en"] + " quotes"), ("commonswiki", "Category:" + entity.titles["en"])]
        rows += [f"({len(rows) + n + 1},{entity.qid[1:]},{_sql_string(site)},{_sql_string(title)})" for n, (site, title) in enumerate(sorted(sites))]
    columns = (
        "  `ips_row_id` bigint(20) unsigned NOT NULL AUTO_INCREMENT,\n  `ips_item_id` int(10) unsigned NOT NULL,\n"
        "  `ips_site_id` varbinary(32) NOT NULL,\n  `ips_site_page` varbinary(310) NOT NULL,\n  PRIMARY KEY (`ips_row_id`)"
    )
    return _sql_dump("wb_items_per_site", columns, rows)


def _page_props_dump(world: SampleWorld, lang: str) -> bytes:
    """``{wiki}-{date}-page_props.sql.gz``: each article's ``wikibase_item`` among other properties."""
    rows = []
    for entity in sorted((e for e in world.entities if lang in e.langs), key=lambda e: int(e.doc_ids[lang])):
        page = entity.doc_ids[lang]
        rows += [f"({page},'page_image_free',{_sql_string(entity.qid + '.jpg')},NULL)", f"({page},'wikibase_item',{_sql_string(entity.qid)},NULL)"]
    columns = "  `pp_page` int(10) unsigned NOT NULL,\n  `pp_propname` varbinary(60) NOT NULL,\n  `pp_value` blob NOT NULL,\n  `pp_sortkey` float DEFAULT NULL"
    return _sql_dump("page_props", columns, rows)


def write_sample_dumps(
    out_dir: str | Path, docs_per_lang: int = 2000, langs: tuple[str, ...] = DEFAULT_LANGS, seed: int = DEFAULT_SEED, broken: bool = True, inputs: str = DEFAULT_INPUTS
) -> SampleWorld:
    """Write the sample dumps for ``langs`` into ``out_dir``; returns what was generated.

    ``inputs`` FRESH (the default) writes what Wikimedia publishes today: Enterprise HTML
    dumps (``fr`` as a multistream XML dump with its page_props), and ``wb_items_per_site``
    for the links; CLASSIC writes the 2020 paper's inputs (CirrusSearch dumps, which
    stopped in 2025, and the Wikidata JSON dump), for rebuilding past dates.
    """
    if inputs not in INPUTS:
        raise ValueError(f"inputs must be one of {INPUTS}, not {inputs!r}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    world = make_world(docs_per_lang, langs, seed)
    if inputs == FRESH:
        _write_fresh(out, world, seed, broken)
    else:
        _write_classic(out, world, seed, broken)
    truth = {**world.to_dict(), "settings": sample_settings(docs_per_lang, langs, seed, broken, inputs)}
    (out / TRUTH).write_text(json.dumps(truth, ensure_ascii=False, indent=1) + "\n")
    return world


def _write_fresh(out: Path, world: SampleWorld, seed: int, broken: bool) -> None:
    for lang in world.langs:
        rng = random.Random(f"{seed}:{lang}")
        if lang == "fr":
            dump, index = _multistream(_xml_dump(rng, world, lang, broken))
            (out / f"frwiki-{FRESH_DATE}-pages-articles-multistream.xml.bz2").write_bytes(dump)
            (out / f"frwiki-{FRESH_DATE}-pages-articles-multistream-index.txt.bz2").write_bytes(index)
            _write_gzip(out / f"frwiki-{FRESH_DATE}-page_props.sql.gz", _page_props_dump(world, lang))
        else:
            (out / f"{lang}wiki-NS0-{FRESH_DATE}-ENTERPRISE-HTML.json.tar.gz").write_bytes(_html_dump(rng, world, lang, broken))
    _write_gzip(out / f"wikidatawiki-{FRESH_DATE}-wb_items_per_site.sql.gz", _items_per_site_dump(world))


def _write_classic(out: Path, world: SampleWorld, seed: int, broken: bool) -> None:
    langs = world.langs
    for lang in langs:
        rng = random.Random(f"{seed}:{lang}")
        if lang == "fr":
            (out / f"frwiki-{DATE}-pages-articles.xml.bz2").write_bytes(bz2.compress(_xml_dump(rng, world, lang, broken)))
        elif lang == "ar":
            lines = _cirrus_lines(rng, world, lang, None, new_layout=True, broken=broken)
            part_dir = out / "cirrus_search_index" / DATE / f"index_name={lang}wiki_content"
            part_dir.mkdir(parents=True, exist_ok=True)
            half = (len(lines) // 4) * 2  # keep action/document pairs together
            for part, chunk in enumerate((lines[:half], lines[half:])):
                (part_dir / f"{lang}wiki_content-{DATE}-{part:05d}.json.bz2").write_bytes(bz2.compress(b"\n".join(chunk) + b"\n"))
            (part_dir / "_SUCCESS").write_bytes(b"")
        else:
            lines = _cirrus_lines(rng, world, lang, _ACTION_TYPES.get(lang, "_doc"), new_layout=False, broken=broken)
            _write_gzip(out / f"{lang}wiki-{DATE}-cirrussearch-content.json.gz", b"\n".join(lines) + b"\n")
    _write_gzip(out / "latest-all.json.gz", _wikidata_dump(world, broken))
    if broken:
        world.bad_records["wikidata"] = BROKEN_WIKIDATA_KIND


def sample_settings(docs_per_lang: int, langs: tuple[str, ...], seed: int, broken: bool, inputs: str = DEFAULT_INPUTS) -> dict:
    """What a sample is made from, as ``sample-truth.json`` records it: the same settings write the same bytes."""
    return {"docs_per_lang": docs_per_lang, "langs": list(langs), "seed": seed, "broken": broken, "inputs": inputs}


def written_settings(out_dir: str | Path) -> dict | None:
    """The settings of the sample in ``out_dir`` (from its ``sample-truth.json``), or None when it holds none."""
    try:
        settings = json.loads((Path(out_dir) / TRUTH).read_text(encoding="utf-8")).get("settings")
        return {"inputs": CLASSIC, **settings}  # samples written before --inputs were classic
    except (OSError, ValueError, AttributeError, TypeError):
        return None


def build_flags(world: SampleWorld, broken: bool = True) -> list[str]:
    """The ``clirmatrix build`` flags these dumps need beyond the defaults: ``--min-docs`` at most the smallest language's
    articles (the default 10,000 would drop every language), and with ``broken`` a ``--max-bad-fraction`` that its one bad
    record per dump stays within (the default 0.1% needs 1,000 records; a language has at least its articles)."""
    smallest = min(sum(lang in entity.langs for entity in world.entities) for lang in world.langs)
    flags = ["--min-docs", str(next(n for n in (1000, 500, 200, 100, 50, 20, 10, 1) if n <= max(smallest, 1)))]
    if broken and smallest < 1000:
        fraction = next((f for f in (0.002, 0.005, 0.01, 0.02, 0.05, 0.1) if f * smallest >= 1), 1.0)
        flags += ["--max-bad-fraction", f"{fraction:g}"]
    return flags


# --- one large language, for the scale benchmark -----------------------------------------------

SCALE_DOCS_PER_TOPIC = 2_000  # topics grow with the language, so a title's terms stay about as rare
_NAMES_PER_TOPIC = WORDS_PER_TOPIC + WORDS_PER_TOPIC**2 + WORDS_PER_TOPIC**3  # distinct 1-3 word names


def _scale_entity(index: int, docs: int, partner: str, partner_docs: int) -> Entity:
    """Entity ``index`` of a large world: its topic, a name no other entity of the topic has, and its languages."""
    topics = max(N_TOPICS, -(-docs // SCALE_DOCS_PER_TOPIC))
    topic, rank = index % topics, index // topics
    code = (rank * 7919) % _NAMES_PER_TOPIC  # a distinct name per rank (7919 is prime to the count)
    words = 1 if code < WORDS_PER_TOPIC else 2 if code < WORDS_PER_TOPIC + WORDS_PER_TOPIC**2 else 3
    code -= sum(WORDS_PER_TOPIC**w for w in range(1, words))
    names = [_concept(topic, (code // WORDS_PER_TOPIC**w) % WORDS_PER_TOPIC) for w in range(words)]
    langs = ["en"] + ([partner] if (index * 2654435761) % docs < partner_docs else [])
    entity = Entity(f"Q{1000 + index}", topic, names, langs)
    for lang in langs:
        entity.titles[lang] = _title(lang, names)
        entity.doc_ids[lang] = str(10 + 3 * index if lang == "en" else 7 + 5 * index)
    return entity


def _write_scale_part(job: tuple[str, str, int, int, int, str, int, int]) -> int:
    path, lang, first, last, docs, partner, partner_docs, seed = job
    written = 0
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="", compresslevel=6) as out:
        for index in range(first, last):
            entity = _scale_entity(index, docs, partner, partner_docs)
            if lang not in entity.langs:
                continue
            rng = random.Random(f"{seed}:{lang}:{index}")
            out.write(orjson.dumps({"index": {"_id": entity.doc_ids[lang]}}) + b"\n")
            out.write(orjson.dumps(_cirrus_document(rng, lang, entity, with_page_id=True)) + b"\n")
            written += 1
    return written


def _write_scale_wikidata(job: tuple[str, int, str, int]) -> int:
    path, docs, partner, partner_docs = job
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as out:
        out.write(b"[\n")
        for index in range(docs):
            entity = _scale_entity(index, docs, partner, partner_docs)
            sitelinks = {f"{lang}wiki": {"site": f"{lang}wiki", "title": entity.titles[lang], "badges": []} for lang in entity.langs}
            line = _php_json({"type": "item", "id": entity.qid, "sitelinks": sitelinks, "lastrevid": 100 + index})
            out.write(line.encode() + (b",\n" if index < docs - 1 else b"\n"))
        out.write(b"]\n")
    return docs


def write_scale_dumps(out_dir: str | Path, docs: int, partner: str = "de", partner_docs: int = 20_000, parts: int = 8, seed: int = DEFAULT_SEED, processes: int = 2) -> dict[str, int]:
    """A large English dump of ``docs`` articles (Hive layout, ``parts`` gzip parts) with a small ``partner`` language.

    The same vocabulary and article text as the sample dumps, with as many topics as
    it takes to keep ~2,000 articles a topic, so a title's terms stay about as rare
    whatever the size (``SCALE_DOCS_PER_TOPIC``). Parts are written in parallel;
    the dumps depend only on the arguments. Returns the articles per language.
    """
    import multiprocessing

    out = Path(out_dir)
    en_dir = out / "cirrus_search_index" / DATE / "index_name=enwiki_content"
    en_dir.mkdir(parents=True, exist_ok=True)
    per_part = -(-docs // parts)
    jobs = [(str(en_dir / f"enwiki_content-{DATE}-{part:05d}.json.gz"), "en", part * per_part, min(docs, (part + 1) * per_part), docs, partner, partner_docs, seed) for part in range(parts)]
    jobs.append((str(out / f"{partner}wiki-{DATE}-cirrussearch-content.json.gz"), partner, 0, docs, docs, partner, partner_docs, seed))
    with multiprocessing.Pool(processes) as pool:
        wikidata = pool.apply_async(_write_scale_wikidata, ((str(out / "latest-all.json.gz"), docs, partner, partner_docs),))
        counts = pool.map(_write_scale_part, jobs)
        wikidata.get()
    return {"en": sum(counts[:-1]), partner: counts[-1]}
