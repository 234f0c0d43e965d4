"""GET /api/v1/health: database, pgvector, embedder and LLM, without embedding or calling the LLM."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.db import OperationalError, connections
from rest_framework.test import APIClient

from biblioteca.embeddings import configured_model_name, get_embedder
from tests.oraculo.fake_llm import MODEL

pytestmark = pytest.mark.django_db

HEALTH = "/api/v1/health"


@pytest.fixture
def staff() -> APIClient:
    client = APIClient()
    client.force_authenticate(User.objects.create_user("staff", is_staff=True))
    return client


def test_anonymous_callers_learn_only_ok_or_unavailable(monkeypatch, fake_llm):
    assert APIClient().get(HEALTH).json() == {"status": "ok"}
    user = APIClient()
    user.force_authenticate(User.objects.create_user("someone"))
    assert user.get(HEALTH).json() == {"status": "ok"}

    def unreachable(*args, **kwargs):
        raise OperationalError("connection refused")

    monkeypatch.setattr(type(connections["default"]), "cursor", unreachable)
    response = APIClient().get(HEALTH)
    monkeypatch.undo()
    assert (response.status_code, response.json()) == (503, {"status": "unavailable"})


def test_healthy_without_an_llm(settings, staff):
    before = get_embedder().calls
    response = staff.get(HEALTH)

    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ok"
    assert body["database"] == {"ok": True}
    assert body["pgvector"]["ok"] is True and body["pgvector"]["version"].count(".") >= 1
    assert body["embedder"] == {
        "backend": settings.EMBEDDING_BACKEND,
        "model": configured_model_name(),
        "dimensions": settings.EMBEDDING_DIMENSIONS,
    }
    assert body["llm"] == {"configured": False, "model": ""}
    assert get_embedder().calls == before


def test_reports_the_configured_llm_without_calling_it(fake_llm, staff):
    body = staff.get(HEALTH).json()
    assert body["llm"] == {"configured": True, "model": MODEL}
    assert fake_llm.requests == []


def test_database_down_is_503(monkeypatch, staff):
    """Simulates the outage: every new cursor on the default connection fails as an unreachable server does."""

    def unreachable(*args, **kwargs):
        raise OperationalError('connection to server at "127.0.0.1", port 1 failed: Connection refused')

    monkeypatch.setattr(type(connections["default"]), "cursor", unreachable)
    response = staff.get(HEALTH)
    monkeypatch.undo()

    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "unavailable"
    assert body["database"] == {"ok": False} and body["pgvector"] == {"ok": False, "version": ""}
    assert "Connection refused" not in response.content.decode()


def test_no_credentials_needed_and_post_is_405():
    assert APIClient().get(HEALTH).status_code == 200
    response = APIClient().post(HEALTH, {}, format="json")
    assert response.status_code == 405 and response.json()["detail"]
