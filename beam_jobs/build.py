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
from dataclasses import dataclass, fields
from importlib import metadata

from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from clirmatrix.beam_jobs import runners
from clirmatrix.beam_jobs.all_stages import STAGES
from clirmatrix.beam_jobs.common import default_workers
from clirmatrix.beam_jobs.extract_docs import ExtractDocs
from clirmatrix.beam_jobs.extract_sitelinks import ExtractSitelinks
from clirmatrix.beam_jobs.link_entities import LinkEntities
from clirmatrix.beam_jobs.retrieve import Retrieve
from clirmatrix.beam_jobs.stages import BuildRun, StageLog, beam_flags, check_stages, config_parser, doc_summary, run_stages
from clirmatrix.beam_jobs.write_release import WriteRelease, release_settings
from clirmatrix.pipeline.config import BuildConfig, ConfigError, as_dict, resolve
from clirmatrix.pipeline.errors import add_note
from clirmatrix.pipeline.io import fileio
from clirmatrix.pipeline.io.localio import check_folder_path, md5_of
from clirmatrix.pipeline.output import layout
from clirmatrix.pipeline.output.card import write_card
from clirmatrix.pipeline.output.gzip_encoder import ENCODER
from clirmatrix.pipeline.tools.report import write_report
from clirmatrix.schemas.contracts import Summary

LOG = logging.getLogger("clirmatrix")
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

    The stages run in ``STAGES``' order, each made and fingerprinted by its own
    declaration (``stages.run_stages``). ``beam_args`` are Beam's flags (``--runner
    dask``, ``--s3_endpoint_url``, ...), resolved once for every stage.
    """
    config = config.check()
    check_folder_path(config.out, "--out")  # before anything is read: a file named OUT is one line, not [Errno 17] later
    if config.work:
        check_folder_path(config.work, "--work")
    run = BuildRun.of(config, config.work_dir)  # every path made absolute: workers open them from working directories of their own
    config = run.config
    check_out_apart_from_dumps(config.dumps, config.out)
    beam_args = beam_flags(beam_args)
    check_stages(STAGES, run)  # the engine reachable, every dump found, before OUT is touched
    notes = run.notes()
    if config.eval_size == 0:  # allowed (a release to train on only), but never unsaid: every dev and test file is empty
        notes.append("--eval-size 0: every dev, test1 and test2 file is empty (no query is held out; train gets them all)")
        LOG.warning(notes[-1])
    for folder in (config.out, run.work_root):
        fileio.check_writable(folder)
    # From here until the manifest is written, OUT is marked unfinished (layout.IN_PROGRESS):
    # a failed or killed run leaves the mark, and validate, download and the loader refuse it.
    marker = fileio.join(config.out, layout.IN_PROGRESS)
    fileio.write_json(marker, {"incomplete": "clirmatrix build has not finished writing this folder; rerun clirmatrix build"})
    if marked is not None:
        marked.append(config.out)
    log = StageLog(run.work_root)
    summaries = run_stages(STAGES, run, beam_args, log)
    langs = list(run.langs)
    release = release_settings(config)
    if release.multi_langs and not summaries[WriteRelease.name].multi8:
        missing = sorted(set(release.multi_langs) - set(langs))
        notes.append(f"MULTI-8 not built: {', '.join(missing)} missing (needs {', '.join(release.multi_langs)})")
        LOG.warning(notes[-1])

    version = metadata.version("clirmatrix")
    manifest = {
        "clirmatrix": version,
        "versions": _versions(),
        "gzip": ENCODER,  # what wrote the .gz files: validate compares it with its own (pipeline/output/gzip_encoder.py)
        "settings": {**as_dict(config), "workers": config.workers or default_workers(os.cpu_count() or 1)},  # the most a stage used, not 0
        "inputs": input_checksums(run.docs_inputs() + run.link_inputs(), config.dumps, run.work_root),
        "languages": langs,
        "dropped_languages": sorted(summaries[ExtractDocs.name].dropped),
        "notes": notes,
        "counts": _counts(summaries),
        "input_counts": _input_counts(summaries),
        "files": _file_counts(summaries[WriteRelease.name].files),
        "stage_fingerprints": run.keys,
    }
    fileio.write_json(fileio.join(config.out, layout.MANIFEST), manifest)
    write_card(config.out)
    if fileio.is_remote(config.out):
        notes.append(f"no {layout.REPORT} in {config.out} (an object store): run clirmatrix report on a local copy")
    else:
        write_report(config.out, finished_only=False)
    fileio.remove_tree(marker)
    if marked:
        marked.clear()
    seconds = {stage.name: log.seconds(stage.name) for stage in STAGES}
    return BuildResult(config.out, run.work_root, summaries, seconds, log.skipped, notes)


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
