"""A bounded cache of retrieval results: help questions repeat, and a repeated question with the same options
needs neither its embedding nor the search.

A key holds everything that decides a result: the normalised question, the options as resolved (top_k, trimming
and its parameters, hybrid), the filters, the retrieval and embedding settings, and the library's generation
(`library_generation`, set afresh by database triggers in the transaction of every write to documents, chunks
or sentences). A write moves the generation, so later reads miss and entries filed under older generations are
never read again; they age out of the bounded store. The key also holds a fingerprint of the code that ranks and
trims, so a deploy that changes it never serves what the old code found from a shared cache server. The store is
Django's `retrieval_results` cache (RETRIEVAL_CACHE_SIZE entries per process in memory, or the CACHE_URL server's
eviction and the TTL).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterable, Mapping
from dataclasses import replace
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from django.conf import settings
from django.core.cache import caches

from biblioteca.query_cache import normalise_question
from biblioteca.selectors import library_generation

if TYPE_CHECKING:
    from biblioteca.retrieval import RetrievalResult

logger = logging.getLogger(__name__)

CACHE_ALIAS = "retrieval_results"
# What decides a vector besides the question (EMBEDDING_THREADS, timeouts and batch sizes do not).
_EMBEDDING_SETTINGS = (
    "EMBEDDING_BACKEND",
    "EMBEDDING_MODEL",
    "EMBEDDING_BASE_URL",
    "EMBEDDING_DIMENSIONS",
    "EMBEDDING_QUERY_PREFIX",
    "EMBEDDING_PASSAGE_PREFIX",
    "EMBEDDING_SEND_INPUT_TYPE",
    "TOKEN_ENCODING",
)

_PACKAGE = Path(__file__).resolve().parent
# The modules whose code (and data: the reference questions) decides which passages come back and how they are cut.
_RESULT_CODE = (
    "data",
    "language_shift.py",
    "passages.py",
    "retrieval.py",
    "search.py",
    "selectors.py",
    "trimming.py",
    "trimming_identifiers.py",
    "text",
)


def code_fingerprint(paths: Iterable[Path]) -> str:
    """A digest of the Python sources and text data under `paths` (files, or folders read recursively), in a
    stable order."""
    digest = hashlib.sha256()
    for path in paths:
        files = sorted(f for f in path.rglob("*") if f.suffix in (".py", ".txt")) if path.is_dir() else [path]
        for file in files:
            digest.update(file.name.encode())
            digest.update(file.read_bytes())
    return digest.hexdigest()[:16]


@lru_cache(maxsize=1)
def result_code_fingerprint() -> str:
    return code_fingerprint(_PACKAGE / name for name in _RESULT_CODE)


@lru_cache(maxsize=1)
def _setting_names() -> tuple[str, ...]:
    """The settings a result depends on: every RETRIEVAL_ one but the cache's own, and the embedding's identity."""
    retrieval = sorted(
        n for n in dir(settings) if n.startswith("RETRIEVAL_") and not n.startswith("RETRIEVAL_CACHE")
    )
    return (*retrieval, *_EMBEDDING_SETTINGS)


def retrieval_cache_key(
    *,
    query: str,
    top_k: int,
    trim_params: Mapping | None,
    hybrid: bool,
    filters: Mapping[str, str | None],
) -> str | None:
    """The key of this retrieval in the library as it is now, or None when the cache is off. Reads the generation
    (one small query), so call it right before the search it may replace."""
    if not settings.RETRIEVAL_CACHE:
        return None
    scope = {"app": filters.get("app") or None, "source_type": filters.get("source_type") or None}
    described = repr(
        (
            normalise_question(query),
            top_k,
            sorted(trim_params.items()) if trim_params is not None else None,
            hybrid,
            sorted(scope.items()),
            library_generation(app=scope["app"]),
            [(name, getattr(settings, name, None)) for name in _setting_names()],
            result_code_fingerprint(),
        )
    )
    return "rr:" + hashlib.sha256(described.encode()).hexdigest()


def retrieval_cache_get(*, key: str) -> RetrievalResult | None:
    """The stored result, or None; an unreachable cache is a miss, never a failed question."""
    try:
        return caches[CACHE_ALIAS].get(key)
    except Exception:
        logger.warning("retrieval-result cache unreachable; searching", exc_info=True)
        return None


def retrieval_cache_put(*, key: str, result: RetrievalResult) -> None:
    """Store `result` without what only trimming needed (its passages' layouts and terms)."""
    chunks = [replace(c, layout=None, query_terms=None) for c in result.chunks]
    try:
        caches[CACHE_ALIAS].set(key, replace(result, chunks=chunks), timeout=settings.RETRIEVAL_CACHE_TIMEOUT)
    except Exception:
        logger.warning("retrieval-result cache unreachable; result not stored", exc_info=True)
