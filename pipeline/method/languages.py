"""Wikipedia language codes, their Wikidata site keys, and MediaWiki title normalisation.

A *language* is a Wikipedia subdomain code (``en``, ``simple``, ``zh-min-nan``).
Dumps name wikis by database name (``zh_min_nanwiki``) and Wikidata keys sitelinks
by the same global site id, so both directions of that mapping live here.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

from clirmatrix.pipeline.errors import InvalidInputError

# docs/method.md section 11: the 139 languages of BI-139.
BI139_LANGUAGES: tuple[str, ...] = tuple(
    """af als am an ar arz ast az azb ba bar be bg bn bpy br bs bug ca cdo ce ceb ckb
    cs cv cy da de diq el eml en eo es et eu fa fi fo fr fy ga gd gl gu he hi hr hsb
    ht hu hy ia id ilo io is it ja jv ka kk kn ko ku ky la lb li lmo lt lv mai mg mhr
    min mk ml mn mr mrj ms my mzn nap nds ne new nl nn no oc or os pa pl pms pnb ps
    pt qu ro ru sa sah scn sco sd sh si simple sk sl sq sr su sv sw szl ta te tg th
    tl tr tt uk ur uz vec vi vo wa war wuu xmf yi yo zh""".split()
)

# Every Wikipedia's language code (Wikimedia's site matrix, as of 2025), used to tell a
# mistyped --langs code from a real language whose dump is missing. A code with a dump
# in the dumps folder is accepted whether listed here or not (new wikis open each year).
WIKIPEDIA_LANGUAGES: frozenset[str] = frozenset(
    """aa ab ace ady af ak als alt am ami an ang ann anp ar arc ary arz as ast atj av avk awa ay az azb
    ba ban bar bat-smg bbc bcl bdr be be-x-old bew bg bh bi bjn blk bm bn bo bpy br bs btm bug bxr ca
    cbk-zam cdo ce ceb ch cho chr chy ckb co cr crh cs csb cu cv cy da dag de dga din diq dsb dtp dty
    dv dz ee el eml en eo es et eu ext fa fat ff fi fiu-vro fj fo fon fr frp frr fur fy ga gag gan gcr
    gd gl glk gn gom gor got gpe gu guc gur guw gv ha hak haw he hi hif ho hr hsb ht hu hy hyw hz ia iba
    id ie ig igl ii ik ilo inh io is it iu ja jam jbo jv ka kaa kab kbd kbp kcg kg kge ki kj kk kl km
    kn knc ko koi kr krc ks ksh ku kus kv kw ky la lad lb lbe lez lfn lg li lij lld lmo ln lo lrc lt
    ltg lv mad mai map-bms mdf mg mh mhr mi min mk ml mn mni mnw mos mr mrj ms mt mus mwl my myv mzn na
    nah nap nds nds-nl ne new ng nia nl nn no nov nqo nr nrm nso nup nv ny oc olo om or os pa pag pam
    pap pcd pcm pdc pfl pi pih pl pms pnb pnt ps pt pwn qu rm rmy rn ro roa-rup roa-tara rsk ru rue rw
    sa sah sat sc scn sco sd se sg sh shi shn si simple sk skr sl sm smn sn so sq sr srn ss st stq su
    sv sw syl szl szy ta tay tcy tdd te tet tg th ti tig tk tl tly tn to tpi tr trv ts tt tum tw ty
    tyv udm ug uk ur uz ve vec vep vi vls vo wa war wo wuu xal xh xmf yi yo za zea zgh zh zh-classical
    zh-min-nan zh-yue zu""".split()
)

# docs/method.md section 8: the languages of MULTI-8.
MULTI8_LANGUAGES: tuple[str, ...] = ("ar", "de", "en", "es", "fr", "ja", "ru", "zh")

# docs/method.md section 2: writing systems without spaces between words are truncated
# by characters, not by whitespace tokens.
UNSPACED_LANGUAGES: frozenset[str] = frozenset({"zh", "ja", "th", "wuu", "my", "lo", "km", "bo"})

# MediaWiki uppercases a dotted i as İ in Turkic languages ($wgLang->ucfirst).
_TURKIC = frozenset({"tr", "az", "crh", "kaa", "gag", "tt"})

_CODE = re.compile(r"^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$")


class UnknownWikiError(InvalidInputError):
    """A database or site name that is not a Wikipedia of the form ``{code}wiki``."""


class UnknownLanguageError(InvalidInputError):
    """A language list (``--langs``, ``--src``, ...) names a code its flag does not accept; the message suggests the nearest."""


def nearest_languages(code: str, limit: int = 3, allowed: Iterable[str] = WIKIPEDIA_LANGUAGES) -> list[str]:
    """The codes of ``allowed`` closest to ``code``, for an error message.

    Case, surrounding spaces and underscores are folded first (``EN`` -> ``en``,
    ``zh_min_nan`` -> ``zh-min-nan``, the database name ``dewiki`` -> ``de``), so the
    commonest slips name the one right code; otherwise the closest spellings.
    """
    import difflib

    choices = sorted(set(allowed))
    folded = code.strip().lower().replace("_", "-")
    for candidate in (folded, folded.removesuffix("wiki").rstrip("-")):
        if candidate in choices:
            return [candidate]
    return difflib.get_close_matches(folded, choices, n=limit, cutoff=0.5)


def check_langs(values: str | Iterable[str], allowed: Iterable[str], flag: str, kind: str = "Wikipedia language code", kinds: str | None = None) -> list[str]:
    """The codes of a comma-separated string (or list), in order, once each; ``UnknownLanguageError`` for any not in ``allowed``.

    The error names ``flag``, every unknown code with the nearest allowed ones
    ("did you mean en?"), and, when ``allowed`` is short, all of them, under ``kinds``
    (the plural of ``kind``; by default ``kind`` + "s"):
    ``--langs EN: not a Wikipedia language code; did you mean en?``.
    """
    items = values.split(",") if isinstance(values, str) else values
    codes = list(dict.fromkeys(item.strip() for item in items if item.strip()))
    accepted = set(allowed)
    unknown = [code for code in codes if code not in accepted]
    if not unknown:
        return codes
    guesses = {code: " or ".join(nearest_languages(code, allowed=accepted)) for code in unknown}
    if len(unknown) == 1:
        code = unknown[0]
        message = f"{flag} {code}: not a {kind}" + (f"; did you mean {guesses[code]}?" if guesses[code] else "")
    else:
        message = f"{flag}: not a {kind}: " + ", ".join(f"{code} (did you mean {guesses[code]}?)" if guesses[code] else code for code in unknown)
    if len(accepted) <= 20:
        message += f" ({kinds or kind + 's'}: {', '.join(sorted(accepted))})"
    raise UnknownLanguageError(message)


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
