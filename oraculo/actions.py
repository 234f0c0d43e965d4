"""Every write to Oráculo's user-facing tables: the question log, its feedback, its retention purge, and the
demo page's widget key.

Questions can hold personal data, so keeping all writes here keeps one place to audit what is stored.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from functools import lru_cache

import numpy as np
from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import connections, router, transaction
from django.db.models import sql
from django.utils import timezone

from biblioteca.errors import ApplicationError, ConflictError, NotFoundError
from biblioteca.search import RetrievedChunk
from biblioteca.selectors import vector_literal
from oraculo import selectors
from oraculo.models import (
    DEMO_KEY_NAME,
    AnswerMode,
    Channel,
    OraculoQuery,
    QueryVector,
    WidgetKey,
    origin_problem,
)


class FeedbackError(ApplicationError):
    """Feedback that may not be recorded."""


class FeedbackQueryNotFound(NotFoundError, FeedbackError):
    """No such query, no token, a wrong token or another caller's query: one answer for all, so nobody learns
    which query ids exist."""


class FeedbackAlreadyGiven(ConflictError, FeedbackError):
    """Feedback is accepted once per query, so a widget cannot stuff the ballot."""


query_feedback_token = selectors.query_feedback_token  # where callers have always found it


def query_log_create(
    *,
    question: str,
    app: str | None,
    source_type: str | None,
    answer: str,
    answer_mode: AnswerMode | str,
    chunks: Sequence[RetrievedChunk],
    trimmed: bool,
    trim_params: Mapping | None,
    tokens_before: int,
    tokens_in_context: int,
    latency_ms: Mapping[str, float | None],
    llm_model: str = "",
    llm_error: str = "",
    answer_truncated: bool = False,
    widget_key: WidgetKey | None = None,
    user: AbstractBaseUser | None = None,
    page_url: str = "",
    question_vector: Sequence[float] | None = None,
    previous: OraculoQuery | None = None,
    retrieval_question: str = "",
    channel: str = Channel.WIDGET,
) -> OraculoQuery:
    """Log one answered question with what is needed to replay and judge it (and, for the gaps dashboard, its
    best passage's score and its vector).

    Both rows go in one statement, so they commit together in one round trip. With QUERY_LOG_SYNCHRONOUS_COMMIT
    off it is committed without waiting for the WAL flush: a web worker serves one request at a time, so the
    flush caps its throughput, and a database crash could then lose the log's last fraction of a second (never
    corrupt it). On by default: durable.
    """
    alias = router.db_for_write(OraculoQuery)
    query = OraculoQuery(
        previous=previous,
        thread_id=None if previous is None else (previous.thread_id or previous.pk),
        retrieval_question=retrieval_question if retrieval_question != question else "",
        top_score=round(max(c.score for c in chunks), 4) if chunks else None,
        question=question,
        app=app or "",
        source_type=source_type or "",
        channel=channel,
        answer=answer,
        answer_mode=answer_mode,
        chunk_ids=[c.chunk_id for c in chunks],
        chunk_scores=[round(c.score, 4) for c in chunks],
        trimmed=trimmed,
        trim_params=dict(trim_params or {}),
        tokens_before=tokens_before,
        tokens_in_context=tokens_in_context,
        latency_ms=dict(latency_ms),
        llm_model=llm_model,
        llm_error=llm_error,
        answer_truncated=answer_truncated,
        widget_key=widget_key,
        user=user if user is not None and user.is_authenticated else None,
        page_url=page_url or "",
    )
    if settings.QUERY_LOG_SYNCHRONOUS_COMMIT:
        _query_insert(query, vector=question_vector, alias=alias)
        return query
    with transaction.atomic(using=alias):
        with connections[alias].cursor() as cursor:
            cursor.execute("SET LOCAL synchronous_commit = off")
        _query_insert(query, vector=question_vector, alias=alias)
    return query


def _query_insert(query: OraculoQuery, *, vector: Sequence[float] | None, alias: str) -> None:
    """INSERT the query (as the ORM writes it: defaults, auto_now_add) and, with a `vector`, its QueryVector row in
    the same statement; `query` gets its pk. Not `objects.create()` twice: that is four round trips (BEGIN, two
    INSERTs, COMMIT) on every ask, where one statement is atomic by itself."""
    connection = connections[alias]
    statement, fields = _query_insert_statement(alias, with_vector=vector is not None)
    # What the ORM's insert compiler does with plain values (the log never holds expressions).
    params = [field.get_db_prep_save(field.pre_save(query, True), connection) for field in fields]
    if vector is not None:  # the search has just formatted this vector; vector_literal keeps the last few
        params.append(vector_literal(np.asarray(vector, dtype=np.float32)))
    with connection.cursor() as cursor:
        cursor.execute(statement, params)
        query.pk = cursor.fetchone()[0]
    query._state.adding, query._state.db = False, alias


@lru_cache(maxsize=8)
def _query_insert_statement(alias: str, *, with_vector: bool) -> tuple[str, tuple]:
    """The statement, compiled by the ORM once per process (it is the same for every row), and its fields."""
    connection = connections[alias]
    meta = OraculoQuery._meta
    fields = tuple(f for f in meta.local_concrete_fields if f is not meta.pk and not f.generated)
    insert = sql.InsertQuery(OraculoQuery)
    insert.insert_values(fields, [OraculoQuery()])
    ((statement, _),) = insert.get_compiler(using=alias).as_sql()
    pk = connection.ops.quote_name(meta.pk.column)
    if not with_vector:
        return f"{statement} RETURNING {pk}", fields
    target = QueryVector._meta
    target_pk = connection.ops.quote_name(target.pk.column)
    column = connection.ops.quote_name(target.get_field("embedding").column)
    return (
        f"WITH logged AS ({statement} RETURNING {pk}) "
        f"INSERT INTO {connection.ops.quote_name(target.db_table)} ({target_pk}, {column}) "
        f"SELECT {pk}, %s FROM logged RETURNING {target_pk}",
        fields,
    )


def query_feedback_record(
    *,
    query_id: int,
    token: str,
    helpful: bool,
    comment: str = "",
    widget_key: WidgetKey | None = None,
    user: AbstractBaseUser | None = None,
) -> OraculoQuery:
    """Store whether the answer helped; once, and only with the query's feedback token, from the key or user
    that asked."""
    query = selectors.query_get_owned(query_id=query_id, token=token, widget_key=widget_key, user=user)
    if query is None:
        raise FeedbackQueryNotFound("No query with this id and feedback token.")
    now = timezone.now()
    updated = OraculoQuery.objects.filter(pk=query.pk, feedback_at__isnull=True).update(
        helpful=helpful, feedback_comment=comment, feedback_at=now
    )
    if not updated:
        raise FeedbackAlreadyGiven("Feedback on this query was already recorded; it is accepted only once.")
    query.helpful, query.feedback_comment, query.feedback_at = helpful, comment, now
    return query


def queries_purge(*, older_than: timedelta, dry_run: bool = False, now: datetime | None = None) -> int:
    """Delete (or, on a dry run, count) the queries asked before `now - older_than`; returns how many."""
    try:
        cutoff = (now or timezone.now()) - older_than
    except OverflowError:  # before the first date there is: nothing is that old
        return 0
    old = OraculoQuery.objects.filter(created_at__lt=cutoff)
    if dry_run:
        return old.count()
    _, per_model = old.delete()
    return per_model.get(OraculoQuery._meta.label, 0)


class InvalidOrigin(ApplicationError):
    """Not a browser origin such as https://www.example.com."""


@transaction.atomic
def demo_widget_key_ensure(*, origins: Sequence[str]) -> tuple[WidgetKey, bool]:
    """The demo page's key for DEMO_APP, created if missing, allowing `origins` as well as those it had; whether
    it was created. Run by `manage.py demo_widget_key` (which `make run` calls): the page itself never writes,
    and an origin comes from the operator, never from a request's Host header."""
    for origin in origins:
        if problem := origin_problem(origin):
            raise InvalidOrigin(problem)
    key, created = WidgetKey.objects.select_for_update().get_or_create(
        name=DEMO_KEY_NAME, app=settings.DEMO_APP, defaults={"allowed_origins": []}
    )
    wanted = list(dict.fromkeys([*key.allowed_origins, *(o.rstrip("/") for o in origins)]))
    if created or wanted != key.allowed_origins:
        key.allowed_origins = wanted
        key.save(update_fields=["allowed_origins"])
    return key, created
