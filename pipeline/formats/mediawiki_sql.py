"""MediaWiki SQL table dumps: Wikidata's ``wb_items_per_site`` and a wiki's ``page_props``.

Two small published sources of the entity links that the Wikidata JSON dump gives
(docs/formats.md section 4): ``wikidatawiki-{date}-wb_items_per_site.sql.gz`` (one
file, every sitelink of every item: ``(row id, item id, 'site', 'title')``) and
``{wiki}-{date}-page_props.sql.gz`` (rows ``(page id, 'wikibase_item', 'Q42', sortkey)``
among the wiki's other page properties).

Both are the output of ``mysqldump --opt --quick --skip-add-locks --skip-lock-tables``
(Wikimedia's dump scripts): comment and ``/*!...*/`` header lines, ``CREATE TABLE``,
then ``INSERT INTO `t` VALUES (...),(...);`` statements of about 1 MB a line, then
trailer lines ending with ``-- Dump completed on {date} {time}``. A file without that
last line, or one that ends inside a statement, was cut short (``truncated_stream``).

Hand-written rather than ``mwsql`` (bench/sql_bench.py, docs/benchmarks.md): mwsql
opens paths only (no stream from Beam's FileSystems), reads each statement whole,
splits tuples on the text ``),(`` and replaces ``NULL`` by regular expressions that
also act inside quoted strings, reads ``\\n`` and ``\\0`` back as ``n`` and ``0``,
cannot tell a cut file from a whole one, and is GPL-3.0.

How it reads, and why it is exact. A statement is cut into chunks of whole tuples
(a line, or at most 4 MiB of a longer one). Each chunk is first checked, at the
regular expression engine's speed, to be nothing but tuples of the table's shape
separated by commas, with site keys (property names) free of escapes: every tuple
is replaced by a marker and the rest must be exactly ``T,T,...,T``. In a chunk that
passes, a second expression that spells the selected site keys (or
``'wikibase_item'``) in place finds exactly the selected tuples: outside strings
``(`` only opens tuples, and inside a string a quote preceded by a comma either
closes the string (then ``,`` or ``)`` follows, never a key) or opens an escaped
``''`` (then a quote follows), so no match can start inside a string. Other tuples
are counted, never decoded. A chunk that fails the check goes through the
tuple-by-tuple tokenizer, which also serves as the reference full parse
(``SitelinkFilter(prefilter=False)``), and which names each malformed tuple by line
and index. Tests check that both give the same links and the same counts.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import IO

from clirmatrix.pipeline.errors import InvalidInputError
from clirmatrix.pipeline.formats.wikidata import Sitelink, SitelinkFilter
from clirmatrix.pipeline.io.badinput import BAD_FIELD, TRUNCATED_STREAM, FileReport
from clirmatrix.pipeline.io.fileio import STREAM_ERRORS, stream_error_kind

# Kinds of bad input and filter reasons of this module.
MALFORMED_SQL = "malformed_sql"  # a tuple that is not SQL values in parentheses
OTHER_SITE = "other_site"  # wb_items_per_site: a sitelink to another wiki than the selected Wikipedias
OTHER_PROPERTY = "other_property"  # page_props: another page property than wikibase_item

ITEMS_PER_SITE_TABLE = "wb_items_per_site"
PAGE_PROPS_TABLE = "page_props"
ITEMS_PER_SITE_COLUMNS = ("ips_row_id", "ips_item_id", "ips_site_id", "ips_site_page")
PAGE_PROPS_COLUMNS = ("pp_page", "pp_propname", "pp_value")  # then pp_sortkey since MediaWiki 1.23

DUMP_END = b"-- Dump completed"
_PIECE = 1 << 22  # longest piece of a line read at once
_MAX_TUPLE = 1 << 23  # no tuple of these tables comes near this; past it the text is not tuples

# --- SQL values -----------------------------------------------------------------------------
# MySQL's string lexer: a backslash escapes the next byte, '' is a quote. Possessive
# quantifiers: a string ends where the lexer ends it, never earlier on backtracking.
_STR = rb"(?:[^'\\]++|\\.|'')*+"
_PLAIN = rb"[^'\\]*+"  # a string without escapes (site keys, property names)
_NUM = rb"[-+]?(?:\d++(?:\.\d*+)?|\.\d++)(?:[eE][-+]?\d++)?"
_VALUE = rb"(?:(?:_binary\s*+)?'" + _STR + rb"'|NULL|0x[0-9A-Fa-f]*+|" + _NUM + rb")"
_ANY_TUPLE = rb"\(" + _VALUE + rb"(?:," + _VALUE + rb")*+\)"
# The longest run of whole tuples, each followed by its comma: where a long line is cut.
_WHOLE_TUPLES = re.compile(rb"\s*+(?:" + _ANY_TUPLE + rb",\s*+)*+", re.DOTALL)

# One value at a time, for the tokenizer: a string (also _binary '...'), NULL, a number, 0x hex.
_TOKEN = re.compile(rb"(?:_binary\s*+)?'(" + _STR + rb")'|(NULL)|0x([0-9A-Fa-f]*+)|(" + _NUM + rb")", re.DOTALL)
_ESCAPE = re.compile(rb"\\(.)|''", re.DOTALL)
_UNESCAPED = {b"0": b"\0", b"b": b"\b", b"n": b"\n", b"r": b"\r", b"t": b"\t", b"Z": b"\x1a", b"%": b"\\%", b"_": b"\\_"}

_INSERT = re.compile(rb"INSERT\s+INTO\s+`?([^`\s(]+)`?\s+VALUES\s*", re.IGNORECASE)
_CREATE = re.compile(rb"CREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?`?([^`\s(]+)`?", re.IGNORECASE)
_COLUMN = re.compile(rb"\s*`([^`]+)`")
_SQL_STARTS = (b"--", b"/*", b"CREATE", b"DROP", b"INSERT", b"SET", b"LOCK", b"UNLOCK", b"USE")
_ENTITY = re.compile(rb"Q[1-9][0-9]*")


class SqlDumpError(InvalidInputError):
    """A file that is not the mysqldump of the table it was given as."""


def unescape(raw: bytes) -> bytes:
    """The bytes a MySQL string literal's body stands for (``\\'``, ``\\\\``, ``\\n``, ``\\0``, ``\\Z``, ``''``...)."""
    if b"\\" not in raw and b"''" not in raw:
        return raw
    return _ESCAPE.sub(lambda m: b"'" if m.group(1) is None else _UNESCAPED.get(m.group(1), m.group(1)), raw)


def parse_tuple(text: bytes, start: int = 0) -> tuple[list[bytes | None], int] | None:
    """``(values, end)`` of the tuple at ``text[start]``, or None where no well-formed tuple starts.

    Strings (also ``_binary '...'`` and ``0x`` hex) become their bytes, ``NULL`` None,
    numbers their text. The reference parser: the fast path must agree with it.
    """
    if text[start : start + 1] != b"(":
        return None
    values: list[bytes | None] = []
    position = start + 1
    while True:
        token = _TOKEN.match(text, position)
        if token is None:
            return None
        string, null, hexadecimal, number = token.groups()
        if string is not None:
            values.append(unescape(string))
        elif null is not None:
            values.append(None)
        elif number is not None:
            values.append(number)
        else:
            if len(hexadecimal) % 2:
                return None
            values.append(bytes.fromhex(hexadecimal.decode()))
        position = token.end()
        following = text[position : position + 1]
        if following == b")":
            return values, position + 1
        if following != b",":
            return None
        position += 1


def _alternation(words: list[bytes]) -> bytes:
    """A regular expression matching exactly ``words``, factored as a trie (re tries branches one by one)."""
    ends = b"" in words
    branches: dict[bytes, list[bytes]] = {}
    for word in words:
        if word:
            branches.setdefault(word[:1], []).append(word[1:])
    parts = [re.escape(first) + _alternation(rest) for first, rest in sorted(branches.items())]
    if not parts:
        return b""
    if len(parts) == 1 and not ends:
        return parts[0]
    return b"(?:" + b"|".join(parts) + b")" + (b"?" if ends else b"")


def _whole_tuples_check(shape: bytes) -> Callable[[bytes], int]:
    """A test that a chunk is nothing but ``shape`` tuples joined by commas: their number, else -1."""
    tuple_re = re.compile(shape, re.DOTALL)

    def count(chunk: bytes) -> int:
        marked, n = tuple_re.subn(b"T", chunk)
        return n if n and marked == b"T" + b",T" * (n - 1) else -1

    return count


_BEFORE_TUPLE = frozenset((b",", b" ", b"\t", b"\n", b"\r"))  # what comes before a tuple: its comma, or the space after VALUES


def _next_tuple(chunk: bytes, position: int) -> int:
    """Where reading goes on after a malformed stretch at ``position``: the next tuple, or -1.

    That is the first ``(`` after a ``,`` (or a space) from which a whole tuple parses and is followed by
    ``,`` or the chunk's end: the damaged stretch costs its own tuple and no good one after
    it. (Searching for ``),(`` instead skipped the next tuple when the damage had eaten a
    ``)``, and the rest of the line when it had flipped a string open across ``),(``.) Inside
    a string such a place is all but impossible; where one occurs, it is read as a tuple,
    which the table's checks then count as bad: one row too many counted, none lost.
    """
    at = position
    while (at := chunk.find(b"(", at + 1)) >= 0:
        if chunk[at - 1 : at] in _BEFORE_TUPLE:
            parsed = parse_tuple(chunk, at)
            if parsed is not None and (parsed[1] == len(chunk) or chunk[parsed[1] : parsed[1] + 1] == b","):
                return at
    return -1


class _Table:
    """What one table's reader does with its chunks; subclasses fill in the shapes and rows."""

    name = ""
    filter_reason = ""  # what a tuple the table's reader does not want is counted as
    count_plain: Callable[[bytes], int]

    def __init__(self, report: FileReport) -> None:
        self.report = report
        self.columns: tuple[str, ...] | None = None

    def check_columns(self, columns: list[str]) -> None:
        raise NotImplementedError

    def fast_rows(self, chunk: bytes) -> list:
        """The selected tuples' groups, in order, from a chunk that passed the check."""
        raise NotImplementedError

    def fast_results(self, rows: list) -> list | None:
        """The results of the selected tuples' groups; None if one is bad (the tokenizer then names it)."""
        raise NotImplementedError

    def slow_result(self, values: list[bytes | None], line: int, index: int) -> object | None:
        raise NotImplementedError

    def chunk(self, chunk: bytes, line: int, first: int, prefilter: bool) -> tuple[list, int]:
        """(results, tuples read) of one chunk of whole tuples; ``first`` is the index of its first tuple."""
        if prefilter:
            n = self.count_plain(chunk)
            if n > 0:
                rows = self.fast_rows(chunk)
                results = self.fast_results(rows)
                if results is not None:
                    self.report.keep(len(results))
                    if n > len(rows):
                        self.report.skip(self.filter_reason, n - len(rows))
                    return results, n
        return self._tokenized(chunk, line, first)

    def _tokenized(self, chunk: bytes, line: int, first: int, unended: int | None = None) -> tuple[list, int]:
        """Tuple by tuple; ``unended``: the chunk is what the statement of that line left when it never ended."""
        results = []
        position, index, end = 0, first, len(chunk)
        while position < end:
            parsed = parse_tuple(chunk, position)
            if parsed is None:
                resync = _next_tuple(chunk, position)
                what = f"of the INSERT statement of line {unended:,} never ends" if unended is not None and resync < 0 else "of the INSERT statement is not SQL values"
                self.report.reject(line, MALFORMED_SQL, f"tuple {index} {what}: {chunk[position:position + 120]!r}")
                index += 1
                position = resync
                if position < 0:
                    break
                continue
            values, position = parsed
            result = self.slow_result(values, line, index)
            if result is not None:
                results.append(result)
            index += 1
            if position < end:
                if chunk[position : position + 1] != b",":
                    self.report.reject(line, MALFORMED_SQL, f"after tuple {index - 1}: expected ',' between tuples, found {chunk[position:position + 40]!r}")
                    position = _next_tuple(chunk, position)
                    if position < 0:
                        break
                    continue
                position += 1
        return results, index - first


class _ItemsPerSite(_Table):
    name = ITEMS_PER_SITE_TABLE
    filter_reason = OTHER_SITE

    def __init__(self, report: FileReport, selection: SitelinkFilter) -> None:
        super().__init__(report)
        self.site_to_lang = {key.encode(): lang for key, lang in selection.site_to_lang.items()}
        keys = _alternation(sorted(self.site_to_lang))
        self.count_plain = _whole_tuples_check(rb"\(\d++,\d++,'" + _PLAIN + rb"','" + _STR + rb"'\)")
        self._selected = re.compile(rb"\(\d++,(\d++),'(" + keys + rb")','(" + _STR + rb")'\)", re.DOTALL)

    def check_columns(self, columns: list[str]) -> None:
        if tuple(columns) != ITEMS_PER_SITE_COLUMNS:
            raise SqlDumpError(f"{self.report.file}: table {self.name} has the columns {', '.join(columns)}; expected {', '.join(ITEMS_PER_SITE_COLUMNS)}")
        self.columns = tuple(columns)

    def fast_rows(self, chunk: bytes) -> list:
        return self._selected.findall(chunk)

    def fast_results(self, rows: list) -> list | None:
        lang_of, new, results = self.site_to_lang, tuple.__new__, []
        append = results.append
        for item, site, title in rows:  # the hot loop: one pass, no calls but the decode
            if b"\\" in title or b"''" in title:
                title = unescape(title)
            try:
                text = title.decode()
            except UnicodeDecodeError:
                return None
            if item[0] == 48 or not text:  # b"0": item 0, or a number with leading zeros
                return None
            append(new(Sitelink, ("Q" + item.decode(), lang_of[site], text)))
        return results

    def _bad(self, item: bytes, site: bytes, what: str, line: int, index: int) -> None:
        self.report.reject(line, BAD_FIELD, f"tuple {index}: Q{item.decode()} {site.decode('utf-8', 'replace')} has {what}")

    def slow_result(self, values: list[bytes | None], line: int, index: int) -> Sitelink | None:
        if len(values) != 4 or not all(isinstance(v, bytes) for v in values) or not (values[0].isdigit() and values[1].isdigit()):
            self.report.reject(line, BAD_FIELD, f"tuple {index}: expected (row id, item id, 'site', 'title'), got {values!r:.200}")
            return None
        item, site, title = values[1], values[2], values[3]
        if site not in self.site_to_lang:
            self.report.skip(OTHER_SITE)
            return None
        try:
            text = title.decode()
        except UnicodeDecodeError as error:
            self._bad(item, site, f"a title that is not UTF-8 ({error})", line, index)
            return None
        if item[0] == 48 or not text:
            self._bad(item, site, "item id 0" if text else "no title", line, index)
            return None
        self.report.keep()
        return Sitelink("Q" + item.decode(), self.site_to_lang[site], text)


class _PageProps(_Table):
    name = PAGE_PROPS_TABLE
    filter_reason = OTHER_PROPERTY

    def __init__(self, report: FileReport) -> None:
        super().__init__(report)
        self._shape(4)  # until CREATE TABLE says otherwise: today's four columns

    def _shape(self, width: int) -> None:
        sortkey = rb",(?:NULL|" + _NUM + rb")" if width == 4 else b""
        self.width = width
        self.count_plain = _whole_tuples_check(rb"\(\d++,'" + _PLAIN + rb"','" + _STR + rb"'" + sortkey + rb"\)")
        self._selected = re.compile(rb"\((\d++),'wikibase_item','(" + _STR + rb")'" + sortkey + rb"\)", re.DOTALL)

    def check_columns(self, columns: list[str]) -> None:
        if tuple(columns[:3]) != PAGE_PROPS_COLUMNS or len(columns) > 4:
            raise SqlDumpError(f"{self.report.file}: table {self.name} has the columns {', '.join(columns)}; expected {', '.join(PAGE_PROPS_COLUMNS)}[, pp_sortkey]")
        self.columns = tuple(columns)
        self._shape(len(columns))

    def fast_rows(self, chunk: bytes) -> list:
        return self._selected.findall(chunk)

    def fast_results(self, rows: list) -> list | None:
        entity, results = _ENTITY.fullmatch, []
        append = results.append
        for page, value in rows:
            if page[0] == 48 or entity(value) is None:  # b"0": page 0, or a number with leading zeros
                return None
            append((page.decode(), value.decode()))
        return results

    def _bad(self, page: bytes, value: bytes, line: int, index: int) -> None:
        self.report.reject(line, BAD_FIELD, f"tuple {index}: page {page.decode()} has wikibase_item {value[:60]!r}, not an item id")

    def slow_result(self, values: list[bytes | None], line: int, index: int) -> tuple[str, str] | None:
        if (
            len(values) != self.width
            or not all(isinstance(v, bytes) for v in values[:3])
            or not values[0].isdigit()
            or (self.width == 4 and values[3] is not None and not re.fullmatch(_NUM, values[3]))
        ):
            self.report.reject(line, BAD_FIELD, f"tuple {index}: expected (page id, 'property', 'value'{', sortkey' if self.width == 4 else ''}), got {values!r:.200}")
            return None
        if values[1] != b"wikibase_item":
            self.report.skip(OTHER_PROPERTY)
            return None
        if values[0][0] == 48 or _ENTITY.fullmatch(values[2]) is None:
            self._bad(values[0], values[2], line, index)
            return None
        self.report.keep()
        return values[0].decode(), values[2].decode()


class _AnyTable(_Table):
    """Any table, every tuple through the tokenizer: for tables without a reader of their own."""

    def __init__(self, report: FileReport, name: str) -> None:
        super().__init__(report)
        self.name = name

    def check_columns(self, columns: list[str]) -> None:
        self.columns = tuple(columns)

    def chunk(self, chunk: bytes, line: int, first: int, prefilter: bool) -> tuple[list, int]:
        return self._tokenized(chunk, line, first)

    def slow_result(self, values: list[bytes | None], line: int, index: int) -> tuple[int, list[bytes | None]]:
        self.report.keep()
        return line, values


def _pieces(stream: IO[bytes], state: dict) -> Iterator[tuple[int, bytes, bool]]:
    """``(line number, bytes, ends its line)``: lines, or pieces of at most 4 MiB of longer ones."""
    number, whole = 0, True
    try:
        while piece := stream.readline(_PIECE):
            if whole:
                number += 1
            whole = piece.endswith(b"\n")
            yield number, piece, whole
    except STREAM_ERRORS as error:
        state["lost"] = (number + (1 if whole else 0), stream_error_kind(error), f"{type(error).__name__}: {error} (after line {number - (0 if whole else 1):,})")
    state["lines"], state["whole"] = number, whole


def _read_dump(stream: IO[bytes], table: _Table, prefilter: bool) -> Iterator:
    """Every result of the table's INSERT statements, in dump order, checking the dump's framing."""
    report = table.report
    state: dict = {}
    where = "outside"  # outside, create, insert
    columns: list[str] = []
    carry, carry_line, statement_line, index = b"", 0, 0, 0
    last = b""  # the last non-blank line outside statements
    seen_any = known = False  # known: a CREATE TABLE or INSERT has named this table

    def drain(text: bytes, line: int) -> Iterator:
        nonlocal index
        if text:
            results, n = table.chunk(text, line, index, prefilter)
            index += n
            yield from results

    def statement(text: bytes, line: int, whole: bool) -> Iterator:
        """Read a line (or piece) of an INSERT statement; leaves ``where`` at outside after its ';'."""
        nonlocal where, carry, carry_line, index
        if whole:
            stripped = text.rstrip()
            if stripped.endswith(b";"):
                yield from drain(stripped[:-1].strip(), line)
                carry, where = b"", "outside"
                return
            if stripped.endswith(b","):
                yield from drain(stripped[:-1].strip(), line)
                carry = b""
                return
        cut = _WHOLE_TUPLES.match(text).end()  # whole tuples; the rest waits for the next piece
        yield from drain(text[:cut].rstrip().rstrip(b",").strip(), line)
        carry, carry_line = text[cut:], line
        if len(carry) > _MAX_TUPLE:
            resync = carry.find(b"),(")
            report.reject(line, MALFORMED_SQL, f"tuple {index} of the INSERT statement of line {statement_line:,} never ends: {carry[:120]!r}")
            index += 1
            carry = carry[resync + 2 :] if resync >= 0 else b""

    starts_line = True  # the piece begins a line (the one before ended its own)
    for number, piece, whole in _pieces(stream, state):
        begins, starts_line = starts_line, whole
        if where == "insert" and begins and _INSERT.match(piece.lstrip()):
            # A new statement while the last one never ended: its whole tuples are read, the rest is one bad tuple,
            # and nothing is joined to this line (where it would hide this statement's first row).
            if carry.strip():
                yield from table._tokenized(carry.strip(), carry_line or statement_line, index, unended=statement_line)[0]
            else:  # every tuple read, but no ';': the framing is broken, which is said (one record)
                report.reject(statement_line, MALFORMED_SQL, f"the INSERT statement of line {statement_line:,} never ends: no ';' before line {number:,}")
            carry, where = b"", "outside"
        if where == "insert":
            yield from statement(carry + piece if carry else piece, carry_line if carry else number, whole)
            continue
        stripped = piece.strip()
        if not stripped:
            continue
        if not seen_any:
            seen_any = True
            if not stripped.startswith(_SQL_STARTS):
                raise SqlDumpError(f"{report.file}: not a mysqldump SQL file (line {number} begins {stripped[:40]!r})")
        if where == "create":
            if stripped.startswith(b")"):
                table.check_columns(columns)
                where = "outside"
            elif column := _COLUMN.match(stripped):
                columns.append(column.group(1).decode("utf-8", "replace"))
            continue
        insert = _INSERT.match(stripped)
        if insert and (not known or insert.group(1) == table.name.encode()):
            _check_table(insert.group(1), table, report, number)  # the first statement decides: a dump of another table is refused
            where, statement_line, index, carry, known = "insert", number, 1, b"", True
            yield from statement(piece.lstrip()[insert.end() :], number, whole)
            continue
        if create := _CREATE.match(stripped):
            _check_table(create.group(1), table, report, number)
            where, columns, known = "create", [], True
            continue
        if insert or stripped.startswith(b"INSERT") or not stripped.startswith(_SQL_STARTS):
            # No line mysqldump writes here: an INSERT whose head was damaged (its tuples are read on: after this table's
            # CREATE TABLE or first INSERT, an INSERT into another one is that too), or noise. One bad record.
            line = piece.lstrip()
            at = _first_tuple(line)
            what = "an INSERT statement with a damaged head; its tuples are read" if at >= 0 else "no statement of a mysqldump"
            report.reject(number, MALFORMED_SQL, f"line {number:,} is {what}: {stripped[:80]!r}")
            if at >= 0:
                where, statement_line, index, carry = "insert", number, 1, b""
                yield from statement(line[at:], number, whole)
            continue
        last = stripped

    lines = state.get("lines", 0)
    if "lost" in state:
        report.reject(*state["lost"])
    elif where == "insert":
        report.reject(lines + 1, TRUNCATED_STREAM, f"the file ends inside the INSERT statement of line {statement_line:,} (no closing ';'): it was cut short")
    elif where == "create":
        report.reject(lines + 1, TRUNCATED_STREAM, "the file ends inside its CREATE TABLE statement: it was cut short")
    elif not state.get("whole", True):
        report.reject(lines, TRUNCATED_STREAM, f"the file ends inside line {lines:,} (no final newline): it was cut short")
    elif not last.startswith(DUMP_END):
        seen = f"its last line is {last[:60]!r}" if last else "it is empty"
        report.reject(lines + 1, TRUNCATED_STREAM, f"the file does not end with mysqldump's '-- Dump completed on ...' line ({seen}): it was cut short")


def _first_tuple(text: bytes) -> int:
    """Where the first whole tuple of a line starts (a ``(`` from which one parses, followed by ``,``, ``;`` or the line's end); -1 if none."""
    at = -1
    while (at := text.find(b"(", at + 1)) >= 0:
        parsed = parse_tuple(text, at)
        if parsed is not None and text[parsed[1] : parsed[1] + 1] in (b",", b";", b"\n", b"\r", b""):
            return at
    return -1


def _check_table(found: bytes, table: _Table, report: FileReport, line: int) -> None:
    name = found.decode("utf-8", "replace")
    if name != table.name:
        raise SqlDumpError(f"{report.file}: line {line} is a dump of table `{name}`, not `{table.name}`: give the {table.name} dump here")


def read_items_per_site(stream: IO[bytes], selection: SitelinkFilter, report: FileReport) -> Iterator[Sitelink]:
    """Sitelinks of the selected Wikipedias from ``wikidatawiki-*-wb_items_per_site.sql(.gz)``, in dump order.

    Every row is counted in ``report``: kept, filtered as ``other_site`` (another
    language, a sister project, Commons) or rejected. ``selection.prefilter`` picks the
    fast path (exactly the same result; module docstring) or the tokenizer throughout.
    Raises ``SqlDumpError`` for a file of another table.
    """
    yield from _read_dump(stream, _ItemsPerSite(report, selection), selection.prefilter)


def read_page_props(stream: IO[bytes], report: FileReport, prefilter: bool = True) -> Iterator[tuple[str, str]]:
    """``(page id, item id)`` of every ``wikibase_item`` row of a ``{wiki}-*-page_props.sql(.gz)``, in dump order.

    Other properties are counted as ``other_property``. Raises ``SqlDumpError`` for a
    file of another table.
    """
    yield from _read_dump(stream, _PageProps(report), prefilter)


def read_rows(stream: IO[bytes], table: str, report: FileReport) -> Iterator[tuple[int, list[bytes | None]]]:
    """``(line, values)`` of every row of any table's mysqldump, checked like the two readers above.

    Strings come back as their bytes, ``NULL`` as None, numbers as their text.
    """
    yield from _read_dump(stream, _AnyTable(report, table), False)
