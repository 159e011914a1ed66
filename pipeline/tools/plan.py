"""What a build will cost before it runs: documents, queries, directions, core-hours, wall clock, memory, disk.

``plan_build`` projects a build of the dumps in a folder (``inputs_from_dumps``) or of
the files a ``clirmatrix dumps list --json`` listing chose (``inputs_from_listing``)
with the rates of ``pipeline/cost_model.json``, which ``bench/scale_bench.py``
measures and dates; nothing in the projection is typed by hand but the published
figures that turn a dump's compressed bytes into articles (``BYTES_PER_ARTICLE``) and
the 2020 release's shape (``RELEASE_SHAPE``), each kept with its source.
docs/planning.md says how the projection is made and how close it came.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

from clirmatrix.pipeline.config import BuildConfig
from clirmatrix.pipeline.errors import InvalidInputError
from clirmatrix.pipeline.method.input_kinds import CIRRUS, HTML, ITEMS_PER_SITE, PAGE_PROPS, WIKIDATA_JSON, XML

COST_MODEL = Path(__file__).resolve().parents[1] / "cost_model.json"
STAGES = ("extract_docs", "extract_sitelinks", "link_entities", "retrieve", "label", "propagate", "write_release", "stats")  # the build's, in order
RUNNERS = ("local", "dask")  # the runners the cost model has start-up costs and memory for
COUNT_LIMIT_BYTES = 256 << 20  # a folder's document dumps up to this size are read and counted; larger ones estimated
LABELS_PER_QUERY_MAX = 100  # hits a query keeps (--k)

# The 2020 release, as docs/formats.md and the dissertation's Table 7.1 give it.
RELEASE_QUERIES = 49_280_000  # every title of the 139 languages
RELEASE_FULL_PAIRS = 34_060_000_000  # labelled (query, document) pairs of BI-139 full
FULL_PAIRS_PER_QUERY = 51  # BI-139 full, en -> af train: 3,011,938 pairs for 58,745 queries (docs/formats.md 1.3)
RELEASE_LANGUAGES = 139
EN_ARTICLES = 7_210_627  # meta.wikimedia.org/wiki/List_of_Wikipedias, 2026-07-19 (bench/realistic_dumps.py PUBLISHED)


@dataclass(frozen=True)
class Figure:
    """A published (or derived) number and where it comes from."""

    value: float
    source: str


# Compressed bytes a document of each kind of dump holds, redirects and other namespaces included.
BYTES_PER_ARTICLE = {
    XML: Figure(24.05e9 / EN_ARTICLES, "en pages-articles.xml.bz2: 24.05 GB (Wikipedia:Size of Wikipedia, 2024-10-16) for 7,210,627 articles (List of Wikipedias, 2026-07-19)"),
    HTML: Figure(
        99.8e9 / EN_ARTICLES, "en Enterprise HTML: ~99.8 GB of tar.gz as bench/realistic_dumps.py projects it from published article sizes (none published; docs/benchmarks.md 2026-11-26)"
    ),
    CIRRUS: Figure(18.7e6 / 4_000, "4,000 English-like articles in 18.7 MB of CirrusSearch gzip (bench/input_bench.py on bench/realistic_dumps.py's articles, docs/benchmarks.md 2026-11-26)"),
}


@dataclass(frozen=True)
class Shape:
    """How many BI-139 full lines and labelled pairs a query gives each other language (a line is a query with a relevant document there)."""

    lines_per_query_and_target: float
    pairs_per_query_and_target: float
    source: str


_TARGETS = RELEASE_QUERIES * (RELEASE_LANGUAGES - 1)
RELEASE_SHAPE = Shape(
    RELEASE_FULL_PAIRS / FULL_PAIRS_PER_QUERY / _TARGETS, RELEASE_FULL_PAIRS / _TARGETS,
    "the 2020 release: 34.06 B labelled pairs, 51 a line, 49.28 M queries into 138 other languages",
)


@dataclass(frozen=True)
class LanguageInput:
    """One language's documents: the dump files, their compressed bytes, and how many documents they hold."""

    lang: str
    kind: str  # CIRRUS, HTML or XML
    files: tuple[tuple[str, int], ...]  # (name or path, compressed bytes)
    documents: int
    counted: bool  # read and counted (as the docs stage keeps them), or estimated from the bytes

    @property
    def bytes(self) -> int:
        return sum(size for _, size in self.files)


@dataclass(frozen=True)
class PlanInputs:
    """What a build would read: each language's documents and the link files."""

    origin: str  # the dumps folder or the listing file
    languages: tuple[LanguageInput, ...]
    link_files: tuple[tuple[str, int], ...] = ()
    link_kind: str | None = None
    generated: bool = False  # the sample generator's dumps (sample-truth.json beside them): its release shape applies
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class StagePlan:
    """One stage's projection: CPU, wall clock on the workers, units, and its largest unit's memory and time."""

    stage: str
    units: int
    cpu_seconds: float
    wall_seconds: float
    largest_unit_mb: float
    largest_unit_seconds: float

    @property
    def core_hours(self) -> float:
        return self.cpu_seconds / 3600


@dataclass(frozen=True)
class LanguagePlanRow:
    """One language in the plan: its documents (counted or estimated), queries, and BI-139 directions from and to it."""

    lang: str
    kind: str
    dump_bytes: int
    documents: int
    counted: bool
    queries: int
    directions: int
    dropped: bool  # fewer than --min-docs documents: the build leaves it out


@dataclass(frozen=True)
class BuildPlan:
    """The projection of one build on ``workers`` workers of ``runner``."""

    inputs: PlanInputs
    runner: str
    workers: int
    languages: tuple[LanguagePlanRow, ...]
    directions: int  # BI-139's, n (n - 1)
    multi8_directions: int  # MULTI-8's, when its 8 languages are all there
    stages: tuple[StagePlan, ...]
    disk_dumps: int
    disk_work: int
    disk_out: int
    peak_worker_mb: float
    driver_mb: float
    model_date: str
    model_command: str
    notes: tuple[str, ...] = ()

    @property
    def documents(self) -> int:
        return sum(row.documents for row in self.languages if not row.dropped)

    @property
    def queries(self) -> int:
        return sum(row.queries for row in self.languages if not row.dropped)

    @property
    def wall_seconds(self) -> float:
        return sum(stage.wall_seconds for stage in self.stages)

    @property
    def core_hours(self) -> float:
        return sum(stage.core_hours for stage in self.stages)

    @property
    def estimated(self) -> bool:
        return any(not row.counted for row in self.languages)


class CostModelError(InvalidInputError):
    """The cost model file is missing, unreadable, or lacks what a plan needs."""


@dataclass
class CostModel:
    """The measured rates of ``pipeline/cost_model.json`` (written by ``bench/scale_bench.py``)."""

    measured: str
    command: str
    rates: dict[str, float]
    extract_per_byte: dict[str, float]
    sitelinks_per_byte: float
    overhead: dict[str, dict[str, dict[str, float]]]  # runner -> stage -> {"fixed": s, "per_unit": s}
    memory: dict  # {"base_mb", "per_amount_mb", "dask_offset_mb", "driver_mb", "local_growth": {stage: {base, a, p, most}}}
    disk: dict[str, float]  # bytes a document and a document and target language, of WORK and OUT
    sample_shape: Shape | None = None
    raw: dict = field(default_factory=dict)

    @classmethod
    def read(cls, path: str | Path = COST_MODEL) -> CostModel:
        """The cost model at ``path``; CostModelError naming what is missing (rerun ``bench/scale_bench.py``)."""
        try:
            value = json.loads(Path(path).read_text())
        except (OSError, ValueError) as error:
            raise CostModelError(f"{path}: no cost model ({error}); run bench/scale_bench.py") from None
        return cls.from_dict(value, str(path))

    @classmethod
    def from_dict(cls, value: dict, origin: str = "the cost model") -> CostModel:
        """A cost model from its JSON's value; CostModelError naming what is missing."""
        missing = [key for key in ("measured", "command", "rates_cpu_seconds", "extract_docs_per_byte", "overhead_seconds", "memory_mb", "disk_bytes") if key not in value]
        if missing:
            raise CostModelError(f"{origin}: the cost model lacks {', '.join(missing)}; rerun bench/scale_bench.py")
        shape = value.get("sample_shape")
        return cls(
            value["measured"], value["command"], value["rates_cpu_seconds"], value["extract_docs_per_byte"], value.get("extract_sitelinks_per_byte", 0.0),
            value["overhead_seconds"], value["memory_mb"], value["disk_bytes"],
            Shape(shape["lines_per_query_and_target"], shape["pairs_per_query_and_target"], "the sample generator, as scale_bench's small builds wrote it") if shape else None,
            value,
        )

    def extract_rate(self, kind: str, name: str) -> float:
        """CPU seconds a compressed byte of a dump of ``kind``, by its compression (the kind's other compression, else the slowest, when unmeasured)."""
        key = extract_key(kind, name)
        if key in self.extract_per_byte:
            return self.extract_per_byte[key]
        same_kind = [rate for name_, rate in self.extract_per_byte.items() if name_.startswith(kind + ".")]
        return max(same_kind or self.extract_per_byte.values())


def extract_key(kind: str, name: str) -> str:
    """A dump's key among the extraction rates: its kind and compression (``xml.bz2``, ``html.gz``, ``cirrus.gz``)."""
    return kind + (".bz2" if name.endswith(".bz2") else ".gz" if name.endswith(".gz") else "")


# --- inputs ----------------------------------------------------------------------------------------


def inputs_from_dumps(dumps_dir: str, langs: Sequence[str] | None = None, source: str = "auto", count_limit: int = COUNT_LIMIT_BYTES) -> PlanInputs:
    """The documents and link files of a dumps folder, found as the build finds them; documents counted by reading
    the dumps to their end when they are small (``count_limit`` bytes in all), else estimated from their bytes.

    A dump that does not reach its end (cut short or damaged: the build would stop on it),
    or whose size is not the one ``clirmatrix dumps fetch`` verified (its ``.NAME.verified``
    stamp), is a ``DamagedDumpError`` naming the file: never a plan of a smaller language.
    """
    from clirmatrix.pipeline.io.fileio import size_of
    from clirmatrix.pipeline.method.dumps import choose_links, find_dumps

    found, _ = find_dumps(dumps_dir, list(langs) if langs else None, source, links=None)
    links = choose_links(found, "auto", dumps_dir, sorted(found.docs))
    link_files = tuple((path, size_of(path)) for path in (*links.sitelinks_files, *(path for _, path in links.page_props)))
    doc_files = {lang: tuple((dump.path, size_of(dump.path)) for dump in dumps) for lang, dumps in sorted(found.docs.items())}
    unverified = {path for path, size in (*link_files, *(file for files in doc_files.values() for file in files)) if not _as_fetched(path, size)}
    total = sum(size for files in doc_files.values() for _, size in files)
    count = total <= count_limit
    languages = []
    for lang, files in doc_files.items():
        kind = found.docs[lang][0].kind
        documents = count_documents([path for path, _ in files], lang, kind) if count else estimate_documents(kind, sum(size for _, size in files))
        languages.append(LanguageInput(lang, kind, files, documents, count))
    notes = list(found.notes)
    if not count:
        unchecked = [os.path.basename(path) for files in doc_files.values() for path, _ in files if path in unverified]
        note = f"documents estimated from {total / 1e9:,.1f} GB of dumps (over {count_limit >> 20} MB: not read"
        if unchecked:
            shown = ", ".join(unchecked[:3]) + (f" and {len(unchecked) - 3:,} more" if len(unchecked) > 3 else "")
            note += f", so a dump cut short is not noticed: no dumps fetch stamp to check the size of {shown})"
        notes.append(note + ("" if unchecked else "; each has the size dumps fetch verified)"))
    generated = os.path.exists(os.path.join(dumps_dir, "sample-truth.json"))
    return PlanInputs(dumps_dir, tuple(languages), link_files, links.sitelinks_kind or (PAGE_PROPS if links.page_props else None), generated, tuple(notes))


class DamagedDumpError(InvalidInputError):
    """A dump that ``plan`` found cut short or damaged: the build would stop on it."""


def _as_fetched(path: str, size: int) -> bool:
    """Whether ``clirmatrix dumps fetch`` verified this file (its stamp) at this size; ``DamagedDumpError`` when it did at another."""
    from clirmatrix.pipeline.tools.dumps_fetch import stamp_path

    if "://" in path:
        return False
    try:
        stamped = json.loads(stamp_path(Path(path)).read_bytes())["size"]
    except (OSError, ValueError, KeyError, TypeError):
        return False
    if stamped != size:
        raise DamagedDumpError(
            f"{path}: {size:,} bytes, but clirmatrix dumps fetch verified it at {stamped:,} (the size the dumps site published): "
            "it was cut or changed since; fetch it again"
        )
    return True


def count_documents(paths: Sequence[str], lang: str, kind: str) -> int:
    """The documents the docs stage keeps from these dump files: every article its reader yields, a repeated id once.

    Each file is read to its end; one that does not reach it (a cut or damaged stream,
    XML that stops parsing) is a ``DamagedDumpError`` naming it, where it broke and why.
    """
    from clirmatrix.pipeline.formats.articles import read_dump
    from clirmatrix.pipeline.io import fileio
    from clirmatrix.pipeline.io.badinput import STREAM_LOSS, FileReport
    from clirmatrix.pipeline.io.positions import describe_position

    ids: set[str] = set()
    for path in paths:
        report = FileReport(file=path, lang=lang)
        with fileio.open_raw(path) as raw:
            ids.update(article.doc_id for article in read_dump(raw, path, kind, report))
        for loss in (example for example in report.examples if example["kind"] in STREAM_LOSS):
            raise DamagedDumpError(
                f"{path}: {loss['kind']} at {describe_position(loss['line'])}, after {report.kept:,} articles: {loss['detail']}; "
                "plan reads each dump to its end, and the build would stop on this one: fetch it again"
            )
    return len(ids)


def estimate_documents(kind: str, compressed_bytes: int) -> int:
    """Articles in ``compressed_bytes`` of a dump of ``kind``, at English's published bytes an article (``BYTES_PER_ARTICLE``)."""
    return round(compressed_bytes / BYTES_PER_ARTICLE[kind].value)


_LINK_KINDS = {ITEMS_PER_SITE: "items-per-site", WIKIDATA_JSON: "wikidata-json", PAGE_PROPS: "page-props"}


def inputs_from_listing(path: str, langs: Sequence[str] | None = None) -> PlanInputs:
    """The files a ``dumps list --json`` listing chose: each language's document files, sizes as published, documents estimated."""
    from clirmatrix.pipeline.tools.dumps_site import DumpListing

    listing = DumpListing.read(path)
    by_lang: dict[str, list] = {}
    link_files, link_kind = [], None
    for item in listing.chosen:
        if item.kind in (CIRRUS, HTML, XML) and item.lang:
            by_lang.setdefault(item.lang, []).append(item)
        elif item.kind in _LINK_KINDS:
            link_files.append((item.name, item.size or 0))
            link_kind = link_kind if link_kind in (ITEMS_PER_SITE, WIKIDATA_JSON) else item.kind
    wanted = list(dict.fromkeys(langs)) if langs else sorted(by_lang)
    if missing := [lang for lang in wanted if lang not in by_lang]:
        raise InvalidInputError(f"{path}: the listing chose no document dump for {', '.join(missing)}")
    if not wanted:
        raise InvalidInputError(f"{path}: the listing chose no document dump (rerun `clirmatrix dumps list` with --langs)")
    languages, unsized = [], []
    for lang in wanted:
        items = by_lang[lang]
        kinds = {item.kind for item in items}
        if len(kinds) > 1:
            raise InvalidInputError(f"{path}: {lang} has documents of several kinds chosen ({', '.join(sorted(kinds))}); a build reads one")
        unsized += [item.name for item in items if item.size is None]
        files = tuple((item.name, item.size or 0) for item in items)
        kind = items[0].kind
        languages.append(LanguageInput(lang, kind, files, estimate_documents(kind, sum(size for _, size in files)), False))
    notes = [f"{len(unsized)} file(s) without a published size counted as 0 bytes: {', '.join(unsized[:3])}"] if unsized else []
    return PlanInputs(path, tuple(languages), tuple(link_files), link_kind, False, tuple(notes))


# --- the projection --------------------------------------------------------------------------------


@dataclass(frozen=True)
class PlanSettings:
    """The build settings a projection depends on: each field is the ``BuildConfig`` setting of its name.

    No defaults here: ``of()`` takes them from a ``BuildConfig`` (the build's own
    defaults without one), so the plan projects exactly the build those flags make, and
    ``clirmatrix plan`` offers these fields as the build's flags (``cli/plan.py``).
    """

    min_docs: int
    multi_langs: tuple[str, ...]
    train_size: int
    eval_size: int
    shard_docs: int
    block_size: int
    search_unit_queries: int
    split_mb: int

    @classmethod
    def of(cls, config: BuildConfig | None = None, **given: object) -> PlanSettings:
        """The settings of ``config`` (a checked ``BuildConfig``; its defaults without one), with ``given`` over them."""
        config = replace(config or BuildConfig(), **given).check(needs=()) if given or config is None else config
        return cls(**{setting.name: getattr(config, setting.name) for setting in fields(cls)})

    @property
    def split_bytes(self) -> int:
        """``split_mb`` in bytes, as the build cuts its dumps (``BuildConfig.split_bytes``)."""
        return self.split_mb << 20


def largest_unit_docs(stage: str, largest_docs: int, settings: PlanSettings) -> float:
    """The documents of a stage's largest unit: a shard, a block, or (the rest) the largest language's."""
    return unit_amounts(stage, largest_docs, settings) or float(largest_docs)


def unit_amounts(stage: str, largest_docs: int, settings: PlanSettings) -> float:
    """The documents (or queries) the stage's largest unit holds in memory: what its memory grows with."""
    if stage == "retrieve":
        return min(largest_docs, settings.shard_docs)
    if stage in ("label", "propagate"):
        return min(largest_docs, settings.block_size)
    if stage in ("link_entities", "write_release"):
        return largest_docs
    return 0.0


def _blocks(docs: int, settings: PlanSettings) -> int:
    return max(1, -(-docs // settings.block_size))


def stage_units(docs: dict[str, int], inputs: PlanInputs, settings: PlanSettings) -> dict[str, int]:
    """How many units each stage plans for these languages, as its planner cuts them (docs/architecture.md)."""
    from clirmatrix.pipeline.method.retrieval import RetrievalSettings, plan_units

    n, blocks = len(docs), sum(_blocks(d, settings) for d in docs.values())
    kept = [lang for lang in inputs.languages if lang.lang in docs]
    ranged = lambda lang: lang.kind != CIRRUS and any(name.endswith(".bz2") or lang.kind == HTML for name, _ in lang.files)  # noqa: E731
    extract = sum(max(1, math.ceil(size / settings.split_bytes)) if ranged(lang) else 1 for lang in kept for _, size in lang.files)
    retrieval = RetrievalSettings(shard_docs=settings.shard_docs, block_size=settings.block_size, search_unit_queries=settings.search_unit_queries)
    retrieve = len(plan_units([retrieval.plan(lang, d) for lang, d in docs.items()], retrieval))
    multi8 = set(settings.multi_langs) <= set(docs)
    write = 3 * n + 1 + n * (n - 1) + (1 + sum(_blocks(docs[lang], settings) for lang in settings.multi_langs) + len(settings.multi_langs) if multi8 else 0)
    sitelinks = sum(max(1, math.ceil(size / settings.split_bytes)) if name.endswith(".bz2") else 1 for name, size in inputs.link_files)
    return {
        "extract_docs": extract, "extract_sitelinks": max(1, sitelinks), "link_entities": n, "retrieve": retrieve,
        "label": blocks, "propagate": n + blocks, "write_release": write, "stats": n,  # stats: no pipeline; its tables and maps grow with languages
    }


def stage_cpu(inputs: PlanInputs, docs: dict[str, int], model: CostModel, settings: PlanSettings, shape: Shape) -> dict[str, tuple[float, float]]:
    """(CPU seconds, the largest unit's CPU seconds) of each stage, from the model's rates."""
    r = model.rates
    n, total = len(docs), sum(docs.values())
    largest = max(docs.values(), default=0)
    kept = [lang for lang in inputs.languages if lang.lang in docs]
    extract = [(size * model.extract_rate(lang.kind, name), min(size, settings.split_bytes) * model.extract_rate(lang.kind, name)) for lang in kept for name, size in lang.files]
    links = [size * model.sitelinks_per_byte for _, size in inputs.link_files]
    shards = {lang: max(1, -(-d // settings.shard_docs)) for lang, d in docs.items()}
    # A query and shard: a fixed part and one that grows with the shard's documents (a real title's terms are each in a
    # share of the texts, so its postings grow with the shard; docs/benchmarks.md 2026-11-29). A model without it: fixed.
    per_shard = lambda shard: r["search_per_query_and_shard"] + r.get("search_per_query_shard_and_document", 0.0) * shard  # noqa: E731
    search = sum(d * shards[lang] * per_shard(d / shards[lang]) for lang, d in docs.items())
    merge = sum(d * shards[lang] for lang, d in docs.items() if shards[lang] > 1) * r["merge_per_query_and_shard"]
    one_shard = min(largest, settings.shard_docs)
    search_unit = one_shard * r["index_per_document"] + min(largest, settings.search_unit_queries if largest > settings.shard_docs else largest) * per_shard(
        largest / max(1, -(-largest // settings.shard_docs))
    )
    block = min(largest, settings.block_size)
    labels = r["labels_per_query"]
    carry_row = r["carry_per_label_row"] + r["carry_per_label_row_and_target"] * max(n - 1, 0)
    # BI-139: each direction's full lines and pairs (the shape), and its base lines (train + 3 eval sets, 100 pairs each).
    base_cap = settings.train_size + 3 * settings.eval_size

    def direction(queries: int) -> tuple[float, float]:
        full_lines = queries * shape.lines_per_query_and_target
        base_lines = min(base_cap, full_lines)
        return full_lines + base_lines, queries * shape.pairs_per_query_and_target + LABELS_PER_QUERY_MAX * base_lines

    per_direction = [direction(docs[src]) for src in docs for tgt in docs if src != tgt]
    write_cpu = lambda lines, pairs: lines * r["write_per_line"] + pairs * r["write_per_pair"]  # noqa: E731
    write = sum(write_cpu(*d) for d in per_direction) + total * (r["docs_per_document"] + r["splits_per_document"])
    return {
        "extract_docs": (sum(cpu for cpu, _ in extract), max((unit for _, unit in extract), default=0.0)),
        "extract_sitelinks": (sum(links), max(links, default=0.0)),
        "link_entities": (total * r["link_entities_per_document"], largest * r["link_entities_per_document"]),
        "retrieve": (total * r["index_per_document"] + search + merge, search_unit),
        "label": (total * r["label_per_query"], block * r["label_per_query"]),
        "propagate": (
            2 * max(n - 1, 0) * total * r["pair_languages_per_document_and_language"] + carry_row * labels * total,
            max(carry_row * labels * block, 2 * max(n - 1, 0) * largest * r["pair_languages_per_document_and_language"]),
        ),
        "write_release": (write, max(write_cpu(*direction(largest)), largest * r["docs_per_document"]) if n > 1 else 0.0),
        "stats": (0.0, 0.0),
    }


GROWTH_REACH = 4.0  # how far past the documents a worker ran through in the measured builds the local growth is extrapolated


def worker_mb(memory: dict, stage: str, runner: str, docs_per_worker: float, units_per_worker: float, amount: float, offset: float) -> float:
    """A stage's worker's peak memory.

    On the local runner a worker process runs unit after unit and keeps what it allocated,
    so its peak grows with the documents it runs through (``by: worker``), or, for a stage
    whose peak is its largest unit (a language's index), with that unit's (``by: unit``):
    ``base + a * docs ** p``, fitted over the small local builds at two sizes
    (``local_growth``), extrapolated at most ``GROWTH_REACH`` times past the most measured. On Dask (and with a model
    without that fit): the stage's baseline, its growth with the units a worker ran (as
    far as measured), and what grows with its largest unit's documents (the scale runs).
    """
    growth = memory.get("local_growth", {}).get(stage)
    if runner == "local" and growth:
        docs = min(docs_per_worker, GROWTH_REACH * growth["most"])
        return growth["base"] + growth["a"] * docs ** growth["p"]
    ran = min(units_per_worker, memory.get("most_units", {}).get(stage, 0.0))
    mb = memory["base_mb"].get(stage, 0.0) + offset + memory.get("per_unit_mb", {}).get(stage, 0.0) * ran
    return mb + memory["per_amount_mb"].get(stage, 0.0) * amount


def stage_workers(stage: str, units: int, workers: int | None, cores: int) -> int:
    """The processes a stage's units are spread over: ``workers`` (else the build's default, its units up to ``cores``), at most its units; ``stats`` runs in the driver."""
    if stage == "stats":
        return 1
    return max(1, min(workers or min(units, cores), units))


def plan_build(
    inputs: PlanInputs, workers: int | None = None, runner: str = "local", settings: PlanSettings | None = None, model: CostModel | None = None, cores: int | None = None
) -> BuildPlan:
    """Project a build of ``inputs`` on ``workers`` workers (one core each) of ``runner``.

    ``workers`` None is the build's default: per stage as many local worker processes
    as it has units, up to ``cores`` (this machine's); a local stage of one worker runs
    in the driver's process (Beam's in-memory mode) and pays no start-up. A stage's
    wall clock is its start-up (fixed, and a share a unit spread over the workers, as
    measured on small builds) plus the larger of its CPU over the workers and its
    largest unit; its memory, the stage's baseline on a worker plus what grows with its
    largest unit's documents; disk, linear in documents and in documents times target
    languages.
    """
    model = model or CostModel.read()
    settings = settings or PlanSettings.of()
    if runner not in model.overhead:
        raise InvalidInputError(f"no measurements for the {runner} runner in the cost model (it has {', '.join(sorted(model.overhead))})")
    if workers is not None and workers < 1:
        raise InvalidInputError(f"--workers must be at least 1, not {workers}")
    cores = cores or os.cpu_count() or 1
    docs = {lang.lang: lang.documents for lang in inputs.languages if lang.documents >= settings.min_docs}
    n = len(docs)
    shape = model.sample_shape if inputs.generated and model.sample_shape else RELEASE_SHAPE
    units = stage_units(docs, inputs, settings)
    cpu = stage_cpu(inputs, docs, model, settings, shape)
    largest = max(docs.values(), default=0)
    total_docs = sum(docs.values())
    memory = model.memory
    offset = memory.get("dask_offset_mb", 0.0) if runner == "dask" else 0.0
    stages = []
    for stage in STAGES:
        work, unit_seconds = cpu[stage]
        parallel = stage_workers(stage, units[stage], workers, cores)
        in_driver = runner == "local" and (workers or min(units[stage], cores)) <= 1 and stage != "stats"
        overhead = {"fixed": 0.0, "per_unit": 0.0} if in_driver else model.overhead[runner].get(stage, {"fixed": 0.0, "per_unit": 0.0})
        wall = overhead["fixed"] + overhead["per_unit"] * units[stage] / parallel + max(work / parallel, unit_seconds)
        through = largest_unit_docs(stage, largest, settings) if memory.get("local_growth", {}).get(stage, {}).get("by") == "unit" else total_docs / parallel
        mb = worker_mb(memory, stage, runner, through, units[stage] / parallel, unit_amounts(stage, largest, settings), offset)
        stages.append(StagePlan(stage, units[stage], work, wall, mb, unit_seconds))
    total = sum(docs.values())
    targets = total * max(n - 1, 0)
    disk = model.disk
    rows = tuple(
        LanguagePlanRow(lang.lang, lang.kind, lang.bytes, lang.documents, lang.counted, lang.documents, 2 * (n - 1) if lang.lang in docs else 0, lang.lang not in docs)
        for lang in inputs.languages
    )
    notes = list(inputs.notes)
    estimated = sorted({lang.kind for lang in inputs.languages if not lang.counted})
    if estimated:
        figures = (f"{kind}: {BYTES_PER_ARTICLE[kind].value:,.0f} bytes an article ({BYTES_PER_ARTICLE[kind].source})" for kind in estimated)
        notes.append("documents estimated from compressed bytes: " + "; ".join(figures))
    notes += [f"{row.lang}: {row.documents:,} documents, under --min-docs {settings.min_docs:,}: left out" for row in rows if row.dropped]
    notes.append(f"BI-139 lines and pairs from {shape.source}")
    multi8 = set(settings.multi_langs) <= set(docs)
    return BuildPlan(
        inputs, runner, workers or cores, rows, n * (n - 1), len(settings.multi_langs) * (len(settings.multi_langs) - 1) if multi8 else 0, tuple(stages),
        disk_dumps=sum(lang.bytes for lang in inputs.languages) + sum(size for _, size in inputs.link_files),
        disk_work=round(disk["work_per_document"] * total + disk["work_per_document_and_target"] * targets),
        disk_out=round(disk["out_per_document"] * total + disk["out_per_document_and_target"] * targets),
        peak_worker_mb=max((stage.largest_unit_mb for stage in stages), default=0.0),
        driver_mb=memory["driver_mb"].get(runner, 0.0),
        model_date=model.measured, model_command=model.command, notes=tuple(notes),
    )
