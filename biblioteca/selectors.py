"""Reads over the library: nearest chunks, stored sentence vectors, model bookkeeping."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from django.db import connections
from django.db.models import Count, QuerySet
from pgvector.django import CosineDistance

from biblioteca.models import Chunk, Sentence
from biblioteca.vector_session import vector_search_session
from config.replicas import read_connection, replica_reads


def stored_embedding_models() -> dict[str, int]:
    """How many chunks each embedding model made."""
    rows = Chunk.objects.values("embedding_model").annotate(n=Count("id")).order_by()
    return {row["embedding_model"]: row["n"] for row in rows}


def pgvector_version(*, using: str = "default") -> str:
    """The installed pgvector's version, or "" when the extension is missing."""
    with connections[using].cursor() as cursor:
        cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        row = cursor.fetchone()
    return row[0] if row else ""


@lru_cache(maxsize=8)
def _has_iterative_scan(alias: str) -> bool:
    """pgvector >= 0.8 can keep walking the HNSW graph until the filters are satisfied."""
    version = pgvector_version(using=alias)
    return bool(version) and tuple(int(p) for p in version.split(".")[:2]) >= (0, 8)


@replica_reads()
def chunk_search(*, query_vector: np.ndarray, top_k: int, app: str | None = None,
                 source_type: str | None = None) -> list[Chunk]:
    """The `top_k` chunks nearest the query by cosine, each annotated with `score` (cosine similarity).

    With a filter, the HNSW index alone returns its `ef_search` nearest chunks and the filter then drops those of
    other apps: an app among many could get fewer than `top_k`, or none. An iterative scan prevents that.
    """
    qs: QuerySet[Chunk] = Chunk.objects.select_related("document")
    if app:
        qs = qs.filter(document__app=app)
    if source_type:
        qs = qs.filter(document__source_type=source_type)
    qs = qs.annotate(distance=CosineDistance("embedding", query_vector)).order_by("distance")[:top_k]
    alias = qs.db
    with vector_search_session(alias=alias, iterative=bool(app or source_type) and _has_iterative_scan(alias)):
        chunks = list(qs.using(alias))
    for chunk in chunks:
        chunk.score = 1.0 - float(chunk.distance)
    return chunks


@dataclass(frozen=True)
class StoredSentences:
    """A chunk's sentence spans (offsets into its text) and their vectors, shape (n, d)."""

    spans: list[tuple[int, int]]
    vectors: np.ndarray


@replica_reads()
def sentences_for_chunks(chunk_ids: Sequence[int]) -> dict[int, StoredSentences]:
    """Stored sentences of the given chunks, in order; chunks without any are absent.

    The vectors travel in pgvector's binary form (`vector_send`: two int16 headers, then big-endian
    float32s): parsing the text form costs several milliseconds per query, this costs a fraction of one.
    """
    if not chunk_ids:
        return {}
    table = Sentence._meta.db_table
    with read_connection(Sentence).cursor() as cursor:
        cursor.execute(
            f"SELECT chunk_id, start_offset, end_offset, vector_send(embedding) FROM {table} "
            "WHERE chunk_id = ANY(%s) ORDER BY chunk_id, position",
            [list(chunk_ids)],
        )
        rows = cursor.fetchall()
    grouped: dict[int, list[tuple[int, int, bytes]]] = {}
    for chunk_id, start, end, raw in rows:
        grouped.setdefault(chunk_id, []).append((start, end, bytes(raw)))
    out: dict[int, StoredSentences] = {}
    for chunk_id, items in grouped.items():
        vectors = np.stack([np.frombuffer(raw, dtype=">f4", offset=4) for _, _, raw in items]).astype(np.float32)
        out[chunk_id] = StoredSentences([(start, end) for start, end, _ in items], vectors)
    return out
