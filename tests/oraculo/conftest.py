"""Oráculo fixtures: no LLM unless a test asks for the fake one, and a clean cache (throttles) per test."""

from __future__ import annotations

import pytest

from tests.oraculo.fake_llm import MODEL, FakeLLM


@pytest.fixture(autouse=True)
def _isolated(settings):
    """A developer's .env must not point the suite at a real LLM; throttle history must not leak."""
    from django.core.cache import cache

    settings.LLM_BASE_URL = ""
    settings.LLM_MODEL = ""
    settings.LLM_API_KEY = ""
    cache.clear()
    yield
    cache.clear()


@pytest.fixture(scope="session")
def fake_llm_server():
    server = FakeLLM().start()
    yield server
    server.stop()


@pytest.fixture
def fake_llm(fake_llm_server, settings):
    """The fake chat server in "ok" mode, configured as the LLM with a 1s timeout and no retry."""
    fake_llm_server.reset("ok")
    settings.LLM_BASE_URL = fake_llm_server.base_url
    settings.LLM_MODEL = MODEL
    settings.LLM_API_KEY = "test-key"
    settings.LLM_TIMEOUT = 1.0
    settings.LLM_MAX_RETRIES = 0
    return fake_llm_server
