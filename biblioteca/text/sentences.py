"""Markdown-aware sentence splitter for Spanish and English text.

Chunks are trimmed sentence by sentence, so a unit must never cut through a code block, a table
row or a list item, and must be a verbatim slice of the source so that offsets map back to it.
Block structure comes from the CommonMark parser (markdown-it-py); prose is split by a single
linear scan whose regexes cannot backtrack, so hostile input costs time proportional to its size.
The splitter is conservative: when in doubt, it does not split.
"""

from __future__ import annotations

import re
from enum import Enum

from markdown_it import MarkdownIt
from markdown_it.token import Token

__all__ = ["split_sentence_spans", "split_sentences"]


class _Kind(Enum):
    PROSE = 1
    ITEM = 2
    LINES = 3
    WHOLE = 4


_MD = MarkdownIt("commonmark").enable("table")
_MD.disable(["inline", "text_join", "reference"])

_NEWLINE = re.compile(r"\r\n?|\n")

_TERMINATORS = ".!?…‽"
_OPENERS = "\"'“‘«¿¡([‹`*_„"
_BULLETS = "•⁃◦‣▪"
_TOKEN_LEAD = _OPENERS + _BULLETS + "—–"

_CANDIDATE = re.compile(
    r"([.!?…‽](?<![.!?…‽].)[.!?…‽]*+)([\"'”’»)\]›]*+)\s++(?=[^\sa-z0-9.,;:])"
)
_NEXT_WORD = re.compile(r"[\"'“‘«¿¡(\[‹`*_„]*+([^\W\d_]++)")
_INITIALISM = re.compile(r"(?:[^\W\d_]\.)++[^\W\d_]")
_INITIAL_AHEAD = re.compile(r"[^\W\d_]\.")
_MARKER_TOKEN = re.compile(r"\d{1,3}|[^\W\d_]")
_ENUM_HEAD = re.compile(r"(?:(\d{1,3})(\.\)|\)|\.)|([a-z])(\.))\s")
_ENUM_ANY = re.compile(r"(?<=\s)(?:(\d{1,3})(\.\)|\)|\.)|([a-z])(\.))(?=\s)")

_MAX_TOKEN = 48

# Abbreviations after which a sentence practically never ends (titles, "e.g.", "p. ej.", ...).
_NO_SPLIT = frozenset(
    """
    mr mrs ms mx dr dra drs dres sr sra srta sres sras srs lic lcdo lcda ing prof profa
    st mt sto sta gen gral capt cap caps cnel col lt sgt rev hon pres gov sen rep fr dn dña
    vs cf e.g i.e eg ie p.ej ej v.g vg viz approx aprox ca fig figs vol vols pp núm num nº n°
    nro art arts sec secc ch chap pág pag págs tel tfno apt apdo av avda avd dept depto op ee
    """.split()
)

# Abbreviations that may also end a sentence: split only when a usual sentence opener follows.
_END_CAPABLE = frozenset(
    """
    etc co cía cia inc ltd corp llc jr esq bros ph.d phd uu ud uds vd vds al cit ed eds
    min máx max mín seg ms kb mb gb tb hr hrs km kg cm mm ft lb lbs oz yr yrs ref refs
    jan feb apr jun jul aug sep sept oct nov dec ene abr dic
    """.split()
)

_TIMES = frozenset(("a.m", "p.m"))
_TITLES = frozenset(("Mr", "Mrs", "Ms", "Dr", "Dra", "Sr", "Sra", "Srta", "Prof", "Lic"))

_STARTERS = frozenset(
    """
    A After All Also Although And As Before Being Both Because But Did Each For He Her His How
    However I If In It Its Let Many Meanwhile Millions More Most My No Note Now One Our Please
    She Since So Some That The Their Then There Therefore These They This Those Thus Today We
    What When Where While Who Why Yes You
    Además Ahora Así Aunque Cada Como Con Cuando Cómo Después Dónde El Ella Ellas Ellos En
    Entonces Es Esa Ese Eso Esta Este Esto Estos Estas Hay Hoy La Las Lo Los Luego Mi Mientras
    Nosotros Nuestra Nuestro Otra Otro Para Pero Por Que Qué Quién Se Si Sin Su Sus Sí También
    Todo Todos Un Una Unas Unos Ya Yo Él
    """.split()
)

# Words that usually take a number ("by 2."), so a digit after them is not an inline list marker.
_QUANTITY_WORDS = frozenset(
    """
    by to of at in on from than per times and or about around over under approximately
    approx aprox de a en por para con hasta desde entre y o sobre unos unas
    """.split()
)


def split_sentences(text: str) -> list[str]:
    """The units of `text`, each a verbatim slice of it."""
    return [text[s:e] for s, e in split_sentence_spans(text)]


def split_sentence_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) offsets of each unit of `text`: ordered, disjoint, stripped, non-empty."""
    if not text or text.isspace():
        return []
    starts = [0]
    starts.extend(m.end() for m in _NEWLINE.finditer(text))
    n_lines = len(starts)
    starts.append(len(text))
    spans: list[tuple[int, int]] = []
    for first, last, kind in _regions(text, n_lines):
        a, b = starts[first], starts[last]
        if kind is _Kind.WHOLE:
            _emit(text, a, b, spans)
        elif kind is _Kind.LINES:
            for line in range(first, last):
                _emit(text, starts[line], starts[line + 1], spans)
        else:
            segment = text[a:b]
            cuts = _enumeration_cuts(segment)
            if kind is _Kind.PROSE:
                cuts = _sentence_cuts(segment, cuts)
            prev = a
            for cut in cuts:
                _emit(text, prev, a + cut, spans)
                prev = a + cut
            _emit(text, prev, b, spans)
    return spans


def _emit(text: str, a: int, b: int, out: list[tuple[int, int]]) -> None:
    if a < b and not text[a].isspace() and not text[b - 1].isspace():
        out.append((a, b))
        return
    while a < b and text[a].isspace():
        a += 1
    while b > a and text[b - 1].isspace():
        b -= 1
    if a < b:
        out.append((a, b))


def _regions(text: str, n_lines: int) -> list[tuple[int, int, _Kind]]:
    """Disjoint line ranges covering the text, each with how it is to be cut."""
    if "\r" in text or "\0" in text:
        text = _NEWLINE.sub("\n", text).replace("\0", "\ufffd")
    tokens: list[Token] = []
    try:
        _MD.block.parse(text, _MD, {}, tokens)
    except Exception:  # the splitter must never raise; fall back to plain prose
        return [(0, n_lines, _Kind.PROSE)]
    regions: list[tuple[int, int, _Kind]] = []
    covered = 0
    containers: list[tuple[str, int]] = []
    for tok in tokens:
        kind: _Kind | None = None
        ttype = tok.type
        if ttype == "blockquote_open":
            containers.append(("quote", -1))
        elif ttype == "list_item_open":
            containers.append(("item", tok.map[0] if tok.map else -1))
        elif ttype in ("blockquote_close", "list_item_close"):
            if containers:
                containers.pop()
        elif tok.map is None:
            continue
        elif ttype == "paragraph_open":
            if containers and containers[-1][0] == "item" and containers[-1][1] == tok.map[0]:
                kind = _Kind.ITEM
            elif containers and containers[-1][0] == "quote":
                kind = _Kind.LINES
            else:
                kind = _Kind.PROSE
        elif ttype == "table_open":
            kind = _Kind.LINES
        elif ttype in ("heading_open", "fence", "code_block", "html_block", "hr"):
            kind = _Kind.WHOLE
        if kind is None or tok.map is None:
            continue
        first, last = max(tok.map[0], covered), min(tok.map[1], n_lines)
        if first >= last:
            continue
        if first > covered:
            regions.append((covered, first, _Kind.PROSE))
        regions.append((first, last, kind))
        covered = last
    if covered < n_lines:
        regions.append((covered, n_lines, _Kind.PROSE))
    return regions


def _enumeration_cuts(seg: str) -> list[int]:
    """Cuts before inline list markers: "1) a 2) b", "a. x b. y", "• x • y"."""
    head = len(seg) - len(seg.lstrip())
    if head >= len(seg):
        return []
    first = seg[head]
    if first in _BULLETS:
        return [m.start() for m in re.finditer(r"(?<=\s)" + first, seg)]
    m = _ENUM_HEAD.match(seg, head)
    if m is None:
        return []
    numeric = m.group(1) is not None
    style = m.group(2) if numeric else m.group(4)
    expected = int(m.group(1)) + 1 if numeric else ord(m.group(3)) + 1
    cuts = []
    for mm in _ENUM_ANY.finditer(seg, m.end()):
        if numeric:
            if mm.group(1) is None or mm.group(2) != style or int(mm.group(1)) != expected:
                continue
        elif mm.group(3) is None or ord(mm.group(3)) != expected:
            continue
        if _previous_word(seg, mm.start()).lower() in _QUANTITY_WORDS:
            continue
        cuts.append(mm.start())
        expected += 1
    return cuts


def _previous_word(seg: str, pos: int) -> str:
    """The white-space delimited word ending before `pos` (after skipping white space)."""
    end = pos
    while end > 0 and seg[end - 1].isspace():
        end -= 1
    start = end
    lo = max(0, end - _MAX_TOKEN)
    while start > lo and not seg[start - 1].isspace():
        start -= 1
    return seg[start:end]


def _sentence_cuts(seg: str, enum_cuts: list[int]) -> list[int]:
    """Merge `enum_cuts` with the sentence boundaries of the prose `seg`."""
    cuts: list[int] = []
    ei = 0
    n_enum = len(enum_cuts)
    last_cut = 0
    for m in _CANDIDATE.finditer(seg):
        nxt = m.end()
        c = seg[nxt]
        if not (c.isupper() or c in _OPENERS):
            continue
        p = m.start()
        while ei < n_enum and enum_cuts[ei] <= p:
            last_cut = max(last_cut, enum_cuts[ei])
            cuts.append(enum_cuts[ei])
            ei += 1
        cut = _boundary(seg, p, m.end(1), m.end(2), nxt, last_cut)
        if cut is not None and cut > last_cut:
            cuts.append(cut)
            last_cut = cut
    cuts.extend(enum_cuts[ei:])
    if n_enum:
        cuts = sorted(set(cuts))
    return cuts


def _boundary(seg: str, p: int, q: int, r: int, nxt: int, unit_start: int) -> int | None:
    """Where to cut for the terminators seg[p:q] and closers seg[q:r] before seg[nxt:]."""
    cluster = seg[p:q]
    token_start = p
    lo = max(unit_start, p - _MAX_TOKEN)
    while token_start > lo and not seg[token_start - 1].isspace():
        token_start -= 1
    while token_start < p and seg[token_start] in _TOKEN_LEAD:
        token_start += 1
    word = seg[token_start:p]

    if _MARKER_TOKEN.fullmatch(word) and _only_bullets(seg, unit_start, token_start):
        return None
    if cluster == ".":
        if p >= 2 and seg[p - 1] == " " and seg[p - 2] == ".":
            return _spaced_ellipsis(seg, p, r)
        if q == r:
            return _after_period(seg, word, token_start, nxt, unit_start, r)
        return r
    if "." in cluster or "…" in cluster:
        if p > 0 and seg[p - 1] in "[(" and q < len(seg) and seg[q] in "])":
            return None
    return r


def _only_bullets(seg: str, a: int, b: int) -> bool:
    for i in range(a, b):
        if not (seg[i].isspace() or seg[i] in _BULLETS):
            return False
    return True


def _spaced_ellipsis(seg: str, p: int, r: int) -> int | None:
    """". . . ." chains: cut after "word." that precedes one, or after a free four-dot one."""
    first = p
    dots = 1
    while first >= 2 and seg[first - 1] == " " and seg[first - 2] == ".":
        first -= 2
        dots += 1
    if first > 0 and not seg[first - 1].isspace():
        return first + 1 if seg[first - 1].isalnum() else None
    return r if dots >= 4 else None


def _after_period(
    seg: str, word: str, token_start: int, nxt: int, unit_start: int, r: int
) -> int | None:
    """Cut after a lone period ending `word`, unless it is an abbreviation or an initial."""
    lower = word.lower()
    if lower in _NO_SPLIT:
        return None
    if lower in _TIMES:
        if token_start - unit_start <= _MAX_TOKEN and len(seg[unit_start:token_start].split()) <= 3:
            return None
        following = _next_word(seg, nxt)
        return r if following in _STARTERS or following in _TITLES else None
    if lower in _END_CAPABLE or _INITIALISM.fullmatch(word):
        return r if _next_word(seg, nxt) in _STARTERS else None
    if len(word) == 1 and word.isalpha():
        if word.islower():
            return None
        before = _previous_word(seg, token_start)
        if token_start <= unit_start or not before or before[-1] in _TERMINATORS:
            return None
        if _INITIAL_AHEAD.match(seg, nxt):
            return None
        before = before.lstrip(_TOKEN_LEAD)
        return None if before[:1].isupper() else r
    return r


def _next_word(seg: str, pos: int) -> str:
    m = _NEXT_WORD.match(seg, pos)
    return m.group(1) if m else ""
