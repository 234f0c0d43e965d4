"""The library in the admin: documents with chunk counts and filters, chunks read-only, vectors summarised."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from biblioteca.models import Chunk, Document

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(client):
    client.force_login(User.objects.create_superuser("root", password="x"))
    return client


def test_document_changelist_shows_chunk_counts_and_filters(library, admin_client):
    document = Document.objects.get(app=library, source_path="account.md")
    response = admin_client.get(
        "/admin/biblioteca/document/", {"app": library, "source_type": "en", "q": "account"}
    )
    assert response.status_code == 200
    html = response.content.decode()
    assert document.title in html and "Billing" not in html
    assert f'<td class="field-chunk_count">{document.chunks.count()}</td>' in html


def test_a_chunk_page_is_read_only_and_never_shows_the_raw_vector(library, admin_client):
    chunk = Chunk.objects.filter(document__app=library).first()
    response = admin_client.get(f"/admin/biblioteca/chunk/{chunk.pk}/change/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "384 dimensions" in html and chunk.embedding_model in html
    assert f"{float(chunk.embedding[0]):.6f}"[:8] not in html
    assert 'name="text"' not in html, "no editable field"
    assert admin_client.get("/admin/biblioteca/chunk/add/").status_code == 403
    assert admin_client.post(f"/admin/biblioteca/chunk/{chunk.pk}/change/", {"text": "x"}).status_code == 403
    assert Chunk.objects.get(pk=chunk.pk).text == chunk.text


def test_a_documents_language_and_text_search_configuration_cannot_be_edited(library, admin_client):
    """They are what its chunks were indexed with; a configuration PostgreSQL lacks would fail every search."""
    document = Document.objects.get(app=library, source_path="account.md")
    page = admin_client.get(f"/admin/biblioteca/document/{document.pk}/change/").content.decode()
    assert 'name="title"' in page
    assert 'name="search_config"' not in page and 'name="language"' not in page
    form = {
        "app": document.app,
        "source_path": document.source_path,
        "source_type": document.source_type,
        "title": "Account, renamed",
        "url": document.url,
        "search_config": "klingon",
        "language": "tlh",
        "chunks-TOTAL_FORMS": "0",
        "chunks-INITIAL_FORMS": "0",
    }
    response = admin_client.post(f"/admin/biblioteca/document/{document.pk}/change/", form)
    assert response.status_code == 302, response.content.decode()[:2000]
    document.refresh_from_db()
    assert document.title == "Account, renamed"
    assert (document.search_config, document.language) == ("english", "en")


def test_chunk_changelist_filters_by_app_and_searches_text(library, admin_client):
    response = admin_client.get("/admin/biblioteca/chunk/", {"document__app": library, "q": "30 minutes"})
    assert response.status_code == 200
    html = response.content.decode()
    assert "account.md#0" in html and "billing.md" not in html


# --- query counts: an N+1 fails here (the fixture library has several documents and many chunks) ----------

DOCUMENTS_QUERIES = 9
CHUNKS_QUERIES = 8


def test_the_document_changelist_takes_a_fixed_number_of_queries(
    library, admin_client, django_assert_num_queries
):
    assert Document.objects.filter(app=library).count() > 2
    admin_client.get("/admin/biblioteca/document/")
    with django_assert_num_queries(DOCUMENTS_QUERIES):
        assert admin_client.get("/admin/biblioteca/document/").status_code == 200


def test_the_chunk_changelist_takes_a_fixed_number_of_queries(
    library, admin_client, django_assert_num_queries
):
    assert Chunk.objects.count() > 10
    admin_client.get("/admin/biblioteca/chunk/")
    with django_assert_num_queries(CHUNKS_QUERIES):
        assert admin_client.get("/admin/biblioteca/chunk/").status_code == 200
