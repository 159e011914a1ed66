"""MULTI-8 (docs/method.md section 8): entities with an article in all 8 languages, 100 candidates per target language.

The queries are entities, not articles: for an entity and a target language Y, the
candidates are Y's own search for the entity's Y title (labels 1-6, filled to 100
with seeded label-0 documents), the same whichever language asks. Query lists are
aligned: every file of a split lists the same entities in the same order.

Three kinds of units, each holding at most one language's numbers per document:

- ``choose_eval`` (one unit, beside BI-139's eval sets): the dev/test entities among
  those all 8 languages share, by the same roles and priorities as BI-139 queries;
- ``choose_queries`` (one unit, once every eval key is known): the train entities
  (none held by any eval set), each split in one seeded order, and each one's article
  (position, page id, title) in every language, in ``release/_multi8/queries.parquet``;
- ``gather_lists`` (one unit per block of a target language's queries): the labels
  of the chosen queries in that block;
- ``write_target`` (one unit per target language Y): the 7 x 4 files with Y documents.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from clirmatrix.pipeline.io import fileio
from clirmatrix.pipeline.io.parquet_io import read_table, write_table
from clirmatrix.pipeline.method.corpus import NO_ENTITY, WorkDirs, catalog_numbers, iter_catalog
from clirmatrix.pipeline.method.propagation import query_groups
from clirmatrix.pipeline.method.splits import EVAL_INDICES, NOT_CHOSEN, TRAIN, assign, eval_sets, in_sorted, lowest, query_key, read_eval_keys, seeded_rng
from clirmatrix.pipeline.output import layout
from clirmatrix.pipeline.output.release import QueryText, ReleaseSettings, Results, base_fill, describe_files, judged, release_order, render_lines
from clirmatrix.pipeline.output.writers import gzip_lines
from clirmatrix.schemas import EVAL_PICKS, LABELS, MULTI8_QUERIES
from clirmatrix.schemas.contracts import FilesReport, LanguagePlan, ListsReport, Multi8EvalReport, Multi8QueriesReport


def shared_entities(work: WorkDirs, langs: Sequence[str]) -> np.ndarray:
    """Entity numbers with an article in every language of ``langs``, ascending."""
    shared = None
    for lang in langs:
        entities = catalog_numbers(work, lang, "entity")
        entities = np.unique(entities[entities != NO_ENTITY])
        shared = entities if shared is None else np.intersect1d(shared, entities, assume_unique=True)
    return shared if shared is not None else np.zeros(0, np.int64)


def _articles(work: WorkDirs, lang: str, entities: np.ndarray) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """(position, page id, title) in ``lang`` of each of ``entities`` (all of which it has)."""
    numbers = catalog_numbers(work, lang, "entity")
    by_entity = np.argsort(numbers, kind="stable")
    positions = by_entity[np.searchsorted(numbers[by_entity], entities)].astype(np.int64)
    wanted = np.argsort(positions, kind="stable")  # read the catalog once, in position order
    page_ids = np.zeros(len(entities), dtype=np.int64)
    titles: list[str] = [""] * len(entities)
    at, first = 0, 0
    for batch in iter_catalog(work, lang, ["page_id", "title"]):
        last = first + batch.num_rows
        while at < len(wanted) and positions[wanted[at]] < last:
            index, row = wanted[at], positions[wanted[at]] - first
            page_ids[index] = batch.column("page_id")[row].as_py()
            titles[index] = batch.column("title")[row].as_py()
            at += 1
        first = last
    return positions, page_ids, titles


def _shared_keys(work: WorkDirs, settings: ReleaseSettings) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(entity numbers all 8 languages share, and their eval roles, priorities and keys), by the same hashes as BI-139 queries."""
    shared = shared_entities(work, list(settings.multi_langs))
    role, priority, identity = assign([query_key("", "", f"Q{number}") for number in shared.tolist()], settings.splits)
    return shared, role, priority, identity


def choose_eval(work_root: str, settings: ReleaseSettings) -> Multi8EvalReport:
    """One unit of the eval step: MULTI-8's dev, test1 and test2 entities (``release/_multi8/eval.parquet``)."""
    work = WorkDirs(work_root)
    shared, role, priority, identity = _shared_keys(work, settings)
    chosen = eval_sets(role, priority, settings.splits.eval_size)
    picked = np.flatnonzero(chosen != NOT_CHOSEN)
    table = pa.table(
        [pa.array([""] * len(picked), pa.string()), pa.array(shared[picked].astype(np.int32)), pa.array(chosen[picked]), pa.array(identity[picked])],
        schema=EVAL_PICKS,
    )
    write_table(work.multi8_eval_file(), table, EVAL_PICKS)
    return Multi8EvalReport(entities=len(shared), eval={layout.SPLITS[i]: int((chosen == i).sum()) for i in EVAL_INDICES})


def choose_queries(work_root: str, settings: ReleaseSettings) -> Multi8QueriesReport:
    """One unit, once every eval key is known: the entities of each split in one seeded order, and their articles.

    Eval sets as ``choose_eval`` picked them; train the ``train_size`` lowest-priority of
    the rest that no eval set anywhere holds. Files list a split's entities by priority.
    """
    work = WorkDirs(work_root)
    shared, _, priority, identity = _shared_keys(work, settings)
    picks = read_table([work.multi8_eval_file()], EVAL_PICKS)
    split_of = np.full(len(shared), NOT_CHOSEN, dtype=np.int8)
    split_of[np.searchsorted(shared, picks.column("query").to_numpy())] = picks.column("split").to_numpy()
    free = np.flatnonzero((split_of == NOT_CHOSEN) & ~in_sorted(identity, read_eval_keys(work)))
    split_of[lowest(priority, free, settings.splits.train_size)] = TRAIN
    rows: dict[str, list] = {name: [] for name in MULTI8_QUERIES.names}
    per_split = {}
    chosen_all = []
    for split_index, split in enumerate(layout.SPLITS):
        members = np.flatnonzero(split_of == split_index)
        members = members[np.argsort(priority[members], kind="stable")]
        per_split[split] = len(members)
        chosen_all += [(split_index, rank, int(shared[index])) for rank, index in enumerate(members.tolist())]
    entities = np.array([entity for _, _, entity in chosen_all], dtype=np.int64)
    for lang in settings.multi_langs:
        positions, page_ids, titles = _articles(work, lang, entities)
        for (split, rank, entity), position, page_id, title in zip(chosen_all, positions.tolist(), page_ids.tolist(), titles):
            for name, value in zip(MULTI8_QUERIES.names, (split, rank, entity, lang, position, page_id, title)):
                rows[name].append(value)
    table = pa.table([pa.array(rows[field.name], field.type) for field in MULTI8_QUERIES], schema=MULTI8_QUERIES)
    write_table(work.multi8_queries_file(), table.sort_by([("split", "ascending"), ("rank", "ascending"), ("lang", "ascending")]), MULTI8_QUERIES)
    return Multi8QueriesReport(entities=len(shared), queries=per_split)


def _chosen(work: WorkDirs, lang: str) -> pa.Table:
    queries = read_table([work.multi8_queries_file()], MULTI8_QUERIES)
    return queries.filter(pc.equal(queries.column("lang"), lang))


def gather_lists(work_root: str, plan: LanguagePlan, block: int) -> ListsReport:
    """One unit per block of a target language's queries: the labels of the chosen queries in it."""
    work = WorkDirs(work_root)
    positions = np.unique(_chosen(work, plan.lang).column("position").to_numpy())
    labels = read_table([work.labels_file(plan.lang, block)], LABELS)
    kept = labels.filter(pa.array(np.isin(labels.column("query").to_numpy(), positions)))
    write_table(work.multi8_lists_file(plan.lang, block), kept, LABELS)
    return ListsReport(lang=plan.lang, block=block, rows=kept.num_rows)


def write_target(work_root: str, out_root: str, tgt: LanguagePlan, settings: ReleaseSettings) -> FilesReport:
    """One unit per document language Y: ``MULTI-8/{X}/{X}.{Y}.{split}.jl.gz`` for the 7 other languages X."""
    work = WorkDirs(work_root)
    queries = read_table([work.multi8_queries_file()], MULTI8_QUERIES)
    lists = read_table([work.multi8_lists_file(tgt.lang, block) for block in range(tgt.blocks)], LABELS)
    tgt_ids = catalog_numbers(work, tgt.lang, "page_id")
    query, doc, label = (lists.column(name).to_numpy() for name in ("query", "doc", "label"))
    groups = query_groups(query)
    ordered = release_order(groups, tgt_ids[doc], label)
    doc, label = doc[ordered], label[ordered]
    bounds = dict(zip(query[groups[:-1]].tolist(), zip(groups[:-1].tolist(), groups[1:].tolist())))
    rows = queries.to_pydict()
    sources = [lang for lang in settings.multi_langs if lang != tgt.lang]
    k = settings.candidates
    written = []
    for split_index, split in enumerate(layout.SPLITS):
        # (rank, lang) -> (page id, title); the target's positions in rank order.
        articles, targets = {}, []
        for split_of, rank, lang, position, page_id, title in zip(rows["split"], rows["rank"], rows["lang"], rows["position"], rows["page_id"], rows["title"]):
            if split_of == split_index:
                articles[(rank, lang)] = (page_id, title)
                if lang == tgt.lang:
                    targets.append((rank, position))
        targets.sort()
        spans = [bounds[position] for _, position in targets]
        picked = np.concatenate([np.arange(start, end) for start, end in spans]) if spans else np.zeros(0, np.int64)
        offsets = np.r_[0, np.cumsum([end - start for start, end in spans])].astype(np.int64)
        rng = seeded_rng(settings.splits.seed, "multi8", f"{tgt.lang}.{split}")
        every = np.arange(len(spans), dtype=np.int64)
        fill_ids, fill_counts = base_fill(rng, doc[picked], offsets, every, tgt_ids, k)
        sizes = np.diff(offsets)
        results = Results(tgt_ids[doc[picked]], label[picked], offsets[:-1], np.minimum(sizes, k), fill_ids, np.cumsum(fill_counts) - fill_counts, fill_counts)
        ge1, ge4 = judged(label[picked], offsets, k)
        for src in sources:
            queries = QueryText.from_strings(*zip(*[articles[(rank, src)] for rank, _ in targets])) if targets else QueryText.from_strings([], [])
            with gzip_lines(fileio.join(out_root, layout.query_file("multi8", src, tgt.lang, split))) as out:
                out.write_lines(render_lines(queries, results, every))
                out.count(int(ge1.sum()), int(ge4.sum()), len(targets) * min(k, len(tgt_ids)))
            written.append(out.record)
    return FilesReport(files=describe_files(out_root, written))
