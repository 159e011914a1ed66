"""What the Wikimedia dumps site offers, as ``clirmatrix dumps list`` reads it and ``fetch`` and ``plan`` use it.

The listing is the contract between the three: every file it names carries the size
and checksums the site itself publishes, and the name ``build --dumps`` reads it by.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path

import orjson

from clirmatrix.pipeline.errors import InvalidInputError

LISTING_FORMAT = "clirmatrix-dumps-list/1"


@dataclass(frozen=True)
class OfferedFile:
    """One file of a finished dump run: where it is, what it must be, and the name the build reads it by."""

    name: str  # the file name on the site, which ``fetch`` keeps (``build --dumps`` classifies by it)
    url: str
    kind: str  # input_kinds: CIRRUS, HTML, XML (documents), WIKIDATA_JSON, ITEMS_PER_SITE, PAGE_PROPS (links)
    lang: str | None  # the Wikipedia's language; None for Wikidata's files
    date: str  # YYYYMMDD of the dump run
    size: int | None = None  # bytes, as the site publishes them; None where it publishes none
    md5: str | None = None
    sha1: str | None = None


@dataclass
class DumpListing:
    """What ``dumps list`` found: every complete dump of each kind per language, and the files ``fetch`` takes."""

    mirror: str
    date: str  # "latest" or the YYYYMMDD asked for
    offered: list[OfferedFile] = field(default_factory=list)  # the newest complete run of each (language, kind)
    chosen: list[OfferedFile] = field(default_factory=list)  # what fetch downloads: one document kind a language, and the links
    notes: list[str] = field(default_factory=list)  # runs in progress or failed (not offered), languages without a dump

    def to_json(self) -> bytes:
        chosen = {item.url for item in self.chosen}
        files = [{**asdict(item), "chosen": item.url in chosen} for item in self.offered]
        return orjson.dumps({"format": LISTING_FORMAT, "mirror": self.mirror, "date": self.date, "files": files, "notes": self.notes},
                            option=orjson.OPT_INDENT_2) + b"\n"

    @classmethod
    def read(cls, path: str | Path) -> DumpListing:
        """A listing written by ``dumps list --json``; InvalidInputError naming the file when it is not one."""
        try:
            value = orjson.loads(Path(path).read_bytes())
        except (OSError, orjson.JSONDecodeError) as error:
            raise InvalidInputError(f"{path}: not a dumps listing ({error})") from None
        if not isinstance(value, dict) or value.get("format") != LISTING_FORMAT:
            raise InvalidInputError(f"{path}: not a dumps listing (format {LISTING_FORMAT!r}, as `clirmatrix dumps list --json` writes)")
        offered, chosen = [], []
        for number, entry in enumerate(value.get("files", []), 1):
            try:
                item = OfferedFile(**{key: entry[key] for key in OfferedFile.__dataclass_fields__ if key in entry})
            except TypeError as error:
                raise InvalidInputError(f"{path}: file {number}: {error}") from None
            offered.append(item)
            if entry.get("chosen"):
                chosen.append(item)
        return cls(value.get("mirror", ""), value.get("date", "latest"), offered, chosen, list(value.get("notes", [])))
