"""retrieve(): vector search over the library, then optional sentence trimming, with token counts and timings.

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
from biblioteca.selectors import StoredSentences, chunk_search, sentences_for_chunks
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

    @property
    def doc_line(self) -> str:
        return passage_header(title=self.title, heading_path=self.heading_path)

    @property
    def content(self) -> str:
        return f"{self.doc_line}\n{self.text}"

    def as_dict(self) -> dict:
        return {"id": self.id, "chunk_id": self.chunk_id, "document_id": self.document_id, "title": self.title,
                "heading_path": self.heading_path, "url": self.url, "score": round(self.score, 4),
                "content": self.content}


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


def resolve_trim_params(*, threshold: float | None = None, window: int | None = None,
                        min_sentences: int | None = None) -> TrimParams:
    """Explicit values win; `None` means the settings."""
    return TrimParams(
        threshold=settings.RETRIEVAL_TRIM_THRESHOLD if threshold is None else float(threshold),
        window=settings.RETRIEVAL_TRIM_WINDOW if window is None else int(window),
        min_sentences=settings.RETRIEVAL_TRIM_MIN_SENTENCES if min_sentences is None else int(min_sentences),
        relative_margin=settings.RETRIEVAL_TRIM_RELATIVE_MARGIN,
        drop_margin=settings.RETRIEVAL_TRIM_DROP_MARGIN,
    )


def search(*, query_vector: np.ndarray, top_k: int = 5, filters: Mapping[str, str | None] | None = None
           ) -> list[RetrievedChunk]:
    if not 1 <= top_k <= MAX_TOP_K:
        raise ValueError(f"top_k must be between 1 and {MAX_TOP_K}")
    filters = filters or {}
    unknown = set(filters) - {"app", "source_type"}
    if unknown:
        raise ValueError(f"unknown filter(s): {', '.join(sorted(unknown))}")
    rows = chunk_search(query_vector=query_vector, top_k=top_k, app=filters.get("app"),
                        source_type=filters.get("source_type"))
    return [
        RetrievedChunk(id=c.id, chunk_id=c.chunk_id, document_id=c.document_id, title=c.document.title,
                       heading_path=list(c.heading_path), url=c.document.url, score=c.score, text=c.text,
                       original_text=c.text)
        for c in rows
    ]


def trim_retrieved(chunks: Sequence[RetrievedChunk], *, query_vector: np.ndarray, params: TrimParams,
                   stored: Mapping[int, StoredSentences] | None = None) -> tuple[list[RetrievedChunk], int]:
    """Trimmed copies of `chunks` (dropped ones left out) and how many embedding calls the trimmer made.

    `stored` lets a caller that trims the same chunks many times (a calibration sweep) load them once.
    """
    if stored is None:
        stored = sentences_for_chunks([c.id for c in chunks])
    inputs: list[TrimInput | None] = []
    missing: list[int] = []
    for i, chunk in enumerate(chunks):
        sentences = stored.get(chunk.id)
        if sentences:
            inputs.append(TrimInput(chunk.original_text, sentences.spans, sentences.vectors))
        else:
            inputs.append(None)
            missing.append(i)
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
            inputs[i] = TrimInput(chunks[i].original_text, spans[i], vectors[cursor:cursor + n])
            cursor += n
    outputs = trim_chunks(inputs, query_vector, params)
    trimmed = [
        replace(chunk, text=out.text, trimmed=out.text != chunk.original_text)
        for chunk, out in zip(chunks, outputs) if not out.dropped
    ]
    return trimmed, calls


def chunk_tokens(chunk: RetrievedChunk) -> int:
    return count_tokens(chunk.content, encoding=settings.TOKEN_ENCODING)


def context_tokens(chunks: Sequence[RetrievedChunk], *, known: Mapping[int, int] | None = None) -> int:
    """Tokens of the chunks' contents; `known` gives the counts of untrimmed chunks, so only trimmed ones
    are counted again."""
    known = known or {}
    return sum(known[c.id] if c.id in known and not c.trimmed else chunk_tokens(c) for c in chunks)


def retrieve(query: str, *, top_k: int = 5, trim: bool | None = None, trim_threshold: float | None = None,
             trim_min_sentences: int | None = None, trim_window: int | None = None,
             filters: Mapping[str, str | None] | None = None, query_vector: np.ndarray | None = None
             ) -> RetrievalResult:
    """The best `top_k` chunks for `query`, trimmed when `trim` (or, when None, RETRIEVAL_TRIM) says so."""
    timings: dict[str, float] = {}
    started = time.perf_counter()
    if query_vector is None:
        query_vector = get_embedder().embed_query(query)
    timings["embedding"] = (time.perf_counter() - started) * 1000
    t = time.perf_counter()
    chunks = search(query_vector=query_vector, top_k=top_k, filters=filters)
    timings["search"] = (time.perf_counter() - t) * 1000
    untrimmed_tokens = {c.id: chunk_tokens(c) for c in chunks}
    tokens_before = sum(untrimmed_tokens.values())
    do_trim = settings.RETRIEVAL_TRIM if trim is None else trim
    params = calls = None
    if do_trim:
        params = resolve_trim_params(threshold=trim_threshold, window=trim_window, min_sentences=trim_min_sentences)
        t = time.perf_counter()
        chunks, calls = trim_retrieved(chunks, query_vector=query_vector, params=params)
        timings["trim"] = (time.perf_counter() - t) * 1000
    tokens = context_tokens(chunks, known=untrimmed_tokens) if do_trim else tokens_before
    timings["total"] = (time.perf_counter() - started) * 1000
    return RetrievalResult(chunks=chunks, tokens_in_context=tokens, tokens_before=tokens_before,
                           trimmed=bool(do_trim), trim_params=asdict(params) if params else None,
                           timings_ms={k: round(v, 3) for k, v in timings.items()},
                           trim_embedding_calls=calls or 0, query_vector=query_vector)
