"""Admin for the library: documents with their chunk counts, chunks read-only, vectors summarised never shown."""

from __future__ import annotations

from django.contrib import admin
from django.db import models
from django.db.models import Count

from biblioteca.models import Chunk, Document
from config.admin import DateHierarchyAdminMixin, ReadOnlyAdminMixin


class ChunkInline(ReadOnlyAdminMixin, admin.TabularInline):
    model = Chunk
    fields = ["chunk_index", "heading_path", "token_count", "embedding_model"]
    readonly_fields = fields
    extra = 0
    show_change_link = True
    can_delete = False


@admin.register(Document)
class DocumentAdmin(DateHierarchyAdminMixin, admin.ModelAdmin):
    list_display = ["title", "app", "source_type", "source_path", "chunk_count", "ingested_at"]
    list_filter = ["app", "source_type"]
    search_fields = ["title", "source_path", "url"]
    # The language and its text-search configuration are what the chunks were indexed with at ingest: an edit
    # here would not re-index them, and a configuration PostgreSQL lacks would fail every search of the app.
    readonly_fields = [
        "language",
        "search_config",
        "content_hash",
        "created_at",
        "modified_at",
        "ingested_at",
        "processed_with",
    ]
    inlines = [ChunkInline]
    date_hierarchy = "ingested_at"
    formfield_overrides = {models.URLField: {"assume_scheme": "https"}}

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(chunk_total=Count("chunks"))

    @admin.display(description="chunks", ordering="chunk_total")
    def chunk_count(self, obj: Document) -> int:
        return obj.chunk_total


@admin.register(Chunk)
class ChunkAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ["__str__", "document_title", "heading", "token_count", "embedding_model"]
    list_filter = ["document__app", "document__source_type", "embedding_model"]
    search_fields = ["text", "document__title", "document__source_path"]
    list_select_related = ["document"]
    fields = [
        "document",
        "chunk_index",
        "heading_path",
        "start_offset",
        "end_offset",
        "token_count",
        "vector",
        "embedding_model",
        "sentence_count",
        "text",
    ]
    readonly_fields = fields

    @admin.display(description="document", ordering="document__title")
    def document_title(self, obj: Chunk) -> str:
        return obj.document.title

    @admin.display(description="heading")
    def heading(self, obj: Chunk) -> str:
        return " > ".join(obj.heading_path)

    @admin.display(description="embedding")
    def vector(self, obj: Chunk) -> str:
        return f"{len(obj.embedding)} dimensions"

    @admin.display(description="sentences")
    def sentence_count(self, obj: Chunk) -> int:
        return obj.sentences.count()
