"""Which files ingest reads: never a link that leads out of the folder (the public widget could quote it), never
a file over INGEST_MAX_FILE_BYTES; both are reported, in the summary line too."""

from __future__ import annotations

import pytest
from django.core.management import call_command

from biblioteca.ingest import directory_ingest
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
        "faq/alias.md": "added",
        "faq/x.md": "outside",
        "faq/y.md": "outside",
    }
    assert "outside" in next(r.error for r in report.results if r.source_path == "faq/x.md")
    assert not Chunk.objects.filter(text__contains="hunter2").exists()
    assert set(Document.objects.filter(app="t-links").values_list("source_path", flat=True)) == {
        "guide.md",
        "faq/alias.md",
    }


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
    assert "2 links outside the folder, 1 too large, 0 failed" in out.splitlines()[0]
    assert "outside: faq/x.md: a link to" in out and "too large: big.md:" in out


def test_prune_removes_a_document_whose_file_became_a_link_out(docs):
    (docs / "faq" / "x.md").unlink()
    (docs / "faq" / "x.md").write_text("# X\n\nOnce a real page.\n")
    directory_ingest(paths=[docs], app="t-prune")
    (docs / "faq" / "x.md").unlink()
    (docs / "faq" / "x.md").symlink_to("../../.env")
    report = directory_ingest(paths=[docs], app="t-prune", prune=True)
    assert report.removed == ["faq/x.md"]
    assert not Document.objects.filter(app="t-prune", source_path="faq/x.md").exists()
