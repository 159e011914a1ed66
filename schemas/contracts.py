"""What the layers hand each other besides Parquet: units of work, their tasks, and the plan of a language.

The driver (beam_jobs/) plans every unit of a stage before it starts; a unit
travels to a worker, which calls the library function (pipeline/) its task names
with the task's fields. Tasks are frozen dataclasses, one per kind of work, so a
unit says what it does by its type, not by the position of values in a tuple,
and a stage routes it with a ``match`` on that type. The function answers with a
report, a frozen dataclass too (``Report``), which the worker stores as JSON under
the unit's name with its type; the driver reads the reports back as their types
to make the stage's summary, a frozen dataclass again (``Summary``): the stage's
``_SUCCESS.json``, its record in ``WORK/_stages/``, and what the build, the
command line and the stages after it read; a language's entry in it is a frozen
dataclass too (``DocsLanguage``, ``RetrievalLanguage``, ...). ``LanguagePlan`` is
how one language is cut: every stage from retrieval on records it in its summary
(the ``plan`` of each language's entry), and the next stage reads it back from there.

Everything here is plain data: picklable for the runner, comparable, and with
no import above ``schemas/``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, fields, is_dataclass
from functools import cache
from typing import ClassVar, get_args, get_origin, get_type_hints


def even_bounds(n: int, parts: int) -> list[tuple[int, int]]:
    """``[start, end)`` of ``parts`` near-equal consecutive ranges of ``range(n)``."""
    edges = [n * i // parts for i in range(parts + 1)]
    return list(zip(edges[:-1], edges[1:]))


@dataclass(frozen=True)
class LanguagePlan:
    """How one language is cut into units: shards of its documents, blocks of its queries.

    Shards (retrieval, docs/method.md section 4) are near-equal ranges of document
    positions; blocks (retrieval's output, labels, propagation, writing) are
    ``block_size`` consecutive query positions. Every query is the title of the
    document at the same position, so a language has ``docs`` queries.
    """

    lang: str
    docs: int
    shards: int
    block_size: int

    @property
    def blocks(self) -> int:
        return -(-self.docs // self.block_size)

    def block(self, index: int) -> tuple[int, int]:
        """Query positions ``[start, end)`` of a block."""
        start = index * self.block_size
        return start, min(self.docs, start + self.block_size)

    def block_groups(self, queries: int) -> list[tuple[int, int]]:
        """``[first, end)`` block numbers of consecutive groups of at most ``queries`` queries (at least one block each)."""
        per_group = max(1, queries // self.block_size)
        return [(first, min(self.blocks, first + per_group)) for first in range(0, self.blocks, per_group)]

    def shard(self, index: int) -> tuple[int, int]:
        """Document positions ``[start, end)`` of a shard."""
        return even_bounds(self.docs, self.shards)[index]

    def to_dict(self) -> dict:
        return {"lang": self.lang, "docs": self.docs, "shards": self.shards, "block_size": self.block_size}

    @classmethod
    def from_dict(cls, value: dict) -> LanguagePlan:
        return cls(value["lang"], value["docs"], value["shards"], value["block_size"])


def language_plans(summary: RetrievalSummary | LabelSummary | PropagationSummary) -> list[LanguagePlan]:
    """The plans a stage's summary records, by language (every stage after retrieval keeps retrieval's blocks)."""
    return [entry.plan for _, entry in sorted(summary.languages.items())]


@dataclass(frozen=True, order=True)
class Unit:
    """One unit of work: run by ``step`` (units of a later step wait for every unit of an earlier one), reported under ``name``."""

    step: str
    name: str  # unique in its stage: the report's file name
    task: object = None  # one of the task types below (or a stage's own frozen dataclass)


# The tasks of the stages. Each names the data one unit reads and writes; the
# settings that apply to all of a stage's units travel with the stage, not here.


@dataclass(frozen=True)
class IndexPartTask:
    """One part of an Enterprise HTML dump (tar.gz) indexed: part ``number`` of ``4 x --split-mb`` compressed bytes (extract_docs, before it plans)."""

    path: str
    number: int


@dataclass(frozen=True)
class IndexJoinTask:
    """An Enterprise HTML dump's index parts joined into its seek index (extract_docs, before it plans)."""

    path: str


@dataclass(frozen=True)
class FinalizeTask:
    """One language's documents finalised once its dumps are read: repeated ids dropped, counted (extract_docs).

    Its dumps' units (``pipeline.extraction.docs.DocsUnit``, their own tasks) are named in
    ``units``: it reads their reports.
    """

    lang: str
    units: tuple[str, ...]


@dataclass(frozen=True)
class LanguageTask:
    """One language's documents matched to their entities (link_entities)."""

    lang: str


@dataclass(frozen=True)
class SplitsTask:
    """One language's queries given their eval role, priority and key (write_release)."""

    lang: str


@dataclass(frozen=True)
class DocsTask:
    """One language's ``DOCS`` and ``DOCS-FULL`` files (write_release)."""

    lang: str


@dataclass(frozen=True)
class BlockTask:
    """One block of a language's queries: labelled (label), or gathered for MULTI-8 (write_release)."""

    plan: LanguagePlan
    block: int


@dataclass(frozen=True)
class ShardTask:
    """One shard of a language's documents: its terms counted and its index stored (retrieve; a cluster: the whole language indexed)."""

    plan: LanguagePlan
    shard: int


@dataclass(frozen=True)
class PartitionTask:
    """One partition of a language's terms: their document frequencies summed over the shards (retrieve)."""

    plan: LanguagePlan
    partition: int


@dataclass(frozen=True)
class SearchTask:
    """Blocks ``[first_block, end_block)`` of a language's titles searched in one shard (retrieve)."""

    plan: LanguagePlan
    shard: int
    first_block: int
    end_block: int


@dataclass(frozen=True)
class PairingTask:
    """One language's documents paired with the same entity's article in each of ``langs`` (propagate)."""

    lang: str
    langs: tuple[str, ...]


@dataclass(frozen=True)
class CarryTask:
    """One block of a language's labels carried into each of ``langs`` (propagate)."""

    plan: LanguagePlan
    block: int
    langs: tuple[str, ...]


@dataclass(frozen=True)
class EvalTask:
    """The dev and test sets of every direction from one query language (write_release)."""

    plan: LanguagePlan
    others: tuple[str, ...]


@dataclass(frozen=True)
class Multi8EvalTask:
    """MULTI-8's dev and test entities (write_release)."""


@dataclass(frozen=True)
class EvalKeysTask:
    """The union of every eval set's keys, then MULTI-8's queries when it is built (write_release)."""

    langs: tuple[str, ...]
    multi8: bool


@dataclass(frozen=True)
class DirectionTask:
    """One BI-139 direction's files, ``full`` and ``base``, of every split (write_release)."""

    src: LanguagePlan
    tgt: LanguagePlan


@dataclass(frozen=True)
class Multi8TargetTask:
    """The MULTI-8 files of one document language (write_release)."""

    tgt: LanguagePlan


@dataclass(frozen=True)
class FileTask:
    """One file of a tree, by its path relative to the tree (stats' counts of a download)."""

    path: str


@dataclass(frozen=True)
class ExportTask:
    """One released file turned into files of another format (``clirmatrix export``): what it reads and writes, below their roots."""

    fmt: str  # hf, beir or pyserini
    kind: str  # queries (a query file) or docs (a DOCS file)
    source: str  # the released path read
    outputs: tuple[str, ...]  # the paths written, below the export folder


# The reports of the units. Each is what its unit did, in counts a summary adds up;
# the runner adds what the unit cost (``unit_seconds``, ``unit_cpu_seconds``), which
# the benchmarks' cost models read.


REPORT_TYPE = "report_type"  # the key of a stored report that names its type


@dataclass(frozen=True, kw_only=True)
class Report:
    """What a unit did; stored as JSON with its type's name (``REPORT_TYPE``) so that it reads back as that type."""

    unit_seconds: float | None = None  # wall time of the unit, set by the runner of a stage's steps (None: not timed)
    unit_cpu_seconds: float | None = None  # CPU time of the unit's process, likewise

    def to_dict(self) -> dict:
        return {REPORT_TYPE: type(self).__name__, **asdict(self)}


def read_typed_report(value: dict) -> Report:
    """A report as ``Report.to_dict`` stored it, as its own type."""
    kind = _REPORT_KINDS.get(value.get(REPORT_TYPE, ""))
    if kind is None:
        raise ValueError(f"not a unit report of a known kind: {sorted(value)[:8]}")
    return _as(kind, value)


def _as(kind: type, value: dict):
    """``value`` (a stored dataclass) as ``kind``: its fields taken by name (a dataclass among them read back as its type), the stored type's name left out."""
    return kind(**{name: value[name] if read is None else read(value[name]) for name, read in _field_readers(kind).items() if name in value})


@cache
def _field_readers(kind: type) -> dict[str, Callable[[object], object] | None]:
    """Each field of ``kind`` with how its stored value reads back: None for plain JSON values (kept as stored)."""
    hints = get_type_hints(kind)
    return {f.name: _reader(hints[f.name]) for f in fields(kind)}


def _reader(hint: object) -> Callable[[object], object] | None:
    """How a stored value of type ``hint`` reads back: a dataclass, or a list or mapping of dataclasses, as their type; None for anything else."""
    if is_dataclass(hint):
        return lambda value: _as(hint, value)
    if get_origin(hint) is list and is_dataclass(get_args(hint)[0]):
        item = get_args(hint)[0]
        return lambda value: [_as(item, entry) for entry in value]
    if get_origin(hint) is dict and is_dataclass(get_args(hint)[1]):
        item = get_args(hint)[1]
        return lambda value: {key: _as(item, entry) for key, entry in value.items()}
    return None


@dataclass(frozen=True, kw_only=True)
class IndexPartReport(Report):
    """A part of a tar.gz dump indexed: whether it held a block start, the bytes it decoded and its head; or why the file is damaged."""

    file: str
    part: int
    seconds: float
    empty: bool | None = None
    decoded: int | None = None  # bytes of the stream the part decoded
    head: int | None = None  # of which those left to the join (decoded without the real window)
    error: str = ""  # the file is damaged: the stage stops, naming it


@dataclass(frozen=True, kw_only=True)
class IndexJoinReport(Report):
    """A tar.gz dump's seek index joined from its parts (or made in one pass): its checkpoints, members and size; or why not."""

    file: str
    seconds: float
    joined: dict[str, int] | None = None  # ``gzip_parts.join_parts``'s report: parts, empty parts, head bytes decoded again, bytes fetched
    one_pass: str = ""  # why the parts did not join: the dump was indexed in one pass instead
    checkpoints: int | None = None
    members: int | None = None
    uncompressed: int | None = None
    missing_parts: list[int] | None = None  # parts that wrote no index (each reported the damage it found): nothing joined
    error: str = ""  # the file is damaged: the stage stops, naming it


@dataclass(frozen=True, kw_only=True)
class DocsUnitReport(Report):
    """A dump file or range read into its docs Parquet: its rank in its language, its output and its bad-input ``FileReport``."""

    rank: int
    output: str
    part: dict | None  # a range of a bz2 dump: its index and CRC pieces, checked across the ranges
    seconds: float
    report: dict  # its ``FileReport`` as a dict


@dataclass(frozen=True, kw_only=True)
class DocsLanguageReport(Report):
    """One language's documents extracted: kept after repeated ids are dropped, and each of its units' own report."""

    lang: str
    docs: int
    duplicates: int
    dropped: bool  # fewer than --min-docs: its files go
    units: list[DocsUnitReport]  # in rank order


@dataclass(frozen=True, kw_only=True)
class LinksFileReport(Report):
    """One links input (a Wikidata-wide file or range, or a wiki's page_props): links by language and its bad-input report."""

    rank: int
    kind: str  # the input's kind: wikidata-json, items-per-site or page-props
    lang: str  # page_props: the wiki's language
    seconds: float
    links: dict[str, int]
    part: dict | None  # a range of a bz2 file: its index, CRC pieces and framing
    report: dict  # its ``FileReport`` as a dict


@dataclass(frozen=True, kw_only=True)
class LinkReport(Report):
    """One language's documents matched to entities (docs/method.md section 3): how each was linked, or why not."""

    lang: str
    docs: int
    sitelinks: int
    linked_wikidata: int
    linked_dump: int
    unlinked: int
    disagreements: int  # Wikidata linked the page to another entity than the dump names
    sitelinks_without_doc: int  # e.g. sitelinks to redirects, or pages newer than the dump
    dump_links_conflicting: int  # dump entity already has another page here; not used
    duplicate_titles: int
    page_props: int  # pages whose own entity came from the wiki's page_props (their record named none)
    page_props_disagreements: int  # the record names another entity than page_props does (the record is kept)


@dataclass(frozen=True, kw_only=True)
class TermCountReport(Report):
    """A shard indexed and its terms counted: how many terms, and its field statistics (which the search step adds up)."""

    lang: str
    shard: int
    terms: int
    statistics: dict[str, dict[str, int]]  # ``CollectionStatistics`` as a dict: title and text, each doc_count and sum_total_term_freq
    seconds: float


@dataclass(frozen=True, kw_only=True)
class TermSumReport(Report):
    """A partition of a language's terms with their language-wide document frequencies."""

    lang: str
    partition: int
    terms: int


@dataclass(frozen=True, kw_only=True)
class ClusterIndexReport(Report):
    """A language indexed on an engine that shards it itself (Elasticsearch), or found indexed already (``reused``)."""

    lang: str
    docs: int
    reused: bool
    index_seconds: float


@dataclass(frozen=True, kw_only=True)
class SearchReport(Report):
    """Blocks of titles searched in one shard: queries, hits and what indexing and searching cost."""

    lang: str
    shard: int
    blocks: list[int]  # [first, end)
    docs: int
    queries: int
    hits: int
    index_seconds: float
    search_seconds: float
    index_cpu_seconds: float  # of every thread of the process: what a core-hour counts
    search_cpu_seconds: float
    queries_without_hits: int | None = None  # a language of one shard: its hits are final; else the merge step counts them

    @property
    def final(self) -> bool:
        return self.queries_without_hits is not None


@dataclass(frozen=True, kw_only=True)
class BlockHitsReport(Report):
    """One block's final hits: merged from the shards', or searched on a cluster."""

    lang: str
    block: int
    queries: int
    queries_without_hits: int
    hits: int
    search_seconds: float | None = None  # on a cluster: the block's search; merging searches nothing

    @property
    def final(self) -> bool:
        return True


@dataclass(frozen=True, kw_only=True)
class LabelReport(Report):
    """A block of queries labelled: its queries and how many documents got each label ("1".."6")."""

    lang: str
    block: int
    queries: int
    labels: dict[str, int]


@dataclass(frozen=True, kw_only=True)
class PairingReport(Report):
    """A language's documents paired with each other language's: pairs by target language."""

    lang: str
    links: dict[str, int]


@dataclass(frozen=True, kw_only=True)
class CarryReport(Report):
    """A block's labels carried into every other language: queries and labels by target, and the block's own cost apart."""

    lang: str
    block: int
    label_rows: int
    directions: dict[str, dict[str, int]]  # target -> {"queries": ..., "labels": ...}
    group_cpu_seconds: float  # reading and grouping the block, once
    carry_cpu_seconds: float  # carrying it into every target


@dataclass(frozen=True, kw_only=True)
class SplitsReport(Report):
    """A language's queries given their roles: how many may serve each eval set."""

    lang: str
    roles: dict[str, int]


@dataclass(frozen=True, kw_only=True)
class EvalReport(Report):
    """The dev and test sets of every direction from one language: per target, its queries and each eval set's size."""

    lang: str
    directions: dict[str, dict[str, int]]


@dataclass(frozen=True, kw_only=True)
class Multi8EvalReport(Report):
    """MULTI-8's eval entities: entities every language has, and each eval set's size."""

    entities: int
    eval: dict[str, int]


@dataclass(frozen=True, kw_only=True)
class Multi8QueriesReport(Report):
    """MULTI-8's queries of every split."""

    entities: int
    queries: dict[str, int]


@dataclass(frozen=True, kw_only=True)
class EvalKeysReport(Report):
    """Every eval set's keys gathered (none may train), then MULTI-8's queries of every split when it is built."""

    eval_keys: int
    multi8_queries: dict[str, int] | None = None  # None: no MULTI-8 in this build


@dataclass(frozen=True, kw_only=True)
class ListsReport(Report):
    """A block of a MULTI-8 language's queries: the candidate lists kept."""

    lang: str
    block: int
    rows: int


@dataclass(frozen=True, kw_only=True)
class CountReport(Report):
    """One released query file counted (a download's statistics): its path and its direction's counts."""

    path: str
    stats: dict[str, object]  # ``pipeline.output.stats.DirectionStats`` as a dict


@dataclass(frozen=True, kw_only=True)
class ExportReport(Report):
    """An exported file set: rows (queries or documents) and qrels written, and the source it was made from (size, mtime) for resuming."""

    source: str
    source_stamp: list[int]
    rows: int
    qrels: int = 0
    cleaned: int = 0  # query titles with a tab or line break, written with spaces (TSV topics)
    error: str = ""  # the source could not be read to its end (named, with its line): nothing was written


@dataclass(frozen=True, kw_only=True)
class FilesReport(Report):
    """Released files written: each one's path below OUT, md5, size, lines, and its label counts (``WrittenFile``)."""

    files: list[dict]


_REPORT_KINDS = {
    kind.__name__: kind
    for kind in (
        IndexPartReport, IndexJoinReport, DocsUnitReport, DocsLanguageReport, LinksFileReport, LinkReport, TermCountReport, TermSumReport, ClusterIndexReport, SearchReport,
        BlockHitsReport, LabelReport, PairingReport, CarryReport, SplitsReport, EvalReport, Multi8EvalReport, Multi8QueriesReport, EvalKeysReport, ListsReport, FilesReport, CountReport, ExportReport,
    )
}  # fmt: skip


# The summaries of the stages: what each finished stage says of its work as a whole.
# A language's entry is a frozen dataclass of its own (the link stage's, the language's
# ``LinkReport``); from retrieval on it holds the language's ``LanguagePlan``.

SUMMARY_TYPE = "summary_type"  # the key of a stored summary that names its type
SUMMARY_SHAPE = "summary_shape"  # the key of a stored summary that names its type's shape (``Summary.shape``); none: 1


class StaleSummaryError(ValueError):
    """A summary written by an older clirmatrix (without a type, or of an earlier shape of its type): its stage must run again."""


@dataclass(frozen=True, kw_only=True)
class Summary:
    """A finished stage's summary; stored as JSON with its type's name (``SUMMARY_TYPE``) and shape (``SUMMARY_SHAPE``) so that it reads back as that type."""

    # The shape of the stored summary, raised with what its type holds: one stored with
    # another reads as unfinished. 2: language entries typed, where 1 kept mappings.
    shape: ClassVar[int] = 1
    stage: str  # the stage's name

    def to_dict(self) -> dict:
        return {SUMMARY_TYPE: type(self).__name__, SUMMARY_SHAPE: self.shape, **asdict(self)}


def read_summary(value: dict, where: str = "") -> Summary:
    """A summary as ``Summary.to_dict`` stored it, as its own type; ``StaleSummaryError`` for one without a type or of another shape."""
    kind = _SUMMARY_KINDS.get(value.get(SUMMARY_TYPE, ""))
    if kind is None or value.get(SUMMARY_SHAPE, 1) != kind.shape:
        raise StaleSummaryError(f"{where or 'a stage summary'} was written by an older clirmatrix; run that stage again")
    return _as(kind, value)


@dataclass(frozen=True)
class DocsLanguage:
    """A language's documents extracted: kept after repeated ids are dropped, records read, filtered and rejected (bad input) by kind, and its dump files."""

    docs: int
    records: int
    filtered: dict[str, int]
    rejected: dict[str, int]
    files: list[str]  # the dump files' names


@dataclass(frozen=True, kw_only=True)
class DocsSummary(Summary):
    """extract_docs: each kept language's ``DocsLanguage``; ``dropped`` likewise."""

    shape: ClassVar[int] = 2
    settings: dict
    languages: dict[str, DocsLanguage]
    dropped: dict[str, DocsLanguage]  # languages below --min-docs


@dataclass(frozen=True, kw_only=True)
class SitelinksSummary(Summary):
    """extract_sitelinks: sitelinks kept per language, what the Wikidata source held, and the bad records by kind."""

    links: str  # how entity links were found (--links)
    source: str | None  # the Wikidata-wide input kind, None when the pages' own items are the links
    languages: dict[str, int]
    entities_read: int
    entities_with_sitelinks: int
    rejected: dict[str, int]
    page_props: dict[str, int]  # page_props entities per language
    files: list[str]
    max_bad_fraction: float


@dataclass(frozen=True, kw_only=True)
class LinkSummary(Summary):
    """link_entities: each language's ``LinkReport``, and their totals."""

    shape: ClassVar[int] = 2
    languages: dict[str, LinkReport]
    totals: dict[str, int]


@dataclass(frozen=True)
class RetrievalLanguage:
    """A language's titles searched: its plan (and its documents, shards and blocks), queries, queries without hits, hits, seconds and queries/s."""

    lang: str
    docs: int
    shards: int
    blocks: int
    plan: LanguagePlan
    queries: int
    queries_without_hits: int
    hits: int
    index_seconds: float
    search_seconds: float
    queries_per_second: float | None  # per core: the queries over all shards' search time; None: no search time measured


@dataclass(frozen=True, kw_only=True)
class RetrievalSummary(Summary):
    """retrieve: each language's ``RetrievalLanguage``, and the totals of its counts."""

    shape: ClassVar[int] = 2
    settings: dict
    languages: dict[str, RetrievalLanguage]
    totals: dict[str, int]


@dataclass(frozen=True)
class LabelLanguage:
    """A language's queries labelled: how many, its documents by label ("1".."6"), and its plan."""

    lang: str
    queries: int
    labels: dict[str, int]
    plan: LanguagePlan


@dataclass(frozen=True, kw_only=True)
class LabelSummary(Summary):
    """label: each language's ``LabelLanguage``."""

    shape: ClassVar[int] = 2
    languages: dict[str, LabelLanguage]


@dataclass(frozen=True)
class PropagationLanguage:
    """A language's labels carried: its queries, per target language the queries and labels carried, and its plan."""

    lang: str
    queries: int
    directions: dict[str, dict[str, int]]  # target -> {"queries": ..., "labels": ...}
    plan: LanguagePlan


@dataclass(frozen=True, kw_only=True)
class PropagationSummary(Summary):
    """propagate: each language's ``PropagationLanguage``."""

    shape: ClassVar[int] = 2
    languages: dict[str, PropagationLanguage]


@dataclass(frozen=True, kw_only=True)
class ReleaseSummary(Summary):
    """write_release: whether MULTI-8 was written, files, lines and bytes per released set, and every file's record."""

    multi8: bool
    sets: dict[str, dict[str, int]]
    files: list[dict]  # path, md5, size, lines, pairs and label counts of each released file


@dataclass(frozen=True, kw_only=True)
class StatsSummary(Summary):
    """stats: the query files counted and the tables and maps written."""

    files: int
    written: list[str]


_SUMMARY_KINDS = {
    kind.__name__: kind
    for kind in (DocsSummary, SitelinksSummary, LinkSummary, RetrievalSummary, LabelSummary, PropagationSummary, ReleaseSummary, StatsSummary)
}
