"""``OUT/report.html``: every build writes it, ``clirmatrix report`` rewrites it, and it needs no network."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest
from conftest import EVAL, TRAIN

from clirmatrix.cli import main
from clirmatrix.pipeline.method.languages import MULTI8_LANGUAGES
from clirmatrix.pipeline.output import layout
from clirmatrix.pipeline.output.jsonl import iter_queries
from clirmatrix.pipeline.output.layout import REPORT


def test_a_build_writes_a_self_contained_report_of_what_it_holds(built):
    out, result, world = built
    page = (out / REPORT).read_text(encoding="utf-8")
    assert page.startswith("<!doctype html>") and "<script" not in page
    assert not re.search(r"""(?:src|href)\s*=\s*["']?(?:https?:)?//""", page)  # nothing fetched from anywhere
    for lang in MULTI8_LANGUAGES:
        assert f"<td class=l>{lang}</td>" in page
    pngs = sorted((out / layout.STATS_DIR).glob("*.png"))
    assert pngs and page.count("src='data:image/png;base64,") == len(pngs)  # every heat map inlined
    for dataset in layout.QUERY_SETS:
        assert f"<h3>{dataset}</h3>" in page  # label distributions of each set
    # The sample queries are real test1 queries of the build, shown with their labelled documents' titles.
    samples = re.findall(r"<div class=query><b>(.*?)</b> <span class=muted>\((\d+)\)</span>", page)
    assert samples
    titles = {record.src_id: record.src_query for path in out.glob("BI-139/base/*/*.test1.base.jl.gz") for record in iter_queries(path)}
    assert all(titles[src_id] == title for title, src_id in samples)
    entity_titles = {title for entity in world.entities for title in entity.titles.values()}
    shown = re.findall(r"<div class=doc><span class=label>\d</span> <b>(.*?)</b>", page)
    assert shown and all(title in entity_titles for title in shown)
    assert "bad, by kind" in page and "missing_field 1" in page  # the sample's deliberate bad records


def test_the_report_command_rewrites_it_for_a_download_too(built, tmp_path, capsys):
    out, _, _ = built
    download = tmp_path / "download"
    shutil.copytree(out / "MULTI-8", download / "MULTI-8")
    shutil.copytree(out / "DOCS", download / "DOCS")
    assert main(["report", str(download)]) == 0
    page = (download / REPORT).read_text(encoding="utf-8")
    assert "CLIRMatrix download" in page and "<h3>multi8</h3>" in page and "no inputs or settings" in page
    assert main(["validate", str(download), "--train-size", str(TRAIN), "--eval-size", str(EVAL)]) == 0  # the report is no stray file
    (download / layout.IN_PROGRESS).write_text("{}")
    assert main(["report", str(download)]) == 2 and "incomplete build" in capsys.readouterr().err


def test_the_report_command_refuses_a_folder_that_holds_no_release(tmp_path, capsys):
    """As validate and irds do: one line naming the folder, exit 2, and no page written about nothing."""
    assert main(["report", str(tmp_path)]) == 2
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"error: {tmp_path} is not a clirmatrix build or download"), lines
    assert not (tmp_path / REPORT).exists()


def test_a_headless_browser_renders_the_report(built, tmp_path):
    browser = next((shutil.which(name) for name in ("chromium", "chromium-browser", "google-chrome") if shutil.which(name)), None)
    if browser is None:
        pytest.skip("no headless browser (apt install chromium) to render the report with")
    out, _, _ = built
    shot = tmp_path / "report.png"
    subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", f"--screenshot={shot}", "--window-size=1200,3000", (out / REPORT).resolve().as_uri()],
        check=True, capture_output=True, timeout=120,
    )
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000  # a page with tables and heat maps, not a blank one
