"""A chunk carries its document's app and source type, kept in step by a trigger whatever writes the document."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.db import connection

from biblioteca.embeddings import get_embedder
from biblioteca.ingest import document_ingest
from biblioteca.models import Chunk, Document
from biblioteca.selectors import HybridParams, chunk_search

pytestmark = pytest.mark.django_db

CONTENT = "# Ports\n\nStart the server with `--port 8080` to listen somewhere else than the default port."


def scopes(document: Document) -> set[tuple[str, str]]:
    return set(Chunk.objects.filter(document=document).values_list("app", "source_type"))


def found(app: str, source_type: str | None = None) -> list[str]:
    vector = get_embedder().embed_query("Which port does the server listen on?")
    hits = chunk_search(
        query_vector=vector,
        top_k=5,
        app=app,
        source_type=source_type,
        query_text="--port",
        hybrid=HybridParams(),
    )
    return [c.document.source_path for c in hits]


def test_ingested_chunks_carry_their_documents_scope():
    document_ingest(source_path="ports.md", content=CONTENT, app="t-scope", source_type="guide")
    document = Document.objects.get(app="t-scope", source_path="ports.md")
    assert scopes(document) == {("t-scope", "guide")}


def test_an_unchanged_document_ingested_under_another_source_type_moves_its_chunks():
    document_ingest(source_path="ports.md", content=CONTENT, app="t-scope", source_type="guide")
    result = document_ingest(source_path="ports.md", content=CONTENT, app="t-scope", source_type="faq")
    assert result.status == "unchanged"
    assert scopes(Document.objects.get(app="t-scope", source_path="ports.md")) == {("t-scope", "faq")}
    assert found("t-scope", "faq") == ["ports.md"] and found("t-scope", "guide") == []


def test_a_document_moved_to_another_app_in_the_admin_takes_its_chunks(client):
    document_ingest(source_path="ports.md", content=CONTENT, app="t-scope", source_type="guide")
    document = Document.objects.get(app="t-scope", source_path="ports.md")
    client.force_login(User.objects.create_superuser("root", password="x"))
    response = client.post(
        f"/admin/biblioteca/document/{document.pk}/change/",
        {
            "app": "t-scope-moved",
            "source_path": document.source_path,
            "source_type": "docs",
            "title": document.title,
            "url": "",
            "language": document.language,
            "search_config": document.search_config,
            "chunks-TOTAL_FORMS": "0",
            "chunks-INITIAL_FORMS": "0",
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    assert scopes(document) == {("t-scope-moved", "docs")}
    assert found("t-scope-moved") == ["ports.md"] and found("t-scope") == []


def chunk_versions(document: Document) -> list[str]:
    """Each chunk row's physical place: an UPDATE writes a new row version elsewhere, so it moves."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT ctid::text FROM biblioteca_chunk WHERE document_id = %s ORDER BY id", [document.pk]
        )
        return [row[0] for row in cursor.fetchall()]


def test_any_write_to_a_documents_scope_moves_its_chunks_and_only_a_scope_change_touches_them():
    document_ingest(source_path="ports.md", content=CONTENT, app="t-scope", source_type="guide")
    document = Document.objects.get(app="t-scope", source_path="ports.md")
    before = chunk_versions(document)
    Document.objects.filter(pk=document.pk).update(title="Ports, again", app="t-scope")
    assert chunk_versions(document) == before
    Document.objects.filter(pk=document.pk).update(app="t-scope-elsewhere")
    after = chunk_versions(document)
    assert len(after) == len(before) > 0 and all(a != b for a, b in zip(after, before))
    assert scopes(document) == {("t-scope-elsewhere", "guide")}
