"""The dataset card: what a build is, where it came from, how big it is, its limits, its licences, how to cite it.

Written by every build as ``OUT/README.md`` (where a dataset hub or a file browser shows
it), and by ``clirmatrix export --format hf`` as the README whose YAML front matter
declares the exported configs. Everything in it comes from the folder itself: the
manifest (inputs, settings, counts), ``stats/`` and the released files; no local path
and no time of day, so the same inputs and settings give the same card.
"""

from __future__ import annotations

import csv
import io
import os
import re
from collections import defaultdict

import orjson

from clirmatrix.pipeline.io import fileio
from clirmatrix.pipeline.method.languages import MULTI8_LANGUAGES
from clirmatrix.pipeline.output import layout

CARD = layout.CARD
# Where and how the build ran, not what it made: paths, processes, and how the work was cut into units
# (the same data on any runner and unit size, so the same card).
_RUN_SETTINGS = frozenset({"dumps", "out", "work", "base_url", "es_url", "workers", "threads", "block_size", "shard_docs", "split_mb", "search_unit_queries"})
_DATE = re.compile(r"(?<!\d)(20\d{6})(?!\d)")

CITATION = """@inproceedings{sun-duh-2020-clirmatrix,
    title = "{CLIRM}atrix: A massively large collection of bilingual and multilingual datasets for Cross-Lingual Information Retrieval",
    author = "Sun, Shuo and Duh, Kevin",
    booktitle = "Proceedings of the 2020 Conference on Empirical Methods in Natural Language Processing (EMNLP)",
    year = "2020",
    pages = "4160--4170",
    publisher = "Association for Computational Linguistics",
    doi = "10.18653/v1/2020.emnlp-main.340",
    url = "https://aclanthology.org/2020.emnlp-main.340",
}"""

METHOD = (
    "Every article title of each language's Wikipedia is a query. BM25 ranks the language's own articles for it "
    "(top 100); Jenks natural breaks turn each query's scores into relevance labels 1-5, and the query's own article "
    "gets 6. Wikidata links articles about the same entity across languages, which carries each query's labels into "
    "every other language: a query in language X is judged against the documents of language Y about the entities "
    "its X documents were labelled for. BI-139 holds every pair of languages (base: 100 candidates a query, fillers "
    "labelled 0; full: every labelled document), MULTI-8 queries whose entity exists in all 8 of its languages, and "
    "DOCS each language's documents, truncated as the release truncates them."
)

LIMITS = (
    "Labels are synthetic: they come from BM25 over the query language's Wikipedia and Wikidata's links, not from "
    "human judgements, so they reward lexical overlap with the title and inherit Wikidata's gaps and errors.",
    "Queries are article titles: short, entity-like, and the same kind of text in every language.",
    "A document's text is the start of its article's text, truncated as the release truncates it; article titles are "
    "not part of the released documents.",
    "Language coverage follows Wikipedia: small wikis give few queries and few judged documents in other languages.",
    "`clirmatrix validate OUT` checks every file (layout, order, labels, md5s, no test entity in a train set) and lists "
    "what it warns about; read its output before publishing a build.",
)


def _manifest(root: str) -> dict | None:
    path = fileio.join(root, layout.MANIFEST)
    return orjson.loads(fileio.read_bytes(path)) if fileio.exists(path) else None


def _table(header: list[str], rows: list[list[object]]) -> list[str]:
    def cell(value: object) -> str:
        text = f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else str(value)
        return text.replace("|", "\\|")

    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)] + ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows] + [""]


def _front_matter(languages: list[str], configs: list[dict] | None) -> list[str]:
    lines = ["---", "pretty_name: CLIRMatrix (rebuilt)", "license: cc-by-sa-4.0", "task_categories:", "- text-retrieval",
             "multilinguality:", "- multilingual", "language:"] + [f"- {lang}" for lang in languages]
    lines += ["tags:", "- cross-lingual-information-retrieval", "- wikipedia", "- wikidata"]
    if configs:
        lines.append("configs:")
        for config in configs:
            lines.append(f"- config_name: {config['config_name']}")
            lines.append("  data_files:")
            for split, pattern in config["data_files"].items():
                lines += [f"  - split: {split}", f"    path: {pattern}"]
    return lines + ["---", ""]


def _inputs(manifest: dict) -> list[str]:
    rows = []
    for entry in manifest.get("inputs", []):
        name = os.path.basename(entry["path"])
        date = _DATE.search(name)
        rows.append([f"`{name}`", date[1] if date else "", entry["size"], f"`{entry['md5']}`"])
    return _table(["dump file", "date", "bytes", "md5"], rows)


def _settings(manifest: dict) -> list[str]:
    settings = manifest.get("settings", {})
    rows = [[name, ", ".join(value) if isinstance(value, list) else value] for name, value in sorted(settings.items()) if name not in _RUN_SETTINGS]
    return _table(["setting", "value"], rows)


def _sizes(manifest: dict) -> list[str]:
    sets = manifest.get("counts", {}).get("sets", {})
    rows = [[name, entry.get("files", 0), entry.get("lines", 0), entry.get("bytes", 0)] for name, entry in sorted(sets.items())]
    per_lang = manifest.get("counts", {}).get("languages", {})
    return (_table(["set", "files", "lines (queries or documents)", "bytes"], rows)
            + _table(["language", "documents", "linked to Wikidata"], [[lang, e.get("docs", 0), e.get("linked", 0)] for lang, e in sorted(per_lang.items())]))


def _statistics(root: str) -> list[str]:
    """Per set and split (Tables 7.1-7.4 summed over directions): directions, queries, mean documents labelled >= 4 and >= 1."""
    lines: list[str] = []
    for table in sorted(fileio.list_files(fileio.join(root, layout.STATS_DIR, "*.tsv"))):
        rows = list(csv.DictReader(io.StringIO(fileio.read_bytes(table).decode("utf-8"), newline=""), delimiter="\t"))
        name = fileio.basename(table).removesuffix(".tsv")
        totals: dict[str, list[float]] = defaultdict(lambda: [0, 0, 0.0, 0.0])
        for row in rows:
            total = totals[row["split"]]
            queries = int(row["queries"])
            total[0] += 1
            total[1] += queries
            total[2] += int(row["docs_ge4"])
            total[3] += int(row["docs_ge1"])
        ordered = [split for split in layout.SPLITS if split in totals]
        lines += [f"**{name}**", ""] + _table(
            ["split", "directions", "queries", "mean docs label >= 4", "mean docs label >= 1"],
            [[split, int(totals[split][0]), int(totals[split][1]), f"{totals[split][2] / max(totals[split][1], 1):.2f}",
              f"{totals[split][3] / max(totals[split][1], 1):.2f}"] for split in ordered])
    return lines or ["No `stats/` folder: `clirmatrix build` writes one; for a download, `python -m clirmatrix.beam_jobs.stats`.", ""]


def render_card(root: str | os.PathLike, configs: list[dict] | None = None, config_names: str = "") -> str:
    """The card's Markdown for a build or a download at ``root`` (a local folder or an object store); ``configs`` (hf export) go into its front matter."""
    root = os.fspath(root)
    manifest = _manifest(root)
    languages = sorted(manifest.get("languages", [])) if manifest else sorted(
        {item.src for _, item in _released(root)} | {item.tgt for _, item in _released(root) if item.tgt})
    multi = manifest.get("settings", {}).get("multi_langs", list(MULTI8_LANGUAGES)) if manifest else list(MULTI8_LANGUAGES)
    lines = _front_matter(languages, configs)
    lines += ["# CLIRMatrix, rebuilt", "",
              f"A cross-lingual information retrieval dataset in the layout of CLIRMatrix (Sun and Duh, 2020), for {len(languages)} "
              f"languages ({', '.join(languages)}), built by the clirmatrix builder "
              + (f"{manifest.get('clirmatrix', '')} " if manifest else "") + "from Wikipedia and Wikidata dumps.", "",
              "## How it was built", "", METHOD, "",
              f"MULTI-8 languages: {', '.join(multi) if multi else 'none'}. Splits: dev, test1 and test2 of the same size, base train "
              "up to a set size, full train the rest; no entity of a test set is in any train or dev set of any direction.", ""]
    if manifest:
        lines += ["### Inputs", "", "The dumps this build read, with the checksums the build took of them:", ""] + _inputs(manifest)
        lines += ["### Settings", ""] + _settings(manifest)
        versions = manifest.get("versions", {})
        lines += ["Software: " + ", ".join(f"{name} {version}" for name, version in sorted(versions.items())) + ".", ""]
        lines += ["## Size", ""] + _sizes(manifest)
    else:
        lines += ["A download: no manifest, so its inputs and settings are those of the release it came from.", ""]
    lines += ["## Statistics", ""] + _statistics(root)
    if config_names:
        lines += ["## Loading", "", config_names, ""]
    lines += ["## Known limits", ""] + [f"- {limit}" for limit in LIMITS + _build_limits(manifest)] + [""]
    lines += ["## Licences", "",
              "- **Text** (document texts and query titles) comes from Wikipedia, under the Creative Commons Attribution-ShareAlike "
              "4.0 licence (CC BY-SA 4.0) and the GNU Free Documentation License: attribute it to the Wikipedia contributors "
              "(each article's history names its authors) and share adaptations under the same licence.",
              "- **Links between articles** come from Wikidata, whose data is CC0 (public domain).",
              "- **Labels, splits and layout** are this dataset's own, released with the text under CC BY-SA 4.0.",
              "- **The code** that built it (clirmatrix) is under the Apache License 2.0.", "",
              "## Citation", "", "Cite the CLIRMatrix paper for the method and the dataset's design:", "", "```bibtex", CITATION, "```", "",
              "and name the builder and its version (above) with the dump dates, so others can rebuild the same data.", ""]
    return "\n".join(lines)


def _build_limits(manifest: dict | None) -> tuple[str, ...]:
    """This build's own: languages dropped, released files without queries (which ``validate`` warns about), titles without hits."""
    if not manifest:
        return ()
    found = []
    if manifest.get("dropped_languages"):
        found.append(f"Languages dropped for having too few documents: {', '.join(manifest['dropped_languages'])}.")
    empty = sorted(path for path, counts in manifest.get("files", {}).items() if counts.get("records") == 0)
    if empty:
        shown = ", ".join(f"`{path}`" for path in empty[:5]) + (f" and {len(empty) - 5:,} more" if len(empty) > 5 else "")
        found.append(f"{len(empty):,} released files hold no queries (as some of the 2020 release's do; `validate` warns about them): {shown}.")
    misses = {lang: entry.get("queries_without_hits", 0) for lang, entry in manifest.get("counts", {}).get("languages", {}).items()}
    if any(misses.values()):
        found.append("Titles that BM25 found no document for (no labels, so no query): "
                     + ", ".join(f"{lang} {count:,}" for lang, count in sorted(misses.items()) if count) + ".")
    return tuple(found)


def _released(root: str):
    from clirmatrix.pipeline.output.jsonl import walk_release

    return [(path, item) for path, item in walk_release(root) if item is not None]  # a download: local (a build has its manifest)


def write_card(root: str | os.PathLike, target: str | os.PathLike | None = None, configs: list[dict] | None = None, config_names: str = "") -> str:
    """Write the card (``root/README.md`` unless ``target``) atomically, on a local folder or an object store; returns its path."""
    path = os.fspath(target) if target else fileio.join(os.fspath(root), CARD)
    fileio.write_bytes(path, render_card(root, configs, config_names).encode())
    return path
