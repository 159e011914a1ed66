"""``clirmatrix dumps list/fetch`` against a small copy of dumps.wikimedia.org served on 127.0.0.1, faults included."""

from __future__ import annotations

import gzip
import hashlib
import os
import re
import shutil
from datetime import datetime, timezone
from pathlib import Path

import orjson
import pytest
from support.dumps_site import DumpsSite, autoindex

from clirmatrix.cli import main
from clirmatrix.pipeline.method.input_kinds import HTML, ITEMS_PER_SITE, PAGE_PROPS, WIKIDATA_JSON, XML
from clirmatrix.pipeline.tools.dumps_fetch import fetch_dumps, stamp_path
from clirmatrix.pipeline.tools.dumps_site import DumpListing, Site, list_dumps, runs_of, wiki_dump
from clirmatrix.pipeline.tools.sample import FRESH, FRESH_DATE, write_sample_dumps

FIXTURES = Path(__file__).parent / "fixtures" / "dumps_site"
LANGS = ("en", "de", "fr")
NEWER = "20261120"  # a run begun after FRESH_DATE: in progress, so never offered


def _md5(data: bytes) -> str:
    return hashlib.md5(data).hexdigest()


def _status(db: str, run: str, jobs: dict[str, tuple[str, list[Path]]], hashes: bool = True) -> bytes:
    """A dumpstatus.json as the site writes it (compact, one line): per job its status and files."""
    out = {}
    for job, (status, files) in jobs.items():
        entries = {}
        for path in files:
            data = path.read_bytes()
            entry = {"size": len(data)}
            if status == "done":
                entry["url"] = f"/{db}/{run}/{path.name}"
                if hashes:
                    entry |= {"md5": _md5(data), "sha1": hashlib.sha1(data).hexdigest()}
            entries[path.name] = entry
        out[job] = {"status": status, "updated": "2026-11-02 04:10:11" if status != "waiting" else "", "files": entries}
    return orjson.dumps({"jobs": out, "version": "0.8"}) + b"\n"


def make_site(root: Path, dumps: Path) -> dict[str, bytes]:
    """Lay sample dumps out as dumps.wikimedia.org does; returns each published file's bytes by name."""
    published = {}

    def put(folder: str, source: Path, name: str | None = None) -> Path:
        target = root / folder / (name or source.name)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
        published[target.name] = target.read_bytes()
        return target

    runs = f"other/enterprise_html/runs/{FRESH_DATE}"
    for lang in ("en", "de"):
        tarball = put(runs, dumps / f"{lang}wiki-NS0-{FRESH_DATE}-ENTERPRISE-HTML.json.tar.gz")
        stats = {"wiki": f"{lang}wiki", "md5sum": _md5(tarball.read_bytes()), "date_modified": "2026-11-02T03:00:00Z"}
        (root / runs / f"{lang}wiki-NS0-{FRESH_DATE}-ENTERPRISE-STATS.json").write_bytes(orjson.dumps(stats))
    # An older run of English, which the newer one wins over.
    put("other/enterprise_html/runs/20261020", dumps / f"enwiki-NS0-{FRESH_DATE}-ENTERPRISE-HTML.json.tar.gz", "enwiki-NS0-20261020-ENTERPRISE-HTML.json.tar.gz")
    # CirrusSearch stopped in 2025: still listed, older than today's HTML.
    cirrus = root / "other/cirrussearch/20250106/enwiki-20250106-cirrussearch-content.json.gz"
    cirrus.parent.mkdir(parents=True)
    cirrus.write_bytes(gzip.compress(b'{"index":{"_id":"1"}}\n{"title":"A","text":"a"}\n', mtime=0))
    # French: a finished XML run (its hashes partly only in the run's sums files), and a newer run in progress.
    run = f"frwiki/{FRESH_DATE}"
    xml = put(run, dumps / f"frwiki-{FRESH_DATE}-pages-articles-multistream.xml.bz2")
    index = put(run, dumps / f"frwiki-{FRESH_DATE}-pages-articles-multistream-index.txt.bz2")
    props = put(run, dumps / f"frwiki-{FRESH_DATE}-page_props.sql.gz")
    status = orjson.loads(_status("frwiki", FRESH_DATE, {"articlesmultistreamdumprecombine": ("done", [xml, index]), "pagepropstable": ("done", [props])}))
    for entry in status["jobs"]["articlesmultistreamdumprecombine"]["files"].values():  # as in the real enwiki 20230301 status
        del entry["md5"], entry["sha1"]
    (root / run / "dumpstatus.json").write_bytes(orjson.dumps(status) + b"\n")
    sums = "".join(f"{_md5(p.read_bytes())}  {p.name}\n" for p in (xml, index, props))
    (root / run / f"frwiki-{FRESH_DATE}-md5sums.txt").write_text(sums)
    newer = root / f"frwiki/{NEWER}"
    newer.mkdir()
    partial = newer / f"frwiki-{NEWER}-pages-articles-multistream.xml.bz2"
    partial.write_bytes(xml.read_bytes()[: len(xml.read_bytes()) // 2])
    (newer / "dumpstatus.json").write_bytes(_status("frwiki", NEWER, {"articlesmultistreamdumprecombine": ("in-progress", [partial]),
                                                                      "pagepropstable": ("waiting", [])}))
    (root / "enwiki").mkdir()  # English has no XML run here; German's folder lacks too
    wikidata = f"wikidatawiki/{FRESH_DATE}"
    items = put(wikidata, dumps / f"wikidatawiki-{FRESH_DATE}-wb_items_per_site.sql.gz")
    (root / wikidata / "dumpstatus.json").write_bytes(_status("wikidatawiki", FRESH_DATE, {"wbitemspersitetable": ("done", [items])}))
    # Wikidata's JSON dump: a finished run (its md5sums name the file), and a newer one still being written.
    for run, finished in (("20261028", True), ("20261104", False)):
        folder = root / "wikidatawiki/entities" / run
        folder.mkdir(parents=True)
        dump = folder / f"wikidata-{run}-all.json.gz"
        dump.write_bytes(gzip.compress(b"[\n]\n", mtime=0))
        published[dump.name] = dump.read_bytes()
        sums = f"{_md5(dump.read_bytes())}  {dump.name}\n" if finished else ""
        (folder / f"wikidata-{run}-md5sums.txt").write_text(sums + f"{_md5(b'x')}  wikidata-{run}-all.json.bz2\n")
    return published


@pytest.fixture(scope="module")
def sample_dumps(tmp_path_factory):
    root = tmp_path_factory.mktemp("fresh") / "dumps"
    world = write_sample_dumps(root, docs_per_lang=150, langs=LANGS, seed=5, inputs=FRESH)
    return root, world


@pytest.fixture
def site(sample_dumps, tmp_path_factory):
    root = tmp_path_factory.mktemp("site")
    published = make_site(root, sample_dumps[0])
    served = DumpsSite(root)
    served.published = published
    yield served
    served.stop()


def _list(site: DumpsSite, **options) -> DumpListing:
    return list_dumps(LANGS, mirror=site.url, site=Site(site.url, sleep=lambda s: None), **options)


def test_the_real_sites_listings_and_status_are_read_as_published(tmp_path):
    """The real files kept from the site: nginx listings (names cut at 50 characters) and enwiki's dumpstatus.json."""
    assert (FIXTURES / "enwiki" / "index.html").read_bytes().count(b"\r\n") > 5  # kept byte-exact, CRLF and all
    root = tmp_path / "site"
    shutil.copytree(FIXTURES, root)
    for listing in root.rglob("index*.html"):  # what GET folder/ answers
        listing.rename(listing.parent / "index.html")
    run = root / "enwiki" / "20230301"
    (run / "dumpstatus.EXCERPT.json").rename(run / "dumpstatus.json")
    (run / "enwiki-20230301-md5sums.DERIVED.txt").rename(run / "enwiki-20230301-md5sums.txt")
    served = DumpsSite(root)
    try:
        site = Site(served.url)
        assert runs_of(site.entries("enwiki/"), "latest")[:2] == ["20230301", "20230220"]
        entities = site.entries("wikidatawiki/entities/20211027/")
        assert entities["wikidata-20211027-md5sums.txt"] == 207 and entities["wikidata-20211027-sha1sums.txt"] == 231
        long_names = site.entries("other/enterprise_html/runs/20211020/")
        assert long_names["enwiki-NS0-20211020-ENTERPRISE-HTML.json.tar.gz"] == 99543372861  # the text is cut, the href is not
        notes: list[str] = []
        xml, why = wiki_dump(site, "enwiki", "en", XML, "20230301", notes)
        assert [f.name for f in xml] == ["enwiki-20230301-pages-articles-multistream.xml.bz2"] and why is None  # the recombined file, not its index or parts
        assert xml[0].size > 19e9 and xml[0].md5 is None  # this run's status and sums carry no hash for it: fetch reads it whole
        props, _ = wiki_dump(site, "enwiki", "en", PAGE_PROPS, "20230301", notes)
        assert props[0].md5 == "5fe557c44037473e5b7b584728a46c2d" and props[0].size == 362677764
    finally:
        served.stop()


def test_our_listings_are_nginx_autoindex_byte_for_byte():
    """The test server's listings are the real site's format: it rebuilds two real listings exactly."""
    for page in (FIXTURES / "enwiki" / "index.html", FIXTURES / "wikidatawiki" / "entities" / "20211027" / "index.html"):
        real = page.read_bytes().decode()
        title = re.search(r"<title>Index of (.*?)</title>", real)[1]
        body = re.search(r"\r\n(<body[^>]*>)\r\n", real)[1]
        entries = []
        for href, stamp, size in re.findall(r'<a href="([^"]+)">.*?</a>\s+(\d\d-\w{3}-\d{4} \d\d:\d\d)\s+(\d+|-)', real):
            when = datetime.strptime(stamp, "%d-%b-%Y %H:%M").replace(tzinfo=timezone.utc)
            entries.append((href.rstrip("/"), href.endswith("/"), when, 0 if size == "-" else int(size)))
        assert autoindex(title, entries, body) == real


def test_list_offers_the_newest_finished_dump_of_each_kind_and_never_one_in_progress(site):
    listing = _list(site)
    offered = {(f.lang, f.kind): f for f in listing.offered}
    assert offered[("en", HTML)].date == FRESH_DATE  # the newer of two Enterprise runs
    assert offered[("en", "cirrus")].date == "20250106"
    assert offered[("fr", XML)].date == FRESH_DATE  # 20261120's is in progress
    assert any(f"frwiki {NEWER}" in note and "in-progress" in note for note in listing.notes)
    assert all(f.date != NEWER for f in listing.offered)
    # Sizes and checksums are the site's: the STATS file's md5, dumpstatus's, the run's md5sums where dumpstatus has none.
    for item in listing.offered:
        if item.kind != "cirrus":
            assert item.size == len(site.published[item.name]) and item.md5 == _md5(site.published[item.name]), item.name
    assert offered[("fr", XML)].sha1 is None and offered[("fr", PAGE_PROPS)].sha1 is not None
    # Fetch takes, per language, what build --source auto reads (the newest), and wb_items_per_site for links.
    assert sorted((f.lang or "", f.kind) for f in listing.chosen) == [("", ITEMS_PER_SITE), ("de", HTML), ("en", HTML), ("fr", XML)]
    # The listing round-trips through its JSON, which plan and fetch --listing read.
    again = DumpListing.read(_write(listing, site.root / "listing.json"))
    assert again.offered == listing.offered and again.chosen == listing.chosen


def _write(listing: DumpListing, path: Path) -> Path:
    path.write_bytes(listing.to_json())
    return path


def test_date_and_source_and_links_choose_as_the_build_would(site):
    old = _list(site, date="20261031")
    assert {(f.lang, f.kind, f.date) for f in old.chosen if f.lang == "en"} == {("en", HTML, "20261020")}
    assert not [f for f in old.chosen if f.lang in ("de", "fr")]  # nothing finished that early
    assert any(note.startswith("de: no finished") for note in old.notes)
    cirrus = _list(site, source="cirrus", links="page-props")
    assert [(f.lang, f.kind) for f in cirrus.chosen] == [("en", "cirrus")]  # page_props only for chosen languages: fr is not
    assert any("links: no finished page-props" in note for note in cirrus.notes)
    wikidata = _list(site, links="wikidata-json")
    assert [(f.name, f.md5) for f in wikidata.chosen if f.kind == WIKIDATA_JSON] == [("wikidata-20261028-all.json.gz", _md5(site.published["wikidata-20261028-all.json.gz"]))]
    assert any("wikidata 20261104" in note and "still being written" in note for note in wikidata.notes)
    props = _list(site, links="page-props")
    assert [f.kind for f in props.chosen if f.lang is None] == [] and (("fr", PAGE_PROPS) in {(f.lang, f.kind) for f in props.chosen})


def test_fetch_verifies_everything_and_the_build_reads_it_unchanged(site, sample_dumps, tmp_path):
    from conftest import EVAL, TRAIN, build_config

    from clirmatrix.beam_jobs.build import run_build
    from clirmatrix.pipeline.tools.validate import validate

    listing = _list(site)
    to = tmp_path / "dumps"
    report = fetch_dumps(listing.chosen, to)
    assert sorted(report.fetched) == sorted(f.name for f in listing.chosen) and not report.failed
    for item in listing.chosen:
        assert (to / item.name).read_bytes() == site.published[item.name]
    assert sorted(p.name for p in to.iterdir() if not p.name.startswith(".")) == sorted(f.name for f in listing.chosen)
    # A rerun asks the site for no file: each is stamped as verified.
    before = len(site.requests)
    again = fetch_dumps(listing.chosen, to)
    assert sorted(again.skipped) == sorted(report.fetched) and len(site.requests) == before
    # A file changed since is verified anew, found wrong, and fetched again.
    damaged = to / listing.chosen[0].name
    with open(damaged, "r+b") as handle:  # the same size, changed in place a minute later
        handle.seek(-100, os.SEEK_END)
        flipped = bytes([handle.read(1)[0] ^ 1])
        handle.seek(-100, os.SEEK_END)
        handle.write(flipped)
    os.utime(damaged, ns=(damaged.stat().st_atime_ns, damaged.stat().st_mtime_ns + 60 * 10**9))
    assert fetch_dumps(listing.chosen, to).fetched == [damaged.name]
    # The folder, as fetch left it (stamps beside the dumps), builds a valid release from every file it fetched.
    out = tmp_path / "out"
    result = run_build(build_config(to, out, multi_langs=(), min_docs=50))
    assert sorted(result.summaries["extract_docs"].languages) == sorted(LANGS)
    assert validate(str(out), train_size=TRAIN, eval_size=EVAL).ok
    inputs = {Path(entry["path"]).name for entry in orjson.loads((out / "manifest.json").read_bytes())["inputs"]}
    assert inputs == {f.name for f in listing.chosen}


def test_a_dropped_connection_resumes_with_range_and_a_server_ignoring_range_restarts(site, tmp_path):
    listing = _list(site)
    html, xml = (next(f for f in listing.chosen if f.kind == kind) for kind in (HTML, XML))
    site.faults[html.url.removeprefix(site.url)] = ["drop"]
    site.faults[xml.url.removeprefix(site.url)] = ["drop", "norange"]
    report = fetch_dumps([html, xml], tmp_path, sleep=lambda s: None)
    assert sorted(report.fetched) == sorted([html.name, xml.name])
    half = len(site.published[html.name]) // 2
    assert site.file_requests(html.name) == [None, f"bytes={half}-"]
    assert site.file_requests(xml.name)[1].startswith("bytes=")  # asked to resume; got the whole body, started over
    for item in (html, xml):
        assert (tmp_path / item.name).read_bytes() == site.published[item.name]


def test_a_busy_server_is_waited_for_as_retry_after_asks(site, tmp_path):
    listing = _list(site)
    item = next(f for f in listing.chosen if f.lang == "de")
    site.faults[item.url.removeprefix(site.url)] = ["503", "503"]
    waits: list[float] = []
    report = fetch_dumps([item], tmp_path, sleep=waits.append, backoff=0.01)
    assert report.fetched == [item.name] and waits == [1.0, 1.0]


def test_a_checksum_mismatch_or_an_html_page_is_refused_and_nothing_unverified_keeps_a_name(site, tmp_path):
    listing = _list(site)
    html = next(f for f in listing.chosen if f.lang == "en")
    xml = next(f for f in listing.chosen if f.kind == XML)
    served = site.root / html.url.removeprefix(site.url)
    body = bytearray(served.read_bytes())
    body[len(body) // 2] ^= 1
    served.write_bytes(bytes(body))  # the same size, other bytes than the published md5's
    site.faults[xml.url.removeprefix(site.url)] = ["html"]
    report = fetch_dumps([html, xml], tmp_path, sleep=lambda s: None)
    reasons = dict(report.failed)
    assert f"does not match the published md5 {html.md5}" in reasons[html.name]
    assert "HTML page" in reasons[xml.name]
    assert sorted(os.listdir(tmp_path)) == []  # no final name, no part, no stamp
    # The page was the server's passing trouble: a rerun fetches the file.
    assert fetch_dumps([xml], tmp_path).fetched == [xml.name]


def test_a_transfer_that_gives_up_keeps_its_part_which_no_build_takes_for_a_dump_and_a_rerun_resumes(site, tmp_path):
    from clirmatrix.pipeline.method.dumps import discover

    item = next(f for f in _list(site).chosen if f.lang == "de")
    site.faults[item.url.removeprefix(site.url)] = ["drop", "drop"]
    report = fetch_dumps([item], tmp_path, retries=0, sleep=lambda s: None)
    assert report.failed and not (tmp_path / item.name).exists()
    part = tmp_path / f".{item.name}.part"
    assert 0 < part.stat().st_size < item.size
    assert discover(str(tmp_path)).docs == {}
    kept, asked = part.stat().st_size, len(site.file_requests(item.name))
    assert fetch_dumps([item], tmp_path, sleep=lambda s: None).fetched == [item.name]  # the next drop is resumed too
    assert site.file_requests(item.name)[asked] == f"bytes={kept}-" and not part.exists()
    assert (tmp_path / item.name).read_bytes() == site.published[item.name] and stamp_path(tmp_path / item.name).exists()


def test_at_most_two_connections_to_the_site_by_default(site, tmp_path):
    listing = _list(site)
    for item in listing.chosen:
        site.faults[item.url.removeprefix(site.url)] = ["slow"]
    site.most_open = 0
    report = fetch_dumps(listing.chosen, tmp_path)
    assert len(report.fetched) == 4 and site.most_open == 2


def test_the_commands_list_dry_run_fetch_and_say_what_failed(site, tmp_path, capsys):
    listing_file = tmp_path / "listing.json"
    langs = ",".join(LANGS)
    assert main(["dumps", "list", "--mirror", site.url, "--langs", langs, "--json", str(listing_file)]) == 0
    err = capsys.readouterr().err
    assert f"frwiki {NEWER}" in err and "fetch takes 4 files" in err
    # plan reads the same listing: what the build of the chosen dumps would cost, documents estimated from the site's sizes.
    assert main(["plan", "--listing", str(listing_file), "--min-docs", "0"]) == 0
    err = capsys.readouterr().err
    assert "(est.)" in err and re.search(r"BI-139 directions 6\b", err)  # the 3 chosen languages' 3 x 2 directions
    assert main(["dumps", "fetch", "--listing", str(listing_file), "--to", str(tmp_path / "d"), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert len(out.strip().splitlines()) == 4 and not (tmp_path / "d").exists()
    de = next(f for f in DumpListing.read(listing_file).chosen if f.lang == "de")
    (site.root / de.url.removeprefix(site.url)).write_bytes(b"\x1f\x8b" + b"\0" * (de.size - 2))
    assert main(["dumps", "fetch", "--listing", str(listing_file), "--to", str(tmp_path / "d"), "--retries", "0"]) == 1
    err = capsys.readouterr().err
    assert re.search(r"fetched \(size and checksum verified\)[\s│]+3 ", err) and f"failed {de.name}" in err.replace("\n", " ")
    assert main(["dumps", "list", "--mirror", site.url, "--langs", "en,xx"]) == 2
    assert "xx" in capsys.readouterr().err


def test_a_local_copy_of_the_site_lists_and_fetches_alike(site, tmp_path):
    """A mirror on disk (rsync'd, or a shared folder), as a path or a file:// URL: the same files, sizes and checksums."""
    served = _list(site)
    for mirror in (str(site.root), site.root.as_uri()):
        local = list_dumps(LANGS, mirror=mirror)
        assert [(f.name, f.size, f.md5, f.sha1) for f in local.offered if f.kind != "cirrus"] == [
            (f.name, f.size, f.md5, f.sha1) for f in served.offered if f.kind != "cirrus"]
        assert all(f.url.startswith("file://") for f in local.chosen)
    report = fetch_dumps(local.chosen, tmp_path)
    assert sorted(report.fetched) == sorted(f.name for f in served.chosen)
