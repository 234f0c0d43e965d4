"""A chunk carries its document's app and source type, kept in step wherever a document's scope changes."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from biblioteca.embeddings import get_embedder
from biblioteca.ingest import document_ingest
from biblioteca.models import Chunk, Document
from biblioteca.scope import chunk_scope_sync
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


def test_syncing_a_document_changes_only_the_chunks_out_of_step():
    document_ingest(source_path="ports.md", content=CONTENT, app="t-scope", source_type="guide")
    document = Document.objects.get(app="t-scope", source_path="ports.md")
    assert chunk_scope_sync(document=document) == 0
    Document.objects.filter(pk=document.pk).update(app="t-scope-elsewhere")
    document.refresh_from_db()
    assert chunk_scope_sync(document=document) == Chunk.objects.filter(document=document).count() > 0
    assert scopes(document) == {("t-scope-elsewhere", "guide")}
