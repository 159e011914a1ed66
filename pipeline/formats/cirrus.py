"""CirrusSearch content dumps: pairs of a bulk action line and a document line.

docs/formats.md section 2.2: the action is ``{"index":{"_type":"page","_id":"12"}}``
(``_type`` later ``_doc``, later absent). The document id is the action's ``_id``;
the document's own ``page_id`` exists only since 2022 and is never relied on.
Lines are paired by content (an object whose only key is ``index`` is an action),
so one broken line costs one record, not the alignment of the rest of the file.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import NamedTuple

import orjson

from clirmatrix.pipeline.io.badinput import (
    ACTION_WITHOUT_DOCUMENT,
    BAD_FIELD,
    DOCUMENT_WITHOUT_ACTION,
    MALFORMED_JSON,
    MISSING_FIELD,
    NOT_AN_OBJECT,
    FileReport,
)

# Reasons a well-formed document is left out (docs/method.md section 2).
OTHER_NAMESPACE = "other_namespace"
REDIRECT = "redirect"
EMPTY_TEXT = "empty_text"

_ENTITY = re.compile(r"^Q[1-9][0-9]*$")
# A page id as MediaWiki writes it: a decimal integer without leading zeros, below 2**63.
# Later stages keep ids as 64-bit integers (docs/method.md section 0: the id is the page id).
_PAGE_ID = re.compile(r"^(?:0|[1-9][0-9]{0,17})$")


def is_page_id(value: str) -> bool:
    """Whether ``value`` is a page id written the one way MediaWiki writes it."""
    return bool(_PAGE_ID.match(value))


class Article(NamedTuple):
    """An article read from a dump, before truncation."""

    doc_id: str
    title: str
    text: str
    entity: str | None
    line: int


class _Pending(NamedTuple):
    line: int
    doc_id: str | None  # None: the action was bad and already counted; swallow its document


def entity_of(value: object) -> str | None:
    """``value`` when it is a Wikidata item id (``Q42``), else None."""
    return value if isinstance(value, str) and _ENTITY.match(value) else None


def _is_redirect(document: dict) -> bool:
    # First-class redirect documents (CirrusSearch 2026, off by default) carry page_type.
    return document.get("page_type") == "redirect" or bool(document.get("redirect_target"))


def read_articles(lines: Iterable[tuple[int, bytes]], report: FileReport) -> Iterator[Article]:
    """Namespace-0, non-redirect, non-empty articles of a CirrusSearch dump.

    Every record is counted in ``report``: kept, filtered with a reason, or
    rejected with its line number.
    """
    pending: _Pending | None = None
    for number, line in lines:
        try:
            value = orjson.loads(line)
        except orjson.JSONDecodeError as error:
            if not line.strip():  # checked only here: strip() copies every line
                continue
            report.reject(number, MALFORMED_JSON, str(error))
            # With an action waiting, the broken line was its document; otherwise it
            # was (most likely) an action, and its document must not count twice.
            pending = None if pending else _Pending(number, None)
            continue
        if not isinstance(value, dict):
            report.reject(number, NOT_AN_OBJECT, f"expected a JSON object, got {type(value).__name__}")
            pending = None if pending else _Pending(number, None)
            continue

        if "index" in value and len(value) == 1:
            if pending and pending.doc_id is not None:
                report.reject(pending.line, ACTION_WITHOUT_DOCUMENT, f"action for _id {pending.doc_id} has no document line")
            action = value["index"]
            doc_id = action.get("_id") if isinstance(action, dict) else None
            if isinstance(doc_id, int) and not isinstance(doc_id, bool):
                doc_id = str(doc_id)
            if not isinstance(doc_id, str) or not doc_id:
                report.reject(number, MISSING_FIELD, "action line has no _id")
                pending = _Pending(number, None)
            elif not is_page_id(doc_id):
                report.reject(number, BAD_FIELD, f"action _id {doc_id[:40]!r} is not a page id")
                pending = _Pending(number, None)
            else:
                pending = _Pending(number, doc_id)
            continue

        if pending is None:
            report.reject(number, DOCUMENT_WITHOUT_ACTION, "document line without a preceding action line")
            continue
        doc_id, pending = pending.doc_id, None
        if doc_id is None:
            continue  # the document of a bad action, already counted
        article = _article(value, doc_id, number, report)
        if article is not None:
            yield article
    if pending and pending.doc_id is not None:
        report.reject(pending.line, ACTION_WITHOUT_DOCUMENT, f"action for _id {pending.doc_id} has no document line (end of file)")


def _article(document: dict, doc_id: str, number: int, report: FileReport) -> Article | None:
    missing = [name for name in ("title", "text", "namespace") if document.get(name) is None]
    if missing:
        report.reject(number, MISSING_FIELD, f"_id {doc_id}: missing field(s) {', '.join(missing)}")
        return None
    title, text, namespace = document["title"], document["text"], document["namespace"]
    if not isinstance(title, str) or not isinstance(text, str) or not isinstance(namespace, int):
        report.reject(number, BAD_FIELD, f"_id {doc_id}: title/text must be strings and namespace an integer")
        return None
    if namespace != 0:
        report.skip(OTHER_NAMESPACE)
        return None
    if _is_redirect(document):
        report.skip(REDIRECT)
        return None
    if not text or text.isspace():  # no strip(): it would copy every text
        report.skip(EMPTY_TEXT)
        return None
    report.keep()
    return Article(doc_id, title, text, entity_of(document.get("wikibase_item")), number)
