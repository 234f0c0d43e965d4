"""POST /api/v1/ask with `Accept: text/event-stream`: the answer as server-sent events, from the fake
OpenAI-compatible server streaming over real HTTP on 127.0.0.1, including a connection cut mid-answer; and the
stream over real sockets, through Django's development server (as `runserver`) and gunicorn's gthread workers."""

from __future__ import annotations

import http.client
import json
import subprocess
import sys

import pytest
from django.contrib.auth.models import User
from django.db import connection
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from oraculo.answering import CLIENT_LEFT
from oraculo.models import OraculoQuery, WidgetKey
from tests.conftest import free_port, wait_for_port
from tests.oraculo.fake_llm import MODEL
from tests.oraculo.test_faults import ROOT, committed, db_proxy, process_env  # noqa: F401 (fixtures)

ASK = "/api/v1/ask"
ORIGIN = "https://help.example.com"
QUESTION = "How do I reset my password?"
SSE = "text/event-stream"


def parse(raw: bytes) -> list[tuple[str, dict]]:
    events = []
    for block in raw.decode().split("\n\n"):
        if not block.strip():
            continue
        fields = dict(line.split(": ", 1) for line in block.splitlines())
        events.append((fields["event"], json.loads(fields["data"])))
    return events


@pytest.fixture
def widget_key(library) -> WidgetKey:
    return WidgetKey.objects.create(
        name="help site", app=library, allowed_origins=[ORIGIN], rate_limit="100/min"
    )


def stream(client: APIClient, body: dict, key: WidgetKey | None, **headers):
    if key is not None:
        headers["HTTP_X_WIDGET_KEY"] = key.key
    response = client.post(ASK, json.dumps(body), content_type="application/json", HTTP_ACCEPT=SSE, **headers)
    return response


@pytest.mark.django_db
def test_the_answer_streams_as_sources_deltas_and_done(widget_key, fake_llm):
    response = stream(APIClient(), {"question": QUESTION}, widget_key, HTTP_ORIGIN=ORIGIN)
    assert response.status_code == 200 and response.streaming
    assert response["Content-Type"].startswith(SSE) and response["Cache-Control"] == "no-cache"
    assert response["X-Accel-Buffering"] == "no" and response["Access-Control-Allow-Origin"] == ORIGIN
    events = parse(b"".join(response.streaming_content))
    kinds = [kind for kind, _ in events]
    assert kinds[0] == "sources" and kinds[-1] == "done" and set(kinds[1:-1]) == {"delta"} and len(kinds) >= 4
    sources = events[0][1]["sources"]
    assert sources and sources[0]["content"].startswith("[Doc: ") and sources[0]["html"].startswith("<")
    done = events[-1][1]
    streamed = "".join(data["text"] for kind, data in events if kind == "delta")
    assert done["answer"] == streamed.strip() and done["answer_mode"] == "llm" and "[1]" in streamed
    assert done["answer_html"].startswith("<p>") and done["sources"] == sources
    assert set(done["latency_ms"]) == {"embedding", "search", "trim", "llm", "total"}
    row = OraculoQuery.objects.get(pk=done["query_id"])
    assert row.answer == streamed.strip() and row.llm_model == MODEL and not row.llm_error
    assert row.widget_key == widget_key and len(done["feedback_token"]) == 64
    assert fake_llm.requests[-1]["body"]["stream"] is True


@pytest.mark.django_db
def test_a_connection_cut_mid_answer_ends_with_the_extractive_answer_and_is_logged(widget_key, fake_llm):
    fake_llm.reset("cut")
    events = parse(b"".join(stream(APIClient(), {"question": QUESTION}, widget_key).streaming_content))
    deltas = [data["text"] for kind, data in events if kind == "delta"]
    assert len(deltas) == 2  # what the LLM wrote before the cut was shown...
    done = events[-1][1]
    assert (
        events[-1][0] == "done" and done["answer_mode"] == "extractive"
    )  # ...and the final answer replaces it
    assert done["answer"].startswith("[1] ") and "<strong>[1]" in done["answer_html"]
    row = OraculoQuery.objects.get(pk=done["query_id"])
    assert row.answer_mode == "extractive" and "failed" in row.llm_error and row.llm_model == MODEL


@pytest.mark.django_db
def test_a_visitor_who_leaves_mid_answer_is_logged_with_what_was_written(widget_key, fake_llm, monkeypatch):
    fake_llm.reset("gated")  # the first piece, then the LLM waits: the visitor closes the tab meanwhile
    response = stream(APIClient(), {"question": QUESTION}, widget_key)
    chunks = iter(response.streaming_content)
    received = b""
    while b"event: delta" not in received:
        received += next(chunks)
    # Closing the response ends the request, which would close the test's (transaction's) connection.
    monkeypatch.setattr(connection, "close_if_unusable_or_obsolete", lambda: None)
    response.close()  # what the server does when the visitor's connection is gone
    monkeypatch.undo()
    fake_llm.gate.set()
    row = OraculoQuery.objects.get()
    first = [data["text"] for kind, data in parse(received) if kind == "delta"]
    assert row.answer == "".join(first).strip() and row.answer
    assert row.answer_mode == "llm" and row.answer_truncated and row.llm_error == CLIENT_LEFT


@pytest.mark.django_db
@pytest.mark.parametrize("mode", ["error", "slow"])
def test_an_llm_failing_before_the_first_word_streams_the_extractive_answer(widget_key, fake_llm, mode):
    fake_llm.reset(mode)
    events = parse(b"".join(stream(APIClient(), {"question": QUESTION}, widget_key).streaming_content))
    assert [kind for kind, _ in events] == ["sources", "done"]
    assert events[-1][1]["answer_mode"] == "extractive"
    assert OraculoQuery.objects.get(pk=events[-1][1]["query_id"]).llm_error


@pytest.mark.django_db
def test_without_an_llm_the_extractive_answer_streams_as_one_delta(widget_key):
    events = parse(b"".join(stream(APIClient(), {"question": QUESTION}, widget_key).streaming_content))
    assert [kind for kind, _ in events] == ["sources", "delta", "done"]
    assert events[1][1]["text"] == events[2][1]["answer"] and events[2][1]["answer_mode"] == "extractive"


@pytest.mark.django_db
def test_without_the_accept_header_the_answer_is_plain_json(widget_key, fake_llm):
    response = APIClient().post(ASK, {"question": QUESTION}, format="json", HTTP_X_WIDGET_KEY=widget_key.key)
    assert response.status_code == 200 and response["Content-Type"] == "application/json"
    assert response.json()["answer_mode"] == "llm" and "stream" not in fake_llm.requests[-1]["body"]


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("body", "key", "status"),
    [
        ({"question": ""}, True, 400),
        ({"question": QUESTION}, False, 401),
        ({"question": QUESTION, "app": "other"}, True, 403),
    ],
)
def test_errors_before_the_stream_are_json(widget_key, body, key, status):
    response = stream(APIClient(), body, widget_key if key else None)
    assert response.status_code == status and not response.streaming
    assert response["Content-Type"] == "application/json" and response.json()
    assert not OraculoQuery.objects.exists()


@pytest.mark.django_db
def test_the_stream_counts_against_the_keys_limits(widget_key, settings):
    widget_key.rate_limit = "1/min"
    widget_key.save()
    assert stream(APIClient(), {"question": QUESTION}, widget_key).status_code == 200
    refused = stream(APIClient(), {"question": QUESTION}, widget_key)
    assert refused.status_code == 429 and refused["Content-Type"] == "application/json"


@pytest.mark.django_db
def test_a_failure_after_the_stream_started_ends_it_with_an_error_event(widget_key, monkeypatch):
    """The database lost while the answer is logged, simulated (losing the real one mid-request is what
    test_faults does for the plain request): the stream cannot turn into a 503 any more, so it says so."""
    from django.db import OperationalError

    from oraculo import actions

    def lost(**kwargs):
        raise OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr(actions, "query_log_create", lost)
    events = parse(b"".join(stream(APIClient(), {"question": QUESTION}, widget_key).streaming_content))
    assert [kind for kind, _ in events] == ["sources", "error"]
    assert events[-1][1] == {"detail": "The answer could not be completed. Try again shortly."}


# --- over real sockets -------------------------------------------------------------------------------------


def read_events(response: http.client.HTTPResponse, until: str) -> list[tuple[str, dict]]:
    """Events as they arrive, up to and including the first `until` one."""
    events, buffer = [], b""
    while not events or events[-1][0] != until:
        line = response.readline()
        assert line, "the stream ended early"
        buffer += line
        if buffer.endswith(b"\n\n"):
            events += parse(buffer)
            buffer = b""
    return events


def open_stream(port: int, headers: dict) -> tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    connection.request(
        "POST",
        ASK,
        body=json.dumps({"question": QUESTION}),
        headers={"Content-Type": "application/json", "Accept": SSE, **headers},
    )
    return connection, connection.getresponse()


@pytest.mark.django_db(transaction=True)
def test_text_arrives_before_the_llm_has_finished_under_the_development_server(live_server, fake_llm):
    from biblioteca.ingest import directory_ingest
    from tests.conftest import FIXTURE_DOCS

    assert not directory_ingest(paths=[FIXTURE_DOCS / "en"], app="guide", source_type="en").failed
    key = WidgetKey.objects.create(name="site", app="guide", allowed_origins=[ORIGIN])
    fake_llm.reset("gated")  # the LLM writes its first piece, then waits for the test
    port = int(live_server.url.rsplit(":", 1)[1])
    connection, response = open_stream(port, {"X-Widget-Key": key.key, "Origin": ORIGIN})
    try:
        assert response.status == 200 and response.getheader("Content-Type").startswith(SSE)
        first = read_events(response, until="delta")
        assert [kind for kind, _ in first] == ["sources", "delta"]
        assert not OraculoQuery.objects.exists()  # not logged yet: the answer is still being written
        fake_llm.gate.set()
        rest = read_events(response, until="done")
    finally:
        fake_llm.gate.set()
        connection.close()
    done = rest[-1][1]
    assert done["answer"] == "".join(d["text"] for k, d in first + rest if k == "delta").strip()
    assert OraculoQuery.objects.get(pk=done["query_id"]).answer_mode == "llm"


def test_gunicorn_gthread_streams_and_serves_others_meanwhile(db_proxy, committed, fake_llm_server, library):  # noqa: F811 (fixtures imported from test_faults)
    _, url = db_proxy
    user = committed(lambda: User.objects.create_user("stream-robot"))
    token = committed(lambda: Token.objects.create(user=user)).key
    fake_llm_server.reset("gated")
    port = free_port()
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "config.wsgi",
            "-k",
            "gthread",
            "-w",
            "1",
            "--threads",
            "4",
            "-b",
            f"127.0.0.1:{port}",
            "--timeout",
            "60",
        ],
        cwd=ROOT,
        env=process_env(
            url, LLM_BASE_URL=fake_llm_server.base_url, LLM_MODEL=MODEL, LLM_API_KEY="k", LLM_TIMEOUT="30"
        ),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port, process=server, timeout=60)
        connection, response = open_stream(port, {"Authorization": f"Token {token}"})
        try:
            assert response.status == 200
            assert [kind for kind, _ in read_events(response, until="delta")] == ["sources", "delta"]
            # One worker process, its stream still open: another request is answered by another thread.
            health = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            health.request("GET", "/api/v1/health")
            assert health.getresponse().status == 200
            health.close()
            fake_llm_server.gate.set()
            done = read_events(response, until="done")[-1][1]
        finally:
            fake_llm_server.gate.set()
            connection.close()
        assert done["answer_mode"] == "llm" and done["query_id"]
    finally:
        server.terminate()
        server.wait(20)
