"""Retrieval in two stages that every caller composes the same way: `retrieval_prepare()` (the query vector, the
passages, each one's tokens, timings) and `retrieval_trim()` (sentence trimming of those passages and the trimmed
context's tokens). `retrieve()` runs both once; the A/B evaluation and the calibration sweep prepare once and trim
many times, so tokens are counted, and terms looked up, in one place.

The trimmer scores the sentence vectors stored at ingest (remembered per process: `sentence_memory`), so a query
costs one embedding call (the query itself); only chunks stored without sentences fall back to a single batch call.

Over 300 lines on purpose: the two stages and the glue between the stored sentences and the trimmer (spans
mapped into grown passages, the question's terms) are one pipeline, read best in one place.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from functools import lru_cache, partial

import numpy as np
from django.conf import settings

from biblioteca.embeddings import get_embedder
from biblioteca.language_shift import docs_language_vector, languages_apart
from biblioteca.models import Document
from biblioteca.passages import (
    Joined,
    heading_path_at,
    passage_heading_cosines,
    passage_sentences,
    passage_stored_lines,
)
from biblioteca.retrieval_cache import retrieval_cache_get, retrieval_cache_key, retrieval_cache_put
from biblioteca.search import RetrievedChunk, hybrid_params, search
from biblioteca.selectors import StoredSentences, query_term_weights
from biblioteca.sentence_memory import stored_sentences_at
from biblioteca.text.chunking import heading_level
from biblioteca.text.identifiers import question_identifiers
from biblioteca.text.question_words import asks_how, asks_reason
from biblioteca.text.sentences import split_sentence_spans
from biblioteca.text.tokens import count_tokens
from biblioteca.trimming import TrimInput, TrimParams, trim_chunks


@dataclass(frozen=True)
class RetrievalOptions:
    """What a caller may choose about one retrieval (the search API's and bib_ask's options); `None` follows
    the settings (RETRIEVAL_TRIM, RETRIEVAL_HYBRID, RETRIEVAL_TRIM_*)."""

    top_k: int = 5
    trim: bool | None = None
    trim_threshold: float | None = None
    trim_window: int | None = None
    trim_min_sentences: int | None = None
    hybrid: bool | None = None

    def as_kwargs(self) -> dict:
        return asdict(self)

    @classmethod
    def from_data(cls, data: Mapping) -> RetrievalOptions:
        """The options among validated request data (the search API's, bib_ask's); other keys are ignored."""
        return cls(**{f.name: data[f.name] for f in fields(cls) if f.name in data})


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
    cached: bool = False


def resolve_trim_params(
    *,
    threshold: float | None = None,
    window: int | None = None,
    min_sentences: int | None = None,
    drop_margin: float | None = None,
) -> TrimParams:
    """Explicit values win; `None` means the settings."""
    return TrimParams(
        threshold=settings.RETRIEVAL_TRIM_THRESHOLD if threshold is None else float(threshold),
        window=settings.RETRIEVAL_TRIM_WINDOW if window is None else int(window),
        min_sentences=settings.RETRIEVAL_TRIM_MIN_SENTENCES if min_sentences is None else int(min_sentences),
        relative_margin=settings.RETRIEVAL_TRIM_RELATIVE_MARGIN,
        drop_margin=settings.RETRIEVAL_TRIM_DROP_MARGIN if drop_margin is None else float(drop_margin),
        drop_neighbour_margin=settings.RETRIEVAL_TRIM_DROP_NEIGHBOUR_MARGIN,
        drop_score_margin=settings.RETRIEVAL_TRIM_DROP_SCORE_MARGIN,
        drop_search_margin=settings.RETRIEVAL_TRIM_DROP_SEARCH_MARGIN,
        drop_best_line_margin=settings.RETRIEVAL_TRIM_DROP_BEST_LINE_MARGIN,
        drop_best_line_search_margin=settings.RETRIEVAL_TRIM_DROP_BEST_LINE_SEARCH_MARGIN,
        passage_margin=settings.RETRIEVAL_TRIM_PASSAGE_MARGIN,
        passage_spread=settings.RETRIEVAL_TRIM_PASSAGE_SPREAD,
        window_spread=settings.RETRIEVAL_TRIM_WINDOW_SPREAD,
        lexical_weight=settings.RETRIEVAL_TRIM_LEXICAL_WEIGHT,
        heading_weight=settings.RETRIEVAL_TRIM_HEADING_WEIGHT,
        spread_factor=settings.RETRIEVAL_TRIM_SPREAD_FACTOR,
        companions=settings.RETRIEVAL_TRIM_COMPANIONS,
        closest_line=settings.RETRIEVAL_TRIM_CLOSEST_LINE,
        heading_answer=settings.RETRIEVAL_TRIM_HEADING_ANSWER,
        trim_markup=settings.RETRIEVAL_TRIM_MARKUP,
        identifier_units=settings.RETRIEVAL_TRIM_IDENTIFIER_UNITS,
        earlier_sections=settings.RETRIEVAL_TRIM_EARLIER_SECTIONS,
        paragraph_follow=settings.RETRIEVAL_TRIM_PARAGRAPH_FOLLOW,
        reason_follow=settings.RETRIEVAL_TRIM_REASON_FOLLOW,
        gap_words=settings.RETRIEVAL_TRIM_GAP_WORDS,
        paragraph_start=settings.RETRIEVAL_TRIM_PARAGRAPH_START,
        next_steps=settings.RETRIEVAL_TRIM_NEXT_STEPS,
        earlier_steps=settings.RETRIEVAL_TRIM_EARLIER_STEPS,
        how_steps=settings.RETRIEVAL_TRIM_HOW_STEPS,
    )


def continues_first(chunks: Sequence[RetrievedChunk]) -> list[bool]:
    """Per passage, whether it continues the first one on its page: its stored chunks touch the first's, and it
    starts under another heading (a long section cut in two is one section, not the next)."""
    if not chunks or chunks[0].index_range is None:
        return [False] * len(chunks)
    first = chunks[0]
    low, high = first.index_range
    return [
        rank > 0
        and chunk.document_id == first.document_id
        and chunk.index_range is not None
        and (chunk.index_range[0] == high + 1 or chunk.index_range[1] == low - 1)
        and chunk.heading_path != first.heading_path
        for rank, chunk in enumerate(chunks)
    ]


def trim_retrieved(
    chunks: Sequence[RetrievedChunk],
    *,
    query_vector: np.ndarray,
    params: TrimParams,
    stored: Mapping[int, StoredSentences] | None = None,
    query_terms: Mapping[str, float] | None = None,
    identifiers: Sequence[frozenset[str]] = (),
    asks_reason: bool = False,
    asks_how: bool = False,
) -> tuple[list[RetrievedChunk], int]:
    """Trimmed copies of `chunks` (dropped ones left out) and how many embedding calls the trimmer made.

    `stored` lets a caller that trims the same chunks many times (a calibration sweep) load them once;
    `query_terms` are the question's weighted terms (`query_term_weights`) for the lexical evidence;
    `identifiers` the identifiers it names (`question_identifiers`), whose units are kept; `asks_reason`
    whether it asks why (`asks_reason`), `asks_how` whether it asks how (`asks_how`).
    """
    inputs = stored_trim_inputs(chunks, query_vector=query_vector, stored=stored)
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
    outputs = trim_chunks(
        inputs,
        query_vector,
        params,
        query_terms,
        identifiers=identifiers,
        asks_reason=asks_reason,
        asks_how=asks_how,
        search_scores=[chunk.score for chunk in chunks],
        continues_first=continues_first(chunks),
    )
    trimmed = [
        replace(
            chunk,
            text=out.text,
            trimmed=out.text != chunk.original_text,
            heading_path=_kept_heading_path(chunk, item, out.kept),
        )
        for chunk, item, out in zip(chunks, inputs, outputs)
        if not out.dropped
    ]
    return trimmed, calls


def _kept_heading_path(chunk: RetrievedChunk, trim_input: TrimInput, kept: Sequence[int]) -> list[str]:
    """A grown passage is headed by the section its kept text starts in: when trimming cut the sections before
    it, the header (`[Doc: ... > heading]`, for the LLM and the sources) names the section shown."""
    if chunk.layout is None or not kept:
        return chunk.heading_path
    return list(heading_path_at(chunk.layout, trim_input.spans[kept[0]][0]))


def stored_sentences(chunks: Sequence[RetrievedChunk]) -> dict[int, StoredSentences]:
    """The stored sentences of every chunk the passages are made of: remembered ones at the generation the search
    read, the rest in one read."""
    return stored_sentences_at({i: c.generation for c in chunks for i in c.member_ids})


def sentence_cosines(
    stored: Mapping[int, StoredSentences], query_vector: np.ndarray
) -> dict[int, np.ndarray]:
    """Each stored chunk's sentences' cosines with the question (the vectors are unit length), a product per
    chunk: stacking a question's 500-odd vectors into one array first copied more than the products cost, and
    made a chunk's last bits depend on the chunks stacked with it."""
    return {chunk_id: sentences.vectors @ query_vector for chunk_id, sentences in stored.items()}


def stored_trim_inputs(
    chunks: Sequence[RetrievedChunk],
    *,
    query_vector: np.ndarray,
    stored: Mapping[int, StoredSentences] | None = None,
) -> list[TrimInput | None]:
    """Each passage's sentences as stored at ingest (mapped into a grown passage's text) with their cosines, and
    their stored stems and identifier keys when its document was processed under today's versions; None for a
    passage with a chunk stored without sentences."""
    if stored is None:
        stored = stored_sentences(chunks)
    cosines = sentence_cosines(stored, query_vector)
    heading_cosines = {
        chunk_id: float(s.heading_vector @ query_vector)
        for chunk_id, s in stored.items()
        if s.heading_vector is not None
    }
    inputs: list[TrimInput | None] = []
    spans = {i: s.spans for i, s in stored.items()}
    current = Document.current_processing()
    for chunk in chunks:
        if chunk.layout is None:
            sentences = stored.get(chunk.id)
            composed = (sentences.spans, cosines[chunk.id]) if sentences else None
            headings = ((-1, heading_cosines[chunk.id]),) if chunk.id in heading_cosines else ()
        else:
            composed = passage_sentences(chunk.layout, spans, cosines)
            headings = passage_heading_cosines(chunk.layout, composed[0], heading_cosines) if composed else ()
        if composed is None:
            inputs.append(None)
            continue
        # Stems and keys stored under today's versions, asked for only by a passage met for the first time.
        lines = (
            {
                "stored_terms": _stored_lines(chunk, stored, spans, StoredSentences.sentence_terms),
                "stored_keys": _stored_lines(chunk, stored, spans, StoredSentences.sentence_keys),
            }
            if chunk.processed_with == current
            else {}
        )
        inputs.append(trim_input(chunk, composed[0], cosines=composed[1], heading_cosines=headings, **lines))
    return inputs


def _stored_lines(
    chunk: RetrievedChunk,
    stored: Mapping[int, StoredSentences],
    spans: Mapping[int, Sequence[tuple[int, int]]],
    lines: Callable[[StoredSentences], list[str] | None],
) -> Callable[[], Sequence[str | None] | None]:
    """What `lines` reads off the chunk's stored sentences, one per unit of its passage. Partials, not closures:
    a calibration sweep pickles its trim inputs between runs (bench/calibrate_trim.py)."""
    if chunk.layout is None:
        return partial(lines, stored[chunk.id])
    return partial(_passage_lines, chunk.layout, spans, stored, lines)


def _passage_lines(
    layout: Joined,
    spans: Mapping[int, Sequence[tuple[int, int]]],
    stored: Mapping[int, StoredSentences],
    lines: Callable[[StoredSentences], list[str] | None],
) -> list[str | None]:
    return passage_stored_lines(
        layout, spans, {m.chunk_id: lines(stored[m.chunk_id]) for m in layout.members}
    )


def trim_input(
    chunk: RetrievedChunk,
    spans: Sequence[tuple[int, int]],
    vectors: np.ndarray | None = None,
    *,
    cosines: np.ndarray | None = None,
    heading_cosines: tuple[tuple[int, float], ...] = (),
    stored_terms: Callable[[], Sequence[str | None] | None] | None = None,
    stored_keys: Callable[[], Sequence[str | None] | None] | None = None,
) -> TrimInput:
    hit_start = None
    if chunk.layout is not None:
        hit_start = next((m.offset for m in chunk.layout.members if m.chunk_id == chunk.id), None)
    return TrimInput(
        chunk.original_text,
        spans,
        vectors,
        language=chunk.language,
        heading=" ".join(chunk.heading_path),
        cosines=cosines,
        heading_cosines=heading_cosines,
        hit_start=hit_start,
        heading_level=heading_level(chunk.heading_path[-1]) if chunk.heading_path else 0,
        stored_terms=stored_terms,
        stored_keys=stored_keys,
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
    return query_term_weights(
        text=query, app=filters.get("app"), source_type=filters.get("source_type"), params=hybrid_params()
    )


@lru_cache(maxsize=64)
def _params_items(params: TrimParams) -> tuple[tuple[str, object], ...]:
    return tuple(asdict(params).items())


def params_dict(params: TrimParams) -> dict:
    """`asdict(params)`, remembered: every trimmed retrieval files its parameters, and asdict costs more than
    a quarter of what trimming one passage does."""
    return dict(_params_items(params))


def chunk_tokens(chunk: RetrievedChunk) -> int:
    """`count_tokens` remembers each text: a sweep trims the same passage the same way under many settings."""
    return count_tokens(chunk.content, encoding=settings.TOKEN_ENCODING)


def context_tokens(chunks: Sequence[RetrievedChunk], *, known: Mapping[int, int] | None = None) -> int:
    """Tokens of the chunks' contents; `known` gives the counts of untrimmed chunks, so only trimmed ones
    are counted again."""
    known = known or {}
    return sum(known[c.id] if c.id in known and not c.trimmed else chunk_tokens(c) for c in chunks)


@dataclass
class PreparedRetrieval:
    """A question searched once: what every trimming of it starts from."""

    query: str
    query_vector: np.ndarray = field(repr=False)
    chunks: list[RetrievedChunk]
    chunk_tokens: dict[int, int]
    filters: Mapping[str, str | None]
    timings_ms: dict[str, float]
    # (the question's language, the docs') when it was asked in another language than the docs (`languages_apart`)
    languages: tuple[str, str] | None = None
    _terms: dict[bool, Mapping[str, float] | None] = field(default_factory=dict, repr=False)

    @property
    def tokens_before(self) -> int:
        return sum(self.chunk_tokens.values())

    @property
    def chunk_ids(self) -> list[int]:
        return [c.id for c in self.chunks]

    @property
    def retrieval_ms(self) -> float:
        return self.timings_ms["embedding"] + self.timings_ms["search"]

    def query_terms(self, params: TrimParams) -> Mapping[str, float] | None:
        """The question's weighted terms for the trimmer's lexical evidence, looked up once."""
        key = bool(params.lexical_weight)
        if key not in self._terms:
            self._terms[key] = trim_terms(self.query, params=params, filters=self.filters, chunks=self.chunks)
        return self._terms[key]


@dataclass
class TrimmedRetrieval:
    chunks: list[RetrievedChunk]
    tokens: int
    embedding_calls: int
    trim_ms: float


def retrieval_prepare(
    query: str,
    *,
    top_k: int = 5,
    filters: Mapping[str, str | None] | None = None,
    query_vector: np.ndarray | None = None,
    hybrid: bool | None = None,
    trimming: bool = False,
) -> PreparedRetrieval:
    """The best `top_k` passages for `query`, found by vectors and full text (`hybrid`, or when None
    RETRIEVAL_HYBRID), with each one's tokens; `query_vector` skips embedding the query. A question in another
    language than the docs is searched and trimmed with its vector moved towards theirs (`docs_language_vector`),
    and its words, few of which the docs hold, weigh less. With `trimming`, the passages carry the generation
    they were read at, so trimming them can use sentences remembered from earlier questions (`sentence_memory`)
    instead of reading them."""
    started = time.perf_counter()
    if query_vector is None:
        query_vector = get_embedder().embed_query(query)
    languages = languages_apart(question=query, filters=filters)
    query_vector = docs_language_vector(query_vector, languages=languages)
    embedded = time.perf_counter()
    do_hybrid = settings.RETRIEVAL_HYBRID if hybrid is None else hybrid
    chunks = search(
        query_vector=query_vector,
        top_k=top_k,
        filters=filters,
        query_text=query,
        hybrid=do_hybrid,
        lexical_share=1.0 if languages is None else settings.RETRIEVAL_HYBRID_CROSS_LANGUAGE_LEXICAL_SHARE,
        generation=trimming,
    )
    searched = time.perf_counter()
    return PreparedRetrieval(
        query=query,
        query_vector=query_vector,
        chunks=chunks,
        chunk_tokens={c.id: chunk_tokens(c) for c in chunks},
        filters=dict(filters or {}),
        timings_ms={"embedding": (embedded - started) * 1000, "search": (searched - embedded) * 1000},
        languages=languages,
    )


def question_trim_params(params: TrimParams, *, languages: tuple[str, str] | None) -> TrimParams:
    """`params` for one question: one asked in another language than the docs (`languages_apart`) counts its
    words for RETRIEVAL_TRIM_CROSS_LANGUAGE_LEXICAL_SHARE of `params.lexical_weight`, the few it shares with the
    docs being weaker evidence."""
    if languages is None or not params.lexical_weight:
        return params
    return replace(
        params, lexical_weight=params.lexical_weight * settings.RETRIEVAL_TRIM_CROSS_LANGUAGE_LEXICAL_SHARE
    )


def retrieval_trim(
    prepared: PreparedRetrieval, *, params: TrimParams, stored: Mapping[int, StoredSentences] | None = None
) -> TrimmedRetrieval:
    """The prepared passages trimmed with `params` (dropped ones left out) and the trimmed context's tokens.
    `stored` lets a caller that trims the same passages many times (a sweep) read their sentences once."""
    started = time.perf_counter()
    params = question_trim_params(params, languages=prepared.languages)
    chunks, calls = trim_retrieved(
        prepared.chunks,
        query_vector=prepared.query_vector,
        params=params,
        stored=stored,
        query_terms=prepared.query_terms(params),
        identifiers=question_identifiers(prepared.query),
        asks_reason=asks_reason(prepared.query),
        asks_how=asks_how(prepared.query),
    )
    trim_ms = (time.perf_counter() - started) * 1000
    return TrimmedRetrieval(
        chunks=chunks,
        tokens=context_tokens(chunks, known=prepared.chunk_tokens),
        embedding_calls=calls,
        trim_ms=trim_ms,
    )


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
    RETRIEVAL_HYBRID), trimmed when `trim` (or, when None, RETRIEVAL_TRIM) says so.

    A question asked before with the same options, in the library as it is now, comes from the retrieval-result
    cache (`cached`, no embedding, no search); a caller that gives its own `query_vector` always searches."""
    started = time.perf_counter()
    do_trim = settings.RETRIEVAL_TRIM if trim is None else trim
    do_hybrid = settings.RETRIEVAL_HYBRID if hybrid is None else hybrid
    params = (
        resolve_trim_params(threshold=trim_threshold, window=trim_window, min_sentences=trim_min_sentences)
        if do_trim
        else None
    )
    key = None
    if query_vector is None:
        key = retrieval_cache_key(
            query=query,
            top_k=top_k,
            trim_params=params_dict(params) if params else None,
            hybrid=do_hybrid,
            filters=filters or {},
        )
    if key is not None:
        cached = retrieval_cache_get(key=key)
        if cached is not None:
            elapsed = round((time.perf_counter() - started) * 1000, 3)
            timings = {"embedding": 0.0, "search": 0.0, **({"trim": 0.0} if cached.trimmed else {})}
            return replace(
                cached,
                cached=True,
                trim_embedding_calls=0,
                timings_ms={**timings, "cache": elapsed, "total": elapsed},
            )
    prepared = retrieval_prepare(
        query,
        top_k=top_k,
        filters=filters,
        query_vector=query_vector,
        hybrid=do_hybrid,
        trimming=bool(do_trim),
    )
    timings = dict(prepared.timings_ms)
    chunks, tokens, calls = prepared.chunks, prepared.tokens_before, 0
    if params is not None:
        trimmed = retrieval_trim(prepared, params=params)
        chunks, tokens, calls = trimmed.chunks, trimmed.tokens, trimmed.embedding_calls
        timings["trim"] = trimmed.trim_ms
    timings["total"] = (time.perf_counter() - started) * 1000
    result = RetrievalResult(
        chunks=chunks,
        tokens_in_context=tokens,
        tokens_before=prepared.tokens_before,
        trimmed=bool(do_trim),
        trim_params=params_dict(params) if params else None,
        timings_ms={k: round(v, 3) for k, v in timings.items()},
        trim_embedding_calls=calls,
        query_vector=prepared.query_vector,
    )
    if key is not None:
        retrieval_cache_put(key=key, result=result)
    return result
