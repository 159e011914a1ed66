"""The wb_items_per_site and page_props SQL dump readers: real framing, escaping, cut files, wrong tables."""

from __future__ import annotations

import gzip
import io
import random
from pathlib import Path

import pytest
from conftest import real_fixture

from clirmatrix.pipeline.formats import mediawiki_sql
from clirmatrix.pipeline.formats.mediawiki_sql import SqlDumpError, read_items_per_site, read_page_props, read_rows
from clirmatrix.pipeline.formats.wikidata import SitelinkFilter, read_sitelinks
from clirmatrix.pipeline.io import fileio
from clirmatrix.pipeline.io.badinput import DamagedInputError, FileReport, check_bad_fraction

SQL = Path(__file__).parent / "fixtures" / "sql"
SITES = SQL / "wikidatawiki-20140420-sites.sql.gz"
ITEMS = SQL / "wikidatawiki-DERIVED-wb_items_per_site.sql.gz"

HEAD = b"/*M!999999\\- enable the sandbox mode */ \n" + b"""-- MariaDB dump 10.19  Distrib 10.5.29-MariaDB, for debian-linux-gnu (x86_64)
/*!40101 SET NAMES utf8mb4 */;
DROP TABLE IF EXISTS `wb_items_per_site`;
CREATE TABLE `wb_items_per_site` (
  `ips_row_id` bigint(20) unsigned NOT NULL AUTO_INCREMENT,
  `ips_item_id` int(10) unsigned NOT NULL,
  `ips_site_id` varbinary(32) NOT NULL,
  `ips_site_page` varbinary(310) NOT NULL,
  PRIMARY KEY (`ips_row_id`)
) ENGINE=InnoDB DEFAULT CHARSET=binary;
/*!40000 ALTER TABLE `wb_items_per_site` DISABLE KEYS */;
"""
TAIL = b"""/*!40000 ALTER TABLE `wb_items_per_site` ENABLE KEYS */;
/*!40111 SET SQL_NOTES=@OLD_SQL_NOTES */;

-- Dump completed on 2026-10-03  4:05:06
"""
PROPS_HEAD = b"""-- MariaDB dump 10.19  Distrib 10.5.29-MariaDB, for debian-linux-gnu (x86_64)
CREATE TABLE `page_props` (
  `pp_page` int(10) unsigned NOT NULL,
  `pp_propname` varbinary(60) NOT NULL DEFAULT '',
  `pp_value` blob NOT NULL,
  `pp_sortkey` float DEFAULT NULL,
  PRIMARY KEY (`pp_page`,`pp_propname`)
) ENGINE=InnoDB DEFAULT CHARSET=binary ROW_FORMAT=COMPRESSED;
"""
PROPS_TAIL = b"-- Dump completed on 2026-10-03  4:05:06\n"


def items_dump(*statements: bytes) -> bytes:
    return HEAD + b"".join(b"INSERT INTO `wb_items_per_site` VALUES " + s + b";\n" for s in statements) + TAIL


def read_items(data: bytes, langs=("en", "de", "zh-min-nan"), prefilter=True, name="wikidatawiki-20261001-wb_items_per_site.sql"):
    report = FileReport(name)
    links = list(read_items_per_site(io.BytesIO(data), SitelinkFilter(langs, prefilter), report))
    return links, report


def read_props(data: bytes, prefilter=True):
    report = FileReport("enwiki-20261001-page_props.sql")
    return list(read_page_props(io.BytesIO(data), report, prefilter)), report


def assert_accounted(report: FileReport) -> None:
    assert report.records == report.kept + sum(report.filtered.values()) + report.bad


# --- real files ---------------------------------------------------------------------------

def test_a_real_wikimedia_dump_is_read_to_its_last_row():
    report = FileReport(SITES.name)
    rows = list(read_rows(gzip.open(SITES), "sites", report))
    assert [int(values[0]) for _, values in rows] == list(range(1, 881))
    assert {len(values) for _, values in rows} == {11}
    line, first = rows[0]
    assert line == 54 and first[1:6] == [b"aawiki", b"mediawiki", b"wikipedia", b"local", b"aa"]
    assert first[8] == b'a:1:{s:5:"paths";a:2:{s:9:"file_path";s:23:"http://aa.wikipedia.org/w/$1";s:9:"page_path";s:26:"http://aa.wikipedia.org/wiki/$1";}}'
    assert rows[-1][1][1] == b"zhwikivoyage"
    assert report.records == report.kept == 880 and not report.rejected


@pytest.mark.parametrize("reader", ["items", "props"])
def test_a_dump_of_another_table_is_refused_naming_the_file_and_its_table(reader):
    stream, report = gzip.open(SITES), FileReport(SITES.name)
    with pytest.raises(SqlDumpError, match=r"^wikidatawiki-20140420-sites.sql.gz: line 25 is a dump of table `sites`, not `(wb_items_per_site|page_props)`"):
        list(read_items_per_site(stream, SitelinkFilter(["en"]), report) if reader == "items" else read_page_props(stream, report))


def test_a_file_that_is_no_sql_dump_is_refused():
    with pytest.raises(SqlDumpError, match=r"^x.sql: not a mysqldump SQL file \(line 1 begins b'\[{\"type\":"):
        list(read_items_per_site(io.BytesIO(b'[{"type":"item"}]\n'), SitelinkFilter(["en"]), FileReport("x.sql")))


def test_the_derived_dump_gives_exactly_the_sitelinks_of_the_real_entities_in_json():
    json_lines = gzip.decompress(real_fixture("wikidata", "latest-all.DERIVED-sample.json.gz").read_bytes()).splitlines(keepends=True)
    for langs in (["en"], ["en", "de", "fr", "ru", "ar", "zh", "ja"], ["fi", "be-x-old", "zh-min-nan", "qu", "cy"]):
        from_json = list(read_sitelinks(enumerate(json_lines, start=1), SitelinkFilter(langs), FileReport("json")))
        for prefilter in (True, False):
            report = FileReport(ITEMS.name)
            assert list(read_items_per_site(gzip.open(ITEMS), SitelinkFilter(langs, prefilter), report)) == from_json
            assert report.records == 426 and report.kept == len(from_json) and not report.rejected
            assert report.filtered["other_site"] == 426 - len(from_json)


def test_real_titles_with_quotes_commas_and_parentheses():
    links, report = read_items(gzip.decompress(ITEMS.read_bytes()), ["qu", "ru", "ceb"])
    titles = {(link.entity, link.lang): link.title for link in links}
    assert titles[("Q1", "qu")] == "Ch'askancha"
    assert titles[("Q42", "ru")] == "Адамс, Дуглас"
    assert titles[("Q1040", "ceb")] == "Karlsruhe (kapital sa distrito nga gobyerno)"


# --- cut files ------------------------------------------------------------------------------

@pytest.mark.parametrize("keep", [0.02, 0.5, 0.9995, "without-trailer", "without-last-newline"])
def test_a_cut_dump_is_a_truncated_stream_and_fails_the_run(keep):
    text = gzip.decompress(ITEMS.read_bytes())
    if keep == "without-trailer":
        cut = text[: text.index(b"/*!40000 ALTER TABLE `wb_items_per_site` ENABLE KEYS")]
    elif keep == "without-last-newline":
        cut = text[:-1]
    else:
        cut = text[: int(len(text) * keep)]
    links, report = read_items(cut, ["en"], name=ITEMS.name)
    assert report.rejected == {"truncated_stream": 1}
    with pytest.raises(DamagedInputError, match=rf"{ITEMS.name}: truncated_stream at line \d+.*cut short"):
        check_bad_fraction({"wikidata": [report]}, 0.5)


def test_a_cut_gzip_stream_is_a_truncated_stream(tmp_path):
    path = tmp_path / ITEMS.name
    path.write_bytes(ITEMS.read_bytes()[:-300])
    report = FileReport(path.name)
    with fileio.open_dump(open(path, "rb"), str(path)) as stream:
        list(read_items_per_site(stream, SitelinkFilter(["en"]), report))
    assert report.rejected == {"truncated_stream": 1}
    assert report.examples[-1]["detail"].startswith("EOFError")


def test_a_statement_cut_inside_a_tuple_keeps_the_rows_before_and_names_the_statement():
    data = HEAD + b"INSERT INTO `wb_items_per_site` VALUES (1,1,'enwiki','Universe'),(2,42,'enwiki','Douglas Ad"
    links, report = read_items(data)
    assert links == [("Q1", "en", "Universe")]
    assert report.examples == [
        {"line": 14, "kind": "truncated_stream", "detail": "the file ends inside the INSERT statement of line 13 (no closing ';'): it was cut short"}
    ]


# --- escaping and values --------------------------------------------------------------------

TRICKY = [
    (rb"Rock \'n\' Roll", "Rock 'n' Roll"),
    (rb"C:\\Windows\\", "C:\\Windows\\"),
    (rb"two\nlines\r\n", "two\nlines\r\n"),
    (rb"nul\0 and ctrl-z\Z", "nul\0 and ctrl-z\x1a"),
    (rb"\"Weird Al\" Yankovic: The Videos", '"Weird Al" Yankovic: The Videos'),
    (rb"tab\there", "tab\there"),
    (rb"Smith, John (born 1950)", "Smith, John (born 1950)"),
    (rb"A),(b", "A),(b"),
    (rb"x\'),(9,9,\'enwiki\',\'fake\')", "x'),(9,9,'enwiki','fake')"),
    (rb"NULL", "NULL"),
    (rb"it''s", "it's"),
    (rb"100\% \_", "100\\% \\_"),
    ("Łódź 東京".encode(), "Łódź 東京"),
]


@pytest.mark.parametrize("prefilter", [True, False])
def test_mysqldump_escapes_are_read_back(prefilter):
    body = b",".join(b"(%d,%d,'enwiki','%s')" % (n, n, raw) for n, (raw, _) in enumerate(TRICKY, start=1))
    links, report = read_items(items_dump(body + b",(99,99,'dewikiquote','x'),(100,100,'zh_min_nanwiki','y')"), prefilter=prefilter)
    assert [link.title for link in links] == [text for _, text in TRICKY] + ["y"]
    assert [link.entity for link in links] == [f"Q{n}" for n in range(1, len(TRICKY) + 1)] + ["Q100"]
    assert report.kept == len(TRICKY) + 1 and report.filtered == {"other_site": 1} and not report.rejected


def test_values_of_any_table_nulls_numbers_binary_and_hex():
    data = HEAD.replace(b"wb_items_per_site", b"t") + b"INSERT INTO `t` VALUES (1,NULL,-2.5e3,'a\\\\b',_binary 'x\\0',0x4869,'NULL',''),(2,0,.5,'',NULL,0x,'(',')');\n" + TAIL
    rows = [values for _, values in read_rows(io.BytesIO(data), "t", FileReport("t"))]
    assert rows == [[b"1", None, b"-2.5e3", b"a\\b", b"x\0", b"Hi", b"NULL", b""], [b"2", b"0", b".5", b"", None, b"", b"(", b")"]]


# --- bad tuples -----------------------------------------------------------------------------

@pytest.mark.parametrize("prefilter", [True, False])
def test_each_bad_tuple_costs_one_row_and_names_its_line_and_index(prefilter):
    data = items_dump(
        b"(1,1,'enwiki','Universe'),(2,2,'enwiki,'broken'),(3,3,'enwiki','After'),(4,4,'enwiki',NULL),(5,5,'enwiki','\xff\xfe'),(6,0,'enwiki','Zero'),(7,7,'dewiki','')",
        b"(8,8,'enwiki','Next statement')",
    )
    links, report = read_items(data, prefilter=prefilter)
    assert [link.title for link in links] == ["Universe", "After", "Next statement"]
    assert report.records == 8 and report.kept == 3 and report.bad == 5
    assert [(e["line"], e["kind"]) for e in report.examples] == [(13, "malformed_sql"), (13, "bad_field"), (13, "bad_field"), (13, "bad_field"), (13, "bad_field")]
    assert report.examples[0]["detail"].startswith("tuple 2 of the INSERT statement is not SQL values: b\"(2,2,'enwiki,'broken')")
    assert "tuple 4: expected (row id, item id, 'site', 'title'), got [b'4', b'4', b'enwiki', None]" in report.examples[1]["detail"]
    assert [kind for kind in ("not UTF-8", "item id 0", "no title") if any(kind in e["detail"] for e in report.examples)] == ["not UTF-8", "item id 0", "no title"]
    assert_accounted(report)


@pytest.mark.parametrize("prefilter", [True, False])
def test_a_statement_that_never_ends_costs_one_row_not_the_next_statements_first(prefilter):
    """A line that opens an INSERT and breaks off: one bad tuple, named; the next statement's rows are all read."""
    data = HEAD + b"INSERT INTO `wb_items_per_site` VALUES (1,2,GARBAGE\n" + items_dump(b"(1501,2540,'enwiki','Tedo Stagucu'),(1502,2541,'enwiki','After')")[len(HEAD):]
    links, report = read_items(data, prefilter=prefilter)
    assert [link.title for link in links] == ["Tedo Stagucu", "After"]
    assert report.bad == 1 and report.kept == 2 and [(e["line"], e["kind"]) for e in report.examples] == [(13, "malformed_sql")]
    assert report.examples[0]["detail"] == "tuple 1 of the INSERT statement of line 13 never ends: b'(1,2,GARBAGE'"
    assert_accounted(report)


def _tuples(text: bytes) -> list[tuple[int, int, bytes]]:
    """(start, end, title) of every tuple of a clean dump's text: where it lies, and which row it is."""
    found, at = [], 0
    for line in text.split(b"\n"):
        if line.startswith(b"INSERT"):
            position = line.index(b"(")
            while line[position : position + 1] == b"(":
                values, end = mediawiki_sql.parse_tuple(line, position)
                found.append((at + position, at + end, values[3]))
                position = end + 1
        at += len(line) + 1
    return found


@pytest.mark.parametrize("seed", range(6))
def test_damage_anywhere_in_a_line_costs_the_rows_it_touches_and_no_other(seed):
    """bench/fuzz_sql.py in small: a statement cut, noise inserted (anywhere, in its head, after its ';'), a ')' or a quote
    dropped. Every row whose bytes the damage did not touch is read, with the full parse and the pre-filter alike."""
    rng = random.Random(seed)
    words = ["Paris", "Smith, John", "A),(b", "L\\'Aquila", "(film)", "C:\\\\x", "it''s", "Łódź"]
    rows = [b"(%d,%d,'enwiki','%s %d')" % (n, n, rng.choice(words).encode(), n) for n in range(1, 301)]
    text = items_dump(*(b",".join(rows[i : i + 25]) for i in range(0, 300, 25)))
    spans = _tuples(text)
    for mutation in ("truncate-line", "garbage", "head", "after-end", "drop-paren", "drop-quote"):
        start, end, _ = spans[victim := rng.randrange(len(spans))]
        line_start, line_end = text.rindex(b"\n", 0, start) + 1, text.index(b"\n", start)
        noise = bytes(rng.choice(b"xZ09 ',();\\") for _ in range(rng.randint(1, 12)))
        touched = {victim}
        if mutation == "truncate-line":
            at = rng.randrange(start + 1, end)
            damaged, touched = text[:at] + text[line_end:], {i for i, span in enumerate(spans) if victim <= i and span[0] < line_end}
        elif mutation == "drop-paren":
            damaged = text[: end - 1] + text[end:]
        elif mutation == "drop-quote":
            at = start + rng.choice([i for i, byte in enumerate(text[start:end]) if byte == ord("'")])
            damaged = text[:at] + text[at + 1 :]
        else:
            at = {"garbage": rng.randrange(line_start, line_end), "head": rng.randrange(line_start, text.index(b"(", line_start)), "after-end": line_end}[mutation]
            damaged, touched = text[:at] + noise + text[at:], {i for i, span in enumerate(spans) if span[0] <= at <= span[1]}
        untouched = {title.decode() for i, (_, _, title) in enumerate(spans) if i not in touched}
        for prefilter in (True, False):
            links, report = read_items(damaged, ["en"], prefilter=prefilter)
            assert untouched <= {link.title for link in links}, (mutation, prefilter, sorted(untouched - {link.title for link in links})[:3])
            if mutation != "truncate-line":  # a row gone is counted: bad, or filtered (noise in its site key)
                assert len(links) + report.bad + sum(report.filtered.values()) >= len(spans), (mutation, report.examples)
            assert_accounted(report)


def test_a_column_list_of_another_shape_is_refused():
    data = items_dump(b"(1,1,'enwiki','x')").replace(b"  `ips_site_page` varbinary(310) NOT NULL,\n", b"")
    with pytest.raises(SqlDumpError, match=r"has the columns ips_row_id, ips_item_id, ips_site_id; expected ips_row_id, ips_item_id, ips_site_id, ips_site_page"):
        read_items(data)


# --- layouts ----------------------------------------------------------------------------------

def test_long_lines_read_in_small_pieces_and_one_tuple_per_line_give_the_same_rows(monkeypatch):
    text = gzip.decompress(ITEMS.read_bytes())
    whole, whole_report = read_items(text, ["en", "de", "ru", "qu", "cy"])
    monkeypatch.setattr(mediawiki_sql, "_PIECE", 97)  # every line cut into 97-byte pieces, mid-tuple
    pieces, pieces_report = read_items(text, ["en", "de", "ru", "qu", "cy"])
    monkeypatch.undo()
    one_per_line = text.replace(b"VALUES (", b"VALUES\n(").replace(b"'),(", b"'),\n(")
    lines, lines_report = read_items(one_per_line, ["en", "de", "ru", "qu", "cy"])
    assert whole == pieces == lines and len(whole) == 17
    assert whole_report.to_dict() == pieces_report.to_dict() == lines_report.to_dict()


# --- the pre-filter ---------------------------------------------------------------------------

def _random_dump(rng: random.Random, rows: int) -> bytes:
    """Rows of every shape the pre-filter must not misjudge: quotes that spell tuples, escaped site keys, broken tuples.

    Half the statements are clean mysqldump output (the pre-filter's fast path takes
    them); the other half also hold escaped site keys and broken tuples.
    """
    plain_sites = ["enwiki", "dewiki", "enwikiquote", "commonswiki", "zh_min_nanwiki", "xwiki"]
    odd_sites = ["en\\wiki", "d''ewiki", "en\\'wiki"]
    pieces = ["a", "'", "\\", ",", "(", ")", "),(", "enwiki", "','", "\n", "\0", "é", ";", "NULL", '"', "''", "(1,2,'enwiki','x')"]
    statements = []
    for number in range(4):
        clean = number % 2 == 0
        tuples = []
        for row in range(1, rows // 4 + 1):
            title = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 6)))
            raw = title.encode().replace(b"\\", b"\\\\").replace(b"'", b"\\'").replace(b"\n", b"\\n").replace(b"\0", b"\\0")
            if rng.random() < 0.1:
                raw = raw.replace(b"\\'", b"''")  # the other way SQL writes a quote
            site = rng.choice(plain_sites if clean or rng.random() < 0.8 else odd_sites).encode()
            value = b"(%d,%d,'%s','%s')" % (row, rng.randint(0, 50), site, raw)
            if not clean and rng.random() < 0.03:
                value = rng.choice([value[:-1], value.replace(b"','", b"',", 1), b"(%d,NULL,'enwiki','x')" % row, value + b"x"])
            tuples.append(value)
        statements.append(b",".join(tuples))
    return items_dump(*statements)


@pytest.mark.parametrize("seed", range(12))
def test_prefilter_gives_exactly_the_full_parse(seed, monkeypatch):
    data = _random_dump(random.Random(seed), 400)
    fast_chunks = []
    check = mediawiki_sql._whole_tuples_check

    def counted(shape):  # records which chunks took the fast path, so that it surely ran
        count = check(shape)
        return lambda chunk: fast_chunks.append(count(chunk)) or fast_chunks[-1]

    monkeypatch.setattr(mediawiki_sql, "_whole_tuples_check", counted)
    for langs in (["en"], ["en", "de", "zh-min-nan"]):
        fast, fast_report = read_items(data, langs, prefilter=True)
        slow, slow_report = read_items(data, langs, prefilter=False)
        assert fast == slow and fast_report.to_dict() == slow_report.to_dict()
        assert fast and fast_report.filtered["other_site"]
        assert_accounted(fast_report)
    assert sorted(n > 0 for n in fast_chunks) == [False, False, False, False, True, True, True, True]


def test_prefilter_sees_a_site_key_written_with_escapes():
    data = items_dump(b"(1,1,'en\\wiki','Escaped key'),(2,2,'enwiki','Plain')")
    for prefilter in (True, False):
        assert [link.title for link in read_items(data, ["en"], prefilter=prefilter)[0]] == ["Escaped key", "Plain"]


# --- page_props -------------------------------------------------------------------------------

@pytest.mark.parametrize("prefilter", [True, False])
def test_page_props_gives_each_page_its_item_and_counts_the_rest(prefilter):
    data = PROPS_HEAD + (
        b"INSERT INTO `page_props` VALUES (1,'wikibase_item','Q41567',NULL),(1,'defaultsort','Hamlet, Prince',NULL),"
        b"(2,'wikibase-shortdesc','Play by \\'Shakespeare\\'',NULL),(2,'wikibase_item','Q2',NULL),(3,'page_image_free','x.jpg',1.5),"
        b"(4,'wikibase_item','Q1\\'bad',NULL),(5,'wikibase_item','Q1049864',-2),(6,'displaytitle','(7,\\'wikibase_item\\',\\'Q9\\',NULL)',NULL);\n"
    ) + PROPS_TAIL
    pairs, report = read_props(data, prefilter)
    assert pairs == [("1", "Q41567"), ("2", "Q2"), ("5", "Q1049864")]
    assert report.records == 8 and report.kept == 3 and report.filtered == {"other_property": 4} and report.rejected == {"bad_field": 1}
    assert "page 4 has wikibase_item b\"Q1'bad\", not an item id" in report.examples[0]["detail"]


def test_page_props_of_the_three_column_years():
    data = PROPS_HEAD.replace(b"  `pp_sortkey` float DEFAULT NULL,\n", b"") + b"INSERT INTO `page_props` VALUES (305,'defaultsort','Achilles'),(307,'wikibase_item','Q91');\n" + PROPS_TAIL
    for prefilter in (True, False):
        pairs, report = read_props(data, prefilter)
        assert pairs == [("307", "Q91")] and report.records == 2 and not report.rejected


@pytest.mark.parametrize("seed", range(4))
def test_page_props_prefilter_gives_exactly_the_full_parse(seed):
    rng = random.Random(seed)
    props = [b"wikibase_item", b"defaultsort", b"wikibase\\_item", b"wikibase_itemx"]
    values = [b"Q1", b"Q42", b"Q0", b"Q\\42", b"wikibase_item", b"(9,\\'wikibase_item\\',\\'Q5\\',NULL)", b"it''s"]
    tuples = [b"(%d,'%s','%s',%s)" % (n, rng.choice(props), rng.choice(values), rng.choice([b"NULL", b"1", b"-0.5e2", b"'x'"])) for n in range(1, 200)]
    data = PROPS_HEAD + b"INSERT INTO `page_props` VALUES " + b",".join(tuples) + b";\n" + PROPS_TAIL
    fast, fast_report = read_props(data, True)
    slow, slow_report = read_props(data, False)
    assert fast == slow and fast_report.to_dict() == slow_report.to_dict() and fast
