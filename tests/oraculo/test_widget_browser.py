"""The help widget in a real headless Chromium (Debian's /usr/bin/chromium driven by Playwright).

The end-to-end test runs the demo page on pytest-django's live server against the real API and checks the
question and its feedback in the database. The other tests serve a host page and the widget from two fake
origins through Playwright routes, so the API's answers (errors, slow answers, hostile text) are scripted.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from django.core.management import call_command

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
STATIC = Path(__file__).resolve().parents[2] / "oraculo" / "static" / "oraculo"
FIXTURE_DOCS = Path(__file__).resolve().parents[1] / "fixtures" / "docs"
SCREENSHOTS = Path(__file__).resolve().parents[2] / "var"  # WIDGET_SCREENSHOTS=1: save screenshots here

SITE = "http://site.test"  # a customer's page
SERVER = "http://oraculo.test"  # where the widget (and by default the API) is served from
CORS = {
    "Access-Control-Allow-Origin": SITE,
    "Access-Control-Allow-Headers": "content-type, x-widget-key",
    "Access-Control-Allow-Methods": "POST, OPTIONS",
    "Access-Control-Expose-Headers": "Retry-After",
}

ANSWER = {
    "query_id": 41,
    "feedback_token": "f" * 64,
    "answer_mode": "llm",
    "answer": 'Open the sign-in page and click "Forgot password" [1]. The link expires after 30 minutes [2] [9].',
    "sources": [
        {
            "id": 7,
            "title": "Managing your account",
            "heading_path": ["# Managing your account", "## Resetting your password"],
            "url": "https://docs.example.com/en/account",
            "score": 0.91,
            "content": "…",
        },
        {"id": 8, "title": "Security", "heading_path": ["Security"], "url": "", "score": 0.7, "content": "…"},
    ],
    "trimmed": False,
    "tokens_in_context": 120,
    "tokens_before": 120,
    "latency_ms": {"total": 12},
}


@pytest.fixture(scope="module")
def browser():
    if not CHROMIUM.exists():
        pytest.skip(f"headless browser tests need Chromium: {CHROMIUM} not found: apt-get install chromium")
    from playwright.sync_api import sync_playwright

    # Playwright's sync API keeps an asyncio loop on this thread, which makes Django refuse the (synchronous,
    # same-thread, safe) ORM calls of the test and its database fixtures.
    with pytest.MonkeyPatch.context() as patch, sync_playwright() as playwright:
        patch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1100, "height": 760})
    page = context.new_page()
    page.set_default_timeout(15_000)
    yield page
    context.close()


def host_page(lang: str = "en", attrs: str = "") -> str:
    return (
        f'<!doctype html><html lang="{lang}"><head><meta charset="utf-8"><title>Host</title><meta name="viewport" content="width=device-width, initial-scale=1">'
        "<style>button{background:red;font:30px serif;margin:40px}</style></head>"
        '<body><h1>Host page</h1><button id="host">Host button</button>'
        f'<script src="{SERVER}/static/oraculo/widget.js" data-key="wk_test" data-app="guide" {attrs} defer>'
        "</script></body></html>"
    )


class FakeSite:
    """Routes a host page on SITE and the widget's files on SERVER; the API is answered by `api`."""

    def __init__(self, page, *, lang="en", attrs="", api=None):
        self.requests: list[dict] = []
        self.api = api or (lambda route, request: self.reply(route, 200, ANSWER))
        page.route(
            f"{SITE}/**",
            lambda route: route.fulfill(status=200, content_type="text/html", body=host_page(lang, attrs)),
        )
        for name, kind in (("widget.js", "text/javascript"), ("widget.css", "text/css")):
            page.route(f"{SERVER}/static/oraculo/{name}", self.static(STATIC / name, kind))
        page.route(re.compile(r"^http://[^/]+/api/v1/.*"), self.handle)

    @staticmethod
    def static(path: Path, kind: str):
        return lambda route: route.fulfill(status=200, content_type=kind, body=path.read_text())

    def handle(self, route, request):
        if request.method == "OPTIONS":
            return route.fulfill(status=204, headers=CORS)
        self.requests.append(
            {"url": request.url, "headers": request.headers, "body": json.loads(request.post_data or "null")}
        )
        return self.api(route, request)

    @staticmethod
    def reply(route, status, body, headers=None):
        route.fulfill(
            status=status,
            content_type="application/json",
            body=json.dumps(body),
            headers={**CORS, **(headers or {})},
        )


def screenshot(page, name: str) -> None:
    if os.environ.get("WIDGET_SCREENSHOTS"):
        SCREENSHOTS.mkdir(exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / name))


def open_widget(page, url=f"{SITE}/"):
    page.goto(url)
    toggle = page.locator("#orw-root .orw-toggle")
    toggle.click()
    return toggle


def ask(page, question="How do I reset my password?"):
    box = page.locator("#orw-q")
    box.fill(question)
    box.press("Enter")


# End to end: the demo page, the real API, the database.


@pytest.mark.django_db(transaction=True)
def test_demo_page_question_answer_and_feedback_end_to_end(page, live_server, settings):
    from biblioteca.ingest import directory_ingest
    from oraculo.models import OraculoQuery, WidgetKey

    settings.DEMO_APP = "guide"
    call_command("demo_widget_key", "--origin", live_server.url)
    report = directory_ingest(
        paths=[FIXTURE_DOCS / "en"], app="guide", source_type="en", url_prefix="https://docs.example.com/en"
    )
    assert not report.failed, report.failed

    demo_url = f"{live_server.url}/widget/demo/"
    page.goto(demo_url)
    toggle = page.get_by_role("button", name="Help", exact=True)
    assert toggle.get_attribute("aria-expanded") == "false"
    toggle.click()
    assert toggle.get_attribute("aria-expanded") == "true"
    dialog = page.get_by_role("dialog", name="Ask the docs")
    assert dialog.is_visible()
    assert page.evaluate("document.activeElement.id") == "orw-q"

    ask(page, "How do I reset my password?")
    region = page.locator("#orw-answer")
    region.locator(".orw-text").wait_for()
    page.locator("#orw-answer .orw-sources a").first.wait_for()
    assert region.get_attribute("aria-live") == "polite"
    assert region.locator(".orw-text").inner_text().strip()
    first_source = page.locator("#orw-answer .orw-sources a").first
    assert first_source.get_attribute("href").startswith("https://docs.example.com/en/")
    assert "password" in region.inner_text().lower()
    screenshot(page, "widget.png")

    page.get_by_role("button", name="Yes, this was helpful").click()
    page.get_by_text("Thanks for your feedback!").wait_for()
    page.locator("#orw-panel").evaluate("panel => panel.scrollTop = panel.scrollHeight")
    screenshot(page, "widget-feedback.png")
    assert page.get_by_role("button", name="Yes, this was helpful").is_disabled()
    assert page.get_by_role("button", name="No, this was not helpful").is_disabled()

    key = WidgetKey.objects.get(name="Demo page", app="guide")
    assert key.allows_origin(live_server.url)
    query = OraculoQuery.objects.get()
    assert query.question == "How do I reset my password?"
    assert query.answer_mode == "extractive"
    assert query.helpful is True
    assert query.page_url == demo_url
    assert query.widget_key_id == key.pk
    assert query.app == "guide"


@pytest.mark.django_db(transaction=True)
def test_demo_page_keyboard_and_spanish(page, live_server):
    call_command("demo_widget_key", "--origin", live_server.url)
    page.goto(f"{live_server.url}/?lang=es")
    toggle = page.get_by_role("button", name="Ayuda", exact=True)
    toggle.focus()
    page.keyboard.press("Enter")
    assert page.get_by_role("dialog", name="Pregunta a la documentación").is_visible()
    assert page.evaluate("document.activeElement.id") == "orw-q"
    assert page.locator("#orw-q").get_attribute("placeholder") == "Escribe tu pregunta y pulsa Intro"
    screenshot(page, "widget-es.png")
    page.keyboard.press("Escape")
    assert page.locator("#orw-panel").is_hidden()
    assert toggle.get_attribute("aria-expanded") == "false"
    assert page.evaluate("document.activeElement.className") == "orw-toggle"


# Scripted API: the contract's answers and errors, from a host page on another origin.


def test_calls_api_on_script_origin_and_renders_sources_safely(page):
    site = FakeSite(
        page,
        api=lambda route, request: FakeSite.reply(
            route,
            200,
            {
                **ANSWER,
                "answer": ANSWER["answer"] + ' <img src=x onerror="window.pwned=1">',
                "sources": [
                    *ANSWER["sources"],
                    {
                        "id": 9,
                        "title": "<b>Evil</b>",
                        "heading_path": [],
                        "url": "javascript:window.pwned=1",
                        "score": 0.1,
                        "content": "",
                    },
                ],
            },
        ),
    )
    toggle = open_widget(page)
    toggle_attrs = page.evaluate("""() => { const b = document.querySelector('#orw-root .orw-toggle');
        return [b.getAttribute('aria-controls'), getComputedStyle(b).backgroundColor]; }""")
    assert toggle_attrs[0] == "orw-panel"
    assert toggle_attrs[1] != "rgb(255, 0, 0)", "the host page's button style leaked into the widget"
    assert (
        page.evaluate("getComputedStyle(document.getElementById('host')).backgroundColor") == "rgb(255, 0, 0)"
    )
    ask(page)
    page.locator("#orw-answer .orw-sources").wait_for()

    sent = site.requests[0]
    assert sent["url"] == f"{SERVER}/api/v1/ask"
    assert sent["headers"]["x-widget-key"] == "wk_test"
    assert sent["body"] == {"question": "How do I reset my password?", "app": "guide", "page_url": f"{SITE}/"}

    text = page.locator("#orw-answer .orw-text")
    assert 'onerror="window.pwned=1"' in text.inner_text()
    assert page.locator("#orw-answer img").count() == 0 and page.evaluate("window.pwned") is None
    refs = text.locator("a.orw-ref")
    assert refs.count() == 2 and refs.nth(0).get_attribute("aria-label") == "Source 1"
    assert "[9]" in text.inner_text()  # no such source: stays text
    refs.nth(1).click()
    assert page.evaluate("document.activeElement.id") == "orw-src-41-2"

    items = page.locator("#orw-answer .orw-sources li")
    assert items.count() == 3
    assert items.nth(0).locator("a").get_attribute("href") == "https://docs.example.com/en/account"
    assert items.nth(0).locator("a").get_attribute("rel") == "noopener noreferrer"
    assert items.nth(0).locator(".orw-source-path").inner_text() == "Resetting your password"
    assert items.nth(1).locator("a").count() == 0 and "Security" in items.nth(1).inner_text()
    assert items.nth(2).locator("a").count() == 0 and items.nth(2).locator("b").count() == 0
    assert page.get_by_role("heading", name="Sources").is_visible()
    assert toggle.get_attribute("aria-expanded") == "true"


def test_data_api_overrides_the_api_base(page):
    site = FakeSite(page, attrs='data-api="http://api.test/" data-source-type="en"')
    open_widget(page)
    ask(page, "Where is billing?")
    page.locator("#orw-answer .orw-text").wait_for()
    assert site.requests[0]["url"] == "http://api.test/api/v1/ask"
    assert site.requests[0]["body"]["source_type"] == "en"


@pytest.mark.parametrize(
    ("status", "body", "headers", "message"),
    [
        (
            429,
            {"detail": "Request was throttled. Expected available in 17 seconds."},
            {"Retry-After": "17"},
            "Too many questions, try again in 17 s.",
        ),
        (
            429,
            {"detail": "Request was throttled. Expected available in 5 seconds."},
            {},
            "Too many questions, try again in 5 s.",
        ),
        # the server's own words are for whoever installs the widget: the visitor reads the page's language
        (
            400,
            {"question": ["This field may not be blank."]},
            {},
            "This question could not be sent. Shorten or rephrase it and try again.",
        ),
        (
            403,
            {"detail": "This widget key is not allowed from this origin."},
            {},
            "Help is not available on this page right now.",
        ),
        (
            401,
            {"detail": "The X-Widget-Key header holds an unknown or inactive widget key."},
            {},
            "Help is not available on this page right now.",
        ),
        (500, {"detail": "Internal details"}, {}, "Something went wrong (500). Try again later."),
    ],
)
def test_error_answers_are_shown(page, status, body, headers, message):
    FakeSite(page, api=lambda route, request: FakeSite.reply(route, status, body, headers))
    open_widget(page)
    ask(page)
    error = page.locator("#orw-answer .orw-error")
    error.wait_for()
    assert error.inner_text() == message
    assert page.locator("#orw-root .orw-submit").get_attribute("aria-disabled") is None


def test_network_error_and_loading_state(page):
    pending = []
    FakeSite(page, api=lambda route, request: pending.append(route))
    open_widget(page)
    ask(page)
    loading = page.locator("#orw-answer .orw-loading")
    loading.wait_for()
    assert loading.inner_text() == "Looking for an answer\u2026"
    assert page.locator("#orw-root .orw-submit").get_attribute("aria-disabled") == "true"
    page.locator("#orw-root .orw-submit").click(force=True)  # no second request while one is running
    while not pending:
        page.wait_for_timeout(20)
    pending[0].abort("connectionrefused")
    page.get_by_text("Could not reach the help service.", exact=False).wait_for()
    assert page.locator("#orw-root .orw-submit").get_attribute("aria-disabled") is None
    assert len(pending) == 1


def test_negative_feedback_then_thanks_and_spanish_strings(page):
    def api(route, request):
        if request.url.endswith("/ask"):
            return FakeSite.reply(route, 200, {**ANSWER, "answer_mode": "extractive"})
        return FakeSite.reply(route, 201, {"query_id": 41, "helpful": False})

    site = FakeSite(page, lang="es-ES", api=api)
    page.goto(f"{SITE}/")
    page.get_by_role("button", name="Ayuda", exact=True).click()
    page.locator("#orw-q").fill("¿Cómo cambio la contraseña?")
    page.get_by_role("button", name="Preguntar").click()
    page.get_by_text("Fragmentos más relevantes de la documentación:").wait_for()
    assert page.get_by_role("heading", name="Fuentes").is_visible()
    page.get_by_role("button", name="No, no me ha sido útil").focus()
    page.keyboard.press("Enter")
    page.get_by_text("¡Gracias por tu opinión!").wait_for()
    assert site.requests[-1]["url"] == f"{SERVER}/api/v1/queries/41/feedback"
    assert site.requests[-1]["body"] == {"helpful": False, "feedback_token": "f" * 64}
    assert page.get_by_role("button", name="Sí, me ha sido útil").get_attribute("aria-disabled") == "true"
    # the keyboard user stays where they were, and a second press sends nothing
    assert page.evaluate("document.activeElement.getAttribute('aria-label')") == "No, no me ha sido útil"
    page.keyboard.press("Enter")
    page.wait_for_timeout(200)
    assert len([r for r in site.requests if r["url"].endswith("/feedback")]) == 1


def test_mobile_width_fits_the_screen(browser):
    context = browser.new_context(viewport={"width": 360, "height": 640}, is_mobile=True, has_touch=True)
    page = context.new_page()
    try:
        FakeSite(page)
        open_widget(page)
        ask(page)
        page.locator("#orw-answer .orw-sources").wait_for()
        box = page.locator("#orw-panel").bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= 360
        assert box["y"] >= 0
        screenshot(page, "widget-mobile.png")
    finally:
        context.close()


# Rendered answers: the server's markdown rendering (the real one) shown by the widget.

RICH_EN = (
    "To run the docs locally [1]:\n\n1. Install the tools with `make venv`.\n2. Start the server:\n\n"
    "```sh\nmake run\n```\n\n- Soft line breaks\n  stay in one sentence.\n"
    "- See [the guide](https://docs.example.com/en/guide) "
    "for more [2]."
)
RICH_ES = (
    "Para ver la documentaci\u00f3n en local [1]:\n\n1. Instala las herramientas con `make venv`.\n"
    "2. Arranca el servidor:\n\n```sh\nmake run\n```\n\n"
    "- Los saltos de l\u00ednea del texto\n  no cortan la frase.\n"
    "- Consulta [la gu\u00eda](https://docs.example.com/es/guia) para m\u00e1s [2]."
)
HOSTILE = (
    '<script>window.pwned=1</script> <img src=x onerror="window.pwned=1"> '
    "[js](javascript:window.pwned=1) [rel](/admin/) ![tracker](http://evil.test/p.png) "
    '<a href="https://x.test" onclick="window.pwned=1">raw</a> [ok](https://docs.example.com/ok) [1]\n\n'
    + "|"
    + "|".join(f"column {i}" for i in range(60))
    + "|\n|"
    + "---|" * 60
    + "\n"
    + "|"
    + "|".join("cell" for _ in range(60))
    + "|\n"
)


def rendered(answer: str) -> dict:
    from oraculo.rendering import render_markdown

    sources = [
        {**s, "html": render_markdown(text="Passage with `code` and\na [link](https://docs.example.com/p).")}
        for s in ANSWER["sources"]
    ]
    return {**ANSWER, "answer": answer, "answer_html": render_markdown(text=answer), "sources": sources}


@pytest.mark.parametrize(
    ("lang", "answer", "shot"),
    [("en", RICH_EN, "widget-rendered-en.png"), ("es", RICH_ES, "widget-rendered-es.png")],
)
def test_rendered_answer_shows_code_lists_links_and_linked_citations(page, lang, answer, shot):
    FakeSite(page, lang=lang, api=lambda route, request: FakeSite.reply(route, 200, rendered(answer)))
    open_widget(page)
    ask(page, "How do I run the docs?" if lang == "en" else "\u00bfC\u00f3mo veo la documentaci\u00f3n?")
    text = page.locator("#orw-answer .orw-text")
    text.locator("ol").wait_for()
    assert text.locator("ol > li").count() == 2 and text.locator("ul > li").count() == 2
    assert text.locator("pre code").inner_text().strip() == "make run"
    font = page.evaluate(
        "getComputedStyle(document.querySelector('#orw-answer .orw-text pre code')).fontFamily"
    )
    assert "monospace" in font
    assert "`" not in text.inner_text() and "**" not in text.inner_text() and "](" not in text.inner_text()
    link = text.locator("a[href^='https://docs.example.com/']")
    assert (
        link.get_attribute("rel") == "noopener nofollow noreferrer"
        and link.get_attribute("target") == "_blank"
    )
    # The source's soft line break is a space: the list item is one line of text.
    soft = text.locator("ul > li").first.inner_text()
    assert "\n" not in soft.strip()
    refs = text.locator("a.orw-ref")
    assert refs.count() == 2
    refs.nth(1).click()
    assert page.evaluate("document.activeElement.id") == "orw-src-41-2"
    page.locator("#orw-answer .orw-passage summary").first.click()
    assert page.locator("#orw-answer .orw-passage-text code").first.inner_text() == "code"
    page.locator("#orw-panel").evaluate("panel => panel.scrollTop = 0")
    screenshot(page, shot)


def test_hostile_markdown_rendered_by_the_server_stays_inert_in_the_browser(page):
    FakeSite(page, api=lambda route, request: FakeSite.reply(route, 200, rendered(HOSTILE)))
    open_widget(page)
    ask(page)
    text = page.locator("#orw-answer .orw-text")
    text.locator("table").wait_for()
    page.wait_for_timeout(200)  # let an injected handler fire, if there were one
    assert page.evaluate("window.pwned") is None
    hostile = "#orw-answer img, #orw-answer script, #orw-answer [onclick], #orw-answer [onerror]"
    assert page.locator(hostile).count() == 0
    hrefs = text.locator("a:not(.orw-ref)").evaluate_all("links => links.map(a => a.getAttribute('href'))")
    assert all(h is None or h.startswith("https://") for h in hrefs), hrefs
    assert "https://docs.example.com/ok" in hrefs
    assert "tracker" in text.inner_text()  # the image's alt text, nothing loaded
    table = page.evaluate("""() => { const w = document.querySelector('#orw-answer .orw-table');
        const p = document.getElementById('orw-panel').getBoundingClientRect();
        return {scroll: w.scrollWidth, client: w.clientWidth, overflow: getComputedStyle(w).overflowX,
                panelWidth: p.width}; }""")
    assert table["scroll"] > table["client"] and table["overflow"] == "auto" and table["panelWidth"] <= 400


def test_markup_from_a_hostile_server_is_rebuilt_from_the_allow_list(page):
    """Even if a server (data-api pointing anywhere) sent unsanitised HTML, the widget keeps only its tags."""
    evil = (
        '<p onclick="window.pwned=1" style="position:fixed">p</p><img src=x onerror="window.pwned=1">'
        '<a href="javascript:window.pwned=1">js</a><iframe src="https://evil.test"></iframe>'
        '<script>window.pwned=1</script><form action="https://evil.test"><input name=x></form>'
        '<svg><a href="javascript:window.pwned=1"><text>svg</text></a></svg><a href="https://ok.test/">ok</a>'
        '<a href="#follow-up-questions">in-doc</a>'
    )
    FakeSite(
        page,
        api=lambda route, request: FakeSite.reply(
            route, 200, {**ANSWER, "answer_html": evil, "sources": [{**ANSWER["sources"][0], "html": evil}]}
        ),
    )
    open_widget(page)
    ask(page)
    page.locator("#orw-answer .orw-sources").wait_for()
    page.locator("#orw-answer .orw-passage summary").click()
    page.wait_for_timeout(200)
    assert page.evaluate("window.pwned") is None
    bad = (
        ":is(#orw-answer .orw-text, #orw-answer .orw-passage-text) :is(img, iframe, script, form, input, svg, "
        "[onclick], [style])"
    )
    assert page.locator(bad).count() == 0
    hrefs = page.locator("#orw-answer .orw-text a, #orw-answer .orw-passage-text a").evaluate_all(
        "links => links.map(a => a.getAttribute('href'))"
    )
    assert hrefs == ["https://ok.test/", "https://ok.test/"], "a link the page cannot follow is plain text"
    assert "in-doc" in page.locator("#orw-answer .orw-text").inner_text()


# Streaming: text shown as it arrives, and the plain request when a stream cannot be had.


@pytest.mark.django_db(transaction=True)
def test_streamed_text_shows_while_the_llm_is_still_writing(page, live_server, settings, fake_llm):
    from biblioteca.ingest import directory_ingest
    from oraculo.models import OraculoQuery

    settings.DEMO_APP = "guide"
    call_command("demo_widget_key", "--origin", live_server.url)
    assert not directory_ingest(
        paths=[FIXTURE_DOCS / "en"], app="guide", source_type="en", url_prefix="https://docs.example.com/en"
    ).failed
    fake_llm.reset("gated")  # the fake LLM sends its first piece, then waits for the test to let it go on
    try:
        page.goto(f"{live_server.url}/widget/demo/")
        page.get_by_role("button", name="Help", exact=True).click()
        ask(page, "How do I reset my password?")
        streaming = page.locator("#orw-answer .orw-text.orw-streaming")
        streaming.wait_for()
        assert streaming.inner_text().startswith("According to")
        assert page.locator("#orw-answer").get_attribute("aria-busy") == "true"
        assert page.locator("#orw-answer .orw-feedback").count() == 0 and not OraculoQuery.objects.exists()
        screenshot(page, "widget-streaming.png")
    finally:
        fake_llm.gate.set()
    page.locator("#orw-answer .orw-feedback").wait_for()
    assert page.locator("#orw-answer .orw-streaming").count() == 0
    assert page.locator("#orw-answer").get_attribute("aria-busy") is None
    text = page.locator("#orw-answer .orw-text")
    assert text.locator("p").count() >= 1 and text.locator("a.orw-ref").count() >= 1
    query = OraculoQuery.objects.get()
    assert query.answer_mode == "llm" and query.answer.startswith("According to")
    assert fake_llm.requests[-1]["body"]["stream"] is True


def sse(*events) -> str:
    return "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events)


def test_a_scripted_stream_is_rendered_from_its_done_event(page):
    from oraculo.rendering import render_markdown

    done = {
        **ANSWER,
        "answer": "Use `make run` [1].",
        "answer_html": render_markdown(text="Use `make run` [1]."),
    }
    site = FakeSite(
        page,
        api=lambda route, request: route.fulfill(
            status=200,
            content_type="text/event-stream",
            headers=CORS,
            body=sse(
                ("sources", {"sources": ANSWER["sources"]}),
                ("delta", {"text": "Use `make"}),
                ("delta", {"text": " run` [1]."}),
                ("done", done),
            ),
        ),
    )
    open_widget(page)
    ask(page)
    page.locator("#orw-answer .orw-feedback").wait_for()
    assert page.locator("#orw-answer .orw-text code").inner_text() == "make run"
    assert len(site.requests) == 1 and site.requests[0]["headers"]["accept"] == "text/event-stream"


@pytest.mark.parametrize("stream_reply", ["406", "cut"])
def test_without_a_stream_the_widget_asks_again_plainly(page, stream_reply):
    def api(route, request):
        if request.headers.get("accept") != "text/event-stream":
            return FakeSite.reply(route, 200, rendered("Plain answer [1]."))
        if stream_reply == "406":
            return FakeSite.reply(route, 406, {"detail": "Could not satisfy the request Accept header."})
        return route.fulfill(
            status=200,
            content_type="text/event-stream",
            headers=CORS,
            body=sse(("sources", {"sources": []}), ("delta", {"text": "Half an ans"})),
        )

    site = FakeSite(page, api=api)
    open_widget(page)
    ask(page)
    page.locator("#orw-answer .orw-feedback").wait_for()
    assert page.locator("#orw-answer .orw-text").inner_text().startswith("Plain answer")
    assert [r["headers"].get("accept") for r in site.requests][0] == "text/event-stream"
    assert len(site.requests) == 2 and site.requests[1]["headers"].get("accept") != "text/event-stream"


# Follow-ups: the widget keeps the thread of the page visit.


def test_the_widget_keeps_the_thread_until_a_new_question(page):
    answers = iter(range(41, 60))

    def api(route, request):
        qid = next(answers)
        return FakeSite.reply(
            route, 200, {**rendered(f"Answer {qid} [1]."), "query_id": qid, "feedback_token": f"t{qid}"}
        )

    site = FakeSite(page, api=api)
    open_widget(page)
    ask(page, "When are invoices sent?")
    page.get_by_text("Answer 41").wait_for()
    assert "previous_query_id" not in site.requests[0]["body"]
    assert page.get_by_role("button", name="New question").is_visible(), "offered from the first answer on"
    ask(page, "Who gets them?")
    page.get_by_text("Answer 42").wait_for()
    assert site.requests[1]["body"]["previous_query_id"] == 41
    assert site.requests[1]["body"]["previous_feedback_token"] == "t41"
    assert (
        page.locator("#orw-answer .orw-thread")
        .inner_text()
        .startswith("Following up on \u201cWhen are invoices sent?\u201d.")
    )
    page.get_by_role("button", name="New question").click()
    assert page.locator("#orw-answer .orw-thread").count() == 0
    assert page.evaluate("document.activeElement.id") == "orw-q"
    ask(page, "How do I reset my password?")
    page.get_by_text("Answer 43").wait_for()
    assert "previous_query_id" not in site.requests[2]["body"]


def test_new_question_after_the_first_answer_asks_afresh(page):
    answers = iter(range(41, 60))
    site = FakeSite(
        page,
        api=lambda route, request: FakeSite.reply(
            route, 200, {**rendered("An answer [1]."), "query_id": next(answers), "feedback_token": "t"}
        ),
    )
    open_widget(page)
    ask(page, "When are invoices sent?")
    page.get_by_role("button", name="New question").click()
    assert page.evaluate("document.activeElement.id") == "orw-q"
    ask(page, "How do I reset my password?")
    page.locator("#orw-answer .orw-feedback").wait_for()
    page.wait_for_function("document.querySelectorAll('#orw-answer .orw-feedback').length === 1")
    assert len(site.requests) == 2 and "previous_query_id" not in site.requests[1]["body"]


def test_a_thread_the_server_no_longer_knows_is_asked_afresh(page):
    bodies = []

    def api(route, request):
        body = json.loads(request.post_data)
        bodies.append(body)
        if body.get("previous_query_id"):
            return FakeSite.reply(
                route, 404, {"detail": "No previous query with this id and feedback token."}
            )
        return FakeSite.reply(route, 200, {**rendered(f"Answer {len(bodies)}."), "query_id": len(bodies)})

    FakeSite(page, api=api)
    open_widget(page)
    ask(page, "First?")
    page.get_by_text("Answer 1.").wait_for()
    ask(page, "Second?")
    page.get_by_text("Answer 3.").wait_for()
    assert [b.get("previous_query_id") for b in bodies] == [None, 1, None]
    assert page.locator("#orw-answer .orw-thread").count() == 0
