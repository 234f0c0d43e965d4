"""Oráculo's pages: the widget demo."""
from __future__ import annotations

from django.conf import settings
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from oraculo.models import WidgetKey

DEMO_KEY_NAME = "Demo page"


def demo_widget_key(*, origin: str) -> WidgetKey:
    """The demo page's widget key for the demo app, created on first use, allowing `origin`.

    TODO: a write, so it belongs in oraculo/actions.py; it lives here until that module exists.
    """
    app = getattr(settings, "DEMO_APP", "guide")
    key, _ = WidgetKey.objects.get_or_create(name=DEMO_KEY_NAME, app=app, defaults={"allowed_origins": [origin]})
    if key.allows_origin(origin):
        return key
    with transaction.atomic():
        key = WidgetKey.objects.select_for_update().get(pk=key.pk)
        if not key.allows_origin(origin):
            key.allowed_origins = [*key.allowed_origins, origin]
            key.save(update_fields=["allowed_origins"])
    return key


def demo(request: HttpRequest) -> HttpResponse:
    """A page that explains Oráculo in two lines and embeds the widget with the demo key (`?lang=es`: Spanish)."""
    origin = request.build_absolute_uri("/").rstrip("/")
    lang = "es" if request.GET.get("lang", "").lower().startswith("es") else "en"
    return render(request, "oraculo/demo.html", {"widget_key": demo_widget_key(origin=origin), "lang": lang})
