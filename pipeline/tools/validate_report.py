"""What ``validate`` reports: the rules' names, a finding, the report, and the recorder each unit of work fills.

The recorder keeps ``MAX_EXAMPLES`` findings per (severity, file, rule) and counts the
rest; a file is read by one unit of work, so units recorded apart and merged in order
give the report one pass over the files would.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console

# Rule names, as they appear in the report.
LAYOUT = "layout"
SAME_LANGUAGE = "same-language"
MALFORMED = "malformed"
LABEL_RANGE = "label-range"
DUPLICATE_QUERY = "duplicate-query"
DUPLICATE_RESULT = "duplicate-result"
LABEL_ORDER = "label-order"
ID_ORDER = "id-order"
LABEL_6 = "one-label-6"
CANDIDATES = "candidates"
NO_RELEVANT = "no-relevant"
EMPTY_FILE = "empty-file"
SPLIT_SIZE = "split-size"
SPLIT_OVERLAP = "split-overlap"
LEAKAGE = "leakage"
ALIGNMENT = "multi8-alignment"
BASE_FULL = "base-vs-full"
DUPLICATE_DOC = "duplicate-doc"
DOC_TEXT = "doc-text"
DOCS_FULL = "docs-full"
MISSING_DOC = "missing-doc"
INDEX_RULE = "index"
NOT_INDEXED = "not-indexed"
MISSING_FILE = "missing-file"
CHECKSUM = "md5"
SIZE = "size"
URL = "url"
MANIFEST_RULE = "manifest"
ENCODER_RULE = "gzip-encoder"
QUERY_ORDER = "query-order"
LINE_BYTES = "line-bytes"

MAX_EXAMPLES = 10  # findings kept per (file, rule, severity); the rest are counted
EXAMPLE_IDS = 5  # ids named in a leakage or missing-doc finding


@dataclass(frozen=True)
class Finding:
    """One broken rule: the file (relative to the root), the 1-based line or 0, the rule."""

    path: str
    rule: str
    message: str
    line: int = 0

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else self.path
        return f"{where}: [{self.rule}] {self.message}"


@dataclass
class ValidationReport:
    """What ``validate`` found; ``ok`` considers failures only."""

    root: str
    build: bool = False
    failures: list[Finding] = field(default_factory=list)
    warnings: list[Finding] = field(default_factory=list)
    files: int = 0
    queries: int = 0
    docs: int = 0

    @property
    def ok(self) -> bool:
        return not self.failures

    def to_dict(self) -> dict:
        """JSON-ready form (for ``--json`` output or a log)."""
        def rows(findings: list[Finding]) -> list[dict]:
            return [{"path": f.path, "line": f.line, "rule": f.rule, "message": f.message} for f in findings]

        return {
            "root": self.root, "build": self.build, "ok": self.ok, "files": self.files, "queries": self.queries,
            "docs": self.docs, "failures": rows(self.failures), "warnings": rows(self.warnings),
        }


def examples(ids: Iterable[str]) -> str:
    """The first ``EXAMPLE_IDS`` ids in the release's order (by length, then text)."""
    return ", ".join(sorted(ids, key=lambda i: (len(i), i))[:EXAMPLE_IDS])


class Recorder:
    """Findings of one unit of work in the order found, ``MAX_EXAMPLES`` kept per (severity, file, rule)."""

    def __init__(self, build: bool) -> None:
        self.build = build
        self.findings: list[tuple[bool, Finding]] = []
        self.kept: Counter = Counter()
        self.suppressed: Counter = Counter()

    def _add(self, failure: bool, path: str, rule: str, message: str, line: int = 0) -> None:
        key = (failure, path, rule)
        self.kept[key] += 1
        if self.kept[key] > MAX_EXAMPLES:
            self.suppressed[key] += 1
            return
        self.findings.append((failure, Finding(path, rule, message, line)))

    def fail(self, path: str, rule: str, message: str, line: int = 0) -> None:
        self._add(True, path, rule, message, line)

    def warn(self, path: str, rule: str, message: str, line: int = 0) -> None:
        self._add(False, path, rule, message, line)

    def strict(self, path: str, rule: str, message: str, line: int = 0) -> None:
        """A rule of our builds that the official release is known (or allowed) to break."""
        self._add(self.build, path, rule, message, line)

    def merge(self, other: Recorder) -> None:
        """Another unit's findings after this one's."""
        for failure, finding in other.findings:
            self._add(failure, finding.path, finding.rule, finding.message, finding.line)
        for key, count in other.suppressed.items():
            self.kept[key] += count
            self.suppressed[key] += count

    def into(self, report: ValidationReport) -> ValidationReport:
        """The findings into ``report``, each counted rest as one finding after them."""
        for failure, finding in self.findings:
            (report.failures if failure else report.warnings).append(finding)
        for (failure, path, rule), count in sorted(self.suppressed.items()):
            (report.failures if failure else report.warnings).append(Finding(path, rule, f"... and {count:,} more like the above"))
        return report


def print_report(report: ValidationReport, console: Console, limit: int = 200) -> None:
    """Failures and warnings (at most ``limit``), then a one-line verdict.

    On a terminal they form a table; piped, each is one unwrapped line
    (``failure: path:line: [rule] message``), since a table wraps to 80 columns.
    """
    from rich.table import Table

    findings = [("failure", f) for f in report.failures] + [("warning", f) for f in report.warnings]
    if findings and not console.is_terminal:  # piped or logged: one whole line per finding, for grep
        for kind, finding in findings[:limit]:
            console.print(f"{kind}: {finding}", highlight=False, markup=False, soft_wrap=True)
    elif findings:
        table = Table(show_lines=False, expand=False)
        for column in ("", "file", "line", "rule", "message"):
            table.add_column(column, overflow="fold")
        for kind, finding in findings[:limit]:
            style = "red" if kind == "failure" else "yellow"
            table.add_row(f"[{style}]{kind}[/]", finding.path, str(finding.line or ""), finding.rule, finding.message)
        console.print(table)
        if len(findings) > limit:
            console.print(f"... {len(findings) - limit:,} more findings not shown")
    kind = "build" if report.build else "download"
    counted = f"{report.files:,} files, {report.queries:,} queries, {report.docs:,} documents ({kind})"
    if report.ok:
        console.print(f"[green]valid[/]: {counted}; {len(report.warnings):,} warnings")
    else:
        console.print(f"[red]invalid[/]: {len(report.failures):,} failures, {len(report.warnings):,} warnings in {counted}")
