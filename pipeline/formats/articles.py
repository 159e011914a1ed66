"""The articles of one whole dump file, whatever its format: what the docs stage and ``plan`` read alike."""

from __future__ import annotations

from collections.abc import Iterator
from typing import BinaryIO

from clirmatrix.pipeline.formats import cirrus, enterprise_html, mediawiki_xml
from clirmatrix.pipeline.io import fileio
from clirmatrix.pipeline.io.badinput import FileReport
from clirmatrix.pipeline.method.input_kinds import CIRRUS, HTML


def read_dump(raw: BinaryIO, path: str, kind: str, report: FileReport, background_inflate: bool = False) -> Iterator[cirrus.Article]:
    """The articles of one opened dump file of ``kind``, read whole, in dump order; every record lands in ``report``."""
    stream = fileio.open_dump(raw, path, background_inflate)
    if kind == CIRRUS:
        return cirrus.read_articles(fileio.iter_lines(stream, report), report)
    if kind == HTML:
        return enterprise_html.read_articles(enterprise_html.tar_lines(stream, report), report)
    return mediawiki_xml.read_articles(stream, report)
