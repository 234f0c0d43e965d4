"""Selectors for the gaps dashboard: what was asked, how it was answered, and what the docs are missing.

Reads may go to a replica (`replica_reads`), like the admin's other list pages. A fixed number of statements
whatever the log's size (the day series, the top question texts, the gap texts, their vectors); the grouping
of near-duplicates runs in Python on at most a few hundred representatives, one stored query vector per
distinct text, so the page stays fast at 100,000 logged questions.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta

import numpy as np
from django.conf import settings
from django.db.models import Q, QuerySet, Subquery
from django.db.models.functions import Lower, Trim

from config.replicas import read_connection, replica_reads
from oraculo.evaluation.export import spreadsheet_safe
from oraculo.models import OraculoQuery

TEXT_GROUPS = 200  # distinct question texts considered per list, before near-duplicates are merged
LINKED_IDS = 100  # newest log rows listed per group in the CSV (the count is the full count)


@dataclass
class Day:
    day: date
    total: int = 0
    llm: int = 0
    extractive: int = 0
    nothing: int = 0


@dataclass
class QuestionGroup:
    """Near-duplicate questions: the most asked text first, with how often each was asked."""

    question: str
    count: int
    variants: list[tuple[str, int]] = field(default_factory=list)
    ids: list[int] = field(default_factory=list)
    text_ids: list[int] = field(default_factory=list)  # one row per variant: `asked_alike` finds all of them
    low_score: int = 0
    unhelpful: int = 0
    best_score: float | None = None


@dataclass
class Dashboard:
    app: str | None
    start: date
    end: date
    days: list[Day]
    total: int
    llm: int
    extractive: int
    nothing: int
    rated: int
    helpful: int
    top: list[QuestionGroup]
    gaps: list[QuestionGroup]
    gap_score: float

    def share(self, part: int) -> float | None:
        return round(100 * part / self.total, 1) if self.total else None

    @property
    def helpful_rate(self) -> float | None:
        return round(100 * self.helpful / self.rated, 1) if self.rated else None


def dashboard_bounds(start: date, end: date) -> tuple[datetime, datetime]:
    """The period's first and last instants, end excluded: UTC days, `end` included."""
    return (
        datetime.combine(start, time.min, tzinfo=UTC),
        datetime.combine(end + timedelta(days=1), time.min, tzinfo=UTC),
    )


def _where(app: str | None, start: date, end: date) -> tuple[str, list]:
    since, until = dashboard_bounds(start, end)
    sql, params = "created_at >= %s AND created_at < %s", [since, until]
    if app:
        sql, params = sql + " AND app = %s", [*params, app]
    return sql, params


DAYS_SQL = """
SELECT (created_at AT TIME ZONE 'UTC')::date AS day, count(*),
       count(*) FILTER (WHERE answer_mode = 'llm'),
       count(*) FILTER (WHERE answer_mode <> 'llm' AND top_score IS NOT NULL),
       count(*) FILTER (WHERE top_score IS NULL),
       count(helpful), count(*) FILTER (WHERE helpful)
FROM oraculo_queries WHERE {where} GROUP BY 1 ORDER BY 1
"""

# One row per distinct text (case and surrounding space folded): its count, its newest rows' ids, a row with a
# row whose vector stands for it, and for gaps how many scored low or were rated unhelpful. Shown as its
# commonest spelling.
GROUPS_SQL = """
SELECT btrim(mode() WITHIN GROUP (ORDER BY question)), count(*), (array_agg(id ORDER BY id DESC))[1:{linked}],
       max(id), count(*) FILTER (WHERE top_score IS NULL OR top_score < %s),
       count(*) FILTER (WHERE helpful = false), max(top_score)
FROM oraculo_queries WHERE {where}
GROUP BY lower(btrim(question)) ORDER BY count(*) DESC, lower(btrim(question)) LIMIT {limit}
"""
GAP_FILTER = " AND (top_score IS NULL OR top_score < %s OR helpful = false)"


def _groups(
    rows: list[tuple], vectors: dict[int, np.ndarray], *, similarity: float, limit: int
) -> list[QuestionGroup]:
    """Merge texts whose stored query vectors are at least `similarity` apart in cosine, most asked first."""
    groups: list[QuestionGroup] = []
    anchors: list[np.ndarray | None] = []
    for question, count, ids, vector_id, low, unhelpful, best in rows:
        vector = vectors.get(vector_id)
        target = None
        if vector is not None:
            for i, anchor in enumerate(anchors):
                if anchor is not None and float(anchor @ vector) >= similarity:
                    target = groups[i]
                    break
        if target is None:
            groups.append(QuestionGroup(question=question, count=0))
            anchors.append(vector)
            target = groups[-1]
        target.count += count
        target.variants.append((question, count))
        target.ids = (target.ids + list(ids))[:LINKED_IDS]
        target.text_ids.append(vector_id)
        target.low_score += low
        target.unhelpful += unhelpful
        if best is not None:
            target.best_score = best if target.best_score is None else max(target.best_score, best)
    groups.sort(key=lambda g: (-g.count, g.question))
    return groups[:limit]


def _vectors(cursor, ids: set[int]) -> dict[int, np.ndarray]:
    if not ids:
        return {}
    cursor.execute(
        "SELECT query_id, embedding::text FROM oraculo_query_vectors WHERE query_id = ANY(%s)", [sorted(ids)]
    )
    out = {}
    for pk, text in cursor.fetchall():
        vector = np.array([float(x) for x in text.strip("[]").split(",")], dtype=np.float32)
        norm = float(np.linalg.norm(vector))
        if norm:
            out[pk] = vector / norm
    return out


@replica_reads()
def dashboard_get(*, app: str | None, start: date, end: date, limit: int = 20) -> Dashboard:
    """The dashboard of `app` (every app when None) from `start` to `end` (UTC days, both included), in four
    statements."""
    gap_score = float(settings.DASHBOARD_GAP_SCORE)
    similarity = float(settings.DASHBOARD_DUPLICATE_SIMILARITY)
    where, params = _where(app, start, end)
    with read_connection(OraculoQuery).cursor() as cursor:
        cursor.execute(DAYS_SQL.format(where=where), params)
        rows = cursor.fetchall()
        groups_sql = GROUPS_SQL.format(linked=LINKED_IDS, limit=TEXT_GROUPS, where=where)
        cursor.execute(groups_sql, [gap_score, *params])
        top_rows = cursor.fetchall()
        cursor.execute(
            GROUPS_SQL.format(linked=LINKED_IDS, limit=TEXT_GROUPS, where=where + GAP_FILTER),
            [gap_score, *params, gap_score],
        )
        gap_rows = cursor.fetchall()
        vectors = _vectors(cursor, {r[3] for r in top_rows + gap_rows if r[3] is not None})
    by_day = {r[0]: r for r in rows}
    days, day = [], start
    while day <= end:
        r = by_day.get(day)
        days.append(Day(day, *(r[1:5] if r else ())))
        day += timedelta(days=1)
    return Dashboard(
        app=app,
        start=start,
        end=end,
        days=days,
        total=sum(r[1] for r in rows),
        llm=sum(r[2] for r in rows),
        extractive=sum(r[3] for r in rows),
        nothing=sum(r[4] for r in rows),
        rated=sum(r[5] for r in rows),
        helpful=sum(r[6] for r in rows),
        gap_score=gap_score,
        top=_groups(top_rows, vectors, similarity=similarity, limit=limit),
        gaps=_groups(gap_rows, vectors, similarity=similarity, limit=limit),
    )


def asked_alike(
    queryset: QuerySet[OraculoQuery], *, row_ids: Sequence[int], gaps: bool = False
) -> QuerySet[OraculoQuery]:
    """The rows of `queryset` asked in the words of one of `row_ids` (case and surrounding space folded, as the
    dashboard groups them): a group's log rows, however many; with `gaps`, only those it counts as gaps."""
    folded = Lower(Trim("question"))
    texts = OraculoQuery.objects.filter(pk__in=row_ids).annotate(folded=folded).values("folded")
    rows = queryset.alias(folded=folded).filter(folded__in=Subquery(texts))
    if gaps:  # GAP_FILTER's condition
        low = settings.DASHBOARD_GAP_SCORE
        rows = rows.filter(Q(top_score__isnull=True) | Q(top_score__lt=low) | Q(helpful=False))
    return rows


@replica_reads()
def dashboard_apps() -> list[str]:
    """The apps that have logged questions, for the page's app filter."""
    with read_connection(OraculoQuery).cursor() as cursor:
        cursor.execute("SELECT DISTINCT app FROM oraculo_queries ORDER BY app")
        return [r[0] for r in cursor.fetchall()]


def dashboard_csv(dashboard: Dashboard) -> str:
    """The day series, the top questions and the gaps in one sheet; no cell can be a formula."""
    out = io.StringIO()
    writer = csv.writer(out)

    def row(*cells) -> None:
        writer.writerow([spreadsheet_safe(c) for c in cells])

    row(
        "section",
        "day_or_question",
        "count",
        "llm",
        "extractive",
        "nothing_found",
        "low_score",
        "unhelpful",
        "best_score",
        "variants",
        "log_ids",
    )
    for d in dashboard.days:
        row("day", d.day.isoformat(), d.total, d.llm, d.extractive, d.nothing, "", "", "", "", "")
    for section, groups in (("top", dashboard.top), ("gap", dashboard.gaps)):
        for g in groups:
            variants = " | ".join(f"{q} ({n})" for q, n in g.variants)
            row(
                section,
                g.question,
                g.count,
                "",
                "",
                "",
                g.low_score,
                g.unhelpful,
                "" if g.best_score is None else round(g.best_score, 4),
                variants,
                " ".join(map(str, g.ids)),
            )
    return out.getvalue()
