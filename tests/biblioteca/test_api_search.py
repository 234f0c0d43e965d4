"""POST /api/v1/search: the seed's bib_ask over HTTP, for staff and API tokens only."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db
URL = "/api/v1/search"


@pytest.fixture
def staff_client():
    client = APIClient()
    client.force_login(User.objects.create_user("staff", password="x", is_staff=True))
    return client


def test_search_returns_chunks_tokens_and_timings(library, staff_client, settings):
    settings.RETRIEVAL_TRIM_DROP_MARGIN = settings.RETRIEVAL_TRIM_DROP_SCORE_MARGIN = (
        None  # both passages stay
    )
    response = staff_client.post(
        URL,
        {
            "query": "How long is the reset link valid?",
            "top_k": 2,
            "trim": True,
            "app": library,
            "source_type": "en",
        },
        format="json",
    )
    assert response.status_code == 200, response.json()
    body = response.json()
    assert set(body) == {"chunks", "tokens_in_context", "tokens_before", "trimmed", "timings_ms"}
    assert body["trimmed"] is True and len(body["chunks"]) == 2
    assert set(body["chunks"][0]) == {
        "id",
        "chunk_id",
        "document_id",
        "title",
        "heading_path",
        "url",
        "score",
        "content",
    }
    assert body["chunks"][0]["url"] == "https://docs.example.com/en/account"
    assert body["chunks"][0]["chunk_id"].startswith("account.md#")
    assert body["tokens_in_context"] <= body["tokens_before"]


def test_a_null_filter_is_the_filter_left_out(library):
    client = APIClient()
    client.force_authenticate(User.objects.create_user("agent", is_staff=True))
    body = {"query": "How do I reset my password?", "top_k": 3}
    plain = client.post(URL, body, format="json").json()["chunks"]
    nulls = client.post(URL, {**body, "app": None, "source_type": None}, format="json")
    assert nulls.status_code == 200, nulls.json()
    assert [c["id"] for c in nulls.json()["chunks"]] == [c["id"] for c in plain]


def test_a_token_is_enough(library):
    user = User.objects.create_user("robot")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    assert client.post(URL, {"query": "invoices", "app": library}, format="json").status_code == 200


def test_anonymous_and_non_staff_sessions_are_refused():
    anonymous = APIClient().post(URL, {"query": "x"}, format="json")
    assert anonymous.status_code == 401 and anonymous["WWW-Authenticate"] == "Token"
    wrong = APIClient(HTTP_AUTHORIZATION="Token " + "0" * 40).post(URL, {"query": "x"}, format="json")
    assert wrong.status_code == 401 and wrong["WWW-Authenticate"] == "Token"
    client = APIClient()
    client.force_login(User.objects.create_user("plain", password="x"))
    assert client.post(URL, {"query": "x"}, format="json").status_code == 403


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"query": ""}, "query"),
        ({"query": "   "}, "query"),
        ({"query": "x" * 2001}, "query"),
        ({}, "query"),
        ({"query": 42}, "query"),
        ({"query": "ok", "top_k": 0}, "top_k"),
        ({"query": "ok", "top_k": 21}, "top_k"),
        ({"query": "ok", "trim_threshold": 1.5}, "trim_threshold"),
        ({"query": "ok", "trim_threshold": -1.01}, "trim_threshold"),
        ({"query": "ok", "bogus": 1}, "bogus"),
    ],
)
def test_invalid_requests_get_a_400_naming_the_field(staff_client, payload, field):
    response = staff_client.post(URL, payload, format="json")
    assert response.status_code == 400
    assert field in response.json(), response.json()


def test_hybrid_can_be_switched_per_request(library, staff_client, settings):
    """The request's `hybrid` wins over RETRIEVAL_HYBRID either way (the fusion itself: test_hybrid_search)."""
    from biblioteca.retrieval import retrieve

    settings.RETRIEVAL_HYBRID = False
    filters = {"app": library, "source_type": "en"}

    def ids(payload):
        return [c["id"] for c in staff_client.post(URL, payload, format="json").json()["chunks"]]

    def expected(query, hybrid):
        return [c.id for c in retrieve(query, top_k=3, filters=filters, hybrid=hybrid).chunks]

    query = next(
        q
        for q in (
            "minute",
            "header",
            "token",
            "Authorization",
            "invoice PDF",
            "429",
            "password link",
            "refund",
            "seconds",
        )
        if expected(q, True) != expected(q, False)
    )
    body = {"query": query, "top_k": 3, **filters}
    assert ids(body) == expected(query, False)
    assert ids({**body, "hybrid": True}) == expected(query, True)
    assert staff_client.post(URL, {**body, "hybrid": "maybe"}, format="json").status_code == 400
