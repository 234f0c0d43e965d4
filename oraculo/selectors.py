"""Reads for Oráculo: widget keys and their origins, logged queries, and the service's health."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass

from django.conf import settings
from django.db import DatabaseError
from django.db.models import Q
from django.utils.crypto import constant_time_compare, salted_hmac

from biblioteca.embeddings import configured_model_name
from biblioteca.selectors import pgvector_version
from oraculo.llm import llm_configured
from oraculo.models import DEMO_KEY_NAME, OraculoQuery, WidgetKey, origin_problem

logger = logging.getLogger(__name__)


WIDGET_KEY_FORMAT = re.compile(r"wk_[A-Za-z0-9_-]{1,61}")


def widget_key_get_active(*, key: str) -> WidgetKey | None:
    """The active key with this value; a value no key could have (a NUL byte, say) is not even looked up."""
    if not WIDGET_KEY_FORMAT.fullmatch(key or ""):
        return None
    return WidgetKey.objects.filter(key=key, is_active=True).first()


def origin_allowed_by_any_key(*, origin: str) -> bool:
    """Whether some active key lists `origin`; preflights carry no key, so this is all they can be judged by.
    `null` is never an origin, whatever a key lists."""
    origin = origin.rstrip("/")
    if not origin or origin_problem(origin):
        return False
    return WidgetKey.objects.filter(
        Q(allowed_origins__contains=[origin]) | Q(allowed_origins__contains=[origin + "/"]),
        is_active=True,
    ).exists()


@dataclass(frozen=True)
class Health:
    database: bool
    pgvector_version: str
    embedder_backend: str
    embedder_model: str
    embedder_dimensions: int
    llm_configured: bool
    llm_model: str

    @property
    def ok(self) -> bool:
        """Without the database or pgvector nothing can be answered; without an LLM answers are extractive."""
        return self.database and bool(self.pgvector_version)


def health_check() -> Health:
    """One cheap query (no embedding, no LLM call): is the database up, with pgvector installed?"""
    database, version = True, ""
    try:
        version = pgvector_version()
    except DatabaseError:
        logger.exception("health check: the database is unreachable")
        database = False
    configured = llm_configured()
    return Health(
        database=database,
        pgvector_version=version,
        embedder_backend=settings.EMBEDDING_BACKEND,
        embedder_model=configured_model_name(),
        embedder_dimensions=settings.EMBEDDING_DIMENSIONS,
        llm_configured=configured,
        llm_model=settings.LLM_MODEL if configured else "",
    )


def demo_widget_key_get() -> WidgetKey | None:
    """The demo page's key (made by `manage.py demo_widget_key`), if it exists and is active."""
    return WidgetKey.objects.filter(name=DEMO_KEY_NAME, app=settings.DEMO_APP, is_active=True).first()


def query_feedback_token(*, query_id: int) -> str:
    """The token /ask hands to whoever asked: widget keys are public, so only this proves the right to judge
    the answer or continue its thread. An HMAC of the id with SECRET_KEY, so nothing more is stored."""
    return salted_hmac("oraculo.query-feedback", str(query_id), algorithm="sha256").hexdigest()


def query_get_owned(
    *, query_id: int, token: str, widget_key: WidgetKey | None = None, user=None
) -> OraculoQuery | None:
    """The query, if `token` is its feedback token and the widget key or user is the one that asked it; None
    for a missing query, a wrong token or another caller's query alike, so nobody learns which ids exist."""
    query = OraculoQuery.objects.filter(pk=query_id).first()
    asked_by_key = (
        query is not None
        and query.widget_key_id is not None
        and widget_key is not None
        and query.widget_key_id == widget_key.pk
    )
    asked_by_user = (
        query is not None
        and query.user_id is not None
        and user is not None
        and user.is_authenticated
        and query.user_id == user.pk
    )
    if not (
        token
        and constant_time_compare(token, query_feedback_token(query_id=query_id))
        and (asked_by_key or asked_by_user)
    ):
        return None
    return query


def thread_turns(*, previous: OraculoQuery, turns: int) -> list[OraculoQuery]:
    """The last `turns` questions of `previous`'s thread up to it, oldest first: what a follow-up's LLM sees."""
    root = previous.thread_id or previous.pk
    rows = (
        OraculoQuery.objects.filter(Q(pk=root) | Q(thread_id=root), pk__lte=previous.pk)
        .only("question", "answer", "answer_mode")
        .order_by("-pk")[:turns]
    )
    return list(reversed(rows))
