"""An LLM that ignores max_tokens cannot make Oráculo store or return an unbounded answer, and no error message
carries the credentials of the LLM's base URL or key. Against the fake server over real HTTP."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from oraculo.llm import LLMError, synthesize_answer
from oraculo.models import OraculoQuery, WidgetKey
from tests.conftest import free_port
from tests.oraculo.test_llm import CHUNKS

KEY = "sk-test-9f8e7d6c5b4a"


def test_an_endless_answer_is_cut_and_marked_truncated(fake_llm, settings):
    settings.LLM_MAX_ANSWER_CHARS = 500
    fake_llm.reset("endless")
    answer = synthesize_answer(question="How do I reset my password?", chunks=CHUNKS)
    assert answer.truncated is True
    assert len(answer.text) <= 500 + len(" [...]") and answer.text.endswith("[...]")
    fake_llm.reset("ok")
    assert synthesize_answer(question="How do I reset my password?", chunks=CHUNKS).truncated is False


@pytest.mark.django_db
def test_the_api_returns_and_logs_the_cut_answer(fake_llm, settings, library):
    settings.LLM_MAX_ANSWER_CHARS = 300
    fake_llm.reset("endless")
    key = WidgetKey.objects.create(name="site", app=library)
    response = APIClient().post(
        "/api/v1/ask", {"question": "How do I reset my password?"}, format="json", HTTP_X_WIDGET_KEY=key.key
    )
    assert response.status_code == 200
    body = response.json()
    assert body["answer_mode"] == "llm" and len(body["answer"]) <= 306
    row = OraculoQuery.objects.get(pk=body["query_id"])
    assert row.answer == body["answer"] and row.answer_truncated is True


@pytest.mark.parametrize("mode", ["leaky", "error", "slow", "unreachable"])
def test_error_messages_never_carry_credentials(fake_llm, settings, mode):
    port = fake_llm.base_url.split(":")[2].split("/")[0] if mode != "unreachable" else free_port()
    settings.LLM_BASE_URL = f"http://alice:pw-7a6b5c4d@127.0.0.1:{port}/v1"
    settings.LLM_API_KEY = KEY
    fake_llm.reset("slow" if mode == "slow" else mode if mode != "unreachable" else "ok")
    with pytest.raises(LLMError) as caught:
        synthesize_answer(question="How do I reset my password?", chunks=CHUNKS)
    message = str(caught.value)
    assert f"127.0.0.1:{port}/v1" in message
    for secret in ("alice", "pw-7a6b5c4d", KEY):
        assert secret not in message
    if mode == "leaky":
        assert "HTTP 401" in message and fake_llm.requests  # the server did echo the key: it was scrubbed
