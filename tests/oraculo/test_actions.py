"""The question log's write: both rows in one statement, committed (or not waiting for the WAL flush) together."""

from __future__ import annotations

import numpy as np
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from biblioteca.search import RetrievedChunk
from oraculo.actions import query_log_create
from oraculo.models import OraculoQuery, QueryVector

pytestmark = pytest.mark.django_db


def log(**overrides) -> OraculoQuery:
    values = dict(
        question="How do I reset my password?",
        app="guide",
        source_type=None,
        answer="From the sign-in page.",
        answer_mode="extractive",
        chunks=[],
        trimmed=False,
        trim_params=None,
        tokens_before=10,
        tokens_in_context=10,
        latency_ms={"total": 1.0},
        question_vector=np.full(384, 0.05, dtype=np.float32),
    )
    values.update(overrides)
    return query_log_create(**values)


def show_synchronous_commit() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SHOW synchronous_commit")
        return cursor.fetchone()[0]


@pytest.mark.django_db(transaction=True)
def test_the_log_is_committed_asynchronously_in_one_transaction_and_the_setting_does_not_leak(settings):
    settings.QUERY_LOG_SYNCHRONOUS_COMMIT = False
    with CaptureQueriesContext(connection) as queries:
        query = log()
    statements = [q["sql"] for q in queries.captured_queries]
    assert statements[0] == "BEGIN" and statements[-1] == "COMMIT", "one transaction"
    assert statements[1] == "SET LOCAL synchronous_commit = off"
    assert len(statements[2:-1]) == 1 and statements[2].startswith(
        'WITH logged AS (INSERT INTO "oraculo_queries"'
    )
    assert QueryVector.objects.get(query=query).embedding is not None
    assert show_synchronous_commit() == "on"


def test_both_rows_go_in_one_statement_as_the_orm_would_write_them(settings):
    settings.QUERY_LOG_SYNCHRONOUS_COMMIT = True
    vector = np.linspace(-1, 1, 384, dtype=np.float32)
    with CaptureQueriesContext(connection) as queries:
        query = log(question_vector=vector, latency_ms={"total": 2.5, "llm": None})
    assert len(queries.captured_queries) == 1, "no BEGIN/COMMIT: one statement is atomic by itself"
    stored = OraculoQuery.objects.get(pk=query.pk)
    assert not query._state.adding and query._state.db == "default"
    assert stored.created_at == query.created_at and stored.created_at is not None
    assert (stored.question, stored.app, stored.source_type, stored.latency_ms) == (
        "How do I reset my password?",
        "guide",
        "",
        {"total": 2.5, "llm": None},
    )
    assert stored.helpful is None and stored.channel == "widget"
    np.testing.assert_array_equal(np.asarray(stored.vector.embedding, dtype=np.float32), vector)


def test_every_column_is_stored_as_objects_create_would_store_it(settings):
    """The statement is compiled once and its values prepared field by field: the row must be the ORM's."""
    chunks = [
        RetrievedChunk(
            id=n,
            chunk_id=f"a.md#{n}",
            document_id=1,
            title="A",
            heading_path=["A"],
            url="",
            score=s,
            text="t",
            original_text="t",
        )
        for n, s in ((3, 0.91234567), (7, 0.5))
    ]
    query = log(chunks=chunks, trimmed=True, trim_params={"threshold": 0.9}, page_url="https://x.example/p")
    ours = OraculoQuery.objects.filter(pk=query.pk).values().get()
    values = {k: v for k, v in ours.items() if k not in {"id", "created_at"}}
    orm = OraculoQuery.objects.filter(pk=OraculoQuery.objects.create(**values).pk).values().get()
    assert {k: v for k, v in orm.items() if k not in {"id", "created_at"}} == values
    assert values["chunk_ids"] == ["a.md#3", "a.md#7"] and values["chunk_scores"] == [0.9123, 0.5]
    assert values["top_score"] == 0.9123 and values["trim_params"] == {"threshold": 0.9}


def test_a_question_without_a_vector_is_logged_alone():
    query = log(question_vector=None)
    assert OraculoQuery.objects.filter(pk=query.pk).exists()
    assert not QueryVector.objects.filter(query_id=query.pk).exists()


def test_synchronous_commit_when_the_setting_asks(settings):
    settings.QUERY_LOG_SYNCHRONOUS_COMMIT = True
    with CaptureQueriesContext(connection) as queries:
        log()
    assert not any("synchronous_commit" in q["sql"] for q in queries.captured_queries)
    assert OraculoQuery.objects.count() == 1
