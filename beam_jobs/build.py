"""The whole build: dumps -> BI-139, MULTI-8, DOCS, ``downloads.json.gz``, ``stats/``, ``manifest.json``.

Stages, each a Beam pipeline and each skipped when it already finished with the
same fingerprint (``beam_jobs.stages``)::

    extract_docs -> extract_sitelinks -> link -> retrieve -> label -> propagate -> write -> stats

Intermediate Parquet goes to ``WORK`` (default ``OUT/.work``); ``OUT`` gets
exactly the released layout plus ``stats/`` and ``manifest.json``.

Example::

    python -m clirmatrix.beam_jobs.build --dumps dumps/ --out out/ --min-docs 1000
"""

from __future__ import annotations

import argparse
import logging
import os
import platform
from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields, replace
from importlib import metadata

from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from clirmatrix.beam_jobs import common, runners
from clirmatrix.beam_jobs.extract import NoDumpsError, find_dumps
from clirmatrix.beam_jobs.extract_docs import DocsSettings, run_extract_docs
from clirmatrix.beam_jobs.extract_sitelinks import run_extract_sitelinks
from clirmatrix.beam_jobs.label import run_label
from clirmatrix.beam_jobs.link_entities import run_link_entities
from clirmatrix.beam_jobs.propagate import run_propagate
from clirmatrix.beam_jobs.retrieve import run_retrieve
from clirmatrix.beam_jobs.stages import StageLog
from clirmatrix.beam_jobs.stats import counted_while_writing, run_stats
from clirmatrix.beam_jobs.write_release import run_write_release
from clirmatrix.pipeline import fileio, layout
from clirmatrix.pipeline.config import BuildConfig, as_dict, flag_name, resolve
from clirmatrix.pipeline.corpus import WorkDirs
from clirmatrix.pipeline.engines.base import Bm25Settings
from clirmatrix.pipeline.fingerprint import fingerprint
from clirmatrix.pipeline.localio import check_folder_path, md5_of
from clirmatrix.pipeline.release import ReleaseSettings
from clirmatrix.pipeline.report import write_report
from clirmatrix.pipeline.retrieval import RetrievalSettings, check_engine
from clirmatrix.pipeline.splits import SplitSettings

LOG = logging.getLogger("clirmatrix")
STAGES = ("extract_docs", "extract_sitelinks", "link", "retrieve", "label", "propagate", "write", "stats")
_VERSIONED = ("clirmatrix", "apache-beam", "pyarrow", "numpy", "jenkspy", "numba", "PyStemmer", "orjson", "isal", "mwparserfromhell")


@dataclass
class BuildResult:
    """What the build produced, for the command's summary."""

    out: str
    work: str
    summaries: dict[str, dict]
    stage_seconds: dict[str, float | None]  # as recorded when each stage last ran
    skipped: list[str]  # stages this run found up to date
    notes: list[str]


def _versions() -> dict[str, str]:
    found = {"python": platform.python_version()}
    for name in _VERSIONED:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return found


def _describe(paths: Sequence[str], root: str) -> list[dict]:
    """Name, size and modification time of input files: what their stage fingerprint covers."""
    described = []
    for path in sorted(paths):
        meta = FileSystems.match([path])[0].metadata_list[0]
        described.append({"path": fileio.relative_to(root, path), "size": meta.size_in_bytes, "mtime": meta.last_updated_in_seconds})
    return described


def _md5(path: str) -> str:
    with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as handle:
        return md5_of(handle)


def input_checksums(inputs: Sequence[dict], dumps_dir: str, work_dir: str) -> list[dict]:
    """md5 of every input file for the manifest, cached by (path, size, mtime) so reruns do not reread dumps."""
    cache_path = fileio.join(work_dir, "_stages", "checksums.json")
    cache = fileio.read_json(cache_path) if fileio.exists(cache_path) else {}
    described, computed = [], False
    for entry in inputs:
        key = f"{entry['path']}|{entry['size']}|{entry['mtime']}"
        if key not in cache:
            LOG.debug("checksum of %s", entry["path"])
            cache[key], computed = _md5(fileio.join(dumps_dir, entry["path"])), True
        described.append({"path": entry["path"], "size": entry["size"], "md5": cache[key]})
    if computed:
        fileio.write_json(cache_path, cache)
    return described


def run_build(config: BuildConfig, beam_args: Sequence[str] = ()) -> BuildResult:
    """Run (or resume) every stage (``_run_build``); a SIGINT to the driver alone ends its local workers at any
    moment of the build, between two stages' pipelines as well as during one (``runners.interrupt_reaches_workers``)."""
    with runners.interrupt_reaches_workers():
        return _run_build(config, beam_args)


def _run_build(config: BuildConfig, beam_args: Sequence[str] = ()) -> BuildResult:
    """Run (or resume) every stage; raises NoDumpsError when nothing usable is found.

    Relative paths become absolute here, on the driver: workers open them from
    working directories of their own. ``beam_args`` are Beam's flags (``--runner
    dask``, ``--s3_endpoint_url``, ...), resolved once for every stage.
    """
    config = config.check()
    check_folder_path(config.out, "--out")  # before anything is read: a file named OUT is one line, not [Errno 17] later
    if config.work:
        check_folder_path(config.work, "--work")
    config = replace(config, dumps=fileio.absolute(config.dumps), out=fileio.absolute(config.out), work=fileio.absolute(config.work))
    beam_args = runners.resolve(beam_args)
    common.use_filesystem_options(beam_args)
    bm25 = Bm25Settings(config.k1, config.b, config.title_boost, config.combine)
    es_url = config.es_url or os.environ.get("CLIRMATRIX_ES_URL", "")
    retrieval = RetrievalSettings(
        config.engine, config.k, bm25, config.threads, es_url,
        shard_docs=config.shard_docs, block_size=config.block_size, search_unit_queries=config.search_unit_queries,
    )
    check_engine(retrieval, config.langs)
    found, link_sources = find_dumps(config.dumps, config.langs, config.source, config.skip_missing, config.links)  # before OUT is touched
    for folder in (config.out, config.work_dir):
        fileio.check_writable(folder)
    # From here until the manifest is written, OUT is marked unfinished (layout.IN_PROGRESS):
    # a failed or killed run leaves the mark, and validate, download and the loader refuse it.
    marker = fileio.join(config.out, layout.IN_PROGRESS)
    fileio.write_json(marker, {"incomplete": "clirmatrix build has not finished writing this folder; rerun clirmatrix build"})
    work, version = WorkDirs(config.work_dir), metadata.version("clirmatrix")
    log = StageLog(work.root)
    workers = config.workers or None
    docs_inputs = _describe([dump.path for dumps in found.docs.values() for dump in dumps], config.dumps)
    wikidata_inputs = _describe([*link_sources.sitelinks_files, *(path for _, path in link_sources.page_props)], config.dumps)
    summaries: dict[str, dict] = {}

    docs_settings = DocsSettings(min_docs=config.min_docs, max_bad_fraction=config.max_bad_fraction, split_bytes=config.split_mb << 20)
    keys = {"extract_docs": fingerprint("extract_docs", version, docs_inputs, asdict(docs_settings))}
    summaries["extract_docs"] = log.run(
        "extract_docs", keys["extract_docs"], lambda: run_extract_docs(found.docs, work.stage("docs"), docs_settings, beam_args, workers)
    )
    langs = sorted(summaries["extract_docs"]["languages"])
    if not langs:
        raise NoDumpsError(f"every language has fewer than --min-docs {config.min_docs:,} documents; nothing to build")
    keys["extract_sitelinks"] = fingerprint("extract_sitelinks", version, link_sources.mode, wikidata_inputs, langs, config.max_bad_fraction, config.split_mb)
    summaries["extract_sitelinks"] = log.run(
        "extract_sitelinks",
        keys["extract_sitelinks"],
        lambda: run_extract_sitelinks(link_sources, langs, work.stage("sitelinks"), config.max_bad_fraction, beam_args, workers, split_bytes=config.split_mb << 20),
    )
    keys["link"] = fingerprint("link", keys["extract_docs"], keys["extract_sitelinks"])
    summaries["link"] = log.run("link", keys["link"], lambda: run_link_entities(work.root, beam_args, workers))

    keys["retrieve"] = fingerprint("retrieve", keys["link"], retrieval.fingerprint_parts())
    retrieval = replace(retrieval, docs_key=keys["extract_docs"])
    summaries["retrieve"] = log.run("retrieve", keys["retrieve"], lambda: run_retrieve(work.root, langs, retrieval, beam_args, workers))
    keys["label"] = fingerprint("label", keys["retrieve"])
    summaries["label"] = log.run("label", keys["label"], lambda: run_label(work.root, beam_args, workers))
    keys["propagate"] = fingerprint("propagate", keys["label"], keys["link"])
    summaries["propagate"] = log.run("propagate", keys["propagate"], lambda: run_propagate(work.root, langs, beam_args, workers))

    splits = SplitSettings(config.seed, config.train_size, config.eval_size)
    release = ReleaseSettings(splits, tuple(config.multi_langs), base_url=config.base_url)
    if not set(release.multi_langs) <= set(langs):
        missing = sorted(set(release.multi_langs) - set(langs))
        found.notes.append(f"MULTI-8 not built: {', '.join(missing)} missing (needs {', '.join(release.multi_langs)})")
        LOG.warning(found.notes[-1])
    keys["write"] = fingerprint("write", keys["propagate"], release.fingerprint_parts(), config.out)
    # A deleted output is written again whatever the stage records say.
    rewrite = not fileio.exists(fileio.join(config.out, layout.INDEX))
    summaries["write"] = log.run(
        "write", keys["write"], lambda: run_write_release(work.root, config.out, langs, release, beam_args, workers), force=rewrite
    )
    keys["stats"] = fingerprint("stats", keys["write"])
    restat = rewrite or not fileio.any_under(fileio.join(config.out, layout.STATS_DIR))
    summaries["stats"] = log.run("stats", keys["stats"], lambda: run_stats(config.out, counted_while_writing(work.root)), force=restat)

    manifest = {
        "clirmatrix": version,
        "versions": _versions(),
        "settings": as_dict(config),
        "inputs": input_checksums(docs_inputs + wikidata_inputs, config.dumps, work.root),
        "languages": langs,
        "dropped_languages": sorted(summaries["extract_docs"]["dropped"]),
        "notes": found.notes,
        "counts": _counts(summaries),
        "input_counts": _input_counts(summaries),
        "files": _file_counts(summaries["write"]["files"]),
        "stage_fingerprints": keys,
    }
    fileio.write_json(fileio.join(config.out, layout.MANIFEST), manifest)
    if fileio.is_remote(config.out):
        found.notes.append(f"no {layout.REPORT} in {config.out} (an object store): run clirmatrix report on a local copy")
    else:
        write_report(config.out, finished_only=False)
    fileio.remove_tree(marker)
    seconds = {name: log.seconds(name) for name in STAGES}
    return BuildResult(config.out, work.root, summaries, seconds, log.skipped, found.notes)


def _input_counts(summaries: dict[str, dict]) -> dict[str, dict]:
    """Per language (and for Wikidata) what the readers met: records, and bad records by kind."""
    counts = {lang: {"records": entry["records"], "rejected": entry["rejected"]} for lang, entry in summaries["extract_docs"]["languages"].items()}
    sitelinks = summaries["extract_sitelinks"]
    counts["wikidata"] = {"records": sitelinks["entities_read"], "rejected": sitelinks["rejected"]}
    return counts


def _file_counts(files: Sequence[dict]) -> dict[str, dict[str, int]]:
    """Per released file, what a loader counts: records (queries or documents) and, for query files, qrels (result pairs)."""
    counts = {}
    for entry in files:
        counts[entry["path"]] = {"records": entry["lines"]}
        if layout.parse_path(entry["path"]).dataset in layout.QUERY_SETS and "pairs" in entry:
            counts[entry["path"]]["qrels"] = entry["pairs"]
    return counts


def _counts(summaries: dict[str, dict]) -> dict:
    """Key counts per language and per released set, for the manifest and the command's summary."""
    retrieval = summaries["retrieve"]["languages"]
    links = summaries["link"]["languages"]
    per_lang = {
        lang: {
            "docs": entry["docs"],
            "linked": links[lang]["linked_wikidata"] + links[lang]["linked_dump"],
            "queries_without_hits": retrieval[lang]["queries_without_hits"],
        }
        for lang, entry in summaries["extract_docs"]["languages"].items()
    }
    return {"languages": per_lang, "sets": summaries["write"]["sets"]}


def run(argv: Sequence[str] | None = None) -> BuildResult:
    """Entry point in the style of Beam's examples: the build's settings as flags (derived from ``BuildConfig``), the rest go to Beam."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", help="TOML or YAML file with any of these settings; flags win.")
    for setting in fields(BuildConfig):
        flag, default = flag_name(setting.name), setting.default
        if isinstance(default, bool):
            parser.add_argument(flag, dest=setting.name, action="store_const", const=True, default=None, help=setting.metadata["help"])
        else:
            kind = type(default) if isinstance(default, (int, float)) else str
            parser.add_argument(flag, dest=setting.name, type=kind, default=None, help=setting.metadata["help"])
    args, beam_args = parser.parse_known_args(argv)
    flags = {setting.name: getattr(args, setting.name) for setting in fields(BuildConfig)}
    return run_build(resolve(args.config, flags), beam_args)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO)
    run()
