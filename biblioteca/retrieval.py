"""retrieve(): hybrid search over the library, passages grown around the hits, then optional sentence trimming,
with token counts and timings.

The trimmer scores the sentence vectors stored at ingest, so a query costs one embedding call (the query
itself); only chunks stored without sentences fall back to a single batch call.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace

import numpy as np
from django.conf import settings

from biblioteca.embeddings import get_embedder
from biblioteca.passages import Joined, Piece, grow, join, passage_sentences
from biblioteca.selectors import (
    HybridParams,
    ScoredSentences,
    StoredSentences,
    chunk_neighbours,
    chunk_neighbours_scored,
    chunk_search,
    query_term_weights,
    sentences_for_chunks,
)
from biblioteca.text.chunking import passage_header
from biblioteca.text.sentences import split_sentence_spans
from biblioteca.text.tokens import count_tokens
from biblioteca.trimming import TrimInput, TrimParams, trim_chunks

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
    # Its members' stored sentences scored against the question, read with the neighbours (`search`'s
    # `score_sentences`), so trimming needs no read of its own.
    sentences: Mapping[int, ScoredSentences] | None = field(default=None, repr=False, compare=False)

    @property
    def member_ids(self) -> list[int]:
        """The stored chunks this passage is made of (the hit alone when it was not grown)."""
        return [m.chunk_id for m in self.layout.members] if self.layout else [self.id]

    @property
    def doc_line(self) -> str:
        return passage_header(title=self.title, heading_path=self.heading_path)

    @property
    def content(self) -> str:
        return f"{self.doc_line}\n{self.text}"

    def as_dict(self) -> dict:
        return {
            "id": self.id,
            "chunk_id": self.chunk_id,
            "document_id": self.document_id,
            "title": self.title,
            "heading_path": self.heading_path,
            "url": self.url,
            "score": round(self.score, 4),
            "content": self.content,
        }


@dataclass
class RetrievalResult:
    chunks: list[RetrievedChunk]
    tokens_in_context: int
    tokens_before: int
    trimmed: bool
    trim_params: dict | None
    timings_ms: dict[str, float]
    trim_embedding_calls: int = 0
    query_vector: np.ndarray | None = field(default=None, repr=False)


def resolve_trim_params(
    *, threshold: float | None = None, window: int | None = None, min_sentences: int | None = None
) -> TrimParams:
    """Explicit values win; `None` means the settings."""
    return TrimParams(
        threshold=settings.RETRIEVAL_TRIM_THRESHOLD if threshold is None else float(threshold),
        window=settings.RETRIEVAL_TRIM_WINDOW if window is None else int(window),
        min_sentences=settings.RETRIEVAL_TRIM_MIN_SENTENCES if min_sentences is None else int(min_sentences),
        relative_margin=settings.RETRIEVAL_TRIM_RELATIVE_MARGIN,
        drop_margin=settings.RETRIEVAL_TRIM_DROP_MARGIN,
        drop_score_margin=settings.RETRIEVAL_TRIM_DROP_SCORE_MARGIN,
        passage_margin=settings.RETRIEVAL_TRIM_PASSAGE_MARGIN,
        lexical_weight=settings.RETRIEVAL_TRIM_LEXICAL_WEIGHT,
        heading_weight=settings.RETRIEVAL_TRIM_HEADING_WEIGHT,
        spread_factor=settings.RETRIEVAL_TRIM_SPREAD_FACTOR,
        companions=settings.RETRIEVAL_TRIM_COMPANIONS,
        trim_markup=settings.RETRIEVAL_TRIM_MARKUP,
    )


def hybrid_params() -> HybridParams:
    return HybridParams(
        candidates=settings.RETRIEVAL_HYBRID_CANDIDATES,
        rrf_k=settings.RETRIEVAL_HYBRID_RRF_K,
        vector_weight=settings.RETRIEVAL_HYBRID_VECTOR_WEIGHT,
        lexical_weight=settings.RETRIEVAL_HYBRID_LEXICAL_WEIGHT,
    )


def search(
    *,
    query_vector: np.ndarray,
    top_k: int = 5,
    filters: Mapping[str, str | None] | None = None,
    query_text: str | None = None,
    hybrid: bool = False,
    passage_words: int | None = None,
    score_sentences: bool = False,
) -> list[RetrievedChunk]:
    """The best `top_k` passages: chunks nearest by cosine, or (`hybrid` with a `query_text`) fused with
    full-text search, each grown with its neighbours up to `passage_words` (None: RETRIEVAL_PASSAGE_WORDS);
    with `score_sentences`, grown passages also carry their sentences' cosines for the trimmer."""
    if not 1 <= top_k <= MAX_TOP_K:
        raise ValueError(f"top_k must be between 1 and {MAX_TOP_K}")
    filters = filters or {}
    unknown = set(filters) - {"app", "source_type"}
    if unknown:
        raise ValueError(f"unknown filter(s): {', '.join(sorted(unknown))}")
    budget = settings.RETRIEVAL_PASSAGE_WORDS if passage_words is None else passage_words
    # Growing can absorb a lower hit into a higher one's passage; a few spare hits refill the freed places.
    fetch = 2 * top_k if budget else top_k
    rows = chunk_search(
        query_vector=query_vector,
        top_k=fetch,
        app=filters.get("app"),
        source_type=filters.get("source_type"),
        query_text=query_text,
        hybrid=hybrid_params() if hybrid else None,
    )
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
            query_terms=getattr(c, "query_terms", None),
        )
        for c in rows
    ]
    if not budget:
        return hits[:top_k]
    return grown_passages(
        hits, rows=rows, budget=budget, top_k=top_k, query_vector=query_vector if score_sentences else None
    )


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
    query_vector: np.ndarray | None = None,
) -> list[RetrievedChunk]:
    """The hits in rank order, each grown into a passage; a hit already inside a better one's passage is left
    out, so the `top_k` passages cover as much as they can. With `query_vector`, each passage carries its
    members' sentences scored against it (read with the neighbours)."""
    where = [(r.document_id, r.chunk_index) for r in rows]
    scored: dict[int, ScoredSentences] | None = None
    if query_vector is None:
        neighbours = chunk_neighbours(hits=where)
    else:
        neighbours, scored = chunk_neighbours_scored(hits=where, query_vector=query_vector)
    taken: set[int] = set()
    out: list[RetrievedChunk] = []
    for hit, row in zip(hits, rows):
        if hit.id in taken:
            continue
        pieces = grow(_piece(row), neighbours.get(row.document_id, []), budget=budget, taken=taken)
        taken.update(p.id for p in pieces)
        if scored is not None:
            hit = replace(hit, sentences={p.id: scored[p.id] for p in pieces if p.id in scored})
        if len(pieces) == 1:
            out.append(hit)
        else:
            joined = join(pieces)
            out.append(
                replace(
                    hit,
                    heading_path=list(joined.heading_path),
                    text=joined.text,
                    original_text=joined.text,
                    layout=joined,
                )
            )
        if len(out) == top_k:
            break
    return out


def trim_retrieved(
    chunks: Sequence[RetrievedChunk],
    *,
    query_vector: np.ndarray,
    params: TrimParams,
    stored: Mapping[int, StoredSentences] | None = None,
    query_terms: Mapping[str, float] | None = None,
) -> tuple[list[RetrievedChunk], int]:
    """Trimmed copies of `chunks` (dropped ones left out) and how many embedding calls the trimmer made.

    `stored` lets a caller that trims the same chunks many times (a calibration sweep) load them once;
    `query_terms` are the question's weighted terms (`query_term_weights`) for the lexical evidence.
    """
    inputs = stored_trim_inputs(chunks, stored=stored)
    missing = [i for i, item in enumerate(inputs) if item is None]
    calls = 0
    if missing:
        spans = {i: split_sentence_spans(chunks[i].original_text) for i in missing}
        texts = [chunks[i].original_text[s:e] for i in missing for s, e in spans[i]]
        embedder = get_embedder()
        before = embedder.calls
        vectors = embedder.embed_documents(texts)
        calls = embedder.calls - before
        cursor = 0
        for i in missing:
            n = len(spans[i])
            inputs[i] = trim_input(chunks[i], spans[i], vectors[cursor : cursor + n])
            cursor += n
    outputs = trim_chunks(inputs, query_vector, params, query_terms)
    trimmed = [
        replace(chunk, text=out.text, trimmed=out.text != chunk.original_text)
        for chunk, out in zip(chunks, outputs)
        if not out.dropped
    ]
    return trimmed, calls


def stored_sentences(chunks: Sequence[RetrievedChunk]) -> dict[int, StoredSentences]:
    """The stored sentences of every chunk the passages are made of, in one read."""
    return sentences_for_chunks([i for c in chunks for i in c.member_ids])


def stored_trim_inputs(
    chunks: Sequence[RetrievedChunk], *, stored: Mapping[int, StoredSentences] | None = None
) -> list[TrimInput | None]:
    """Each passage's sentences as stored at ingest (mapped into a grown passage's text); None for a passage
    with a chunk stored without sentences."""
    if stored is None and chunks and all(c.sentences is not None for c in chunks):
        return [scored_trim_input(c) for c in chunks]
    if stored is None:
        stored = stored_sentences(chunks)
    inputs: list[TrimInput | None] = []
    spans = {i: s.spans for i, s in stored.items()}
    vectors = {i: s.vectors for i, s in stored.items()}
    for chunk in chunks:
        if chunk.layout is None:
            sentences = stored.get(chunk.id)
            inputs.append(trim_input(chunk, sentences.spans, sentences.vectors) if sentences else None)
            continue
        composed = passage_sentences(chunk.layout, spans, vectors, dimensions=settings.EMBEDDING_DIMENSIONS)
        inputs.append(trim_input(chunk, *composed) if composed else None)
    return inputs


def scored_trim_input(chunk: RetrievedChunk) -> TrimInput | None:
    """A passage's trimmer input from the cosines read with it; None when a member has no stored sentences."""
    sentences = chunk.sentences or {}
    if chunk.layout is None:
        found = sentences.get(chunk.id)
        return trim_input(chunk, found.spans, cosines=found.cosines) if found else None
    composed = passage_sentences(
        chunk.layout,
        {i: s.spans for i, s in sentences.items()},
        {i: s.cosines for i, s in sentences.items()},
        dimensions=None,
    )
    return trim_input(chunk, composed[0], cosines=composed[1]) if composed else None


def trim_input(
    chunk: RetrievedChunk,
    spans: Sequence[tuple[int, int]],
    vectors: np.ndarray | None = None,
    *,
    cosines: np.ndarray | None = None,
) -> TrimInput:
    return TrimInput(
        chunk.original_text,
        spans,
        vectors,
        language=chunk.language,
        heading=" ".join(chunk.heading_path),
        cosines=cosines,
    )


def trim_terms(
    query: str,
    *,
    params: TrimParams,
    filters: Mapping[str, str | None] | None = None,
    chunks: Sequence[RetrievedChunk] = (),
) -> Mapping[str, float] | None:
    """The question's weighted terms when the trimmer counts lexical evidence, else None: those the hybrid search
    already weighed, or (after a vector-only search) one more query."""
    if not params.lexical_weight:
        return None
    known = next((c.query_terms for c in chunks if c.query_terms is not None), None)
    if known is not None:
        return known
    filters = filters or {}
    return query_term_weights(text=query, app=filters.get("app"), source_type=filters.get("source_type"))


def chunk_tokens(chunk: RetrievedChunk) -> int:
    return count_tokens(chunk.content, encoding=settings.TOKEN_ENCODING)


def context_tokens(chunks: Sequence[RetrievedChunk], *, known: Mapping[int, int] | None = None) -> int:
    """Tokens of the chunks' contents; `known` gives the counts of untrimmed chunks, so only trimmed ones
    are counted again."""
    known = known or {}
    return sum(known[c.id] if c.id in known and not c.trimmed else chunk_tokens(c) for c in chunks)


def retrieve(
    query: str,
    *,
    top_k: int = 5,
    trim: bool | None = None,
    trim_threshold: float | None = None,
    trim_min_sentences: int | None = None,
    trim_window: int | None = None,
    filters: Mapping[str, str | None] | None = None,
    query_vector: np.ndarray | None = None,
    hybrid: bool | None = None,
) -> RetrievalResult:
    """The best `top_k` chunks for `query`, found by vectors and full text (`hybrid`, or when None
    RETRIEVAL_HYBRID), trimmed when `trim` (or, when None, RETRIEVAL_TRIM) says so."""
    timings: dict[str, float] = {}
    started = time.perf_counter()
    if query_vector is None:
        query_vector = get_embedder().embed_query(query)
    timings["embedding"] = (time.perf_counter() - started) * 1000
    t = time.perf_counter()
    do_hybrid = settings.RETRIEVAL_HYBRID if hybrid is None else hybrid
    do_trim = settings.RETRIEVAL_TRIM if trim is None else trim
    chunks = search(
        query_vector=query_vector,
        top_k=top_k,
        filters=filters,
        query_text=query,
        hybrid=do_hybrid,
        score_sentences=bool(do_trim),
    )
    timings["search"] = (time.perf_counter() - t) * 1000
    untrimmed_tokens = {c.id: chunk_tokens(c) for c in chunks}
    tokens_before = sum(untrimmed_tokens.values())
    params = calls = None
    if do_trim:
        params = resolve_trim_params(
            threshold=trim_threshold, window=trim_window, min_sentences=trim_min_sentences
        )
        t = time.perf_counter()
        chunks, calls = trim_retrieved(
            chunks,
            query_vector=query_vector,
            params=params,
            query_terms=trim_terms(query, params=params, filters=filters, chunks=chunks),
        )
        timings["trim"] = (time.perf_counter() - t) * 1000
    tokens = context_tokens(chunks, known=untrimmed_tokens) if do_trim else tokens_before
    timings["total"] = (time.perf_counter() - started) * 1000
    return RetrievalResult(
        chunks=chunks,
        tokens_in_context=tokens,
        tokens_before=tokens_before,
        trimmed=bool(do_trim),
        trim_params=asdict(params) if params else None,
        timings_ms={k: round(v, 3) for k, v in timings.items()},
        trim_embedding_calls=calls or 0,
        query_vector=query_vector,
    )
