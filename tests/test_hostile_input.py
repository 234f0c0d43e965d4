"""Hostile input at every door: deeply nested JSON, NUL characters and lone surrogates are a 400 with a message,
never a 500 (a RecursionError in the parser, PostgreSQL refusing the text) nor a 503; nothing is stored."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission, User
from django.core.cache import cache
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from oraculo.models import EvalRun, OraculoQuery, WidgetKey

pytestmark = pytest.mark.django_db

DEEP = "[" * 100_000 + "]" * 100_000
NESTED_FIELD = '{"question": ' + "[" * 50 + "]" * 50 + "}"
NUL = '{"question": "How do I reset\\u0000 my password?"}'
SURROGATE = '{"question": "How do I reset \\ud800 my password?"}'
NUL_KEY = '{"question": "How?", "x\\u0000": 1}'
BODIES = {
    "deep": DEEP,
    "nested field": NESTED_FIELD,
    "NUL": NUL,
    "lone surrogate": SURROGATE,
    "NUL key": NUL_KEY,
}
MESSAGES = {
    "deep": "nested too deeply",
    "nested field": "nested too deeply",
    "NUL": "NUL characters",
    "lone surrogate": "lone surrogates",
    "NUL key": "NUL characters",
}


@pytest.fixture
def widget_key(library) -> WidgetKey:
    return WidgetKey.objects.create(name="site", app=library, rate_limit="1000/min")


@pytest.fixture
def staff(db) -> APIClient:
    user = User.objects.create_user("staff", is_staff=True)
    user.user_permissions.set(
        Permission.objects.filter(codename__in=["add_evalrun", "view_evalrun", "view_oraculoquery"])
    )
    client = APIClient()
    client.force_authenticate(user)
    return client


def assert_refused(response, name: str) -> None:
    assert response.status_code == 400, (name, response.status_code, response.content[:300])
    assert response["Content-Type"] == "application/json"
    assert MESSAGES[name] in response.json()["detail"]


@pytest.mark.parametrize("name", BODIES)
def test_ask_refuses_with_a_400(name, widget_key, settings):
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"widget_key": "1000/min", "client_ip": "1000/min"},
    }
    response = APIClient().post(
        "/api/v1/ask", BODIES[name], content_type="application/json", HTTP_X_WIDGET_KEY=widget_key.key
    )
    assert_refused(response, name)
    assert not OraculoQuery.objects.exists()


@pytest.mark.parametrize("name", BODIES)
def test_feedback_refuses_with_a_400(name, widget_key):
    query = OraculoQuery.objects.create(question="Q", widget_key=widget_key)
    body = BODIES[name].replace('"question"', '"comment"')
    response = APIClient().post(
        f"/api/v1/queries/{query.pk}/feedback",
        body,
        content_type="application/json",
        HTTP_X_WIDGET_KEY=widget_key.key,
    )
    assert_refused(response, name)
    query.refresh_from_db()
    assert query.feedback_at is None


@pytest.mark.parametrize("name", BODIES)
def test_search_refuses_with_a_400(name, staff, library):
    body = BODIES[name].replace('"question"', '"query"')
    assert_refused(staff.post("/api/v1/search", body, content_type="application/json"), name)


@pytest.mark.parametrize("name", BODIES)
def test_eval_api_refuses_with_a_400(name, staff, library):
    body = {
        "deep": DEEP,
        "nested field": '{"questions": ' + "[" * 50 + '"Q"' + "]" * 50 + "}",
        "NUL": '{"questions": ["How\\u0000?"]}',
        "NUL key": '{"questions": ["How?"], "x\\u0000": 1}',
        "lone surrogate": '{"questions": [{"question": "How?", "expected_answer": "\\udfff"}]}',
    }[name]
    assert_refused(staff.post("/api/v1/eval-runs", body, content_type="application/json"), name)
    assert not EvalRun.objects.exists()


@pytest.mark.parametrize("header", ["HTTP_X_WIDGET_KEY", "HTTP_AUTHORIZATION"])
def test_a_nul_in_a_credential_is_a_401(header, widget_key):
    value = "wk_abc\x00def" if header == "HTTP_X_WIDGET_KEY" else "Token abc\x00def"
    response = APIClient().post("/api/v1/ask", {"question": "How?"}, format="json", **{header: value})
    assert response.status_code == 401


def test_a_valid_token_still_authenticates(library):
    user = User.objects.create_user("integration")
    token = Token.objects.create(user=user)
    response = APIClient().post(
        "/api/v1/ask",
        {"question": "How?", "app": library},
        format="json",
        HTTP_AUTHORIZATION=f"Token {token.key}",
    )
    assert response.status_code == 200


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"How do I reset\x00 my password?\n", "NUL characters"),
        (b'{"question": "How do I reset \\ud800 my password?"}\n', "lone surrogates"),
        (b'{"question": "Q", "expected_answer": "a\\u0000b"}\n', "NUL characters"),
    ],
)
def test_admin_question_files_are_refused_with_a_message(admin_client, library, content, message):
    upload = SimpleUploadedFile("gold.jsonl" if content.startswith(b"{") else "gold.txt", content)
    response = admin_client.post(
        reverse("admin:oraculo_oraculoquery_evaluate"),
        {
            "top_k": 3,
            "trim_threshold": 0.9,
            "trim_window": 1,
            "variants": ["baseline", "trim"],
            "app": library,
            "questions_file": upload,
        },
    )
    assert response.status_code == 200
    assert message in response.content.decode()
    assert not EvalRun.objects.exists()


@pytest.mark.parametrize(
    "path",
    [
        "/admin/oraculo/oraculoquery/?app=%00",
        "/admin/oraculo/oraculoquery/evaluate/?last=15&app=%00",
        "/api/v1/eval-runs/1?x%00=1",
    ],
)
def test_a_nul_in_a_query_string_is_a_400_before_any_view(admin_client, path):
    response = admin_client.get(path)
    assert response.status_code == 400
    assert "NUL characters" in response.content.decode()
    if path.startswith("/api/"):
        assert response.json() == {"detail": "Text may not contain NUL characters (\\u0000)."}


def test_a_nul_in_a_form_field_is_a_400_and_nothing_is_queued(admin_client, library):
    response = admin_client.post(
        reverse("admin:oraculo_oraculoquery_evaluate"),
        {"top_k": 3, "trim_threshold": 0.9, "trim_window": 1, "variants": ["baseline"], "app": "x\x00"},
    )
    assert response.status_code == 400 and "NUL characters" in response.content.decode()
    assert not EvalRun.objects.exists()


def test_errors_django_answers_itself_are_json_under_the_api(client, widget_key, settings):
    assert client.get("/api/v1/no-such-thing").json() == {"detail": "Not found."}
    assert client.get("/api/v1/no-such-thing").status_code == 404
    assert client.post("/api/v1/queries/-1/feedback", {}).status_code == 404
    assert client.post("/api/v1/queries/-1/feedback", {}).json() == {"detail": "Not found."}
    assert "text/html" in client.get("/no-such-page").headers["Content-Type"]
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    cache.clear()  # the client IP's throttle counts this module's other asks
    response = client.post(
        "/api/v1/ask",
        '{"question": "' + "x" * 2000 + '"}',
        content_type="application/json",
        HTTP_X_WIDGET_KEY=widget_key.key,
    )
    assert response.status_code == 413
    assert response.json() == {"detail": "The request body is too large: at most 1,000 bytes."}
    assert not OraculoQuery.objects.exists()


@pytest.mark.parametrize(
    "path",
    [
        "/admin/oraculo/oraculoquery/?created_at__year=99999999999",
        "/admin/biblioteca/document/?ingested_at__year=99999999999",
    ],
)
def test_a_date_filter_past_the_calendar_is_the_admins_invalid_filter_redirect(admin_client, path):
    response = admin_client.get(path)
    assert response.status_code == 302 and response["Location"].endswith("?e=1")
