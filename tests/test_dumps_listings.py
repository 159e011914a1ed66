"""Folder listings read by what they mean: the pages real nginx, Apache and lighttpd servers made of one small site, served on 127.0.0.1.

The pages in ``fixtures/dumps_site/listings/{server}/`` are what those servers answered
for the site ``listing_tree`` lays out (``capture.sh`` there made them; SOURCES.md says
which versions and settings). Here they are served in the folders' place by the tests'
own server, in front of the same files, so no web server need be installed.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from support.dumps_site import ERROR_PAGE, LISTED, DumpsSite, listing_tree

from clirmatrix.cli import main
from clirmatrix.pipeline.method.input_kinds import HTML, ITEMS_PER_SITE, PAGE_PROPS, WIKIDATA_JSON, XML
from clirmatrix.pipeline.tools.dumps_fetch import fetch_dumps
from clirmatrix.pipeline.tools.dumps_site import Site, SiteError, list_dumps, read_listing

LISTINGS = Path(__file__).parent / "fixtures" / "dumps_site" / "listings"
SERVERS = ("nginx", "apache-table", "apache-pre", "apache-plain", "lighttpd")


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> tuple[Path, dict[str, bytes]]:
    root = tmp_path_factory.mktemp("tree")
    return root, listing_tree(root)


def _serve(tree: tuple[Path, dict[str, bytes]], where: Path, server: str | None) -> DumpsSite:
    """The tree served with ``server``'s real listings in its folders' place (None: the test server's own nginx-style pages)."""
    shutil.copytree(tree[0], where)
    for folder in LISTED if server else ():
        shutil.copyfile(LISTINGS / server / folder / "index.html", where / folder / "index.html")
    return DumpsSite(where)


def _path(url: str) -> str:
    """A served file's path in the tree."""
    return "site/" + url.split("/site/", 1)[1]


@pytest.mark.parametrize("server", SERVERS)
def test_each_servers_real_pages_list_the_same_entries_and_never_a_wrong_size(tree, server):
    root, files = tree
    for folder in LISTED:
        page = (LISTINGS / server / folder / "index.html").read_bytes()
        entries = read_listing(page, f"http://127.0.0.1:1/{folder}", folder)
        on_disk = {p.name + ("/" if p.is_dir() else "") for p in (root / folder).iterdir()}
        assert set(entries) == on_disk, (server, folder)
        for name, size in entries.items():
            assert size is None or size == len(files[folder + name]), (server, folder, name)  # exact, or left to HEAD
    exact = read_listing((LISTINGS / server / "site/other/enterprise_html/runs/20261101/index.html").read_bytes(),
                         "http://h/site/other/enterprise_html/runs/20261101/", "site/other/enterprise_html/runs/20261101/")
    big = exact["enwiki-NS0-20261101-ENTERPRISE-HTML.json.tar.gz"]
    assert (big is not None) == (server == "nginx")  # only nginx gives bytes; Apache shows 1.2M, lighttpd 1.2M, plain Apache nothing


def test_nginx_apache_and_lighttpd_mirrors_give_the_same_listing(tree, tmp_path):
    """`dumps list` reads each server's pages alike: the same files, runs, sizes (HEAD where rounded) and checksums."""
    listings = {}
    for server in SERVERS:
        served = _serve(tree, tmp_path / server, server)
        try:
            listings[server] = list_dumps(["en", "de"], mirror=served.url + "site/", site=Site(served.url + "site/", sleep=lambda s: None))
            heads = list(served.heads)
        finally:
            served.stop()
        assert bool(heads) == (server != "nginx"), server  # only rounded sizes are asked for
        assert all(not head.endswith((".json", ".txt")) for head in heads)
    nginx = listings["nginx"]
    kinds = {(f.lang, f.kind): f for f in nginx.offered}
    assert kinds[("en", HTML)].date == "20261101" and kinds[("en", XML)].date == "20261101"  # 20261120 is in progress
    assert kinds[("en", HTML)].size == len(tree[1][_path(kinds[("en", HTML)].url)])
    assert ("en", PAGE_PROPS) in kinds and (None, ITEMS_PER_SITE) in kinds and (None, WIKIDATA_JSON) in kinds
    assert sorted((f.lang or "", f.kind, f.date) for f in nginx.chosen) == [("", ITEMS_PER_SITE, "20261101"), ("de", HTML, "20261101"),
                                                                             ("en", HTML, "20261101")]
    assert any(note.startswith("enwiki 20261120: xml not offered") for note in nginx.notes)
    for server, listing in listings.items():
        assert [(f.name, f.kind, f.date, f.size, f.md5, f.sha1) for f in listing.offered] == [
            (f.name, f.kind, f.date, f.size, f.md5, f.sha1) for f in nginx.offered], server
        assert [f.name for f in listing.chosen] == [f.name for f in nginx.chosen], server


def test_a_dump_listed_by_apache_fetches_verified(tree, tmp_path):
    served = _serve(tree, tmp_path / "site", "apache-table")
    try:
        listing = list_dumps(["en", "de"], mirror=served.url + "site/", site=Site(served.url + "site/"))
        report = fetch_dumps(listing.chosen, tmp_path / "to")
    finally:
        served.stop()
    assert sorted(report.fetched) == sorted(f.name for f in listing.chosen) and not report.failed
    for item in listing.chosen:
        assert (tmp_path / "to" / item.name).read_bytes() == tree[1][_path(item.url)]


LOGIN = b"""<!DOCTYPE html><html><head><title>Sign in</title></head><body><h1>Sign in</h1>
<form method="post" action="login"><input name="user"><input name="password" type="password"></form>
<a href="reset/">Forgot your password?</a> <a href="20261101/">20261101/</a></body></html>"""
PORTAL = b"""<html><head><title>Welcome to Station WiFi</title><meta http-equiv="refresh" content="5; url=http://portal.example/accept"></head>
<body><p>Please accept the terms to continue.</p><a href="http://portal.example/accept?next=/">Accept</a> <a href="terms.html">Terms</a></body></html>"""


CASES = [(ERROR_PAGE, folder.removeprefix("site/")) for folder in LISTED if folder.startswith("site/")]  # every folder `list` reads
CASES += [(LOGIN, "other/enterprise_html/runs/"), (LOGIN, "enwiki/"), (PORTAL, "other/enterprise_html/runs/20261101/"), (PORTAL, "wikidatawiki/")]


@pytest.mark.parametrize(("page", "folder"), CASES, ids=[f"{'wikimedia-error' if p is ERROR_PAGE else 'login' if p is LOGIN else 'portal'}:{f}"
                                                          for p, f in CASES])
def test_a_page_that_is_not_a_listing_is_refused_naming_its_url(tree, tmp_path, capsys, page, folder):
    """An error page with links (status 200), a login page, a captive portal: one line naming the URL, exit 2, never an empty folder."""
    served = _serve(tree, tmp_path / "site", None)
    (served.root / "site" / folder / "index.html").write_bytes(page)
    try:
        code = main(["dumps", "list", "--mirror", served.url + "site/", "--langs", "en"])
    finally:
        served.stop()
    err = capsys.readouterr().err
    assert code == 2
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:") and f"{served.url}site/{folder}: not a directory listing" in lines[0]


@pytest.mark.parametrize("path", ["enwiki/20261101/dumpstatus.json", "wikidatawiki/entities/20261028/wikidata-20261028-md5sums.txt",
                                  "other/enterprise_html/runs/20261101/enwiki-NS0-20261101-ENTERPRISE-STATS.json"])
def test_an_error_page_in_place_of_what_the_site_publishes_for_machines_is_refused(tree, tmp_path, capsys, path):
    """dumpstatus.json, the checksum lists, the STATS files: a page in their place is named, never read as "not finished" or "no hash"."""
    served = _serve(tree, tmp_path / "site", None)
    (served.root / "site" / path).write_bytes(ERROR_PAGE)
    try:
        code = main(["dumps", "list", "--mirror", served.url + "site/", "--langs", "en"])
    finally:
        served.stop()
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and lines[0].startswith(f"error: {served.url}site/{path} is an HTML page"), lines


def test_a_listing_of_another_folder_is_refused():
    nginx = (LISTINGS / "nginx" / "site/enwiki/index.html").read_bytes()
    with pytest.raises(SiteError, match=r"http://h/site/other/cirrussearch/: the page lists '/site/enwiki', not /other/cirrussearch"):
        read_listing(nginx, "http://h/site/other/cirrussearch/", "other/cirrussearch/")


@pytest.mark.parametrize("server", SERVERS)
def test_a_run_folder_with_no_runs_ends_in_one_clear_line(tree, tmp_path, capsys, server):
    """The real empty pages: asked for that kind, one error line; with auto, a note and then `nothing to fetch`, exit 1."""
    served = _serve(tree, tmp_path / "site", server)
    mirror = served.url + "bare/"
    try:
        assert main(["dumps", "list", "--mirror", mirror, "--langs", "en", "--source", "html"]) == 2
        err = capsys.readouterr().err
        assert [line for line in err.splitlines() if line.strip()] == [
            f"error: {mirror}other/enterprise_html/runs/ lists no YYYYMMDD/ run folder: no Enterprise HTML dump to choose (--source html)"]
        assert main(["dumps", "fetch", "--mirror", mirror, "--langs", "en", "--to", str(tmp_path / "to")]) == 1
    finally:
        served.stop()
    err = " ".join(capsys.readouterr().err.split())
    assert f"note html: {mirror}other/enterprise_html/runs/ lists no YYYYMMDD/ run folder; no Enterprise HTML dump offered" in err
    assert f"en: no finished CirrusSearch, Enterprise HTML or XML dump at {mirror} (xml: {mirror}enwiki/ lists no YYYYMMDD/ run folder)" in err
    assert err.endswith(f"nothing to fetch: no language has a finished document dump at {mirror} (see the notes above)")
    assert not (tmp_path / "to").exists() or not any((tmp_path / "to").iterdir())


def test_a_language_without_a_dump_of_the_kind_asked_is_named_with_why(tree, tmp_path, capsys):
    served = _serve(tree, tmp_path / "site", "lighttpd")
    try:
        assert main(["dumps", "list", "--mirror", served.url + "site/", "--langs", "en,de", "--source", "xml"]) == 0
    finally:
        served.stop()
    err = " ".join(capsys.readouterr().err.split())
    assert f"de: no finished xml dump at {served.url}site/ (xml: {served.url}site/dewiki/ is not there (404))" in err
    assert re.search(r"fetch takes 2 files", err)  # en's XML dump and wb_items_per_site
