"""manage.py purge_queries: retention of the question log."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from oraculo.actions import query_log_create
from oraculo.models import OraculoQuery

pytestmark = pytest.mark.django_db


def logged(question: str, *, age: timedelta) -> OraculoQuery:
    query = query_log_create(
        question=question,
        app="guide",
        source_type="",
        answer="a",
        answer_mode="extractive",
        chunks=[],
        trimmed=False,
        trim_params=None,
        tokens_before=0,
        tokens_in_context=0,
        latency_ms={"total": 1.0},
    )
    OraculoQuery.objects.filter(pk=query.pk).update(created_at=timezone.now() - age)
    return query


@pytest.fixture
def queries():
    return {
        "100 days": logged("my e-mail is ana@example.com", age=timedelta(days=100)),
        "91 days": logged("old", age=timedelta(days=91)),
        "30 days": logged("recent", age=timedelta(days=30)),
        "2 hours": logged("today", age=timedelta(hours=2)),
    }


def purge(*args: str) -> str:
    out = StringIO()
    call_command("purge_queries", *args, stdout=out)
    return out.getvalue().strip()


def remaining() -> set[str]:
    return set(OraculoQuery.objects.values_list("question", flat=True))


def test_deletes_only_queries_older_than_the_age(queries):
    assert purge("--older-than", "90d") == "deleted 2 queries older than 90 days"
    assert remaining() == {"recent", "today"}
    assert purge("--older-than", "90d") == "deleted 0 queries older than 90 days"


def test_dry_run_counts_and_keeps_everything(queries):
    assert purge("--older-than", "4w", "--dry-run") == "dry run: would delete 3 queries older than 4 weeks"
    assert len(remaining()) == 4


@pytest.mark.parametrize(
    ("age", "left"),
    [("1h", set()), ("3h", {"today"}), ("1w", {"today"}), ("14W", {"today", "recent", "old"})],
)
def test_hours_days_and_weeks(queries, age, left):
    purge("--older-than", age)
    assert remaining() == left


def test_singular_in_the_report(queries):
    assert purge("--older-than", "95d") == "deleted 1 query older than 95 days"
    assert purge("--older-than", "1d", "--dry-run") == "dry run: would delete 2 queries older than 1 day"


@pytest.mark.parametrize("age", ["90", "ninety", "90m", "90 days", "0d", "-5d", "1.5d", ""])
def test_bad_ages_are_refused_clearly(queries, age):
    with pytest.raises(CommandError, match=r"--older-than must be a positive number of hours, days or weeks"):
        purge(f"--older-than={age}")
    assert len(remaining()) == 4


def test_an_age_longer_than_the_calendar_deletes_nothing_or_is_refused(queries):
    assert (
        purge("--older-than", "1000000d", "--dry-run")
        == "dry run: would delete 0 queries older than 1000000 days"
    )
    assert purge("--older-than", "1000000d") == "deleted 0 queries older than 1000000 days"
    with pytest.raises(CommandError, match="longer than any date"):
        purge("--older-than", "99999999999w")
    assert len(remaining()) == 4


def test_the_age_is_required(queries):
    with pytest.raises(CommandError, match="--older-than"):
        purge()


def test_purging_a_question_deletes_its_vector_and_unlinks_its_follow_ups():
    from oraculo.actions import queries_purge
    from oraculo.models import QueryVector

    old = OraculoQuery.objects.create(question="old", answer="a")
    QueryVector.objects.create(query=old, embedding=[0.1] * 384)
    OraculoQuery.objects.filter(pk=old.pk).update(created_at=timezone.now() - timedelta(days=100))
    follow = OraculoQuery.objects.create(question="and?", answer="b", previous=old, thread=old)
    assert queries_purge(older_than=timedelta(days=90)) == 1
    follow.refresh_from_db()
    assert not QueryVector.objects.exists() and follow.previous_id is None and follow.thread_id is None
