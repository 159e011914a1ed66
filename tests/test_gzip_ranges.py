"""gzip_index and gzip_ranges: one indexing pass over a .tar.gz, then units that each read their own lines.

The archive is made here with ``tarfile`` (three NDJSON members of a few MB, lines from
empty to longer than the checkpoint spacing); the truth is ``tarfile`` reading it whole.
"""

from __future__ import annotations

import base64
import gzip
import io
import random
import tarfile
import zlib

import pytest

from clirmatrix.pipeline.errors import InputError
from clirmatrix.pipeline.io import gzip_decoder, gzip_index, gzip_ranges, inflate
from clirmatrix.pipeline.io.badinput import CORRUPT_STREAM, TRUNCATED_STREAM

SPACING = 1 << 16  # the smallest allowed: many checkpoints in a few MB


def _lines(seed: int, count: int) -> list[bytes]:
    rng = random.Random(seed)
    lines = []
    for number in range(count):
        size = rng.choice([0, 0, 10, 200, 3_000, 30_000, 30_000, 250_000])  # 250 KB of base64: ~190 KB compressed, above SPACING
        body = base64.b64encode(rng.randbytes(size * 3 // 4)).decode()
        lines.append(f'{{"identifier": {seed * 10_000 + number}, "article_body": {{"html": "<p>{body}</p>"}}}}\n'.encode())
    lines.insert(count // 2, b"\n")  # an empty line counts as a line
    return lines


@pytest.fixture(scope="module")
def archive() -> tuple[bytes, list[tuple[int, int, int, bytes]]]:
    """A tar.gz of three NDJSON members (one with a GNU long name, one without its final newline) and its lines by ``tarfile``."""
    members = {
        "enwiki_namespace_0_0.ndjson": b"".join(_lines(1, 90)),
        "deep/" + "x" * 120 + "/enwiki_namespace_0_1.ndjson": b"".join(_lines(2, 60)).rstrip(b"\n"),
        "enwiki_namespace_0_2.ndjson": b"".join(_lines(3, 120)),
    }
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb", compresslevel=6, mtime=0) as gz, tarfile.open(fileobj=gz, mode="w|", format=tarfile.GNU_FORMAT) as tar:
        folder = tarfile.TarInfo("deep")
        folder.type = tarfile.DIRTYPE  # not a regular file: not a member of the index
        tar.addfile(folder)
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    raw = buffer.getvalue()
    truth = []
    with tarfile.open(fileobj=io.BytesIO(raw), mode="r:gz") as tar:
        regular = [info for info in tar.getmembers() if info.isreg()]
        for number, info in enumerate(regular):
            offset = info.offset_data
            for line_number, line in enumerate(tar.extractfile(info).read().splitlines(keepends=True), 1):
                truth.append((number, offset, line_number, line))
                offset += len(line)
    return raw, truth


@pytest.fixture(scope="module")
def index(archive) -> gzip_index.GzipIndex:
    raw, _ = archive
    return gzip_index.build_index(io.BytesIO(raw), "enwiki-NS0-20240301-ENTERPRISE-HTML.json.tar.gz", spacing=SPACING)


def _all_lines(raw: bytes, index: gzip_index.GzipIndex, target: int) -> list[tuple[int, int, int, bytes]]:
    lines = []
    for unit in gzip_ranges.plan_units(index, target):
        lines.extend((unit.member, line.offset, line.number, line.data) for line in gzip_ranges.iter_unit_lines(io.BytesIO(raw), index, unit))
    return lines


def test_the_index_lists_the_members_as_tarfile_does(archive, index):
    raw, truth = archive
    with tarfile.open(fileobj=io.BytesIO(raw), mode="r:gz") as tar:
        expected = [(info.name, info.offset_data, info.size) for info in tar.getmembers() if info.isreg()]
    assert [(m.name, m.offset, m.size) for m in index.members] == expected
    assert [m.lines for m in index.members] == [sum(1 for t in truth if t[0] == n) for n in range(3)]
    assert index.uncompressed_size == len(gzip.decompress(raw))
    assert len(index.checkpoints) > 20  # a few MB at 64 KiB apart


@pytest.mark.parametrize("target", [1, 150_000, 400_000, 1 << 30])
def test_every_split_gives_the_lines_tarfile_reads(archive, index, target):
    raw, truth = archive
    units = gzip_ranges.plan_units(index, target)
    assert len(units) >= 3  # never fewer than one a member
    if target == 1:
        assert len(units) > len(index.checkpoints) // 2  # one a checkpoint interval
    assert _all_lines(raw, index, target) == truth


def test_units_are_bounded_and_cover_each_member(index):
    target = 300_000
    units = gzip_ranges.plan_units(index, target)
    for number, member in enumerate(index.members):
        own = [u for u in units if u.member == number]
        assert own[0].start == member.offset and own[-1].end == member.offset + member.size
        assert all(a.end == b.start for a, b in zip(own, own[1:]))
    spans = [u.compressed for u in units]
    assert max(spans) <= target + 2 * SPACING  # a unit exceeds the target only by the intervals at its edges


def test_read_range_returns_the_bytes_from_any_offset(archive, index):
    raw, _ = archive
    whole = gzip.decompress(raw)
    for start in (0, 1, index.checkpoints[5].out, index.checkpoints[5].out - 1, len(whole) // 2, len(whole) - 1, len(whole)):
        assert b"".join(gzip_ranges.read_range(io.BytesIO(raw), index, start)) == whole[start:]


def test_the_index_survives_its_file_and_refuses_another(archive, index):
    raw, _ = archive
    blob = index.to_bytes()
    assert gzip_index.GzipIndex.from_bytes(blob, io.BytesIO(raw), "dump.tar.gz") == index
    assert len(blob) < 0.9 * sum(len(cp.window) for cp in index.checkpoints)  # windows are stored compressed

    other = gzip.compress(b"another dump\n" * 1000)
    with pytest.raises(gzip_index.IndexMismatchError, match=r"other\.tar\.gz: the index was made from another file"):
        gzip_index.GzipIndex.from_bytes(blob, io.BytesIO(other), "other.tar.gz")
    newer = blob.replace(gzip_index.MAGIC + (1).to_bytes(4, "little"), gzip_index.MAGIC + (99).to_bytes(4, "little"), 1)
    with pytest.raises(gzip_index.IndexMismatchError, match="version 99"):
        gzip_index.GzipIndex.from_bytes(newer, io.BytesIO(raw), "dump.tar.gz")


@pytest.mark.parametrize("keep", [0.0001, 0.3, 0.77, -9, -1])
def test_a_file_cut_short_is_fatal_and_named(archive, keep):
    raw, _ = archive
    cut = raw[: int(len(raw) * keep)] if keep > 0 else raw[:keep]
    with pytest.raises(gzip_decoder.GzipStreamError) as caught:
        gzip_index.build_index(io.BytesIO(cut), "cut.tar.gz", spacing=SPACING)
    message = str(caught.value)
    assert caught.value.kind == TRUNCATED_STREAM and isinstance(caught.value, InputError)
    assert message.startswith("cut.tar.gz: ") and "\n" not in message and "byte" in message


def test_a_corrupt_file_is_fatal_and_named(archive):
    raw, _ = archive
    damaged = bytearray(raw)
    damaged[len(raw) // 2] ^= 0x04
    with pytest.raises(gzip_decoder.GzipStreamError, match=r"^bad\.tar\.gz: the gzip stream is corrupt at compressed byte") as caught:
        gzip_index.build_index(io.BytesIO(bytes(damaged)), "bad.tar.gz", spacing=SPACING)
    assert caught.value.kind == CORRUPT_STREAM
    with pytest.raises(gzip_decoder.GzipStreamError, match="no gzip member"):
        gzip_index.build_index(io.BytesIO(raw + b"trailing bytes"), "bad.tar.gz", spacing=SPACING)
    with pytest.raises(gzip_decoder.GzipStreamError, match="the file is empty"):
        gzip_index.build_index(io.BytesIO(b""), "empty.tar.gz")
    with pytest.raises(gzip_index.NotATarError, match="notar.tar.gz"):
        gzip_index.build_index(io.BytesIO(gzip.compress(b"not a tar archive\n" * 1000)), "notar.tar.gz")


def test_a_file_changed_after_indexing_fails_the_unit_that_reads_it():
    # Stored (level 0) deflate blocks: a changed byte still decodes, and the file keeps its size and ends.
    lines = [b'{"n": %d, "text": "%s"}\n' % (n, b"y" * (n % 700)) for n in range(4000)]
    data = b"".join(lines)
    raw = zlib.compress(data, 0, wbits=31)
    index = gzip_index.build_index(io.BytesIO(raw), "stored.ndjson.gz", spacing=SPACING)
    changed = bytearray(raw)
    changed[len(raw) // 2] ^= 0x20  # a letter's case: still text, still one line
    changed = bytes(changed)
    index.check(io.BytesIO(changed), "stored.ndjson.gz")  # same size, same first and last 64 KiB
    units = gzip_ranges.plan_units(index, 1)
    middle = next(u for u in units if u.start <= len(data) // 2 < u.end + SPACING)
    with pytest.raises(gzip_decoder.GzipStreamError, match="differ from those indexed") as caught:
        list(gzip_ranges.iter_unit_lines(io.BytesIO(changed), index, middle, "stored.ndjson.gz"))
    assert caught.value.kind == CORRUPT_STREAM


def _three_members() -> tuple[list[bytes], bytes, list[bytes], bytes]:
    """NDJSON lines, their bytes, those bytes in thirds, and the thirds gzipped one after another (three gzip members)."""
    lines = _lines(7, 80)
    data = b"".join(lines)
    thirds = [data[: len(data) // 3], data[len(data) // 3 : 2 * len(data) // 3], data[2 * len(data) // 3 :]]
    return lines, data, thirds, b"".join(gzip.compress(part, 6) for part in thirds)


def test_plain_multi_member_gzip_is_one_member_read_across_gzip_members():
    lines, data, thirds, raw = _three_members()
    index = gzip_index.build_index(io.BytesIO(raw), "pages.ndjson.gz", spacing=SPACING)
    assert index.gzip_members == 3 and [(m.name, m.offset, m.size, m.lines) for m in index.members] == [("", 0, len(data), len(lines))]
    truth, offset = [], 0
    for number, line in enumerate(lines, 1):
        truth.append((0, offset, number, line))
        offset += len(line)
    for target in (1, 1 << 30):
        assert _all_lines(raw, index, target) == truth
    assert b"".join(gzip_ranges.read_range(io.BytesIO(raw), index, len(thirds[0]) - 3)) == data[len(thirds[0]) - 3 :]


def test_zlib_ng_combines_crcs_and_resumes_raw_deflate_at_a_bit_offset():
    """pipeline/io/inflate.py, the zlib-ng calls the ranges stand on: a CRC of two stretches from theirs, and a stream started mid-byte with its window."""
    first, second = b"clirmatrix " * 3000, bytes(range(256)) * 50
    assert inflate.crc32_combine(zlib.crc32(first), zlib.crc32(second), len(second)) == zlib.crc32(first + second)
    assert inflate.crc32_combine(zlib.crc32(first), zlib.crc32(b""), 0) == zlib.crc32(first)
    data = b"".join(_lines(5, 400))
    index = gzip_index.build_index(io.BytesIO(gzip.compress(data, 6)), "lines.gz", spacing=gzip_index.MIN_SPACING)
    resumed = [cp for cp in index.checkpoints if cp.bits]
    assert resumed, "no checkpoint inside a byte: the test data is too regular"
    raw = gzip.compress(data, 6)
    for checkpoint in resumed[:3]:
        assert b"".join(gzip_ranges.read_range(io.BytesIO(raw), index, checkpoint.out)) == data[checkpoint.out :]
