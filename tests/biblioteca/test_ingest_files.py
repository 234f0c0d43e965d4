"""Which files ingest reads: never a link that leads out of the folder (the public widget could quote it), never
a file over INGEST_MAX_FILE_BYTES; both are reported, in the summary line too."""

from __future__ import annotations

import re

import pytest
from django.core.management import call_command

from biblioteca.ingest import IngestError, directory_ingest, document_ingest
from biblioteca.models import Chunk, Document

pytestmark = pytest.mark.django_db

SECRET = "DATABASE_URL=postgres://oraculo:hunter2@db/oraculo"


@pytest.fixture
def docs(tmp_path):
    """docs/ with a good page, a link inside the folder, and links to a secret file outside it."""
    (tmp_path / ".env").write_text(SECRET)
    (tmp_path / "outside.md").write_text(f"# Secret\n\n{SECRET}\n")
    root = tmp_path / "docs"
    (root / "faq").mkdir(parents=True)
    (root / "guide.md").write_text("# Guide\n\nRun the installer.\n")
    (root / "faq" / "alias.md").symlink_to(root / "guide.md")
    (root / "faq" / "x.md").symlink_to("../../.env")
    (root / "faq" / "y.md").symlink_to(tmp_path / "outside.md")
    return root


def test_links_out_of_the_folder_are_refused_and_reported(docs):
    report = directory_ingest(paths=[docs], app="t-links")
    statuses = {r.source_path: r.status for r in report.results}
    assert statuses == {
        "guide.md": "added",
        "faq/alias.md": "duplicate",
        "faq/x.md": "outside",
        "faq/y.md": "outside",
    }
    assert "outside" in next(r.error for r in report.results if r.source_path == "faq/x.md")
    assert not Chunk.objects.filter(text__contains="hunter2").exists()
    assert set(Document.objects.filter(app="t-links").values_list("source_path", flat=True)) == {"guide.md"}


def test_a_page_reached_through_a_link_in_the_folder_is_stored_once_under_its_own_path(docs):
    report = directory_ingest(paths=[docs], app="t-alias")
    alias = next(r for r in report.results if r.source_path == "faq/alias.md")
    assert alias.status == "duplicate" and "the same file as guide.md" in alias.error
    assert Chunk.objects.filter(document__app="t-alias", text__contains="Run the installer").count() == 1


def test_two_links_to_one_file_the_walk_does_not_see_keep_the_first(tmp_path):
    (tmp_path / ".drafts").mkdir()
    (tmp_path / ".drafts" / "page.md").write_text("# Draft\n\nHidden folders are not walked.\n")
    (tmp_path / "a.md").symlink_to(tmp_path / ".drafts" / "page.md")
    (tmp_path / "b.md").symlink_to(tmp_path / ".drafts" / "page.md")
    report = directory_ingest(paths=[tmp_path], app="t-two-links")
    assert {r.source_path: r.status for r in report.results} == {"a.md": "added", "b.md": "duplicate"}


def test_prune_takes_down_a_page_stored_twice_by_an_older_ingest(docs):
    document_ingest(source_path="faq/alias.md", content=(docs / "guide.md").read_text(), app="t-old-alias")
    report = directory_ingest(paths=[docs], app="t-old-alias", prune=True)
    assert report.removed == ["faq/alias.md"]


def test_files_over_the_size_cap_are_refused_and_reported(tmp_path, settings):
    settings.INGEST_MAX_FILE_BYTES = 100
    (tmp_path / "small.md").write_text("# Small\n\nFine.\n")
    (tmp_path / "big.md").write_text("# Big\n\n" + "word " * 100)
    report = directory_ingest(paths=[tmp_path], app="t-size")
    assert {r.source_path: r.status for r in report.results} == {"small.md": "added", "big.md": "too_large"}
    assert "over INGEST_MAX_FILE_BYTES (100)" in report.results[0].error + report.results[1].error
    assert not Document.objects.filter(app="t-size", source_path="big.md").exists()


def test_the_summary_line_counts_both(docs, settings, capsys):
    settings.INGEST_MAX_FILE_BYTES = 30
    (docs / "big.md").write_text("# Big\n\n" + "word " * 20)
    call_command("ingest_docs", str(docs), "--app", "t-summary", verbosity=1)
    out = capsys.readouterr().out
    assert "2 links outside the folder, 1 too large, 1 duplicates, 0 failed" in out.splitlines()[0]
    assert "outside: faq/x.md: a link to" in out and "too large: big.md:" in out
    assert "duplicate: faq/alias.md: the same file as guide.md" in out


def test_prune_removes_a_document_whose_file_became_a_link_out(docs):
    (docs / "faq" / "x.md").unlink()
    (docs / "faq" / "x.md").write_text("# X\n\nOnce a real page.\n")
    directory_ingest(paths=[docs], app="t-prune")
    (docs / "faq" / "x.md").unlink()
    (docs / "faq" / "x.md").symlink_to("../../.env")
    report = directory_ingest(paths=[docs], app="t-prune", prune=True)
    assert report.removed == ["faq/x.md"]
    assert not Document.objects.filter(app="t-prune", source_path="faq/x.md").exists()


def test_an_emptied_page_is_taken_down_by_prune_as_a_deleted_one_is(docs):
    (docs / "faq" / "alias.md").unlink()
    (docs / "setup.md").write_text("# Setup\n\nInstall it first.\n")
    directory_ingest(paths=[docs], app="t-empty")
    (docs / "guide.md").write_text("  \n")
    kept = directory_ingest(paths=[docs], app="t-empty")
    assert {r.source_path: r.status for r in kept.results}["guide.md"] == "skipped"
    assert Document.objects.filter(app="t-empty", source_path="guide.md").exists(), "without --prune, kept"
    dry = directory_ingest(paths=[docs], app="t-empty", prune=True, dry_run=True)
    assert (
        dry.removed == ["guide.md"]
        and Document.objects.filter(app="t-empty", source_path="guide.md").exists()
    )
    report = directory_ingest(paths=[docs], app="t-empty", prune=True)
    assert report.removed == ["guide.md"]
    assert not Document.objects.filter(app="t-empty", source_path="guide.md").exists()
    assert Document.objects.filter(app="t-empty", source_path="setup.md").exists()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"app": "  "}, "The app cannot be blank"),
        ({"app": "a" * 101}, "The app is 101 characters long: at most 100."),
        ({"source_type": ""}, "The source type cannot be blank"),
        ({"source_type": "s" * 51}, "The source type is 51 characters long: at most 50."),
        ({"url_prefix": "https://" + "u" * 991}, "The URL prefix is 999 characters long: at most 998."),
    ],
)
def test_a_scope_the_library_cannot_store_is_refused_before_any_file_is_read(docs, options, message):
    stored = Document.objects.count()
    with pytest.raises(IngestError, match=re.escape(message)):
        directory_ingest(paths=[docs], **{"app": "t-scope", **options})
    with pytest.raises(IngestError, match=re.escape(message)):
        directory_ingest(paths=[docs], dry_run=True, **{"app": "t-scope", **options})
    assert Document.objects.count() == stored
