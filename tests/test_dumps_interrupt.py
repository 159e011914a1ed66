"""Ctrl-C during ``clirmatrix dumps fetch``: the real command in its own process, a throttled mirror on 127.0.0.1, a real SIGINT."""

from __future__ import annotations

import hashlib
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import sigint_as_in_a_terminal
from support.dumps_site import DumpsSite

from clirmatrix.pipeline.tools.dumps_fetch import stamp_path
from clirmatrix.pipeline.tools.dumps_site import DumpListing, OfferedFile

RUN = "20261101"
SIZE = 200_000  # bytes a file: 5 s each at the throttle, so every transfer is in flight when the signal comes


@pytest.fixture
def mirror(tmp_path):
    """A mirror of 6 Enterprise HTML dumps, throttled to 40 kB/s a connection, and a listing of them."""
    site = DumpsSite(tmp_path / "site")
    files = []
    for number in range(6):
        body = random.Random(number).randbytes(SIZE)
        path = f"other/enterprise_html/runs/{RUN}/w{number}wiki-NS0-{RUN}-ENTERPRISE-HTML.json.tar.gz"
        (site.root / path).parent.mkdir(parents=True, exist_ok=True)
        (site.root / path).write_bytes(body)
        files.append(OfferedFile(Path(path).name, site.url + path, "html", "en", RUN, SIZE, hashlib.md5(body).hexdigest()))
    site.throttle = 40_000
    listing = tmp_path / "listing.json"
    listing.write_bytes(DumpListing(site.url, "latest", files, files).to_json())
    yield site, listing, files
    site.stop()


def _fetch(listing: Path, to: Path) -> subprocess.Popen:
    command = [sys.executable, "-m", "clirmatrix.cli", "dumps", "fetch", "--listing", str(listing), "--to", str(to), "--connections", "3"]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, "COLUMNS": "200"}, preexec_fn=sigint_as_in_a_terminal)


def _parts(to: Path) -> dict[str, int]:
    return {part.name: part.stat().st_size for part in to.glob(".*.part")} if to.is_dir() else {}


@pytest.mark.parametrize("signals", [1, 3], ids=["once", "three-times"])
def test_ctrl_c_stops_fetch_at_once_keeps_the_parts_and_a_rerun_resumes_them(mirror, tmp_path, signals):
    site, listing, files = mirror
    to = tmp_path / "dumps"
    process = _fetch(listing, to)
    deadline = time.monotonic() + 20
    while not (len(_parts(to)) == 3 and all(_parts(to).values())):  # three transfers under way, bytes on disk
        assert process.poll() is None and time.monotonic() < deadline, process.communicate()
        time.sleep(0.05)
    sent = time.monotonic()
    for _ in range(signals):
        process.send_signal(signal.SIGINT)
        time.sleep(0.05)
    out, err = process.communicate(timeout=10)
    took = time.monotonic() - sent
    text = (out + err).decode()
    assert process.returncode == 130 and took < 2.0, (process.returncode, took, text)
    assert "Traceback" not in text
    said = [line for line in text.splitlines() if line.startswith("interrupted")]
    if signals == 1:
        assert said == [f"interrupted: kept 3 partial files (.part) in {to}; run the same command again to resume"], text
    else:  # a second Ctrl-C may end the process before the line is whole: still one line, saying so
        assert len(said) == 1, text
    kept = _parts(to)
    assert len(kept) == 3 and all(0 < size < SIZE for size in kept.values())
    assert not [p for p in to.iterdir() if not p.name.startswith(".")]  # nothing under a final name
    if signals > 1:
        return
    site.throttle = None
    again = _fetch(listing, to)
    out, err = again.communicate(timeout=60)
    assert again.returncode == 0, (out + err).decode()
    for item in files:
        part = f".{item.name}.part"
        asked = site.file_requests(item.name)
        if part in kept:  # resumed from where the part ended, with Range
            assert asked[-1] == f"bytes={kept[part]}-", (item.name, asked)
        assert (to / item.name).read_bytes() == (site.root / item.url.removeprefix(site.url)).read_bytes()
        assert stamp_path(to / item.name).exists()
    assert not _parts(to)
