"""The read-replica router against two real PostgreSQL servers: the embedded primary and a streaming standby of it
(tests/pgreplica.py). Pausing the standby's WAL replay makes it deterministically stale, so a test can tell which
server answered a read by whether a row written on the primary is visible."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.contrib.auth import get_user_model
from django.db import DEFAULT_DB_ALIAS, connections, transaction
from django.test import RequestFactory
from django.test.utils import CaptureQueriesContext
from django_tasks import task
from rest_framework.authtoken.models import Token

from biblioteca.ingest import document_ingest
from biblioteca.models import Chunk
from biblioteca.retrieval import retrieve
from config.replicas import PrimaryPinningMiddleware, fresh_run, read_alias, replica_reads, statement_writes
from oraculo.models import OraculoQuery
from tests.pgreplica import StreamingReplica, start_streaming_replica

REPLICA = "replica_test"
pytestmark = pytest.mark.django_db(transaction=True, databases=[DEFAULT_DB_ALIAS, REPLICA])

DOC = """# Moon base

The moon base airlock code is changed every {n} days by the quartermaster.
"""
QUESTION = "How often is the moon base airlock code changed?"


@pytest.fixture(scope="module", autouse=True)
def streaming_replica(django_db_setup, django_db_blocker) -> StreamingReplica:
    """A standby of the embedded server, registered as the `replica_test` database (the test database's name)."""
    if os.environ.get("DATABASE_URL"):
        pytest.skip("the replica is made from the embedded server; DATABASE_URL points elsewhere")
    primary_pgdata = Path(os.environ.get("EMBEDDED_PGDATA") or django_settings.VAR_DIR / "pgdata").resolve()
    replica = start_streaming_replica(
        primary_pgdata=primary_pgdata,
        replica_pgdata=(django_settings.VAR_DIR / f"pgreplica-{os.getpid()}").resolve(),
    )
    primary = connections[DEFAULT_DB_ALIAS].settings_dict
    # A read that waits on the standby (a lock its paused replay still holds) fails after 30 s instead of
    # hanging the suite.
    options = {
        **primary["OPTIONS"],
        "host": replica.socket_dir,
        "options": f"{primary['OPTIONS'].get('options', '')} -c statement_timeout=30000".strip(),
    }
    connections.settings[REPLICA] = {
        **primary,
        "HOST": "",
        "PORT": "",
        "OPTIONS": options,
        "TEST": {**primary["TEST"], "MIRROR": DEFAULT_DB_ALIAS},
    }
    try:
        yield replica
    finally:
        connections[REPLICA].close()
        del connections[REPLICA]
        del connections.settings[REPLICA]
        replica.remove()


@pytest.fixture
def replica(streaming_replica, settings) -> StreamingReplica:
    settings.DATABASE_REPLICAS = [REPLICA]
    streaming_replica.resume_replay()
    yield streaming_replica
    streaming_replica.resume_replay()


def ingest(app: str, n: int = 30) -> None:
    result = document_ingest(source_path="moon.md", content=DOC.format(n=n), app=app, source_type="en")
    assert result.status != "failed", result


def found(app: str) -> bool:
    return bool(retrieve(QUESTION, top_k=1, trim=True, filters={"app": app}).chunks)


def test_statements_that_write_are_told_from_reads():
    reads = [
        "SELECT 1",
        "  select * from t",
        "(SELECT 1) UNION (SELECT 2)",
        "SET LOCAL hnsw.ef_search = 100",
        "SAVEPOINT s1",
        "RELEASE SAVEPOINT s1",
        "WITH q AS (SELECT 1) SELECT * FROM q",
        "SHOW hnsw.ef_search",
    ]
    writes = [
        "INSERT INTO t VALUES (1)",
        "update t set x = 1",
        "DELETE FROM t",
        "TRUNCATE t",
        "CREATE TABLE t ()",
        "COPY t FROM STDIN",
        "WITH gone AS (DELETE FROM t RETURNING id) SELECT count(*) FROM gone",
        "ALTER TABLE t ADD x int",
        "VACUUM t",
        "",
    ]
    assert [statement_writes(s) for s in reads] == [False] * len(reads)
    assert [statement_writes(s) for s in writes] == [True] * len(writes)


def test_without_replicas_everything_reads_the_primary(streaming_replica, settings):
    settings.DATABASE_REPLICAS = []
    with fresh_run(), replica_reads():
        assert read_alias() == DEFAULT_DB_ALIAS and Chunk.objects.all().db == DEFAULT_DB_ALIAS


def test_searches_read_the_replica_and_writes_go_to_the_primary(replica):
    with fresh_run():
        ingest("moon-a")
    replica.wait_until_replayed()
    with (
        fresh_run(),
        CaptureQueriesContext(connections[REPLICA]) as on_replica,
        CaptureQueriesContext(connections[DEFAULT_DB_ALIAS]) as on_primary,
    ):
        assert found("moon-a")
        assert Chunk.objects.all().db == DEFAULT_DB_ALIAS, "outside replica_reads() reads stay on the primary"
        ingest("moon-a-more", n=40)
    assert any("<=>" in q["sql"] for q in on_replica.captured_queries), "the vector search ran on the replica"
    assert any("biblioteca_sentence" in q["sql"] for q in on_replica.captured_queries)
    assert not any("<=>" in q["sql"] for q in on_primary.captured_queries)
    assert any(q["sql"].startswith("INSERT") for q in on_primary.captured_queries)
    assert not any(q["sql"].startswith("INSERT") for q in on_replica.captured_queries)


def test_a_stale_replica_is_what_an_unpinned_run_reads(replica):
    """The control for the pinning tests below: a run that has not written reads the replica, stale or not."""
    replica.pause_replay()
    with fresh_run():
        ingest("moon-b")
    with fresh_run():
        assert not found("moon-b"), "the paused replica has not replayed the ingest"
    replica.resume_replay()
    replica.wait_until_replayed()
    with fresh_run():
        assert found("moon-b")


def test_a_run_that_wrote_reads_its_own_writes_from_the_primary(replica):
    replica.pause_replay()
    with fresh_run() as run:
        with replica_reads():
            assert read_alias() == REPLICA
        ingest("moon-c")
        assert run.wrote
        assert found("moon-c"), "an ask right after an ingest in the same run sees the new rows"
        with replica_reads():
            assert read_alias() == DEFAULT_DB_ALIAS


def test_a_raw_sql_write_pins_the_run_too(replica):
    with fresh_run() as run:
        with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
            cursor.execute("SELECT count(*) FROM biblioteca_chunk")
        assert not run.wrote
        with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
            cursor.execute("UPDATE biblioteca_document SET title = title WHERE false")
        assert run.wrote


def test_everything_in_a_transaction_reads_the_primary(replica):
    replica.pause_replay()
    with fresh_run(), transaction.atomic(), replica_reads():
        assert read_alias() == DEFAULT_DB_ALIAS
    with fresh_run(), transaction.atomic():
        ingest("moon-d")
        assert found("moon-d")


def test_each_request_starts_unpinned_and_pins_itself_when_it_writes(replica):
    """The middleware with a view that ingests then searches; a second request, read-only, reads the replica
    again even though the first one wrote."""
    replica.pause_replay()

    def ingest_then_search(request):
        from django.http import JsonResponse

        ingest("moon-e")
        return JsonResponse({"found": found("moon-e")})

    def search_only(request):
        from django.http import JsonResponse

        return JsonResponse({"found": found("moon-e"), "alias": _alias_in_scope()})

    factory = RequestFactory()
    assert PrimaryPinningMiddleware(ingest_then_search)(factory.post("/")).content == b'{"found": true}'
    assert PrimaryPinningMiddleware(search_only)(factory.get("/")).content == (
        b'{"found": false, "alias": "%s"}' % REPLICA.encode()
    )


def _alias_in_scope() -> str:
    with replica_reads():
        return read_alias()


def test_the_search_api_reads_the_replica_even_after_the_caller_wrote(replica, client):
    replica.pause_replay()
    user = get_user_model().objects.create_user("staff-replica", is_staff=True)
    token = Token.objects.create(user=user)
    ingest("moon-f")
    body = {"query": QUESTION, "top_k": 1, "app": "moon-f"}
    response = client.post(
        "/api/v1/search", body, content_type="application/json", HTTP_AUTHORIZATION=f"Token {token.key}"
    )
    assert response.status_code == 200 and response.json()["chunks"] == []
    replica.resume_replay()
    replica.wait_until_replayed()
    response = client.post(
        "/api/v1/search", body, content_type="application/json", HTTP_AUTHORIZATION=f"Token {token.key}"
    )
    assert len(response.json()["chunks"]) == 1


def test_the_dashboard_list_reads_the_replica(replica, client):
    admin = get_user_model().objects.create_user("admin-replica", is_staff=True, is_superuser=True)
    client.force_login(admin)
    replica.wait_until_replayed()
    replica.pause_replay()
    OraculoQuery.objects.create(
        question="Where is the moon base airlock?", answer="-", answer_mode="extractive"
    )
    page = client.get("/admin/oraculo/oraculoquery/")
    assert page.status_code == 200 and "moon base airlock" not in page.content.decode()
    replica.resume_replay()
    replica.wait_until_replayed()
    assert "moon base airlock" in client.get("/admin/oraculo/oraculoquery/").content.decode()


def test_the_questions_and_gaps_page_reads_the_replica(replica, client):
    admin = get_user_model().objects.create_user("gaps-replica", is_staff=True, is_superuser=True)
    client.force_login(admin)
    replica.wait_until_replayed()
    replica.pause_replay()
    OraculoQuery.objects.create(question="Where is the moon base airlock?", answer="-", app="moon")
    page = client.get("/admin/oraculo/oraculoquery/dashboard/", {"app": "moon"})
    assert page.status_code == 200 and page.context["board"].total == 0 and "moon" not in page.context["apps"]
    replica.resume_replay()
    replica.wait_until_replayed()
    page = client.get("/admin/oraculo/oraculoquery/dashboard/", {"app": "moon"})
    assert page.context["board"].total == 1 and "moon" in page.context["apps"]


seen_by_task: list[tuple[str, str]] = []


@task()
def probe_task() -> None:
    """Where a task run reads, before and after it writes."""
    before = _alias_in_scope()
    OraculoQuery.objects.create(question="probe", answer="-", answer_mode="extractive")
    seen_by_task.append((before, _alias_in_scope()))


def test_each_worker_task_starts_unpinned_and_pins_itself_when_it_writes(replica, monkeypatch):
    from tests.oraculo.evaluation.test_worker import run_worker

    seen_by_task.clear()
    probe_task.enqueue()
    probe_task.enqueue()
    run_worker(monkeypatch)
    assert seen_by_task == [(REPLICA, DEFAULT_DB_ALIAS)] * 2
