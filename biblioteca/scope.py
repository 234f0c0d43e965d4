"""A chunk's scope (its document's app and source type), copied onto the chunk row.

Searches filter and count chunks by scope without joining their documents; every write that sets or changes a
document's app or source type goes through here (or creates the chunks with it, at ingest).
"""

from __future__ import annotations

from django.db.models import Q

from biblioteca.models import Chunk, Document


def chunk_scope_sync(*, document: Document) -> int:
    """Give the document's chunks its current app and source type; returns how many chunks changed."""
    return (
        Chunk.objects.filter(document=document)
        .filter(~Q(app=document.app) | ~Q(source_type=document.source_type))
        .update(app=document.app, source_type=document.source_type)
    )
