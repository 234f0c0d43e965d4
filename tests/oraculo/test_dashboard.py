"""The gaps dashboard: its numbers on a fixture log, the grouping of near-duplicates by stored query vectors,
the page (server-made SVG, links to the log rows), the CSV (neutralised cells) and its pinned query count."""

from __future__ import annotations

import csv
import io
from datetime import UTC, date, datetime

import numpy as np
import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test.utils import CaptureQueriesContext

from oraculo.dashboard import dashboard_get
from oraculo.models import AnswerMode, OraculoQuery, QueryVector

pytestmark = pytest.mark.django_db

START, END = date(2026, 3, 1), date(2026, 3, 7)
DIM = 384


def vector(axis: int, lean: int | None = None, amount: float = 0.0) -> list[float]:
    v = np.zeros(DIM)
    v[axis] = 1.0
    if lean is not None:
        v[lean] = amount
    return list(v / np.linalg.norm(v))


def log(question, *, day=1, mode=AnswerMode.EXTRACTIVE, score=0.9, helpful=None, vec=None, app="guide"):
    row = OraculoQuery.objects.create(
        question=question,
        app=app,
        answer="a",
        answer_mode=mode,
        chunk_ids=[] if score is None else ["d#1"],
        chunk_scores=[] if score is None else [score],
        top_score=score,
        helpful=helpful,
    )
    if vec is not None:
        QueryVector.objects.create(query=row, embedding=vec)
    OraculoQuery.objects.filter(pk=row.pk).update(created_at=datetime(2026, 3, day, 12, tzinfo=UTC))
    return row


@pytest.fixture
def fixture_log(settings):
    settings.DASHBOARD_GAP_SCORE = 0.8
    settings.DASHBOARD_DUPLICATE_SIMILARITY = 0.93
    reset, reset_alike = vector(0), vector(0, lean=1, amount=0.2)  # cosine 0.98: the same question
    for day in (1, 1, 2):
        log("How do I reset my password?", day=day, mode=AnswerMode.LLM, vec=reset)
    log("  how do I RESET my password?", day=3, mode=AnswerMode.LLM, vec=reset)  # the same text, folded
    log("Reset password how?", day=3, score=0.85, vec=reset_alike)
    log("Reset password how?", day=3, score=0.85, helpful=False, vec=reset_alike)
    log("How much does the Pro plan cost?", day=4, mode=AnswerMode.LLM, helpful=True, vec=vector(2))
    log("How much does the Pro plan cost?", day=5, mode=AnswerMode.LLM, helpful=True, vec=vector(2))
    log("Can I pay in bitcoin?", day=5, score=0.61, vec=vector(3))
    log("Can I pay with bitcoin?", day=6, score=0.58, vec=vector(3, lean=4, amount=0.1))
    log('=HYPERLINK("https://evil.test")', day=7, score=None, vec=vector(5))
    log("Out of range", day=9, vec=vector(6))
    log("Another app", day=2, app="shop", vec=vector(7))
    return reset


def test_numbers_on_a_fixture_log(fixture_log):
    board = dashboard_get(app="guide", start=START, end=END)
    assert board.total == 11
    assert (board.llm, board.extractive, board.nothing) == (6, 4, 1)
    assert board.share(board.llm) == 54.5 and board.share(board.nothing) == 9.1
    assert (board.rated, board.helpful, board.helpful_rate) == (3, 2, 66.7)
    assert [d.total for d in board.days] == [2, 1, 3, 1, 2, 1, 1]
    assert (board.days[2].llm, board.days[2].extractive) == (1, 2) and board.days[6].nothing == 1

    top = board.top[0]
    assert top.question == "How do I reset my password?" and top.count == 6
    assert dict(top.variants) == {"How do I reset my password?": 4, "Reset password how?": 2}
    assert len(top.ids) == 6
    assert [(g.question, g.count) for g in board.top[1:]] == [
        ("Can I pay in bitcoin?", 2),
        ("How much does the Pro plan cost?", 2),
        ('=HYPERLINK("https://evil.test")', 1),
    ]

    gaps = {g.question: g for g in board.gaps}
    assert list(gaps) == ["Can I pay in bitcoin?", '=HYPERLINK("https://evil.test")', "Reset password how?"]
    bitcoin = gaps["Can I pay in bitcoin?"]
    assert (bitcoin.count, bitcoin.low_score, bitcoin.unhelpful, bitcoin.best_score) == (2, 2, 0, 0.61)
    assert dict(bitcoin.variants) == {"Can I pay in bitcoin?": 1, "Can I pay with bitcoin?": 1}
    assert gaps["Reset password how?"].unhelpful == 1 and gaps["Reset password how?"].low_score == 0
    assert gaps['=HYPERLINK("https://evil.test")'].best_score is None


def test_every_app_and_one_day(fixture_log):
    assert dashboard_get(app=None, start=START, end=END).total == 12
    assert dashboard_get(app="guide", start=date(2026, 3, 9), end=date(2026, 3, 9)).total == 1
    empty = dashboard_get(app="nothing-here", start=START, end=END)
    assert empty.total == 0 and empty.helpful_rate is None and empty.share(0) is None and len(empty.days) == 7


def test_the_dashboard_takes_four_statements_whatever_the_log(fixture_log, django_assert_num_queries):
    with django_assert_num_queries(4):
        dashboard_get(app="guide", start=START, end=END)
    for i in range(30):
        log(f"Question number {i}", day=1 + i % 7, score=0.5, vec=vector(10 + i))
    with django_assert_num_queries(4):
        board = dashboard_get(app="guide", start=START, end=END)
    assert board.total == 41


@pytest.fixture
def staff_client(client):
    user = get_user_model().objects.create_superuser("boss", password="pw-long-enough")
    client.force_login(user)
    return client


URL = "/admin/oraculo/oraculoquery/dashboard/"


def test_the_page_shows_the_chart_the_numbers_and_links_to_log_rows(fixture_log, staff_client):
    response = staff_client.get(URL, {"app": "guide", "start": "2026-03-01", "end": "2026-03-07"})
    assert response.status_code == 200
    html = response.content.decode()
    assert '<svg xmlns="http://www.w3.org/2000/svg"' in html and "Questions per day" in html
    assert "2026-03-03: 3 questions (1 LLM, 2 extractive, 0 nothing found)" in html
    assert "66.7%" in html and "54.5%" in html
    assert "&quot;https://evil.test&quot;" in html and '=HYPERLINK("https://evil.test")' not in html
    group = response.context["top"][0]
    rows = staff_client.get(group[1])
    assert rows.status_code == 200
    assert rows.context["cl"].result_count == 6
    assert {r.question.strip().lower() for r in rows.context["cl"].result_list} == {
        "how do i reset my password?",
        "reset password how?",
    }
    gap = next(g for g in response.context["gaps"] if g[0].question == "Reset password how?")
    assert staff_client.get(gap[1]).context["cl"].result_count == 1  # the one rated unhelpful


def test_a_group_link_opens_all_its_rows_in_the_period_and_app_in_utc_days(
    fixture_log, staff_client, settings
):
    settings.TIME_ZONE = "Europe/Madrid"
    text = "How much does the Pro plan cost?"
    OraculoQuery.objects.bulk_create(
        OraculoQuery(question=text, app="guide", answer="a", answer_mode=AnswerMode.LLM, top_score=0.9)
        for _ in range(150)
    )
    OraculoQuery.objects.filter(question=text, created_at__gte=datetime(2026, 4, 1, tzinfo=UTC)).update(
        created_at=datetime(2026, 3, 7, 23, 30, tzinfo=UTC)  # 8 March in Madrid, 7 March in UTC
    )
    log(text, day=8, vec=vector(2))
    log(text, day=2, app="shop", vec=vector(2))
    response = staff_client.get(URL, {"app": "guide", "start": "2026-03-01", "end": "2026-03-07"})
    group, url = next(item for item in response.context["top"] if item[0].question == text)
    assert group.count == 152 and len(group.ids) == 100
    assert f">{group.count} rows</a>" in response.content.decode()
    assert staff_client.get(url).context["cl"].result_count == 152


@pytest.mark.parametrize("value", ["1,x", "1,,2", ",".join(["1"] * 201), "1;2"])
def test_a_bad_group_link_is_the_admins_invalid_filter_page(fixture_log, staff_client, value):
    response = staff_client.get("/admin/oraculo/oraculoquery/", {"asked_alike": value})
    assert response.status_code == 302 and response["Location"].endswith("?e=1")


def test_the_page_query_count_is_pinned(fixture_log, staff_client):
    staff_client.get(URL)  # warm the session and content types
    with CaptureQueriesContext(connection) as first:
        staff_client.get(URL, {"app": "guide", "start": "2026-03-01", "end": "2026-03-07"})
    for i in range(30):
        log(f"Question number {i}", day=1 + i % 7, score=0.5, vec=vector(10 + i))
    with CaptureQueriesContext(connection) as second:
        staff_client.get(URL, {"app": "guide", "start": "2026-03-01", "end": "2026-03-07"})
    assert len(first) == len(second) == 7  # session, user, the app list, the dashboard's four statements


def test_csv_export_neutralises_formulas(fixture_log, staff_client):
    response = staff_client.get(
        URL, {"app": "guide", "start": "2026-03-01", "end": "2026-03-07", "format": "csv"}
    )
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    rows = list(csv.reader(io.StringIO(response.content.decode())))
    assert rows[0][:3] == ["section", "day_or_question", "count"]
    assert rows[3][:6] == ["day", "2026-03-03", "3", "1", "2", "0"]
    gap = next(r for r in rows if r[0] == "gap" and "HYPERLINK" in r[1])
    assert gap[1].startswith("'=") and gap[9].startswith("'=")
    assert all(not cell.startswith(("=", "+", "@")) for row in rows for cell in row)


@pytest.mark.parametrize(
    "params",
    [
        {"start": "2026-03-09", "end": "2026-03-01"},
        {"start": "not a date"},
        {"start": "2020-01-01", "end": "2026-01-01"},
        {"app": "x" * 500},
        {"start": "9999-12-30", "end": "9999-12-31"},
        {"app": "a\x00b"},
        {"start": "0001-01-01", "end": "0001-01-02"},
        {"end": "2026-02-30"},
    ],
)
def test_bad_ranges_are_a_400_not_a_500(staff_client, params):
    assert staff_client.get(URL, params).status_code == 400


def test_staff_without_the_view_permission_cannot_see_it(client):
    user = get_user_model().objects.create_user("clerk", password="pw-long-enough", is_staff=True)
    client.force_login(user)
    assert client.get(URL).status_code == 403
    client.logout()
    assert client.get(URL).status_code == 302  # to the admin login
