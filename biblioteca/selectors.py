"""Reads over the library: nearest chunks, stored sentence vectors, model bookkeeping."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from django.db.models import Count, QuerySet
from pgvector.django import CosineDistance

from biblioteca.models import Chunk, Document, Sentence


def stored_embedding_models() -> dict[str, int]:
    """How many chunks each embedding model made."""
    rows = Chunk.objects.values("embedding_model").annotate(n=Count("id")).order_by()
    return {row["embedding_model"]: row["n"] for row in rows}


def chunk_search(*, query_vector: np.ndarray, top_k: int, app: str | None = None,
                 source_type: str | None = None) -> list[Chunk]:
    """The `top_k` chunks nearest the query by cosine, each annotated with `score` (cosine similarity)."""
    qs: QuerySet[Chunk] = Chunk.objects.select_related("document")
    if app:
        qs = qs.filter(document__app=app)
    if source_type:
        qs = qs.filter(document__source_type=source_type)
    chunks = list(qs.annotate(distance=CosineDistance("embedding", query_vector)).order_by("distance")[:top_k])
    for chunk in chunks:
        chunk.score = 1.0 - float(chunk.distance)
    return chunks


def sentences_for_chunks(chunk_ids: Sequence[int]) -> dict[int, list[Sentence]]:
    """Stored sentences (with vectors) of the given chunks, in order, keyed by chunk id."""
    out: dict[int, list[Sentence]] = {cid: [] for cid in chunk_ids}
    for sentence in Sentence.objects.filter(chunk_id__in=chunk_ids).order_by("chunk_id", "position"):
        out[sentence.chunk_id].append(sentence)
    return out


def documents_in(*, app: str, source_type: str | None = None) -> QuerySet[Document]:
    qs = Document.objects.filter(app=app)
    return qs.filter(source_type=source_type) if source_type else qs
