"""Passages: a retrieved chunk grown with its neighbours in the document, up to a word budget.

Documentation is cut into many short sections (a heading, two sentences, a code block), so the chunk a question
finds is often only part of its answer: the option's description sits in the next chunk, the condition in the
previous one. Growing each hit with its neighbours, up to RETRIEVAL_PASSAGE_WORDS, gives the reader (and the
trimmer) the whole neighbourhood while keeping every passage no longer than the longest chunks already are.

Pure Python and numpy: the caller brings the chunks and their stored sentences' cosines with the question; offsets
and cosines are mapped into the joined text, so trimming a passage needs no embedding either.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from biblioteca.text.chunking import shown_heading


@dataclass(frozen=True)
class Piece:
    """One stored chunk: its place in the document (offsets into the document's text) and its words."""

    id: int
    index: int
    heading_path: tuple[str, ...]
    text: str
    start: int
    end: int

    @property
    def words(self) -> int:
        return len(self.text.split())


@dataclass(frozen=True)
class Member:
    """A chunk inside a passage: its text from `cut` on sits at `offset` in the passage's text, under
    `heading_path`."""

    chunk_id: int
    cut: int
    offset: int
    heading_path: tuple[str, ...] = ()


@dataclass(frozen=True)
class Joined:
    """A passage's text, its members, its put-back heading lines (spans in the text) with the member each opens
    (`opens`, indices into members), and the heading path it starts under."""

    text: str
    members: tuple[Member, ...]
    headings: tuple[tuple[int, int], ...]
    heading_path: tuple[str, ...]
    opens: tuple[int, ...] = ()


def heading_path_at(joined: Joined, offset: int) -> tuple[str, ...]:
    """The heading path of the section the passage's text is in at `offset`: a put-back heading line belongs to
    the member it opens."""
    for start, end in joined.headings:
        if start <= offset < end:
            offset = next((m.offset for m in joined.members if m.offset >= end), offset)
    path = joined.heading_path
    for member in joined.members:
        if member.offset > offset:
            break
        path = member.heading_path or path
    return path


def grow(
    hit: Piece, neighbours: Sequence[Piece], *, budget: int, taken: set[int] | frozenset[int] = frozenset()
) -> list[Piece]:
    """`hit` and the neighbours it grows into, in document order: the next chunk, then the previous one, and so
    on while the passage stays within `budget` words; chunks in `taken` (other passages) are never absorbed."""
    by_index = {p.index: p for p in neighbours}
    pieces = {hit.index: hit}
    words = hit.words
    low = high = hit.index
    growing = True
    while growing:
        growing = False
        for index in (high + 1, low - 1):
            piece = by_index.get(index)
            if piece is None or piece.id in taken or words + piece.words > budget:
                continue
            pieces[index] = piece
            words += piece.words
            low, high = min(low, index), max(high, index)
            growing = True
    return [pieces[i] for i in sorted(pieces)]


def join(pieces: Sequence[Piece]) -> Joined:
    """One text for consecutive chunks: overlaps said once, and a section's heading line put back where a chunk
    of another section begins (chunks keep their headings apart, in their heading path), as readers see it."""
    text = ""
    members: list[Member] = []
    headings: list[tuple[int, int]] = []
    opens: list[int] = []
    previous: Piece | None = None
    for piece in pieces:
        cut = 0
        if previous is not None:
            cut = max(0, min(previous.end - piece.start, len(piece.text)))
            if piece.heading_path != previous.heading_path and piece.heading_path:
                heading = shown_heading(piece.heading_path[-1])
                text += "\n\n"
                headings.append((len(text), len(text) + len(heading)))
                opens.append(len(members))
                text += heading
                text += "\n\n"
            elif cut == 0:
                text += "\n\n"
        members.append(Member(piece.id, cut, len(text), piece.heading_path))
        text += piece.text[cut:]
        previous = piece
    return Joined(
        text, tuple(members), tuple(headings), pieces[0].heading_path if pieces else (), tuple(opens)
    )


def passage_sentences(
    joined: Joined,
    spans_by_chunk: Mapping[int, Sequence[tuple[int, int]]],
    cosines_by_chunk: Mapping[int, np.ndarray],
) -> tuple[list[tuple[int, int]], np.ndarray] | None:
    """The passage's sentence spans (offsets into its text) and their cosines with the question, in order; None
    when a member has no stored sentences. A put-back heading is a unit of its own with cosine 0: only words can
    keep it."""
    member_spans: list[tuple[tuple[int, int], ...]] = []
    pools: list[np.ndarray] = []
    for member in joined.members:
        spans = spans_by_chunk.get(member.chunk_id)
        if not spans:
            return None
        cosines = cosines_by_chunk[member.chunk_id][: len(spans)]
        pools.append(np.asarray(cosines, dtype=np.float32))
        member_spans.append(tuple(spans[: len(cosines)]))
    spans, rows, _ = _layout(joined, tuple(member_spans))
    if not spans:
        return [], np.zeros(0, dtype=np.float32)
    # Every member's cosines in one array, with the headings' zero last: one gather, no stacking.
    return list(spans), np.concatenate([*pools, np.zeros(1, dtype=np.float32)])[rows]


def passage_heading_cosines(
    joined: Joined, spans: Sequence[tuple[int, int]], cosine_by_chunk: Mapping[int, float]
) -> tuple[tuple[int, float], ...]:
    """Per heading of the passage whose chunk stored its vector (`cosine_by_chunk`: the heading's cosine with the
    question, by the chunk that opens its section under it), its unit and that cosine: -1 for the heading the
    passage starts under, when its first member opens that section."""
    out: list[tuple[int, float]] = []
    if joined.members and joined.members[0].chunk_id in cosine_by_chunk:
        out.append((-1, cosine_by_chunk[joined.members[0].chunk_id]))
    units = {span: i for i, span in enumerate(spans)}
    for span, member in zip(joined.headings, joined.opens):
        chunk_id = joined.members[member].chunk_id
        if chunk_id in cosine_by_chunk and span in units:
            out.append((units[span], cosine_by_chunk[chunk_id]))
    return tuple(out)


def passage_stored_lines(
    joined: Joined,
    spans_by_chunk: Mapping[int, Sequence[tuple[int, int]]],
    lines_by_chunk: Mapping[int, Sequence[str] | None],
) -> list[str | None]:
    """Per unit of the passage, as `passage_sentences` lays it out, what was stored with its sentence (its stems or
    its identifier keys, packed) when the unit is that whole sentence; None for a put-back heading, for a sentence
    an overlap cuts into, and for a member stored without: those are worked out anew."""
    member_spans = tuple(tuple(spans_by_chunk[m.chunk_id]) for m in joined.members)
    pool: list[str | None] = []
    for member, spans in zip(joined.members, member_spans):
        stored = lines_by_chunk.get(member.chunk_id)
        pool.extend(stored if stored is not None and len(stored) == len(spans) else [None] * len(spans))
    _, _, whole = _layout(joined, member_spans)
    return [pool[row] if row >= 0 else None for row in whole]


@lru_cache(maxsize=2048)
def _layout(
    joined: Joined, member_spans: tuple[tuple[tuple[int, int], ...], ...]
) -> tuple[tuple[tuple[int, int], ...], np.ndarray, tuple[int, ...]]:
    """Where each member's sentences fall in the passage, which row of the members' values (one after the
    other, then a zero row for headings) each takes, and that row again where the unit is the whole sentence
    (-1 where an overlap cut into it, or for a heading). Remembered: the same passages come back question after
    question, and only their values change."""
    units: list[tuple[int, int, int, bool]] = [(a, b, -1, False) for a, b in joined.headings]
    text, base = joined.text, 0
    for member, spans in zip(joined.members, member_spans):
        cut, shift = member.cut, member.offset - member.cut
        for i, (start, end) in enumerate(spans, start=base):
            if end <= cut:
                continue
            a, b = shift + max(start, cut), shift + end
            while a < b and text[a].isspace():
                a += 1
            if a < b:
                units.append((a, b, i, start >= cut))
        base += len(spans)
    units.sort(key=lambda u: u[0])
    rows = np.array([i for _, _, i, _ in units], dtype=np.intp)
    rows.flags.writeable = False
    return tuple((a, b) for a, b, _, _ in units), rows, tuple(i if whole else -1 for _, _, i, whole in units)
