"""The knowledge library: documents, their heading-aware chunks and the chunks' sentences, with vectors."""
from __future__ import annotations

from django.conf import settings
from django.db import models
from pgvector.django import HnswIndex, VectorField


class Document(models.Model):
    """One markdown file of a team's docs, identified by its source path within an app."""

    app = models.CharField(max_length=100, default="default", db_index=True)
    source_path = models.CharField(max_length=1000)
    source_type = models.CharField(max_length=50, default="docs", db_index=True)
    title = models.CharField(max_length=500)
    url = models.URLField(max_length=1000, blank=True)
    content_hash = models.CharField(max_length=16)
    created_at = models.DateTimeField(auto_now_add=True)
    modified_at = models.DateTimeField(auto_now=True)
    ingested_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["app", "source_path"], name="document_unique_source_per_app"),
        ]
        indexes = [models.Index(fields=["app", "source_type"], name="document_app_type_idx")]
        ordering = ["app", "source_path"]

    def __str__(self) -> str:
        return f"{self.title} ({self.app}:{self.source_path})"


class Chunk(models.Model):
    """A verbatim slice of a document under one heading path, with the vector that finds it."""

    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="chunks")
    chunk_index = models.PositiveIntegerField()
    heading_path = models.JSONField(default=list, blank=True)
    text = models.TextField()
    start_offset = models.PositiveIntegerField()
    end_offset = models.PositiveIntegerField()
    token_count = models.PositiveIntegerField()
    embedding = VectorField(dimensions=settings.EMBEDDING_DIMENSIONS)
    embedding_model = models.CharField(max_length=200)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["document", "chunk_index"], name="chunk_unique_index_per_document"),
            models.CheckConstraint(condition=models.Q(end_offset__gte=models.F("start_offset")),
                                   name="chunk_offsets_ordered"),
        ]
        indexes = [
            HnswIndex(name="chunk_embedding_hnsw", fields=["embedding"], m=16, ef_construction=64,
                      opclasses=["vector_cosine_ops"]),
        ]
        ordering = ["document_id", "chunk_index"]

    def __str__(self) -> str:
        return f"{self.document.source_path}#{self.chunk_index}"

    @property
    def chunk_id(self) -> str:
        """The seed's chunk identifier, `filename#index`."""
        return f"{self.document.source_path}#{self.chunk_index}"


class Sentence(models.Model):
    """A sentence unit of a chunk, embedded once at ingest so trimming needs no embedding call per query."""

    chunk = models.ForeignKey(Chunk, on_delete=models.CASCADE, related_name="sentences")
    position = models.PositiveIntegerField()
    start_offset = models.PositiveIntegerField(help_text="Offset of the sentence within its chunk's text.")
    end_offset = models.PositiveIntegerField()
    text = models.TextField()
    embedding = VectorField(dimensions=settings.EMBEDDING_DIMENSIONS)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["chunk", "position"], name="sentence_unique_position_per_chunk"),
        ]
        ordering = ["chunk_id", "position"]

    def __str__(self) -> str:
        return self.text[:80]
