"""Answers and passages rendered from markdown and sanitised (markdown-it-py, raw HTML off, then nh3)."""

from __future__ import annotations

import re

import pytest

from oraculo.rendering import render_extractive, render_markdown, sanitize_html


def test_markdown_becomes_html_with_code_lists_links_and_tables():
    html = render_markdown(
        text="Run `make run`:\n\n1. first\n2. second\n\n- a\n- b\n\n"
        "See [the guide](https://docs.example.com/guide).\n\n```sh\nmake test\n```\n\n"
        "| a | b |\n|---|---|\n| 1 | 2 |\n"
    )
    assert "<code>make run</code>" in html
    assert "<ol>" in html and "<li>first</li>" in html and "<ul>" in html
    assert '<a href="https://docs.example.com/guide" rel="noopener nofollow">the guide</a>' in html
    assert "<pre><code>make test\n</code></pre>" in html
    assert "<table>" in html and "<td>2</td>" in html


def test_soft_line_breaks_of_the_source_do_not_break_sentences():
    html = render_markdown(text="The link expires\nafter 30 minutes.")
    assert "<br" not in html and html == "<p>The link expires\nafter 30 minutes.</p>"


def test_citations_stay_as_text_for_the_widget_to_link():
    assert render_markdown(text="Click it [1][2].") == "<p>Click it [1][2].</p>"


@pytest.mark.parametrize(
    "hostile",
    [
        "<script>window.pwned=1</script>",
        '<img src=x onerror="window.pwned=1">',
        '<a href="https://x.test" onclick="window.pwned=1">x</a>',
        '<iframe src="https://evil.test"></iframe>',
        "<svg onload=window.pwned=1></svg>",
        "<style>body{display:none}</style>",
        "<!-- comment --><b onmouseover=alert(1)>b</b>",
    ],
)
def test_raw_html_is_text_never_markup(hostile):
    html = render_markdown(text=f"Before {hostile} after")
    assert "<script" not in html and "<img" not in html and "<iframe" not in html and "<svg" not in html
    assert "<style" not in html and not re.search(r"<[a-z]+[^>]*\son[a-z]+=", html)


@pytest.mark.parametrize(
    "link",
    [
        "javascript:window.pwned=1",
        "JaVaScRiPt:alert(1)",
        "data:text/html,<b>x</b>",
        "vbscript:msgbox(1)",
        "/relative/path",
        "//evil.test/x",
        "file:///etc/passwd",
    ],
)
def test_only_absolute_http_and_mailto_links_keep_their_href(link):
    html = render_markdown(text=f"[click]({link}) and <{link}>")
    for href in re.findall(r'href="([^"]*)"', html):
        assert href.startswith(("http://", "https://", "mailto:")), html


def test_mailto_and_http_links_get_rel_noopener_nofollow():
    html = render_markdown(text="[mail](mailto:help@example.com) [web](http://example.com)")
    assert html.count('rel="noopener nofollow"') == 2 and 'href="mailto:help@example.com"' in html


def test_images_are_their_alt_text_and_load_nothing():
    html = render_markdown(text="![a diagram](https://tracker.evil.test/pixel.png) and ![](x.png)")
    assert "<img" not in html and "tracker" not in html and "a diagram" in html


def test_sanitiser_drops_what_markdown_it_would_never_make():
    dirty = (
        '<p style="color:red" class="x" id="y">t</p><img src="https://x.test/a.png">'
        '<a href="javascript:alert(1)" target="_top">j</a><form><input></form><td onclick="x">c</td>'
    )
    clean = sanitize_html(html=dirty)
    for bad in ("style=", "class=", "id=", "<img", "javascript", "target=", "<form", "<input", "onclick"):
        assert bad not in clean


def test_a_huge_table_is_rendered_bounded_and_safe():
    cols = 400
    table = (
        "|"
        + "|".join(f"c{i}" for i in range(cols))
        + "|\n|"
        + "---|" * cols
        + "\n"
        + ("|" + "|".join("<b>x</b>" for _ in range(cols)) + "|\n") * 20
    )
    html = render_markdown(text=table)
    assert html.count("<th>") == cols and html.count("<td>") == cols * 20 and "<b>" not in html
    assert (
        len(render_markdown(text="a" * 500_000)) < 120_000
    )  # input beyond MAX_MARKDOWN_CHARS is not rendered


def test_an_unclosed_fence_in_one_extractive_passage_does_not_swallow_the_next():
    html = render_extractive(
        labels=["Install > CLI", "Billing"], passages=["```sh\nmake run", "Plans are *monthly*."]
    )
    assert "<strong>[2] Billing</strong>" in html and "<em>monthly</em>" in html
    assert html.index("<pre>") < html.index("[2] Billing")


def test_empty_text_renders_nothing():
    assert render_markdown(text="  \n") == ""


def test_a_passage_rendered_again_comes_from_the_cache_and_another_text_does_not():
    from oraculo.rendering import _rendered

    text = "A passage about **caching** rendered twice."
    first = render_markdown(text=text)
    hits = _rendered.cache_info().hits
    assert (
        render_markdown(text=text)
        == first
        == "<p>A passage about <strong>caching</strong> rendered twice.</p>"
    )
    assert _rendered.cache_info().hits == hits + 1
    assert render_markdown(text=text + " Changed.") != first


def test_an_extractive_answer_rendered_again_comes_from_the_cache_and_other_passages_do_not():
    from oraculo.rendering import _extractive

    labels, passages = ["Account > Password"], ["Open **Settings** to reset it."]
    first = render_extractive(labels=labels, passages=passages)
    hits = _extractive.cache_info().hits
    assert render_extractive(labels=list(labels), passages=list(passages)) == first
    assert _extractive.cache_info().hits == hits + 1
    assert render_extractive(labels=["Account > Email"], passages=passages) != first
