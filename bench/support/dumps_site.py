"""A small copy of dumps.wikimedia.org on 127.0.0.1: a folder served as the site serves it, with faults on demand.

Folders answer with their ``index.html`` if they hold one (the real listings kept in
``tests/fixtures/dumps_site``), else with nginx's autoindex page in the same format
(``autoindex`` reproduces two of the real ones byte for byte); files with
HTTP Range support, and HEAD. ``faults[path]`` is a list consumed one per request: ``drop`` (half
the body, then the connection dies), ``503`` (with ``Retry-After: 1``), ``html`` (an
error page with status 200, as a misconfigured proxy sends), ``norange`` (the whole
body with 200, whatever Range asked). ``throttle`` (bytes a second) slows every file
body, as a busy mirror does. It counts requests and the most connections open at once.

``listing_tree`` lays out the small site the real nginx, Apache and lighttpd listings
in ``tests/fixtures/dumps_site/listings`` were taken from (``capture.sh`` there).
"""

from __future__ import annotations

import bz2
import gzip
import hashlib
import os
import random
import socket
import threading
import time
from datetime import datetime, timezone
from pathlib import Path
from urllib.parse import unquote

import orjson

from support.local_http import QuietHandler, serve

_MONTHS = "Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split()
# Wikimedia's error page (status 200 here, as a proxy in the way serves it): links in it, no listing.
FIXTURES = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "dumps_site"  # the real listings and error page, kept with their sources
ERROR_PAGE = (FIXTURES / "errors" / "wikimedia-error.DERIVED.html").read_bytes()


def autoindex(path: str, entries: list[tuple[str, bool, datetime, int]], body: str = "<body>") -> str:
    """nginx's autoindex HTML (exact sizes): folders first, names cut to 47 characters + ``..&gt;`` past 50, CRLF."""
    lines = [f"<html>\r\n<head><title>Index of {path}</title></head>\r\n{body}\r\n<h1>Index of {path}</h1><hr><pre><a href=\"../\">../</a>\r\n"]
    for name, is_dir, when, size in sorted(entries, key=lambda entry: (not entry[1], entry[0])):
        shown = name + "/" if is_dir else name
        text = name[:47] + "..&gt;</a>" if len(name) > 50 else shown + "</a>" + " " * (50 - len(shown))
        stamp = f"{when.day:02d}-{_MONTHS[when.month - 1]}-{when.year} {when.hour:02d}:{when.minute:02d}"
        lines.append(f'<a href="{shown}">{text} {stamp} ' + ("-".rjust(19) if is_dir else f"{size:19d}") + "\r\n")
    return "".join(lines) + "</pre><hr></body>\r\n</html>\r\n"


class DumpsSite:
    """Serves ``root`` as the dumps site; ``url`` is its base."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.faults: dict[str, list[str]] = {}
        self.requests: list[tuple[str, str | None]] = []
        self.heads: list[str] = []  # paths asked with HEAD (a file's exact size, where a listing rounds it)
        self.throttle: int | None = None
        self.open = self.most_open = 0
        self.lock = threading.Lock()
        site = self

        class Handler(QuietHandler):
            def do_HEAD(self) -> None:
                path = unquote(self.path.split("?")[0]).lstrip("/")
                site.heads.append(path)
                local = site.root / path
                if not local.is_file():
                    return self._send(404 if not local.is_dir() else 200, b"")
                self.send_response(200)
                self.send_header("Content-Length", str(local.stat().st_size))
                self.end_headers()

            def do_GET(self) -> None:
                with site.lock:
                    site.open += 1
                    site.most_open = max(site.most_open, site.open)
                self.counted = True
                try:
                    self._answer()
                finally:
                    self._release()

            def _release(self) -> None:
                """No longer counted as open: done before the last byte goes out, so the client cannot have moved on first."""
                if self.counted:
                    self.counted = False
                    with site.lock:
                        site.open -= 1

            def _answer(self) -> None:
                path = unquote(self.path.split("?")[0]).lstrip("/")
                site.requests.append((path, self.headers.get("Range")))
                with site.lock:
                    pending = site.faults.get(path, [])
                    fault = pending.pop(0) if pending else None
                local = site.root / path
                if fault == "503":
                    return self._send(503, b"busy", {"Retry-After": "1"})
                if fault == "html":
                    return self._send(200, ERROR_PAGE, {"Content-Type": "text/html"})
                if local.is_dir() and (local / "index.html").is_file():  # a kept real listing, served as nginx serves index.html
                    local = local / "index.html"
                elif local.is_dir():
                    entries = [(e.name, e.is_dir(), datetime.fromtimestamp(e.stat().st_mtime, timezone.utc), e.stat().st_size) for e in local.iterdir()]
                    return self._send(200, autoindex("/" + path, entries).encode(), {"Content-Type": "text/html"})
                if not local.is_file():
                    return self._send(404, b"<html><body>404 Not Found</body></html>")
                body = local.read_bytes()
                start, status = 0, 200
                asked = self.headers.get("Range")
                if asked and fault != "norange":
                    start, status = int(asked.split("=")[1].split("-")[0]), 206
                    if start >= len(body):
                        return self._send(416, b"", {"Content-Range": f"bytes */{len(body)}"})
                self.send_response(status)
                self.send_header("Content-Length", str(len(body) - start))
                if status == 206:
                    self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
                self.end_headers()
                if fault == "drop":
                    self.wfile.write(body[start : start + (len(body) - start) // 2])
                    self.wfile.flush()
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                if fault == "slow":  # long enough for other transfers to overlap it
                    for at in range(start, len(body) - 1, 1 << 14):
                        self.wfile.write(body[at : min(at + (1 << 14), len(body) - 1)])
                        time.sleep(0.01)
                    start = len(body) - 1
                if site.throttle and not path.endswith((".json", ".txt", ".html")):
                    self._trickle(body[start:-1], site.throttle)
                    start = len(body) - 1
                self.wfile.write(body[start:-1])
                self.wfile.flush()
                self._release()
                self.wfile.write(body[-1:])

        self.httpd, self.url = serve(Handler)

    def file_requests(self, name: str) -> list[str | None]:
        """The Range header of each request for a file (by its name), in order."""
        return [asked for path, asked in self.requests if path.endswith("/" + name)]

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


# --- the site the real listings were taken from -----------------------------------------------------

LISTING_TIME = datetime(2026, 11, 2, 3, 4, tzinfo=timezone.utc)  # every file's and folder's mtime, so the listings come out the same
# The folders whose listings were kept (tests/fixtures/dumps_site/listings/{server}/{folder}index.html); bare/ is a mirror with empty folders.
LISTED = ("site/other/enterprise_html/runs/", "site/other/enterprise_html/runs/20261020/", "site/other/enterprise_html/runs/20261101/",
          "site/other/cirrussearch/", "site/other/cirrussearch/20250106/", "site/enwiki/", "site/wikidatawiki/", "site/wikidatawiki/entities/",
          "site/wikidatawiki/entities/20261028/", "site/wikidatawiki/entities/20261104/", "bare/other/enterprise_html/runs/", "bare/enwiki/")


def _noise(name: str, size: int) -> bytes:
    return random.Random(name).randbytes(size)


def _status(db: str, run: str, jobs: dict[str, tuple[str, dict[str, bytes]]]) -> bytes:
    out = {}
    for job, (status, files) in jobs.items():
        entries = {name: {"size": len(data)} | ({"url": f"/{db}/{run}/{name}", "md5": hashlib.md5(data).hexdigest(),
                                                 "sha1": hashlib.sha1(data).hexdigest()} if status == "done" else {})
                   for name, data in files.items()}
        out[job] = {"status": status, "updated": "2026-11-02 03:04:00", "files": entries}
    return orjson.dumps({"jobs": out, "version": "0.8"}) + b"\n"


def listing_tree(root: Path) -> dict[str, bytes]:
    """Write the small dumps site (``site/``, and ``bare/``: a mirror whose run folders are empty); returns each file's bytes by path.

    The same bytes every time (seeded noise, gzip without a time stamp, one mtime), so the
    listings a server makes of it are the kept ones, sizes included: a 1.3 MB tarball
    (Apache and lighttpd show it rounded, as ``1.2M``), a 45 kB one, files under 1 kB.
    """
    files: dict[str, bytes] = {}
    runs = "site/other/enterprise_html/runs"
    for run, wikis in (("20261020", {"enwiki": 1_200_000}), ("20261101", {"enwiki": 1_300_000, "dewiki": 45_000})):
        for wiki, size in wikis.items():
            tarball = gzip.compress(_noise(f"{wiki}{run}", size), mtime=0)
            files[f"{runs}/{run}/{wiki}-NS0-{run}-ENTERPRISE-HTML.json.tar.gz"] = tarball
            stats = {"wiki": wiki, "md5sum": hashlib.md5(tarball).hexdigest(), "date_modified": "2026-11-02T03:04:00Z"}
            files[f"{runs}/{run}/{wiki}-NS0-{run}-ENTERPRISE-STATS.json"] = orjson.dumps(stats)
    files[f"{runs}/20261101/enwiki-NS14-20261101-ENTERPRISE-HTML.json.tar.gz"] = gzip.compress(_noise("ns14", 3_000), mtime=0)
    for kind in ("content", "general"):
        files[f"site/other/cirrussearch/20250106/enwiki-20250106-cirrussearch-{kind}.json.gz"] = gzip.compress(
            b'{"index":{"_id":"1"}}\n{"title":"A","text":"a"}\n' * 40, mtime=0)
    run = "site/enwiki/20261101"
    xml = {"enwiki-20261101-pages-articles-multistream.xml.bz2": bz2.compress(_noise("xml", 90_000)),
           "enwiki-20261101-pages-articles-multistream-index.txt.bz2": bz2.compress(b"1:1:A\n" * 100)}
    props = {"enwiki-20261101-page_props.sql.gz": gzip.compress(b"INSERT INTO `page_props` VALUES (1,'wikibase_item','Q1',NULL);\n", mtime=0)}
    files |= {f"{run}/{name}": data for name, data in (xml | props).items()}
    files[f"{run}/dumpstatus.json"] = _status("enwiki", "20261101", {"articlesmultistreamdumprecombine": ("done", xml), "pagepropstable": ("done", props)})
    files[f"{run}/enwiki-20261101-md5sums.txt"] = "".join(f"{hashlib.md5(d).hexdigest()}  {n}\n" for n, d in (xml | props).items()).encode()
    files[f"{run}/enwiki-20261101-sha1sums.txt"] = "".join(f"{hashlib.sha1(d).hexdigest()}  {n}\n" for n, d in (xml | props).items()).encode()
    files["site/enwiki/20261120/dumpstatus.json"] = _status("enwiki", "20261120", {"articlesmultistreamdumprecombine": ("in-progress", {}),
                                                                                  "pagepropstable": ("waiting", {})})
    files["site/enwiki/latest/enwiki-latest-md5sums.txt"] = files[f"{run}/enwiki-20261101-md5sums.txt"]
    items = {"wikidatawiki-20261101-wb_items_per_site.sql.gz": gzip.compress(b"INSERT INTO `wb_items_per_site` VALUES (1,1,'enwiki','A');\n", mtime=0)}
    files |= {f"site/wikidatawiki/20261101/{name}": data for name, data in items.items()}
    files["site/wikidatawiki/20261101/dumpstatus.json"] = _status("wikidatawiki", "20261101", {"wbitemspersitetable": ("done", items)})
    for run, finished in (("20261028", True), ("20261104", False)):
        dump = gzip.compress(b"[\n" + b'{"id":"Q1","sitelinks":{}},\n' * (200 if finished else 50), mtime=0)
        files[f"site/wikidatawiki/entities/{run}/wikidata-{run}-all.json.gz"] = dump
        named = f"wikidata-{run}-all.json.gz"
        files[f"site/wikidatawiki/entities/{run}/wikidata-{run}-md5sums.txt"] = (f"{hashlib.md5(dump).hexdigest()}  {named}\n" if finished else "").encode()
        if finished:
            files[f"site/wikidatawiki/entities/{run}/wikidata-{run}-sha1sums.txt"] = f"{hashlib.sha1(dump).hexdigest()}  {named}\n".encode()
    files["bare/enwiki/latest/enwiki-latest-md5sums.txt"] = b""
    for path, data in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_bytes(data)
    (root / "bare/other/enterprise_html/runs").mkdir(parents=True)
    stamp = LISTING_TIME.timestamp()
    for folder, dirs, names in os.walk(root, topdown=False):
        for name in names + dirs:
            os.utime(Path(folder) / name, (stamp, stamp))
    os.utime(root, (stamp, stamp))
    return files
