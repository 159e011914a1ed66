"""``clirmatrix plan``: documents counted as the build keeps them, estimated from a listing's sizes, totals that add up, the cost model, the command."""

from __future__ import annotations

import json

import pytest

from clirmatrix.pipeline.errors import InputError
from clirmatrix.pipeline.method.input_kinds import HTML, ITEMS_PER_SITE, XML
from clirmatrix.pipeline.tools import plan
from clirmatrix.pipeline.tools.dumps_site import DumpListing, OfferedFile


def test_plan_counts_the_documents_the_build_keeps(sample, extracted):
    """On the sample dumps every language's documents are read and counted: exactly what the docs stage kept."""
    dumps, _ = sample
    _, result, _ = extracted
    kept = {lang: entry.docs for lang, entry in result.docs.languages.items()}
    inputs = plan.inputs_from_dumps(str(dumps))
    assert {lang.lang: lang.documents for lang in inputs.languages} == kept
    assert all(lang.counted for lang in inputs.languages)
    assert inputs.generated  # sample-truth.json beside them
    projected = plan.plan_build(inputs, 2, settings=plan.PlanSettings.of(min_docs=100))
    assert projected.documents == sum(kept.values()) == projected.queries
    assert not projected.estimated
    assert projected.directions == len(kept) * (len(kept) - 1)


def _listing(tmp_path, files: list[OfferedFile]) -> str:
    path = tmp_path / "listing.json"
    path.write_bytes(DumpListing("https://dumps.wikimedia.org", "latest", files, files).to_json())
    return str(path)


def _offered(lang: str, kind: str, size: int, part: int = 0) -> OfferedFile:
    name = f"{lang}wiki-NS0-20261101-ENTERPRISE-HTML.json.tar.gz" if kind == HTML else f"{lang}wiki-20261101-pages-articles-multistream{part or ''}.xml.bz2"
    return OfferedFile(name, f"https://example.org/{name}", kind, lang, "20261101", size)


def test_plan_from_a_listing_estimates_documents_and_adds_up(tmp_path):
    """From a listing: documents from the published bytes an article, directions n (n - 1), stage totals and disk that add up."""
    files = [
        _offered("en", HTML, 10_000_000_000), _offered("de", XML, 3_000_000_000, 1), _offered("de", XML, 2_000_000_000, 2), _offered("fr", XML, 4_000_000_000),
        OfferedFile("wikidatawiki-20261101-wb_items_per_site.sql.gz", "https://example.org/w", ITEMS_PER_SITE, None, "20261101", 1_900_000_000),
    ]
    inputs = plan.inputs_from_listing(_listing(tmp_path, files))
    documents = {lang.lang: lang.documents for lang in inputs.languages}
    assert documents == {
        "en": round(10e9 / plan.BYTES_PER_ARTICLE[HTML].value),
        "de": round(5e9 / plan.BYTES_PER_ARTICLE[XML].value),
        "fr": round(4e9 / plan.BYTES_PER_ARTICLE[XML].value),
    }
    assert not any(lang.counted for lang in inputs.languages)
    projected = plan.plan_build(inputs, 16)
    assert projected.directions == 3 * 2 and projected.multi8_directions == 0
    assert [row.directions for row in projected.languages] == [4, 4, 4]
    assert projected.queries == projected.documents == sum(documents.values())
    assert projected.disk_dumps == sum(f.size for f in files)
    assert projected.wall_seconds == pytest.approx(sum(stage.wall_seconds for stage in projected.stages))
    assert projected.core_hours == pytest.approx(sum(stage.cpu_seconds for stage in projected.stages) / 3600)
    assert projected.peak_worker_mb == max(stage.largest_unit_mb for stage in projected.stages)
    assert [stage.stage for stage in projected.stages] == list(plan.STAGES)
    for stage in projected.stages:  # no stage is faster than its work spread over the workers, or than its largest unit
        assert stage.wall_seconds >= max(stage.cpu_seconds / 16, stage.largest_unit_seconds) - 1e-9
    assert projected.estimated and any("estimated" in note for note in projected.notes)
    # More workers: no stage slower; the CPU the same.
    wider = plan.plan_build(inputs, 64)
    assert all(a.wall_seconds <= b.wall_seconds + 1e-9 for a, b in zip(wider.stages, projected.stages))
    assert wider.core_hours == pytest.approx(projected.core_hours)


def test_a_listing_of_the_multi8_languages_has_multi8_directions(tmp_path):
    from clirmatrix.pipeline.method.languages import MULTI8_LANGUAGES

    inputs = plan.inputs_from_listing(_listing(tmp_path, [_offered(lang, XML, 1_000_000_000) for lang in MULTI8_LANGUAGES]))
    projected = plan.plan_build(inputs, 4)
    assert projected.directions == 56 and projected.multi8_directions == 56
    only = plan.inputs_from_listing(_listing(tmp_path, [_offered(lang, XML, 1_000_000_000) for lang in MULTI8_LANGUAGES]), ["en", "de"])
    assert [lang.lang for lang in only.languages] == ["en", "de"]


def test_the_cost_model_names_every_stage_with_its_date_and_command():
    from clirmatrix.beam_jobs.all_stages import STAGE_NAMES

    assert plan.STAGES == STAGE_NAMES
    raw = json.loads(plan.COST_MODEL.read_text())
    model = plan.CostModel.read()
    assert model.measured and model.command.startswith("python bench/scale_bench.py")
    for runner in plan.RUNNERS:
        assert set(raw["overhead_seconds"][runner]) == set(STAGE_NAMES)
    assert set(raw["memory_mb"]["base_mb"]) == set(STAGE_NAMES) and set(raw["memory_mb"]["per_amount_mb"]) == set(STAGE_NAMES)
    assert {key.split(".")[0] for key in raw["extract_docs_per_byte"]} == {"cirrus", "html", "xml"}


def test_bad_input_is_one_line(tmp_path):
    with pytest.raises(InputError, match="does not exist"):
        plan.inputs_from_dumps(str(tmp_path / "nowhere"))
    (tmp_path / "bad.json").write_text("{}")
    with pytest.raises(InputError, match="not a dumps listing"):
        plan.inputs_from_listing(str(tmp_path / "bad.json"))
    with pytest.raises(InputError, match="no document dump for zz"):
        plan.inputs_from_listing(_listing(tmp_path, [_offered("en", HTML, 1)]), ["zz"])
    with pytest.raises(InputError, match="lacks"):
        plan.CostModel.from_dict({"measured": "2026-11-27"})


def test_the_command_prints_the_plan_and_one_line_errors(tmp_path, capsys, monkeypatch):
    from clirmatrix.cli import console, main

    monkeypatch.setattr(console, "width", 200)  # wide enough that no table cell is cut, whatever the terminal

    listing = _listing(tmp_path, [_offered("en", HTML, 10_000_000_000), _offered("de", XML, 5_000_000_000)])
    assert main(["plan", "--listing", listing, "--workers", "8"]) == 0
    shown = capsys.readouterr().err
    for text in ("languages", "(est.)", "stages on 8 local workers", "retrieve", "write_release", "disk: dumps", "WORK", "OUT", "peak memory", "cost model measured"):
        assert text in shown, text
    assert main(["plan", "--dumps", str(tmp_path / "nowhere")]) == 2
    assert "does not exist" in capsys.readouterr().err
    (tmp_path / "bad.json").write_text("[]")
    assert main(["plan", "--listing", str(tmp_path / "bad.json")]) == 2
    assert "not a dumps listing" in capsys.readouterr().err
    assert main(["plan"]) == 2
    assert "--dumps" in capsys.readouterr().err


def test_the_plan_takes_the_builds_settings_and_defaults(tmp_path, capsys):
    """``PlanSettings`` are the build's own: its defaults, its flags and config file, its checks; each changes the projection as it changes the build."""
    from clirmatrix.cli import main
    from clirmatrix.pipeline.config import BuildConfig

    defaults = plan.PlanSettings.of()
    assert all(getattr(defaults, name) == getattr(BuildConfig(), name) for name in plan.PlanSettings.__dataclass_fields__)
    inputs = plan.inputs_from_listing(_listing(tmp_path, [_offered("en", HTML, 10_000_000_000), _offered("de", XML, 5_000_000_000)]))
    units = {stage.stage: stage.units for stage in plan.plan_build(inputs, 8, settings=defaults).stages}
    finer = {stage.stage: stage.units for stage in plan.plan_build(inputs, 8, settings=plan.PlanSettings.of(shard_docs=100_000, split_mb=32)).stages}
    assert finer["retrieve"] > units["retrieve"] and finer["extract_docs"] > units["extract_docs"]
    (tmp_path / "build.toml").write_text("split_mb = 32\nshard_docs = 100000\n")
    listing = str(tmp_path / "listing.json")
    shown = {}
    for name, flags in (("file", ["--config", str(tmp_path / "build.toml")]), ("flags", ["--split-mb", "32", "--shard-docs", "100000"]), ("defaults", [])):
        assert main(["plan", "--listing", listing, "--workers", "8", *flags]) == 0
        shown[name] = capsys.readouterr().err
    assert shown["file"] == shown["flags"] != shown["defaults"]  # the same plan from the file as from the flags, not the default one
    assert main(["plan", "--listing", listing, "--min-docs", "-1"]) == 2
    assert "--min-docs must be at least 0, got -1" in capsys.readouterr().err


@pytest.fixture(scope="module")
def fresh_dumps(tmp_path_factory):
    """Today's kinds, as `clirmatrix sample` writes them: en as Enterprise HTML (.tar.gz), fr as multistream XML (.bz2)."""
    from clirmatrix.pipeline.tools.sample import write_sample_dumps

    folder = tmp_path_factory.mktemp("fresh") / "dumps"
    write_sample_dumps(folder, docs_per_lang=60, langs=("en", "fr"), broken=False)
    return folder


def _cut_copy(fresh_dumps, tmp_path, pattern: str, stamped: bool = False):
    """A copy of the dumps with the file matching ``pattern`` cut to half its bytes (a download that stopped): (folder, cut file).

    ``stamped``: every document dump was first verified and stamped as ``dumps fetch`` does it (size and md5 as published).
    """
    import os
    import shutil

    from clirmatrix.pipeline.io.localio import md5_of
    from clirmatrix.pipeline.tools.download import Wanted
    from clirmatrix.pipeline.tools.dumps_fetch import write_stamp

    folder = tmp_path / "dumps"
    shutil.copytree(fresh_dumps, folder)
    for path in sorted(folder.glob("*wiki-*.*.bz2")) + sorted(folder.glob("*wiki-*.tar.gz")) if stamped else ():
        with path.open("rb") as handle:
            write_stamp(path, Wanted(path.name, f"https://dumps.example/{path.name}", md5_of(handle), path.stat().st_size))
    (cut,) = folder.glob(pattern)
    os.truncate(cut, cut.stat().st_size // 2)
    return folder, cut


@pytest.mark.parametrize("pattern", ["enwiki-NS0-*-ENTERPRISE-HTML.json.tar.gz", "frwiki-*-pages-articles-multistream.xml.bz2"], ids=["html.tar.gz", "xml.bz2"])
def test_plan_reads_each_dump_to_its_end_and_names_one_cut_short(fresh_dumps, tmp_path, capsys, pattern):
    """Counted before from the half it had (en 1,218 documents of 2,425, exit 0); now one line naming the file, exit 2."""
    from clirmatrix.cli import main

    whole = {lang.lang: lang.documents for lang in plan.inputs_from_dumps(str(fresh_dumps)).languages}
    assert all(whole.values())
    folder, cut = _cut_copy(fresh_dumps, tmp_path, pattern)
    assert main(["plan", "--dumps", str(folder)]) == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(errors) == 1 and "Traceback" not in errors[0], errors
    assert errors[0].startswith(f"error: {cut}: truncated_stream at line ") and errors[0].endswith("plan reads each dump to its end, and the build would stop on this one: fetch it again")


def test_plan_checks_a_fetched_dump_against_the_size_dumps_fetch_verified(fresh_dumps, tmp_path):
    """A dump ``dumps fetch`` verified and stamped, cut since: refused by its size, read or not; unstamped and not read: the note says so."""
    folder, cut = _cut_copy(fresh_dumps, tmp_path, "frwiki-*-pages-articles-multistream.xml.bz2", stamped=True)
    whole = (fresh_dumps / cut.name).stat().st_size
    with pytest.raises(InputError) as error:
        plan.inputs_from_dumps(str(folder), count_limit=0)  # the folder's dumps not read: the stamp still tells
    assert str(error.value) == (f"{cut}: {whole // 2:,} bytes, but clirmatrix dumps fetch verified it at {whole:,} (the size the dumps site published): "
                                "it was cut or changed since; fetch it again")
    inputs = plan.inputs_from_dumps(str(fresh_dumps), count_limit=0)  # whole, but never fetched: estimated, and said to be unchecked
    (note,) = [note for note in inputs.notes if note.startswith("documents estimated")]
    (html,) = fresh_dumps.glob("enwiki-*.tar.gz")
    assert note.endswith(f"not read, so a dump cut short is not noticed: no dumps fetch stamp to check the size of {html.name}, {cut.name})")
