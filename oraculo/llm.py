"""Answer synthesis through any OpenAI-compatible chat endpoint (OpenAI, Azure, Ollama, vLLM, llama.cpp...).

Every failure (not configured, timeout, HTTP error, empty answer) surfaces as `LLMError`, so callers have
one thing to catch before falling back to an extractive answer.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import urlsplit

from django.conf import settings
from django.template.loader import render_to_string

from biblioteca.errors import UnavailableError
from biblioteca.search import RetrievedChunk
from config.errors import url_credentials_hidden, url_for_messages

PROMPT_TEMPLATE = "oraculo/answer_prompt.txt"
REWRITE_TEMPLATE = "oraculo/rewrite_prompt.txt"
REWRITE_PREFIX = "Follow-up question: "


class LLMError(UnavailableError):
    """The LLM is not configured, did not answer in time, failed, or answered nothing."""

    public_message = "The LLM is unavailable. Try again shortly."


@dataclass(frozen=True)
class LLMAnswer:
    text: str
    model: str
    truncated: bool = False


def _without_credentials(message: str) -> str:
    """A server's error text can echo the key it was sent."""
    for secret in (settings.LLM_API_KEY, urlsplit(settings.LLM_BASE_URL).password):
        if secret and len(secret) >= 4:
            message = message.replace(secret, "********")
    return url_credentials_hidden(message)


def llm_configured() -> bool:
    """A model name plus somewhere to send it: a base URL, or an API key for the default OpenAI endpoint."""
    return bool(settings.LLM_MODEL and (settings.LLM_BASE_URL or settings.LLM_API_KEY))


@lru_cache(maxsize=4)
def _client(base_url: str, api_key: str, timeout: float, max_retries: int):
    """One client (and connection pool) per configuration; a settings change builds a new one."""
    from openai import OpenAI

    return OpenAI(
        base_url=base_url or None, api_key=api_key or "not-needed", timeout=timeout, max_retries=max_retries
    )


def get_client():
    return _client(
        settings.LLM_BASE_URL,
        settings.LLM_API_KEY,
        float(settings.LLM_TIMEOUT),
        int(settings.LLM_MAX_RETRIES),
    )


def build_messages(
    *, question: str, chunks: Sequence[RetrievedChunk], history: Sequence[tuple[str, str]] = ()
) -> list[dict[str, str]]:
    """The system prompt carries the rules and the numbered passages; earlier turns of the thread (question,
    answer) come before the question, which goes last as the user turn."""
    system = render_to_string(PROMPT_TEMPLATE, {"chunks": chunks}).strip()
    turns = [
        m for q, a in history for m in ({"role": "user", "content": q}, {"role": "assistant", "content": a})
    ]
    return [{"role": "system", "content": system}, *turns, {"role": "user", "content": question}]


def _failure(exc: Exception, where: str) -> LLMError:
    """Any failure of a call, as the one error callers catch, without credentials."""
    import openai

    if isinstance(exc, openai.APITimeoutError):
        return LLMError(
            f"the LLM at {where} did not answer within {settings.LLM_TIMEOUT}s "
            f"({settings.LLM_MAX_RETRIES} retries)"
        )
    if isinstance(exc, openai.APIStatusError):
        return LLMError(
            _without_credentials(f"the LLM at {where} answered HTTP {exc.status_code}: {exc.message}")
        )
    return LLMError(_without_credentials(f"the LLM request to {where} failed: {exc}"))


def stream_answer(
    *, question: str, chunks: Sequence[RetrievedChunk], history: Sequence[tuple[str, str]] = ()
) -> Iterator[str]:
    """The LLM's answer as it is written, piece by piece, cut at LLM_MAX_ANSWER_CHARS. A failure before or
    during the stream (HTTP error, timeout, connection cut mid-answer) raises LLMError where it happens, so the
    caller knows how much was already shown."""
    if not llm_configured():
        raise LLMError("no LLM is configured (set LLM_MODEL and LLM_BASE_URL or LLM_API_KEY)")
    client = get_client()
    where = url_for_messages(client.base_url)
    sent, cap = 0, settings.LLM_MAX_ANSWER_CHARS
    try:
        stream = client.chat.completions.create(
            model=settings.LLM_MODEL,
            messages=build_messages(question=question, chunks=chunks, history=history),
            max_tokens=settings.LLM_MAX_TOKENS,
            stream=True,
        )
        with stream:
            for chunk in stream:
                choices = getattr(chunk, "choices", None) or []
                delta = getattr(choices[0], "delta", None) if choices else None
                text = getattr(delta, "content", None) or ""
                if not text:
                    continue
                if sent + len(text) > cap:
                    yield text[: cap - sent] + " [...]"
                    return
                sent += len(text)
                yield text
    except Exception as exc:
        raise _failure(exc, where) from exc
    if not sent:
        raise LLMError(f"the LLM ({settings.LLM_MODEL}) returned an empty answer")


def synthesize_answer(
    *, question: str, chunks: Sequence[RetrievedChunk], history: Sequence[tuple[str, str]] = ()
) -> LLMAnswer:
    """The LLM's answer to `question` from `chunks`, cited as [1], [2]... in the order given."""
    import openai

    if not llm_configured():
        raise LLMError("no LLM is configured (set LLM_MODEL and LLM_BASE_URL or LLM_API_KEY)")
    client = get_client()
    where = url_for_messages(client.base_url)
    try:
        response = client.chat.completions.create(
            model=settings.LLM_MODEL,
            messages=build_messages(question=question, chunks=chunks, history=history),
            max_tokens=settings.LLM_MAX_TOKENS,
        )
    except openai.APITimeoutError as exc:
        raise LLMError(
            f"the LLM at {where} did not answer within {settings.LLM_TIMEOUT}s "
            f"({settings.LLM_MAX_RETRIES} retries)"
        ) from exc
    except openai.APIStatusError as exc:
        raise LLMError(
            _without_credentials(f"the LLM at {where} answered HTTP {exc.status_code}: {exc.message}")
        ) from exc
    except openai.OpenAIError as exc:
        raise LLMError(_without_credentials(f"the LLM request to {where} failed: {exc}")) from exc
    choices = getattr(response, "choices", None) or []
    message = getattr(choices[0], "message", None) if choices else None
    text = (getattr(message, "content", None) or "").strip()
    if not text:
        raise LLMError(f"the LLM ({settings.LLM_MODEL}) returned an empty answer")
    # A server may ignore max_tokens: what is stored and returned stays bounded whatever it sends.
    cap = settings.LLM_MAX_ANSWER_CHARS
    truncated = len(text) > cap
    if truncated:
        text = text[:cap].rstrip() + " [...]"
    return LLMAnswer(
        text=text,
        model=str(getattr(response, "model", None) or settings.LLM_MODEL)[:200],
        truncated=truncated,
    )


def rewrite_question(*, question: str, history: Sequence[tuple[str, str]], max_chars: int) -> str:
    """`question` rewritten by the LLM to stand alone, given the thread's earlier (question, answer) turns; for
    retrieval only. Cut at `max_chars`; LLMError on any failure or an empty reply."""
    if not llm_configured():
        raise LLMError("no LLM is configured (set LLM_MODEL and LLM_BASE_URL or LLM_API_KEY)")
    client = get_client()
    where = url_for_messages(client.base_url)
    conversation = "\n".join(f"Q: {q}\nA: {a}" for q, a in history)
    messages = [
        {"role": "system", "content": render_to_string(REWRITE_TEMPLATE, {}).strip()},
        {"role": "user", "content": f"Conversation:\n{conversation}\n\n{REWRITE_PREFIX}{question}"},
    ]
    try:
        response = client.chat.completions.create(model=settings.LLM_MODEL, messages=messages, max_tokens=120)
    except Exception as exc:
        raise _failure(exc, where) from exc
    choices = getattr(response, "choices", None) or []
    message = getattr(choices[0], "message", None) if choices else None
    text = " ".join((getattr(message, "content", None) or "").split())
    if not text:
        raise LLMError(f"the LLM ({settings.LLM_MODEL}) returned an empty rewrite")
    return text[:max_chars]
