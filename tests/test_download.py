"""``clirmatrix download`` against a real local HTTP server (no mocked client), and the loader."""

from __future__ import annotations

import gzip
import hashlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import orjson
import pytest
from conftest import sigint_as_in_a_terminal
from support.local_http import QuietHandler, serve

from clirmatrix.cli import main
from clirmatrix.pipeline.tools.download import DownloadError, Index, MismatchError, UnsafePathError, Wanted, download, fetch, load_index, plan
from clirmatrix.pipeline.tools.stopping import Stop, Stopped

PATH = "BI-139/base/en/en.de.dev.base.jl.gz"
BODY = gzip.compress(b"".join(orjson.dumps({"src_id": str(i), "src_query": f"q{i}", "tgt_results": [[str(i), 6], ["9", 0]]}) + b"\n" for i in range(3000)), mtime=0)
MD5 = hashlib.md5(BODY).hexdigest()
HTML = b"<!DOCTYPE html><html><head><title>404 Not Found</title></head><body>gone</body></html>"


class Server:
    """Serves ``files``; per path a list of behaviours consumed one per request: ok, drop, 500, html; ``rate``: bytes/s of every body."""

    def __init__(self, ranges: bool = True) -> None:
        self.files: dict[str, bytes] = {}
        self.behaviour: dict[str, list[str]] = {}
        self.ranges = ranges
        self.requests: list[tuple[str, str | None]] = []
        self.conditional: list[str | None] = []  # If-None-Match of each request
        self.stale_304 = False  # answer 304 to any conditional request, as a server with a stale validator does
        self.rate: int | None = None  # throttle every file body (not the index) to this many bytes a second
        self.hanging = threading.Event()  # set: a "hang" ends
        self.late: dict[str, float] = {}  # seconds to wait before answering a path (a server slow to start a body)
        server = self

        class Handler(QuietHandler):
            def do_GET(self) -> None:
                path = self.path.lstrip("/")
                server.requests.append((path, self.headers.get("Range")))
                time.sleep(server.late.get(path, 0))
                server.conditional.append(self.headers.get("If-None-Match"))
                plan_ = server.behaviour.get(path, [])
                what = plan_.pop(0) if plan_ else "ok"
                if path not in server.files:
                    return self._send(404, b"not found")
                etag = '"' + hashlib.md5(server.files[path]).hexdigest() + '"'
                if self.headers.get("If-None-Match") and (server.stale_304 or self.headers["If-None-Match"] == etag):
                    self.send_response(304)
                    self.end_headers()
                    return
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
                self.send_header("ETag", etag)
                if status == 206:
                    self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
                self.end_headers()
                if what in ("stall", "hang"):  # half the body, then nothing for longer than the client waits (hang: for a minute)
                    self.wfile.write(body[start : start + (len(body) - start) // 2])
                    self.wfile.flush()
                    server.hanging.wait(1.5 if what == "stall" else 60)
                    return
                if what == "trickle":  # the whole body, slowly: throttled, never stalled
                    return self._trickle(body[start:], 4096 * 50, step=4096)  # 4 kB every 20 ms
                if what == "drop":  # half the body, then the connection dies
                    self.wfile.write(body[start : start + (len(body) - start) // 2])
                    self.wfile.flush()
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                if server.rate and path != "downloads.json.gz":
                    return self._trickle(body[start:], server.rate, step=1024)
                self.wfile.write(body[start:])

        self.httpd, self.url = serve(Handler)


@pytest.fixture
def server():
    made = []

    def make(ranges: bool = True) -> Server:
        made.append(Server(ranges))
        made[-1].files[PATH] = BODY
        return made[-1]

    yield make
    for one in made:
        one.hanging.set()
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


def test_a_stalled_server_times_out_and_resumes_and_a_throttled_one_just_takes_longer(server, tmp_path):
    srv = server()
    srv.behaviour[PATH] = ["stall", "trickle"]
    seen: list[int] = []
    assert fetch(_wanted(srv.url), tmp_path, timeout=0.5, sleep=lambda s: None, progress=seen.append) == "fetched"
    assert (tmp_path / PATH).read_bytes() == BODY and _leftovers(tmp_path) == [PATH]
    assert [r for _, r in srv.requests] == [None, f"bytes={len(BODY) // 2}-"]  # the stalled half kept, the rest trickled
    assert sum(seen) == len(BODY) and len(seen) > 2


def test_a_stop_wakes_a_read_waiting_on_a_stalled_server_and_keeps_what_arrived(server, tmp_path):
    """Stop hangs up on the connection: the read returns at once, not after the minute's timeout; the part stays to resume."""
    srv = server()
    srv.behaviour[PATH] = ["hang"]
    stop = Stop()
    part = tmp_path / "BI-139/base/en/.en.de.dev.base.jl.gz.part"
    threading.Thread(target=lambda: (_wait_for(lambda: part.is_file() and part.stat().st_size > 0), stop.set()), daemon=True).start()
    began = time.monotonic()
    with pytest.raises(Stopped):
        fetch(_wanted(srv.url), tmp_path, timeout=60, stop=stop)
    assert time.monotonic() - began < 5 and part.stat().st_size == len(BODY) // 2 and not (tmp_path / PATH).exists()
    # A part already whole (stopped while it was being verified) is verified without a request, then named.
    part.write_bytes(BODY)
    asked = len(srv.requests)
    assert fetch(_wanted(srv.url), tmp_path) == "fetched" and len(srv.requests) == asked and (tmp_path / PATH).read_bytes() == BODY
    (tmp_path / PATH).unlink()
    part.write_bytes(BODY[::-1])  # whole, but not the file: refused and removed
    with pytest.raises(MismatchError):
        fetch(_wanted(srv.url), tmp_path)
    assert not part.exists()


def _wait_for(condition, seconds: float = 10) -> None:
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.01)


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
    if message is None:  # without an md5 or size, a good body is accepted once read whole, and said to be so
        assert fetch(_wanted(srv.url, None, None), tmp_path) == "checked"
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


def _index(contexts: dict) -> Index:
    return Index(contexts, "http://x/downloads.json.gz", b"")


def test_index_entries_that_escape_the_target_are_refused(tmp_path):
    for bad in ("../evil.jl.gz", "/etc/passwd", "BI-139/../../x"):
        index = {"clirmatrix_bi139_base": {"queries/en_de/dev": {"url": "http://x/a", "expected_md5": MD5, "cache_path": bad}}}
        with pytest.raises(UnsafePathError, match="outside the target"):
            plan("bi139-base", ["en"], ["de"], ["dev"], _index(index), "http://x/")


def test_plan_takes_files_from_the_index_and_never_guesses_one_it_lacks(tmp_path):
    index = _index({"clirmatrix_bi139_base": {"queries/en_de/dev": {"url": "http://mirror/x.jl.gz", "expected_md5": MD5.upper(), "verified_size": 10}}})
    files, absent = plan("bi139-base", ["en"], ["de", "fr"], ["dev"], index, "http://base/data")
    assert files == [Wanted(PATH, "http://mirror/x.jl.gz", MD5, 10)]
    assert absent == ["BI-139/base/en/en.fr.dev.base.jl.gz"]
    files, _ = plan("bi139-base", ["en"], ["de"], ["dev"], index, "http://base/data", prefer_base=True)
    assert files[0].url == "http://base/data/" + PATH  # a --base-url the user gave wins over the index's URL
    files, absent = plan("bi139-base", ["en"], ["de", "fr"], ["dev"], None, "http://base/data")
    assert [w.url for w in files] == ["http://base/data/" + PATH, "http://base/data/BI-139/base/en/en.fr.dev.base.jl.gz"] and absent == []
    assert all(w.md5 is None for w in files)


def test_a_builds_file_urls_are_read_beside_its_index_not_from_where_it_once_was(tmp_path):
    old = tmp_path / "old"
    (old / PATH).parent.mkdir(parents=True)
    (old / PATH).write_bytes(b"an older build's file")
    index = _index({"clirmatrix_bi139_base": {"queries/en_de/dev": {"url": (old / PATH).as_uri(), "expected_md5": MD5, "size": len(BODY)}}})
    files, _ = plan("bi139-base", ["en"], ["de"], ["dev"], index, "http://127.0.0.1:9/rel/")
    assert files[0].url == "http://127.0.0.1:9/rel/" + PATH


def test_a_cached_index_is_revalidated_and_replaced_when_the_server_changed_it(server, tmp_path, monkeypatch):
    monkeypatch.setenv("CLIRMATRIX_HOME", str(tmp_path / "home"))
    srv = server()
    srv.files["downloads.json.gz"] = gzip.compress(orjson.dumps({"clirmatrix_docs": {}}))
    first = load_index(None, srv.url)
    again = load_index(None, srv.url)
    assert first.contexts == again.contexts == {"clirmatrix_docs": {}} and again.cached and again.note is None
    assert srv.conditional == [None, '"' + hashlib.md5(srv.files["downloads.json.gz"]).hexdigest() + '"']  # asked with the cached ETag
    srv.files["downloads.json.gz"] = gzip.compress(orjson.dumps({"clirmatrix_docs": {"docs/de": {}}}))
    changed = load_index(None, srv.url)
    assert changed.contexts == {"clirmatrix_docs": {"docs/de": {}}} and not changed.cached and "changed since it was cached" in changed.note
    srv.httpd.shutdown()
    srv.httpd.server_close()
    offline = load_index(None, srv.url)  # the server gone: the cached copy, said to be so
    assert offline.contexts == changed.contexts and "could not reach" in offline.note


def test_an_index_that_is_not_there_or_not_an_index_is_an_error_naming_it(server, tmp_path, monkeypatch):
    monkeypatch.setenv("CLIRMATRIX_HOME", str(tmp_path / "home"))
    srv = server()
    srv.files["downloads.json.gz"] = HTML
    with pytest.raises(DownloadError, match="HTML page"):
        load_index(srv.url + "downloads.json.gz", srv.url)
    with pytest.raises(DownloadError, match="404.*--no-index"):
        load_index(srv.url + "missing.json.gz", srv.url)
    with pytest.raises(DownloadError, match="no index at .*elsewhere.*--no-index"):
        load_index(None, srv.url + "elsewhere/")


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
    from clirmatrix.pipeline.tools.loader import QuerySplit, documents

    build = tmp_path / "build"
    (build / PATH).parent.mkdir(parents=True)
    (build / PATH).write_bytes(BODY)
    (build / "DOCS").mkdir()
    (build / "DOCS" / "de.tsv.gz").write_bytes(gzip.compress(b"9\tGermany is a country\n\n0\tBerlin\n", mtime=0))
    docs = (build / "DOCS" / "de.tsv.gz").read_bytes()
    index = {
        "clirmatrix_bi139_base": {"queries/en_de/dev": {"url": PATH, "expected_md5": MD5, "cache_path": PATH, "size": len(BODY)}},
        "clirmatrix_docs": {"docs/de": {"url": "DOCS/de.tsv.gz", "expected_md5": hashlib.md5(docs).hexdigest(), "size": len(docs)}},
    }
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
    assert main(["download", "multi8", "--src", "en", "--tgt", "de", "--split", "dev", "--to", str(tmp_path / "got"), "--base-url", str(build)]) == 2
    assert "the index lists no multi8 files" in capsys.readouterr().err  # refused before any request: nothing guessed


def test_loader_says_how_to_get_a_missing_split(tmp_path):
    from clirmatrix.pipeline.tools.loader import QuerySplit

    with pytest.raises(FileNotFoundError, match="clirmatrix download bi139-full --src en --tgt de --split test1"):
        QuerySplit(tmp_path, "bi139-full", "en", "de", "test1")


# -- the command, against a server laid out like a release --------------------------------------
OTHER = "BI-139/base/en/en.fr.dev.base.jl.gz"
OLD_BODY = gzip.compress(b"".join(orjson.dumps({"src_id": str(i), "src_query": f"old{i}", "tgt_results": [[str(i), 6]]}) + b"\n" for i in range(500)), mtime=0)


def _entry(path: str, body: bytes, url: str | None = None) -> dict:
    return {"url": url or path, "expected_md5": hashlib.md5(body).hexdigest(), "cache_path": path, "size": len(body)}


def _serve_index(srv: Server, files: dict[str, bytes], urls: dict[str, str] | None = None) -> None:
    """Serve ``files`` and an index of them (keys from their paths), as a build's release folder is served."""
    from clirmatrix.pipeline.output.layout import index_key, parse_path

    contexts: dict[str, dict] = {}
    for path, body in files.items():
        released = parse_path(path)
        context, key = index_key(released.dataset, released.src, released.tgt, released.split)
        contexts.setdefault(context, {})[key] = _entry(path, body, (urls or {}).get(path))
        srv.files[path] = body
    srv.files["downloads.json.gz"] = gzip.compress(orjson.dumps(contexts), mtime=0)


def _file_requests(srv: Server) -> list[str]:
    return [path for path, _ in srv.requests if path != "downloads.json.gz"]


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("CLIRMATRIX_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def test_without_an_index_the_command_refuses_unless_no_index_then_reads_every_file_whole(server, tmp_path, home, capsys):
    srv = server()
    srv.files[OTHER] = BODY[:10_000]  # cut, as a server that died mid-file leaves it
    to = tmp_path / "got"
    args = ["download", "bi139-base", "--src", "en", "--tgt", "de,fr", "--split", "dev", "--to", str(to), "--base-url", srv.url]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "no index at" in err and "--no-index" in err and _file_requests(srv) == [] and not to.exists()

    assert main([*args, "--no-index"]) == 1  # the cut file is never reported fetched
    err = capsys.readouterr().err
    assert f"{to / OTHER}:" in err.replace("\n", "") and "damaged gzip stream" in err and ".part" not in err  # the file, not its temporary part
    assert _leftovers(to) == [PATH] and (to / PATH).read_bytes() == BODY and not (to / "downloads.json.gz").exists(), err

    (to / OTHER).write_bytes(BODY[:10_000])  # a damaged file left in place is not "already there"
    srv.files[OTHER] = BODY
    assert main([*args, "--no-index"]) == 0
    assert (to / OTHER).read_bytes() == BODY
    assert "read whole, well-formed" in capsys.readouterr().err


def test_a_release_rebuilt_at_the_same_url_is_fetched_fresh_and_never_from_an_old_build_on_disk(server, tmp_path, home, capsys):
    old = tmp_path / "old-build"  # the first build, still on this machine: its index names its files by file:// URLs
    (old / PATH).parent.mkdir(parents=True)
    (old / PATH).write_bytes(OLD_BODY)
    srv = server()
    _serve_index(srv, {PATH: OLD_BODY}, {PATH: (old / PATH).as_uri()})
    args = ["download", "bi139-base", "--src", "en", "--tgt", "de", "--split", "dev", "--base-url", srv.url]
    assert main([*args, "--to", str(tmp_path / "first")]) == 0
    assert (tmp_path / "first" / PATH).read_bytes() == OLD_BODY

    _serve_index(srv, {PATH: BODY}, {PATH: (old / PATH).as_uri()})  # rebuilt; the old files stay on disk
    capsys.readouterr()
    assert main([*args, "--to", str(tmp_path / "second")]) == 0
    err = capsys.readouterr().err
    assert (tmp_path / "second" / PATH).read_bytes() == BODY and "changed since it was cached" in err
    assert _file_requests(srv) == [PATH, PATH]  # both from the server the user named


def test_files_that_do_not_match_a_cached_index_fetch_it_again_and_are_retried(server, tmp_path, home, capsys):
    srv = server()
    _serve_index(srv, {PATH: OLD_BODY})
    args = ["download", "bi139-base", "--src", "en", "--tgt", "de", "--split", "dev", "--base-url", srv.url]
    assert main([*args, "--to", str(tmp_path / "first")]) == 0
    srv.stale_304 = True  # the server says "not modified" although it was rebuilt (a validator that did not change)
    _serve_index(srv, {PATH: BODY})
    capsys.readouterr()
    assert main([*args, "--to", str(tmp_path / "second")]) == 0
    assert (tmp_path / "second" / PATH).read_bytes() == BODY
    assert "did not match the cached index" in capsys.readouterr().err


def test_unknown_languages_are_refused_with_suggestions_before_any_file_request(server, tmp_path, home, capsys):
    srv = server()
    _serve_index(srv, {PATH: BODY})
    to = tmp_path / "got"
    assert main(["download", "bi139-base", "--src", "en", "--tgt", "DE,xx", "--split", "dev", "--to", str(to), "--base-url", srv.url]) == 2
    err = capsys.readouterr().err
    assert "--tgt" in err and "DE (did you mean de" in err and "xx" in err and err.rstrip().endswith("(bi139-base languages in the index: de)"), err
    assert _file_requests(srv) == [] and not to.exists()


def test_the_index_is_saved_with_the_download_so_validate_checks_its_md5s(server, tmp_path, home):
    from clirmatrix.pipeline.tools.validate import CHECKSUM, validate

    srv = server()
    docs = gzip.compress(b"9\tGermany\n0\tBerlin\n", mtime=0)
    _serve_index(srv, {PATH: BODY, "DOCS/de.tsv.gz": docs})
    to = tmp_path / "got"
    assert main(["download", "bi139-base", "--src", "en", "--tgt", "de", "--split", "dev", "--to", str(to), "--base-url", srv.url]) == 0
    assert (to / "downloads.json.gz").read_bytes() == srv.files["downloads.json.gz"]
    assert not [f for f in validate(str(to)).failures if f.rule == CHECKSUM]
    damaged = bytearray((to / PATH).read_bytes())
    damaged[len(damaged) // 2] ^= 1  # same size, one bit off
    (to / PATH).write_bytes(bytes(damaged))
    assert [f.path for f in validate(str(to)).failures if f.rule == CHECKSUM] == [PATH]


def test_a_file_the_server_lacks_fails_and_leaves_no_empty_folder(server, tmp_path, home, capsys):
    srv = server()
    _serve_index(srv, {PATH: BODY, "DOCS/de.tsv.gz": b"x"})
    del srv.files["DOCS/de.tsv.gz"]
    to = tmp_path / "got"
    assert main(["download", "docs", "--tgt", "de", "--to", str(to), "--base-url", srv.url]) == 1
    assert "HTTP 404" in capsys.readouterr().err and not (to / "DOCS").exists()


def test_ctrl_c_stops_the_download_command_at_once_and_a_rerun_resumes_with_range(server, tmp_path):
    """The real command in its own process against a throttled release server; one SIGINT once bytes have arrived."""
    srv = server()
    paths = [f"BI-139/base/en/en.{tgt}.dev.base.jl.gz" for tgt in ("de", "fr", "es")]
    _serve_index(srv, {path: BODY for path in paths})
    srv.rate = 5_000  # about 5 s a file
    to = tmp_path / "got"
    command = [sys.executable, "-m", "clirmatrix.cli", "download", "bi139-base", "--src", "en", "--tgt", "de,fr,es", "--split", "dev",
               "--to", str(to), "--base-url", srv.url]
    env = {**os.environ, "CLIRMATRIX_HOME": str(tmp_path / "home"), "COLUMNS": "200"}

    def parts() -> dict[str, int]:
        return {str(p.relative_to(to)): p.stat().st_size for p in to.rglob(".*.part")} if to.is_dir() else {}

    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, preexec_fn=sigint_as_in_a_terminal)
    deadline = time.monotonic() + 20
    while not (len(parts()) == 3 and all(parts().values())):
        assert process.poll() is None and time.monotonic() < deadline, process.communicate()
        time.sleep(0.05)
    sent = time.monotonic()
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=10)
    text = (out + err).decode()
    assert process.returncode == 130 and time.monotonic() - sent < 2.0 and "Traceback" not in text, text
    said = [line for line in text.splitlines() if line.startswith(("interrupted", "aborted"))]  # one line: what was kept, how to resume
    assert said == [f"interrupted: kept 3 partial files (.part) in {to}; run the same command again to resume"], text
    kept = parts()
    assert len(kept) == 3 and all(0 < size < len(BODY) for size in kept.values()) and not (to / PATH).exists()
    srv.rate = None
    asked = len(srv.requests)
    again = subprocess.run(command, capture_output=True, env=env, timeout=60)
    assert again.returncode == 0, again.stderr.decode()
    for path in paths:
        ranges = [r for p, r in srv.requests[asked:] if p == path]
        assert ranges == [f"bytes={kept[str(Path(path).parent / ('.' + Path(path).name + '.part'))]}-"], (path, ranges)
        assert (to / path).read_bytes() == BODY
    assert not parts()


# -- many transfers into one folder, one of them failing ------------------------------------------
SMALL = [gzip.compress(b"%d\tdocument %d\n" % (i, i) * 40, mtime=0) for i in range(12)]


@pytest.mark.parametrize("bad", ["wrong md5", "cut body"])
def test_a_failing_file_never_takes_a_good_one_in_its_folder_with_it(server, tmp_path, bad):
    """12 small files in one new folder, all at once, one failing at once: its part is removed and the folder pruned
    while the others, which may have made that folder, wait for their answers (10 ms) to open their parts in it. 30
    rounds: every good file is there and verified, the bad one reported, nothing left of it. (The folder made before the
    request and pruned without the lock, as before, lost a good file in 3 rounds of 4 here.)"""
    srv = server()
    paths = [f"DOCS/part{i:02d}.tsv.gz" for i in range(len(SMALL))]
    for path, body in zip(paths, SMALL, strict=True):
        srv.files[path] = body
        srv.late[path] = 0.01 if path != paths[0] else 0
    if bad == "cut body":
        srv.files[paths[0]] = SMALL[0][: len(SMALL[0]) // 2]  # an honest, shorter Content-Length: too few bytes for the index's size
    files = [Wanted(path, srv.url + path, hashlib.md5(body).hexdigest(), len(body)) for path, body in zip(paths, SMALL, strict=True)]
    if bad == "wrong md5":
        files[0] = Wanted(paths[0], files[0].url, "0" * 32, len(SMALL[0]))
    began = time.monotonic()
    for round_ in range(30):
        to = tmp_path / f"round{round_}"
        report = download(files, to, jobs=len(files), sleep=lambda s: None, retries=0)
        assert [path for path, _ in report.failed] == [paths[0]] and sorted(report.fetched) == paths[1:], (round_, report.failed)
        assert _leftovers(to) == paths[1:], round_  # no .part, nothing under the bad file's name
        assert all((to / path).read_bytes() == body for path, body in zip(paths[1:], SMALL[1:], strict=True))
    assert time.monotonic() - began < 10


def test_dumps_fetch_of_many_files_one_failing_keeps_every_good_one(tmp_path):
    """The same through ``dumps fetch`` (flat in its folder, which is never pruned), its stamps included."""
    from support.dumps_site import DumpsSite

    from clirmatrix.pipeline.tools.dumps_fetch import fetch_dumps, stamp_path
    from clirmatrix.pipeline.tools.dumps_site import OfferedFile

    site = DumpsSite(tmp_path / "site")
    try:
        offered = []
        for i, body in enumerate(SMALL):
            path = f"w{i}wiki/20261101/w{i}wiki-20261101-page_props.sql.gz"
            (site.root / path).parent.mkdir(parents=True, exist_ok=True)
            (site.root / path).write_bytes(body)
            offered.append(OfferedFile(Path(path).name, site.url + path, "page_props", f"w{i}", "20261101", len(body), "0" * 32 if i == 0 else hashlib.md5(body).hexdigest()))
        for round_ in range(10):
            to = tmp_path / f"round{round_}"
            report = fetch_dumps(offered, to, connections=6, sleep=lambda s: None, retries=0)
            assert [name for name, _ in report.failed] == [offered[0].name] and sorted(report.fetched) == sorted(item.name for item in offered[1:])
            assert sorted(p.name for p in to.iterdir()) == sorted([item.name for item in offered[1:]] + [stamp_path(to / item.name).name for item in offered[1:]])
    finally:
        site.stop()
