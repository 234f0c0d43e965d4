"""Answer synthesis through any OpenAI-compatible chat endpoint (OpenAI, Azure, Ollama, vLLM, llama.cpp...).

Every failure (not configured, timeout, HTTP error, empty answer) surfaces as `LLMError`, so callers have
one thing to catch before falling back to an extractive answer.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from django.conf import settings
from django.template.loader import render_to_string

from biblioteca.retrieval import RetrievedChunk

PROMPT_TEMPLATE = "oraculo/answer_prompt.txt"


class LLMError(Exception):
    """The LLM is not configured, did not answer in time, failed, or answered nothing."""


@dataclass(frozen=True)
class LLMAnswer:
    text: str
    model: str


def llm_configured() -> bool:
    """A model name plus somewhere to send it: a base URL, or an API key for the default OpenAI endpoint."""
    return bool(settings.LLM_MODEL and (settings.LLM_BASE_URL or settings.LLM_API_KEY))


@lru_cache(maxsize=4)
def _client(base_url: str, api_key: str, timeout: float, max_retries: int):
    """One client (and connection pool) per configuration; a settings change builds a new one."""
    from openai import OpenAI

    return OpenAI(base_url=base_url or None, api_key=api_key or "not-needed", timeout=timeout,
                  max_retries=max_retries)


def get_client():
    return _client(settings.LLM_BASE_URL, settings.LLM_API_KEY, float(settings.LLM_TIMEOUT),
                   int(settings.LLM_MAX_RETRIES))


def build_messages(*, question: str, chunks: Sequence[RetrievedChunk]) -> list[dict[str, str]]:
    """The system prompt carries the rules and the numbered passages; the question goes alone as the user turn."""
    system = render_to_string(PROMPT_TEMPLATE, {"chunks": chunks}).strip()
    return [{"role": "system", "content": system}, {"role": "user", "content": question}]


def synthesize_answer(*, question: str, chunks: Sequence[RetrievedChunk]) -> LLMAnswer:
    """The LLM's answer to `question` from `chunks`, cited as [1], [2]... in the order given."""
    import openai

    if not llm_configured():
        raise LLMError("no LLM is configured (set LLM_MODEL and LLM_BASE_URL or LLM_API_KEY)")
    client = get_client()
    try:
        response = client.chat.completions.create(
            model=settings.LLM_MODEL,
            messages=build_messages(question=question, chunks=chunks),
            max_tokens=settings.LLM_MAX_TOKENS,
        )
    except openai.APITimeoutError as exc:
        raise LLMError(f"the LLM at {client.base_url} did not answer within {settings.LLM_TIMEOUT}s "
                       f"({settings.LLM_MAX_RETRIES} retries)") from exc
    except openai.APIStatusError as exc:
        raise LLMError(f"the LLM at {client.base_url} answered HTTP {exc.status_code}: {exc.message}") from exc
    except openai.OpenAIError as exc:
        raise LLMError(f"the LLM request to {client.base_url} failed: {exc}") from exc
    choices = getattr(response, "choices", None) or []
    message = getattr(choices[0], "message", None) if choices else None
    text = (getattr(message, "content", None) or "").strip()
    if not text:
        raise LLMError(f"the LLM ({settings.LLM_MODEL}) returned an empty answer")
    return LLMAnswer(text=text, model=getattr(response, "model", None) or settings.LLM_MODEL)
