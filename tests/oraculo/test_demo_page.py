"""The demo page: the widget embedded with a demo key that allows the page's own origin; the widget's
static files exist and stay small."""
from __future__ import annotations

import gzip
import re

import pytest
from django.contrib.staticfiles import finders

from oraculo.models import WidgetKey

pytestmark = pytest.mark.django_db

# Size budget for the widget, unminified, in bytes: raw and gzipped (-9).
JS_BUDGET, JS_GZIP_BUDGET = 13 * 1024, 5 * 1024
CSS_BUDGET, CSS_GZIP_BUDGET = 8 * 1024, 2560

SCRIPT_TAG = re.compile(r'<script src="(?P<src>[^"]*/oraculo/widget\.js)" data-key="(?P<key>[^"]+)" '
                        r'data-app="(?P<app>[^"]*)" defer></script>')


def test_demo_page_embeds_widget_with_a_key_for_its_origin(client, settings):
    settings.DEMO_APP = "guide"
    response = client.get("/")
    assert response.status_code == 200
    html = response.content.decode()
    assert '<html lang="en">' in html
    tag = SCRIPT_TAG.search(html)
    assert tag, "no widget script tag"
    assert tag["src"] == "/static/oraculo/widget.js"
    key = WidgetKey.objects.get(key=tag["key"])
    assert key.name == "Demo page" and key.app == tag["app"] == "guide" and key.is_active
    assert key.allows_origin("http://testserver")
    assert 'href="?lang=es"' in html


def test_spanish_variant_and_second_url_reuse_the_same_key(client):
    first = SCRIPT_TAG.search(client.get("/").content.decode())["key"]
    response = client.get("/widget/demo/?lang=es")
    assert response.status_code == 200
    html = response.content.decode()
    assert '<html lang="es">' in html and "Ayuda" in html
    assert SCRIPT_TAG.search(html)["key"] == first
    assert WidgetKey.objects.filter(name="Demo page").count() == 1


def test_a_new_origin_is_added_to_the_existing_key(client, settings):
    settings.ALLOWED_HOSTS = ["testserver", "help.example.com"]
    client.get("/")
    client.get("/", HTTP_HOST="help.example.com", secure=True)
    client.get("/", HTTP_HOST="help.example.com", secure=True)
    key = WidgetKey.objects.get(name="Demo page")
    assert key.allowed_origins == ["http://testserver", "https://help.example.com"]


def test_demo_app_follows_settings(client, settings):
    settings.DEMO_APP = "handbook"
    tag = SCRIPT_TAG.search(client.get("/").content.decode())
    assert tag["app"] == "handbook"
    assert WidgetKey.objects.get(key=tag["key"]).app == "handbook"


@pytest.mark.parametrize(("name", "budget", "gzip_budget"),
                         [("widget.js", JS_BUDGET, JS_GZIP_BUDGET), ("widget.css", CSS_BUDGET, CSS_GZIP_BUDGET)])
def test_widget_static_files_exist_within_size_budget(name, budget, gzip_budget):
    path = finders.find(f"oraculo/{name}")
    assert path, f"oraculo/{name} not found by the static files finders"
    raw = open(path, "rb").read()
    assert len(raw) < budget, f"{name} is {len(raw)} bytes, budget {budget}"
    zipped = len(gzip.compress(raw, 9))
    assert zipped < gzip_budget, f"{name} is {zipped} bytes gzipped, budget {gzip_budget}"


def test_widget_never_renders_server_text_as_html():
    source = open(finders.find("oraculo/widget.js"), encoding="utf-8").read()
    assert not re.search(r"\.(innerHTML|outerHTML)\s*=|insertAdjacentHTML|document\.write", source)


@pytest.mark.parametrize("name", ["widget.js", "widget.css"])
def test_widget_files_are_ascii_so_any_host_page_charset_reads_them(name):
    # Non-ASCII strings are written as \u escapes: a host page in another charset cannot garble them.
    open(finders.find(f"oraculo/{name}"), "rb").read().decode("ascii")


def test_demo_page_is_off_when_demo_page_is_false_and_creates_no_key(client, settings):
    settings.DEMO_PAGE = False
    assert client.get("/").status_code == 404
    assert not WidgetKey.objects.exists()
