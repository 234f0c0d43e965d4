"""Ingestion against the real database and the real embedder: idempotence, atomic replace, bad input."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test.utils import override_settings

from biblioteca.checks import chunk_settings
from biblioteca.embeddings import Embedder, EmbeddingError, get_embedder
from biblioteca.ingest import chunks_reembed, directory_ingest, document_ingest
from biblioteca.models import Chunk, Document, Sentence
from biblioteca.selectors import chunk_search
from biblioteca.text.identifiers import identifier_keys
from biblioteca.text.lexical import unit_terms, unpack_terms

pytestmark = pytest.mark.django_db

GUIDE = """---
title: Install guide
---

# Install

Run the installer. It takes a minute.

```bash
# not a heading
make run
```

## Configure

Set DATABASE_URL to use your own PostgreSQL.
"""


class FailingEmbedder(Embedder):
    """The real embedder, made to fail after a few texts: the one failure a real model won't produce on demand."""

    def __init__(self, real: Embedder, fail_after_texts: int) -> None:
        super().__init__()
        self.real, self.budget = real, fail_after_texts
        self.model_name, self.dimensions = real.model_name, real.dimensions

    def _embed(self, texts, *, is_query):
        if len(texts) > self.budget:
            raise EmbeddingError("embedding service went away half-way")
        self.budget -= len(texts)
        return self.real._embed(texts, is_query=is_query)


def stored_headings(app: str) -> int:
    """How many distinct headings the app's chunks store a vector of."""
    paths = Chunk.objects.filter(document__app=app, heading_embedding__isnull=False).values_list(
        "heading_path", flat=True
    )
    return len({path[-1] for path in paths})


def write(folder: Path, name: str, content: str | bytes) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return path


def test_a_document_becomes_chunks_and_sentences_with_vectors():
    result = document_ingest(
        source_path="install.md", content=GUIDE, app="t-ingest", url="https://x.test/install"
    )
    assert result.status == "added"
    document = Document.objects.get(app="t-ingest", source_path="install.md")
    assert document.title == "Install guide" and document.url == "https://x.test/install"
    chunks = list(document.chunks.order_by("chunk_index"))
    assert [c.heading_path for c in chunks] == [["# Install"], ["# Install", "## Configure"]]
    assert all(GUIDE[c.start_offset : c.end_offset] == c.text for c in chunks)
    assert "# not a heading\nmake run" in chunks[0].text
    assert all(c.embedding_model == get_embedder().model_name and c.token_count > 0 for c in chunks)
    sentences = Sentence.objects.filter(chunk__document=document)
    assert sentences.count() == result.sentences > len(chunks)
    for sentence in sentences:
        assert sentence.chunk.text[sentence.start_offset : sentence.end_offset] == sentence.text
        assert len(sentence.embedding) == 384


def _stems_as_stored(app: str) -> dict[str, frozenset[str]]:
    return {s.text: unpack_terms(s.terms) for s in Sentence.objects.filter(chunk__document__app=app)}


def test_each_sentence_is_stored_with_its_stems_in_its_documents_language_and_its_identifier_keys():
    document_ingest(source_path="install.md", content=GUIDE, app="t-stems")
    stems = _stems_as_stored("t-stems")
    assert Document.objects.get(app="t-stems").language == "en"
    assert stems and stems == {text: unit_terms(text, "en") for text in stems}
    assert any(stems.values())
    keys = {
        s.text: unpack_terms(s.identifier_keys)
        for s in Sentence.objects.filter(chunk__document__app="t-stems")
    }
    assert keys == {text: identifier_keys(text) for text in keys}
    assert any(keys.values())


def test_a_new_language_for_an_unchanged_document_stems_its_sentences_again():
    document_ingest(source_path="install.md", content=GUIDE, app="t-stems-language")
    with override_settings(DOCUMENT_LANGUAGE_BY_APP={"t-stems-language": "es"}):
        assert document_ingest(source_path="install.md", content=GUIDE, app="t-stems-language").status == (
            "unchanged"
        )
    stems = _stems_as_stored("t-stems-language")
    assert stems == {text: unit_terms(text, "es") for text in stems}
    assert any(unit_terms(text, "es") != unit_terms(text, "en") for text in stems)


def test_sentences_embedded_again_keep_their_stems():
    document_ingest(source_path="install.md", content=GUIDE, app="t-stems-reembed")
    before = _stems_as_stored("t-stems-reembed")
    assert chunks_reembed(app="t-stems-reembed", everything=True) == 1
    assert _stems_as_stored("t-stems-reembed") == before


def test_reingesting_unchanged_content_makes_zero_embedding_calls(tmp_path):
    write(tmp_path, "a.md", GUIDE)
    write(tmp_path, "sub/b.md", "# B\n\nAnother page.")
    first = directory_ingest(paths=[tmp_path], app="t-idem")
    assert first.count("added") == 2
    embedder = get_embedder()
    calls = embedder.calls
    second = directory_ingest(paths=[tmp_path], app="t-idem")
    assert second.count("unchanged") == 2 and second.count("added") == 0
    assert embedder.calls == calls
    assert set(Document.objects.filter(app="t-idem").values_list("source_path", flat=True)) == {
        "a.md",
        "sub/b.md",
    }


def test_changed_content_replaces_the_chunks():
    document_ingest(source_path="p.md", content="# P\n\nOld text about cats.", app="t-change")
    result = document_ingest(source_path="p.md", content="# P\n\nNew text about dogs.", app="t-change")
    assert result.status == "updated"
    texts = list(Chunk.objects.filter(document__app="t-change").values_list("text", flat=True))
    assert texts == ["New text about dogs."]


def stored(app: str) -> tuple[list[tuple[str, np.ndarray]], list[tuple[str, np.ndarray]]]:
    """Every chunk's and sentence's text and vector in `app`, in order."""
    chunks = [
        (c.text, np.asarray(c.embedding, dtype=np.float32))
        for c in Chunk.objects.filter(document__app=app).order_by("document__source_path", "chunk_index")
    ]
    sentences = [
        (s.text, np.asarray(s.embedding, dtype=np.float32))
        for s in Sentence.objects.filter(chunk__document__app=app).order_by(
            "chunk__document__source_path", "chunk__chunk_index", "position"
        )
    ]
    return chunks, sentences


def assert_same_library(app: str, fresh_app: str) -> None:
    """`app` holds what a first ingest makes of the same files: the same texts, with the same vectors."""
    (chunks, sentences), (fresh_chunks, fresh_sentences) = stored(app), stored(fresh_app)
    assert [t for t, _ in chunks] == [t for t, _ in fresh_chunks]
    assert [t for t, _ in sentences] == [t for t, _ in fresh_sentences]
    for (_, vector), (_, fresh) in zip(chunks + sentences, fresh_chunks + fresh_sentences):
        np.testing.assert_allclose(vector, fresh, atol=2e-3)
    headings, fresh_headings = heading_vectors(app), heading_vectors(fresh_app)
    assert [h for h, _ in headings] == [h for h, _ in fresh_headings]
    for (_, vector), (_, fresh) in zip(headings, fresh_headings):
        assert (vector is None) == (fresh is None)
        if vector is not None:
            np.testing.assert_allclose(vector, fresh, atol=2e-3)


def heading_vectors(app: str) -> list[tuple[list[str], np.ndarray | None]]:
    """Every chunk's heading path and the heading vector it stores (None when it stores none), in order."""
    return [
        (path, None if vector is None else np.asarray(vector, dtype=np.float32))
        for path, vector in Chunk.objects.filter(document__app=app)
        .order_by("document__source_path", "chunk_index")
        .values_list("heading_path", "heading_embedding")
    ]


GUIDE_SECTIONS = GUIDE + "".join(
    f"\n## Step {n}\n\nStep {n} checks the {word} settings. It logs what it found.\n"
    for n, word in enumerate(["network", "disk", "memory", "cache"], start=1)
)


def test_each_chunk_that_opens_a_section_stores_its_headings_vector(settings):
    settings.CHUNK_SIZE, settings.CHUNK_OVERLAP = 12, 0
    content = GUIDE_SECTIONS + "\n## Long section\n\n" + " ".join(f"Line {n} of it." for n in range(12))
    document_ingest(source_path="p.md", content=content, app="t-headings")
    headings = heading_vectors("t-headings")
    assert sum(path[-1] == "## Long section" for path, _ in headings) > 1, "the section must span chunks"
    embedder = get_embedder()
    previous = None
    for path, vector in headings:
        if path == previous:
            assert vector is None, "a chunk that continues its section opens no heading"
        else:
            words = path[-1].lstrip("#").strip()
            np.testing.assert_allclose(vector, embedder.embed_documents([words])[0], atol=2e-3)
        previous = path


def test_an_unchanged_document_stored_before_heading_vectors_gets_them_alone():
    """A library stored before heading vectors were gets them at its next ingest: its headings are embedded, and
    nothing else is embedded or written again."""
    document_ingest(source_path="p.md", content=GUIDE_SECTIONS, app="t-old-headings")
    chunks_before = list(Chunk.objects.filter(document__app="t-old-headings").values_list("pk", flat=True))
    texts_before = stored("t-old-headings")
    Chunk.objects.filter(document__app="t-old-headings").update(heading_embedding=None)
    embedder = get_embedder()
    texts = embedder.texts_embedded
    result = document_ingest(source_path="p.md", content=GUIDE_SECTIONS, app="t-old-headings")
    assert result.status == "unchanged"
    # Install, Configure and the four steps
    assert result.embedded_texts == embedder.texts_embedded - texts == 6 and result.embed_seconds > 0
    assert (
        list(Chunk.objects.filter(document__app="t-old-headings").values_list("pk", flat=True))
        == chunks_before
    )
    after = stored("t-old-headings")
    for rows, rows_before in zip(after, texts_before):
        assert [t for t, _ in rows] == [t for t, _ in rows_before]
        assert all(np.array_equal(v, w) for (_, v), (_, w) in zip(rows, rows_before))
    document_ingest(source_path="p.md", content=GUIDE_SECTIONS, app="t-old-headings-fresh")
    assert_same_library("t-old-headings", "t-old-headings-fresh")
    again = document_ingest(source_path="p.md", content=GUIDE_SECTIONS, app="t-old-headings")
    assert again.status == "unchanged" and again.embedded_texts == 0 and again.embed_seconds == 0


def test_a_check_names_the_documents_stored_before_heading_vectors_until_their_next_ingest():
    from django.core.checks import run_checks

    def warnings():
        return [m for m in run_checks(tags=["database"], databases=["default"]) if m.id == "biblioteca.W005"]

    document_ingest(source_path="p.md", content=GUIDE_SECTIONS, app="t-w005")
    document_ingest(source_path="q.md", content="A page without any heading.", app="t-w005")
    assert not warnings()
    Chunk.objects.filter(document__app="t-w005").update(heading_embedding=None)
    (warning,) = warnings()
    assert warning.msg.startswith("1 document(s)"), "a page without headings has none to store"
    document_ingest(source_path="p.md", content=GUIDE_SECTIONS, app="t-w005")
    assert not warnings()


def test_reembed_gives_the_headings_new_vectors_too():
    document_ingest(source_path="p.md", content=GUIDE_SECTIONS, app="t-reembed-headings")
    stale = [1.0] + [0.0] * (get_embedder().dimensions - 1)
    Chunk.objects.filter(document__app="t-reembed-headings", heading_embedding__isnull=False).update(
        heading_embedding=stale, embedding_model="old-model"
    )
    assert chunks_reembed(app="t-reembed-headings") == 1
    document_ingest(source_path="p.md", content=GUIDE_SECTIONS, app="t-reembed-headings-fresh")
    assert_same_library("t-reembed-headings", "t-reembed-headings-fresh")


def test_an_edit_embeds_only_the_texts_it_changed():
    document_ingest(source_path="p.md", content=GUIDE_SECTIONS, app="t-edit")
    edited = GUIDE_SECTIONS.replace("Step 3 checks the memory settings.", "Step 3 checks the swap settings.")
    embedder = get_embedder()
    texts = embedder.texts_embedded
    result = document_ingest(source_path="p.md", content=edited, app="t-edit")
    assert result.status == "updated"
    # the edited sentence, and its chunk under its header: nothing else
    assert result.embedded_texts == embedder.texts_embedded - texts == 2
    document_ingest(source_path="p.md", content=edited, app="t-edit-fresh")
    assert_same_library("t-edit", "t-edit-fresh")


def test_a_title_cut_to_fit_its_column_never_lends_its_chunks_vectors():
    """A stored title cut at its column's length no longer gives the header its chunks were embedded under,
    even when the page's new title is that cut title."""
    long_title = "Configuring " + "the long-lived worker pool, " * 30
    document_ingest(
        source_path="p.md", content=GUIDE_SECTIONS.replace("Install guide", long_title), app="t-long"
    )
    cut = Document.objects.get(app="t-long").title
    assert len(cut) < len(long_title) and cut == cut.strip()
    shortened = GUIDE_SECTIONS.replace("Install guide", cut)
    result = document_ingest(source_path="p.md", content=shortened, app="t-long")
    assert result.status == "updated" and result.embedded_texts == result.chunks
    document_ingest(source_path="p.md", content=shortened, app="t-long-fresh")
    assert_same_library("t-long", "t-long-fresh")


def test_force_embeds_every_text_again():
    first = document_ingest(source_path="p.md", content=GUIDE_SECTIONS, app="t-force")
    again = document_ingest(source_path="p.md", content=GUIDE_SECTIONS, app="t-force", force=True)
    assert again.status == "updated" and again.embedded_texts == first.embedded_texts > 0


def test_a_document_chunked_under_other_settings_is_chunked_again_at_its_next_ingest(settings):
    content = GUIDE_SECTIONS + "\n## Long\n\n" + " ".join(f"Line {n} of the long section." for n in range(9))
    size, overlap = settings.CHUNK_SIZE, settings.CHUNK_OVERLAP
    settings.CHUNK_SIZE, settings.CHUNK_OVERLAP = 12, 0
    document_ingest(source_path="p.md", content=content, app="t-rechunk")
    small = set(Chunk.objects.filter(document__app="t-rechunk").values_list("text", flat=True))
    settings.CHUNK_SIZE, settings.CHUNK_OVERLAP = size, overlap
    result = document_ingest(source_path="p.md", content=content, app="t-rechunk")
    assert result.status == "updated"
    chunks = list(Chunk.objects.filter(document__app="t-rechunk").values_list("text", flat=True))
    new = [text for text in chunks if text not in small]
    assert len(chunks) < len(small) and new
    # only the chunks whose text is new: every sentence was embedded before
    assert result.embedded_texts == len(new)
    assert document_ingest(source_path="p.md", content=content, app="t-rechunk").status == "unchanged"
    document_ingest(source_path="p.md", content=content, app="t-rechunk-fresh")
    assert_same_library("t-rechunk", "t-rechunk-fresh")


@pytest.mark.parametrize("stored_with", ["", "text 0, chunks 500/50"])
def test_a_document_processed_by_another_text_version_is_processed_again_without_embedding(stored_with):
    """Documents stored before the version was (blank), or under an older one, get this version's chunks."""
    document_ingest(source_path="p.md", content=GUIDE_SECTIONS, app="t-version")
    Document.objects.filter(app="t-version").update(processed_with=stored_with)
    Chunk.objects.filter(document__app="t-version", chunk_index=0).update(text="What an older chunker made.")
    result = document_ingest(source_path="p.md", content=GUIDE_SECTIONS, app="t-version")
    assert result.status == "updated"
    # only the chunk whose text differs from the stored one is embedded: every other text was stored as is
    assert result.embedded_texts == 1
    assert (
        Document.objects.get(app="t-version").processed_with == Document.current_processing() != stored_with
    )
    document_ingest(source_path="p.md", content=GUIDE_SECTIONS, app="t-version-fresh")
    assert_same_library("t-version", "t-version-fresh")


def test_the_command_counts_the_documents_chunked_again_apart_from_the_edited_ones(tmp_path, capsys):
    write(tmp_path, "a.md", GUIDE_SECTIONS)
    write(tmp_path, "b.md", "# B\n\nAnother page.")
    write(tmp_path, "c.md", "# C\n\nA third page.")
    call_command("ingest_docs", str(tmp_path), "--app", "t-rechunk-report")
    Document.objects.filter(app="t-rechunk-report", source_path__in=["a.md", "b.md"]).update(
        processed_with=""
    )
    write(tmp_path, "b.md", "# B\n\nAnother page, edited.")
    capsys.readouterr()
    call_command("ingest_docs", str(tmp_path), "--app", "t-rechunk-report")
    summary = capsys.readouterr().out.splitlines()[0]
    assert summary.startswith(
        "0 added, 2 updated (1 re-chunked: new text version or chunk settings), 1 unchanged,"
    ), summary


def test_vectors_of_another_model_are_never_reused():
    document_ingest(source_path="p.md", content=GUIDE_SECTIONS, app="t-model")
    Chunk.objects.filter(document__app="t-model").update(embedding_model="another-model")
    first = Document.objects.get(app="t-model")
    result = document_ingest(source_path="p.md", content=GUIDE_SECTIONS + "\nOne more line.\n", app="t-model")
    assert result.status == "updated" and result.embedded_texts == result.chunks + Sentence.objects.filter(
        chunk__document=first
    ).values("text").distinct().count() + stored_headings("t-model")


def test_a_failing_embedder_leaves_the_previous_version_intact_and_searchable():
    real = get_embedder()
    document_ingest(source_path="p.md", content=GUIDE, app="t-atomic")
    before = list(Chunk.objects.filter(document__app="t-atomic").values_list("id", "text"))
    changed = GUIDE.replace("Run the installer.", "Run the new installer, version two.")
    with pytest.raises(EmbeddingError):
        document_ingest(
            source_path="p.md",
            content=changed,
            app="t-atomic",
            embedder=FailingEmbedder(real, fail_after_texts=1),
        )
    assert list(Chunk.objects.filter(document__app="t-atomic").values_list("id", "text")) == before
    hits = chunk_search(
        query_vector=real.embed_query("how do I set the database url"), top_k=1, app="t-atomic"
    )
    assert "DATABASE_URL" in hits[0].text


def test_bad_files_are_reported_skipped_and_the_others_ingested(tmp_path):
    write(tmp_path, "good.md", "# Good\n\nFine.")
    write(tmp_path, "latin1.md", "# Caf\xe9\n\nTexto en latin-1.".encode("latin-1"))
    write(tmp_path, "empty.md", "  \n")
    write(tmp_path, "notes.txt", "not markdown")
    report = directory_ingest(paths=[tmp_path], app="t-bad")
    statuses = {r.source_path: r.status for r in report.results}
    assert statuses == {"good.md": "added", "latin1.md": "failed", "empty.md": "skipped"}
    assert "not UTF-8" in report.failed[0].error
    assert list(Document.objects.filter(app="t-bad").values_list("source_path", flat=True)) == ["good.md"]


def test_mdx_pages_are_found_in_folders_and_accepted_alone(tmp_path):
    write(tmp_path, "docs/setup.mdx", "import Note from './note'\n\n# Setup\n\nInstall the agent first.")
    write(tmp_path, "docs/notes.txt", "not markdown")
    report = directory_ingest(paths=[tmp_path / "docs"], app="t-mdx")
    assert {r.source_path: r.status for r in report.results} == {"setup.mdx": "added"}
    texts = list(Chunk.objects.filter(document__app="t-mdx").values_list("text", flat=True))
    assert texts == ["Install the agent first."]
    single = directory_ingest(paths=[tmp_path / "docs" / "setup.mdx"], app="t-mdx-one")
    assert [r.status for r in single.results] == ["added"]
    with pytest.raises(CommandError, match=r"not a markdown file \(\.md, \.markdown or \.mdx\)"):
        call_command("ingest_docs", str(tmp_path / "docs" / "notes.txt"), "--app", "t-mdx", verbosity=0)


def test_the_command_reports_failures_with_a_nonzero_exit(tmp_path, capsys):
    write(tmp_path, "good.md", "# Good\n\nFine.")
    write(tmp_path, "bad.md", b"\xff\xfe\x00broken")
    with pytest.raises(CommandError, match="bad.md: not UTF-8"):
        call_command("ingest_docs", str(tmp_path), "--app", "t-cmd", verbosity=0)
    assert "1 added" in capsys.readouterr().out
    assert Document.objects.filter(app="t-cmd", source_path="good.md").exists()


def test_the_command_rejects_a_missing_path(tmp_path):
    with pytest.raises(CommandError, match="no such file or directory"):
        call_command("ingest_docs", str(tmp_path / "nope"), verbosity=0)


def test_two_files_that_would_share_a_source_path_are_refused_before_any_work(tmp_path):
    write(tmp_path, "en/index.md", "# Home\n\nEnglish.")
    write(tmp_path, "es/index.md", "# Inicio\n\nEspañol.")
    with pytest.raises(CommandError, match="would both be stored as 'index.md'"):
        call_command(
            "ingest_docs", str(tmp_path / "en"), str(tmp_path / "es"), "--app", "t-clash", verbosity=0
        )
    assert not Document.objects.filter(app="t-clash").exists()
    call_command("ingest_docs", str(tmp_path), "--app", "t-clash", verbosity=0)
    assert set(Document.objects.filter(app="t-clash").values_list("source_path", flat=True)) == {
        "en/index.md",
        "es/index.md",
    }


def test_prune_removes_documents_whose_files_are_gone_and_dry_run_writes_nothing(tmp_path):
    write(tmp_path, "keep.md", "# Keep\n\nStays.")
    gone = write(tmp_path, "gone.md", "# Gone\n\nWill be removed.")
    directory_ingest(paths=[tmp_path], app="t-prune")
    gone.unlink()
    dry = directory_ingest(paths=[tmp_path], app="t-prune", prune=True, dry_run=True)
    assert dry.removed == ["gone.md"]
    assert Document.objects.filter(app="t-prune").count() == 2
    report = directory_ingest(paths=[tmp_path], app="t-prune", prune=True)
    assert report.removed == ["gone.md"]
    assert list(Document.objects.filter(app="t-prune").values_list("source_path", flat=True)) == ["keep.md"]


def test_url_prefix_gives_each_document_its_url(tmp_path):
    write(tmp_path, "guide/setup.md", "# Setup\n\nText.")
    directory_ingest(paths=[tmp_path], app="t-url", url_prefix="https://docs.example.com/")
    assert Document.objects.get(app="t-url").url == "https://docs.example.com/guide/setup"


def test_a_model_change_is_detected_and_reembed_fixes_it(capsys):
    from django.core.checks import run_checks

    document_ingest(source_path="m.md", content=GUIDE, app="t-model")
    Chunk.objects.filter(document__app="t-model").update(embedding_model="old-model")
    warnings = [m for m in run_checks(tags=["database"], databases=["default"]) if m.id == "biblioteca.W001"]
    assert warnings and "old-model" in warnings[0].msg
    call_command("reembed", "--app", "t-model")
    assert "1 document(s) re-embedded" in capsys.readouterr().out
    assert set(Chunk.objects.filter(document__app="t-model").values_list("embedding_model", flat=True)) == {
        get_embedder().model_name
    }


@pytest.mark.parametrize("app", ["", "t-typo"])
def test_reembed_of_an_app_with_no_documents_says_so_rather_than_covering_every_app(app):
    document_ingest(source_path="m.md", content=GUIDE, app="t-model")
    Chunk.objects.filter(document__app="t-model").update(embedding_model="old-model")
    with pytest.raises(CommandError, match=f"No documents in app {app!r}"):
        call_command("reembed", "--app", app, "--all")
    assert set(Chunk.objects.filter(document__app="t-model").values_list("embedding_model", flat=True)) == {
        "old-model"
    }


def test_chunks_without_sentences_get_them_from_the_next_ingest():
    document_ingest(source_path="s.md", content=GUIDE, app="t-backfill")
    Sentence.objects.filter(chunk__document__app="t-backfill").delete()
    result = document_ingest(source_path="s.md", content=GUIDE, app="t-backfill")
    assert result.status == "updated"
    assert Sentence.objects.filter(chunk__document__app="t-backfill").count() == result.sentences > 0


def test_a_chunk_is_embedded_under_its_passage_header_and_its_sentences_bare():
    document_ingest(source_path="v.md", content="# Foxes\n\n## Colour\n\nThe quick brown fox.", app="t-vec")
    chunk = Chunk.objects.get(document__app="t-vec")
    embedder = get_embedder()
    expected = embedder.embed_documents(["[Doc: Foxes > Colour]\nThe quick brown fox."])[0]
    assert float(np.dot(np.asarray(chunk.embedding), expected)) > 0.999
    sentence = chunk.sentences.get()
    assert float(np.dot(np.asarray(sentence.embedding), embedder.embed_documents([sentence.text])[0])) > 0.999


def test_a_section_that_never_names_its_topic_is_found_by_its_heading():
    """Embedded bare, the Support text scores highest for this question; under its header, Warranty does."""
    document_ingest(
        source_path="policies.md",
        app="t-header",
        content=(
            "# Policies\n\n## Refunds\n\nWrite to us within 30 days and we send the money back.\n\n"
            "## Warranty\n\nTwo years, parts and labour included.\n\n"
            "## Support\n\nWrite to us any day and we answer within two days.\n\n"
            "## Shipping\n\nParcels leave every weekday.\n"
        ),
    )
    query = get_embedder().embed_query("Do you offer a warranty?")
    assert chunk_search(query_vector=query, top_k=1, app="t-header")[0].heading_path[-1] == "## Warranty"


def test_a_dimension_setting_that_no_longer_matches_the_columns_is_an_error(settings):
    from django.core.checks import run_checks

    settings.EMBEDDING_DIMENSIONS = 768
    errors = [m for m in run_checks(tags=["database"], databases=["default"]) if m.id == "biblioteca.E003"]
    assert len(errors) == 2 and "384-dimensional" in errors[0].msg


def test_a_sentence_repeated_in_overlapping_chunks_is_embedded_once(settings):
    settings.CHUNK_SIZE, settings.CHUNK_OVERLAP = 12, 6
    content = "# Overlap\n\n" + " ".join(f"Sentence number {n} is here." for n in range(1, 9))
    embedder = get_embedder()
    texts = embedder.texts_embedded
    result = document_ingest(source_path="o.md", content=content, app="t-dedupe")
    chunks = list(Chunk.objects.filter(document__app="t-dedupe"))
    assert len(chunks) > 1
    repeated = Sentence.objects.filter(chunk__document__app="t-dedupe").values_list("text", flat=True)
    assert len(repeated) > len(set(repeated)), "the overlap must repeat some sentences"
    assert (
        embedder.texts_embedded - texts
        == result.embedded_texts
        == len(chunks) + len(set(repeated)) + stored_headings("t-dedupe")
        == len(chunks) + len(set(repeated)) + 1
    )


@pytest.mark.parametrize(("size", "overlap"), [(0, 0), (-5, 0), (50, 50), (50, 80), (500, -1)])
def test_chunk_sizes_the_chunker_refuses_are_a_configuration_error(settings, size, overlap):
    settings.CHUNK_SIZE, settings.CHUNK_OVERLAP = size, overlap
    (error,) = chunk_settings()
    assert error.id == "biblioteca.E013"
    with pytest.raises(ValueError):
        document_ingest(source_path="sizes.md", content="# Sizes\n\nOne page.\n", app="sizes")
    settings.CHUNK_SIZE, settings.CHUNK_OVERLAP = 50, 49
    assert chunk_settings() == []
