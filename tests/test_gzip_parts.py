"""gzip_parts: the seek index of a .tar.gz made from parts indexed on their own, then joined.

The truth is the one-pass index of ``gzip_index`` (itself checked against ``tarfile``)
and the lines ``tarfile`` reads; the archive is ``test_gzip_ranges``'s.
"""

from __future__ import annotations

import gzip
import io
import zlib

import pytest
import test_gzip_ranges
from test_gzip_ranges import SPACING, _all_lines, _lines

from clirmatrix.pipeline.io import gzip_decoder, gzip_index, gzip_parts
from clirmatrix.pipeline.io.badinput import CORRUPT_STREAM, TRUNCATED_STREAM

archive, index = test_gzip_ranges.archive, test_gzip_ranges.index  # its fixtures: the archive, and its one-pass index


def _in_parts(raw: bytes, part_bytes: int, path: str = "enwiki-NS0-20240301-ENTERPRISE-HTML.json.tar.gz", tar: bool = True):
    return gzip_parts.build_index_in_parts(lambda: io.BytesIO(raw), path, part_bytes, SPACING, tar)


@pytest.mark.parametrize("part_bytes", [20_000, 150_000, 1 << 20, 1 << 30])
def test_parts_give_the_members_and_lines_of_one_pass(archive, index, part_bytes):
    raw, truth = archive
    joined, report = _in_parts(raw, part_bytes)
    assert joined.members == index.members  # names, offsets, sizes, newlines before, lines
    assert (joined.uncompressed_size, joined.gzip_members, joined.tar) == (index.uncompressed_size, index.gzip_members, True)
    assert report["parts"] == gzip_parts.plan_parts(len(raw), part_bytes) and report["fetched_bytes"] == 0
    assert _all_lines(raw, joined, 300_000) == truth
    assert _all_lines(raw, joined, 1) == truth
    whole = gzip.decompress(raw)
    for cp in joined.checkpoints[1::7]:  # every part start is a checkpoint: its window and counts are the stream's
        assert cp.window == whole[max(0, cp.out - gzip_decoder.WINDOW) : cp.out] or cp.header
        assert cp.newlines == whole[: cp.out].count(b"\n")


def test_each_part_decodes_its_own_range(archive):
    raw, _ = archive
    part_bytes = 400_000
    parts = [gzip_parts.index_part(lambda: io.BytesIO(raw), "a.tar.gz", n, part_bytes, SPACING) for n in range(gzip_parts.plan_parts(len(raw), part_bytes))]
    for part in parts[1:]:
        assert part.number * part_bytes * 8 <= part.start < (part.number + 1) * part_bytes * 8  # no part is empty at this size
    for part in parts[:-1]:
        assert (part.number + 1) * part_bytes * 8 <= part.end < (part.number + 1) * part_bytes * 8 + 8 * 60_000  # to the next block
        assert gzip_parts.IndexPart.from_bytes(part.to_bytes()) == part
    assert parts[-1].end == -1
    heads = [part.head for part in parts[1:]]  # the window before a part is needed for its first bytes only
    assert min(heads) >= gzip_decoder.WINDOW and sum(heads) < sum(part.length for part in parts[1:]) / 2


def test_a_multi_member_gzip_in_parts():
    _, _, _, raw = test_gzip_ranges._three_members()
    one_pass = gzip_index.build_index(io.BytesIO(raw), "pages.ndjson.gz", spacing=SPACING)
    for part_bytes in (30_000, 1 << 20):
        joined, _ = _in_parts(raw, part_bytes, "pages.ndjson.gz", tar=False)
        assert joined.members == one_pass.members and joined.gzip_members == 3
        assert _all_lines(raw, joined, 1) == _all_lines(raw, one_pass, 1)


def test_a_stream_that_never_forgets_its_window_is_decoded_by_the_join():
    # One line again and again: every copy reaches back past a part's start, so no part can tell its own bytes.
    line = b'{"identifier": 1, "article_body": {"html": "' + bytes(range(35, 126)) * 9 + b'"}}\n'
    data = line * 8_000
    raw = gzip.compress(data, 6)
    parts = [gzip_parts.index_part(lambda: io.BytesIO(raw), "same.ndjson.gz", n, 2_000, SPACING) for n in range(gzip_parts.plan_parts(len(raw), 2_000))]
    later = [part for part in parts[1:] if not part.empty]
    assert later and all(part.head == part.length and not part.pieces for part in later)
    joined, report = gzip_parts.join_parts(io.BytesIO(raw), "same.ndjson.gz", parts, SPACING, tar=False)
    assert joined.members[0].lines == 8_000 and joined.uncompressed_size == len(data)
    assert report["head_bytes"] == sum(part.length for part in later)
    assert _all_lines(raw, joined, 1) == [(0, n * len(line), n + 1, line) for n in range(8_000)]


@pytest.mark.parametrize("keep", [0.0001, 0.3, 0.77, -9, -1])
def test_a_file_cut_short_is_fatal_and_named(archive, keep):
    raw, _ = archive
    cut = raw[: int(len(raw) * keep)] if keep > 0 else raw[:keep]
    with pytest.raises(gzip_decoder.GzipStreamError) as caught:
        _in_parts(cut, 200_000, "cut.tar.gz")
    assert caught.value.kind == TRUNCATED_STREAM and str(caught.value).startswith("cut.tar.gz: ") and "\n" not in str(caught.value)


def test_damage_that_zlib_cannot_see_fails_the_member_check(archive):
    raw, _ = archive
    for position, what in ((-8, "CRC-32"), (-4, "length")):
        damaged = bytearray(raw)
        damaged[position] ^= 0x01  # the trailer of the one member, which the last part decodes without its start
        with pytest.raises(gzip_decoder.GzipStreamError, match=r"^bad\.tar\.gz: the gzip member from uncompressed byte 0 to .* fails its check") as caught:
            _in_parts(bytes(damaged), 200_000, "bad.tar.gz")
        assert caught.value.kind == CORRUPT_STREAM, what
    damaged = bytearray(raw)
    damaged[len(raw) // 2] ^= 0x04
    with pytest.raises(gzip_decoder.GzipStreamError) as caught:
        _in_parts(bytes(damaged), 200_000, "bad.tar.gz")
    assert caught.value.kind == CORRUPT_STREAM


def test_parts_that_do_not_join_are_refused(archive):
    raw, _ = archive
    mixed = [gzip_parts.index_part(lambda: io.BytesIO(raw), "a.tar.gz", n, size, SPACING) for n, size in ((0, 100_000), (1, 150_000))]
    mixed += [gzip_parts.index_part(lambda: io.BytesIO(raw), "a.tar.gz", n, 150_000, SPACING) for n in range(2, gzip_parts.plan_parts(len(raw), 150_000))]
    with pytest.raises(gzip_parts.PartsMismatchError, match="part 0 ends at bit"):
        gzip_parts.join_parts(io.BytesIO(raw), "a.tar.gz", mixed, SPACING)
    with pytest.raises(gzip_parts.PartsMismatchError, match="not all the parts"):
        gzip_parts.join_parts(io.BytesIO(raw), "a.tar.gz", mixed[:1] + mixed[2:], SPACING)
    other = gzip.compress(b"x" * 10)
    with pytest.raises(gzip_index.IndexMismatchError, match="part 0 was made from another file"):
        gzip_parts.join_parts(io.BytesIO(other), "a.tar.gz", mixed, SPACING)


def test_not_gzip_and_not_tar_are_named():
    with pytest.raises(gzip_decoder.GzipStreamError, match="the file is empty"):
        _in_parts(b"", 1 << 20, "empty.tar.gz")
    with pytest.raises(gzip_index.NotATarError, match="notar.tar.gz"):
        _in_parts(gzip.compress(b"not a tar archive\n" * 1000), 1 << 20, "notar.tar.gz")
    with pytest.raises(gzip_decoder.GzipStreamError, match="no gzip member"):
        _in_parts(zlib.compress(b"zlib, not gzip" * 100), 1 << 20, "zlib.tar.gz")


def test_the_block_finder_finds_the_block_a_decoder_passes():
    wrapped = gzip.compress(b"".join(_lines(11, 40)), 6, mtime=0)
    decoder = gzip_decoder.Decoder(io.BytesIO(wrapped), "t.gz", len(wrapped))  # its block ends are zlib's own
    decoder.start_member(0)
    out = bytearray(1 << 24)
    ends = []
    while True:
        _, event = decoder.inflate(gzip_decoder.buffer_address(out), len(out), 0, block=True)
        if event == decoder.BOUNDARY:
            ends.append(decoder.in_pos * 8 - decoder.bits)
        if event == decoder.END:
            break
    decoder.close()
    dynamic = [bit for bit in ends if gzip_parts._block_type(io.BytesIO(wrapped), bit) == 2]
    assert len(dynamic) > 5
    for bit in dynamic[1:]:  # searched from a few bytes before: that block, and no false start on the way
        assert gzip_parts.find_block(io.BytesIO(wrapped), (bit - 40) // 8, len(wrapped)) == bit
    assert gzip_parts.find_block(io.BytesIO(wrapped), dynamic[-1] // 8 + 1, len(wrapped)) is None
