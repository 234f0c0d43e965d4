"""Nearest-neighbour search over the fixture library: paraphrased questions find the right chunk, EN and ES."""

from __future__ import annotations

import json

import numpy as np
import pytest
from django.db import connection
from pgvector import Vector

from biblioteca.embeddings import get_embedder
from biblioteca.models import LibraryGeneration
from biblioteca.selectors import (
    Neighbourhood,
    chunk_neighbours,
    chunk_search,
    library_generation,
    sentences_for_chunks,
    vector_literal,
)

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("question", "lang", "expected_heading"),
    [
        ("I forgot my password and cannot sign in, what should I do?", "en", "## Resetting your password"),
        ("What happens to my data if I close my account?", "en", "## Deleting your account"),
        ("How many calls to the API am I allowed each minute?", "en", "## Rate limits"),
        ("No me acuerdo de la clave para entrar, ¿cómo consigo otra?", "es", "## Restablecer la contraseña"),
        ("¿Cuándo me llega la factura mensual?", "es", "## Facturas"),
    ],
)
def test_a_paraphrased_question_finds_the_right_chunk(library, question, lang, expected_heading):
    hits = chunk_search(
        query_vector=get_embedder().embed_query(question), top_k=1, app=library, source_type=lang
    )
    assert hits[0].heading_path[-1] == expected_heading
    assert 0 < hits[0].score <= 1


def test_filters_restrict_the_search(library):
    vector = get_embedder().embed_query("password")
    assert {
        h.document.source_type
        for h in chunk_search(query_vector=vector, top_k=10, app=library, source_type="es")
    } == {"es"}
    assert chunk_search(query_vector=vector, top_k=5, app="no-such-app") == []


def test_the_hnsw_index_is_in_place():
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT indexdef FROM pg_indexes WHERE indexname = 'chunk_embedding_hnsw'")
        (definition,) = cursor.fetchone()
    assert "hnsw" in definition and "vector_cosine_ops" in definition


def test_a_filtered_search_asks_pgvector_for_an_iterative_scan(library):
    """With a filter, HNSW alone could return fewer than top_k (its first candidates all in other apps);
    pgvector >= 0.8 keeps scanning when told to. This machine's planner picks exact scans at this size, so the
    test checks that the setting goes with filtered searches, and only with them."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    vector = get_embedder().embed_query("How do I reset my password?")
    with CaptureQueriesContext(connection) as filtered:
        assert len(chunk_search(query_vector=vector, top_k=5, app=library)) == 5
    with CaptureQueriesContext(connection) as unfiltered:
        chunk_search(query_vector=vector, top_k=5)
    statements = [q["sql"] for q in filtered.captured_queries]
    setting = next(
        n for n, sql in enumerate(statements) if "set_config('hnsw.iterative_scan', 'strict_order'" in sql
    )
    assert any("biblioteca_chunk" in sql for sql in statements[setting + 1 :])
    assert not any("iterative_scan" in q["sql"] for q in unfiltered.captured_queries)


def test_neighbours_come_with_the_generation_they_were_read_at_when_asked(library):
    vector = get_embedder().embed_query("How long is the password reset link valid?")
    rows = chunk_search(query_vector=vector, top_k=3, app=library, source_type="en")
    hits = [(r.document_id, r.chunk_index) for r in rows]
    neighbourhood = chunk_neighbours(hits=hits, generations=True)
    assert {r.document_id for r in rows} <= neighbourhood.pieces.keys()
    for document_id, pieces in neighbourhood.pieces.items():
        assert [p.index for p in pieces] == sorted(p.index for p in pieces)
        assert str(neighbourhood.generations[document_id]) == library_generation(app=library)
    # A search filtered to one app looks its generation up once instead of joining each chunk's: the same values,
    # that app's.
    assert chunk_neighbours(hits=hits, generations=True, app=library) == neighbourhood
    LibraryGeneration.objects.create(app="elsewhere", generation=987654)
    elsewhere = chunk_neighbours(hits=hits, generations=True, app="elsewhere").generations
    assert elsewhere == dict.fromkeys(neighbourhood.pieces, 987654)
    assert chunk_neighbours(hits=hits) == Neighbourhood(neighbourhood.pieces, {})
    assert chunk_neighbours(hits=[], generations=True) == Neighbourhood({}, {})


def test_stored_sentences_read_in_binary_are_the_databases_own_half_precision_values(library):
    """Trimming's results must not move with the wire format: spans and vectors are, bit for bit, those the
    database gives in text form, read at the app's generation."""
    vector = get_embedder().embed_query("How long is the password reset link valid?")
    ids = [r.id for r in chunk_search(query_vector=vector, top_k=3, app=library, source_type="en")]
    stored = sentences_for_chunks(ids)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT chunk_id, array_agg(start_offset ORDER BY position), array_agg(end_offset ORDER BY position), "
            "array_agg(embedding::text ORDER BY position) FROM biblioteca_sentence WHERE chunk_id = ANY(%s) "
            "GROUP BY chunk_id",
            [ids],
        )
        as_text = {row[0]: row[1:] for row in cursor.fetchall()}
    assert as_text.keys() == stored.keys() == set(ids)
    for chunk_id, (starts, ends, vectors) in as_text.items():
        assert stored[chunk_id].spans == tuple(zip(starts, ends))
        assert stored[chunk_id].vectors.dtype == np.float32
        expected = np.array([json.loads(v) for v in vectors], dtype=np.float16).astype(np.float32)
        assert stored[chunk_id].vectors.tobytes() == expected.tobytes()
        assert str(stored[chunk_id].generation) == library_generation(app=library)
    assert sentences_for_chunks([]) == {}


def test_the_vector_literal_is_pgvectors_own_text_form_however_the_vector_comes():
    vector = np.random.default_rng(7).standard_normal(384).astype(np.float32)
    assert vector_literal(vector) == Vector._to_db(vector)
    assert vector_literal(vector.astype(np.float64)) == Vector._to_db(vector.astype(np.float64))
    assert vector_literal(vector[::-1]) == Vector._to_db(vector[::-1].copy())
    with pytest.raises(ValueError, match="one dimension"):
        vector_literal(vector.reshape(2, -1))


def test_hits_absorbed_into_one_passage_are_refilled_up_to_top_k(settings):
    """One long section found by many of its chunks: each grown passage absorbs the hits below it, and a
    deeper search brings the places back, so `top_k` passages come back while the scope holds that many."""
    from biblioteca.ingest import document_ingest
    from biblioteca.search import search

    settings.CHUNK_SIZE, settings.CHUNK_OVERLAP = 30, 5
    keeper = " ".join(
        f"On day {n} the keeper climbs the tower, polishes the lighthouse lamp and trims the wick so the "
        f"beam stays bright for ships passing the rocks near the harbour number {n}."
        for n in range(14)
    )
    document_ingest(source_path="lighthouse.md", content=f"# Lighthouse\n\n{keeper}\n", app="t-refill")
    document_ingest(
        source_path="bread.md", content="# Bread\n\nKnead the dough and let it rise.\n", app="t-refill"
    )
    document_ingest(
        source_path="tea.md", content="# Tea\n\nBoil the water before you pour it.\n", app="t-refill"
    )
    vector = get_embedder().embed_query("How does the keeper keep the lighthouse lamp bright?")
    passages = search(query_vector=vector, top_k=3, filters={"app": "t-refill"}, passage_words=300)
    assert len(passages) == 3
    assert len({p.id for p in passages}) == 3


@pytest.mark.parametrize("passage_words", [0, 300])
@pytest.mark.parametrize("hybrid", [False, True])
def test_a_section_repeated_on_many_pages_comes_back_once(passage_words, hybrid):
    """Reference pages that each carry the same option section: one copy, and the places it would have taken
    go to other sections, with or without growing passages, by vectors or fused."""
    from biblioteca.ingest import document_ingest
    from biblioteca.search import search

    option = (
        "#### `otp`\n\n* Default: null\n* Type: null or String\n\n"
        "A one-time password from a two-factor authenticator, needed when publishing with 2FA on.\n"
    )
    for command in ("publish", "access", "owner", "team", "deprecate", "unpublish"):
        document_ingest(
            source_path=f"npm-{command}.md",
            content=f"# npm {command}\n\nThe {command} command of the registry client.\n\n## Configuration\n\n{option}",
            app="t-repeats",
        )
    document_ingest(
        source_path="npm-login.md",
        content="# npm login\n\nLog in with your account; with two-factor auth on, npm asks for a one-time code.\n",
        app="t-repeats",
    )
    question = "Where do I give the one-time password of my two-factor authenticator?"
    passages = search(
        query_vector=get_embedder().embed_query(question),
        top_k=4,
        filters={"app": "t-repeats"},
        query_text=question,
        hybrid=hybrid,
        passage_words=passage_words,
    )
    holding = [p for p in passages if "A one-time password from a two-factor authenticator" in p.text]
    assert len(holding) == 1
    assert len(passages) == 4
    assert any(p.title == "npm login" for p in passages)
