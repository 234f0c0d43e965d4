"""The retrieval-result cache: a repeated question skips the embedding and the search, and never outlives a change
to the library it was found in. Real model, real database, real cache."""

from __future__ import annotations

import numpy as np
import pytest
from django.core.cache import caches

from biblioteca import retrieval_cache
from biblioteca.embeddings import get_embedder
from biblioteca.ingest import document_ingest
from biblioteca.models import Document
from biblioteca.retrieval import retrieve
from biblioteca.retrieval_cache import CACHE_ALIAS, code_fingerprint
from oraculo.answering import ask
from oraculo.models import OraculoQuery

pytestmark = pytest.mark.django_db

QUESTION = "How long is the password reset link valid?"
NEW_FACT = "# Zorblax quotas\n\nThe zorblax quota resets every Tuesday at noon, for every workspace.\n"
NEW_QUESTION = "When does the zorblax quota reset?"


def embeddings() -> tuple[int, int]:
    embedder = get_embedder()
    return embedder.calls, embedder.cache_hits


def test_a_repeated_question_skips_the_embedding_and_the_search(library, django_assert_num_queries):
    first = retrieve(QUESTION, top_k=3, filters={"app": library})
    before = embeddings()
    with django_assert_num_queries(1):  # the library's generation, nothing else
        second = retrieve(QUESTION, top_k=3, filters={"app": library})
    assert embeddings() == before
    assert not first.cached and second.cached
    assert [(c.id, c.text, c.score) for c in second.chunks] == [(c.id, c.text, c.score) for c in first.chunks]
    assert (second.tokens_in_context, second.tokens_before) == (first.tokens_in_context, first.tokens_before)
    assert (second.trimmed, second.trim_params) == (first.trimmed, first.trim_params)
    np.testing.assert_array_equal(second.query_vector, first.query_vector)
    assert (
        second.timings_ms["embedding"] == second.timings_ms["search"] == 0.0
        and second.trim_embedding_calls == 0
    )
    assert second.timings_ms["cache"] == second.timings_ms["total"]


def test_the_same_question_spaced_differently_is_the_same_entry(library):
    retrieve(QUESTION, filters={"app": library})
    assert retrieve(f"  {QUESTION.replace(' ', '   ')}\n", filters={"app": library}).cached


def test_an_ingest_in_the_app_is_seen_at_once(library):
    before = retrieve(NEW_QUESTION, top_k=3, trim=False, filters={"app": library})
    assert all("zorblax" not in c.text for c in before.chunks)
    document_ingest(source_path="quotas.md", content=NEW_FACT, app=library, source_type="en")
    after = retrieve(NEW_QUESTION, top_k=3, trim=False, filters={"app": library})
    assert not after.cached
    assert "zorblax" in after.chunks[0].text


def test_a_deleted_document_is_never_served_from_the_cache(library):
    document_ingest(source_path="quotas.md", content=NEW_FACT, app=library, source_type="en")
    found = retrieve(NEW_QUESTION, top_k=3, trim=False, filters={"app": library})
    assert "zorblax" in found.chunks[0].text
    Document.objects.filter(app=library, source_path="quotas.md").delete()
    again = retrieve(NEW_QUESTION, top_k=3, trim=False, filters={"app": library})
    assert not again.cached
    assert all("zorblax" not in c.text for c in again.chunks)


def test_an_edited_title_is_never_served_from_the_cache(library):
    """The admin edits documents in place: the trigger catches any write, not only the ingest service's."""
    first = retrieve(QUESTION, top_k=1, trim=False, filters={"app": library})
    Document.objects.filter(pk=first.chunks[0].document_id).update(title="Account help")
    again = retrieve(QUESTION, top_k=1, trim=False, filters={"app": library})
    assert not again.cached and again.chunks[0].title == "Account help"


def test_a_write_in_another_app_keeps_this_apps_entries_but_not_the_unfiltered_ones(library):
    retrieve(QUESTION, filters={"app": library})
    retrieve(QUESTION, filters={})
    document_ingest(source_path="quotas.md", content=NEW_FACT, app="another-app")
    assert retrieve(QUESTION, filters={"app": library}).cached
    assert not retrieve(QUESTION, filters={}).cached


@pytest.mark.parametrize(
    "changed",
    [
        {"top_k": 4},
        {"trim": False},
        {"trim_threshold": 0.8},
        {"trim_window": 2},
        {"trim_min_sentences": 2},
        {"hybrid": False},
        {"filters": {"app": "fixture-guide", "source_type": "en"}},
        {"query": QUESTION.lower()},
    ],
)
def test_other_options_or_another_question_miss(library, changed):
    asked = {"query": QUESTION, "top_k": 3, "trim": True, "hybrid": True, "filters": {"app": library}}
    retrieve(asked.pop("query"), **asked)
    asked = {"query": QUESTION, "top_k": 3, "trim": True, "hybrid": True, "filters": {"app": library}}
    asked.update(changed)
    assert not retrieve(asked.pop("query"), **asked).cached


def test_options_spelled_out_as_the_settings_have_them_share_the_entry(library, settings):
    retrieve(QUESTION, trim=True, filters={"app": library})
    explicit = retrieve(
        QUESTION,
        trim=True,
        trim_threshold=settings.RETRIEVAL_TRIM_THRESHOLD,
        hybrid=settings.RETRIEVAL_HYBRID,
        filters={"app": library, "source_type": None},
    )
    assert explicit.cached


def test_a_changed_retrieval_setting_misses(library, settings):
    retrieve(QUESTION, filters={"app": library})
    settings.RETRIEVAL_PASSAGE_WORDS = 40
    assert not retrieve(QUESTION, filters={"app": library}).cached


def test_results_found_by_other_ranking_or_trimming_code_miss(library, monkeypatch):
    retrieve(QUESTION, filters={"app": library})
    monkeypatch.setattr(retrieval_cache, "result_code_fingerprint", lambda: "a later deploy")
    assert not retrieve(QUESTION, filters={"app": library}).cached


def test_the_code_fingerprint_follows_every_source_under_a_folder(tmp_path):
    (tmp_path / "text").mkdir()
    (tmp_path / "search.py").write_text("RANKING = 1\n")
    (tmp_path / "text" / "units.py").write_text("WINDOW = 1\n")
    (tmp_path / "text" / "notes.md").write_text("not code")
    paths = [tmp_path / "search.py", tmp_path / "text"]
    before = code_fingerprint(paths)
    (tmp_path / "text" / "notes.md").write_text("still not code")
    assert code_fingerprint(paths) == before
    (tmp_path / "text" / "units.py").write_text("WINDOW = 2\n")
    assert code_fingerprint(paths) != before


def test_the_fingerprint_reads_the_modules_that_rank_and_trim():
    assert len(retrieval_cache.result_code_fingerprint()) == 16
    missing = [n for n in retrieval_cache._RESULT_CODE if not (retrieval_cache._PACKAGE / n).exists()]
    assert not missing, "a module named in _RESULT_CODE was moved or renamed"


def test_a_given_query_vector_always_searches(library):
    vector = get_embedder().embed_query(QUESTION)
    retrieve(QUESTION, filters={"app": library}, query_vector=vector)
    assert not retrieve(QUESTION, filters={"app": library}, query_vector=vector).cached


def test_the_setting_turns_the_cache_off(library, settings, django_assert_num_queries):
    settings.RETRIEVAL_CACHE = False
    retrieve(QUESTION, filters={"app": library})
    calls, hits = embeddings()
    again = retrieve(QUESTION, filters={"app": library})
    assert not again.cached
    assert embeddings() == (calls, hits + 1), "searched again, with the question's cached vector"


def test_a_cached_answer_is_still_logged_with_its_vector(library):
    first = ask(QUESTION, app=library)
    second = ask(QUESTION, app=library)
    assert second.query_id != first.query_id
    logged = OraculoQuery.objects.get(pk=second.query_id)
    assert logged.question == QUESTION and logged.chunk_ids == [c.chunk_id for c in first.sources]
    assert logged.latency_ms["embedding"] == 0.0 and "cache" in logged.latency_ms
    np.testing.assert_allclose(
        np.asarray(logged.vector.embedding),
        np.asarray(OraculoQuery.objects.get(pk=first.query_id).vector.embedding),
    )


def test_the_cache_is_bounded_apart_from_the_other_caches(settings):
    results = settings.CACHES[CACHE_ALIAS]
    assert results["OPTIONS"]["MAX_ENTRIES"] == settings.RETRIEVAL_CACHE_SIZE
    assert results["LOCATION"] not in {
        c.get("LOCATION") for a, c in settings.CACHES.items() if a != CACHE_ALIAS
    }
    assert caches[CACHE_ALIAS] is not caches["default"]
