"""Damaged released files, as a consumer meets them: served to ``download``, or lying in a tree given to ``validate`` and ``irds``.

The dump side of ``fuzz_bench.py`` asks whether the build ever goes on over bad input;
this side asks the same of the commands a researcher runs on a release. A clean release
(a build, or part of one, with its ``downloads.json.gz``) is damaged one way at a time,
at a random place, in one random released file:

- **served** by a local HTTP server on 127.0.0.1 to ``clirmatrix download`` (with the
  index, and with ``--no-index``): the body ``cut`` short (an honest, shorter
  Content-Length), the connection ``drop``-ped mid-body once, 1-3 bits ``flip``-ped, an
  ``html`` error page or a short JSON ``error-body`` with status 200, one line
  ``garble``-d inside the gzip stream (a well-formed gzip of other bytes);
- **in a tree** given to ``validate`` and to ``irds`` (register, then read the damaged
  file's queries, qrels or documents through ir_datasets): ``cut``, ``flip``, a line
  deleted, duplicated or garbled (then gzip'd again), the file replaced by an ``html``
  page or removed, a ``stray-file`` added, the index cut or flipped.

Verdicts. download: **verified** (the file on disk is the clean one, or with
``--no-index`` holds the same records), **refused** (reported failed, naming the file;
nothing left under its name, no ``.part``), **unverifiable** (``--no-index`` only: a
well-formed change that only an md5 could show; the command says it had none),
**silent** (exit 0 over other bytes, a file lost, or leftovers), **crashed** (an error
that is not one of our one-line input errors). validate: **failed** (a failure names
the damaged file or the index), **warned** (a warning does: a file missing from a
download), **silent**, **crashed**. irds: **error** (one line naming the file),
**read** (the damage left well-formed records, which a reader cannot tell; ``validate``
checks md5s), **absent** (the file is gone, so is its id), **unread** (the index, a stray
file or DOCS-FULL: nothing ir_datasets reads), **crashed**.

Usage: python bench/fuzz_bench.py --consumer [--cases 600] [--seed 1] [--release DIR]
"""

from __future__ import annotations

import gzip
import hashlib
import random
import shutil
import socket
import threading
import traceback
from collections import Counter
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from clirmatrix.pipeline.errors import InputError
from clirmatrix.pipeline.output import layout
from clirmatrix.pipeline.output.jsonl import walk_release
from clirmatrix.pipeline.tools.download import prepare_download, run_download

SERVED = ("cut", "drop", "flip", "html", "error-body", "garble")
TREE = ("cut", "flip", "delete-line", "duplicate-line", "garble", "html", "remove-file", "stray-file", "index-cut", "index-flip")
HTML = b"<!DOCTYPE html><html><head><title>503 Service Unavailable</title></head><body>try later</body></html>"
ERROR_BODY = b'{"error": {"code": 503, "message": "backend fetch failed"}}' * 3
BAD = ("silent", "crashed")  # verdicts that must never occur


@dataclass(frozen=True)
class Case:
    side: str  # download, download --no-index, validate, irds
    damage: str
    path: str  # the damaged file, relative to the release
    verdict: str
    detail: str


# --- damage ------------------------------------------------------------------------------------


def flip_bits(data: bytes, rng: random.Random) -> tuple[bytes, list[int]]:
    damaged = bytearray(data)
    places = sorted(rng.randrange(len(data)) for _ in range(rng.randint(1, 3)))
    for place in places:
        damaged[place] ^= 1 << rng.randrange(8)
    return bytes(damaged), places


def change_line(data: bytes, how: str, rng: random.Random) -> bytes:
    """One line of a gzip'd file deleted, duplicated or garbled with printable noise, gzip'd again."""
    lines = gzip.decompress(data).split(b"\n")
    at = rng.randrange(max(1, len(lines) - 1))
    if how == "delete-line":
        del lines[at]
    elif how == "duplicate-line":
        lines.insert(at, lines[at])
    else:
        noise = bytes(rng.randrange(32, 127) for _ in range(rng.randint(1, 40)))
        start = rng.randrange(len(lines[at]) + 1)
        lines[at] = lines[at][:start] + noise + lines[at][start + len(noise) :]
    return gzip.compress(b"\n".join(lines), mtime=0)


def same_records(a: bytes, b: bytes) -> bool:
    try:
        return gzip.decompress(a) == gzip.decompress(b)
    except (OSError, EOFError):
        return False


# --- the served side ---------------------------------------------------------------------------


class DamagingServer:
    """Serves a release folder on 127.0.0.1, with Range support; ``damage[path]`` changes what one file's requests get."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.damage: dict[str, tuple[str, int]] = {}  # path -> (kind, seed)
        self.dropped: set[str] = set()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                path = self.path.lstrip("/")
                file = server.root / path
                if not file.is_file():
                    return self._send(404, b"not found")
                body = file.read_bytes()
                kind, seed = server.damage.get(path, ("", 0))
                rng = random.Random(seed)
                if kind == "html":
                    return self._send(200, HTML)
                if kind == "error-body":
                    return self._send(200, ERROR_BODY)
                if kind == "cut":
                    body = body[: rng.randrange(1, len(body))]
                elif kind == "flip":
                    body = flip_bits(body, rng)[0]
                elif kind == "garble":
                    body = change_line(body, "garble", rng)
                start = 0
                if self.headers.get("Range"):
                    start = int(self.headers["Range"].split("=")[1].split("-")[0])
                self.send_response(206 if start else 200)
                self.send_header("Content-Length", str(len(body) - start))
                if start:
                    self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
                self.end_headers()
                if kind == "drop" and path not in server.dropped:
                    server.dropped.add(path)
                    self.wfile.write(body[start : start + rng.randrange(1, len(body) - start)])
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
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def download_case(server: DamagingServer, path: str, damage: str, rng: random.Random, work: Path, no_index: bool) -> Case:
    """Fetch one file while the server damages it; judge what the downloader made of it."""
    released = layout.parse_path(path)
    server.damage = {path: (damage, rng.randrange(1 << 30))}
    server.dropped = set()
    to = work / f"got-{rng.randrange(1 << 30):08x}"
    side = "download --no-index" if no_index else "download"

    def case(verdict: str, detail: str) -> Case:
        return Case(side, damage, path, verdict, detail)

    try:
        planned = prepare_download(released.dataset, released.src, released.tgt or released.src, [released.split or "dev"], server.url, None, no_index)
        report = run_download(planned, to, jobs=1, sleep=lambda s: None, retries=2, timeout=10)
    except InputError as error:
        return case("refused", str(error))
    except Exception:  # noqa: BLE001 - anything else would be a traceback in the CLI
        return case("crashed", traceback.format_exc(limit=3))
    clean = (server.root / path).read_bytes()
    target = to / path
    leftovers = sorted(str(p.relative_to(to)) for p in to.rglob("*") if p.is_file() and p != target and p.name != layout.INDEX) if to.exists() else []
    failed = dict(report.failed)
    if leftovers:
        return case("silent", f"left behind: {leftovers}")
    if not target.exists():
        if path in failed:
            return case("refused", failed[path])
        return case("silent", "no file and no failure reported")
    got = target.read_bytes()
    if path in failed:
        return case("silent", "reported failed, yet a file is there under its name")
    if got == clean or (no_index and same_records(got, clean)):
        return case("verified", "the clean file" if got == clean else "the same records (a gzip header bit)")
    if no_index and path in report.checked:
        return case("unverifiable", "well-formed records that differ from the clean file; no md5 to tell")
    return case("silent", f"exit 0 over {len(got):,} bytes that are not the clean file's {len(clean):,}")


# --- the tree side -----------------------------------------------------------------------------


def damage_tree(tree: Path, path: str, damage: str, rng: random.Random) -> str:
    """Damage one file (or the index) of ``tree`` in place; returns the path the damage is on."""
    if damage.startswith("index-"):
        path = layout.INDEX
    file = tree / path
    data = file.read_bytes() if file.is_file() else b""
    if damage in ("cut", "index-cut"):
        file.write_bytes(data[: rng.randrange(1, len(data))])
    elif damage in ("flip", "index-flip"):
        file.write_bytes(flip_bits(data, rng)[0])
    elif damage in ("delete-line", "duplicate-line", "garble"):
        file.write_bytes(change_line(data, damage, rng))
    elif damage == "html":
        file.write_bytes(HTML)
    elif damage == "remove-file":
        file.unlink()
    elif damage == "stray-file":
        path = str(Path(path).parent / "notes.txt")
        (tree / path).write_text("notes of the person who downloaded this\n")
    return path


def validate_case(tree: Path, damaged: str, damage: str) -> Case:
    from clirmatrix.pipeline.tools.validate import MISSING_FILE, validate

    def case(verdict: str, detail: str) -> Case:
        return Case("validate", damage, damaged, verdict, detail)

    try:
        report = validate(str(tree))
    except InputError as error:
        return case("failed", str(error))
    except Exception:  # noqa: BLE001
        return case("crashed", traceback.format_exc(limit=3))
    naming = [f for f in report.failures if f.path == damaged]
    if naming:
        return case("failed", str(naming[0]))
    warned = [f for f in report.warnings if f.path == damaged or (damage == "remove-file" and f.rule == MISSING_FILE)]
    if warned:
        return case("warned", str(warned[0]))
    return case("silent", f"ok={report.ok}, nothing names {damaged}")


def irds_case(tree: Path, damaged: str, damage: str, prefix: str) -> Case:
    """Register the tree with ir_datasets and read what the damaged file feeds."""
    import ir_datasets

    from clirmatrix.pipeline.tools import irds

    def case(verdict: str, detail: str) -> Case:
        return Case("irds", damage, damaged, verdict, detail)

    released = layout.parse_path(damaged)
    try:
        ids = irds.register(tree, prefix)
        if released is None or released.dataset == "docs-full":  # the index, a stray file, DOCS-FULL: nothing ir_datasets reads
            return case("unread", f"{len(ids)} ids registered; ir_datasets does not read {damaged}")
        if released.dataset in layout.DOC_SETS:
            wanted = f"{prefix}/{released.src}"
        else:
            wanted = f"{prefix}/{released.tgt}/{released.dataset}/{released.src}/{released.split}"
        if wanted not in ids:
            return case("absent" if damage == "remove-file" else "silent", f"{wanted} not registered")
        dataset = ir_datasets.load(wanted)
        if released.dataset in layout.DOC_SETS:
            read = sum(1 for _ in dataset.docs_iter())
        else:
            read = sum(1 for _ in dataset.queries_iter()) + sum(1 for _ in dataset.qrels_iter())
    except InputError as error:
        named = str(tree / damaged) in str(error) or damaged in str(error)
        return case("error" if named else "crashed", str(error) if named else f"does not name the file: {error}")
    except Exception:  # noqa: BLE001
        return case("crashed", traceback.format_exc(limit=3))
    return case("read", f"{read:,} records and judgements read")


# --- running -----------------------------------------------------------------------------------


def released_files(root: Path) -> list[str]:
    return [path for path, item in walk_release(root) if item is not None]


def run_consumer_cases(release: Path, cases: int, seed: int, work: Path) -> list[Case]:
    """``cases`` damaged files served to download (half with the index, half without) and as many damaged trees."""
    rng = random.Random(seed)
    work.mkdir(parents=True, exist_ok=True)
    files = released_files(release)
    outcomes: list[Case] = []
    server = DamagingServer(release)
    try:
        served = [(damage, no_index) for damage in SERVED for no_index in (False, True)]
        for i in range(cases):
            damage, no_index = served[i % len(served)]
            outcomes.append(download_case(server, rng.choice(files), damage, rng, work / "downloads", no_index))
    finally:
        server.close()
    for i in range(cases):
        damage = TREE[i % len(TREE)]
        tree = work / "trees" / f"{i}"
        shutil.copytree(release, tree)
        damaged = damage_tree(tree, rng.choice(files), damage, rng)
        outcomes.append(validate_case(tree, damaged, damage))
        outcomes.append(irds_case(tree, damaged, damage, f"fuzz-{seed}-{i}-{hashlib.md5(str(tree).encode()).hexdigest()[:6]}"))
        shutil.rmtree(tree)
    return outcomes


def print_tally(outcomes: list[Case]) -> None:
    by_kind: dict[tuple[str, str], Counter] = {}
    for outcome in outcomes:
        by_kind.setdefault((outcome.side, outcome.damage), Counter())[outcome.verdict] += 1
    print(f"{'side':<20} {'damage':<15} {'tried':>6}  outcomes")
    for (side, damage), counts in sorted(by_kind.items()):
        print(f"{side:<20} {damage:<15} {sum(counts.values()):>6}  " + ", ".join(f"{verdict} {count}" for verdict, count in sorted(counts.items())))
    total = Counter(outcome.verdict for outcome in outcomes)
    print(f"{'all':<36} {len(outcomes):>6}  " + ", ".join(f"{verdict} {count}" for verdict, count in sorted(total.items())))
    for outcome in outcomes:
        if outcome.verdict in BAD:
            print(f"{outcome.verdict}: {outcome.side} {outcome.damage} {outcome.path}: {outcome.detail}")
