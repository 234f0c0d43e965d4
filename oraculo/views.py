"""Oráculo's pages: the widget demo."""

from __future__ import annotations

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

from oraculo.selectors import demo_widget_key_get


def demo(request: HttpRequest) -> HttpResponse:
    """A page that explains Oráculo in two lines and embeds the widget with the demo key (`?lang=es`: Spanish).
    It only reads: the key is made by `manage.py demo_widget_key`, with origins the operator names."""
    if not settings.DEMO_PAGE:
        raise Http404("The demo page is off (DEMO_PAGE).")
    lang = "es" if request.GET.get("lang", "").lower().startswith("es") else "en"
    return render(
        request,
        "oraculo/demo.html",
        {"widget_key": demo_widget_key_get(), "app": settings.DEMO_APP, "lang": lang},
    )
