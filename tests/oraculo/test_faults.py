"""Faults, with real components: an embeddings server that answers garbage, the database connection lost in the
middle of a request (a real server process, its PostgreSQL reached through a TCP proxy that the test cuts: the
proxy stands in for stopping the database, which would take the suite's own with it), and an evaluation
worker process killed in the middle of a run."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.db import connection
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from oraculo.models import EvalResult, EvalRun, OraculoQuery, WidgetKey
from tests.conftest import free_port, wait_for_port
from tests.oraculo.fake_llm import MODEL

ROOT = Path(__file__).resolve().parents[2]
QUESTION = "How do I reset my password?"


# --- the embedder raising anything: 503 on ask and search -------------------------------------------------


class GarbageEmbeddings:
    """An OpenAI-compatible /v1/embeddings server that answers 200 with something that is not embeddings."""

    BODIES = {
        "null data": {"object": "list", "data": None},
        "text vectors": {
            "object": "list",
            "data": [{"object": "embedding", "index": 0, "embedding": ["not", "numbers"]}],
        },
        "not json": "<html>502 Bad Gateway</html>",
    }

    def __init__(self) -> None:
        self.kind = "null data"
        garbage = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                body = garbage.BODIES[garbage.kind]
                data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"


@pytest.fixture(scope="module")
def garbage_embeddings():
    server = GarbageEmbeddings()
    yield server
    server.server.shutdown()
    server.server.server_close()


@pytest.mark.django_db
@pytest.mark.parametrize("kind", list(GarbageEmbeddings.BODIES))
def test_an_embedder_answering_garbage_is_a_503_on_ask_and_search(
    kind, garbage_embeddings, settings, library
):
    garbage_embeddings.kind = kind
    settings.EMBEDDING_BACKEND = "openai"
    settings.EMBEDDING_MODEL = "garbage"
    settings.EMBEDDING_BASE_URL = garbage_embeddings.base_url
    settings.EMBEDDING_MAX_RETRIES = 0
    key = WidgetKey.objects.create(name="site", app=library)
    ask = APIClient().post("/api/v1/ask", {"question": QUESTION}, format="json", HTTP_X_WIDGET_KEY=key.key)
    staff = APIClient()
    staff.force_authenticate(User.objects.create_user("staff", is_staff=True))
    search = staff.post("/api/v1/search", {"query": QUESTION}, format="json")
    for response in (ask, search):
        assert response.status_code == 503, (kind, response.content)
        assert response.json() == {"detail": "The embedding model is unavailable. Try again shortly."}
    assert not OraculoQuery.objects.exists()


# --- real processes on the suite's database -----------------------------------------------------------------


class PgProxy:
    """A TCP proxy on 127.0.0.1 to the embedded PostgreSQL's Unix socket. `cut()` drops every open connection
    and refuses new ones, as a stopped server does; `restore()` accepts them again."""

    def __init__(self, socket_path: str) -> None:
        self.socket_path, self.refusing, self.live = socket_path, False, set()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if self.refusing:
                client.close()
                continue
            upstream = socket.socket(socket.AF_UNIX)
            upstream.connect(self.socket_path)
            with self.lock:
                self.live |= {client, upstream}
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    def _pump(self, source: socket.socket, target: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                target.sendall(data)
        except OSError:
            pass
        finally:
            for s in (source, target):
                self._close(s)

    def _close(self, s: socket.socket) -> None:
        with self.lock:
            self.live.discard(s)
        with contextlib.suppress(OSError):
            s.shutdown(socket.SHUT_RDWR)
        s.close()

    def cut(self) -> None:
        self.refusing = True
        for s in list(self.live):
            self._close(s)

    def restore(self) -> None:
        self.refusing = False

    def stop(self) -> None:
        self.cut()
        self.listener.close()


@pytest.fixture
def db_proxy(django_db_setup, django_db_blocker):
    """The proxy, and the URL of the suite's (test) database through it, for a server or worker process."""
    with django_db_blocker.unblock():
        params = connection.settings_dict
        host = params["HOST"] or params["OPTIONS"].get("host")
        port = params["PORT"] or 5432
        proxy = PgProxy(f"{host}/.s.PGSQL.{port}")
        url = f"postgres://{params['USER']}@127.0.0.1:{proxy.port}/{params['NAME']}"
    yield proxy, url
    proxy.stop()


def process_env(database_url: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "EMBEDDING_", "DJANGO_"))}
    return env | {
        "DATABASE_URL": database_url,
        "DEBUG": "false",
        "SECRET_KEY": "fault-tests-" + "x" * 40,
        "ALLOWED_HOSTS": "127.0.0.1",
        "SECURE_SSL_REDIRECT": "false",
        "NUM_PROXIES": "0",
        "CONN_MAX_AGE": "60",
        "DATABASE_CONNECT_TIMEOUT": "2",
        **extra,
    }


def post(port: int, path: str, body: dict, token: str) -> tuple[int, dict]:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "Authorization": f"Token {token}"},
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


@pytest.fixture
def committed(library, django_db_blocker):
    """Rows the other processes can see (committed), deleted afterwards. The library is ingested again first:
    these tests use no transaction, so pytest-django runs them after the transactional ones, whose flush
    empties the tables (ingesting unchanged files costs nothing when the library is still there)."""
    from biblioteca.ingest import directory_ingest
    from tests.conftest import FIXTURE_DOCS

    with django_db_blocker.unblock():
        for lang in ("en", "es"):
            directory_ingest(
                paths=[FIXTURE_DOCS / lang],
                app=library,
                source_type=lang,
                url_prefix=f"https://docs.example.com/{lang}",
            )
    made: list = []

    def make(factory):
        with django_db_blocker.unblock():
            made.append(factory())
        return made[-1]

    yield make
    with django_db_blocker.unblock():
        OraculoQuery.objects.all().delete()
        EvalRun.objects.all().delete()
        for obj in reversed(made):
            type(obj).objects.filter(pk=obj.pk).delete()


def test_database_lost_mid_request_is_a_json_503_and_the_next_request_succeeds(
    db_proxy, committed, fake_llm_server, library, django_db_blocker
):
    proxy, url = db_proxy
    user = committed(lambda: User.objects.create_user("fault-robot"))
    token = committed(lambda: Token.objects.create(user=user)).key
    fake_llm_server.reset("ok")
    port = free_port()
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "config.wsgi",
            "-w",
            "1",
            "-b",
            f"127.0.0.1:{port}",
            "--timeout",
            "60",
        ],
        cwd=ROOT,
        env=process_env(
            url, LLM_BASE_URL=fake_llm_server.base_url, LLM_MODEL=MODEL, LLM_API_KEY="k", LLM_TIMEOUT="10"
        ),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        wait_for_port(port, process=server, timeout=60)
        body = {"question": QUESTION, "app": library}
        assert post(port, "/api/v1/ask", body, token)[0] == 200

        fake_llm_server.on_request = proxy.cut  # the database goes away while the LLM writes the answer
        status, answer = post(port, "/api/v1/ask", body, token)
        assert (status, answer) == (503, {"detail": "The database is unavailable. Try again shortly."})
        assert fake_llm_server.requests, "the request never got as far as the LLM"
        assert post(port, "/api/v1/ask", body, token)[0] == 503  # still down: refused at once

        proxy.restore()
        status, answer = post(port, "/api/v1/ask", body, token)
        assert status == 200 and answer["answer_mode"] == "llm"
        with django_db_blocker.unblock():
            assert OraculoQuery.objects.filter(pk=answer["query_id"]).exists()
    finally:
        server.terminate()
        server.wait(20)


def test_a_worker_killed_mid_run_leaves_a_run_that_completes_once(
    db_proxy, committed, fake_llm_server, library, django_db_blocker
):
    """The first worker is killed (SIGKILL) after its first question; a second worker, started later, runs the
    watchdog task the claim deferred, which queues the silent run again, and completes it: every question has
    exactly one result, from the attempt that finished."""
    from oraculo.evaluation.params import eval_params_build
    from oraculo.evaluation.questions import LabelledQuestion
    from oraculo.evaluation.services import eval_run_create

    _, url = db_proxy
    questions = [
        LabelledQuestion(q)
        for q in (
            QUESTION,
            "When are invoices sent?",
            "How do I delete my account?",
            "How long is a reset link valid?",
        )
    ]
    run = committed(
        lambda: eval_run_create(questions=questions, params=eval_params_build(app=library, synthesize=True))
    )
    fake_llm_server.reset(
        "slow"
    )  # each answer waits for LLM_TIMEOUT: the first worker is slow enough to kill
    env = process_env(
        url,
        LLM_BASE_URL=fake_llm_server.base_url,
        LLM_MODEL=MODEL,
        LLM_API_KEY="k",
        LLM_TIMEOUT="1",
        LLM_MAX_RETRIES="0",
        EVAL_STALLED_AFTER="2",
    )
    worker = [sys.executable, "manage.py", "db_worker", "--interval", "0.2", "--no-startup-delay"]
    first = subprocess.Popen(worker, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    second = None
    try:
        deadline = time.monotonic() + 90
        with django_db_blocker.unblock():
            while EvalRun.objects.get(pk=run.pk).progress < 1:
                assert time.monotonic() < deadline and first.poll() is None, (
                    "the first worker never progressed"
                )
                time.sleep(0.1)
        first.send_signal(signal.SIGKILL)
        first.wait(10)
        with django_db_blocker.unblock():
            killed = EvalRun.objects.get(pk=run.pk)
        assert killed.status == EvalRun.Status.RUNNING and killed.attempt == 1

        fake_llm_server.reset("ok")
        second = subprocess.Popen(
            worker, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        with django_db_blocker.unblock():
            while EvalRun.objects.get(pk=run.pk).status != EvalRun.Status.DONE:
                assert time.monotonic() < deadline and second.poll() is None, "the run was never completed"
                time.sleep(0.2)
            done = EvalRun.objects.get(pk=run.pk)
            rows = list(EvalResult.objects.filter(run=done).order_by("position"))
        assert done.attempt == 3 and done.progress == done.total == len(questions) and not done.error
        assert [r.position for r in rows] == [1, 2, 3, 4]
        assert all(set(r.variants) == {"baseline", "trim"} and not r.error for r in rows)
        assert all(r.variants["trim"]["answer"].startswith("According to") for r in rows)
    finally:
        for process in (first, second):
            if process is not None and process.poll() is None:
                process.terminate()
                process.wait(20)
