"""``validate`` of a tree on an object store: the findings of a local validate of the same files, its units run on Beam.

A ``moto_server`` started here on 127.0.0.1 is the store; the trees are the small hand-made
releases of test_validate_stats.py (43 files), uploaded as they are on disk.
"""

from __future__ import annotations

import gzip
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_validate_stats import BASE, release, write

from clirmatrix.pipeline.errors import MissingInputError
from clirmatrix.pipeline.output.layout import IN_PROGRESS, IncompleteBuildError, docs_file
from clirmatrix.pipeline.tools import validate as v

BUCKET = "clirmatrix-validate"


@pytest.fixture(scope="module")
def store():
    """(boto3 client, Beam's flags for the store) of a ``moto_server`` this module starts and stops."""
    pytest.importorskip("boto3", reason="needs apache-beam[aws]")
    program = shutil.which("moto_server", path=str(Path(sys.executable).parent)) or shutil.which("moto_server")
    if program is None:
        pytest.skip("moto_server (moto[server]) is not installed")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen([program, "-H", "127.0.0.1", "-p", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    import boto3

    settings = {"endpoint_url": f"http://127.0.0.1:{port}", "aws_access_key_id": "testing", "aws_secret_access_key": "testing", "region_name": "us-east-1"}
    client = boto3.client("s3", **settings)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                client.create_bucket(Bucket=BUCKET)
                break
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        flags = [f"--s3_endpoint_url={settings['endpoint_url']}", "--s3_access_key_id=testing", "--s3_secret_access_key=testing", "--s3_region_name=us-east-1"]
        from clirmatrix.beam_jobs.common import use_filesystem_options

        use_filesystem_options(flags)  # the driver's own reads (the library's validate, release_sizes)
        yield client, flags
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=20)


def upload(client, folder: Path, prefix: str) -> str:
    """Every file below ``folder`` as an object below ``prefix``; the tree's URL."""
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        client.put_object(Bucket=BUCKET, Key=f"{prefix}/{path.relative_to(folder).as_posix()}", Body=path.read_bytes())
    return f"s3://{BUCKET}/{prefix}"


def keys(client, prefix: str) -> list[str]:
    return [item["Key"] for page in client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix) for item in page.get("Contents", [])]


def findings(report: v.ValidationReport) -> dict:
    """All a report says but where the tree is."""
    return {"build": report.build, "failures": [str(f) for f in report.failures], "warnings": [str(f) for f in report.warnings],
            "files": report.files, "queries": report.queries, "docs": report.docs}


def damaged(root: Path) -> Path:
    """A build with one query file's bytes changed (a label out of range: the index's md5 and size no longer hold) and DOCS/fr removed."""
    with gzip.open(root / BASE, "rb") as handle:
        text = handle.read()
    with gzip.GzipFile(root / BASE, "wb", mtime=0) as handle:
        handle.write(text.replace(b', 6]', b', 7]', 1))
    (root / docs_file("docs", "fr")).unlink()
    return root


def test_a_build_on_the_store_gets_the_local_findings_with_its_units_on_beam(store, tmp_path):
    """No --runner, one worker: the units run in this process, their scratch a local folder; each file told to the progress once."""
    from clirmatrix.beam_jobs.validate import run_validate

    client, flags = store
    tree = write(tmp_path / "tree", release())
    local = v.validate(str(tree))
    assert local.ok and local.files == 43
    seen: list[str] = []
    remote = run_validate(upload(client, tree, "valid"), None, flags, on_file=seen.append, workers=1)
    assert findings(remote) == findings(local)
    assert sorted(seen) == sorted(v.release_sizes(str(tree)))


@pytest.mark.slow
def test_a_damaged_build_on_the_store_gets_the_local_findings_from_worker_processes(store, tmp_path):
    """Two worker processes (which get the store's flags from the job), the scratch under --work on the store, gone after."""
    from clirmatrix.beam_jobs.validate import run_validate

    client, flags = store
    tree = damaged(write(tmp_path / "tree", release()))
    local = v.validate(str(tree))
    assert {f.rule for f in local.failures} >= {v.CHECKSUM, v.SIZE, v.LABEL_RANGE, v.MISSING_FILE}, [str(f) for f in local.failures]
    remote = run_validate(upload(client, tree, "damaged"), f"s3://{BUCKET}/tmp", flags, workers=2)
    assert findings(remote) == findings(local)
    assert keys(client, "tmp/") == []


def test_the_driver_reads_a_remote_tree_as_a_folder_and_refuses_what_it_refuses(store, tmp_path):
    """The library's validate of a URL (units in this process), and the one-line errors of a folder that is missing, holds no release, or a build unfinished."""
    client, _ = store
    tree = write(tmp_path / "tree", release(), build=False)
    url = upload(client, tree, "download")
    assert findings(v.validate(url)) == findings(v.validate(str(tree)))
    assert v.release_sizes(url) == v.release_sizes(str(tree)) and v.built_sizes(url) == v.built_sizes(str(tree))
    with pytest.raises(MissingInputError, match=f"^s3://{BUCKET}/nothing is not a folder$"):
        v.validate(f"s3://{BUCKET}/nothing")
    client.put_object(Bucket=BUCKET, Key="other/notes.txt", Body=b"x")
    with pytest.raises(v.NotAReleaseError, match=f"^s3://{BUCKET}/other is not a clirmatrix build or download: it holds none of BI-139/"):
        v.validate(f"s3://{BUCKET}/other")
    client.put_object(Bucket=BUCKET, Key=f"download/{IN_PROGRESS}", Body=b"{}")
    with pytest.raises(IncompleteBuildError, match=f"^incomplete build: rerun clirmatrix build \\(s3://{BUCKET}/download/{IN_PROGRESS} says"):
        v.validate(url)


def test_the_command_takes_a_url_and_hands_beams_flags_on(store, tmp_path, capsys):
    from clirmatrix.cli import main

    client, flags = store
    url = upload(client, damaged(write(tmp_path / "tree", release())), "cli")
    assert main(["validate", url, "--workers", "1", *flags]) == 1
    printed = capsys.readouterr().err
    assert f"[{v.CHECKSUM}]" in printed and f"[{v.MISSING_FILE}]" in printed and "read 42 files" in printed
    assert main(["validate", url, "--runner", "direct", *flags]) == 2
    assert "--work is required with --runner" in capsys.readouterr().err
    assert main(["validate", str(tmp_path / "tree"), *flags]) == 2
    assert "Beam's flags" in capsys.readouterr().err
