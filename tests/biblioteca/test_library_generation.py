"""The library's generation (migration 0004's triggers, read by `library_generation`): every write to documents,
chunks or sentences moves its app's, whoever makes it; reads and rolled-back writes do not, and a value seen
inside a rolled-back write never comes back."""

from __future__ import annotations

import pytest
from django.db import connection, transaction

from biblioteca.ingest import document_ingest, documents_prune
from biblioteca.models import Chunk, Document, LibraryGeneration, Sentence
from biblioteca.selectors import library_generation

pytestmark = pytest.mark.django_db

DOC = "# Quotas\n\nThe quota resets every Tuesday. It counts every workspace.\n"


@pytest.fixture
def stored() -> Document:
    document_ingest(source_path="quotas.md", content=DOC, app="gen-app")
    return Document.objects.get(app="gen-app")


def moves(app: str | None, write) -> bool:
    before = library_generation(app=app)
    write()
    return library_generation(app=app) != before


def test_an_app_never_written_is_at_zero():
    assert library_generation(app="never-written") == "0"
    assert not LibraryGeneration.objects.filter(app="never-written").exists()


def test_an_ingest_moves_the_apps_generation_and_the_whole_librarys():
    assert moves("gen-app", lambda: document_ingest(source_path="quotas.md", content=DOC, app="gen-app"))
    assert moves(None, lambda: document_ingest(source_path="more.md", content=DOC, app="gen-other"))


def test_an_unchanged_reingest_writes_nothing_and_moves_nothing(stored):
    assert not moves("gen-app", lambda: document_ingest(source_path="quotas.md", content=DOC, app="gen-app"))


@pytest.mark.parametrize(
    "write",
    [
        lambda d: Document.objects.filter(pk=d.pk).update(title="Renamed"),
        lambda d: Chunk.objects.filter(document=d).update(text="changed"),
        lambda d: Sentence.objects.filter(chunk__document=d).update(text="changed"),
        lambda d: Sentence.objects.filter(chunk__document=d).delete(),
        lambda d: d.delete(),
        lambda d: documents_prune(app="gen-app", source_type="docs", files=[]),
    ],
    ids=["document", "chunk", "sentence", "sentences deleted", "document deleted", "prune"],
)
def test_any_write_to_the_library_moves_its_apps_generation_only(stored, write):
    document_ingest(source_path="elsewhere.md", content=DOC, app="gen-other")
    other = library_generation(app="gen-other")
    assert moves("gen-app", lambda: write(stored))
    assert library_generation(app="gen-other") == other


def test_moving_a_document_to_another_app_moves_both(stored):
    document_ingest(source_path="elsewhere.md", content=DOC, app="gen-other")
    before = library_generation(app="gen-other")
    assert moves("gen-app", lambda: Document.objects.filter(pk=stored.pk).update(app="gen-other"))
    assert library_generation(app="gen-other") != before


def test_a_statement_that_changes_no_row_moves_nothing(stored):
    assert not moves("gen-app", lambda: Document.objects.filter(app="gen-app", title="no such").delete())


def test_a_rolled_back_write_moves_nothing(stored):
    before = library_generation(app="gen-app")
    seen_inside = []

    def write_then_fail() -> None:
        with transaction.atomic():
            Document.objects.filter(pk=stored.pk).update(title="Renamed")
            seen_inside.append(library_generation(app="gen-app"))
            raise RuntimeError

    with pytest.raises(RuntimeError):
        write_then_fail()
    assert seen_inside[0] != before, "the writer sees its own write's generation"
    assert library_generation(app="gen-app") == before
    for _ in range(3):
        Document.objects.filter(pk=stored.pk).update(title="Renamed")
        assert library_generation(app="gen-app") != seen_inside[0], "never given again"


def test_the_whole_librarys_generation_never_comes_back_after_a_rollback(stored):
    """What the writer saw inside a rolled-back transaction is no later state's generation: a result it cached
    there can never be served."""

    def write_then_fail(seen: list) -> None:
        with transaction.atomic():
            Document.objects.filter(pk=stored.pk).update(title="Renamed")
            seen.append(library_generation(app=None))
            raise RuntimeError

    seen: list[str] = []
    with pytest.raises(RuntimeError):
        write_then_fail(seen)
    later = []
    for _ in range(3):
        Document.objects.filter(pk=stored.pk).update(title="Renamed")
        later.append(library_generation(app=None))
    assert seen[0] not in later and len(set(later)) == 3


def test_truncate_moves_every_app(stored):
    document_ingest(source_path="elsewhere.md", content=DOC, app="gen-other")
    before = {app: library_generation(app=app) for app in ("gen-app", "gen-other")}
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # the test's transaction has deferred checks pending
        cursor.execute("TRUNCATE biblioteca_sentence")
    assert all(library_generation(app=app) != n for app, n in before.items())
