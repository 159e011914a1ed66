"""Wikipedia language codes, their Wikidata site keys, and MediaWiki title normalisation.

A *language* is a Wikipedia subdomain code (``en``, ``simple``, ``zh-min-nan``).
Dumps name wikis by database name (``zh_min_nanwiki``) and Wikidata keys sitelinks
by the same global site id, so both directions of that mapping live here.
"""

from __future__ import annotations

import re
import unicodedata

# PIPELINE.md section 11: the 139 languages of BI-139.
BI139_LANGUAGES: tuple[str, ...] = tuple(
    """af als am an ar arz ast az azb ba bar be bg bn bpy br bs bug ca cdo ce ceb ckb
    cs cv cy da de diq el eml en eo es et eu fa fi fo fr fy ga gd gl gu he hi hr hsb
    ht hu hy ia id ilo io is it ja jv ka kk kn ko ku ky la lb li lmo lt lv mai mg mhr
    min mk ml mn mr mrj ms my mzn nap nds ne new nl nn no oc or os pa pl pms pnb ps
    pt qu ro ru sa sah scn sco sd sh si simple sk sl sq sr su sv sw szl ta te tg th
    tl tr tt uk ur uz vec vi vo wa war wuu xmf yi yo zh""".split()
)

# PIPELINE.md section 8: the languages of MULTI-8.
MULTI8_LANGUAGES: tuple[str, ...] = ("ar", "de", "en", "es", "fr", "ja", "ru", "zh")

# PIPELINE.md section 2: writing systems without spaces between words are truncated
# by characters, not by whitespace tokens.
UNSPACED_LANGUAGES: frozenset[str] = frozenset({"zh", "ja", "th", "wuu", "my", "lo", "km", "bo"})

# MediaWiki uppercases a dotted i as İ in Turkic languages ($wgLang->ucfirst).
_TURKIC = frozenset({"tr", "az", "crh", "kaa", "gag", "tt"})

_CODE = re.compile(r"^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$")


class UnknownWikiError(ValueError):
    """A database or site name that is not a Wikipedia of the form ``{code}wiki``."""


def is_language_code(code: str) -> bool:
    """True for a syntactically valid Wikipedia language code (``en``, ``zh-min-nan``)."""
    return bool(_CODE.match(code))


def site_key(lang: str) -> str:
    """The Wikidata sitelink key of a language: ``zh-min-nan`` -> ``zh_min_nanwiki``."""
    if not is_language_code(lang):
        raise ValueError(f"not a Wikipedia language code: {lang!r}")
    return lang.replace("-", "_") + "wiki"


def lang_from_dbname(dbname: str) -> str:
    """The language of a wiki database name: ``zh_min_nanwiki`` -> ``zh-min-nan``.

    Sister projects (``enwikiquote``) and ``commonswiki`` are not Wikipedias and raise.
    """
    if not dbname.endswith("wiki") or dbname in {"commonswiki", "wikidatawiki", "metawiki", "specieswiki"}:
        raise UnknownWikiError(f"not a Wikipedia database name: {dbname!r}")
    code = dbname[: -len("wiki")].replace("_", "-")
    if not is_language_code(code):
        raise UnknownWikiError(f"not a Wikipedia database name: {dbname!r}")
    return code


def is_unspaced(lang: str, extra_unspaced: frozenset[str] | set[str] = frozenset()) -> bool:
    """Whether a language is truncated by characters (no spaces between words)."""
    return lang in UNSPACED_LANGUAGES or lang in extra_unspaced


_SPACES = re.compile(r"[\s_]+")


def normalize_title(title: str, lang: str) -> str:
    """A title as MediaWiki stores it, for matching sitelinks to documents.

    Underscores and runs of whitespace become one space, the ends are trimmed, the
    text is NFC-normalised and the first letter is uppercased (``$wgCapitalLinks``,
    true on every Wikipedia), with the Turkic dotted capital I.
    """
    text = unicodedata.normalize("NFC", _SPACES.sub(" ", title).strip())
    if not text:
        return text
    first = text[0]
    if first == "i" and lang in _TURKIC:
        upper = "\u0130"
    else:
        upper = first.upper()
        if len(upper) != 1:  # 'ß'.upper() == 'SS': MediaWiki keeps such letters as they are
            upper = first
    return upper + text[1:]
