"""search(): the best passages for a query vector (and, hybrid, its text): stored chunks ranked by the hybrid
search, each grown with its neighbours into a passage up to a word budget.

A chunk whose text repeats a better-ranked one's is left out: reference docs repeat whole sections (npm's
command pages each carry the same config options; half its chunks have a twin), and five copies of one section
would fill the passages asked for with one answer, or none.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
from django.conf import settings

from biblioteca.passages import Joined, Piece, grow, join
from biblioteca.selectors import HybridParams, chunk_neighbours, chunk_search
from biblioteca.text.chunking import passage_header, shown_heading
from biblioteca.text.lexical import search_config

MAX_TOP_K = 20


@dataclass(frozen=True)
class RetrievedChunk:
    id: int
    chunk_id: str
    document_id: int
    title: str
    heading_path: list[str]
    url: str
    score: float
    text: str
    original_text: str
    trimmed: bool = False
    language: str = ""
    layout: Joined | None = field(default=None, repr=False, compare=False)
    query_terms: Mapping[str, float] | None = field(default=None, repr=False, compare=False)
    # The library generation its chunks were read at (None when unknown): what remembered sentences must match.
    generation: int | None = field(default=None, repr=False, compare=False)
    # What processed its document (`Document.processed_with`): its sentences' stored stems are used only when
    # that is today's.
    processed_with: str = field(default="", repr=False, compare=False)
    # Where it sits in its document: the first and last `chunk_index` of the stored chunks it is made of.
    index_range: tuple[int, int] | None = field(default=None, repr=False, compare=False)

    @property
    def member_ids(self) -> list[int]:
        """The stored chunks this passage is made of (the hit alone when it was not grown)."""
        return [m.chunk_id for m in self.layout.members] if self.layout else [self.id]

    @property
    def shown_title(self) -> str:
        return shown_heading(self.title)

    @property
    def shown_heading_path(self) -> list[str]:
        """The heading path as readers and the LLM see it (`shown_heading`); trimming reads it whole."""
        return [shown_heading(h) for h in self.heading_path]

    @property
    def doc_line(self) -> str:
        return passage_header(title=self.shown_title, heading_path=self.shown_heading_path)

    @property
    def content(self) -> str:
        return f"{self.doc_line}\n{self.text}"

    def as_dict(self) -> dict:
        return {
            "id": self.id,
            "chunk_id": self.chunk_id,
            "document_id": self.document_id,
            "title": self.shown_title,
            "heading_path": self.shown_heading_path,
            "url": self.url,
            "score": round(self.score, 4),
            "content": self.content,
        }


def hybrid_params(*, lexical_share: float = 1.0) -> HybridParams:
    """The settings' fusion; the words side weighs `lexical_share` of RETRIEVAL_HYBRID_LEXICAL_WEIGHT."""
    return HybridParams(
        candidates=settings.RETRIEVAL_HYBRID_CANDIDATES,
        rrf_k=settings.RETRIEVAL_HYBRID_RRF_K,
        vector_weight=settings.RETRIEVAL_HYBRID_VECTOR_WEIGHT,
        lexical_weight=lexical_share * settings.RETRIEVAL_HYBRID_LEXICAL_WEIGHT,
        sentence_weight=settings.RETRIEVAL_HYBRID_SENTENCE_WEIGHT,
        sentence_pool=settings.RETRIEVAL_HYBRID_SENTENCE_POOL,
        other_language_weight=settings.RETRIEVAL_HYBRID_OTHER_LANGUAGE_WEIGHT,
        vector_seat=settings.RETRIEVAL_HYBRID_VECTOR_SEAT,
        term_coverage=settings.RETRIEVAL_HYBRID_TERM_COVERAGE,
        question_configs=tuple(search_config(code) for code in settings.RETRIEVAL_QUESTION_LANGUAGES),
    )


MAX_FETCH_FACTOR = 16  # a search reads at most 16 hits per passage asked for


def text_key(text: str) -> str:
    """A chunk's text as repeats are told: the same source lines chunk to the same text, so only the ends are
    trimmed (normalising every neighbour's text cost a millisecond a search)."""
    return text.strip()


def without_repeats(rows: Sequence) -> list:
    """The rows in order, less each one whose text an earlier one has."""
    seen: set[str] = set()
    out = []
    for row in rows:
        key = text_key(row.text)
        if key not in seen:
            seen.add(key)
            out.append(row)
    return out


def search(
    *,
    query_vector: np.ndarray,
    top_k: int = 5,
    filters: Mapping[str, str | None] | None = None,
    query_text: str | None = None,
    hybrid: bool = False,
    lexical_share: float = 1.0,
    passage_words: int | None = None,
    generation: bool = False,
) -> list[RetrievedChunk]:
    """The best `top_k` passages: chunks nearest by cosine, or (`hybrid` with a `query_text`) fused with
    full-text search (its weight times `lexical_share`), each grown with its neighbours up to `passage_words`
    (None: RETRIEVAL_PASSAGE_WORDS); with `generation`, grown passages carry the library generation they were
    read at, which sentences remembered for trimming must match."""
    if not 1 <= top_k <= MAX_TOP_K:
        raise ValueError(f"top_k must be between 1 and {MAX_TOP_K}")
    filters = filters or {}
    unknown = set(filters) - {"app", "source_type"}
    if unknown:
        raise ValueError(f"unknown filter(s): {', '.join(sorted(unknown))}")
    budget = settings.RETRIEVAL_PASSAGE_WORDS if passage_words is None else passage_words
    # Growing can absorb a lower hit into a higher one's passage, and a repeated text is left out; spare hits
    # refill the freed places, and when they run out (one long section found by many of its chunks, a section
    # repeated on many pages) a search twice as deep refills the rest.
    fetch = 2 * top_k if budget else top_k
    while True:
        found = chunk_search(
            query_vector=query_vector,
            top_k=fetch,
            app=filters.get("app"),
            source_type=filters.get("source_type"),
            query_text=query_text,
            hybrid=hybrid_params(lexical_share=lexical_share) if hybrid else None,
            seat=top_k,
        )
        rows = without_repeats(found)
        hits = [
            RetrievedChunk(
                id=c.id,
                chunk_id=c.chunk_id,
                document_id=c.document_id,
                title=c.document.title,
                heading_path=list(c.heading_path),
                url=c.document.url,
                score=c.score,
                text=c.text,
                original_text=c.text,
                language=c.document.language,
                processed_with=c.document.processed_with,
                query_terms=getattr(c, "query_terms", None),
                index_range=(c.chunk_index, c.chunk_index),
            )
            for c in rows
        ]
        passages = (
            grown_passages(
                hits, rows=rows, budget=budget, top_k=top_k, generation=generation, app=filters.get("app")
            )
            if budget
            else hits[:top_k]
        )
        if len(passages) == top_k or len(found) < fetch or fetch >= MAX_FETCH_FACTOR * top_k:
            return passages
        fetch *= 2


def _piece(row) -> Piece:
    return Piece(
        id=row.id,
        index=row.chunk_index,
        heading_path=tuple(row.heading_path),
        text=row.text,
        start=row.start_offset,
        end=row.end_offset,
    )


def grown_passages(
    hits: Sequence[RetrievedChunk],
    *,
    rows: Sequence,
    budget: int,
    top_k: int,
    generation: bool = False,
    app: str | None = None,
) -> list[RetrievedChunk]:
    """The hits in rank order, each grown into a passage; a hit already inside a better one's passage, or
    repeating the text of a chunk that is, is left out, and a passage does not grow into such a repeat, so the
    `top_k` passages cover as much as they can. With `generation`, each carries the generation it was read at
    (`app`: the one app every hit is of, when the search was filtered to it)."""
    neighbourhood = chunk_neighbours(
        hits=[(r.document_id, r.chunk_index) for r in rows], generations=generation, app=app
    )
    taken: set[int] = set()
    said: set[str] = set()
    out: list[RetrievedChunk] = []
    for hit, row in zip(hits, rows):
        if hit.id in taken or text_key(row.text) in said:
            continue
        around = neighbourhood.pieces.get(row.document_id, [])
        repeats = {p.id for p in around if text_key(p.text) in said}
        pieces = grow(_piece(row), around, budget=budget, taken=taken | repeats)
        taken.update(p.id for p in pieces)
        said.update(text_key(p.text) for p in pieces)
        changes: dict = {
            "generation": neighbourhood.generations.get(row.document_id),
            "index_range": (pieces[0].index, pieces[-1].index),
        }
        if len(pieces) > 1:
            joined = join(pieces)
            changes.update(
                heading_path=list(joined.heading_path),
                text=joined.text,
                original_text=joined.text,
                layout=joined,
            )
        out.append(replace(hit, **changes))
        if len(out) == top_k:
            break
    return out
