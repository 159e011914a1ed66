"""The whole build: dumps -> BI-139, MULTI-8, DOCS, ``downloads.json.gz``, ``stats/``, ``manifest.json``.

Stages, each skipped when it already finished with the same fingerprint
(``beam_jobs.stages.StageLog``); all but ``stats`` are Beam pipelines (``Stage``),
``stats`` draws its tables from the counts the write stage reported::

    extract_docs -> extract_sitelinks -> link_entities -> retrieve -> label -> propagate -> write_release -> stats

Intermediate Parquet goes to ``WORK`` (default ``OUT/.work``); ``OUT`` gets
exactly the released layout plus ``stats/`` and ``manifest.json``.

Example::

    python -m clirmatrix.beam_jobs.build --dumps dumps/ --out out/ --min-docs 1000
"""

from __future__ import annotations

import logging
import os
import platform
import posixpath
from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields, replace
from importlib import metadata

from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from clirmatrix.beam_jobs import runners
from clirmatrix.beam_jobs.common import default_workers
from clirmatrix.beam_jobs.extract_docs import ExtractDocs, docs_settings
from clirmatrix.beam_jobs.extract_sitelinks import ExtractSitelinks
from clirmatrix.beam_jobs.label import Label
from clirmatrix.beam_jobs.link_entities import LinkEntities
from clirmatrix.beam_jobs.propagate import Propagate
from clirmatrix.beam_jobs.retrieve import Retrieve, retrieval_settings
from clirmatrix.beam_jobs.stages import Stage, StageLog, beam_flags, config_parser, doc_summary
from clirmatrix.beam_jobs.stats import counted_while_writing, run_stats
from clirmatrix.beam_jobs.write_release import WriteRelease, release_settings
from clirmatrix.pipeline.config import BuildConfig, ConfigError, as_dict, resolve
from clirmatrix.pipeline.errors import add_note
from clirmatrix.pipeline.io import fileio
from clirmatrix.pipeline.io.fingerprint import fingerprint
from clirmatrix.pipeline.io.localio import check_folder_path, md5_of
from clirmatrix.pipeline.method.corpus import WorkDirs
from clirmatrix.pipeline.method.dumps import NoDumpsError, find_dumps
from clirmatrix.pipeline.method.retrieval import check_engine
from clirmatrix.pipeline.output import layout
from clirmatrix.pipeline.output.card import write_card
from clirmatrix.pipeline.output.gzip_encoder import ENCODER
from clirmatrix.pipeline.tools.report import write_report
from clirmatrix.schemas.contracts import Summary

LOG = logging.getLogger("clirmatrix")
STAGES = (ExtractDocs.name, ExtractSitelinks.name, LinkEntities.name, Retrieve.name, Label.name, Propagate.name, WriteRelease.name, "stats")
_VERSIONED = ("clirmatrix", "apache-beam", "pyarrow", "numpy", "jenkspy", "numba", "PyStemmer", "orjson", "isal", "zlib-ng", "mwparserfromhell")


@dataclass
class BuildResult:
    """What the build produced, for the command's summary."""

    out: str
    work: str
    summaries: dict[str, Summary]
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


class OutInDumpsError(ConfigError):
    """``--out`` is the ``--dumps`` folder or holds it."""


def check_out_apart_from_dumps(dumps: str, out: str) -> None:
    """Refuse an ``--out`` that is ``--dumps`` or holds it: the build replaces ``BI-139/``, ``MULTI-8/``, ``DOCS/``,
    ``DOCS-FULL/`` and ``downloads.json.gz`` in ``--out``, and ``validate`` of ``--out`` would meet the dumps.

    An ``--out`` inside ``--dumps`` is taken: the dumps search walks it too, but no released
    file's name is a dump's.
    """

    def normal(path: str) -> str:
        return posixpath.normpath(path) if fileio.is_remote(path) else os.path.realpath(path)

    dumps_path, out_path = normal(dumps), normal(out)
    if dumps_path == out_path:
        raise OutInDumpsError(f"--out {out} is the --dumps folder: the build would write the release among the dumps; give an --out apart from --dumps")
    if dumps_path.startswith(out_path.rstrip("/") + "/"):
        raise OutInDumpsError(f"--dumps {dumps} is inside --out {out}: the build replaces what --out holds and validate would meet the dumps; give an --out apart from --dumps")


def run_build(config: BuildConfig, beam_args: Sequence[str] = ()) -> BuildResult:
    """Run (or resume) every stage (``_run_build``).

    A SIGINT ends the local workers at any moment of the build, between two
    stages' pipelines as well as during one (``runners.interrupt_reaches_workers``),
    and the KeyboardInterrupt leaves with a note of what the build kept and how to
    resume (``add_note``: the traceback shows it, the command line prints it).
    """
    marked: list[str] = []  # OUT, while marked unfinished
    try:
        with runners.interrupt_reaches_workers():
            return _run_build(config, beam_args, marked)
    except KeyboardInterrupt as interrupt:
        if marked:
            note = f"{marked[0]} stays marked unfinished ({layout.IN_PROGRESS}); finished stages are kept; run the same command again to resume"
        else:
            note = "the build had not started writing; run the same command again to start it"
        add_note(interrupt, note)
        raise


def _run_build(config: BuildConfig, beam_args: Sequence[str] = (), marked: list[str] | None = None) -> BuildResult:
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
    check_out_apart_from_dumps(config.dumps, config.out)
    beam_args = beam_flags(beam_args)
    check_engine(retrieval_settings(config), config.langs)
    found, link_sources = find_dumps(config.dumps, config.langs, config.source, config.skip_missing, config.links)  # before OUT is touched
    if config.eval_size == 0:  # allowed (a release to train on only), but never unsaid: every dev and test file is empty
        found.notes.append("--eval-size 0: every dev, test1 and test2 file is empty (no query is held out; train gets them all)")
        LOG.warning(found.notes[-1])
    for folder in (config.out, config.work_dir):
        fileio.check_writable(folder)
    # From here until the manifest is written, OUT is marked unfinished (layout.IN_PROGRESS):
    # a failed or killed run leaves the mark, and validate, download and the loader refuse it.
    marker = fileio.join(config.out, layout.IN_PROGRESS)
    fileio.write_json(marker, {"incomplete": "clirmatrix build has not finished writing this folder; rerun clirmatrix build"})
    if marked is not None:
        marked.append(config.out)
    work, version = WorkDirs(config.work_dir), metadata.version("clirmatrix")
    log = StageLog(work.root)
    workers = config.workers or None
    docs_inputs = _describe([dump.path for dumps in found.docs.values() for dump in dumps], config.dumps)
    wikidata_inputs = _describe([*link_sources.sitelinks_files, *(path for _, path in link_sources.page_props)], config.dumps)
    summaries: dict[str, Summary] = {}
    keys: dict[str, str] = {}

    def run_stage(stage: Stage, key: str, force: bool = False) -> Summary:
        keys[stage.name] = key
        summaries[stage.name] = log.run(stage.name, key, lambda: stage.run(beam_args, workers), force=force)
        return summaries[stage.name]

    extract_docs = ExtractDocs(work.root, found.docs, docs_settings(config))
    langs = sorted(run_stage(extract_docs, fingerprint(ExtractDocs.name, version, docs_inputs, asdict(extract_docs.settings))).languages)
    if not langs:
        raise NoDumpsError(f"every language has fewer than --min-docs {config.min_docs:,} documents; nothing to build")
    sitelinks = ExtractSitelinks(work.root, link_sources, langs, config.max_bad_fraction, config.split_bytes)
    run_stage(sitelinks, fingerprint(ExtractSitelinks.name, version, link_sources.mode, wikidata_inputs, langs, config.max_bad_fraction, config.split_mb))
    run_stage(LinkEntities(work.root), fingerprint(LinkEntities.name, keys[ExtractDocs.name], keys[ExtractSitelinks.name]))
    # The documents' fingerprint names an Elasticsearch index that holds them already (not part of the stage's own).
    retrieve = Retrieve(work.root, replace(retrieval_settings(config), docs_key=keys[ExtractDocs.name]), langs)
    run_stage(retrieve, fingerprint(Retrieve.name, keys[LinkEntities.name], retrieve.settings.fingerprint_parts()))
    run_stage(Label(work.root), fingerprint(Label.name, keys[Retrieve.name]))
    run_stage(Propagate(work.root, langs), fingerprint(Propagate.name, keys[Label.name], keys[LinkEntities.name]))

    release = release_settings(config)
    if not set(release.multi_langs) <= set(langs):
        missing = sorted(set(release.multi_langs) - set(langs))
        found.notes.append(f"MULTI-8 not built: {', '.join(missing)} missing (needs {', '.join(release.multi_langs)})")
        LOG.warning(found.notes[-1])
    # A deleted output is written again whatever the stage records say.
    rewrite = not fileio.exists(fileio.join(config.out, layout.INDEX))
    write_key = fingerprint(WriteRelease.name, keys[Propagate.name], release.fingerprint_parts(), config.out)
    run_stage(WriteRelease(work.root, config.out, release, langs), write_key, force=rewrite)
    keys["stats"] = fingerprint("stats", keys[WriteRelease.name])
    restat = rewrite or not fileio.any_under(fileio.join(config.out, layout.STATS_DIR))
    summaries["stats"] = log.run("stats", keys["stats"], lambda: run_stats(config.out, counted_while_writing(work.root)), force=restat)

    manifest = {
        "clirmatrix": version,
        "versions": _versions(),
        "gzip": ENCODER,  # what wrote the .gz files: validate compares it with its own (pipeline/output/gzip_encoder.py)
        "settings": {**as_dict(config), "workers": config.workers or default_workers(os.cpu_count() or 1)},  # the most a stage used, not 0
        "inputs": input_checksums(docs_inputs + wikidata_inputs, config.dumps, work.root),
        "languages": langs,
        "dropped_languages": sorted(summaries[ExtractDocs.name].dropped),
        "notes": found.notes,
        "counts": _counts(summaries),
        "input_counts": _input_counts(summaries),
        "files": _file_counts(summaries[WriteRelease.name].files),
        "stage_fingerprints": keys,
    }
    fileio.write_json(fileio.join(config.out, layout.MANIFEST), manifest)
    write_card(config.out)
    if fileio.is_remote(config.out):
        found.notes.append(f"no {layout.REPORT} in {config.out} (an object store): run clirmatrix report on a local copy")
    else:
        write_report(config.out, finished_only=False)
    fileio.remove_tree(marker)
    if marked:
        marked.clear()
    seconds = {name: log.seconds(name) for name in STAGES}
    return BuildResult(config.out, work.root, summaries, seconds, log.skipped, found.notes)


def _input_counts(summaries: dict[str, Summary]) -> dict[str, dict]:
    """Per language (and for Wikidata) what the readers met: records, and bad records by kind."""
    counts = {lang: {"records": entry.records, "rejected": entry.rejected} for lang, entry in summaries[ExtractDocs.name].languages.items()}
    sitelinks = summaries[ExtractSitelinks.name]
    counts["wikidata"] = {"records": sitelinks.entities_read, "rejected": sitelinks.rejected}
    return counts


def _file_counts(files: Sequence[dict]) -> dict[str, dict[str, int]]:
    """Per released file, what a loader counts: records (queries or documents) and, for query files, qrels (result pairs)."""
    counts = {}
    for entry in files:
        counts[entry["path"]] = {"records": entry["lines"]}
        if layout.parse_path(entry["path"]).dataset in layout.QUERY_SETS and "pairs" in entry:
            counts[entry["path"]]["qrels"] = entry["pairs"]
    return counts


def _counts(summaries: dict[str, Summary]) -> dict:
    """Key counts per language and per released set, for the manifest and the command's summary."""
    retrieval = summaries[Retrieve.name].languages
    links = summaries[LinkEntities.name].languages
    per_lang = {
        lang: {
            "docs": entry.docs,
            "linked": links[lang].linked_wikidata + links[lang].linked_dump,
            "queries_without_hits": retrieval[lang].queries_without_hits,
        }
        for lang, entry in summaries[ExtractDocs.name].languages.items()
    }
    return {"languages": per_lang, "sets": summaries[WriteRelease.name].sets}


def run(argv: Sequence[str] | None = None) -> BuildResult:
    """Entry point in the style of Beam's examples: the build's settings as flags (derived from ``BuildConfig``), the rest go to Beam."""
    settings = [setting.name for setting in fields(BuildConfig)]
    args, beam_args = config_parser(doc_summary(__doc__), settings).parse_known_args(argv)
    return run_build(resolve(args.config, {name: getattr(args, name) for name in settings}), beam_args)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO)
    run()
