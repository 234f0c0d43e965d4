"""Split Markdown documents into heading-scoped, overlapping chunks for indexing.

Ported from the original TypeScript chunker (sections split by headings, then
word windows of ``chunk_size`` words overlapping by ``chunk_overlap`` words),
with these deliberate differences:

* A chunk's text is a verbatim slice of the source: ``content[c.start:c.end]
  == c.text``. Leading/trailing white space is trimmed by moving the offsets,
  so code blocks, tables and lists keep their layout.
* Headings, fences, tables, HTML and indented code blocks are found with the
  CommonMark parser (markdown-it-py), so ``#`` lines inside code are not
  headings. Only top-level headings (not those in lists or block quotes) start
  sections.
* Heading path entries are the heading's level in ``#`` and its text, white space
  collapsed (``"## Install"``), so that paths look the same whichever heading syntax
  the author used: setext, or ATX with or without closing ``#``s.
* A chunk boundary never falls inside a fenced or indented code block, an HTML
  block or a table, unless that block alone exceeds ``chunk_size`` words; then
  it is split at line boundaries (and a single over-long line at words).
  Overlap is made of whole blocks, so it may be smaller than ``chunk_overlap``
  when the tail block is bigger than the overlap or the next block needs room.
* A window that would end inside a sentence (of prose or a list item, as the sentence
  splitter sees them) ends instead after the last sentence that fits, if that gives up
  at most a fifth of ``chunk_size``, and the next window's overlap is the whole
  sentences that fit in ``chunk_overlap`` (none when the last one is longer). So a
  chunk, its passage and an extractive answer open on a sentence, not "not dropped
  (...)". Only a sentence longer than that fifth is still cut at a word, as the seed
  cuts every window.
* A run of more than 512 characters without a space (a base64 image, a line of
  minified code) is no text a reader reads: it is left out, and the chunks
  around it end before it and start after it. Inside a block it counts as 64
  words per 512 characters, so that it never makes a chunk of many kilobytes.
* YAML (``---``) or TOML (``+++``) front matter supplies the title and is
  never indexed. Offsets always refer to the full string passed in (BOM and
  front matter included).
* In MDX files (``.mdx``), top-level ``import``/``export`` statements and
  ``{/* ... */}`` comments are the site's build code and notes, not text a reader
  sees: no chunk starts or ends in them (they stay inside a chunk's slice only
  when it spans them). Components' tags and their content are kept.
* ``\\r\\n``, lone ``\\r`` line endings and a leading BOM are handled.
* As in the original design, a document made only of headings becomes one chunk with the
  whole body and an empty heading path.

The module is pure Python (no Django): the caller reads settings such as
CHUNK_SIZE / CHUNK_OVERLAP and passes them in.
"""

from __future__ import annotations

import datetime
import hashlib
import re
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import PurePath
from typing import Any, NamedTuple

import yaml
from markdown_it import MarkdownIt
from markdown_it.token import Token

from biblioteca.text.sentences import split_sentence_spans

__all__ = [
    "DEFAULT_CHUNK_OVERLAP",
    "DEFAULT_CHUNK_SIZE",
    "Chunk",
    "ParsedMarkdown",
    "chunk_markdown",
    "content_hash",
    "document_title",
    "heading_words",
    "parse_front_matter",
    "section_openers",
]

DEFAULT_CHUNK_SIZE = 500
DEFAULT_CHUNK_OVERLAP = 50

_BOM = "\ufeff"
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_WORD = re.compile(r"\S+")
# Longer runs without a space are left out of every chunk; inside a block, each 512 characters weigh what
# prose of that length would (about 8 characters a word).
_LONG_WORD = 512
_LONG_WORD_WEIGHT = _LONG_WORD // 8
_ATOMIC_TOKENS = frozenset({"fence", "code_block", "html_block", "table_open"})
_MARKDOWN = MarkdownIt("commonmark").enable("table")
# MDX's rules: `import`/`export` then a space, unindented, at the top level; a paragraph can't be interrupted,
# so a top-level paragraph that starts so is the statement, and both end at a blank line.
_MDX_ESM = re.compile(r"(?:import|export)[ \t]")
_MDX_COMMENTS = re.compile(r"\s*(?:\{/\*(?:[^*]|\*(?!/\}))*\*/\}\s*)+")  # each character one way: linear


@dataclass(frozen=True)
class Chunk:
    """A piece of a document; ``text == content[start:end]`` of the original."""

    id: str
    filename: str
    title: str
    heading_path: tuple[str, ...]
    chunk_index: int
    text: str
    start: int
    end: int


@dataclass(frozen=True)
class ParsedMarkdown:
    """Front matter split from the body; ``body_start`` is an offset in the input."""

    title: str | None
    body_start: int
    front_matter: dict[str, Any] = field(default_factory=dict)


class _Piece(NamedTuple):
    """An unbreakable run of source text: a word, a whole block, or a block line; of no words, a run left out
    that no chunk spans. ``closes`` when a sentence or a block ends with it: a window may end there."""

    start: int
    end: int
    words: int
    closes: bool = True


@dataclass(frozen=True)
class _Section:
    heading_path: tuple[str, ...]
    first_line: int
    end_line: int


@dataclass(frozen=True)
class _Document:
    content: str
    front: ParsedMarkdown
    lines: list[tuple[int, int]]
    tokens: list[Token]
    # First line -> end line of blocks that are not indexed (an MDX file's statements and comments).
    hidden: dict[int, int] = field(default_factory=dict)


def content_hash(content: str) -> str:
    """Short, stable fingerprint used to detect changed documents."""
    return hashlib.sha256(content.encode("utf-8")).hexdigest()[:16]


def parse_front_matter(content: str) -> ParsedMarkdown:
    """Find a leading ``---`` YAML block; malformed YAML yields no title but never raises."""
    return _split_front_matter(content, _line_spans(content, _bom_length(content)))


def _is_mdx(filename: str) -> bool:
    return PurePath(filename).suffix.lower() == ".mdx"


def document_title(*, filename: str, content: str) -> str:
    """Front matter title, else the first H1's text, else the filename stem."""
    return _title(_analyse(content), filename)


def check_chunk_sizes(chunk_size: int, chunk_overlap: int) -> None:
    """Raise ValueError unless chunks hold at least a word and overlap by less than a whole chunk."""
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be at least 1, got {chunk_size}")
    if not 0 <= chunk_overlap < chunk_size:
        raise ValueError(
            f"chunk_overlap must be >= 0 and smaller than chunk_size ({chunk_size}), got {chunk_overlap}"
        )


def chunk_markdown(
    *,
    filename: str,
    content: str,
    title: str | None = None,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    chunk_overlap: int = DEFAULT_CHUNK_OVERLAP,
) -> list[Chunk]:
    """Split ``content`` into chunks of at most ``chunk_size`` words per heading section.

    An explicit non-blank ``title`` wins over the one derived by ``document_title``.
    """
    check_chunk_sizes(chunk_size, chunk_overlap)
    doc = _analyse(content, mdx=_is_mdx(filename))
    doc_title = title.strip() if title and title.strip() else _title(doc, filename)

    blocks = _atomic_blocks(doc)
    section_pieces = [(s, _pieces(doc, s, blocks, chunk_size)) for s in _sections(doc)]
    section_pieces = [(s, p) for s, p in section_pieces if p]
    if not section_pieces and doc.lines:
        whole = _Section((), 0, len(doc.lines))
        pieces = _pieces(doc, whole, {}, chunk_size)
        section_pieces = [(whole, pieces)] if pieces else []

    chunks: list[Chunk] = []
    for section, pieces in section_pieces:
        for start, end in _pack_around_gaps(pieces, chunk_size, chunk_overlap):
            index = len(chunks)
            chunks.append(
                Chunk(
                    id=f"{filename}#{index}",
                    filename=filename,
                    title=doc_title,
                    heading_path=section.heading_path,
                    chunk_index=index,
                    text=content[start:end],
                    start=start,
                    end=end,
                )
            )
    return chunks


def _bom_length(content: str) -> int:
    return 1 if content.startswith(_BOM) else 0


def _line_spans(content: str, start: int) -> list[tuple[int, int]]:
    """(start, end) of each line from ``start``, breaking exactly where markdown-it does."""
    spans: list[tuple[int, int]] = []
    line_start = start
    for match in _LINE_BREAK.finditer(content, start):
        spans.append((line_start, match.start()))
        line_start = match.end()
    spans.append((line_start, len(content)))
    return spans


def _split_front_matter(content: str, lines: list[tuple[int, int]]) -> ParsedMarkdown:
    """YAML between `---` lines (closed by `---` or `...`), or TOML between `+++` lines (Hugo, Zola)."""
    no_front_matter = ParsedMarkdown(title=None, body_start=lines[0][0], front_matter={})
    first_start, first_end = lines[0]
    opening = content[first_start:first_end].rstrip(" \t")
    if opening == "---":
        closings, load = ("---", "..."), _load_yaml
    elif opening == "+++":
        closings, load = ("+++",), _load_toml
    else:
        return no_front_matter
    for index in range(1, len(lines)):
        line_start, line_end = lines[index]
        if content[line_start:line_end].rstrip(" \t") in closings:
            body_start = lines[index + 1][0] if index + 1 < len(lines) else len(content)
            data = load(content[lines[1][0] : line_start])
            return ParsedMarkdown(title=_front_matter_title(data), body_start=body_start, front_matter=data)
    return no_front_matter


def _load_yaml(text: str) -> dict[str, Any]:
    try:
        data = yaml.safe_load(text)
    except Exception:
        return {}
    return data if isinstance(data, dict) else {}


def _load_toml(text: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except (tomllib.TOMLDecodeError, RecursionError):  # deep nesting overflows the parser
        return {}


def _front_matter_title(data: dict[str, Any]) -> str | None:
    value = data.get("title")
    if isinstance(value, bool) or not isinstance(value, (str, int, float, datetime.date)):
        return None
    text = " ".join(str(value).split())
    return text or None


def _analyse(content: str, *, mdx: bool = False) -> _Document:
    all_lines = _line_spans(content, _bom_length(content))
    front = _split_front_matter(content, all_lines)
    has_body = front.body_start < len(content)
    body_lines = [span for span in all_lines if span[0] >= front.body_start] if has_body else []
    tokens = _MARKDOWN.parse(content[front.body_start :]) if body_lines else []
    doc = _Document(content=content, front=front, lines=body_lines, tokens=tokens)
    if mdx:
        doc.hidden.update(_mdx_code(doc))
    return doc


def _mdx_code(doc: _Document) -> dict[int, int]:
    """First line -> end line of each top-level MDX statement (`import`, `export`) or comment block."""
    hidden: dict[int, int] = {}
    for token in doc.tokens:
        if token.type != "paragraph_open" or token.level != 0 or not token.map:
            continue
        first, end = token.map
        start, stop = doc.lines[first][0], doc.lines[end - 1][1]
        if _MDX_ESM.match(doc.content, start) or _MDX_COMMENTS.fullmatch(doc.content, start, stop):
            hidden[first] = end
    return hidden


def _top_headings(doc: _Document) -> list[tuple[Token, Token]]:
    return [
        (token, doc.tokens[i + 1])
        for i, token in enumerate(doc.tokens)
        if token.type == "heading_open" and token.level == 0 and token.map
    ]


def _title(doc: _Document, filename: str) -> str:
    if doc.front.title:
        return doc.front.title
    for heading, inline in _top_headings(doc):
        text = " ".join(inline.content.split())
        if heading.tag == "h1" and text:
            return text
    return PurePath(filename).stem or filename


def _heading_label(heading: Token, inline: Token) -> str:
    return ("#" * int(heading.tag[1]) + " " + " ".join(inline.content.split())).rstrip()


def _sections(doc: _Document) -> list[_Section]:
    sections: list[_Section] = []
    stack: list[tuple[int, str]] = []
    path: tuple[str, ...] = ()
    cursor = 0
    for heading, inline in _top_headings(doc):
        first, end = heading.map  # type: ignore[misc]
        sections.append(_Section(path, cursor, first))
        level = int(heading.tag[1])
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, _heading_label(heading, inline)))
        path = tuple(label for _, label in stack)
        cursor = end
    sections.append(_Section(path, cursor, len(doc.lines)))
    return sections


def _atomic_blocks(doc: _Document) -> dict[int, int]:
    """First line -> end line of every block that must not be cut, at any nesting depth."""
    blocks: dict[int, int] = {}
    last_end = -1
    for token in doc.tokens:
        if token.type in _ATOMIC_TOKENS and token.map:
            first, end = token.map
            if first < last_end:
                continue
            blocks[first] = end
            last_end = end
    return blocks


def _pieces(doc: _Document, section: _Section, blocks: dict[int, int], chunk_size: int) -> list[_Piece]:
    """Words of ordinary lines, whole ``blocks`` (first line -> end line) kept together."""
    pieces: list[_Piece] = []
    line = section.first_line
    run = line
    while line < section.end_line:
        block_end = min(doc.hidden.get(line, blocks.get(line, line)), section.end_line)
        if block_end == line:
            line += 1
            continue
        pieces.extend(_prose_pieces(doc, run, line))
        if line not in doc.hidden:
            pieces.extend(_block_pieces(doc, line, block_end, chunk_size))
        line = run = block_end
    pieces.extend(_prose_pieces(doc, run, line))
    return pieces


def _prose_pieces(doc: _Document, first: int, end: int) -> list[_Piece]:
    """The words of ordinary lines ``first`` to ``end``, each marked whether a sentence ends with it."""
    if first >= end:
        return []
    start, stop = doc.lines[first][0], doc.lines[end - 1][1]
    text = doc.content[start:stop]
    ends = {start + a + len(text[a:b].rstrip()) for a, b in split_sentence_spans(text)}
    return [piece._replace(closes=piece.end in ends) for piece in _word_pieces(doc.content, start, stop)]


def _word_pieces(content: str, start: int, end: int) -> list[_Piece]:
    return [
        _Piece(m.start(), m.end(), 1 if m.end() - m.start() <= _LONG_WORD else 0, closes=False)
        for m in _WORD.finditer(content, start, end)
    ]


def _weight(word: re.Match[str]) -> int:
    length = word.end() - word.start()
    return 1 if length <= _LONG_WORD else -(-length // _LONG_WORD) * _LONG_WORD_WEIGHT


def _block_pieces(doc: _Document, first: int, end: int, chunk_size: int) -> list[_Piece]:
    """The block as one piece; if too big, its lines; if a line is too big, its words."""
    whole = _text_piece(doc.content, doc.lines[first][0], doc.lines[end - 1][1])
    if whole is None or whole.words <= chunk_size:
        return [whole] if whole else []
    pieces: list[_Piece] = []
    for line_start, line_end in doc.lines[first:end]:
        line = _text_piece(doc.content, line_start, line_end)
        if line and line.words > chunk_size:
            pieces.extend(_word_pieces(doc.content, line_start, line_end))
        elif line:
            pieces.append(line)
    return pieces


def _text_piece(content: str, start: int, end: int) -> _Piece | None:
    """A piece spanning first to last word in [start, end), so chunks need no trimming."""
    words = list(_WORD.finditer(content, start, end))
    if not words:
        return None
    return _Piece(words[0].start(), words[-1].end(), sum(map(_weight, words)))


def _pack_around_gaps(pieces: Sequence[_Piece], size: int, overlap: int) -> list[tuple[int, int]]:
    """`_pack` of each run of pieces between two left out."""
    spans: list[tuple[int, int]] = []
    run: list[_Piece] = []
    for piece in [*pieces, _Piece(0, 0, 0)]:
        if piece.words:
            run.append(piece)
        elif run:
            spans.extend(_pack(run, size, overlap))
            run = []
    return spans


def _pack(pieces: Sequence[_Piece], size: int, overlap: int) -> list[tuple[int, int]]:
    """Greedy windows of whole pieces, in the original design's ``start = end - overlap`` loop, their edges moved
    to sentence ends where that costs little.

    The carried overlap is capped so the next window always has room for at
    least one new piece; otherwise a big block after the overlap would produce
    windows made only of repeated text.
    """
    spans: list[tuple[int, int]] = []
    count = len(pieces)
    first = 0
    while first < count:
        stop, words = first, 0
        while stop < count and (stop == first or words + pieces[stop].words <= size):
            words += pieces[stop].words
            stop += 1
        if stop < count:
            stop = _sentence_stop(pieces, first, stop, size // 5)
        spans.append((pieces[first].start, pieces[stop - 1].end))
        if stop >= count:
            break
        first = _overlap_start(pieces, first, stop, min(overlap, size - pieces[stop].words))
    return spans


def _sentence_stop(pieces: Sequence[_Piece], first: int, stop: int, reach: int) -> int:
    """Where a window ``first:stop`` ends instead, giving up at most ``reach`` words, so it closes a sentence."""
    given_up = 0
    end = stop
    while end - 1 > first and given_up <= reach:
        if pieces[end - 1].closes:
            return end
        end -= 1
        given_up += pieces[end].words
    return stop


def _overlap_start(pieces: Sequence[_Piece], first: int, stop: int, budget: int) -> int:
    """The next window's first piece: as many pieces before ``stop`` as ``budget`` words allow, the first of
    them opening a sentence; no overlap rather than one that opens mid-sentence, unless ``stop`` itself does."""
    carried = 0
    start = stop
    while start - 1 > first and carried + pieces[start - 1].words <= budget:
        start -= 1
        carried += pieces[start].words
    for candidate in range(start, stop + 1):
        if pieces[candidate - 1].closes:
            return candidate
    return start


def heading_level(label: str) -> int:
    """A heading's level (`## Install` -> 2), as a heading path entry or an ATX heading line spells it."""
    return len(label) - len(label.lstrip("#"))


_ATX_UNIT = re.compile(r"[ ]{0,3}(#{1,6})(?:[ \t]|$)")
_SETEXT_UNDERLINE = re.compile(r"[ ]{0,3}(?:=+|-+)[ \t]*")
# A first line that opens a block quote, list item, table, fence or HTML block: an underline below it is no
# setext heading's (or not a top-level one, where the chunker opens no section either).
_NOT_SETEXT = re.compile(
    r"[ ]{0,3}(?:[>|]|[-*+](?:[ \t]|$)|\d{1,9}[.)](?:[ \t]|$)|```|~~~|<[^\n]*>[ \t]*(?:\n|\Z))"
)
_BLANK_LINE = re.compile(r"\n[ \t]*\n")


def unit_heading_level(unit: str) -> int | None:
    """The level of the heading a sentence unit is, None if it is none: ATX (`## Install` -> 2) or setext, text
    over a line of `=` (1) or `-` (2), which the sentence splitter returns whole as one unit."""
    atx = _ATX_UNIT.match(unit)
    if atx:
        return len(atx.group(1))
    body, newline, underline = unit.rpartition("\n")
    if not newline or not body.strip() or not _SETEXT_UNDERLINE.fullmatch(underline):
        return None
    lead = len(body) - len(body.lstrip(" \t"))
    if lead > 3 or "\t" in body[:lead] or _NOT_SETEXT.match(body) or _BLANK_LINE.search(body + "\n"):
        return None
    return 1 if underline.strip()[0] == "=" else 2


# What a heading holds for the site's generator, not its reader: an attribute list closing it (`{ #install }`,
# `{#id .cls}`, kramdown's `{: #id}`) and empty anchor tags (`<span id="x"></span>`, `<a name="x"></a>`).
_HEADING_ANCHORS = re.compile(
    r"[ \t]*\{:?[ \t]*[#.][^{}\n]*\}[ \t]*$|<(span|a)\b[^<>]*>[ \t]*</\1[ \t]*>|<a[ \t]+(?:name|id)=[^<>]*/?>"
)


@lru_cache(maxsize=4096)
def shown_heading(label: str) -> str:
    """A title or heading path entry as a reader is shown it: without its anchors. They stay in what is
    embedded and searched (measured: an English anchor on a Spanish page's heading helps find it)."""
    return " ".join(_HEADING_ANCHORS.sub(" ", label).split())


def passage_header(*, title: str, heading_path: Sequence[str]) -> str:
    """`[Doc: title > heading > heading]`: where a passage comes from, for the LLM and for the chunk's vector.

    Headings lose their `#` marks; one that repeats the title (a page's H1, usually) is left out.
    """
    headings = [h.lstrip("#").strip() for h in heading_path]
    return "[Doc: " + " > ".join([title, *[h for h in headings if h and h != title]]) + "]"


def heading_words(label: str) -> str:
    """A heading path entry as its words alone, without its `#` marks and anchors: what its vector embeds."""
    return shown_heading(label).lstrip("#").strip()


def section_openers(heading_paths: Sequence[Sequence[str]]) -> list[bool]:
    """Per chunk of a document, in order, whether it opens a section under a heading: its heading path is not
    empty and differs from the chunk's before it (a long section's later chunks continue it)."""
    return [
        bool(path) and (i == 0 or list(path) != list(heading_paths[i - 1]))
        for i, path in enumerate(heading_paths)
    ]
