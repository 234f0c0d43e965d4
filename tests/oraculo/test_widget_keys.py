"""Widget keys: `null` is never an origin, an origin is scheme://host[:port] and nothing else, and a key
without an app is refused (it would answer from every app)."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from rest_framework.test import APIClient

from oraculo.models import OraculoQuery, WidgetKey

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "origin",
    [
        "null",
        "NULL",
        "",
        "https://help.example.com/page",
        "help.example.com",
        "ftp://help.example.com",
        "https://user:pw@help.example.com",
        "https://help.example.com?x=1",
        "javascript:alert(1)",
        "https://*.example.com",
    ],
)
def test_what_is_not_an_origin_is_refused_by_the_admins_validation(origin):
    key = WidgetKey(name="site", app="guide", allowed_origins=[origin])
    with pytest.raises(ValidationError) as caught:
        key.full_clean()
    assert "allowed_origins" in caught.value.message_dict


@pytest.mark.parametrize(
    "origin",
    ["https://help.example.com", "http://127.0.0.1:8000", "http://localhost:8000/", "https://[::1]:8443"],
)
def test_real_origins_are_accepted(origin):
    WidgetKey(name="site", app="guide", allowed_origins=[origin]).full_clean()


def test_null_is_never_allowed_even_if_a_key_lists_it(library):
    """A key stored before this rule (or edited in the database) may still list "null": sandboxed iframes and
    file: pages all send it, so it must not open the key to them."""
    key = WidgetKey.objects.create(
        name="legacy", app=library, allowed_origins=["null", "https://a.example.com"]
    )
    assert not key.allows_origin("null") and key.allows_origin("https://a.example.com")
    response = APIClient().post(
        "/api/v1/ask", {"question": "How?"}, format="json", HTTP_X_WIDGET_KEY=key.key, HTTP_ORIGIN="null"
    )
    assert response.status_code == 403 and "Access-Control-Allow-Origin" not in response
    preflight = APIClient().options(
        "/api/v1/ask", HTTP_ORIGIN="null", HTTP_ACCESS_CONTROL_REQUEST_METHOD="POST"
    )
    assert "Access-Control-Allow-Origin" not in preflight
    assert not OraculoQuery.objects.exists()


@pytest.mark.parametrize("app", ["", "   "])
def test_an_empty_app_is_refused(app):
    with pytest.raises(ValidationError) as caught:
        WidgetKey(name="site", app=app).full_clean()
    assert "app" in caught.value.message_dict
    if not app:
        with pytest.raises(IntegrityError), transaction.atomic():
            WidgetKey.objects.create(name="site", app="")


def test_the_admin_form_refuses_null_and_an_empty_app(admin_client):
    response = admin_client.post(
        "/admin/oraculo/widgetkey/add/",
        {
            "name": "bad",
            "app": " ",
            "allowed_origins": '["null"]',
            "rate_limit": "60/min",
            "daily_quota": 100,
            "is_active": "on",
        },
    )
    assert response.status_code == 200
    html = response.content.decode()
    assert "This field is required." in html and "is not an origin" in html
    assert not WidgetKey.objects.exists()
