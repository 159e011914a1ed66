"""``html_to_text`` in one pass over a Parsoid page's bytes, with no tree built; or a refusal.

Why by hand: the text CirrusSearch indexes needs, of the whole HTML5 parse, only which
text lies inside a removed element (docs/method.md, "Text from HTML"). A page that
Parsoid serialized from its own DOM is well formed (every element closed, a doctype, the
document's skeleton), and on well-formed markup that is the nesting of the tags. lexbor
builds the whole tree (9-10 ms a MB); this scan reads a page in ~4 ms a MB
(docs/benchmarks.md, 2026-11-26, sixth session).

The scan follows the HTML5 tokenizer (tags, attributes, comments, raw text, character
references) and checks, at every tag, that no rule of the tree construction could move
an element away from where its tags put it: foster parenting out of tables, a ``<p>``
closed by a block, a list item closed by the next, nested ``<a>``, ``<form>`` and
``<button>``, HTML inside SVG or MathML, omitted end tags, anything before or after the
body. Wherever one could, or where it meets anything rarer (an entity other than the
six Parsoid writes, a ``<select>``, a control character), it refuses and
``html_text`` parses the page with lexbor as before: the text is the same either way
(tests/test_html_scan.py compares both on real pages and on generated tag soup).
"""

from __future__ import annotations

import numba
import numpy as np

# Why a page was refused (the negative return value of _scan), for the benchmark's counts.
REFUSALS: dict[int, str] = {
    1: "not a whole document (doctype, html, head, body)",
    2: "a control byte (NUL, VT, FF)",
    3: "a character reference other than the common ones",
    4: "unusual markup (bogus comment, CDATA, EOF in a tag)",
    5: "a tag handled apart (select, template, noscript, upper case, self-closed)",
    6: "unbalanced tags",
    7: "a tree-construction rule would move an element",
    8: "an entity in a class or rel attribute",
}
_NOT_DOCUMENT, _CONTROL, _ENTITY, _MARKUP, _TAG, _NESTING, _TREE, _ATTRIBUTE = range(1, 9)

# --- tag names: an open-addressed table from the name's first 16 bytes to (id, flags) ----------

_VOID = 1 << 0
_BLOCK = 1 << 1  # RemexStripTagHandler's block-level tags: a space at each (html_text.BLOCK_TAGS)
_REMOVED = 1 << 2  # an excluded or auxiliary selector that is a tag name
_RAWTEXT = 1 << 3  # style, script: their content is text up to their end tag
_REFUSE = 1 << 4  # parsed by rules of their own: left to lexbor
_CLOSES_P = 1 << 5  # a start tag that closes an open <p>
_HEADING = 1 << 6
_BREAKOUT = 1 << 7  # leaves SVG or MathML content

# Ids of the tags whose rules the scan checks one by one.
(_OTHER, _HTML, _HEAD, _BODY, _TITLE, _P, _A, _FORM, _BUTTON, _LI, _DD_DT, _LIST, _DL, _TABLE, _SECTION_ROW,
 _TR, _CELL, _CAPTION, _COLGROUP, _COL, _SUP, _FOREIGN_ROOT, _RUBY_PART, _IMPLIED_END, _STYLE, _SCRIPT,
 _HEAD_VOID, _MATH_TEXT) = range(28)  # fmt: skip
_ID_COUNT = 28

_BLOCK_NAMES = (
    "address", "article", "aside", "blockquote", "br", "canvas", "dd", "div", "dl", "dt",
    "fieldset", "figcaption", "figure", "footer", "form", "h1", "h2", "h3", "h4", "h5", "h6",
    "header", "hgroup", "hr", "li", "main", "nav", "noscript", "ol", "output", "p", "pre",
    "section", "table", "td", "tfoot", "th", "tr", "ul", "video",
)  # fmt: skip
_VOID_NAMES = ("area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source", "track", "wbr")
_REMOVED_NAMES = ("audio", "video", "style", "script", "h1", "h2", "h3", "h4", "h5", "h6", "table", "figcaption")
_REFUSED_NAMES = (
    "select", "option", "optgroup", "datalist", "textarea", "xmp", "iframe", "noembed", "noframes", "noscript",
    "plaintext", "template", "frameset", "frame", "image", "isindex", "keygen", "basefont", "bgsound", "listing",
    "menuitem", "nobr", "search", "selectedcontent",
)  # fmt: skip
_CLOSES_P_NAMES = (
    "address", "article", "aside", "blockquote", "center", "details", "dialog", "dir", "div", "dl", "fieldset",
    "figcaption", "figure", "footer", "header", "hgroup", "main", "menu", "nav", "ol", "p", "section", "summary",
    "ul", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "form", "table", "hr", "li", "dd", "dt",
)  # fmt: skip
_BREAKOUT_NAMES = (
    "b", "big", "blockquote", "body", "br", "center", "code", "dd", "div", "dl", "dt", "em", "embed", "h1", "h2",
    "h3", "h4", "h5", "h6", "head", "hr", "i", "img", "li", "listing", "menu", "meta", "nobr", "ol", "p", "pre",
    "ruby", "s", "small", "span", "strong", "strike", "sub", "sup", "table", "tt", "u", "ul", "var", "font",
    # integration points, whose content is HTML again:
    "foreignobject", "desc", "annotation-xml",
)  # fmt: skip
_IDS = {
    "html": _HTML, "head": _HEAD, "body": _BODY, "title": _TITLE, "p": _P, "a": _A, "form": _FORM,
    "button": _BUTTON, "li": _LI, "dd": _DD_DT, "dt": _DD_DT, "ul": _LIST, "ol": _LIST, "menu": _LIST,
    "dl": _DL, "table": _TABLE, "tbody": _SECTION_ROW, "thead": _SECTION_ROW, "tfoot": _SECTION_ROW, "tr": _TR,
    "td": _CELL, "th": _CELL, "caption": _CAPTION, "colgroup": _COLGROUP, "col": _COL, "sup": _SUP,
    "svg": _FOREIGN_ROOT, "math": _FOREIGN_ROOT, "rb": _RUBY_PART, "rp": _RUBY_PART, "rt": _RUBY_PART,
    "rtc": _RUBY_PART, "style": _STYLE, "script": _SCRIPT, "link": _HEAD_VOID, "meta": _HEAD_VOID,
    "mi": _MATH_TEXT, "mo": _MATH_TEXT, "mn": _MATH_TEXT, "ms": _MATH_TEXT, "mtext": _MATH_TEXT,
}  # fmt: skip
# Elements that "generate implied end tags" closes: a ruby part started under one of them moves.
_IMPLIED_END_NAMES = ("dd", "dt", "li", "optgroup", "option", "p", "rb", "rp", "rt", "rtc")

# Class names that remove their element (html_text's selectors); "reference" only on <sup>.
_REMOVED_CLASSES = (
    "mw-cite-backlink", "mw-editsection", "autocollapse", "navigation-not-searchable",
    "wbmi-entityview-emptyCaption", "thumbcaption", "rellink", "dablink", "searchaux",
)  # fmt: skip
_SUP_CLASS = "reference"
_REMOVED_REL = "mw:referencedBy"
_TABLE_SLOTS = 1024


def _name_key(name: bytes) -> tuple[int, int]:
    """The first 16 bytes of a name as two little-endian integers (zero padded), as _scan reads them."""
    padded = name.ljust(16, b"\0")
    return int.from_bytes(padded[:8], "little", signed=True), int.from_bytes(padded[8:16], "little", signed=True)


def _build_tag_table() -> tuple[np.ndarray, np.ndarray]:
    """Keys (first 8 bytes, next 8, length), ids and flags of the known tag names, open-addressed."""
    flags: dict[str, int] = {}
    for names, flag in (
        (_BLOCK_NAMES, _BLOCK), (_VOID_NAMES, _VOID), (_REMOVED_NAMES, _REMOVED), (_REFUSED_NAMES, _REFUSE),
        (_CLOSES_P_NAMES, _CLOSES_P), (("h1", "h2", "h3", "h4", "h5", "h6"), _HEADING), (_BREAKOUT_NAMES, _BREAKOUT),
        (("style", "script"), _RAWTEXT),
    ):  # fmt: skip
        for name in names:
            flags[name] = flags.get(name, 0) | flag
    for name in (*_IDS, *_IMPLIED_END_NAMES, "svg", "math"):
        flags.setdefault(name, 0)
    keys = np.zeros((_TABLE_SLOTS, 3), np.int64)
    values = np.zeros((_TABLE_SLOTS, 2), np.int64)
    for name, flag in flags.items():
        k1, k2 = _name_key(name.encode())
        slot = _slot(k1, k2, len(name))
        while keys[slot, 2]:
            slot = (slot + 1) % _TABLE_SLOTS
        keys[slot] = (k1, k2, len(name))
        tag_id = _IDS.get(name, _IMPLIED_END if name in _IMPLIED_END_NAMES else _OTHER)
        values[slot] = (tag_id, flag)
    return keys, values


@numba.njit(cache=True, inline="always")
def _slot(k1, k2, length):
    mixed = (k1 * np.int64(-7046029254386353131)) ^ (k2 * np.int64(-4658895280553007687)) ^ length
    return (mixed >> 20) & (_TABLE_SLOTS - 1)


def _words(names: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Names as one byte array and their offsets (numba reads them without Python objects)."""
    encoded = [name.encode() for name in names]
    offsets = np.cumsum([0] + [len(name) for name in encoded]).astype(np.int64)
    return np.frombuffer(b"".join(encoded), np.uint8).copy(), offsets


_TAG_KEYS, _TAG_VALUES = _build_tag_table()
_CLASS_BYTES, _CLASS_OFFSETS = _words((*_REMOVED_CLASSES, _SUP_CLASS))
_REL_BYTES = np.frombuffer(_REMOVED_REL.encode(), np.uint8).copy()
_DOCTYPE = np.frombuffer(b"<!doctype html>", np.uint8).copy()  # as Parsoid writes it; without one, quirks mode
_CLASS = np.frombuffer(b"class", np.uint8).copy()
_REL = np.frombuffer(b"rel", np.uint8).copy()

# --- the scan -----------------------------------------------------------------------------------------


@numba.njit(cache=True, inline="always")
def _is_space(b):
    """The tokenizer's whitespace (tab, LF, CR, space; FF is refused before)."""
    return b == 32 or b == 10 or b == 9 or b == 13


@numba.njit(cache=True, inline="always")
def _top_id(ids, depth):
    """The id of the current node (the body's when no element is open)."""
    return ids[depth - 1] if depth else _BODY


@numba.njit(cache=True, inline="always")
def _fosters(top_id):
    """Whether text or an element put directly in this node is moved before its table (foster parenting)."""
    return top_id == _TABLE or top_id == _SECTION_ROW or top_id == _TR or top_id == _COLGROUP


@numba.njit(cache=True)
def _lookup(src, start, length, keys, values):
    """(id, flags) of the lower-cased name at ``src[start:start+length]``; (0, 0) if unknown or longer than 16."""
    if length > 16:
        return 0, 0
    k1 = np.int64(0)
    k2 = np.int64(0)
    for j in range(length):
        b = np.int64(src[start + j])
        if 65 <= b <= 90:
            b += 32
        if j < 8:
            k1 |= b << (8 * j)
        else:
            k2 |= b << (8 * (j - 8))
    slot = _slot(k1, k2, length)
    while keys[slot, 2]:
        if keys[slot, 0] == k1 and keys[slot, 1] == k2 and keys[slot, 2] == length:
            return values[slot, 0], values[slot, 1]
        slot = (slot + 1) & (_TABLE_SLOTS - 1)
    return 0, 0


@numba.njit(cache=True)
def _same_name(src, a, b, length):
    """Whether the names at ``a`` and ``b`` (both ``length`` bytes) are equal, ASCII case ignored."""
    for j in range(length):
        x = src[a + j]
        y = src[b + j]
        if 65 <= x <= 90:
            x += 32
        if 65 <= y <= 90:
            y += 32
        if x != y:
            return False
    return True


@numba.njit(cache=True, inline="always")
def _is_word(src, start, length, word):
    """Whether ``src[start:start+length]`` is the lower-case ``word``, ASCII case ignored."""
    if length != word.shape[0]:
        return False
    for j in range(length):
        if src[start + j] | 32 != word[j]:
            return False
    return True


@numba.njit(cache=True)
def _class_hits(src, start, end, words, offsets):
    """Bit i set when the class list ``src[start:end]`` holds ``words``' i-th name (whitespace separated, case kept)."""
    hits = 0
    i = start
    while i < end:
        while i < end and _is_space(src[i]):
            i += 1
        token = i
        while i < end and not _is_space(src[i]):
            i += 1
        length = i - token
        if length == 0:
            continue
        for w in range(offsets.shape[0] - 1):
            if offsets[w + 1] - offsets[w] != length:
                continue
            same = True
            for j in range(length):
                if src[token + j] != words[offsets[w] + j]:
                    same = False
                    break
            if same:
                hits |= 1 << w
    return hits


@numba.njit(cache=True)
def put_char(out, n, code):
    """Write code point ``code`` as UTF-8 at ``out[n]``; the new length."""
    if code < 0x80:
        out[n] = code
        return n + 1
    if code < 0x800:
        out[n] = 0xC0 | (code >> 6)
        out[n + 1] = 0x80 | (code & 0x3F)
        return n + 2
    if code < 0x10000:
        out[n] = 0xE0 | (code >> 12)
        out[n + 1] = 0x80 | ((code >> 6) & 0x3F)
        out[n + 2] = 0x80 | (code & 0x3F)
        return n + 3
    out[n] = 0xF0 | (code >> 18)
    out[n + 1] = 0x80 | ((code >> 12) & 0x3F)
    out[n + 2] = 0x80 | ((code >> 6) & 0x3F)
    out[n + 3] = 0x80 | (code & 0x3F)
    return n + 4


@numba.njit(cache=True)
def _reference(src, i, end):
    """The code point of the character reference at ``src[i] == '&'`` and the index after it.

    (-1, i + 1) for a bare "&" (a literal one); (-2, i) for a reference the scan leaves to
    lexbor: named ones other than amp, lt, gt, quot, apos and nbsp, any without ";", and
    numbers that the parser maps or that are controls.
    """
    j = i + 1
    if j >= end:
        return -1, j
    b = src[j]
    if b == 35:  # "#"
        j += 1
        hexadecimal = j < end and (src[j] == 120 or src[j] == 88)
        if hexadecimal:
            j += 1
        code = 0
        digits = 0
        while j < end and digits < 8:
            d = src[j]
            if 48 <= d <= 57:
                value = d - 48
            elif hexadecimal and 97 <= (d | 32) <= 102:
                value = (d | 32) - 87
            else:
                break
            code = code * (16 if hexadecimal else 10) + value
            digits += 1
            j += 1
        if digits == 0 or j >= end or src[j] != 59:
            return -2, i
        ok = (
            code == 9 or code == 10 or code == 13 or 0x20 <= code <= 0x7E or 0xA0 <= code <= 0xD7FF
            or 0xE000 <= code <= 0xFDCF or 0xFDF0 <= code <= 0x10FFFF
        )  # fmt: skip
        if not ok or (code & 0xFFFE) == 0xFFFE:
            return -2, i
        return code, j + 1
    if not (48 <= b <= 57 or 97 <= (b | 32) <= 122):
        return -1, j
    k = j
    while k < end and k - j < 5 and (48 <= src[k] <= 57 or 97 <= (src[k] | 32) <= 122):
        k += 1
    if k >= end or src[k] != 59:
        return -2, i
    length = k - j
    c0 = src[j]
    if length == 3 and c0 == 97 and src[j + 1] == 109 and src[j + 2] == 112:  # amp
        return 38, k + 1
    if length == 2 and src[j + 1] == 116 and (c0 == 108 or c0 == 103):  # lt, gt
        return 60 if c0 == 108 else 62, k + 1
    if length == 4 and c0 == 113 and src[j + 1] == 117 and src[j + 2] == 111 and src[j + 3] == 116:  # quot
        return 34, k + 1
    if length == 4 and c0 == 97 and src[j + 1] == 112 and src[j + 2] == 111 and src[j + 3] == 115:  # apos
        return 39, k + 1
    if length == 4 and c0 == 110 and src[j + 1] == 98 and src[j + 2] == 115 and src[j + 3] == 112:  # nbsp
        return 0xA0, k + 1
    return -2, i


@numba.njit(cache=True)
def _skip_comment(src, i, end):
    """The index after the comment starting at ``src[i:i+4] == '<!--'``, or -1 for one lexbor reads otherwise."""
    j = i + 4
    if j < end and (src[j] == 62 or (src[j] == 45 and j + 1 < end and src[j + 1] == 62)):
        return -1  # "<!-->" and "<!--->"
    while j + 2 < end:
        if src[j] == 45 and src[j + 1] == 45:
            if src[j + 2] == 62:
                return j + 3
            if src[j + 2] == 33:  # "--!>" also ends a comment
                return -1
        j += 1
    return -1


@numba.njit(cache=True)
def _raw_text_end(src, i, end, name, length, script):
    """The index of the ``</name`` that ends raw text starting at ``i``, or -1 (none, or a script with "<!--")."""
    j = i
    while j + 1 < end:
        if src[j] == 60:
            if src[j + 1] == 47 and j + 2 + length < end and _same_name(src, j + 2, name, length):
                after = src[j + 2 + length]
                if _is_space(after) or after == 47 or after == 62:
                    return j
            elif script and src[j + 1] == 33:
                return -1
        j += 1
    return -1


@numba.njit(cache=True)
def _scan(src, out, keys, values, class_words, class_offsets, rel):  # noqa: C901 - one pass, one loop
    """The collapsed text of a whole Parsoid document as html_text.html_to_text gives it, written to ``out``.

    Returns its length in bytes, or minus a REFUSALS code.
    """
    end = src.shape[0]
    depth_limit = 512
    names = np.zeros(depth_limit, np.int64)  # where each open element's name starts in src
    lengths = np.zeros(depth_limit, np.int64)
    ids = np.zeros(depth_limit, np.int64)
    tag_flags = np.zeros(depth_limit, np.int64)
    removed = np.zeros(depth_limit, np.bool_)
    foreign = np.zeros(depth_limit, np.bool_)
    depth = 0
    removed_open = 0
    open_of = np.zeros(_ID_COUNT, np.int64)  # open elements by tag id (<p>, <a>, <form>, <button> are read)
    # 0 before <html>, 1 before <head>, 2 in head, 3 after head, 4 in body, 5 after body, 6 after html,
    # 7 in a title, style or script of the head (its end tag is read next)
    phase = 0
    n = 0
    pending = False
    i = 0
    while i < end and _is_space(src[i]):  # the parser's initial mode drops whitespace
        i += 1
    if end - i < _DOCTYPE.shape[0]:
        return -_NOT_DOCUMENT
    for j in range(_DOCTYPE.shape[0]):
        b = src[i + j]
        if 65 <= b <= 90:
            b += 32
        if b != _DOCTYPE[j]:
            return -_NOT_DOCUMENT
    i += _DOCTYPE.shape[0]
    while i < end:
        b = src[i]
        if b != 60:  # text, up to the next "<"
            if phase != 4:
                if not _is_space(b):
                    return -_CONTROL if b == 0 or b == 11 or b == 12 else -_NOT_DOCUMENT
                i += 1
                continue
            if _fosters(_top_id(ids, depth)):
                while i < end and src[i] != 60:
                    if not _is_space(src[i]):
                        return -_TREE  # text in a table outside its cells goes before the table
                    i += 1
                continue
            if removed_open:
                while i < end and src[i] != 60:  # dropped with its element
                    i += 1
                continue
            while i < end:
                b = src[i]
                if b == 60:
                    break
                if b <= 32:
                    if b == 32 or b == 10 or b == 9 or b == 13:
                        pending = True
                        i += 1
                        continue
                    if b == 0 or b == 11 or b == 12:
                        return -_CONTROL
                code = b
                if b == 38:
                    code, i = _reference(src, i, end)
                    if code == -2:
                        return -_ENTITY
                    if code == 9 or code == 10 or code == 13 or code == 32:
                        pending = True  # a space from a reference collapses as any other
                        continue
                if pending and n:
                    out[n] = 32
                    n += 1
                pending = False
                if b == 38:
                    n = put_char(out, n, 38 if code == -1 else code)
                    continue
                out[n] = b
                n += 1
                i += 1
            continue
        # markup
        if i + 1 >= end:
            return -_MARKUP
        c = src[i + 1]
        if c == 33:  # "<!"
            if i + 3 < end and src[i + 2] == 45 and src[i + 3] == 45:
                i = _skip_comment(src, i, end)
                if i < 0:
                    return -_MARKUP
                continue
            return -_MARKUP
        closing = c == 47
        start = i + 2 if closing else i + 1
        if start >= end:
            return -_MARKUP
        first = src[start]
        if not (97 <= (first | 32) <= 122):
            if closing or first == 63:  # "</" + non-letter, "<?": bogus comments
                return -_MARKUP
            # a lone "<" is text
            if phase != 4:
                return -_NOT_DOCUMENT
            if _fosters(_top_id(ids, depth)):
                return -_TREE  # text in a table outside its cells goes before the table
            if removed_open == 0:
                if pending and n:
                    out[n] = 32
                    n += 1
                pending = False
                out[n] = 60
                n += 1
            i += 1
            continue
        # the tag name
        j = start
        upper = False
        while j < end:
            t = src[j]
            if _is_space(t) or t == 47 or t == 62:
                break
            if t < 32 or t >= 128:
                return -_TAG
            if 65 <= t <= 90:
                upper = True
            j += 1
        length = j - start
        tag_id, flags = _lookup(src, start, length, keys, values)
        # the attributes: the first class and rel, and whether the tag closes itself
        class_start = -1
        class_end = -1
        rel_start = -1
        rel_end = -1
        self_closing = False
        while True:
            while j < end and _is_space(src[j]):
                j += 1
            if j >= end:
                return -_MARKUP
            t = src[j]
            if t == 62:
                j += 1
                break
            if t == 47:
                j += 1
                if j < end and src[j] == 62:
                    self_closing = True
                    j += 1
                    break
                continue
            name_start = j
            j += 1  # a first "=" belongs to the name
            while j < end and not (_is_space(src[j]) or src[j] == 47 or src[j] == 62 or src[j] == 61):
                j += 1
            name_length = j - name_start
            while j < end and _is_space(src[j]):
                j += 1
            value_start = j
            value_end = j
            if j < end and src[j] == 61:
                j += 1
                while j < end and _is_space(src[j]):
                    j += 1
                if j >= end:
                    return -_MARKUP
                quote = src[j]
                if quote == 34 or quote == 39:
                    value_start = j + 1
                    j += 1
                    while j < end and src[j] != quote:
                        j += 1
                    if j >= end:
                        return -_MARKUP
                    value_end = j
                    j += 1
                elif quote == 62:
                    value_start = value_end = j
                else:
                    value_start = j
                    while j < end and not (_is_space(src[j]) or src[j] == 62):
                        j += 1
                    value_end = j
            if closing:
                continue
            if class_start < 0 and _is_word(src, name_start, name_length, _CLASS):
                class_start, class_end = value_start, value_end
            elif rel_start < 0 and _is_word(src, name_start, name_length, _REL):
                rel_start, rel_end = value_start, value_end
        for k in range(class_start, class_end):
            if src[k] == 38 or src[k] == 12:
                return -_ATTRIBUTE
        for k in range(rel_start, rel_end):
            if src[k] == 38:
                return -_ATTRIBUTE
        in_foreign = depth > 0 and foreign[depth - 1]
        if upper and not in_foreign:
            return -_TAG  # the block-tag spaces go only at lower-case tags (html_text's pre-pass)
        # the document's skeleton
        if phase != 4:
            if closing:
                if phase == 2 and tag_id == _HEAD:
                    phase = 3
                elif phase == 7:
                    phase = 2
                elif phase == 5 and tag_id == _HTML:
                    phase = 6
                else:
                    return -_NOT_DOCUMENT
            elif phase == 0 and tag_id == _HTML:
                phase = 1
            elif phase == 1 and tag_id == _HEAD:
                phase = 2
            elif phase == 3 and tag_id == _BODY:
                if class_start >= 0 and _class_hits(src, class_start, class_end, class_words, class_offsets):
                    return -_TAG  # a body that is removed itself
                phase = 4
            elif phase == 2 and tag_id == _TITLE:
                stop = _raw_text_end(src, j, end, start, length, False)
                if stop < 0:
                    return -_MARKUP
                j = stop
                phase = 7
            elif phase == 2 and flags & _RAWTEXT:
                stop = _raw_text_end(src, j, end, start, length, tag_id == _SCRIPT)
                if stop < 0:
                    return -_MARKUP
                j = stop
                phase = 7
            elif phase == 2 and flags & _VOID:
                pass
            else:
                return -_NOT_DOCUMENT
            i = j
            continue
        if closing:
            top = depth - 1
            if depth == 0 or lengths[top] != length or not _same_name(src, names[top], start, length):
                if tag_id == _P and open_of[_P] == 0 and not in_foreign:  # no <p> open: the parser puts in an empty one
                    if removed_open == 0:
                        pending = True
                    i = j
                    continue
                if depth == 0 and tag_id == _BODY:
                    phase = 5
                    i = j
                    continue
                return -_NESTING
            if flags & _BLOCK and removed_open == 0:
                pending = True
            depth -= 1
            if removed[depth]:
                removed_open -= 1
            open_of[ids[depth]] -= 1
            i = j
            continue
        # a start tag in the body
        top_id = _top_id(ids, depth)
        if in_foreign:
            if flags & (_BREAKOUT | _RAWTEXT | _REMOVED | _REFUSE) or tag_id == _FOREIGN_ROOT or tag_id == _TITLE:
                return -_TREE  # HTML in SVG or MathML (an integration point, or a tag that ends them)
            if top_id == _MATH_TEXT:
                return -_TREE  # what starts in MathML's text elements is read as HTML
        else:
            if flags & _REFUSE or tag_id == _HTML or tag_id == _HEAD or tag_id == _BODY or tag_id == _TITLE:
                return -_TAG
            if self_closing and not flags & _VOID:
                return -_TAG
            # table structure: where each part may go, and what a table's own content may hold (a
            # <link> or <meta> in it goes before the table, which holds no text)
            if tag_id == _HEAD_VOID:
                pass
            elif top_id == _TABLE:
                if not (tag_id == _CAPTION or tag_id == _COLGROUP or tag_id == _COL or tag_id == _SECTION_ROW
                        or tag_id == _TR or tag_id == _CELL or tag_id == _STYLE or tag_id == _SCRIPT):  # fmt: skip
                    return -_TREE
            elif top_id == _SECTION_ROW:
                if not (tag_id == _TR or tag_id == _CELL or tag_id == _STYLE or tag_id == _SCRIPT):
                    return -_TREE
            elif top_id == _TR:
                if not (tag_id == _CELL or tag_id == _STYLE or tag_id == _SCRIPT):
                    return -_TREE
            elif top_id == _COLGROUP:
                if tag_id != _COL:
                    return -_TREE
            elif _CAPTION <= tag_id <= _COL or tag_id == _SECTION_ROW or tag_id == _TR or tag_id == _CELL:
                return -_TREE  # a table part outside a table is dropped
            if flags & _CLOSES_P and open_of[_P]:
                if top_id != _P:
                    return -_TREE  # the parser would close the elements inside the <p> too
                depth -= 1  # the parser closes the <p>; a "</p>" later makes an empty one
                open_of[_P] -= 1
                if removed[depth]:
                    removed_open -= 1
                top_id = _top_id(ids, depth)
            if flags & _HEADING and depth and tag_flags[depth - 1] & _HEADING:
                return -_TREE  # a heading in a heading closes it
            if tag_id == _LI or tag_id == _DD_DT:
                for k in range(depth - 1, -1, -1):
                    if ids[k] == (_LIST if tag_id == _LI else _DL):
                        break
                    if ids[k] == tag_id:
                        return -_TREE
            if (tag_id == _A or tag_id == _FORM or tag_id == _BUTTON) and open_of[tag_id]:
                return -_TREE  # the parser closes the open one (an <a>, a <button>) or drops the new (a <form>)
            if tag_id == _RUBY_PART and (top_id == _IMPLIED_END or top_id == _P or top_id == _LI or top_id == _DD_DT
                                         or top_id == _RUBY_PART):  # fmt: skip
                return -_TREE
        if flags & _BLOCK and removed_open == 0:
            pending = True
        if flags & _VOID and not in_foreign:
            i = j
            continue
        gone = (flags & _REMOVED) != 0
        if class_start >= 0:
            hits = _class_hits(src, class_start, class_end, class_words, class_offsets)
            last = class_offsets.shape[0] - 2  # "reference", removed only on <sup>
            if hits & ((1 << last) - 1) or (hits >> last & 1 and tag_id == _SUP):
                gone = True
        if rel_start >= 0 and rel_end - rel_start == rel.shape[0]:
            same = True
            for k in range(rel.shape[0]):
                if src[rel_start + k] != rel[k]:
                    same = False
                    break
            if same:
                gone = True
        if depth == depth_limit:
            return -_NESTING
        if in_foreign and self_closing:
            i = j
            continue  # an empty foreign element
        names[depth] = start
        lengths[depth] = length
        ids[depth] = tag_id
        tag_flags[depth] = flags
        removed[depth] = gone
        foreign[depth] = in_foreign or tag_id == _FOREIGN_ROOT
        depth += 1
        if gone:
            removed_open += 1
        open_of[tag_id] += 1
        if flags & _RAWTEXT:
            stop = _raw_text_end(src, j, end, start, length, tag_id == _SCRIPT)
            if stop < 0:
                return -_MARKUP
            j = stop  # the content is dropped with its element (style and script are removed)
        i = j
    if phase != 6 or depth:
        return -_NOT_DOCUMENT
    return n


def _run(source: bytes) -> tuple[int, np.ndarray]:
    out = np.empty(len(source), np.uint8)  # the text is never longer than the page
    return _scan(np.frombuffer(source, np.uint8), out, _TAG_KEYS, _TAG_VALUES, _CLASS_BYTES, _CLASS_OFFSETS, _REL_BYTES), out


def scan_text(source: bytes) -> str | None:
    """html_text.html_to_text of the UTF-8 page ``source`` (without Parsoid's language variants), or None where it refuses."""
    length, out = _run(source)
    return out[:length].tobytes().decode() if length >= 0 else None


def refusal(source: bytes) -> str | None:
    """Why scan_text refuses ``source`` (REFUSALS), or None when it does not."""
    length, _ = _run(source)
    return REFUSALS[-length] if length < 0 else None
