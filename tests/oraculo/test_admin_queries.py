"""Admin: the question log is read-only with its filters; widget keys are editable."""

from __future__ import annotations

from datetime import timedelta
from urllib.parse import urlencode

import pytest
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.utils import timezone

from oraculo.actions import query_feedback_record, query_feedback_token, query_log_create
from oraculo.admin import OraculoQueryAdmin
from oraculo.evaluation.admin.evaluate import EvalAdminMixin
from oraculo.models import OraculoQuery, WidgetKey

pytestmark = pytest.mark.django_db

CHANGELIST = "/admin/oraculo/oraculoquery/"


def logged(question: str, **fields) -> OraculoQuery:
    base = dict(
        app="guide",
        source_type="en",
        answer="an answer",
        answer_mode="extractive",
        chunks=[],
        trimmed=False,
        trim_params=None,
        tokens_before=120,
        tokens_in_context=80,
        latency_ms={"embedding": 5.0, "search": 2.0, "trim": None, "llm": None, "total": 7.4},
    )
    return query_log_create(question=question, **(base | fields))


@pytest.fixture
def key() -> WidgetKey:
    return WidgetKey.objects.create(
        name="help site", app="guide", allowed_origins=["https://help.example.com"]
    )


@pytest.fixture
def queries(key):
    user = get_user_model().objects.create_user("ana", is_staff=True)
    helpful = logged(
        "How do I reset my password?",
        answer_mode="llm",
        llm_model="fake-chat-1",
        widget_key=key,
        trimmed=True,
        trim_params={"threshold": 0.8},
    )
    query_feedback_record(
        query_id=helpful.pk, token=query_feedback_token(query_id=helpful.pk), helpful=True, widget_key=key
    )
    unhelpful = logged(
        "¿Cómo borro mi cuenta?",
        app="shop",
        source_type="es",
        user=user,
        llm_error="the LLM answered HTTP 500",
    )
    query_feedback_record(
        query_id=unhelpful.pk,
        token=query_feedback_token(query_id=unhelpful.pk),
        helpful=False,
        user=user,
        comment="wrong",
    )
    silent = logged("Where are my invoices?", widget_key=key)
    old = logged("An old question", widget_key=key)
    OraculoQuery.objects.filter(pk=old.pk).update(created_at=timezone.now() - timedelta(days=400))
    return {"helpful": helpful, "unhelpful": unhelpful, "silent": silent, "old": old}


def shown(admin_client, query: str = "") -> set[str]:
    response = admin_client.get(CHANGELIST + query)
    assert response.status_code == 200, query
    return {q.question for q in response.context["cl"].result_list}


def test_eval_mixin_comes_first():
    assert OraculoQueryAdmin.__mro__[1] is EvalAdminMixin
    assert isinstance(admin.site._registry[OraculoQuery], OraculoQueryAdmin)


def test_changelist_renders_the_columns(admin_client, queries):
    response = admin_client.get(CHANGELIST)
    assert response.status_code == 200
    html = response.content.decode()
    for text in (
        "How do I reset my password?",
        "key: help site",
        "user: ana",
        "fake-chat-1",
        "Helpful",
        "No feedback",
        "Not helpful",
        "Past 7 days",
    ):
        assert text in html, text
    assert response.context["cl"].result_count == 4
    assert response.context["cl"].date_hierarchy == "created_at"


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("?app=shop", {"unhelpful"}),
        ("?answer_mode__exact=llm", {"helpful"}),
        ("?trimmed__exact=1", {"helpful"}),
        ("?feedback=yes", {"helpful"}),
        ("?feedback=no", {"unhelpful"}),
        ("?feedback=none", {"silent", "old"}),
        ("?q=password", {"helpful"}),
        ("?q=cuenta", {"unhelpful"}),
        ("?app=guide&feedback=none", {"silent", "old"}),
    ],
)
def test_filters_and_search(admin_client, queries, query, expected):
    assert shown(admin_client, query) == {queries[name].question for name in expected}


def test_date_filter_and_hierarchy(admin_client, queries):
    now = timezone.now()
    window = {
        "created_at__gte": (now - timedelta(days=7)).isoformat(),
        "created_at__lt": (now + timedelta(days=1)).isoformat(),
    }
    recent = shown(admin_client, "?" + urlencode(window))
    assert recent == {q.question for name, q in queries.items() if name != "old"}
    old_year = (now - timedelta(days=400)).year
    assert queries["old"].question in shown(admin_client, f"?created_at__year={old_year}")


def test_queries_are_read_only(admin_client, queries):
    query = queries["unhelpful"]
    change_url = f"{CHANGELIST}{query.pk}/change/"

    detail = admin_client.get(change_url)
    assert detail.status_code == 200
    html = detail.content.decode()
    assert "the LLM answered HTTP 500" in html and "wrong" in html
    assert 'name="_save"' not in html

    assert admin_client.post(change_url, {"question": "edited"}).status_code == 403
    assert admin_client.get(f"{CHANGELIST}add/").status_code == 403
    assert admin_client.post(f"{CHANGELIST}{query.pk}/delete/", {"post": "yes"}).status_code == 403
    changelist = admin_client.get(CHANGELIST)
    form = changelist.context["action_form"]
    assert "delete_selected" not in [value for value, _ in (form.fields["action"].choices if form else [])]
    assert OraculoQuery.objects.get(pk=query.pk).question == "¿Cómo borro mi cuenta?"
    assert OraculoQuery.objects.count() == 4


def test_widget_keys_are_listed_with_their_key_and_editable(admin_client, key):
    changelist = admin_client.get("/admin/oraculo/widgetkey/?is_active__exact=1&app=guide")
    assert changelist.status_code == 200
    assert (
        key.key in changelist.content.decode() and "https://help.example.com" in changelist.content.decode()
    )

    change_url = f"/admin/oraculo/widgetkey/{key.pk}/change/"
    assert key.key in admin_client.get(change_url).content.decode()
    response = admin_client.post(
        change_url,
        {
            "name": "help site",
            "app": "guide2",
            "allowed_origins": '["https://a.example.com", "https://b.example.com"]',
            "rate_limit": "10/min",
            "daily_quota": 500,
            "is_active": "",
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    key.refresh_from_db()
    assert (
        key.app == "guide2"
        and key.rate_limit == "10/min"
        and key.is_active is False
        and key.daily_quota == 500
    )
    assert key.allowed_origins == ["https://a.example.com", "https://b.example.com"]


def test_widget_key_admin_validates(admin_client):
    response = admin_client.post(
        "/admin/oraculo/widgetkey/add/",
        {"name": "bad", "app": "guide", "allowed_origins": "[]", "rate_limit": "lots", "is_active": "on"},
    )
    assert response.status_code == 200
    assert "Write it as N/sec, N/min, N/hour or N/day." in response.content.decode()
    created = admin_client.post(
        "/admin/oraculo/widgetkey/add/",
        {
            "name": "good",
            "app": "guide",
            "allowed_origins": "[]",
            "rate_limit": "5/sec",
            "daily_quota": 1000,
            "is_active": "on",
        },
    )
    assert created.status_code == 302
    assert WidgetKey.objects.get(name="good").key.startswith("wk_")


# --- query counts: an N+1 fails here ---------------------------------------------------------------------

CHANGELIST_QUERIES = 8
WIDGET_KEYS_QUERIES = 6


def test_the_changelist_takes_as_many_queries_for_many_rows_as_for_few(
    admin_client, queries, key, django_assert_num_queries
):
    with django_assert_num_queries(CHANGELIST_QUERIES):
        assert admin_client.get(CHANGELIST).status_code == 200
    for i in range(6):
        other = WidgetKey.objects.create(name=f"key {i}", app="guide", allowed_origins=[])
        user = get_user_model().objects.create_user(f"asker{i}")
        logged(f"question {i} by key", widget_key=other)
        logged(f"question {i} by user", user=user)
    with django_assert_num_queries(CHANGELIST_QUERIES):
        assert admin_client.get(CHANGELIST).status_code == 200


def test_the_widget_key_changelist_takes_a_fixed_number_of_queries(
    admin_client, key, django_assert_num_queries
):
    with django_assert_num_queries(WIDGET_KEYS_QUERIES):
        assert admin_client.get("/admin/oraculo/widgetkey/").status_code == 200
    for i in range(6):
        WidgetKey.objects.create(name=f"key {i}", app="guide", allowed_origins=["https://a.example.com"])
    with django_assert_num_queries(WIDGET_KEYS_QUERIES):
        assert admin_client.get("/admin/oraculo/widgetkey/").status_code == 200
