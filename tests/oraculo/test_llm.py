"""oraculo.llm against the fake OpenAI-compatible server, through the real `openai` client over HTTP."""

from __future__ import annotations

import time

import pytest

from biblioteca.search import RetrievedChunk
from oraculo.llm import LLMAnswer, LLMError, build_messages, get_client, llm_configured, synthesize_answer
from tests.conftest import free_port
from tests.oraculo.fake_llm import MODEL


def chunk(
    n: int, text: str, *, title: str = "Managing your account", heading: str = "## Resetting"
) -> RetrievedChunk:
    return RetrievedChunk(
        id=n,
        chunk_id=f"account.md#{n}",
        document_id=1,
        title=title,
        heading_path=[f"# {title}", heading],
        url="https://docs.example.com/en/account",
        score=0.9 - n / 10,
        text=text,
        original_text=text,
    )


CHUNKS = [
    chunk(0, 'Click "Forgot password" & we send a reset link <valid 30 minutes>.'),
    chunk(1, "Passwords must have at least 12 characters.", heading="## Rules"),
]


def test_configured_needs_a_model_and_an_endpoint_or_key(settings):
    assert not llm_configured()
    settings.LLM_MODEL = "m"
    assert not llm_configured()
    settings.LLM_BASE_URL = "http://127.0.0.1:1/v1"
    assert llm_configured()
    settings.LLM_BASE_URL, settings.LLM_API_KEY = "", "sk-test"
    assert llm_configured()


def test_not_configured_raises_without_any_request(fake_llm_server):
    fake_llm_server.reset()
    with pytest.raises(LLMError, match="no LLM is configured"):
        synthesize_answer(question="How do I reset my password?", chunks=CHUNKS)
    assert fake_llm_server.requests == []


def test_answer_comes_from_the_server_with_the_numbered_context(fake_llm, settings):
    settings.LLM_MAX_TOKENS = 123
    answer = synthesize_answer(question="How do I reset my password?", chunks=CHUNKS)

    assert answer == LLMAnswer(text=answer.text, model=MODEL)
    assert "[1]" in answer.text and 'Click "Forgot password" & we send' in answer.text
    [request] = fake_llm.requests
    assert request["path"] == "/v1/chat/completions"
    assert request["headers"]["authorization"] == "Bearer test-key"
    body = request["body"]
    assert body["model"] == MODEL and body["max_tokens"] == 123
    system, user = body["messages"]
    assert user == {"role": "user", "content": "How do I reset my password?"}
    assert system["role"] == "system"
    assert "[1] [Doc: Managing your account > Resetting]\n" + CHUNKS[0].text in system["content"]
    assert "[2] [Doc: Managing your account > Rules]\n" + CHUNKS[1].text in system["content"]


def test_prompt_asks_for_grounded_cited_answers_in_the_questions_language():
    system = build_messages(question="¿Cómo cambio mi contraseña?", chunks=CHUNKS)[0]["content"]
    assert "ONLY the numbered documentation passages" in system
    assert "language of the question" in system
    assert "[1] or [2][3]" in system
    assert "does not cover it" in system
    assert "&amp;" not in system and "&lt;" not in system and "&quot;" not in system
    empty = build_messages(question="?", chunks=[])[0]["content"]
    assert "(no passages were found)" in empty


def test_timeout_raises_llm_error_quickly(fake_llm, settings):
    settings.LLM_TIMEOUT = 0.5
    fake_llm.reset("slow")
    started = time.monotonic()
    with pytest.raises(LLMError, match=r"did not answer within 0.5s"):
        synthesize_answer(question="How do I reset my password?", chunks=CHUNKS)
    assert time.monotonic() - started < 3
    assert len(fake_llm.requests) == 1


def test_http_error_raises_after_a_bounded_retry(fake_llm, settings):
    settings.LLM_MAX_RETRIES = 1
    fake_llm.reset("error")
    with pytest.raises(LLMError, match="HTTP 500"):
        synthesize_answer(question="How do I reset my password?", chunks=CHUNKS)
    assert len(fake_llm.requests) == 2


def test_empty_answer_is_an_error(fake_llm):
    fake_llm.reset("empty")
    with pytest.raises(LLMError, match="empty answer"):
        synthesize_answer(question="How do I reset my password?", chunks=CHUNKS)


def test_unreachable_server_is_an_error(fake_llm, settings):
    settings.LLM_BASE_URL = f"http://127.0.0.1:{free_port()}/v1"
    with pytest.raises(LLMError, match="failed"):
        synthesize_answer(question="How do I reset my password?", chunks=CHUNKS)


def test_client_is_cached_per_settings_and_rebuilt_when_they_change(fake_llm, settings):
    client = get_client()
    assert get_client() is client
    assert client.timeout == 1.0 and client.max_retries == 0
    settings.LLM_TIMEOUT = 2.5
    rebuilt = get_client()
    assert rebuilt is not client and rebuilt.timeout == 2.5
    settings.LLM_BASE_URL = "http://127.0.0.1:9/v1"
    assert str(get_client().base_url).startswith("http://127.0.0.1:9/v1")
