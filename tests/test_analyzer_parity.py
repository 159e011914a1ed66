"""Every analyzer chain against Lucene itself, token for token, on real text (issue 15).

Elasticsearch 8 builds each chain of ``Analyzer.spec`` from Lucene 9 classes; the Java
harness ``bench/support/java/LuceneAnalyze.java`` builds the same classes from the same spec (Lucene
9.9.1 from the Anserini jar, see ``support.lucene_jar``), and one JVM analyzes every text below
through every chain. Without a JDK 21+ the Lucene tests skip and say why.

Texts: the real samples in shared/fixtures (Wikidata labels, descriptions, aliases and
titles in ~200 languages, a CirrusSearch page), the sample dumps of
``clirmatrix sample`` (all their formats), ``SNOWBALL_WORDS`` and a few edge cases.
Run as a script it prints agreement per language (docs/analyzers.md):

    python tests/test_analyzer_parity.py [--gettext]
"""

from __future__ import annotations

import argparse
import bz2
import gzip
import importlib.metadata
import json
import random
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import FIXTURES, REPO, real_fixture
from support import lucene_jar

from clirmatrix.pipeline.engines import analyzers as an

# Real words (from the gettext catalogs of a Debian machine) that Lucene 9's Snowball
# stems unlike PyStemmer 3.1 (Snowball 3.1) or unlike PyStemmer 2.2's plain german:
# without them the fixtures' few words per language might not tell the releases apart.
SNOWBALL_WORDS: dict[str, str] = {
    "da": "succes lecce",
    "de": "verwendet paket erwartet parameter beendet system pakete geöffnet socket offset ermitteln widget "
    "aktuellen aktuelle aktuell values daemon zuerst manuell aktueller quelle bequem straße fußball",
    "en": "internal adding added interval international paste universal intervals lateral emergency internally organization",
    "et": "argument asukoht context dokument sihtpunkt saint start unit element print päist convert",
    "fi": "python kachin bangladeshin bashin lesothon hakupuuhun orkhon",
    "fr": "mauvais malais française françaises nias néerlandaise portugaise islandaise libanaise népalaise pakistanaise albanaise",
    "lt": "berberų serverį buferyje farerų kompiuteryje serveryje šumerų hererų konteineryje buferį konteinerį konvejeryje",
    "nl": "huizen lichamelijk opheffen bedrijven gevoelige",
    "no": "tasters etterkommers tvers overs pakkers servers steppers",
    "ro": "informații lipsește stabilește fişier informațiile folosește utilizați potrivește fişierul aplicație încercați eşuat",
    "es": "iteracion reubicacion",
    "sv": "arkivet paketet indexet antalet angivet slutet tillåtet formatet systemet resultatet skrivet målet",
    "yi": "עטיקעט אַקטיװיטעט באַאַרבעטן קװאַליטעט אַרבעט עטיקעטן דיסקרעטע צעפּלאָשעטע געבן דורכבלעטער דיסקרעטער כּמעט",
}

# Corner cases of the tokenizers, the length filter and lowercasing.
EDGE_TEXTS = [
    "𠀀𠀁中 北京大学 水 東京都のCAFE ภาษาไทย 한국어 ພາສາລາວ",
    "İSTANBUL ΟΔΟΣ ΣΑΣ ς ẞ Ǆ",
    "a " + "b" * 255 + " " + "c" * 256 + " " + "𝐀" * 128,
    "l'été 3.14 e-mail_adresse",
]


@dataclass(frozen=True)
class Text:
    source: str
    lang: str
    text: str


def _wikidata_entity_texts(entity: dict) -> Iterable[tuple[str, str]]:
    for key in ("labels", "descriptions"):
        for lang, value in (entity.get(key) or {}).items():
            yield lang, value["value"]
    for lang, values in (entity.get("aliases") or {}).items():
        for value in values:
            yield lang, value["value"]
    for site, link in (entity.get("sitelinks") or {}).items():
        if site.endswith("wiki"):  # a Wikipedia; sister projects have other suffixes
            yield site[: -len("wiki")].replace("_", "-"), link["title"]


def fixture_texts(fixtures: Path = FIXTURES) -> list[Text]:
    """The real text in shared/fixtures: Wikidata entities and a CirrusSearch page."""
    texts: list[Text] = []
    for path in sorted((fixtures / "wikidata").glob("wdtk_*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        entities = data["entities"].values() if isinstance(data, dict) else data
        texts += [Text(path.name, lang, text) for entity in entities for lang, text in _wikidata_entity_texts(entity)]
    page = json.loads((fixtures / "cirrussearch" / "dataSender_sendData-request-defaults.config.json").read_text(encoding="utf-8"))
    for document in page["documents"]:
        data = document["data"]
        texts += [Text("cirrussearch", "en", data[key]) for key in ("title", "text", "source_text", "opening_text") if data.get(key)]
    return texts


def sample_dump_texts(docs_per_lang: int = 50) -> list[Text]:
    """Titles and texts of ``clirmatrix sample`` dumps (CirrusSearch JSON, Hive JSON, XML, Wikidata)."""
    from clirmatrix.pipeline.tools.sample import write_sample_dumps

    texts: list[Text] = []
    with tempfile.TemporaryDirectory() as tmp:
        write_sample_dumps(tmp, docs_per_lang=docs_per_lang, broken=False, inputs="classic")
        for path in sorted(Path(tmp).rglob("*")):
            opener = gzip.open if path.suffix == ".gz" else bz2.open if path.suffix == ".bz2" else None
            if opener is None:
                continue
            lang = path.name.split("wiki")[0]  # enwiki-..., arwiki_content-..., frwiki-...
            with opener(path, "rt", encoding="utf-8") as lines:
                if ".xml" in path.name:
                    texts += [Text("sample xml", lang, e.text) for e in ET.parse(lines).iter() if e.tag.rsplit("}", 1)[-1] == "text" and e.text]
                elif path.name.startswith("latest-all"):
                    for line in lines:
                        line = line.strip().rstrip(",")
                        if line.startswith("{"):
                            texts += [Text("sample wikidata", code, t) for code, t in _wikidata_entity_texts(json.loads(line))]
                else:
                    for line in lines:
                        document = json.loads(line)
                        if "text" in document:
                            texts += [Text("sample cirrus", lang, document["title"]), Text("sample cirrus", lang, document["text"])]
    return texts


def gettext_texts(root: Path = Path("/usr/share/locale")) -> list[Text]:
    """Every translation in this machine's gettext catalogs (for the survey; not used by the tests)."""
    import gettext

    locale_lang = {"nb": "no", "nb_NO": "no", "sr@latin": "sh", "sr@Latn": "sh"}
    texts: list[Text] = []
    for folder in sorted(root.glob("*/LC_MESSAGES")):
        name = folder.parent.name
        lang = locale_lang.get(name, re.split(r"[_@]", name)[0])
        for path in sorted(folder.glob("*.mo")):
            try:
                with open(path, "rb") as mo:
                    catalog = gettext.GNUTranslations(mo)._catalog  # type: ignore[attr-defined]
            except Exception:  # noqa: BLE001 - gettext raises many kinds on a catalog it cannot read: skip it
                continue
            for key, value in catalog.items():
                if name == "de" and isinstance(key, str) and key:
                    texts.append(Text("gettext", "en", key))  # the English originals, once
                if key and lang != "en" and isinstance(value, str) and value.strip():
                    texts.append(Text("gettext", lang, value))
    return texts


def lucene_tokens(chains: list[an.Analyzer], requests: list[tuple[str, list[int] | None]]) -> list[list[list[str]]]:
    """Lucene's tokens of each (text, chain indices or None for all), from one JVM."""
    lines = [json.dumps({"chains": [chain.spec for chain in chains]})]
    lines += [json.dumps({"text": text} if which is None else {"text": text, "chains": which}) for text, which in requests]
    done = subprocess.run(lucene_jar.java_command("LuceneAnalyze"), input=("\n".join(lines) + "\n").encode("ascii"), capture_output=True)
    if done.returncode:
        raise RuntimeError(f"LuceneAnalyze failed:\n{done.stderr.decode(errors='replace')[-3000:]}")
    answers = [json.loads(line) for line in done.stdout.decode("ascii").splitlines()]
    assert len(answers) == len(requests), f"{len(answers)} answers to {len(requests)} texts"
    return answers


def differing(ours: list[str], theirs: list[str]) -> int:
    """How many tokens differ, position by position (a missing or extra token counts once)."""
    return sum(a != b for a, b in zip(ours, theirs)) + abs(len(ours) - len(theirs))


def agreement(texts: list[Text], analyzer_for: Callable[[str], an.Analyzer] = an.analyzer_for) -> list[dict]:
    """Per language, its own chain's tokens compared with Lucene's: rows for docs/analyzers.md."""
    by_lang: dict[str, list[str]] = defaultdict(list)
    for t in texts:
        by_lang[t.lang].append(t.text)
    chains = {lang: analyzer_for(lang) for lang in by_lang}
    specs = list({chain.name: chain for chain in chains.values()}.values())
    index = {chain.name: i for i, chain in enumerate(specs)}
    requests = [(text, [index[chains[lang].name]]) for lang, lang_texts in sorted(by_lang.items()) for text in lang_texts]
    answers = iter(lucene_tokens(specs, requests))
    rows = []
    for lang, lang_texts in sorted(by_lang.items()):
        chain = chains[lang]
        compared = differ = 0
        for text in lang_texts:
            theirs = next(answers)[0]
            compared += len(theirs)
            differ += differing(chain(text), theirs)
        rows.append({"lang": lang, "chain": chain.name, "texts": len(lang_texts), "tokens": compared, "differing": differ})
    return rows


def random_german_words(n: int, seed: int = 15) -> list[str]:
    """Random letter strings rich in what German2's prelude rewrites: ae oe ue qu ß and u, y between vowels."""
    rng = random.Random(seed)
    letters = "aeouyqßäöüistnrhg"
    return ["".join(rng.choice(letters) for _ in range(rng.randint(1, 12))) for _ in range(n)]


# Tests


def test_pystemmer_is_the_release_pinned_for_lucene_parity():
    pin = re.search(r'"PyStemmer==([^"]+)"', (REPO / "pyproject.toml").read_text())
    assert pin, "pyproject.toml must pin PyStemmer to the release that stems as Lucene 9"
    assert importlib.metadata.version("PyStemmer") == pin.group(1)


@pytest.fixture(scope="module")
def lucene_and_ours():
    """Every text through every chain, by us and by Lucene (one JVM), and random words through German2.

    Returns (texts, {chain: our tokens per text}, {chain: Lucene's tokens per text},
    (random words, our German stems, Lucene's)).
    """
    reason = lucene_jar.available()
    if reason:
        pytest.skip(reason)
    texts = fixture_texts() if FIXTURES.exists() else []
    texts += sample_dump_texts()
    texts += [Text("SNOWBALL_WORDS", lang, words) for lang, words in SNOWBALL_WORDS.items()]
    texts += [Text("edge", "xx", text) for text in EDGE_TEXTS]
    names = an.analyzer_names()
    chains = [an.analyzer_named(name) for name in names]
    german = names.index("german")
    randoms = random_german_words(20_000)
    requests = [(t.text, None) for t in texts] + [(word, [german]) for word in randoms]
    answers = lucene_tokens(chains, requests)
    theirs = {name: [answer[i] for answer in answers[: len(texts)]] for i, name in enumerate(names)}
    ours = {name: [chain(t.text) for t in texts] for name, chain in zip(names, chains)}
    german_words = (randoms, [chains[german](w) for w in randoms], [answer[0] for answer in answers[len(texts) :]])
    return texts, ours, theirs, german_words


def test_the_texts_reach_every_chain_in_its_own_languages(lucene_and_ours):
    real_fixture("wikidata")  # without the fixtures, only the sample dumps' 8 languages are there
    texts = lucene_and_ours[0]
    langs = {t.lang for t in texts if t.source != "edge"}
    missing = [name for name in an.analyzer_names() if not any(an.LANGUAGE_ANALYZERS.get(lang) == name for lang in langs)]
    assert not missing, f"no real text in any language of {missing}"


@pytest.mark.parametrize("name", an.analyzer_names())
def test_chain_gives_lucenes_tokens_on_real_text(lucene_and_ours, name):
    texts, ours, theirs, _ = lucene_and_ours
    diffs = [(t, mine, lucene) for t, mine, lucene in zip(texts, ours[name], theirs[name]) if mine != lucene]
    if diffs:
        t, mine, lucene = diffs[0]
        changed = [(a, b) for a, b in zip(mine, lucene) if a != b][:10]
        pytest.fail(
            f"{name}: {len(diffs)} of {len(texts)} texts differ from Lucene; first: {t.source} [{t.lang}] {t.text[:200]!r}\n"
            f"  (ours, Lucene's): {changed}, {len(mine)} vs {len(lucene)} tokens"
        )
    assert sum(map(len, theirs[name])) > 1000  # the comparison is not vacuous


def test_german2_prelude_gives_lucenes_german2_stems_on_random_words(lucene_and_ours):
    words, mine, lucene = lucene_and_ours[3]
    diffs = [(w, a, b) for w, a, b in zip(words, mine, lucene) if a != b]
    assert not diffs, f"{len(diffs)} of {len(words)} differ (word, ours, Lucene's): {diffs[:10]}"


def main() -> None:
    parser = argparse.ArgumentParser(description="Token agreement with Lucene per language, as a Markdown table.")
    parser.add_argument("--gettext", action="store_true", help="also every translation in /usr/share/locale")
    args = parser.parse_args()
    reason = lucene_jar.available()
    if reason:
        sys.exit(reason)
    texts = fixture_texts() + sample_dump_texts() + (gettext_texts() if args.gettext else [])
    print("| language | chain | texts | tokens compared | tokens differing |\n| --- | --- | ---: | ---: | ---: |")
    for row in agreement(texts):
        print(f"| {row['lang']} | {row['chain']} | {row['texts']:,} | {row['tokens']:,} | {row['differing']:,} |")


if __name__ == "__main__":
    main()
