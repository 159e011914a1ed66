"""``clirmatrix download`` against a real local HTTP server (no mocked client), and the loader."""

from __future__ import annotations

import gzip
import hashlib
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import orjson
import pytest

from clirmatrix.pipeline.download import DownloadError, UnsafePathError, Wanted, download, fetch, load_index, plan

PATH = "BI-139/base/en/en.de.dev.base.jl.gz"
BODY = gzip.compress(b"".join(orjson.dumps({"src_id": str(i), "src_query": f"q{i}", "tgt_results": [[str(i), 6], ["9", 0]]}) + b"\n" for i in range(3000)), mtime=0)
MD5 = hashlib.md5(BODY).hexdigest()
HTML = b"<!DOCTYPE html><html><head><title>404 Not Found</title></head><body>gone</body></html>"


class Server:
    """Serves ``files``; per path a list of behaviours consumed one per request: ok, drop, 500, html."""

    def __init__(self, ranges: bool = True) -> None:
        self.files: dict[str, bytes] = {}
        self.behaviour: dict[str, list[str]] = {}
        self.ranges = ranges
        self.requests: list[tuple[str, str | None]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                path = self.path.lstrip("/")
                server.requests.append((path, self.headers.get("Range")))
                plan_ = server.behaviour.get(path, [])
                what = plan_.pop(0) if plan_ else "ok"
                if path not in server.files:
                    return self._send(404, b"not found")
                if what == "500":
                    return self._send(500, b'{"error": "internal"}')
                if what == "html":
                    return self._send(200, HTML)
                body, status, start = server.files[path], 200, 0
                wanted = self.headers.get("Range")
                if wanted and server.ranges:
                    start = int(wanted.split("=")[1].split("-")[0])
                    status = 206
                self.send_response(status)
                self.send_header("Content-Length", str(len(body) - start))
                if status == 206:
                    self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
                self.end_headers()
                if what == "drop":  # half the body, then the connection dies
                    self.wfile.write(body[start : start + (len(body) - start) // 2])
                    self.wfile.flush()
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                self.wfile.write(body[start:])

            def _send(self, status: int, body: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()


@pytest.fixture
def server():
    made = []

    def make(ranges: bool = True) -> Server:
        made.append(Server(ranges))
        made[-1].files[PATH] = BODY
        return made[-1]

    yield make
    for one in made:
        one.httpd.shutdown()


def _leftovers(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


def _wanted(url: str, md5: str = MD5, size: int | None = len(BODY)) -> Wanted:
    return Wanted(PATH, url + PATH, md5, size)


@pytest.mark.parametrize("ranges", [True, False], ids=["range", "no-range"])
def test_a_dropped_connection_resumes_or_restarts_and_the_file_verifies(server, tmp_path, ranges):
    srv = server(ranges)
    srv.behaviour[PATH] = ["drop"]
    sleeps: list[float] = []
    assert fetch(_wanted(srv.url), tmp_path, sleep=sleeps.append) == "fetched"
    assert (tmp_path / PATH).read_bytes() == BODY and _leftovers(tmp_path) == [PATH]
    first, second = srv.requests
    assert first[1] is None and second[1] == f"bytes={len(BODY) // 2}-"  # the retry asks for the rest
    assert sleeps == [1.0]


def test_a_server_error_then_success_and_a_rerun_skips(server, tmp_path):
    srv = server()
    srv.behaviour[PATH] = ["500"]
    assert fetch(_wanted(srv.url), tmp_path, sleep=lambda s: None) == "fetched"
    assert fetch(_wanted(srv.url), tmp_path, sleep=lambda s: None) == "skipped"
    assert len(srv.requests) == 2


@pytest.mark.parametrize(
    "behaviour, md5, message",
    [(["html"] * 9, MD5, "HTML page"), ([], "0" * 32, "md5"), ([], None, None)],
    ids=["html-200", "wrong-md5", "no-md5"],
)
def test_bad_bodies_are_errors_and_leave_nothing(server, tmp_path, behaviour, md5, message):
    srv = server()
    srv.behaviour[PATH] = list(behaviour)
    if message is None:  # without an md5 or size, a good body is still accepted
        assert fetch(_wanted(srv.url, None, None), tmp_path) == "fetched"
        return
    with pytest.raises(DownloadError, match=message):
        fetch(_wanted(srv.url, md5), tmp_path, sleep=lambda s: None)
    assert _leftovers(tmp_path) == []


def test_a_body_much_smaller_than_expected_is_an_error_page(server, tmp_path):
    srv = server()
    srv.files[PATH] = b'{"error": 1}' * 16  # 199 bytes or so, as the official server sent
    with pytest.raises(DownloadError, match="probably an error page"):
        fetch(_wanted(srv.url), tmp_path)
    assert _leftovers(tmp_path) == []


def test_index_entries_that_escape_the_target_are_refused(tmp_path):
    for bad in ("../evil.jl.gz", "/etc/passwd", "BI-139/../../x"):
        index = {"clirmatrix_bi139_base": {"queries/en_de/dev": {"url": "http://x/a", "expected_md5": MD5, "cache_path": bad}}}
        with pytest.raises(UnsafePathError, match="outside the target"):
            plan("bi139-base", ["en"], ["de"], ["dev"], index, "http://x/")


def test_plan_uses_the_index_then_the_url_pattern(tmp_path):
    index = {"clirmatrix_bi139_base": {"queries/en_de/dev": {"url": "http://mirror/x.jl.gz", "expected_md5": MD5, "verified_size": 10}}}
    files = plan("bi139-base", ["en"], ["de", "fr"], ["dev"], index, "http://base/data")
    assert files == [
        Wanted(PATH, "http://mirror/x.jl.gz", MD5, 10),
        Wanted("BI-139/base/en/en.fr.dev.base.jl.gz", "http://base/data/BI-139/base/en/en.fr.dev.base.jl.gz"),
    ]


def test_index_is_fetched_once_and_cached(server, tmp_path, monkeypatch):
    monkeypatch.setenv("CLIRMATRIX_HOME", str(tmp_path / "home"))
    srv = server()
    srv.files["downloads.json.gz"] = gzip.compress(orjson.dumps({"clirmatrix_docs": {}}))
    assert load_index(None, srv.url) == {"clirmatrix_docs": {}}
    assert load_index(None, srv.url) == {"clirmatrix_docs": {}}
    assert [path for path, _ in srv.requests] == ["downloads.json.gz"]
    srv.files["downloads.json.gz"] = HTML
    monkeypatch.setenv("CLIRMATRIX_HOME", str(tmp_path / "fresh"))
    with pytest.raises(DownloadError, match="HTML page"):
        load_index(srv.url + "downloads.json.gz", srv.url)
    with pytest.raises(DownloadError, match="404"):
        load_index(srv.url + "missing.json.gz", srv.url)
    assert load_index(None, srv.url + "elsewhere/") is None  # no default index: URL patterns


def test_parallel_download_reports_fetched_skipped_failed(server, tmp_path):
    srv = server()
    other = "BI-139/base/en/en.fr.dev.base.jl.gz"
    srv.files[other] = BODY
    files = [_wanted(srv.url), Wanted(other, srv.url + other, MD5), Wanted("DOCS/xx.tsv.gz", srv.url + "DOCS/xx.tsv.gz")]
    report = download(files, tmp_path, jobs=3, sleep=lambda s: None)
    assert sorted(report.fetched) == sorted([PATH, other]) and report.failed[0][0] == "DOCS/xx.tsv.gz" and "404" in report.failed[0][1]
    again = download(files[:2], tmp_path, jobs=2)
    assert sorted(again.skipped) == sorted([PATH, other])


def test_download_command_from_a_local_build_dry_run_then_fetch_and_read(tmp_path, capsys):
    from clirmatrix.cli import main
    from clirmatrix.pipeline.loader import QuerySplit, documents

    build = tmp_path / "build"
    (build / PATH).parent.mkdir(parents=True)
    (build / PATH).write_bytes(BODY)
    (build / "DOCS").mkdir()
    (build / "DOCS" / "de.tsv.gz").write_bytes(gzip.compress(b"9\tGermany is a country\n\n0\tBerlin\n", mtime=0))
    index = {"clirmatrix_bi139_base": {"queries/en_de/dev": {"url": PATH, "expected_md5": MD5, "cache_path": PATH, "size": len(BODY)}}}
    (build / "downloads.json.gz").write_bytes(gzip.compress(orjson.dumps(index)))
    common = ["--src", "en", "--tgt", "de", "--to", str(tmp_path / "got"), "--base-url", str(build)]

    assert main(["download", "bi139-base", "--split", "dev", "--dry-run", *common]) == 0
    out = capsys.readouterr()
    assert PATH in out.out and "1 files" in out.err and not (tmp_path / "got").exists()
    assert main(["download", "bi139-base", "--split", "dev", *common]) == 0
    assert main(["download", "docs", *common]) == 0
    assert "skipped" in capsys.readouterr().err

    split = QuerySplit(tmp_path / "got", "bi139-base", "en", "de", "dev")
    assert next(split.queries()) == ("0", "q0") and list(split.qrels())[:2] == [("0", "0", 6), ("0", "9", 0)]
    assert split.write_trec_qrels(tmp_path / "qrels.txt") == 6000
    assert (tmp_path / "qrels.txt").read_text().splitlines()[0] == "0 0 0 6"
    assert split.write_trec_run(tmp_path / "run.txt", tag="t") == 6000
    assert (tmp_path / "run.txt").read_text().splitlines()[1] == "0 Q0 9 2 -2 t"
    assert list(documents(tmp_path / "got", "de")) == [("9", "Germany is a country"), ("0", "Berlin")]
    assert main(["download", "multi8", "--src", "en", "--tgt", "xx", "--split", "dev", "--to", str(tmp_path / "got"), "--base-url", str(build)]) == 1


def test_loader_says_how_to_get_a_missing_split(tmp_path):
    from clirmatrix.pipeline.loader import QuerySplit

    with pytest.raises(FileNotFoundError, match="clirmatrix download bi139-full --src en --tgt de --split test1"):
        QuerySplit(tmp_path, "bi139-full", "en", "de", "test1")
