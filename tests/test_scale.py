"""Scale-out: every stage as a Beam composite, exact sharded retrieval, retries, real Dask and S3-compatible servers.

The cluster tests start their own servers on 127.0.0.1 and stop them after: a
``dask scheduler`` with two ``dask worker`` processes (each in a working folder of
its own), and ``moto_server`` as the S3-compatible object store.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import EVAL, TRAIN, build_config, first_differences, released, without_location, write_sample

from clirmatrix.pipeline.output import layout

BIN = Path(sys.executable).parent


def _tables(folder: Path) -> dict[str, pa.Table]:
    """Every Parquet file below ``folder`` (reports and hidden folders aside), by relative path."""
    return {str(p.relative_to(folder)): pq.read_table(p) for p in sorted(folder.rglob("*.parquet")) if not any(part.startswith("_") for part in p.relative_to(folder).parts)}


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


# --- the composites on the in-process runner (TestPipeline + assert_that) ---------------------------


def _test_pipeline():
    from apache_beam.testing.test_pipeline import TestPipeline

    return TestPipeline(runner="FnApiRunner")


@pytest.fixture
def work_copy(built, tmp_path):
    """A copy of the sample build's work folder, to run stages again without touching the shared one."""
    _, result, _ = built
    work = tmp_path / "work"
    shutil.copytree(result.work, work)
    return work


def _run_composite(units, transform) -> None:
    """Every unit through the composite *twice*, as a retried bundle would; its output lists every unit, twice."""
    import apache_beam as beam
    from apache_beam.testing.util import assert_that, equal_to

    with _test_pipeline() as pipeline:
        done = pipeline | beam.Create(list(units) + list(units)) | transform
        assert_that(done, equal_to([unit.name for unit in units] * 2))


@pytest.mark.slow
@pytest.mark.parametrize(("shard_docs", "search_unit_queries"), [(37, 1_000_000), (100, 240), (151, 1)])
def test_sharded_retrieval_equals_unsharded_bit_for_bit(work_copy, built, shard_docs, search_unit_queries):
    """Shards scored with their language's statistics, searched in groups of query blocks, merged by score then position: exactly one index's top 100."""
    from clirmatrix.beam_jobs.retrieve import Retrieve
    from clirmatrix.pipeline.method import retrieval
    from clirmatrix.pipeline.method.retrieval import RetrievalSettings

    _, result, _ = built
    unsharded = _tables(Path(result.work) / "retrieval")
    langs = result.summaries["retrieve"].languages
    settings = RetrievalSettings(shard_docs=shard_docs, block_size=120, search_unit_queries=search_unit_queries)
    plans = [settings.plan(lang, entry.docs) for lang, entry in langs.items()]
    assert all(plan.shards >= 2 for plan in plans)
    units = retrieval.plan_units(plans, settings)
    # A search unit is one shard and at most max(1, search_unit_queries // block_size) blocks of queries.
    per_unit = max(1, search_unit_queries // settings.block_size)
    searches = [unit for unit in units if unit.step == retrieval.SEARCH]
    assert len(searches) == sum(plan.shards * -(-plan.blocks // per_unit) for plan in plans)
    assert all(unit.task.end_block - unit.task.first_block <= per_unit for unit in searches)
    if search_unit_queries == 1:
        assert len(searches) == sum(plan.shards * plan.blocks for plan in plans) > 2 * len(plans)
    shutil.rmtree(work_copy / "retrieval")
    _run_composite(units, Retrieve(str(work_copy), settings).transform())
    for lang in langs:
        ours = pa.concat_tables([table for path, table in _tables(work_copy / "retrieval").items() if path.startswith(f"{lang}/")])
        theirs = pa.concat_tables([table for path, table in unsharded.items() if path.startswith(f"{lang}/")])
        assert ours.num_rows == theirs.num_rows > 0
        for name in ("query", "doc", "score"):  # scores equal as float32, ties in the same order
            assert np.array_equal(ours.column(name).to_numpy(), theirs.column(name).to_numpy()), (lang, name)


def test_merging_shards_runs_equals_sorting_them_all():
    """The k-way merge of each shard's ranked hits: a full sort by (query, score desc, position), then the top k."""
    from clirmatrix.pipeline.method.retrieval import merge_hits
    from clirmatrix.schemas import RETRIEVAL

    rng = np.random.default_rng(0)
    for _ in range(300):
        tables, rows, offset = [], [], 0
        for _ in range(int(rng.integers(1, 6))):  # some shards answer no query at all
            n_docs = int(rng.integers(1, 50))
            query, doc, score = [], [], []
            for q in sorted(rng.choice(30, rng.integers(0, 30), replace=False).tolist()):
                docs = rng.choice(n_docs, int(rng.integers(1, min(n_docs, 12) + 1)), replace=False) + offset
                scores = rng.integers(0, 4, len(docs)).astype(np.float32)  # many ties
                ranked = np.lexsort((docs, -scores))
                query += [q] * len(docs)
                doc += docs[ranked].tolist()
                score += scores[ranked].tolist()
            offset += n_docs
            tables.append(pa.table([pa.array(query, pa.int32()), pa.array(doc, pa.int32()), pa.array(score, pa.float32())], schema=RETRIEVAL))
            rows += list(zip(query, doc, score))
        k = int(rng.integers(1, 15))
        expected, taken = [], {}
        for row in sorted(rows, key=lambda r: (r[0], -r[2], r[1])):
            if taken.get(row[0], 0) < k:
                expected.append(row)
                taken[row[0]] = taken.get(row[0], 0) + 1
        merged = merge_hits(tables, k)
        assert list(zip(*(merged.column(name).to_pylist() for name in ("query", "doc", "score")))) == expected


@pytest.mark.parametrize("analyzer", ["english", "bigram", "plain"])
def test_shard_engines_with_the_collection_statistics_score_as_one_engine(analyzer):
    """The engine's statistics come from outside: three shards scored with the whole collection's equal one index."""
    from clirmatrix.pipeline.engines.analyzers import analyzer_named
    from clirmatrix.pipeline.engines.embedded import EmbeddedEngine
    from clirmatrix.pipeline.method.retrieval import hits_table, merge_hits

    rng = np.random.default_rng(3)
    words = ["river", "city", "the", "running", "bridges", "museum", "北京", "大学", "東京", "paris"]
    docs = [(str(i), " ".join(rng.choice(words, 3)), " ".join(rng.choice(words, int(rng.integers(0, 40))))) for i in range(300)]
    queries = [" ".join(rng.choice(words, int(rng.integers(1, 4)))) for _ in range(80)] + ["", "river river city"]
    whole = EmbeddedEngine(analyzer_named(analyzer))
    whole.index([tuple(zip(*docs))])
    expected = hits_table(0, whole.search(queries, 10))
    shards, bounds = [], [0, 90, 200, 300]
    for low, high in zip(bounds[:-1], bounds[1:]):
        engine = EmbeddedEngine(analyzer_named(analyzer))
        engine.index([tuple(zip(*docs[low:high]))])
        shards.append((engine, low))
    statistics = shards[0][0].local_statistics() + shards[1][0].local_statistics() + shards[2][0].local_statistics()
    for engine, _ in shards:
        global_df = [np.array([whole_df[whole.vocab[t]] for t in engine.terms()]) for whole_df in whole.local_document_frequencies()]
        engine.use_statistics(statistics, *global_df)
    merged = merge_hits([hits_table(0, engine.search(queries, 10), low) for engine, low in shards], 10)
    assert merged.equals(expected)


def test_link_label_propagate_composites_write_what_the_build_wrote(work_copy, built):
    """The link_entities, label and propagate stages' transforms, each unit run twice: the same files as the build's."""
    from clirmatrix.beam_jobs.label import Label
    from clirmatrix.beam_jobs.link_entities import LinkEntities
    from clirmatrix.beam_jobs.propagate import Propagate

    _, result, _ = built
    original = Path(result.work)
    stages = [LinkEntities(str(work_copy)), Label(str(work_copy)), Propagate(str(work_copy))]
    planned = [(stage, stage.plan(stage.upstream())) for stage in stages]  # before the folders they read are gone
    assert all(units for _, units in planned)
    for folder in ("catalog", "entity_docs", "labels", "propagated"):
        shutil.rmtree(work_copy / folder, ignore_errors=True)  # planning link_entities cleared catalog/
    for stage, units in planned:
        _run_composite(units, stage.transform())
    for folder in ("catalog", "entity_docs", "labels", "propagated"):
        ours, theirs = _tables(work_copy / folder), _tables(original / folder)
        assert ours.keys() == theirs.keys() and ours, folder
        assert all(ours[path].equals(theirs[path]) for path in ours), folder


@pytest.mark.slow
def test_write_composite_and_count_composite(work_copy, built, tmp_path):
    """WriteRelease (every unit twice) writes the build's released bytes; CountFiles counts them as the build did."""
    from clirmatrix.beam_jobs.stats import COUNT, CountFiles, counted_while_writing
    from clirmatrix.beam_jobs.write_release import WriteRelease, release_units
    from clirmatrix.pipeline.method.splits import SplitSettings
    from clirmatrix.pipeline.output.release import ReleaseSettings
    from clirmatrix.schemas.contracts import FileTask, Unit, language_plans

    out, result, _ = built
    settings = ReleaseSettings(SplitSettings(train_size=TRAIN, eval_size=EVAL))
    plans = language_plans(result.summaries["propagate"])
    again = tmp_path / "again"
    shutil.rmtree(work_copy / "release")
    _run_composite(release_units(plans, settings.multi_langs), WriteRelease(str(work_copy), str(again), settings).transform())
    mine = released(out)
    theirs = released(again)
    assert {path: data for path, data in mine.items() if layout.parse_path(path)} == theirs

    files = sorted(path for path in theirs if layout.parse_path(path).dataset in layout.QUERY_SETS)
    units = [Unit(COUNT, path.replace("/", "__"), FileTask(path)) for path in files]
    _run_composite(units, CountFiles(str(again), str(tmp_path / "counts")))
    counted = sorted(json.loads(p.read_text())["stats"]["queries"] for p in (tmp_path / "counts" / "_reports").glob("*.json"))
    assert counted == sorted(row.queries for row in counted_while_writing(result.work))


@pytest.mark.parametrize("lang", ["en", "ar", "fr"])
def test_linking_in_title_partitions_equals_linking_at_once(extracted, tmp_path, lang):
    """Partitions hold a share of the titles each; links, sources and counts are those of one partition."""
    from clirmatrix.pipeline.io import fileio
    from clirmatrix.pipeline.io.parquet_io import iter_row_range
    from clirmatrix.pipeline.method.corpus import WorkDirs, iter_docs
    from clirmatrix.pipeline.method.linking import link_language

    work, _, _ = extracted
    found = {}
    for partitions in (1, 4):
        sitelinks = iter_row_range(fileio.list_files(str(work / "sitelinks" / lang / "*.parquet")), ["entity", "title"])
        docs = iter_docs(WorkDirs(str(work)), lang, ["title", "entity"])
        found[partitions] = link_language(lang, docs, sitelinks, str(tmp_path / str(partitions)), partitions)
    (entity, source, stats), (entity4, source4, stats4) = found[1], found[4]
    assert np.array_equal(entity, entity4) and np.array_equal(source, source4) and stats == stats4
    assert len(list((tmp_path / "4").glob("pages-*.parquet"))) == 4 and stats.linked_wikidata > 0


def test_extract_docs_composite_counts_the_same_on_a_retry(sample, tmp_path):
    """Both steps of ExtractDocs, every unit twice (a retry): a retried finalize finds the duplicates already gone and reports the same numbers."""
    from clirmatrix.beam_jobs.extract_docs import DocsSettings, ExtractDocs
    from clirmatrix.pipeline.extraction import docs
    from clirmatrix.pipeline.io.reports import read_named_reports
    from clirmatrix.pipeline.method.dumps import discover
    from clirmatrix.schemas.contracts import DocsLanguageReport, FinalizeTask, read_typed_report

    dumps, world = sample
    found = discover(str(dumps), ["en", "ja"])
    stage = ExtractDocs(str(tmp_path), found.docs, DocsSettings(min_docs=1, max_bad_fraction=0.01))
    units = stage.plan({})
    assert [unit.name for unit in units if unit.step == docs.FINALIZE] == ["en", "ja"]
    _run_composite(units, stage.transform())
    first = {name: read_typed_report(report) for name, report in read_named_reports(stage.stage_dir).items()}
    assert first["en"].duplicates == 1 and first["en"].docs == sum(1 for e in world.entities if "en" in e.langs)
    assert [unit.rank for unit in first["en"].units] == list(range(len(found.docs["en"])))  # each unit's report read back typed, in rank order
    (finalize,) = [unit.task for unit in units if unit.name == "en"]
    assert isinstance(finalize, FinalizeTask) and isinstance(first["en"], DocsLanguageReport)
    again = docs.finalize_language(stage.stage_dir, finalize, 1)  # the same unit once more
    assert again == replace(first["en"], unit_seconds=None, unit_cpu_seconds=None)


def test_extract_sitelinks_composite(sample, tmp_path):
    """The Wikidata file through ExtractSitelinks' step twice (a retry): the same sitelinks as one run, one file per language."""
    from clirmatrix.beam_jobs.extract_sitelinks import READ, ExtractSitelinks
    from clirmatrix.pipeline.extraction.links import LinkUnit
    from clirmatrix.pipeline.method.dumps import WIKIDATA_JSON, LinkInputs, discover
    from clirmatrix.schemas.contracts import Unit

    dumps, world = sample
    (wikidata,) = discover(str(dumps)).wikidata
    stage = ExtractSitelinks(str(tmp_path), LinkInputs.wikidata_wide(WIKIDATA_JSON, [wikidata]), ["en", "ja"])
    assert stage.plan({}) == [Unit(READ, "00000-latest-all", LinkUnit(0, WIKIDATA_JSON, wikidata, langs=("en", "ja")))]
    _run_composite(stage.plan({}), stage.transform())
    out = tmp_path / "sitelinks"
    en = pq.read_table(out / "en" / "00000-latest-all.parquet").to_pylist()
    expected = {(e.qid, e.titles["en"]) for e in world.entities if "en" in e.langs and (e.qid, "en") not in world.missing_sitelinks}
    assert {(row["entity"], row["title"]) for row in en} == expected
    assert sorted(p.name for p in out.iterdir()) == ["_reports", "en", "ja"]


# --- runners and shipping ----------------------------------------------------------------------


def test_runners_by_short_name():
    from clirmatrix.beam_jobs import runners
    from clirmatrix.beam_jobs.common import pipeline_options

    dask = runners.resolve(["--runner", "dask", "--dask_client_address=127.0.0.1:1"])
    assert "--runner=apache_beam.runners.dask.dask_runner.DaskRunner" in dask and "--dask_partition_size=1" in dask
    assert "--dask_partition_size=1" not in runners.resolve(["--runner=dask", "--dask_npartitions=4"])
    flink = runners.resolve(["--runner=flink", "--flink_master=localhost:8081", "--environment_type=LOOPBACK"])
    assert "--runner=FlinkRunner" in flink and not any(arg.startswith("--extra_package") for arg in flink)
    assert runners.resolve(["--runner=FnApiRunner"]) == ["--runner=FnApiRunner"]
    assert pipeline_options([], 2).get_all_options()["runner"] == runners.LOCAL_RUNNER  # no runner named: the local FnApiRunner


@pytest.mark.slow
def test_a_container_runner_gets_the_project_as_a_wheel(tmp_path):
    """Dataflow (and Flink's Docker environment) workers install the project from a wheel built from this tree."""
    import zipfile

    from clirmatrix.beam_jobs import runners

    if runners.source_tree() is None:
        pytest.skip("clirmatrix is not installed from its source tree")
    args = runners.resolve(["--runner", "dataflow", "--project", "p", "--region", "r", "--temp_location", "gs://b/t"])
    assert "--runner=DataflowRunner" in args
    wheel = Path(runners.flag_value(args, "--extra_package"))
    names = zipfile.ZipFile(wheel).namelist()
    assert {"clirmatrix/pipeline/method/retrieval.py", "clirmatrix/pipeline/engines/embedded/maxscore.py", "clirmatrix/beam_jobs/retrieve.py", "clirmatrix/schemas/parquet.py"} <= set(names)
    tree = runners.source_tree()  # and nothing the tree no longer has (a module of an earlier layout left in build/)
    in_tree = lambda name: (tree / name.removeprefix("clirmatrix/")).is_file() or (tree / name).is_file()  # clirmatrix/ holds the public API
    assert not [name for name in names if name.startswith("clirmatrix/") and not in_tree(name)]
    metadata = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith("METADATA"))).decode()
    assert "Requires-Dist: numba" in metadata and "Requires-Dist: PyStemmer" in metadata  # the native dependencies come with it
    given = ["--runner=dataflow", "--sdk_container_image=gcr.io/p/clirmatrix:1"]
    assert not any(arg.startswith("--extra_package") for arg in runners.resolve(given))


# --- a real Dask cluster ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def dask_cluster(tmp_path_factory):
    """A ``dask scheduler`` and two ``dask worker`` processes on 127.0.0.1, each in a folder of its own."""
    pytest.importorskip("distributed", reason="needs the dask extra")
    root = tmp_path_factory.mktemp("dask")
    scheduler_file = root / "scheduler.json"
    started = []
    try:
        (root / "scheduler").mkdir()
        started.append(
            subprocess.Popen(
                [str(BIN / "dask"), "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard", "--scheduler-file", str(scheduler_file)],
                cwd=root / "scheduler", stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
            )
        )  # fmt: skip
        for _ in range(300):
            if scheduler_file.exists() and scheduler_file.stat().st_size:
                break
            time.sleep(0.1)
        for name in ("worker1", "worker2"):
            (root / name).mkdir()
            command = [str(BIN / "dask"), "worker", "--scheduler-file", str(scheduler_file), "--nworkers", "1", "--nthreads", "1"]
            command += ["--memory-limit", "4GB", "--no-dashboard", "--local-directory", str(root / name)]
            started.append(subprocess.Popen(command, cwd=root / name, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True))
        from distributed import Client

        address = json.loads(scheduler_file.read_text())["address"]
        with Client(address, timeout=60) as client:
            client.wait_for_workers(2, timeout=120)
        yield address
    finally:
        for process in reversed(started):
            _stop(process)


def _executed(address: str) -> dict[str, int]:
    from distributed import Client

    with Client(address, timeout=60) as client:
        return client.run(lambda dask_worker: dask_worker.state.executed_count)


def _cli_build(cwd: Path, dumps: str, out: str, *extra: str) -> None:
    command = [sys.executable, "-m", "clirmatrix.cli", "build", "--dumps", dumps, "--out", out, "--min-docs", "100", "--max-bad-fraction", "0.01"]
    command += ["--train-size", str(TRAIN), "--eval-size", str(EVAL), *extra]
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr and "apitools" not in done.stderr


@pytest.mark.slow
def test_the_build_on_a_dask_cluster_is_byte_identical_and_keeps_no_state(built, world8, dask_cluster, tmp_path_factory, tmp_path):
    """Relative paths on the command line, units spread over both workers, then other dumps into the same OUT."""
    from clirmatrix.beam_jobs.build import run_build

    out, _, _ = built
    dumps, _ = world8
    here = tmp_path / "here"
    here.mkdir()
    shutil.copytree(dumps, here / "dumps")
    before = _executed(dask_cluster)
    _cli_build(here, "dumps", "out", "--runner", "dask", "--dask_client_address", dask_cluster, "--shard-docs", "150", "--block-size", "100")
    assert released(here / "out") == released(out), first_differences(released(here / "out"), released(out))
    ran = {worker: count - before.get(worker, 0) for worker, count in _executed(dask_cluster).items()}
    assert len(ran) == 2 and all(count > 0 for count in ran.values()), ran  # the units were spread over both workers

    other, _ = write_sample(tmp_path_factory, ("en", "de"), seed=11)
    shutil.copytree(other, here / "other")
    _cli_build(here, "other", "out", "--runner", "dask", "--dask_client_address", dask_cluster)
    fresh = tmp_path / "fresh"
    run_build(build_config(other, fresh))
    assert released(here / "out") == released(fresh)
    assert not (here / "out" / "MULTI-8").exists()  # the first build's files went with it


# --- an S3-compatible object store -----------------------------------------------------------------


@pytest.fixture(scope="module")
def s3_server(tmp_path_factory):
    """``moto_server`` on 127.0.0.1: the endpoint and the Beam flags that reach it (credentials are the server's test ones)."""
    pytest.importorskip("boto3", reason="needs apache-beam[aws]")
    server = shutil.which("moto_server", path=str(BIN)) or shutil.which("moto_server")
    if server is None:
        pytest.skip("moto_server (moto[server]) is not installed")
    port = _free_port()
    process = subprocess.Popen([server, "-H", "127.0.0.1", "-p", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    endpoint = f"http://127.0.0.1:{port}"
    flags = [f"--s3_endpoint_url={endpoint}", "--s3_access_key_id=testing", "--s3_secret_access_key=testing", "--s3_region_name=us-east-1"]
    try:
        import boto3

        client = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="testing", aws_secret_access_key="testing", region_name="us-east-1")
        for _ in range(200):
            try:
                client.create_bucket(Bucket="clirmatrix-test")
                break
            except Exception:
                time.sleep(0.1)
        yield client, flags
    finally:
        _stop(process)


def _objects(client, prefix: str) -> dict[str, bytes]:
    found = {}
    for page in client.get_paginator("list_objects_v2").paginate(Bucket="clirmatrix-test", Prefix=prefix):
        for item in page.get("Contents", []):
            found[item["Key"][len(prefix) :]] = client.get_object(Bucket="clirmatrix-test", Key=item["Key"])["Body"].read()
    return found


def test_object_store_prefixes_are_cleared_and_listed_by_prefix(s3_server):
    from clirmatrix.beam_jobs.common import use_filesystem_options
    from clirmatrix.pipeline.io import fileio

    client, flags = s3_server
    use_filesystem_options(flags)
    for key in ("t/stage/a.parquet", "t/stage/_reports/a.json", "t/stage-other/b.parquet", "t/stage"):
        fileio.write_bytes(f"s3://clirmatrix-test/{key}", b"x")
    assert fileio.any_under("s3://clirmatrix-test/t/stage") and fileio.list_files("s3://clirmatrix-test/t/stage/_reports/*.json")
    fileio.remove_tree("s3://clirmatrix-test/t/stage")
    assert sorted(_objects(client, "t/")) == ["stage-other/b.parquet"]
    assert not fileio.any_under("s3://clirmatrix-test/t/stage")
    with pytest.raises(fileio.NotWritableError, match="no-such-bucket"):
        fileio.check_writable("s3://no-such-bucket/out")


@pytest.mark.slow
def test_a_build_on_s3_equals_the_local_build(s3_server, tmp_path_factory, tmp_path):
    """WORK and OUT on the object store, two worker processes; then a rerun skips every stage there too."""
    from clirmatrix.beam_jobs.all_stages import STAGE_NAMES
    from clirmatrix.beam_jobs.build import run_build

    client, flags = s3_server
    dumps, _ = write_sample(tmp_path_factory, ("en", "de"), seed=3)
    local = tmp_path / "local"
    run_build(build_config(dumps, local, multi_langs=("de", "en")))
    remote = build_config(dumps, Path("."), multi_langs=("de", "en"), workers=2)
    remote = replace(remote, out="s3://clirmatrix-test/out", work="s3://clirmatrix-test/work")
    run_build(remote, flags)
    stored = without_location(_objects(client, "out/"), "s3://clirmatrix-test/out")
    assert stored == released(local), first_differences(stored, released(local))
    assert any(path.startswith("MULTI-8/") for path in stored)
    assert run_build(remote, flags).skipped == list(STAGE_NAMES)


def test_dumps_read_in_ranges_from_the_object_store_give_the_local_documents(s3_server, tmp_path):
    """An Enterprise HTML dump (its seek index kept in WORK) and a bz2 XML dump, both read in ranges from s3://."""
    from clirmatrix.beam_jobs.common import use_filesystem_options
    from clirmatrix.beam_jobs.extract_docs import DocsSettings, ExtractDocs
    from clirmatrix.pipeline.method.dumps import discover
    from clirmatrix.pipeline.tools.sample import write_sample_dumps

    client, flags = s3_server
    use_filesystem_options(flags)
    dumps = tmp_path / "dumps"
    write_sample_dumps(dumps, docs_per_lang=120, langs=("de", "fr"), seed=2, broken=False, inputs="fresh")
    for path in dumps.iterdir():
        client.put_object(Bucket="clirmatrix-test", Key=f"fresh/{path.name}", Body=path.read_bytes())
    settings = DocsSettings(min_docs=10, split_bytes=20_000)  # several ranges of each file
    remote = ExtractDocs("s3://clirmatrix-test/work", discover("s3://clirmatrix-test/fresh").docs, settings).run(flags, workers=1)
    local = ExtractDocs(str(tmp_path), discover(str(dumps)).docs, settings).run(workers=1)
    for lang in ("de", "fr"):
        assert remote.languages[lang].docs == local.languages[lang].docs > 50
        stored = _objects(client, f"work/docs/{lang}/")
        kept = {path.name: path.read_bytes() for path in (tmp_path / "docs" / lang).glob("*.parquet")}
        assert len(kept) > 1 and {name: pq.read_table(pa.BufferReader(data)).to_pylist() for name, data in stored.items()} == {
            name: pq.read_table(pa.BufferReader(data)).to_pylist() for name, data in kept.items()
        }
