"""Markdown-aware sentence splitter for Spanish and English text.

Chunks are trimmed sentence by sentence, so a unit must never cut through a code block, a table
row or a list item, and must be a verbatim slice of the source so that offsets map back to it.
Block structure comes from the CommonMark parser (markdown-it-py), which a top-level line scan
spares where blocks are simple; prose is split by a single linear scan whose regexes cannot
backtrack, so hostile input costs time proportional to its size.
The splitter is conservative: when in doubt, it does not split. It takes no language: the rules
for English and Spanish prose (citation marks, clock times, quotes, inline enumerations, glued
and full-width stops, numbers, initials) read punctuation and a closed set of sentence openers.

Documents are markdown, and where plain prose and markdown disagree, markdown wins: a soft line
break inside a paragraph is not a boundary, a blank line is, an indented block is code, and a
line that starts with "1." or "-" is a list item, even if a prose reader would see otherwise.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable
from enum import Enum
from itertools import accumulate

from markdown_it import MarkdownIt
from markdown_it.token import Token

from biblioteca.text.list_markers import LIST_MARKER, ORDERED

__all__ = ["split_sentence_spans", "split_sentences"]


class _Kind(Enum):
    PROSE = 1
    ITEM = 2
    LINES = 3
    WHOLE = 4


_MD = MarkdownIt("commonmark").enable("table")
_MD.disable(["inline", "text_join", "reference"])

_NEWLINE = re.compile(r"\r\n?|\n")
_PLUS_ONE = (1).__add__

# Tokens whose block may still be open at the end of a markdown-it run (see _scan).
_OPEN_ENDED = frozenset(("fence", "html_block"))
# Past this nesting level markdown-it drops the rest of its range, which a run would not match.
_DEEP = _MD.options["maxNesting"] - 1
# How deep _simple_list follows lists inside list items before leaving them to markdown-it.
_NESTED_LISTS = 3
_ATX = re.compile(r"#{1,6}(?![^ \t])")
_ORDERED = re.compile(ORDERED)
_ITEM = re.compile(rf"{LIST_MARKER} (?=[^ \t])")
_LIST_LEAD = frozenset("-*+0123456789")

_TERMINATORS = ".!?…‽"
_OPENERS = "\"'“‘«¿¡([‹`*_„"
_BULLETS = "•⁃◦‣▪"
_DASHES = "-–—"
_CLOSERS = "\"'”’»)]›"
_TOKEN_LEAD = _OPENERS + _BULLETS + "—–"

# A run of terminators and its closers (quotes, brackets, Spanish ordinal marks as in "5.º"),
# then white space, or no space at all before a capital or an inverted mark ("done.Next"), or a
# citation mark glued to them and white space ("rains.[3] Then", "rains.3 Then"). Whatever
# follows the space must not continue a sentence, though "a)" or "i." may open a list. Each part
# is possessive or bounded, so a failed match costs a few steps.
_CANDIDATE = re.compile(
    r"([.!?…‽](?<![.!?…‽].)[.!?…‽]*+)([\"'”’»)\]›ºª]*+)"
    r"(?:\s++(?=[^\sa-z.,;:]|[ai]\.?\)|[ai]\.\s|[a-z]++[A-Z])"
    r"|(?=[A-ZÀ-ÖØ-Þ¿¡])"
    r"|((?:\[\d{1,3}(?:[,–-] ?\d{1,3})*+\])++|\d{1,3}|[¹²³⁰⁴-⁹]{1,3})"
    r"\s++(?=[^\sa-z.,;:]))"
)
_NEXT_WORD = re.compile(r"[\"'“‘«¿¡(\[‹`*_„]*+([^\W\d_]++)")
_GLUED_NEXT = re.compile(r"[¿¡]?([^\W\d_]++)(?=[\s,;:]|$)")
# A name that opens lower case and capitalises later (`eBay`, `iOS`, `useState`) may open a sentence.
_CAMEL_NAME = re.compile(r"[a-z]++[A-Z]")
_INITIALISM = re.compile(r"(?:[^\W\d_]\.)++[^\W\d_]")
_INITIAL_AHEAD = re.compile(r"[^\W\d_]\.")
_MARKER_TOKEN = re.compile(r"\d{1,3}|[^\W\d_]|[ivx]{2,4}")
# Inline list markers: "1.", "2)", "a.)", "(b)", "iii)"; a run of them must count up.
_ENUM_ANY = re.compile(r"(?<!\S)(\()?(\d{1,3}|[a-z]|[ivx]{2,4})(\.\)|\)|\.)(?=\s)")
_ROMAN = {r: n for n, r in enumerate(["i", "ii", "iii", "iv", "v", "vi", "vii", "viii", "ix", "x"], 1)}
# Full-width and CJK stops end a sentence without a following space.
_CJK_STOP = re.compile(r"[。！？．]")
# A line that opens or closes an admonition is a unit of its own, not the start of the first sentence inside:
# MkDocs' `!!! note "Title"`, `??? tip` and `???+ tip`, pymdownx's `/// warning | Title` and `///`, and the
# `::: tip Title` / `:::` of VitePress and Docusaurus; so is a Material for MkDocs content tab's `=== "Title"`.
# Their text follows on the next line, in the same paragraph.
_ADMONITION_LINE = re.compile(
    r"^[ ]{0,3}(?:(?:!!!|\?\?\?\+?)[ \t]*+[A-Za-z][\w-]*+(?:[ \t][^\n]*+)?|/{3}(?:[ \t]*+[A-Za-z][^\n]*+)?"
    r"|:{3,}+(?:[ \t]*+[A-Za-z][^\n]*+)?|={3}[+!]?[ \t]++\"[^\"\n]*+\")[ \t]*+$",
    re.M,
)
# The start of a line that may open or close an admonition or content tab, line break included: a search for a
# literal first character skips ahead much faster than one for a set of them or for "^".
_MARK_AT_LINE = re.compile(r"\n[ ]{0,3}(?:!!!|\?\?\?|///|:::|===)")
# MkDocs indents an admonition's or a content tab's body by four spaces; after a blank line CommonMark reads it
# as an indented code block, but it is the container's own markdown.
_CONTAINER_OPENER = re.compile(r"[ ]{0,3}(?:(?:!!!|\?\?\?\+?)[ \t]*[A-Za-z]|={3}[+!]?[ \t]+\")")
_BODY_INDENT = re.compile(r"(?: {4}|\t)")
_CJK_CANDIDATE = re.compile(r"[。！？．]++[」』）】〕〉》\"'”’)]*+")

_MAX_TOKEN = 48

# Abbreviations after which a sentence practically never ends (titles, "e.g.", "p. ej.", ...).
_NO_SPLIT = frozenset(
    [
        "mr",
        "mrs",
        "ms",
        "mx",
        "dr",
        "dra",
        "drs",
        "dres",
        "sr",
        "sra",
        "srta",
        "sres",
        "sras",
        "srs",
        "lic",
        "lcdo",
        "lcda",
        "ing",
        "prof",
        "profa",
        "mt",
        "sto",
        "sta",
        "gen",
        "gral",
        "capt",
        "cap",
        "caps",
        "cnel",
        "col",
        "lt",
        "sgt",
        "rev",
        "hon",
        "pres",
        "gov",
        "sen",
        "rep",
        "fr",
        "dn",
        "dña",
        "adm",
        "maj",
        "cmdr",
        "brig",
        "supt",
        "insp",
        "atty",
        "messrs",
        "mme",
        "mmes",
        "mlle",
        "excmo",
        "excma",
        "ilmo",
        "ilma",
        "rvdo",
        "mons",
        "vs",
        "cf",
        "e.g",
        "i.e",
        "eg",
        "ie",
        "p.ej",
        "ej",
        "v.g",
        "vg",
        "viz",
        "approx",
        "aprox",
        "ca",
        "fig",
        "figs",
        "sect",
        "secc",
        "vol",
        "vols",
        "pp",
        "núm",
        "num",
        "nº",
        "n°",
        "nro",
        "art",
        "arts",
        "sec",
        "secc",
        "ch",
        "chap",
        "pág",
        "pag",
        "págs",
        "tel",
        "tfno",
        "apt",
        "apdo",
        "av",
        "avda",
        "avd",
        "dept",
        "depto",
        "dpto",
        "dto",
        "op",
        "est",
        "eq",
        "eqs",
        "tte",
        "sgto",
        "cmdte",
        "arq",
        "abg",
        "abog",
        "mtro",
        "mtra",
        "pdte",
        "pbro",
        "admón",
    ]
)

# Unit symbols take no period of their own: after a number ("limited to 20 GB. Larger files fail") the period
# ends the sentence whenever a capital follows, whether or not the next word is a usual opener.
_UNITS = frozenset(
    ("m", "g", "l", "h", "s", "min", "seg", "ms", "kb", "mb", "gb", "tb", "hr", "hrs", "km", "kg", "cm", "mm")
    + ("ft", "lb", "lbs", "oz")
)
_NUMBER = re.compile(r"[0-9]+(?:[.,][0-9]+)*")

# Abbreviations that may also end a sentence: split only when a usual sentence opener follows. The unit symbols
# are among them (a lone letter is read as an initial instead).
_END_CAPABLE = frozenset(
    [
        "etc",
        "co",
        "cía",
        "cia",
        "inc",
        "ltd",
        "corp",
        "llc",
        "jr",
        "esq",
        "bros",
        "hno",
        "hnos",
        "ph.d",
        "phd",
        "ud",
        "uds",
        "vd",
        "vds",
        "al",
        "cit",
        "ed",
        "eds",
        "st",
        "máx",
        "max",
        "mín",
        "yr",
        "yrs",
        "ref",
        "refs",
        "pt",
        "pts",
        "tab",
        "sig",
        "sigs",
        "ss",
        "ltda",
        "atte",
        "jan",
        "feb",
        "apr",
        "jun",
        "jul",
        "aug",
        "sep",
        "sept",
        "oct",
        "nov",
        "dec",
        "ene",
        "abr",
        "dic",
        "mon",
        "tue",
        "tues",
        "wed",
        "thu",
        "thur",
        "thurs",
        "fri",
        "lun",
        "mié",
        "jue",
        "vie",
        "sáb",
    ]
) | {unit for unit in _UNITS if len(unit) > 1}


_TIMES = frozenset(("a.m", "p.m"))
# A time inside an opening phrase ("At 5 a.m. Mr. Smith left") is followed by the subject.
_LEAD_PREPOSITIONS = frozenset(
    [
        "At",
        "By",
        "Around",
        "Until",
        "Till",
        "From",
        "Before",
        "After",
        "Since",
        "About",
        "Near",
        "A",
        "Hacia",
        "Desde",
        "Hasta",
        "Sobre",
    ]
)
# After a clock time a capitalised word starts a new sentence, unless it qualifies the time:
# a time zone or a weekday ("6 p.m. Eastern", "9 a.m. Sunday").
_TIME_QUALIFIERS = frozenset(
    [
        "Eastern",
        "Pacific",
        "Central",
        "Mountain",
        "Atlantic",
        "Alaska",
        "Alaskan",
        "Hawaii",
        "Hawaiian",
        "Greenwich",
        "GMT",
        "UTC",
        "EST",
        "EDT",
        "CST",
        "CDT",
        "MST",
        "MDT",
        "PST",
        "PDT",
        "AKST",
        "HST",
        "CET",
        "CEST",
        "WET",
        "WEST",
        "EET",
        "EEST",
        "BST",
        "IST",
        "JST",
        "AEST",
        "Monday",
        "Tuesday",
        "Wednesday",
        "Thursday",
        "Friday",
        "Saturday",
        "Sunday",
        "Mondays",
        "Tuesdays",
        "Wednesdays",
        "Thursdays",
        "Fridays",
        "Saturdays",
        "Sundays",
    ]
)

# Capitalised closed-class words (pronouns, articles, demonstratives, conjunctions, sentence
# adverbs): a sentence opens with them far more often than a name that an abbreviation or an
# initial introduces does, so they decide the ambiguous cases.
_STARTERS = frozenset(
    [
        "A",
        "After",
        "Afterwards",
        "Again",
        "All",
        "Also",
        "Although",
        "Always",
        "Among",
        "An",
        "And",
        "Another",
        "Any",
        "Anyone",
        "Anything",
        "As",
        "At",
        "Because",
        "Before",
        "Being",
        "Besides",
        "Both",
        "But",
        "By",
        "Can",
        "Could",
        "Despite",
        "Did",
        "Do",
        "Does",
        "During",
        "Each",
        "Earlier",
        "Either",
        "Even",
        "Every",
        "Everybody",
        "Everyone",
        "Everything",
        "Few",
        "Finally",
        "First",
        "For",
        "Fortunately",
        "From",
        "He",
        "Hence",
        "Her",
        "Here",
        "His",
        "How",
        "However",
        "I",
        "If",
        "In",
        "Indeed",
        "Instead",
        "Is",
        "It",
        "Its",
        "Just",
        "Last",
        "Later",
        "Let",
        "Many",
        "Maybe",
        "Meanwhile",
        "Millions",
        "More",
        "Moreover",
        "Most",
        "Much",
        "My",
        "Neither",
        "Never",
        "Nevertheless",
        "Next",
        "No",
        "Nobody",
        "None",
        "Not",
        "Note",
        "Nothing",
        "Now",
        "Of",
        "Often",
        "On",
        "Once",
        "One",
        "Only",
        "Or",
        "Other",
        "Others",
        "Our",
        "Overall",
        "Perhaps",
        "Please",
        "Several",
        "She",
        "Should",
        "Since",
        "So",
        "Some",
        "Someone",
        "Something",
        "Sometimes",
        "Soon",
        "Still",
        "Such",
        "That",
        "The",
        "Their",
        "Them",
        "Then",
        "There",
        "Therefore",
        "These",
        "They",
        "This",
        "Those",
        "Though",
        "Thus",
        "To",
        "Today",
        "Tomorrow",
        "Unfortunately",
        "Unless",
        "Until",
        "Usually",
        "Was",
        "We",
        "Were",
        "What",
        "Whatever",
        "When",
        "Where",
        "Whether",
        "Which",
        "While",
        "Who",
        "Whoever",
        "Why",
        "Will",
        "With",
        "Without",
        "Would",
        "Yes",
        "Yesterday",
        "Yet",
        "You",
        "Your",
        "Además",
        "Ahora",
        "Al",
        "Algo",
        "Alguien",
        "Algunas",
        "Algunos",
        "Allí",
        "Ambas",
        "Ambos",
        "Antes",
        "Aquel",
        "Aquella",
        "Aquellas",
        "Aquellos",
        "Aquí",
        "Así",
        "Aunque",
        "Ayer",
        "Cada",
        "Como",
        "Con",
        "Cualquier",
        "Cuando",
        "Cuál",
        "Cuánta",
        "Cuánto",
        "Cómo",
        "Debe",
        "Deben",
        "Después",
        "Dicha",
        "Dicho",
        "Dónde",
        "El",
        "Ella",
        "Ellas",
        "Ellos",
        "En",
        "Entonces",
        "Era",
        "Es",
        "Esa",
        "Esas",
        "Ese",
        "Eso",
        "Esos",
        "Esta",
        "Estaba",
        "Estas",
        "Este",
        "Esto",
        "Estos",
        "Está",
        "Están",
        "Fue",
        "Había",
        "Hace",
        "Hay",
        "Hoy",
        "Hubo",
        "La",
        "Las",
        "Le",
        "Les",
        "Lo",
        "Los",
        "Luego",
        "Me",
        "Mi",
        "Mientras",
        "Mis",
        "Muchas",
        "Muchos",
        "Nada",
        "Nadie",
        "Ni",
        "Ninguna",
        "Ninguno",
        "No",
        "Nos",
        "Nosotros",
        "Nuestra",
        "Nuestras",
        "Nuestro",
        "Nuestros",
        "Nunca",
        "Otra",
        "Otro",
        "Para",
        "Pero",
        "Pocas",
        "Pocos",
        "Por",
        "Porque",
        "Primero",
        "Puede",
        "Pueden",
        "Pues",
        "Que",
        "Quizá",
        "Quizás",
        "Quién",
        "Qué",
        "Se",
        "Si",
        "Siempre",
        "Sin",
        "Son",
        "Su",
        "Sus",
        "Sí",
        "Tal",
        "También",
        "Tampoco",
        "Te",
        "Tiene",
        "Tienen",
        "Todavía",
        "Todo",
        "Todos",
        "Tu",
        "Tus",
        "Un",
        "Una",
        "Unas",
        "Unos",
        "Usted",
        "Ustedes",
        "Varias",
        "Varios",
        "Vuestra",
        "Vuestro",
        "Y",
        "Ya",
        "Yo",
        "Él",
    ]
)

# Words that usually take a number ("by 2."), so a digit after them is not an inline list marker.
_QUANTITY_WORDS = frozenset(
    [
        "by",
        "to",
        "of",
        "at",
        "in",
        "on",
        "from",
        "than",
        "per",
        "times",
        "and",
        "or",
        "about",
        "around",
        "over",
        "under",
        "approximately",
        "approx",
        "aprox",
        "de",
        "a",
        "en",
        "por",
        "para",
        "con",
        "hasta",
        "desde",
        "entre",
        "y",
        "o",
        "sobre",
        "unos",
        "unas",
    ]
)

# Words after which "N. M" reads as a numbered reference with a stray space, not two sentences.
_REFERENCE_WORDS = frozenset(
    [
        "chapter",
        "section",
        "page",
        "figure",
        "table",
        "step",
        "part",
        "item",
        "line",
        "version",
        "volume",
        "appendix",
        "capítulo",
        "sección",
        "página",
        "figura",
        "tabla",
        "paso",
        "parte",
        "línea",
        "versión",
        "volumen",
        "apéndice",
    ]
)
# Number signs: "No. 5", "nos. 3-4", "Nr. 7" abbreviate "number", "ext. 204" a telephone extension; they take
# the digits after them.
_NUMBER_SIGNS = frozenset(("no", "nos", "nr", "nro", "n", "ext"))


def split_sentences(text: str) -> list[str]:
    """The units of `text`, each a verbatim slice of it."""
    return [text[s:e] for s, e in split_sentence_spans(text)]


def split_sentence_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) offsets of each unit of `text`: ordered, disjoint, stripped, non-empty."""
    return _spans(text, _regions)


def _split_spans_full(text: str) -> list[tuple[int, int]]:
    """The same spans from one markdown-it parse of the whole text: the reference behaviour."""
    return _spans(text, _regions_full)


def _spans(
    text: str, regions: Callable[[str, list[str], list[int]], list[tuple[int, int, _Kind]]]
) -> list[tuple[int, int]]:
    """Cut `text` along the line ranges that `regions` finds in its normalised lines, given the lines that may
    open or close an admonition or content tab."""
    if not text or text.isspace():
        return []
    src = _md_source(text)
    lines = src.split("\n")
    starts = list(accumulate(map(_PLUS_ONE, map(len, lines)), initial=0))
    marked = _marked_lines(src, starts)
    if len(src) == len(text):  # no "\r\n": every line break is one character in both
        starts[-1] = len(text)
    else:
        starts = [0, *[m.end() for m in _NEWLINE.finditer(text)], len(text)]
    spans: list[tuple[int, int]] = []
    cjk = "。" in text or "！" in text or "？" in text or "．" in text
    for first, last, kind in regions(src, lines, marked):
        a, b = starts[first], starts[last]
        if kind is _Kind.WHOLE:
            _emit(text, a, b, spans)
        elif kind is _Kind.LINES:
            for line in range(first, last):
                _emit(text, starts[line], starts[line + 1], spans)
        else:
            segment = text[a:b]
            if not segment or segment.isspace():
                continue
            prose = kind is _Kind.PROSE
            cuts = _enumeration_cuts(segment, False)
            if prose:
                cuts = _sentence_cuts(segment, cuts, cjk)
                if marked and bisect_left(marked, first) < bisect_left(marked, last):
                    cuts = _admonition_cuts(segment, cuts)
            prev = a
            for cut in cuts:
                _emit(text, prev, a + cut, spans)
                prev = a + cut
            _emit(text, prev, b, spans)
    return spans


def _marked_lines(src: str, starts: list[int]) -> list[int]:
    """The indices of the lines of `src` (starting at `starts`) that start with an admonition or content tab
    marker: only the paragraphs holding one are searched for the lines themselves."""
    return [bisect_left(starts, m.start()) for m in _MARK_AT_LINE.finditer("\n" + src)]


def _admonition_cuts(seg: str, cuts: list[int]) -> list[int]:
    """`cuts` and a cut on each side of every admonition line of `seg`; a sentence cut inside one goes."""
    lines = [m.span() for m in _ADMONITION_LINE.finditer(seg)]
    if not lines:
        return cuts
    inside = [c for c in cuts if not any(a < c < b for a, b in lines)]
    return sorted({*inside, *(p for span in lines for p in span if 0 < p < len(seg))})


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


def _md_source(text: str) -> str:
    """What markdown-it sees: lines end in "\n" only (as _NEWLINE counts them), no NUL."""
    if "\r" in text or "\0" in text:
        return _NEWLINE.sub("\n", text).replace("\0", "\ufffd")
    return text


def _regions_full(src: str, lines: list[str], marked: list[int]) -> list[tuple[int, int, _Kind]]:
    """Disjoint line ranges covering the text, each with how it is to be cut."""
    try:
        blocks = _container_bodies(_blocks(_parse(src), 0), lines, marked)
    except Exception:  # the splitter must never raise; fall back to plain prose
        return [(0, len(lines), _Kind.PROSE)]
    return _cover(blocks, lines)


def _regions(src: str, lines: list[str], marked: list[int]) -> list[tuple[int, int, _Kind]]:
    """_regions_full's answer, calling markdown-it only on the parts that are not simple blocks.

    markdown-it's block parser costs most of the time, yet most lines of a document sit in plain
    paragraphs, ATX headings, fenced code and flat lists, which a top-level scan recognises exactly.
    """
    try:
        blocks = _scan(lines)
        if blocks is not None:
            blocks = _container_bodies(blocks, lines, marked)
    except Exception:
        blocks = None
    if blocks is None:
        return _regions_full(src, lines, marked)
    return _cover(blocks, lines)


def _container_bodies(
    blocks: list[tuple[int, int, _Kind]], lines: list[str], marked: list[int]
) -> list[tuple[int, int, _Kind]]:
    """`blocks` with each indented code block that is an admonition's or content tab's body (the nearest
    unindented line above it opens one) replaced by the blocks of its text, dedented by four columns. Only
    the `marked` lines may open one."""
    if not any(_CONTAINER_OPENER.match(lines[i]) for i in marked):
        return blocks
    out: list[tuple[int, int, _Kind]] = []
    for first, last, kind in blocks:
        if kind is _Kind.WHOLE and _BODY_INDENT.match(lines[first]) and _opened(lines, first):
            body = [_BODY_INDENT.sub("", line, count=1) for line in lines[first:last]]
            out.extend(_blocks(_parse("\n".join(body) + "\n"), first))
        else:
            out.append((first, last, kind))
    return out


def _opened(lines: list[str], i: int) -> bool:
    """Whether the nearest line above `i` that is neither blank nor indented like a body opens a container."""
    j = i - 1
    while j >= 0 and (not lines[j].strip() or _BODY_INDENT.match(lines[j])):
        j -= 1
    return j >= 0 and _CONTAINER_OPENER.match(lines[j]) is not None


def _parse(src: str) -> list[Token]:
    tokens: list[Token] = []
    _MD.block.parse(src, _MD, {}, tokens)
    return tokens


def _blocks(tokens: list[Token], offset: int) -> list[tuple[int, int, _Kind]]:
    """The line ranges (shifted by `offset`) of the blocks that decide how lines are cut."""
    blocks: list[tuple[int, int, _Kind]] = []
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
        if kind is not None and tok.map is not None:
            blocks.append((tok.map[0] + offset, tok.map[1] + offset, kind))
    return blocks


def _cover(blocks: list[tuple[int, int, _Kind]], lines: list[str]) -> list[tuple[int, int, _Kind]]:
    """Clip `blocks` to be disjoint and fill the gaps between them with prose, except a lone blank line:
    it would only be cut to nothing."""
    regions: list[tuple[int, int, _Kind]] = []
    covered = 0
    n_lines = len(lines)
    for first, last, kind in blocks:
        first, last = max(first, covered), min(last, n_lines)
        if first >= last:
            continue
        if first > covered and (first - covered > 1 or lines[covered].strip()):
            regions.append((covered, first, _Kind.PROSE))
        regions.append((first, last, kind))
        covered = last
    if covered < n_lines:
        regions.append((covered, n_lines, _Kind.PROSE))
    return regions


def _scan(lines: list[str]) -> list[tuple[int, int, _Kind]] | None:
    """_blocks of the whole document, or None when only a full parse can tell.

    Lines are walked at the top level, where no block is open. Simple blocks are taken directly;
    anything else, up to the next simple block that follows a blank line at column 0, goes to
    markdown-it. Such a cut is safe unless a fence or HTML block is still open there (the only
    blocks that survive a blank line and an unindented line), which the parse itself reveals.
    """
    n = len(lines)
    blocks: list[tuple[int, int, _Kind]] = []
    i = 0
    while i < n:
        if not lines[i].strip(" \t"):
            i += 1
            continue
        end = _simple_block(lines, i, blocks)
        if end is not None:
            i = end
            continue
        end = _run_end(lines, i)
        tokens = _parse("\n".join(lines[i:end]) + ("\n" if end < n else ""))
        if end < n and any(tok.type in _OPEN_ENDED and tok.map and tok.map[1] >= end - i for tok in tokens):
            end = n
            tokens = _parse("\n".join(lines[i:]))
        if any(tok.level >= _DEEP for tok in tokens):
            return None
        blocks.extend(_blocks(tokens, i))
        i = end
    return blocks


def _simple_block(lines: list[str], i: int, blocks: list[tuple[int, int, _Kind]]) -> int | None:
    """If top-level line `i` starts a paragraph, ATX heading, fence, HTML comment or list of plain
    items whose extent is certain without markdown-it, append its blocks and return where it ends."""
    line = lines[i]
    body = line.lstrip(" ")
    if len(line) - len(body) > 3:
        return None
    lead = body[0]
    if lead == "#" or body.startswith(("```", "~~~", "<!--")):
        if "|" in line:  # a table header, if a delimiter row follows
            return None
        if lead == "#":
            end = i + 1 if _ATX.match(body) else None
        elif lead == "<":
            end = _comment_end(lines, i)
        else:
            fence = _fence_open(body)
            end = None if fence is None else _fence_end(lines, i, *fence)
        kind = _Kind.WHOLE
    elif _ITEM.match(line):
        return _simple_list(lines, i, blocks)
    elif lead == "[" or _plain(body):
        end = _paragraph_end(lines, i)
        kind = _Kind.PROSE
    else:
        return None
    if end is not None:
        blocks.append((i, end, kind))
    return end


def _plain(body: str) -> bool:
    """Whether a line whose text after an indent under 4 columns is `body` can only be paragraph
    text (a "[" that may open a link reference definition is left to the caller). A "|" is fine:
    it makes a table only over a delimiter row, which is not plain."""
    lead = body[0]
    if lead in "|:-" and "-" in body and not body.strip("|-: \t"):
        return False
    if lead in "-*+_=":
        if lead in "-*+" and body[1:2] in ("", " ", "\t"):
            return False
        return bool(body.strip(lead + " \t"))
    if lead in "`~":
        return not body.startswith(lead * 3)
    if lead in "0123456789":
        return _ORDERED.match(body) is None
    return lead not in "#><\t"


def _paragraph_end(lines: list[str], i: int) -> int | None:
    """The blank line (or end) closing the paragraph that starts at `i`, when no line of it can
    start another block; None otherwise."""
    n = len(lines)
    reference = lines[i].lstrip(" ")[0] == "["
    j = i + 1
    while j < n:
        line = lines[j]
        body = line.lstrip(" \t")
        if not body:
            break
        indent = len(line) - len(body)
        if indent < 4 and "\t" not in line[:indent] and not _plain(body):
            return None
        j += 1
    if reference and any("]:" in line for line in lines[i:j]):
        return None
    return j


def _simple_list(lines: list[str], i: int, blocks: list[tuple[int, int, _Kind]]) -> int | None:
    """Top-level list at `i` whose items are marker lines of plain text (continued by plain lines),
    ended by a blank line and an unindented line that cannot continue it, or the end. An item may
    hold a list of its own, started on the line after its text, up to _NESTED_LISTS deep; a blank
    line may only come before an unindented item or the end.
    """
    n = len(lines)
    items = []
    columns: list[int] = []  # the content column of each item the current line may belong to, outermost first
    j = i
    blank = False
    while j < n:
        line = lines[j]
        if not line.strip(" \t"):
            blank = True
            j += 1
            continue
        body = line.lstrip(" ")
        item = _ITEM.match(body)
        indent = len(line) - len(body)
        if item is None or (blank and indent):  # after a blank line, since plain lines continue an item
            if line[0] in _LIST_LEAD or line[0] in " \t":
                return None
            break
        blank = False
        closes = False
        while columns and columns[-1] > indent:
            columns.pop()
            closes = True
        if columns or indent:  # a nested item, placed as CommonMark places it or left to markdown-it
            if indent - (columns[-1] if columns else 0) > 3 or len(columns) >= _NESTED_LISTS:
                return None
            if not closes and body[item.end() - 2] in ".)" and int(body[: item.end() - 2]) != 1:
                return None  # it would interrupt the paragraph above it, which only "1." may do
        columns.append(indent + item.end())
        start = j
        j += 1
        while j < n and lines[j].strip(" \t") and not _ITEM.match(lines[j].lstrip(" ")):
            if not _plain(lines[j].lstrip(" \t")):
                return None
            j += 1
        text = body[item.end() :]
        if text[0] == "[":
            if any("]:" in line for line in lines[start:j]):
                return None
        elif not _plain(text):
            return None
        items.append((start, j, _Kind.ITEM))
    blocks.extend(items)
    return j


def _comment_end(lines: list[str], i: int) -> int:
    """The line after the one closing the HTML comment opened at `i` (blank lines do not end it), or the number
    of lines when none does."""
    for j in range(i, len(lines)):
        if "-->" in lines[j]:
            return j + 1
    return len(lines)


def _fence_open(body: str) -> tuple[str, int] | None:
    """(marker, length) when `body` (a line without its indent) opens a fenced code block."""
    marker = body[0]
    length = len(body) - len(body.lstrip(marker))
    if length < 3 or (marker == "`" and "`" in body[length:]):
        return None
    return marker, length


def _fence_end(lines: list[str], i: int, marker: str, length: int) -> int:
    """The line after the fence opened at `i` closes, or the number of lines when it never does."""
    for j in range(i + 1, len(lines)):
        if _fence_closes(lines[j], marker, length):
            return j + 1
    return len(lines)


def _fence_closes(line: str, marker: str, length: int) -> bool:
    body = line.lstrip(" ")
    if body[:1] != marker or len(line) - len(body) > 3:
        return False
    rest = body.lstrip(marker)
    return len(body) - len(rest) >= length and not rest.strip(" \t")


def _run_end(lines: list[str], i: int) -> int:
    """Where to stop the markdown-it run that starts at `i`: the next unindented line that may
    start a simple block other than a list after a blank line, outside what looks like a fence."""
    fence: tuple[str, int] | None = None
    blank = False
    for j in range(i, len(lines)):
        line = lines[j]
        if fence is not None:
            if _fence_closes(line, *fence):
                fence = None
            continue
        body = line.lstrip(" \t")
        if not body:
            blank = True
            continue
        indent = len(line) - len(body)
        if (
            blank
            and not indent
            and j > i
            and line[0] not in _LIST_LEAD
            and (line[0] in "#[" or _plain(line) or (line[0] in "`~" and _fence_open(line)))
        ):
            return j
        blank = False
        if body[:3] in ("```", "~~~") and indent < 4 and "\t" not in line[:indent]:
            fence = _fence_open(body)
    return len(lines)


def _enumeration_cuts(seg: str, inline: bool) -> list[int]:
    """Cuts before inline list markers: "1) a 2) b", "a. x b. y", "• x • y" from the start of
    `seg`, and, when `inline`, runs counting up from "1", "a" or "i" that open after a finished
    sentence ("Do this. 1. Stop it 2. Start it"). A mid-line run needs two markers in order:
    one "a)" after a full stop is as likely a stray letter as a list."""
    head = len(seg) - len(seg.lstrip())
    if head >= len(seg):
        return []
    first = seg[head]
    if first in _BULLETS:
        return [m.start() for m in re.finditer(r"(?<=\s)" + first, seg)]
    m = None
    if first.isdigit() or "a" <= first <= "z" or first == "(":
        m = _ENUM_ANY.match(seg, head)
    if m is not None and m.group(1) and m.group(3) != ")":
        m = None
    if m is None and not inline:
        return []
    kind: str | None = None
    style: tuple[str | None, str] | None = None
    expected = 0
    positions: list[int] = []
    needed = 1
    begin = head
    if m is not None:
        tok = m.group(2)
        kind = _RUN_KINDS.get(tok) or ("num" if tok.isdigit() else "alpha" if len(tok) == 1 else "roman")
        expected = (_marker_value(kind, tok) or 0) + 1
        style = (m.group(1), m.group(3))
        begin = m.end()
    cuts: list[int] = []
    for mm in _ENUM_ANY.finditer(seg, begin):
        paren, tok, suffix = mm.groups()
        if paren and suffix != ")":
            continue
        pos = mm.start()
        if kind is not None and (paren, suffix) == style and _marker_value(kind, tok) == expected:
            if _previous_word(seg, pos).lower() not in _QUANTITY_WORDS:
                positions.append(pos)
                expected += 1
            continue
        new = _RUN_KINDS.get(tok)
        if inline and new is not None and _after_sentence(seg, pos):
            if len(positions) >= needed:
                cuts.extend(positions)
            kind, style, expected, positions, needed = new, (paren, suffix), 2, [pos], 2
    if len(positions) >= needed:
        cuts.extend(positions)
    return cuts


_RUN_KINDS = {"1": "num", "a": "alpha", "i": "roman"}


def _run_start(seg: str, pos: int) -> bool:
    """Whether a marker that may open a run ("1.", "a)", "(i)") sits at `pos`."""
    m = _ENUM_ANY.match(seg, pos)
    return m is not None and m.group(2) in _RUN_KINDS and (not m.group(1) or m.group(3) == ")")


def _marker_value(kind: str, tok: str) -> int | None:
    if kind == "num":
        return int(tok) if tok.isdigit() else None
    if kind == "alpha":
        return ord(tok) - 96 if len(tok) == 1 and tok.isalpha() else None
    return _ROMAN.get(tok)


def _after_sentence(seg: str, pos: int) -> bool:
    """Whether a terminator (and its closers) comes before `pos`, across white space."""
    j = pos
    lo = max(0, pos - _MAX_TOKEN)
    while j > lo and seg[j - 1].isspace():
        j -= 1
    while j > lo and seg[j - 1] in _CLOSERS:
        j -= 1
    return j > 0 and seg[j - 1] in _TERMINATORS


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


def _sentence_cuts(seg: str, enum_cuts: list[int], cjk: bool) -> list[int]:
    """Merge `enum_cuts` with the sentence boundaries of the prose `seg` (which may hold CJK
    stops only if `cjk`). The first list marker met after a stop has the enumeration runs
    looked for again, now mid-line too, once per segment."""
    cuts: list[int] = []
    ei = 0
    n_enum = len(enum_cuts)
    last_cut = 0
    inline = False
    prev = -1
    guarded: list[tuple[int, int]] | None = None  # read at the first candidate: most segments have none
    for m in _CANDIDATE.finditer(seg):
        p, nxt = m.start(), m.end()
        if guarded is None:
            guarded = _inline_spans(seg) if ("`" in seg or "[" in seg or "<code" in seg) else []
            starts = [a for a, _ in guarded]
        if guarded and (k := bisect_right(starts, p) - 1) >= 0 and p < guarded[k][1]:
            continue
        if not inline and nxt > m.end(2) and seg[nxt] in "1ai(" and _run_start(seg, nxt):
            inline = True
            enum_cuts = _enumeration_cuts(seg, True)
            n_enum = len(enum_cuts)
            ei = bisect_right(enum_cuts, prev)
        prev = p
        while ei < n_enum and enum_cuts[ei] <= p:
            last_cut = max(last_cut, enum_cuts[ei])
            cuts.append(enum_cuts[ei])
            ei += 1
        cut = _cut(seg, m, last_cut)
        if cut is not None and cut > last_cut:
            cuts.append(cut)
            last_cut = cut
    cuts.extend(enum_cuts[ei:])
    if cjk and _CJK_STOP.search(seg) is not None:
        cuts = sorted(set(cuts).union(_cjk_cuts(seg)))
    elif n_enum:
        cuts = sorted(set(cuts))
    return cuts


# Inline code, a link's text and <code> elements are never cut: `git commit -m "Fix. Update"` or
# [Step 2. Configure](#step-2) would otherwise leave a unit with an unclosed backtick or bracket.
# The leading lookahead lets the regex engine skip to the three characters that can open one.
_INLINE_GUARDED = re.compile(
    r"(?=[`\[<])(?:(?<!`)(`++)(?!`).+?(?<!`)\1(?!`)|\[[^\[\]\n]*+\](?=\()|<code>.*?</code>)", re.S
)


def _inline_spans(seg: str) -> list[tuple[int, int]]:
    """The (start, end) of each inline code span, link text and <code> element of `seg`, in order."""
    return [m.span() for m in _INLINE_GUARDED.finditer(seg)]


def _cut(seg: str, m: re.Match[str], unit_start: int) -> int | None:
    """Where, if anywhere, the _CANDIDATE match `m` ends a sentence."""
    p, q, r, nxt = m.start(), m.end(1), m.end(2), m.end()
    if nxt == r:
        return _glued(seg, p, q, r, unit_start)
    c = seg[nxt]
    if m.start(3) >= 0:
        return _citation(seg, p, r, m.end(3), c, unit_start)
    if c.isupper() or c in _OPENERS or _CAMEL_NAME.match(seg, nxt):
        if c in "¿¡" and seg[nxt + 1 : nxt + 2].islower() and _ellipsis(seg[p:q]):
            return None  # "Me pregunto... ¿será?": lower case after an ellipsis goes on
        return _boundary(seg, p, q, r, nxt, unit_start, False)
    if c.isdigit():
        return _boundary(seg, p, q, r, nxt, unit_start, True)
    if c in _DASHES:
        j = nxt
        stop = min(len(seg), nxt + 4)
        while j < stop and (seg[j] in _DASHES or seg[j] == " "):
            j += 1
        if j < len(seg) and seg[j].isupper():
            return _boundary(seg, p, q, r, nxt, unit_start, False)
    return None


def _ellipsis(cluster: str) -> bool:
    return cluster[-1] == "…" or cluster.endswith("..")


def _token(seg: str, p: int, unit_start: int) -> int:
    """Start of the token that ends at `p`, past any opening marks."""
    token_start = p
    lo = max(unit_start, p - _MAX_TOKEN)
    while token_start > lo and not seg[token_start - 1].isspace():
        token_start -= 1
    while token_start < p and seg[token_start] in _TOKEN_LEAD:
        token_start += 1
    return token_start


def _abbreviation(lower: str) -> bool:
    return lower in _NO_SPLIT or lower in _END_CAPABLE or lower in _NUMBER_SIGNS


def _glued(seg: str, p: int, q: int, r: int, unit_start: int) -> int | None:
    """A stop with no space after it ("done.Next"): a boundary only between a plain word and a
    capitalised sentence opener (also after a code span or link: "`x`.Then"), or before an
    inverted mark. Names with dots (example.com, Node.js, v1.2.3, models.Model, e.g.) have a
    dot, a digit or a word that is no opener on one side."""
    if seg[r] in "¿¡":
        return r
    if p == 0 or seg[p - 1] not in "`)*":
        word = seg[_token(seg, p, unit_start) : p]
        if len(word) < 2 or not word.replace(",", "").isalnum() or _abbreviation(word.lower()):
            return None
        if not (word[-1].islower() or word[-1].isdigit()):
            return None
    nxt = _GLUED_NEXT.match(seg, r)
    return r if nxt is not None and nxt.group(1) in _STARTERS else None


def _citation(seg: str, p: int, r: int, end: int, c: str, unit_start: int) -> int | None:
    """A footnote or citation mark glued to a full stop ("rains.[3] Then", "rains.³ Then",
    "rains.3 Then", "(Ito 2003).4 Then") belongs to the sentence it closes. Brackets and
    superscripts say so themselves; plain digits count only after a word or a closing bracket,
    so decimals ("3.14 The") and versions stay whole."""
    if not (c.isupper() or c in _OPENERS):
        return None
    if not seg[r].isdecimal():
        return end
    if p > 0 and seg[p - 1] in _CLOSERS:
        return end
    word = seg[_token(seg, p, unit_start) : p]
    if len(word) < 2 or not word.isalpha() or _abbreviation(word.lower()):
        return None
    return end


def _cjk_cuts(seg: str) -> list[int]:
    """Cuts after full-width and CJK stops, which need no space after them. A full-width point
    between Latin letters or digits ("３．５") is a decimal or a name, not a stop."""
    cuts = []
    n = len(seg)
    for m in _CJK_CANDIDATE.finditer(seg):
        e = m.end()
        if e >= n:
            continue
        s = m.start()
        if m.group() == "．" and (_latin_alnum(seg[e]) or (s and _latin_alnum(seg[s - 1]))):
            continue
        cuts.append(e)
    return cuts


def _latin_alnum(ch: str) -> bool:
    if ch.isascii():
        return ch.isalnum()
    return "０" <= ch <= "９" or "Ａ" <= ch <= "Ｚ" or "ａ" <= ch <= "ｚ"


def _boundary(seg: str, p: int, q: int, r: int, nxt: int, unit_start: int, digit: bool) -> int | None:
    """Where to cut for the terminators seg[p:q] and closers seg[q:r] before seg[nxt:]."""
    cluster = seg[p:q]
    token_start = _token(seg, p, unit_start)
    word = seg[token_start:p]

    if _MARKER_TOKEN.fullmatch(word) and _only_bullets(seg, unit_start, token_start):
        return None
    if digit and not _digit_may_follow(seg, word, token_start, q, r):
        return None
    if cluster == ".":
        if p >= 2 and seg[p - 1] == " " and seg[p - 2] == ".":
            return _spaced_ellipsis(seg, p, r)
        if q == r:
            return _after_period(seg, word, token_start, nxt, unit_start, r)
        if seg[q] in "ºª":  # "D.ª Ana", "N.º 5" abbreviate; "el 3.º Congreso" is an ordinal
            if not word.isdigit():
                return None
            return r if _next_word(seg, nxt) in _STARTERS else None
        return r
    if (
        ("." in cluster or "…" in cluster)
        and p > 0
        and seg[p - 1] in "[("
        and q < len(seg)
        and seg[q] in "])"
    ):
        return None
    return r


def _digit_may_follow(seg: str, word: str, token_start: int, q: int, r: int) -> bool:
    """A sentence may open with a number ("It is 2. 2 + 2 is 4."), but not after a number sign
    ("No. 5", "n.º 5") or a numbered reference ("chapter 2. 3")."""
    if q != r:
        return seg[r - 1] not in "ºª"
    lower = word.lower()
    if lower in _NUMBER_SIGNS:
        return False
    if word[:1].isdigit():
        return _previous_word(seg, token_start).lower() not in _REFERENCE_WORDS
    return True


def _only_bullets(seg: str, a: int, b: int) -> bool:
    return all(seg[i].isspace() or seg[i] in _BULLETS for i in range(a, b))


def _spaced_ellipsis(seg: str, p: int, r: int) -> int | None:
    """ ". . . ." chains: cut after "word." that precedes one, or after a free four-dot one."""
    first = p
    dots = 1
    while first >= 2 and seg[first - 1] == " " and seg[first - 2] == ".":
        first -= 2
        dots += 1
    if first > 0 and not seg[first - 1].isspace():
        return first + 1 if seg[first - 1].isalnum() else None
    return r if dots >= 4 else None


def _after_period(seg: str, word: str, token_start: int, nxt: int, unit_start: int, r: int) -> int | None:
    """Cut after a lone period ending `word`, unless it is an abbreviation or an initial."""
    lower = word.lower()
    if lower in _NO_SPLIT:
        return None
    if lower == "etc":  # closes a list; a capital after it opens a sentence, not a name
        return r if _next_word(seg, nxt)[:1].isupper() else None
    if lower in _TIMES or (lower == "m" and _previous_word(seg, token_start) in ("a.", "p.")):
        lead = seg[unit_start:token_start].split() if token_start - unit_start <= _MAX_TOKEN else []
        if lead and len(lead) <= 4 and lead[0] in _LEAD_PREPOSITIONS:
            return None
        following = _next_word(seg, nxt)
        return r if following[:1].isupper() and following not in _TIME_QUALIFIERS else None
    if lower in _UNITS and _NUMBER.fullmatch(_previous_word(seg, token_start)):
        return r if _next_word(seg, nxt)[:1].isupper() else None
    if lower in _END_CAPABLE or _INITIALISM.fullmatch(word) or _plural_initials(word):
        return r if _next_word(seg, nxt) in _STARTERS else None
    if len(word) == 1 and word.isalpha():
        if word.islower():
            return None
        before = _previous_word(seg, token_start)
        if word == "C" and before in ("a.", "d."):  # "a. C.", "d. C.": an era, which may end
            return r if _next_word(seg, nxt) in _STARTERS else None
        if token_start <= unit_start or not before or before[-1] in _TERMINATORS:
            return None
        if _INITIAL_AHEAD.match(seg, nxt):
            return None
        return r if _next_word(seg, nxt) in _STARTERS else None
    return r


def _plural_initials(word: str) -> bool:
    """Spanish plural abbreviations double their letter: "EE. UU.", "RR. HH.", "FF. AA."."""
    return len(word) == 2 and word[0] == word[1] and word[0].isupper()


def _next_word(seg: str, pos: int) -> str:
    m = _NEXT_WORD.match(seg, pos)
    return m.group(1) if m else ""
