"""Counting what a job keeps, filters by rule, and rejects as bad input.

Every record a reader meets lands in exactly one bucket: kept, filtered (a rule of
docs/method.md says skip it: another namespace, a redirect, empty text, a duplicate
id) or rejected (the input is broken: malformed JSON, a document line without its
action line, a missing field). Rejects are counted by kind with file and line; a
job fails when their share crosses a set fraction. A file that cannot be read to
its end (a truncated or corrupt stream) fails the job whatever the fraction.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from clirmatrix.pipeline.errors import InputError
from clirmatrix.pipeline.io.positions import describe_position

# Kinds of bad input.
MALFORMED_JSON = "malformed_json"
MALFORMED_XML = "malformed_xml"
MALFORMED_PAGE = "malformed_page"  # one <page> of a dump read page by page: costs that page only
NOT_AN_OBJECT = "not_an_object"
DOCUMENT_WITHOUT_ACTION = "document_without_action"
ACTION_WITHOUT_DOCUMENT = "action_without_document"
MISSING_FIELD = "missing_field"
BAD_FIELD = "bad_field"
UNPARSEABLE_WIKITEXT = "unparseable_wikitext"
TRUNCATED_STREAM = "truncated_stream"
CORRUPT_STREAM = "corrupt_stream"
INCOMPLETE_LINE = "incomplete_line"

# Kinds after which a file cannot be read on: the rest of it is lost, in an amount
# nobody can know (a cut or damaged compressed stream, XML that stops parsing). They
# fail the run whatever their share; every other kind costs one record and is counted.
STREAM_LOSS = frozenset({TRUNCATED_STREAM, CORRUPT_STREAM, MALFORMED_XML})

DEFAULT_MAX_BAD_FRACTION = 0.001  # 0.1 %
MAX_EXAMPLES = 20


@dataclass
class FileReport:
    """What reading one input file produced; JSON-serialisable via ``to_dict``."""

    file: str
    lang: str = ""
    records: int = 0
    kept: int = 0
    filtered: Counter = field(default_factory=Counter)
    rejected: Counter = field(default_factory=Counter)
    examples: list[dict] = field(default_factory=list)

    def keep(self, n: int = 1) -> None:
        self.records += n
        self.kept += n

    def skip(self, reason: str, n: int = 1) -> None:
        """A record left out by a rule (not an error)."""
        self.records += n
        self.filtered[reason] += n

    def reject(self, line: int, kind: str, detail: str) -> None:
        """A record lost to bad input, remembered with its line for the report."""
        self.records += 1
        self.rejected[kind] += 1
        if len(self.examples) < MAX_EXAMPLES or kind in STREAM_LOSS:  # where a file broke is always kept
            self.examples.append({"line": line, "kind": kind, "detail": detail[:300]})

    @property
    def bad(self) -> int:
        return sum(self.rejected.values())

    def to_dict(self) -> dict:
        return {
            "file": self.file,
            "lang": self.lang,
            "records": self.records,
            "kept": self.kept,
            "filtered": dict(sorted(self.filtered.items())),
            "rejected": dict(sorted(self.rejected.items())),
            "examples": self.examples,
        }

    @classmethod
    def from_dict(cls, value: dict) -> FileReport:
        return cls(
            file=value["file"],
            lang=value.get("lang", ""),
            records=value["records"],
            kept=value["kept"],
            filtered=Counter(value["filtered"]),
            rejected=Counter(value["rejected"]),
            examples=list(value["examples"]),
        )


class TooManyBadRecords(InputError, RuntimeError):
    """More input was rejected than the configured fraction allows."""


class DamagedInputError(InputError, RuntimeError):
    """An input file could not be read to its end."""


def check_complete(reports: Iterable[FileReport], unit: str = "records") -> None:
    """Raise ``DamagedInputError`` naming every file that could not be read to its end, and how far it got.

    A truncated dump would otherwise pass as a smaller language (a cut at 60% of
    English is one bad record among thousands), so this is fatal whatever the fraction.
    """
    damaged = []
    for report in reports:
        for example in report.examples:
            if example["kind"] in STREAM_LOSS:
                damaged.append(
                    f"{report.file}: {example['kind']} at {describe_position(example['line'])}, after {report.records - 1:,} {unit} "
                    f"({report.kept:,} kept): {example['detail']}"
                )
    if damaged:
        raise DamagedInputError(
            "input that cannot be read to its end; the rest of each file below would be lost, so nothing was built from it. "
            "Download it again (and check it against the dump's md5sums or sha1sums file):\n" + "\n".join("    " + line for line in damaged)
        )


def describe_rejects(reports: Iterable[FileReport], limit: int = 10) -> list[str]:
    """Human-readable lines ``file line N: kind: detail`` for the first rejects."""
    lines: list[str] = []
    for report in reports:
        for example in report.examples:
            if len(lines) >= limit:
                return lines
            lines.append(f"{report.file} {describe_position(example['line'])}: {example['kind']}: {example['detail']}")
    return lines


def check_bad_fraction(groups: dict[str, list[FileReport]], max_fraction: float, unit: str = "records") -> None:
    """Raise ``DamagedInputError`` for a file not read to its end, else ``TooManyBadRecords`` naming every group (language or file) over the limit.

    ``unit`` names what a record is in the messages: a dump's records, or the Wikidata dump's entity lines.
    """
    check_complete((report for reports in groups.values() for report in reports), unit)
    failures: list[str] = []
    for name, reports in sorted(groups.items()):
        records = sum(r.records for r in reports)
        bad = sum(r.bad for r in reports)
        if bad and bad > max_fraction * records:
            kinds = Counter()
            for report in reports:
                kinds.update(report.rejected)
            summary = ", ".join(f"{kind}: {count:,}" for kind, count in sorted(kinds.items()))
            failures.append(
                f"{name}: {bad:,} of {records:,} {unit} ({bad / max(records, 1):.3%}) were bad input, "
                f"more than the allowed {max_fraction:.3%} ({summary})"
            )
            failures.extend("    " + line for line in describe_rejects(reports))
    if failures:
        raise TooManyBadRecords(
            "too much bad input; raise --max-bad-fraction to accept it, or fix the dumps:\n" + "\n".join(failures)
        )
