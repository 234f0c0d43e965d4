"""A question in another language than the docs: its vector moved towards the docs' language and its words weighing
less, with the real model."""

from __future__ import annotations

import io
import re
from dataclasses import replace

import numpy as np
import pytest
from django.core.management import call_command

from biblioteca import language_shift
from biblioteca.checks import hybrid_search_settings, trim_settings
from biblioteca.embeddings import get_embedder
from biblioteca.ingest import document_ingest
from biblioteca.language_shift import (
    computed_means,
    docs_language_vector,
    language_means,
    languages_apart,
    reference_questions,
    shipped_means,
)
from biblioteca.models import Chunk
from biblioteca.retrieval import resolve_trim_params, retrieval_prepare, retrieval_trim
from biblioteca.selectors import forget_scope_languages, scope_document_languages
from tests.conftest import free_port

pytestmark = pytest.mark.django_db

ENGLISH = {
    "tokens.md": "# Tokens\n\nRefresh the access token before it expires, then send the new one with every "
    "request to the server.",
    "uploads.md": "# Uploads\n\nLarge files are uploaded in parts, and the server joins the parts once the last "
    "one has arrived.",
}
SPANISH = {
    "tokens.md": "# Tokens\n\nRenueva el token de acceso antes de que caduque y envía el nuevo con cada petición "
    "al servidor.",
}
SPANISH_QUESTION = "¿Cómo renuevo el token de acceso antes de que caduque?"
ENGLISH_QUESTION = "How do I refresh the access token before it expires?"


def shifted(vector: np.ndarray, question: str, app: str) -> np.ndarray:
    return docs_language_vector(vector, languages=languages_apart(question=question, filters={"app": app}))


@pytest.fixture
def apps():
    for name, content in ENGLISH.items():
        document_ingest(source_path=name, content=content, app="t-shift-en")
        document_ingest(source_path=f"en/{name}", content=content, app="t-shift-both")
    for name, content in SPANISH.items():
        document_ingest(source_path=f"es/{name}", content=content, app="t-shift-both")
    assert scope_document_languages(app="t-shift-en") == {"en"}
    assert scope_document_languages(app="t-shift-both") == {"en", "es"}
    return "t-shift-en"


def test_the_reference_questions_are_the_same_questions_in_each_language():
    questions = reference_questions()
    assert set(questions) >= {"en", "es"}
    english = questions["en"]
    assert len(english) >= 100 and len(set(english)) == len(english)
    for language, lines in questions.items():
        assert len(lines) == len(english), language
        for mine, theirs in zip(lines, english):
            assert re.findall(r"`[^`]*`", mine) == re.findall(r"`[^`]*`", theirs)


def test_a_question_in_another_language_than_the_docs_moves_towards_theirs(apps):
    embedder = get_embedder()
    spanish, english = embedder.embed_query(SPANISH_QUESTION), embedder.embed_query(ENGLISH_QUESTION)
    moved = shifted(spanish, SPANISH_QUESTION, apps)
    assert moved.shape == spanish.shape and np.isclose(np.linalg.norm(moved), 1.0)
    # nearer the same question asked in English, and nearer English questions at large
    assert float(moved @ english) > float(spanish @ english)
    means = language_means()
    assert float(moved @ means["en"]) > float(spanish @ means["en"])


def test_a_question_is_told_apart_from_docs_all_in_another_language(apps):
    assert languages_apart(question=SPANISH_QUESTION, filters={"app": apps}) == ("es", "en")
    assert languages_apart(question=ENGLISH_QUESTION, filters={"app": apps}) is None
    assert languages_apart(question=SPANISH_QUESTION, filters={"app": "t-shift-both"}) is None
    assert languages_apart(question="`token`", filters={"app": apps}) is None


def test_a_question_in_the_docs_language_or_over_docs_in_several_is_not_moved(apps):
    embedder = get_embedder()
    english = embedder.embed_query(ENGLISH_QUESTION)
    assert shifted(english, ENGLISH_QUESTION, apps) is english
    spanish = embedder.embed_query(SPANISH_QUESTION)
    assert shifted(spanish, SPANISH_QUESTION, "t-shift-both") is spanish
    # a question too short to tell its language
    assert shifted(spanish, "`token`", apps) is spanish


def test_the_shift_follows_its_setting_and_embeds_nothing_with_the_default_model(apps, settings):
    embedder = get_embedder()
    spanish = embedder.embed_query(SPANISH_QUESTION)
    settings.RETRIEVAL_LANGUAGE_SHIFT = 0
    calls = embedder.calls
    assert shifted(spanish, SPANISH_QUESTION, apps) is spanish
    settings.RETRIEVAL_LANGUAGE_SHIFT = 1.0
    whole = shifted(spanish, SPANISH_QUESTION, apps)
    settings.RETRIEVAL_LANGUAGE_SHIFT = 0.5
    half = shifted(spanish, SPANISH_QUESTION, apps)
    assert float(half @ spanish) > float(whole @ spanish)
    assert embedder.calls == calls  # the default model's means ship with the code: nothing embedded


def test_the_shipped_means_are_the_default_models_for_todays_questions():
    """Fails when the reference questions change and `manage.py language_means` was not run."""
    identity = get_embedder().query_identity()
    shipped = shipped_means(identity)
    assert shipped is not None, "run manage.py language_means"
    computed = computed_means()
    assert set(shipped) == set(computed) == set(reference_questions())
    # The digest already refuses means of other questions. What is left is the model's arithmetic, which differs
    # from one CPU to another in the fourth decimal (up to 1e-4 seen between two machines); another model's
    # means differ by tenths.
    for language, mean in computed.items():
        assert np.allclose(shipped[language], mean, atol=1e-3)
    assert shipped_means("AnotherEmbedder|another-model|384") is None


def test_the_command_writes_the_means_every_process_reads(tmp_path, monkeypatch):
    monkeypatch.setattr(language_shift, "SHIPPED_MEANS", tmp_path / "means.npz")
    call_command("language_means", stdout=io.StringIO())
    identity = get_embedder().query_identity()
    written = shipped_means(identity)
    assert written is not None
    assert all(np.allclose(written[k], v) for k, v in language_means().items())
    assert shipped_means("AnotherEmbedder|another-model|384") is None


def test_retrieval_searches_and_trims_with_the_moved_vector(apps):
    spanish = get_embedder().embed_query(SPANISH_QUESTION)
    prepared = retrieval_prepare(SPANISH_QUESTION, top_k=2, filters={"app": apps}, query_vector=spanish)
    moved = shifted(spanish, SPANISH_QUESTION, apps)
    assert np.allclose(prepared.query_vector, moved) and not np.allclose(moved, spanish)
    first = prepared.chunks[0]
    assert first.title == "Tokens"
    stored = np.asarray(Chunk.objects.get(pk=first.id).embedding, dtype=np.float32)
    assert first.score == pytest.approx(float(stored @ moved), abs=1e-3)


# One English word ("error") in a Spanish question about an upload refused for its size.
WORDS_APART = {
    "errors.md": "# Error pages\n\nEvery error page shows the status code, a short message and a link back home.",
    "uploads.md": "# Uploads\n\nA file larger than ten megabytes is refused with status 413 before it is stored.",
    "tokens.md": "# Tokens\n\nRefresh the access token before it expires, then send the new one with every request.",
    "backups.md": "# Backups\n\nThe database is copied every night and the copies are kept for thirty days.",
    "search.md": "# Search\n\nThe search box looks for whole words in titles and in the text of every page.",
    "themes.md": "# Themes\n\nA theme sets the colours and the fonts of the widget; the default theme is light.",
}


def test_a_question_in_another_language_than_the_docs_is_searched_with_its_words_weighing_less(settings):
    for name, content in WORDS_APART.items():
        document_ingest(source_path=name, content=content, app="t-words-apart")
    filters = {"app": "t-words-apart"}

    def first(question: str) -> str:
        return retrieval_prepare(question, top_k=3, filters=filters, hybrid=True).chunks[0].title

    spanish = "¿Por qué me da error al subir un archivo muy grande?"
    settings.RETRIEVAL_HYBRID_CROSS_LANGUAGE_LEXICAL_SHARE = 1.0
    assert first(spanish) == "Error pages"  # the one word the docs hold outweighs the meaning
    settings.RETRIEVAL_HYBRID_CROSS_LANGUAGE_LEXICAL_SHARE = 0.0
    assert first(spanish) == "Uploads"
    english = "Why do I get an error page when I upload a very large file?"
    ranked = [c.id for c in retrieval_prepare(english, top_k=3, filters=filters, hybrid=True).chunks]
    settings.RETRIEVAL_HYBRID_CROSS_LANGUAGE_LEXICAL_SHARE = 1.0
    assert [c.id for c in retrieval_prepare(english, top_k=3, filters=filters, hybrid=True).chunks] == ranked


UPLOADS = (
    "# Uploads\n\n"
    "Large files are uploaded in parts, and the server joins the parts once the last one has arrived. "
    "Each part is retried three times before the upload fails. "
    "A file over ten megabytes is refused before any part is stored. "
    "The upload page shows an error next to every part that failed. "
    "Finished uploads are listed on the files page, newest first.\n"
)


def test_a_question_in_another_language_than_the_docs_counts_its_words_less_when_trimmed(settings):
    document_ingest(source_path="uploads.md", content=UPLOADS, app="t-trim-apart")
    document_ingest(source_path="tokens.md", content=ENGLISH["tokens.md"], app="t-trim-apart")
    # only the best-scoring lines, so a word's lift decides what is kept
    strict = replace(
        resolve_trim_params(),
        threshold=0.99,
        relative_margin=0.01,
        window=0,
        paragraph_follow=0,
        paragraph_start=0,
        gap_words=0,
    )

    def trimmed(prepared) -> str:
        return retrieval_trim(prepared, params=strict).chunks[0].text

    spanish = retrieval_prepare(
        "¿Por qué me da error al subir un archivo muy grande?", top_k=1, filters={"app": "t-trim-apart"}
    )
    assert spanish.languages == ("es", "en")
    settings.RETRIEVAL_TRIM_CROSS_LANGUAGE_LEXICAL_SHARE = 1.0
    # "error", the one word the docs share with the question, lifts a line about something else over the answer
    assert "shows an error" in trimmed(spanish) and "refused" not in trimmed(spanish)
    settings.RETRIEVAL_TRIM_CROSS_LANGUAGE_LEXICAL_SHARE = 0.0
    assert "refused" in trimmed(spanish)
    english = retrieval_prepare(
        "Why do I get an error when I upload a very large file?", top_k=1, filters={"app": "t-trim-apart"}
    )
    assert english.languages is None
    settings.RETRIEVAL_TRIM_CROSS_LANGUAGE_LEXICAL_SHARE = 1.0
    kept = trimmed(english)
    settings.RETRIEVAL_TRIM_CROSS_LANGUAGE_LEXICAL_SHARE = 0.0
    assert trimmed(english) == kept and "refused" in kept


@pytest.mark.parametrize("share", [-0.5, 1.25])
def test_a_cross_language_trimming_share_outside_its_range_is_a_configuration_error(settings, share):
    settings.RETRIEVAL_TRIM_CROSS_LANGUAGE_LEXICAL_SHARE = share
    assert [m.id for m in trim_settings()] == ["biblioteca.E019"]
    settings.RETRIEVAL_TRIM_CROSS_LANGUAGE_LEXICAL_SHARE = 0.0
    assert trim_settings() == []


def test_the_docs_languages_come_with_the_last_search_of_their_scope(apps, django_assert_num_queries):
    """The search statement reads the scope's languages anyway; only a scope not searched yet costs a query."""
    forget_scope_languages()
    with django_assert_num_queries(1):
        assert scope_document_languages(app=apps) == {"en"}
    retrieval_prepare(ENGLISH_QUESTION, top_k=1, filters={"app": apps}, hybrid=True)
    with django_assert_num_queries(0):
        assert scope_document_languages(app=apps) == {"en"}


def test_a_model_that_cannot_embed_the_reference_questions_leaves_the_question_as_asked(apps, settings):
    """A real, unreachable embeddings server: the question (its vector given) is still searched, unmoved."""
    spanish = get_embedder().embed_query(SPANISH_QUESTION)
    settings.EMBEDDING_BACKEND = "openai"
    settings.EMBEDDING_BASE_URL = f"http://127.0.0.1:{free_port()}/v1"
    settings.EMBEDDING_MODEL = "unreachable"
    settings.EMBEDDING_TIMEOUT = 1.0
    settings.EMBEDDING_MAX_RETRIES = 0
    assert shifted(spanish, SPANISH_QUESTION, apps) is spanish


def test_a_negative_shift_is_a_configuration_error(settings):
    settings.RETRIEVAL_LANGUAGE_SHIFT = -1
    assert [m.id for m in hybrid_search_settings()] == ["biblioteca.E010"]
    settings.RETRIEVAL_LANGUAGE_SHIFT = 0
    assert hybrid_search_settings() == []
