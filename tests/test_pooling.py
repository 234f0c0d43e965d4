"""Connection pooling: Django's psycopg pool in a real gunicorn serving asks and searches, and the search's
pgvector settings kept inside its own transaction (what PgBouncer in transaction mode needs)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.error import HTTPError
from urllib.request import Request, urlopen

import psycopg
import pytest
from django.conf import settings as django_settings
from django.contrib.auth import get_user_model
from django.core.exceptions import ImproperlyConfigured
from django.db import DEFAULT_DB_ALIAS, connections
from django.test.utils import CaptureQueriesContext
from rest_framework.authtoken.models import Token

from biblioteca.embeddings import get_embedder
from biblioteca.ingest import document_ingest
from biblioteca.selectors import chunk_search
from biblioteca.vector_session import vector_search_session
from config.database import connection_settings, replica_databases
from tests.conftest import free_port, wait_for_port

DOC = "# Lighthouse\n\nThe lighthouse lamp is cleaned every Tuesday by the keeper.\n"
QUESTION = "When is the lighthouse lamp cleaned?"


def show_ef_search() -> str:
    """The connection's value; pgvector registers the setting when its library loads, so load it first."""
    with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
        cursor.execute("SELECT '[1]'::vector")
        cursor.execute("SHOW hnsw.ef_search")
        return cursor.fetchone()[0]


def test_the_pool_settings_make_a_pooled_entry_without_persistent_connections():
    pooled = connection_settings(
        url_config={"NAME": "x"},
        conn_max_age=60,
        connect_timeout=5,
        pool={"min_size": 2, "max_size": 8, "timeout": 3.0},
        disable_server_side_cursors=True,
    )
    assert pooled["OPTIONS"]["pool"] == {"min_size": 2, "max_size": 8, "timeout": 3.0}
    assert pooled["CONN_MAX_AGE"] == 0, "Django refuses persistent connections with its pool"
    assert pooled["DISABLE_SERVER_SIDE_CURSORS"] is True
    plain = connection_settings(
        url_config={"NAME": "x"},
        conn_max_age=60,
        connect_timeout=5,
        pool=None,
        disable_server_side_cursors=False,
    )
    assert "pool" not in plain["OPTIONS"] and plain["CONN_MAX_AGE"] == 60
    replicas = replica_databases(
        urls=["postgres://u@r1/db", " ", "postgres://u@r2:6432/db"],
        conn_max_age=60,
        connect_timeout=5,
        pool=None,
        disable_server_side_cursors=True,
    )
    assert list(replicas) == ["replica_1", "replica_2"]
    assert (replicas["replica_2"]["HOST"], replicas["replica_2"]["PORT"]) == ("r2", 6432)
    assert replicas["replica_1"]["TEST"]["MIRROR"] == "default"


@pytest.mark.django_db(transaction=True)
def test_ef_search_is_set_locally_inside_the_search_transaction_and_never_leaks(settings):
    settings.RETRIEVAL_EF_SEARCH = 64
    assert show_ef_search() == "40"
    with vector_search_session(alias=DEFAULT_DB_ALIAS, iterative=False):
        assert connections[DEFAULT_DB_ALIAS].in_atomic_block and show_ef_search() == "64"
    assert show_ef_search() == "40", "the connection goes back to a pool as it came"
    document_ingest(source_path="lighthouse.md", content=DOC, app="pool-ef", source_type="en")
    with CaptureQueriesContext(connections[DEFAULT_DB_ALIAS]) as queries:
        hits = chunk_search(query_vector=get_embedder().embed_query(QUESTION), top_k=1, app="pool-ef")
    assert hits and "lamp" in hits[0].text
    statements = [q["sql"] for q in queries.captured_queries]
    begin = statements.index("BEGIN")
    assert statements[begin + 1] == (
        "SELECT set_config('hnsw.ef_search', '64', true), set_config('hnsw.iterative_scan', 'strict_order', true)"
    ), "both in one round trip"
    assert "<=>" in statements[begin + 2] and statements[begin + 3] == "COMMIT"
    assert show_ef_search() == "40"


@pytest.mark.django_db(transaction=True)
def test_without_ef_search_an_unfiltered_search_opens_no_transaction(settings):
    settings.RETRIEVAL_EF_SEARCH = 0
    with CaptureQueriesContext(connections[DEFAULT_DB_ALIAS]) as queries:
        chunk_search(query_vector=get_embedder().embed_query(QUESTION), top_k=1)
    assert not any(q["sql"].startswith("SET") for q in queries.captured_queries)


def post(url: str, body: dict, token: str) -> tuple[int, dict]:
    request = Request(
        url,
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Content-Type": "application/json", "Authorization": f"Token {token}"},
    )
    try:
        with urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except HTTPError as exc:
        return exc.code, {"error": exc.read().decode(errors="replace")}


def pooled_connections(dsn: str, application_name: str) -> int:
    with psycopg.connect(dsn, autocommit=True) as conn:
        return conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", [application_name]
        ).fetchone()[0]


@pytest.mark.django_db(transaction=True)
def test_gunicorn_with_the_pool_on_answers_concurrent_asks_and_searches():
    """A real gunicorn (one process, eight threads) with DATABASE_POOL on, server-side cursors off and ef_search
    set, against the test database. The pool is seen from PostgreSQL: its minimum of three connections opens
    on the first request (persistent connections would be one, for the one thread that served it), and
    twenty-four requests from eight clients never use more than its maximum of four."""
    document_ingest(source_path="lighthouse.md", content=DOC, app="pool-app", source_type="en")
    user = get_user_model().objects.create_user("pool-staff", is_staff=True)
    token = Token.objects.create(user=user).key
    primary = connections[DEFAULT_DB_ALIAS].settings_dict
    socket_dir = primary["OPTIONS"].get("host") or primary["HOST"]
    if not socket_dir or primary["PORT"] not in ("", None, 5432, "5432"):
        pytest.skip("the server is pointed at the embedded test database through its socket")
    application_name = f"oraculo-pool-{uuid.uuid4().hex[:8]}"
    dsn = f"host={socket_dir} user={primary['USER']} dbname={primary['NAME']}"
    port = free_port()
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DATABASE_URL": f"postgres://{primary['USER']}@/{primary['NAME']}?host={socket_dir}"
        f"&application_name={application_name}",
        "DATABASE_POOL": "true",
        "DATABASE_POOL_MIN_SIZE": "3",
        "DATABASE_POOL_MAX_SIZE": "4",
        "DATABASE_POOL_TIMEOUT": "20",
        "DATABASE_DISABLE_SERVER_SIDE_CURSORS": "true",
        "RETRIEVAL_EF_SEARCH": "64",
        "LLM_BASE_URL": "",
        "LLM_MODEL": "",
        "EMBEDDING_THREADS": "1",
    }
    gunicorn = Path(sys.executable).with_name("gunicorn")
    server = subprocess.Popen(
        [
            str(gunicorn),
            "config.wsgi:application",
            "-b",
            f"127.0.0.1:{port}",
            "-w",
            "1",
            "-k",
            "gthread",
            "--threads",
            "8",
            "--timeout",
            "120",
        ],
        cwd=django_settings.BASE_DIR,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        wait_for_port(port, process=server, timeout=60)
        base = f"http://127.0.0.1:{port}/api/v1"
        status, first = post(f"{base}/search", {"query": QUESTION, "top_k": 1, "app": "pool-app"}, token)
        assert status == 200, first
        assert "lamp" in first["chunks"][0]["content"]
        deadline = time.monotonic() + 20
        while pooled_connections(dsn, application_name) < 3 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert 3 <= pooled_connections(dsn, application_name) <= 4, (
            "one request, yet the pool's minimum is open"
        )

        def call(n: int) -> tuple[int, str]:
            if n % 2:
                status, body = post(f"{base}/ask", {"question": QUESTION, "app": "pool-app"}, token)
                return status, str(body.get("answer", body))
            status, body = post(f"{base}/search", {"query": QUESTION, "top_k": 1, "app": "pool-app"}, token)
            return status, body["chunks"][0]["content"] if status == 200 else str(body)

        with ThreadPoolExecutor(8) as threads:
            results = list(threads.map(call, range(24)))
        assert all(status == 200 and "lamp" in text for status, text in results), results
        assert 3 <= pooled_connections(dsn, application_name) <= 4
    finally:
        server.terminate()
        server.wait(20)


@pytest.mark.parametrize(
    "pool",
    [
        {"min_size": -1, "max_size": 8, "timeout": 3.0},
        {"min_size": 0, "max_size": 0, "timeout": 3.0},
        {"min_size": 5, "max_size": 2, "timeout": 3.0},
        {"min_size": 2, "max_size": 8, "timeout": 0},
    ],
)
def test_pool_sizes_psycopg_would_refuse_at_the_first_query_are_refused_with_the_settings(pool):
    with pytest.raises(ImproperlyConfigured, match="DATABASE_POOL_MIN_SIZE"):
        connection_settings(
            url_config={"NAME": "x"},
            conn_max_age=60,
            connect_timeout=5,
            pool=pool,
            disable_server_side_cursors=False,
        )
