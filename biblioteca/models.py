"""The knowledge library: documents, their heading-aware chunks and the chunks' sentences, with vectors."""

from __future__ import annotations

from django.conf import settings
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVectorField
from django.db import models
from pgvector.django import HalfVectorField, HnswIndex, VectorField

from biblioteca.text.version import TERMS_VERSION, TEXT_VERSION


class Document(models.Model):
    """One markdown file of a team's docs, identified by its source path within an app."""

    app = models.CharField(max_length=100, default="default", db_index=True)
    source_path = models.CharField(max_length=1000)
    source_type = models.CharField(max_length=50, default="docs", db_index=True)
    title = models.CharField(max_length=500)
    url = models.URLField(max_length=1000, blank=True)
    content_hash = models.CharField(max_length=16)
    language = models.CharField(
        max_length=8,
        blank=True,
        help_text="ISO 639-1 code of its prose, detected at ingest or set per app; blank when unknown.",
    )
    search_config = models.CharField(
        max_length=32,
        default="simple",
        help_text="PostgreSQL text-search configuration its chunks are indexed with, from its language.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    modified_at = models.DateTimeField(auto_now=True)
    ingested_at = models.DateTimeField(null=True, blank=True)
    processed_with = models.CharField(
        max_length=64,
        blank=True,
        help_text="The text pipeline's versions and chunk settings that made its chunks and its sentences' stems and "
        "keys; blank when not known. A document made under others is processed again at its next ingest.",
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["app", "source_path"], name="document_unique_source_per_app"),
        ]
        indexes = [models.Index(fields=["app", "source_type"], name="document_app_type_idx")]
        ordering = ["app", "source_path"]

    def __str__(self) -> str:
        return f"{self.title} ({self.app}:{self.source_path})"

    @staticmethod
    def current_processing() -> str:
        """What `processed_with` says of a document processed now: the text pipeline's versions (chunks and
        sentences, their stems and identifier keys) and the chunk settings."""
        return f"text {TEXT_VERSION}, terms {TERMS_VERSION}, chunks {settings.CHUNK_SIZE}/{settings.CHUNK_OVERLAP}"


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
    search_vector = SearchVectorField(
        null=True,
        help_text="Full-text index of the passage header and text, accents folded and identifiers "
        "spelled out (biblioteca.text.lexical).",
    )
    search_length = models.PositiveIntegerField(
        default=0,
        help_text="Words indexed in search_vector: the passage length full-text ranking normalises by.",
    )
    heading_embedding = HalfVectorField(
        dimensions=settings.EMBEDDING_DIMENSIONS,
        null=True,
        blank=True,
        help_text="The vector of the heading this chunk opens its section under, embedded bare as sentences are; "
        "null for a chunk that continues its section or has no heading. Chunks stored before it get theirs at "
        "their document's next ingest.",
    )
    # The document's scope, copied (a trigger, migration 0006, keeps it in step on every write) so that a search
    # filters chunks by app without a join, and full-text statistics can be counted within one app.
    app = models.CharField(max_length=100, editable=False)
    source_type = models.CharField(max_length=50, editable=False)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["document", "chunk_index"], name="chunk_unique_index_per_document"
            ),
            models.CheckConstraint(
                condition=models.Q(end_offset__gte=models.F("start_offset")), name="chunk_offsets_ordered"
            ),
        ]
        indexes = [
            HnswIndex(
                name="chunk_embedding_hnsw",
                fields=["embedding"],
                m=settings.RETRIEVAL_HNSW_M,
                ef_construction=settings.RETRIEVAL_HNSW_EF_CONSTRUCTION,
                opclasses=["vector_cosine_ops"],
            ),
            # Without a pending list: with one, every search reads all the entries inserted since the last
            # vacuum, which a small library may never get (measured: 84 pending pages after ingest made the
            # search statement take 3.1 ms instead of 1.7). Writing the index directly costs about 0.12 ms a
            # chunk, against some 500 ms of embedding.
            GinIndex(name="chunk_search_vector_gin", fields=["search_vector"], fastupdate=False),
            models.Index(fields=["app", "source_type"], name="chunk_app_type_idx"),
        ]
        ordering = ["document_id", "chunk_index"]

    def __str__(self) -> str:
        return f"{self.document.source_path}#{self.chunk_index}"

    @property
    def chunk_id(self) -> str:
        """The chunk's stable identifier, `filename#index`."""
        return f"{self.document.source_path}#{self.chunk_index}"


class Sentence(models.Model):
    """A sentence unit of a chunk, embedded once at ingest so trimming needs no embedding call per query."""

    chunk = models.ForeignKey(Chunk, on_delete=models.CASCADE, related_name="sentences")
    position = models.PositiveIntegerField()
    start_offset = models.PositiveIntegerField(help_text="Offset of the sentence within its chunk's text.")
    end_offset = models.PositiveIntegerField()
    text = models.TextField()
    # Half precision: sentences are only ever scored against a question, never searched, and float16 keeps
    # their cosines within about 1e-3 at half the bytes of the largest table.
    embedding = HalfVectorField(dimensions=settings.EMBEDDING_DIMENSIONS)
    # Null, not blank, for a sentence stored without its stems (before they were, or by the release before while
    # this one rolls out): blank is a sentence without words.
    terms = models.TextField(  # noqa: DJ001
        null=True,
        blank=True,
        help_text="The sentence's stems in its document's language, space-separated (`lexical.pack_terms`); null when "
        "stored without them. Used only while the document's processed_with is current.",
    )
    identifier_keys = models.TextField(  # noqa: DJ001
        null=True,
        blank=True,
        help_text="The keys of the identifiers the sentence holds (`identifiers.identifier_keys`), space-separated; "
        "null when stored without them. Used only while the document's processed_with is current.",
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["chunk", "position"], name="sentence_unique_position_per_chunk"),
        ]
        ordering = ["chunk_id", "position"]

    def __str__(self) -> str:
        return self.text[:80]


class LibraryGeneration(models.Model):
    """The version of an app's documents, chunks and sentences: a fresh value on every write to them.

    Database triggers (migration 0004) set it from a sequence in the transaction of every write to those tables,
    whatever makes it (ingest, prune, the admin, raw SQL), so a cached retrieval result keyed on it is never served
    after the library changed: a reader sees the new rows and the new generation together, in every process and
    replica, and a value is never given twice.
    """

    app = models.CharField(max_length=100, primary_key=True)
    generation = models.BigIntegerField(default=0)

    def __str__(self) -> str:
        return f"{self.app}: {self.generation}"
