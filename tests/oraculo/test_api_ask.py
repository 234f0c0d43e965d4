"""POST /api/v1/ask and /api/v1/queries/{id}/feedback: who may call, validation, throttling, CORS, schema."""

from __future__ import annotations

import json
from datetime import UTC

import pytest
from django.contrib.auth import get_user_model
from django.urls import include, path
from drf_spectacular.drainage import GENERATOR_STATS, reset_generator_stats
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.validation import validate_schema
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from biblioteca.retrieval import RetrievalOptions
from oraculo.answering import ask
from oraculo.api.serializers import AskResponseSerializer, ask_response_data
from oraculo.models import OraculoQuery, WidgetKey
from tests.conftest import free_port
from tests.oraculo.fake_llm import MODEL

pytestmark = pytest.mark.django_db

ASK = "/api/v1/ask"
ORIGIN = "https://help.example.com"
QUESTION = "How do I reset my password?"
# A new question: the key (read once, for authentication and CORS); the library's generation; the search in its
# transaction (savepoint, one set_config); neighbours; the log's two rows in one statement. A repeated one: the
# key, the generation and the log.
ASK_QUERIES = 8
ASK_REPEATED_QUERIES = 3
FEEDBACK_QUERIES = 3


def feedback_url(query_id: int) -> str:
    return f"/api/v1/queries/{query_id}/feedback"


@pytest.fixture
def widget_key(library) -> WidgetKey:
    return WidgetKey.objects.create(
        name="help site", app=library, allowed_origins=[ORIGIN], rate_limit="100/min"
    )


@pytest.fixture
def other_key(library) -> WidgetKey:
    return WidgetKey.objects.create(name="shop", app=library, allowed_origins=["https://shop.example.com"])


@pytest.fixture
def client() -> APIClient:
    return APIClient()


def post(client: APIClient, url: str, body, *, key: WidgetKey | str | None = None, **headers):
    if key is not None:
        headers["HTTP_X_WIDGET_KEY"] = key.key if isinstance(key, WidgetKey) else key
    payload = body if isinstance(body, str) else json.dumps(body)
    return client.post(url, payload, content_type="application/json", **headers)


@pytest.fixture
def staff(client):
    user = get_user_model().objects.create_user("staff", password="pw-long-enough", is_staff=True)
    client.force_login(user)
    return user


# --- asking -------------------------------------------------------------------------------------------------


def test_widget_key_asks_and_gets_an_llm_answer_with_sources(client, widget_key, fake_llm):
    response = post(
        client,
        ASK,
        {"question": QUESTION, "page_url": "https://help.example.com/account"},
        key=widget_key,
        HTTP_ORIGIN=ORIGIN,
    )

    assert response.status_code == 200, response.content
    body = response.json()
    assert set(body) == {
        "query_id",
        "feedback_token",
        "answer",
        "answer_html",
        "answer_mode",
        "sources",
        "trimmed",
        "tokens_in_context",
        "tokens_before",
        "latency_ms",
    }
    assert len(body["feedback_token"]) == 64
    assert body["answer_mode"] == "llm" and "[1]" in body["answer"]
    assert body["sources"] and set(body["sources"][0]) == {
        "id",
        "title",
        "heading_path",
        "url",
        "score",
        "content",
        "html",
    }
    assert body["sources"][0]["content"].startswith("[Doc: ")
    assert body["answer"].startswith(f"According to {body['sources'][0]['content'].splitlines()[0]}")
    assert set(body["latency_ms"]) == {"embedding", "search", "trim", "llm", "total"}
    assert body["trimmed"] is False and body["tokens_in_context"] == body["tokens_before"] > 0

    row = OraculoQuery.objects.get(pk=body["query_id"])
    assert row.widget_key == widget_key and row.user is None and row.app == widget_key.app
    assert row.channel == "widget"
    assert row.page_url == "https://help.example.com/account" and row.llm_model == MODEL
    assert len(row.chunk_ids) == len(row.chunk_scores) == len(body["sources"])
    assert all("#" in chunk_id for chunk_id in row.chunk_ids)


@pytest.mark.parametrize(
    ("page_url", "stored"),
    [
        ("http://intranet/help", "http://intranet/help"),
        (
            "https://help.example.com/search?q=" + "a" * 2100,
            ("https://help.example.com/search?q=" + "a" * 2100)[:2000],
        ),
    ],
)
def test_any_page_the_widget_sits_on_gets_its_answer(client, widget_key, fake_llm, page_url, stored):
    """The widget sends `location.href`: an intranet host or a long query string must not refuse the question."""
    response = post(
        client, ASK, {"question": QUESTION, "page_url": page_url}, key=widget_key, HTTP_ORIGIN=ORIGIN
    )

    assert response.status_code == 200, response.content
    assert OraculoQuery.objects.get().page_url == stored


def test_llm_timeout_gives_an_extractive_answer_over_the_api(client, widget_key, fake_llm):
    fake_llm.reset("slow")
    body = post(client, ASK, {"question": QUESTION}, key=widget_key).json()
    assert body["answer_mode"] == "extractive" and body["answer"].startswith("[1] ")
    assert "did not answer" in OraculoQuery.objects.get(pk=body["query_id"]).llm_error


def test_staff_session_asks_any_app_without_a_key(client, staff, library):
    response = post(client, ASK, {"question": QUESTION, "app": library, "source_type": "en"})
    assert response.status_code == 200, response.content
    row = OraculoQuery.objects.get(pk=response.json()["query_id"])
    assert row.user == staff and row.widget_key is None and row.source_type == "en"
    assert row.answer_mode == "extractive" and row.channel == "api"


def test_api_token_asks_without_a_key(client, library):
    user = get_user_model().objects.create_user("integration")
    token = Token.objects.create(user=user)
    response = post(client, ASK, {"question": QUESTION}, HTTP_AUTHORIZATION=f"Token {token.key}")
    assert response.status_code == 200, response.content
    assert OraculoQuery.objects.get(pk=response.json()["query_id"]).user == user


def test_embedding_service_down_is_a_json_503(client, widget_key, settings):
    """A real OpenAI-compatible embedder pointed at a port where nothing listens."""
    settings.EMBEDDING_BACKEND = "openai"
    settings.EMBEDDING_MODEL = "some-embedder"
    settings.EMBEDDING_BASE_URL = f"http://127.0.0.1:{free_port()}/v1"
    settings.EMBEDDING_MAX_RETRIES = 0
    settings.EMBEDDING_TIMEOUT = 1.0
    response = post(client, ASK, {"question": QUESTION}, key=widget_key)
    assert response.status_code == 503
    assert response.json() == {"detail": "The embedding model is unavailable. Try again shortly."}
    assert not OraculoQuery.objects.exists()


# --- validation: 400 ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "field", "message"),
    [
        ({"question": ""}, "question", "The question may not be empty."),
        ({"question": "   "}, "question", "The question may not be empty."),
        ({}, "question", "A question is required."),
        ({"question": None}, "question", "The question may not be null."),
        ({"question": 42}, "question", "Must be text (a JSON string), not a number."),
        ({"question": True}, "question", "Must be text (a JSON string), not a boolean."),
        ({"question": ["a"]}, "question", "Must be text (a JSON string), not an array."),
        ({"question": {"text": "a"}}, "question", "Must be text (a JSON string), not an object."),
        ({"question": QUESTION, "app": 7}, "app", "Must be text (a JSON string), not a number."),
        (
            {"question": QUESTION, "page_url": "not a url"},
            "page_url",
            "Must be an http:// or https:// address.",
        ),
        (
            {"question": QUESTION, "page_url": "javascript:alert(1)"},
            "page_url",
            "Must be an http:// or https:// address.",
        ),
        (
            {"question": QUESTION, "top_k": 50},
            "top_k",
            "Unknown field. Accepted fields: question, app, source_type, "
            "page_url, previous_query_id, previous_feedback_token.",
        ),
    ],
)
def test_invalid_bodies_get_a_400_per_field(client, widget_key, body, field, message):
    response = post(client, ASK, body, key=widget_key)
    assert response.status_code == 400
    assert response.json()[field] == [message]
    assert not OraculoQuery.objects.exists()


def test_too_long_question_names_the_limit(client, widget_key, settings):
    settings.QUERY_MAX_LENGTH = 50
    response = post(client, ASK, {"question": "x" * 51}, key=widget_key)
    assert response.status_code == 400
    assert response.json() == {"question": ["The question is too long: at most 50 characters."]}
    assert post(client, ASK, {"question": "x" * 50}, key=widget_key).status_code == 200


def test_unknown_fields_are_reported_with_the_other_errors(client, widget_key):
    response = post(client, ASK, {"question": "", "language": "en", "debug": True}, key=widget_key)
    assert response.status_code == 400
    assert set(response.json()) == {"question", "language", "debug"}


@pytest.mark.parametrize(
    ("payload", "content_type"),
    [
        ('{"question": ', "application/json"),
        ("[1, 2]", "application/json"),
        ("question=hi", "text/plain"),
    ],
)
def test_malformed_bodies_get_json_errors(client, widget_key, payload, content_type):
    response = client.post(ASK, payload, content_type=content_type, HTTP_X_WIDGET_KEY=widget_key.key)
    assert response.status_code in (400, 415)
    assert response["Content-Type"] == "application/json"
    assert response.json()


# --- who may call: 401 / 403 --------------------------------------------------------------------------------


def test_no_credentials_is_401_and_says_how_to_authenticate(client, library):
    response = post(client, ASK, {"question": QUESTION})
    assert response.status_code == 401
    assert "X-Widget-Key" in response.json()["detail"]
    assert response["WWW-Authenticate"] == 'WidgetKey header="X-Widget-Key"'


@pytest.mark.parametrize("active", [True, False])
def test_unknown_or_inactive_key_is_401(client, widget_key, active):
    if not active:
        widget_key.is_active = False
        widget_key.save()
    response = post(client, ASK, {"question": QUESTION}, key=widget_key if not active else "wk_nope")
    assert response.status_code == 401
    assert response.json() == {"detail": "The X-Widget-Key header holds an unknown or inactive widget key."}


def test_signed_in_non_staff_user_is_403(client, library):
    client.force_login(get_user_model().objects.create_user("visitor"))
    response = post(client, ASK, {"question": QUESTION})
    assert response.status_code == 403 and "X-Widget-Key" in response.json()["detail"]


def test_origin_not_listed_for_the_key_is_403(client, widget_key, other_key):
    response = post(
        client, ASK, {"question": QUESTION}, key=widget_key, HTTP_ORIGIN="https://shop.example.com"
    )
    assert response.status_code == 403
    assert response.json() == {
        "detail": "The origin https://shop.example.com is not allowed for this widget key."
    }
    assert not OraculoQuery.objects.exists()


def test_key_cannot_ask_another_app(client, widget_key):
    response = post(client, ASK, {"question": QUESTION, "app": "billing-site"}, key=widget_key)
    assert response.status_code == 403
    assert response.json()["detail"] == (
        f"This widget key answers questions about app '{widget_key.app}' only, not 'billing-site'."
    )
    assert post(client, ASK, {"question": QUESTION, "app": widget_key.app}, key=widget_key).status_code == 200


# --- throttling: 429 ----------------------------------------------------------------------------------------


def rates(settings, *, key: str = "100/min", ip: str = "100/min") -> None:
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"widget_key": key, "client_ip": ip},
    }


def test_key_rate_limit_gives_429_with_retry_after(client, widget_key, other_key, settings):
    """Every request counts, so invalid (cheap, 400) questions fill the window without embedding."""
    rates(settings)
    widget_key.rate_limit = "2/min"
    widget_key.save()
    for n in range(2):
        assert (
            post(client, ASK, {"question": ""}, key=widget_key, REMOTE_ADDR=f"10.0.0.{n}").status_code == 400
        )
    response = post(client, ASK, {"question": QUESTION}, key=widget_key, REMOTE_ADDR="10.0.0.9")
    assert response.status_code == 429
    assert 0 < int(response["Retry-After"]) <= 60
    assert "throttled" in response.json()["detail"]
    assert post(client, ASK, {"question": ""}, key=other_key).status_code == 400
    assert not OraculoQuery.objects.exists()


def test_client_ip_rate_limit_gives_429_per_ip(client, widget_key, other_key, settings):
    rates(settings, ip="2/min")
    assert post(client, ASK, {"question": ""}, key=widget_key).status_code == 400
    assert post(client, ASK, {"question": ""}, key=other_key).status_code == 400
    response = post(client, ASK, {"question": QUESTION}, key=widget_key)
    assert response.status_code == 429 and int(response["Retry-After"]) > 0
    assert post(client, ASK, {"question": ""}, key=widget_key, REMOTE_ADDR="10.0.0.7").status_code == 400


def test_one_visitor_cannot_use_up_the_key_for_everyone(client, widget_key, settings):
    """The per-IP limit is checked first and a refusal stops there: a flood from one IP costs the key only
    what that IP was allowed, so other visitors still get answers."""
    rates(settings, ip="3/min")
    widget_key.rate_limit = "10/min"
    widget_key.save()
    statuses = [
        post(client, ASK, {"question": ""}, key=widget_key, REMOTE_ADDR="10.6.6.6").status_code
        for _ in range(60)
    ]
    assert statuses == [400] * 3 + [429] * 57
    for n in range(7):
        assert (
            post(client, ASK, {"question": ""}, key=widget_key, REMOTE_ADDR=f"10.1.1.{n}").status_code == 400
        )
    assert post(client, ASK, {"question": ""}, key=widget_key, REMOTE_ADDR="10.1.1.99").status_code == 429


def test_the_default_ip_rate_is_well_below_the_default_key_rate():
    from django.conf import settings as live
    from rest_framework.throttling import SimpleRateThrottle

    ip = SimpleRateThrottle.parse_rate(None, live.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]["client_ip"])
    key = SimpleRateThrottle.parse_rate(None, WidgetKey._meta.get_field("rate_limit").default)
    assert ip[0] / ip[1] * 4 <= key[0] / key[1]


def test_daily_quota_gives_429_until_midnight_utc(client, widget_key, other_key, settings):
    from datetime import datetime

    rates(settings)
    widget_key.daily_quota = 3
    widget_key.save()
    for n in range(3):
        assert (
            post(client, ASK, {"question": ""}, key=widget_key, REMOTE_ADDR=f"10.2.2.{n}").status_code == 400
        )
    response = post(client, ASK, {"question": QUESTION}, key=widget_key, REMOTE_ADDR="10.2.2.50")
    assert response.status_code == 429
    now = datetime.now(UTC)
    to_midnight = 86400 - (now.hour * 3600 + now.minute * 60 + now.second)
    assert to_midnight - 5 <= int(response["Retry-After"]) <= to_midnight + 1
    assert "daily quota" in response.json()["detail"]
    assert post(client, ASK, {"question": ""}, key=other_key).status_code == 400
    widget_key.daily_quota = 10
    widget_key.save()
    assert post(client, ASK, {"question": ""}, key=widget_key, REMOTE_ADDR="10.2.2.51").status_code == 400
    assert not OraculoQuery.objects.exists()


def test_a_forged_forwarded_for_header_does_not_escape_the_ip_limit(client, widget_key, settings):
    rates(settings, ip="2/min")
    for n in range(2):
        assert (
            post(client, ASK, {"question": ""}, key=widget_key, HTTP_X_FORWARDED_FOR=f"1.2.3.{n}").status_code
            == 400
        )
    response = post(client, ASK, {"question": ""}, key=widget_key, HTTP_X_FORWARDED_FOR="1.2.3.99")
    assert response.status_code == 429


def test_staff_is_not_throttled(client, staff, library, settings):
    rates(settings, key="1/min", ip="1/min")
    for _ in range(3):
        assert post(client, ASK, {"question": ""}).status_code == 400
    assert post(client, ASK, {"question": QUESTION, "app": library}).status_code == 200


# --- CORS ---------------------------------------------------------------------------------------------------


def preflight(client: APIClient, origin: str, url: str = ASK):
    return client.options(
        url,
        HTTP_ORIGIN=origin,
        HTTP_ACCESS_CONTROL_REQUEST_METHOD="POST",
        HTTP_ACCESS_CONTROL_REQUEST_HEADERS="content-type, x-widget-key",
    )


def test_preflight_from_an_origin_of_an_active_key_is_allowed(client, widget_key):
    response = preflight(client, ORIGIN)
    assert response.status_code == 200
    assert response["Access-Control-Allow-Origin"] == ORIGIN
    assert "x-widget-key" in response["Access-Control-Allow-Headers"]
    assert "POST" in response["Access-Control-Allow-Methods"]
    assert preflight(client, ORIGIN, feedback_url(1))["Access-Control-Allow-Origin"] == ORIGIN


def test_preflight_from_other_origins_gets_no_cors_headers(client, widget_key):
    assert "Access-Control-Allow-Origin" not in preflight(client, "https://evil.example.com")
    widget_key.is_active = False
    widget_key.save()
    assert "Access-Control-Allow-Origin" not in preflight(client, ORIGIN)


def test_actual_request_gets_cors_headers_only_for_its_keys_origins(client, widget_key, other_key):
    allowed = post(client, ASK, {"question": QUESTION}, key=widget_key, HTTP_ORIGIN=ORIGIN)
    assert allowed.status_code == 200
    assert allowed["Access-Control-Allow-Origin"] == ORIGIN
    assert "Retry-After" in allowed["Access-Control-Expose-Headers"]

    refused = post(client, ASK, {"question": QUESTION}, key=other_key, HTTP_ORIGIN=ORIGIN)
    assert refused.status_code == 403
    assert "Access-Control-Allow-Origin" not in refused


def test_other_endpoints_get_no_cors_headers(client, widget_key):
    assert "Access-Control-Allow-Origin" not in client.get("/api/v1/health", HTTP_ORIGIN=ORIGIN)
    assert "Access-Control-Allow-Origin" not in preflight(client, ORIGIN, "/admin/")


# --- feedback -----------------------------------------------------------------------------------------------


def asked(client: APIClient, key: WidgetKey | None, **body) -> tuple[int, str]:
    response = post(client, ASK, {"question": QUESTION, **body}, key=key)
    assert response.status_code == 200
    return response.json()["query_id"], response.json()["feedback_token"]


NOT_FOUND = {"detail": "No query with this id and feedback token."}


def test_feedback_with_the_token_from_the_asking_key_is_recorded_once(client, widget_key):
    query_id, token = asked(client, widget_key)
    response = post(
        client,
        feedback_url(query_id),
        {"helpful": False, "comment": "Too vague", "feedback_token": token},
        key=widget_key,
        HTTP_ORIGIN=ORIGIN,
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["query_id"] == query_id and body["helpful"] is False and body["comment"] == "Too vague"
    assert body["feedback_at"] and response["Access-Control-Allow-Origin"] == ORIGIN
    row = OraculoQuery.objects.get(pk=query_id)
    assert row.helpful is False and row.feedback_comment == "Too vague" and row.feedback_at is not None

    again = post(client, feedback_url(query_id), {"helpful": True, "feedback_token": token}, key=widget_key)
    assert again.status_code == 409
    assert again.json() == {
        "detail": "Feedback on this query was already recorded; it is accepted only once."
    }
    assert OraculoQuery.objects.get(pk=query_id).helpful is False


def test_the_public_key_alone_cannot_write_or_preempt_feedback(client, widget_key):
    """Anyone can read a widget key from a page: without the token /ask gave the visitor, feedback is refused,
    and the visitor's own feedback still goes in afterwards."""
    query_id, token = asked(client, widget_key)
    for body in (
        {"helpful": False},
        {"helpful": False, "feedback_token": ""},
        {"helpful": False, "feedback_token": "0" * 64},
        {"helpful": False, "feedback_token": asked(client, widget_key)[1]},
    ):
        response = post(client, feedback_url(query_id), body, key=widget_key)
        assert (response.status_code, response.json()) == (404, NOT_FOUND)
    assert OraculoQuery.objects.get(pk=query_id).feedback_at is None
    assert (
        post(
            client, feedback_url(query_id), {"helpful": True, "feedback_token": token}, key=widget_key
        ).status_code
        == 200
    )


def test_missing_and_not_yours_answer_the_same_404(client, widget_key, other_key, staff):
    query_id, token = asked(client, widget_key)
    client.logout()
    unknown = post(client, feedback_url(987654), {"helpful": True, "feedback_token": token}, key=widget_key)
    other = post(client, feedback_url(query_id), {"helpful": True, "feedback_token": token}, key=other_key)
    client.force_login(staff)
    user = post(client, feedback_url(query_id), {"helpful": True, "feedback_token": token})
    for response in (unknown, other, user):
        assert (response.status_code, response.json()) == (404, NOT_FOUND)
    assert OraculoQuery.objects.get(pk=query_id).feedback_at is None


def test_feedback_from_the_asking_user(client, staff, library):
    query_id, token = asked(client, None, app=library)
    response = post(client, feedback_url(query_id), {"helpful": True, "feedback_token": token})
    assert response.status_code == 200 and response.json()["comment"] == ""
    assert OraculoQuery.objects.get(pk=query_id).helpful is True


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "helpful"),
        ({"helpful": "perhaps"}, "helpful"),
        ({"helpful": True, "comment": 3}, "comment"),
        ({"helpful": True, "stars": 5}, "stars"),
        ({"helpful": True, "feedback_token": 5}, "feedback_token"),
    ],
)
def test_invalid_feedback_is_400(client, widget_key, body, field):
    query_id, _ = asked(client, widget_key)
    response = post(client, feedback_url(query_id), body, key=widget_key)
    assert response.status_code == 400 and field in response.json()


def test_feedback_needs_credentials(client, widget_key):
    query_id, token = asked(client, widget_key)
    assert post(client, feedback_url(query_id), {"helpful": True, "feedback_token": token}).status_code == 401


# --- OpenAPI ------------------------------------------------------------------------------------------------


def test_oraculo_schema_is_valid_and_generates_without_warnings():
    reset_generator_stats()
    patterns = [path("api/v1/", include("oraculo.api.urls"))]
    schema = SchemaGenerator(patterns=patterns).get_schema(request=None, public=True)
    assert dict(GENERATOR_STATS._warn_cache) == {} and dict(GENERATOR_STATS._error_cache) == {}
    validate_schema(schema)

    ask_op = schema["paths"]["/api/v1/ask"]["post"]
    assert set(ask_op["responses"]) == {"200", "400", "401", "403", "404", "429", "503"}
    assert {"widgetKey": []} in ask_op["security"]
    assert schema["components"]["securitySchemes"]["widgetKey"] == {
        "type": "apiKey",
        "in": "header",
        "name": "X-Widget-Key",
        "description": "A widget key (wk_...) created in the admin; scoped to one app and its origins.",
    }
    feedback_op = schema["paths"]["/api/v1/queries/{query_id}/feedback"]["post"]
    assert {"404", "409"} <= set(feedback_op["responses"])
    assert feedback_op["parameters"][0]["schema"]["type"] == "integer"
    assert set(schema["components"]["schemas"]["AskResponse"]["required"]) >= {
        "query_id",
        "answer",
        "sources",
    }


def test_project_schema_and_docs_are_served(client, staff):
    response = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert response.status_code == 200
    schema = response.json()
    validate_schema(schema)
    assert {"/api/v1/ask", "/api/v1/queries/{query_id}/feedback", "/api/v1/health"} <= set(schema["paths"])
    assert client.get("/api/docs/").status_code == 200


# --- the response: built directly, the same as the serializer that types the schema -------------------------


@pytest.mark.parametrize(
    ("question", "options"),
    [
        (QUESTION, {}),
        (QUESTION, {"options": RetrievalOptions(top_k=2, trim=True)}),
        ("zzzz qqqq", {"source_type": "no-such-type"}),
    ],
    ids=["extractive", "trimmed", "nothing found"],
)
def test_the_response_is_what_the_serializer_makes_of_the_answer(library, question, options):
    result = ask(question, app=library, **options)
    assert ask_response_data(result) == AskResponseSerializer(result).data
    assert json.dumps(ask_response_data(result)) == json.dumps(AskResponseSerializer(result).data)


def test_the_response_with_an_llm_answer_is_what_the_serializer_makes_of_it(library, fake_llm):
    result = ask(QUESTION, app=library)
    assert result.answer_mode == "llm" and result.latency_ms["llm"] is not None
    assert json.dumps(ask_response_data(result)) == json.dumps(AskResponseSerializer(result).data)


# --- query counts: an N+1 fails here ---------------------------------------------------------------------


def test_asking_takes_a_fixed_number_of_queries(client, widget_key, django_assert_num_queries):
    post(client, ASK, {"question": "warm up the model and the caches"}, key=widget_key, HTTP_ORIGIN=ORIGIN)
    with django_assert_num_queries(ASK_QUERIES):
        response = post(client, ASK, {"question": QUESTION}, key=widget_key, HTTP_ORIGIN=ORIGIN)
    assert response.status_code == 200 and len(response.json()["sources"]) >= 3
    with django_assert_num_queries(ASK_REPEATED_QUERIES):
        again = post(client, ASK, {"question": QUESTION}, key=widget_key, HTTP_ORIGIN=ORIGIN)
    assert again.json()["sources"] == response.json()["sources"]
    assert again.json()["query_id"] != response.json()["query_id"], "logged again"


def test_feedback_takes_a_fixed_number_of_queries(client, widget_key, django_assert_num_queries):
    asked = post(client, ASK, {"question": QUESTION}, key=widget_key, HTTP_ORIGIN=ORIGIN).json()
    body = {"helpful": True, "feedback_token": asked["feedback_token"], "comment": "thanks"}
    with django_assert_num_queries(FEEDBACK_QUERIES):
        response = post(client, feedback_url(asked["query_id"]), body, key=widget_key, HTTP_ORIGIN=ORIGIN)
    assert response.status_code == 200
