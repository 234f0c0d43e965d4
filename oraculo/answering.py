"""ask(): retrieve from the library, synthesise with the LLM when there is one, and log the question.

Any LLM failure degrades to an extractive answer (the best passages, cited), so a question always gets
the documentation's own words rather than an error.

Longer than most modules on purpose: asking whole and asking streamed share one preparation (thread, retrieval,
prompt) and one logging step, and keeping them side by side is what keeps the two answers the same.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser

from biblioteca.errors import NotAllowedError, NotFoundError
from biblioteca.retrieval import RetrievalOptions, RetrievalResult, retrieve
from biblioteca.search import RetrievedChunk
from oraculo import actions
from oraculo.llm import LLMError, llm_configured, rewrite_question, stream_answer, synthesize_answer
from oraculo.models import AnswerMode, Channel, OraculoQuery, WidgetKey
from oraculo.rendering import render_extractive, render_markdown
from oraculo.selectors import query_get_owned, thread_turns

EXTRACTIVE_PASSAGES = 3
NOT_FOUND = {
    "en": "The documentation has no passage about this question.",
    "es": "La documentación no tiene ningún pasaje sobre esta pregunta.",
}
_SPANISH = re.compile(
    r"[¿¡ñáéíóú]|\b(?:qué|como|cómo|cuál|cuándo|dónde|puedo|mi|mis|el|la|los|las|una|para|"
    r"con|del|es|está|hay|se|por|mucho|cuesta|cuenta)\b",
    re.IGNORECASE,
)
_ENGLISH = re.compile(
    r"\b(?:what|how|which|when|where|can|my|the|a|an|for|with|of|is|are|do|does|i|to|"
    r"much|cost|account)\b",
    re.IGNORECASE,
)


class AppNotAllowed(NotAllowedError):
    """A widget key answers for its own app only."""


class ThreadNotFound(NotFoundError):
    """No previous query with this id and feedback token, or another caller's: one answer for all."""


THREAD_ANSWER_CHARS = 1500  # of each earlier answer the LLM sees again


def contextual_question(*, question: str, previous: OraculoQuery, history: Sequence[tuple[str, str]]) -> str:
    """What a follow-up searches for: the LLM's standalone rewrite when there is one (and it answers), else the
    previous question joined to this one, so "and on Windows?" still finds what the thread is about."""
    limit = 2 * settings.QUERY_MAX_LENGTH
    if llm_configured():
        try:
            return rewrite_question(question=question, history=history, max_chars=limit)
        except LLMError:
            pass
    return f"{previous.question} {question}"[:limit]


@dataclass(frozen=True)
class AskResult:
    query_id: int
    feedback_token: str
    answer: str
    answer_mode: str
    sources: list[RetrievedChunk]
    answer_html: str
    sources_html: list[str]
    trimmed: bool
    tokens_in_context: int
    tokens_before: int
    latency_ms: dict[str, float | None]
    llm_model: str
    llm_error: str


def question_language(question: str) -> str:
    """Spanish or English by counting common words; only the one sentence Oráculo writes itself needs it."""
    return "es" if len(_SPANISH.findall(question)) > len(_ENGLISH.findall(question)) else "en"


def source_label(chunk: RetrievedChunk) -> str:
    return chunk.doc_line.removeprefix("[Doc: ").removesuffix("]")


def extractive_answer(*, question: str, chunks: Sequence[RetrievedChunk]) -> str:
    """The top passages verbatim, numbered like the sources they come from."""
    if not chunks:
        return NOT_FOUND[question_language(question)]
    return "\n\n".join(
        f"[{n}] {source_label(chunk)}\n{chunk.text.strip()}"
        for n, chunk in enumerate(chunks[:EXTRACTIVE_PASSAGES], start=1)
    )


def answer_html(*, question: str, answer: str, mode: str, chunks: Sequence[RetrievedChunk]) -> str:
    """The answer as safe HTML: an LLM's markdown rendered whole, an extractive answer passage by passage."""
    if mode == AnswerMode.LLM or not chunks:
        return render_markdown(text=answer)
    shown = chunks[:EXTRACTIVE_PASSAGES]
    return render_extractive(
        labels=[source_label(c) for c in shown], passages=[c.text.strip() for c in shown]
    )


def resolve_app(*, app: str | None, widget_key: WidgetKey | None) -> str | None:
    if widget_key is None:
        return app or None
    if not widget_key.app:
        raise AppNotAllowed("This widget key has no app, so it answers nothing; give it one in the admin.")
    if app and app != widget_key.app:
        raise AppNotAllowed(
            f"This widget key answers questions about app '{widget_key.app}' only, not '{app}'."
        )
    return widget_key.app


@dataclass
class PreparedAsk:
    """A question with its passages found: what `ask` and `ask_stream` answer from. Retrieval runs before any
    byte is streamed, so its errors (embedding model down, app not allowed) are still plain HTTP errors."""

    question: str
    app: str | None
    source_type: str | None
    widget_key: WidgetKey | None
    user: AbstractBaseUser | None
    page_url: str
    retrieval: RetrievalResult
    started: float
    history: list[tuple[str, str]] = field(default_factory=list)
    previous: OraculoQuery | None = None
    retrieval_question: str = ""
    channel: str = Channel.WIDGET

    @property
    def chunks(self) -> list[RetrievedChunk]:
        return self.retrieval.chunks

    @property
    def sources_html(self) -> list[str]:
        return [render_markdown(text=c.text) for c in self.chunks]


def ask_prepare(
    question: str,
    *,
    app: str | None = None,
    source_type: str | None = None,
    widget_key: WidgetKey | None = None,
    user: AbstractBaseUser | None = None,
    page_url: str = "",
    previous_query_id: int | None = None,
    previous_token: str = "",
    options: RetrievalOptions | None = None,
    channel: str = Channel.WIDGET,
) -> PreparedAsk:
    """Check the app (and, for a follow-up, that the caller asked the previous question), then retrieve the
    passages for `question`, rewritten with its thread's context when it follows another. `options` are the
    search API's; `channel` is the door the question came through, as the log records it."""
    started = time.perf_counter()
    question = question.strip()
    app = resolve_app(app=app, widget_key=widget_key)
    previous, history, searched = None, [], question
    if previous_query_id is not None:
        previous = query_get_owned(
            query_id=previous_query_id, token=previous_token, widget_key=widget_key, user=user
        )
        if previous is None:
            raise ThreadNotFound("No previous query with this id and feedback token.")
        # A follow-up that names no scope stays in its conversation's.
        app = app or previous.app or None
        source_type = source_type or previous.source_type or None
        turns = thread_turns(previous=previous, turns=settings.THREAD_MAX_TURNS)
        history = [(t.question, t.answer[:THREAD_ANSWER_CHARS]) for t in turns]
        searched = contextual_question(question=question, previous=previous, history=history)
    retrieval = retrieve(
        searched,
        filters={"app": app, "source_type": source_type or None},
        **(options or RetrievalOptions()).as_kwargs(),
    )
    return PreparedAsk(
        question=question,
        app=app,
        source_type=source_type,
        widget_key=widget_key,
        user=user,
        page_url=page_url,
        retrieval=retrieval,
        started=started,
        history=history,
        previous=previous,
        retrieval_question=searched,
        channel=channel,
    )


def _answered(
    prepared: PreparedAsk,
    *,
    answer: str,
    mode: AnswerMode,
    model: str,
    error: str,
    llm_ms: float | None,
    truncated: bool,
) -> AskResult:
    """Fall back to the extractive answer when there is no LLM answer, log the question, and return it all."""
    chunks, retrieval = prepared.chunks, prepared.retrieval
    if mode == AnswerMode.EXTRACTIVE:
        answer = extractive_answer(question=prepared.question, chunks=chunks)
    timings = retrieval.timings_ms
    latency = {
        "embedding": timings.get("embedding"),
        "search": timings.get("search"),
        "trim": timings.get("trim"),
        "llm": llm_ms,
        **({"cache": timings["cache"]} if retrieval.cached else {}),
        "total": round((time.perf_counter() - prepared.started) * 1000, 3),
    }
    query = actions.query_log_create(
        question=prepared.question,
        app=prepared.app,
        source_type=prepared.source_type,
        answer=answer,
        answer_mode=mode,
        chunks=chunks,
        trimmed=retrieval.trimmed,
        trim_params=retrieval.trim_params,
        tokens_before=retrieval.tokens_before,
        tokens_in_context=retrieval.tokens_in_context,
        latency_ms=latency,
        llm_model=model,
        llm_error=error,
        answer_truncated=truncated,
        widget_key=prepared.widget_key,
        user=prepared.user,
        page_url=prepared.page_url,
        question_vector=retrieval.query_vector,
        previous=prepared.previous,
        retrieval_question=prepared.retrieval_question,
        channel=prepared.channel,
    )
    return AskResult(
        query_id=query.pk,
        feedback_token=actions.query_feedback_token(query_id=query.pk),
        answer=answer,
        answer_mode=mode.value,
        sources=list(chunks),
        answer_html=answer_html(question=prepared.question, answer=answer, mode=mode, chunks=chunks),
        sources_html=prepared.sources_html,
        trimmed=retrieval.trimmed,
        tokens_in_context=retrieval.tokens_in_context,
        tokens_before=retrieval.tokens_before,
        latency_ms=latency,
        llm_model=model,
        llm_error=error,
    )


def ask(
    question: str,
    *,
    app: str | None = None,
    source_type: str | None = None,
    widget_key: WidgetKey | None = None,
    user: AbstractBaseUser | None = None,
    page_url: str = "",
    previous_query_id: int | None = None,
    previous_token: str = "",
    options: RetrievalOptions | None = None,
    channel: str = Channel.WIDGET,
) -> AskResult:
    """Answer `question` from the library (scoped to the key's app) and log it as an OraculoQuery."""
    prepared = ask_prepare(
        question,
        app=app,
        source_type=source_type,
        widget_key=widget_key,
        user=user,
        page_url=page_url,
        previous_query_id=previous_query_id,
        previous_token=previous_token,
        options=options,
        channel=channel,
    )
    return ask_answer(prepared=prepared)


def ask_answer(*, prepared: PreparedAsk) -> AskResult:
    """The whole answer at once: the LLM's, or the extractive one when there is no LLM or it fails."""
    answer, mode, model, error, llm_ms, truncated = "", AnswerMode.EXTRACTIVE, "", "", None, False
    if prepared.chunks and llm_configured():
        t = time.perf_counter()
        try:
            synthesis = synthesize_answer(
                question=prepared.question, chunks=prepared.chunks, history=prepared.history
            )
        except LLMError as exc:
            error, model = str(exc), settings.LLM_MODEL
        else:
            answer, mode, model, truncated = (
                synthesis.text,
                AnswerMode.LLM,
                synthesis.model,
                synthesis.truncated,
            )
        llm_ms = round((time.perf_counter() - t) * 1000, 3)
    return _answered(
        prepared, answer=answer, mode=mode, model=model, error=error, llm_ms=llm_ms, truncated=truncated
    )


@dataclass(frozen=True)
class StreamEvent:
    """`sources` (the prepared passages), `delta` (a piece of text) or `done` (the logged AskResult)."""

    kind: str
    text: str = ""
    result: AskResult | None = None


CLIENT_LEFT = "the client left before the answer was complete"


def ask_stream(*, prepared: PreparedAsk) -> Iterator[StreamEvent]:
    """The answer as it is written: the sources, then the LLM's text in pieces, then the logged result. If the
    LLM fails, before or mid-stream, the result is the extractive answer (which replaces what was streamed) and
    the log records the error. Without an LLM the extractive answer comes as one piece."""
    yield StreamEvent("sources")
    answer, mode, model, error, llm_ms, truncated = "", AnswerMode.EXTRACTIVE, "", "", None, False
    if prepared.chunks and llm_configured():
        t, parts = time.perf_counter(), []
        try:
            for text in stream_answer(
                question=prepared.question, chunks=prepared.chunks, history=prepared.history
            ):
                parts.append(text)
                yield StreamEvent("delta", text=text)
        except GeneratorExit:
            # The visitor left mid-answer (a closed tab, a timeout): the question is logged all the same, with
            # what was written, as an answer cut short.
            _answered(
                prepared,
                answer="".join(parts).strip(),
                mode=AnswerMode.LLM,
                model=settings.LLM_MODEL,
                error=CLIENT_LEFT,
                llm_ms=round((time.perf_counter() - t) * 1000, 3),
                truncated=True,
            )
            raise
        except LLMError as exc:
            error, model = str(exc), settings.LLM_MODEL
        else:
            answer, mode, model = "".join(parts).strip(), AnswerMode.LLM, settings.LLM_MODEL
            truncated = answer.endswith(" [...]") and len(answer) > settings.LLM_MAX_ANSWER_CHARS
        llm_ms = round((time.perf_counter() - t) * 1000, 3)
    result = _answered(
        prepared, answer=answer, mode=mode, model=model, error=error, llm_ms=llm_ms, truncated=truncated
    )
    if mode == AnswerMode.EXTRACTIVE and not error:
        yield StreamEvent("delta", text=result.answer)
    yield StreamEvent("done", result=result)
