"""The sample build's released files, byte for byte, against digests pinned before the write, carry and search stages were rewritten for speed (issue 36).

Faster code must not change one byte of the release: the digests in
``tests/fixtures/release_md5/world8.json`` were taken from the build of the
8-language sample at commit 91f059b, and taken again when the sample itself changed
(its Latin-script languages given shared names and cognates, issue 35) with the
method as it was. When the gzip encoder changed from isal to zlib-ng (issue 54), every
file's text was first checked unchanged (each file of the new build, decompressed and
compressed again the old way, gave its old pinned md5: 688 of 688), then the digests
were taken again. A change that is meant to alter the release (a fix to the method,
or to the sample) regenerates them on purpose::

    CLIRMATRIX_PIN_RELEASE=write pytest tests/test_release_pinned.py
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
from pathlib import Path

from clirmatrix.pipeline.output import layout
from clirmatrix.pipeline.output.gzip_encoder import ENCODER, gzip_bytes

PINNED = Path(__file__).parent / "fixtures" / "release_md5" / "world8.json"


def _digests(out: Path) -> dict[str, str]:
    """md5 of every file whose path the release layout names (the index and manifest name where a build is, so they are left out)."""
    paths = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file() and ".work" not in p.parts)
    return {path: hashlib.md5((out / path).read_bytes()).hexdigest() for path in paths if layout.parse_path(path)}


def test_the_sample_release_is_byte_identical_to_the_pinned_digests(built):
    out, _, _ = built
    digests = _digests(out)
    if os.environ.get("CLIRMATRIX_PIN_RELEASE") == "write":
        PINNED.write_text(json.dumps(digests, indent=0, sort_keys=True) + "\n")
    pinned = json.loads(PINNED.read_text())
    changed = sorted(path for path in pinned if digests.get(path) != pinned[path])
    assert set(digests) == set(pinned)
    assert not changed, f"{len(changed)} of {len(pinned)} released files changed, e.g. {changed[:3]}"


def test_every_gz_file_of_a_build_is_what_the_recorded_encoder_makes_of_its_text(built):
    """The release's bytes are a function of its text: each .gz file (the index too) is ``gzip_bytes`` of what it holds, and the manifest names that encoder."""
    out, _, _ = built
    assert json.loads((out / layout.MANIFEST).read_text())["gzip"] == ENCODER == {**ENCODER, "encoder": "zlib-ng", "level": 2}
    files = sorted(p for p in out.rglob("*.gz") if ".work" not in p.parts)
    assert len(files) > 600 and out / layout.INDEX in files
    differ = [str(p.relative_to(out)) for p in files if gzip_bytes(gzip.decompress(p.read_bytes())) != p.read_bytes()]
    assert not differ, f"{len(differ)} of {len(files)} files are not the encoder's bytes of their text, e.g. {differ[:3]}"
