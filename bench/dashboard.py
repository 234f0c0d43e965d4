"""The gaps dashboard's page time with a big question log: inserts N logged questions (default 100,000) under a
bench app, spread over 90 days, drawn from a pool of distinct questions that each have a vector, some of them
near-duplicates and some of them gaps; then times the admin page (through Django's test client, as a
superuser: the whole view, template and SVG included) over the last 30 and 90 days, and the question-log page
that the first top question's and the first gap's links open; then removes its rows.

    .venv/bin/python manage.py migrate && .venv/bin/python bench/dashboard.py            # DEBUG on, like make run
    .venv/bin/python bench/dashboard.py --rows 20000 --repeat 3
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _django

APP = "bench-dashboard"
USER = "bench-dashboard-admin"
MAX_ROWS = 500_000


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--questions", type=int, default=3000, help="Distinct question texts in the pool.")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--keep", action="store_true", help="Leave the rows (and the user) in place.")
    args = parser.parse_args(argv)
    if not 1 <= args.rows <= MAX_ROWS or not 1 <= args.repeat <= 20:
        parser.error(f"--rows 1..{MAX_ROWS}, --repeat 1..20")
    _django.setup()

    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.db import connection, reset_queries
    from django.test import Client
    from django.test.utils import override_settings
    from django.utils import timezone

    from oraculo.models import OraculoQuery

    dims = settings.EMBEDDING_DIMENSIONS
    cleanup(APP, USER)
    started = time.perf_counter()
    with connection.cursor() as cursor:
        # The pool: one random vector per text; every 5th text is a near-duplicate of the one before (its
        # spelling differs, its vector is the same).
        cursor.execute("BEGIN")
        cursor.execute(
            """
            CREATE TEMP TABLE bench_pool ON COMMIT DROP AS
            SELECT n, 'Bench question number ' || (n - (n %% 5 = 0)::int) ||
                      CASE WHEN n %% 5 = 0 THEN ', please' ELSE '' END AS question,
                   (SELECT array_agg(random() - 0.5) FROM generate_series(1, %s) g WHERE n > 0)::real[] AS v
            FROM generate_series(1, %s) AS n""",
            [dims, args.questions],
        )
        cursor.execute(
            """UPDATE bench_pool p SET v = q.v FROM bench_pool q WHERE p.n % 5 = 0 AND q.n = p.n - 1"""
        )
        # Rows: a skewed pick from the pool (a few questions asked often), 90 days, a quarter of them gaps.
        cursor.execute(
            """
            INSERT INTO oraculo_queries (question, retrieval_question, app, source_type, answer, answer_mode, chunk_ids, chunk_scores,
                top_score, trimmed, trim_params, tokens_before, tokens_in_context, latency_ms,
                llm_model, llm_error, answer_truncated, page_url, feedback_comment, helpful, created_at, channel)
            SELECT p.question, '', %s, '', 'answer', CASE WHEN r.i %% 3 = 0 THEN 'llm' ELSE 'extractive' END,
                   CASE WHEN r.i %% 20 = 0 THEN '[]'::jsonb ELSE '["doc#1"]'::jsonb END,
                   CASE WHEN r.i %% 20 = 0 THEN '[]'::jsonb ELSE jsonb_build_array(r.score) END,
                   CASE WHEN r.i %% 20 = 0 THEN NULL ELSE r.score END, false, '{}'::jsonb, 100, 100,
                   '{}'::jsonb, '', '', false, '', '',
                   CASE WHEN r.i %% 7 = 0 THEN r.i %% 2 = 0 END,
                   now() - (r.i %% 90) * interval '1 day' - (r.i %% 86400) * interval '1 second', 'widget'
            FROM (SELECT i, 1 + floor(%s * power(random(), 3))::int AS pick,
                         round((0.55 + random() * 0.4)::numeric, 4)::float AS score
                  FROM generate_series(1, %s) AS i) r
            JOIN bench_pool p ON p.n = r.pick""",
            [APP, args.questions, args.rows],
        )
        cursor.execute(
            """
            INSERT INTO oraculo_query_vectors (query_id, embedding)
            SELECT q.id, p.v::vector FROM oraculo_queries q JOIN bench_pool p ON p.question = q.question
            WHERE q.app = %s""",
            [APP],
        )
        cursor.execute("COMMIT")
        cursor.execute("VACUUM ANALYZE oraculo_queries")
        cursor.execute(
            "VACUUM ANALYZE oraculo_query_vectors"
        )  # as autovacuum would, on a log in steady state
    inserted = OraculoQuery.objects.filter(app=APP).count()
    print(
        f"inserted {inserted} logged questions ({args.questions} distinct texts) in "
        f"{time.perf_counter() - started:.1f}s"
    )

    user = get_user_model().objects.create_superuser(USER, password=None)
    client = Client()
    client.force_login(user)
    url = "/admin/oraculo/oraculoquery/dashboard/"
    try:
        with override_settings(ALLOWED_HOSTS=["testserver"], DEBUG=False):
            for days, label in ((30, "last 30 days"), (90, "last 90 days")):
                end = timezone.now().date()
                params = {"app": APP, "start": str(end - timedelta(days=days - 1)), "end": str(end)}
                times = []
                for _ in range(args.repeat + 1):  # the first warms caches and connections
                    reset_queries()
                    t = time.perf_counter()
                    response = client.get(url, params)
                    times.append((time.perf_counter() - t) * 1000)
                    assert response.status_code == 200, response.status_code
                times = times[1:]
                board = response.context_data["board"]
                print(
                    f"{label}: {board.total} questions, page p50 {statistics.median(times):.0f} ms, "
                    f"max {max(times):.0f} ms over {args.repeat} loads ({len(response.content) // 1024} KB)"
                )
                for kind in ("top", "gaps"):
                    group, link = response.context_data[kind][0]
                    link_times = []
                    for _ in range(args.repeat + 1):
                        t = time.perf_counter()
                        rows = client.get(link)
                        link_times.append((time.perf_counter() - t) * 1000)
                        assert rows.status_code == 200, rows.status_code
                    shown = rows.context_data["cl"].result_count
                    print(
                        f"  its first {kind} group's link: {shown} rows (the group counts {group.count}), "
                        f"page p50 {statistics.median(link_times[1:]):.0f} ms"
                    )
    finally:
        if not args.keep:
            cleanup(APP, USER)
    return 0


def cleanup(app: str, user: str) -> None:
    from django.contrib.auth import get_user_model
    from django.db import connection

    from oraculo.models import OraculoQuery

    with connection.cursor() as cursor:  # one statement each, rather than the ORM's cascade in batches
        cursor.execute(
            "DELETE FROM oraculo_query_vectors v USING oraculo_queries q "
            "WHERE q.id = v.query_id AND q.app = %s",
            [app],
        )
    OraculoQuery.objects.filter(app=app).delete()
    get_user_model().objects.filter(username=user).delete()


if __name__ == "__main__":
    sys.exit(main())
