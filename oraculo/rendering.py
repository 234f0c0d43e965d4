"""Markdown to safe HTML for answers and passages: markdown-it-py with raw HTML off, then nh3 (ammonia).

Two layers on purpose: markdown-it never passes HTML through, and nh3 keeps only allow-listed tags,
attributes and URL schemes whatever the renderer produced, so a bug in one is caught by the other. Images
are written as their alt text: an answer never loads anything from elsewhere.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from html import escape

import nh3
from markdown_it import MarkdownIt

ALLOWED_TAGS = frozenset(
    {
        "p",
        "br",
        "hr",
        "strong",
        "em",
        "del",
        "s",
        "code",
        "pre",
        "blockquote",
        "ul",
        "ol",
        "li",
        "a",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "table",
        "thead",
        "tbody",
        "tr",
        "th",
        "td",
    }
)
ALLOWED_ATTRIBUTES = {
    "a": {"href", "title"},
    "ol": {"start"},
    "th": {"colspan", "rowspan"},
    "td": {"colspan", "rowspan"},
}
URL_SCHEMES = frozenset({"http", "https", "mailto"})
LINK_REL = "noopener nofollow"
MAX_MARKDOWN_CHARS = 100_000  # more than any passage or capped answer; bounds the work on hostile input
RENDERED_CACHE_SIZE = 2048  # passages of a few KB each: a few MB per process at most
EXTRACTIVE_CACHE_SIZE = 512  # three passages and their HTML each: a few MB more


def _image_as_text(renderer, tokens, idx, options, env) -> str:
    """`![alt](src)` shows its alt text: no request leaves the reader's browser for an image."""
    token = tokens[idx]
    alt = "".join(child.content for child in token.children or [])
    return escape(alt, quote=False)


@lru_cache(maxsize=1)
def _markdown() -> MarkdownIt:
    """CommonMark plus tables and strikethrough; raw HTML is text; soft breaks are spaces, so a passage's
    hard-wrapped lines read as the sentences they are."""
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "breaks": False, "typographer": False})
    md.enable(["table", "strikethrough"])
    md.add_render_rule("image", _image_as_text)
    return md


def _absolute_links_only(tag: str, attribute: str, value: str) -> str | None:
    """A relative link would resolve against whatever page shows the widget: links are absolute or dropped."""
    if attribute == "href" and not value.strip().lower().startswith(("http://", "https://", "mailto:")):
        return None
    return value


def sanitize_html(*, html: str) -> str:
    """Only the allow-listed tags and attributes, http(s)/mailto links with rel="noopener nofollow"."""
    return nh3.clean(
        html,
        tags=set(ALLOWED_TAGS),
        attributes={k: set(v) for k, v in ALLOWED_ATTRIBUTES.items()},
        url_schemes=set(URL_SCHEMES),
        link_rel=LINK_REL,
        strip_comments=True,
        clean_content_tags={"script", "style"},
        attribute_filter=_absolute_links_only,
    )


def render_markdown(*, text: str) -> str:
    """Markdown (an answer or a passage) as HTML safe to insert in any page."""
    if not text or not text.strip():
        return ""
    return _rendered(text[:MAX_MARKDOWN_CHARS])


@lru_cache(maxsize=RENDERED_CACHE_SIZE)
def _rendered(text: str) -> str:
    """Rendering is a pure function of the text and costs more than the search: the same passages come back
    for every asking of a popular question, and twice in one ask (as sources and in the extractive answer)."""
    return sanitize_html(html=_markdown().render(text)).strip()


def render_extractive(*, labels: Sequence[str], passages: Sequence[str]) -> str:
    """An extractive answer: each passage rendered on its own (an unclosed code fence in one cannot swallow the
    next), under its citation and label."""
    return _extractive(tuple(labels), tuple(passages))


@lru_cache(maxsize=EXTRACTIVE_CACHE_SIZE)
def _extractive(labels: tuple[str, ...], passages: tuple[str, ...]) -> str:
    """Pure, like `_rendered`: a popular question gets the same three passages every time it is asked."""
    parts = []
    for n, (label, passage) in enumerate(zip(labels, passages, strict=True), start=1):
        parts.append(
            f"<p><strong>[{n}] {escape(label, quote=False)}</strong></p>{render_markdown(text=passage)}"
        )
    return sanitize_html(html="".join(parts))
