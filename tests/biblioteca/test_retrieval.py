"""retrieve() against the real database: filters, trimming from stored vectors, token counts, settings."""

from __future__ import annotations

import pickle
from dataclasses import asdict, replace

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext, override_settings

from biblioteca.checks import trim_settings
from biblioteca.embeddings import get_embedder
from biblioteca.models import Chunk, Document, Sentence
from biblioteca.retrieval import (
    continues_first,
    params_dict,
    resolve_trim_params,
    retrieval_prepare,
    retrieval_trim,
    retrieve,
    stored_sentences,
    stored_trim_inputs,
    trim_retrieved,
    trim_terms,
)
from biblioteca.search import RetrievedChunk, search
from biblioteca.selectors import sentences_for_chunks
from biblioteca.sentence_memory import memory
from biblioteca.text.chunking import heading_words
from biblioteca.text.identifiers import identifier_keys
from biblioteca.text.lexical import unit_terms
from biblioteca.trimming import TrimInput, passage_units

pytestmark = pytest.mark.django_db

QUESTION = "How long is the password reset link valid?"


def test_untrimmed_retrieval_returns_whole_chunks_with_their_doc_line(library):
    result = retrieve(QUESTION, top_k=3, trim=False, filters={"app": library, "source_type": "en"})
    assert not result.trimmed and len(result.chunks) == 3
    best = result.chunks[0]
    assert best.content.startswith("[Doc: Managing your account > Resetting your password]\n")
    assert best.text == best.original_text and "30 minutes" in best.text
    assert result.tokens_in_context == result.tokens_before > 0
    assert [c.score for c in result.chunks] == sorted((c.score for c in result.chunks), reverse=True)
    assert set(result.timings_ms) >= {"embedding", "search", "total"}


@pytest.fixture
def seed_trimming(settings):
    """The seed's rules alone: no query-relative floor, no dropped chunks."""
    settings.RETRIEVAL_TRIM_RELATIVE_MARGIN = None
    settings.RETRIEVAL_TRIM_DROP_MARGIN = None
    settings.RETRIEVAL_TRIM_DROP_SCORE_MARGIN = None
    settings.RETRIEVAL_TRIM_PASSAGE_MARGIN = None
    settings.RETRIEVAL_TRIM_WINDOW_SPREAD = None
    settings.RETRIEVAL_TRIM_PARAGRAPH_FOLLOW = 0
    settings.RETRIEVAL_TRIM_REASON_FOLLOW = 0
    settings.RETRIEVAL_TRIM_GAP_WORDS = 0
    settings.RETRIEVAL_TRIM_PARAGRAPH_START = 0
    settings.RETRIEVAL_TRIM_NEXT_STEPS = 0
    settings.RETRIEVAL_TRIM_EARLIER_STEPS = 0
    settings.RETRIEVAL_TRIM_HOW_STEPS = 0


def test_trimming_cuts_tokens_keeps_the_answer_and_embeds_only_the_query(library, seed_trimming):
    embedder = get_embedder()
    calls = embedder.calls
    result = retrieve(
        QUESTION,
        top_k=5,
        trim=True,
        trim_threshold=0.85,
        trim_window=1,
        filters={"app": library, "source_type": "en"},
    )
    assert embedder.calls - calls == 1
    assert result.trimmed and result.trim_embedding_calls == 0
    assert result.tokens_in_context < result.tokens_before
    assert "30 minutes" in result.chunks[0].content
    assert all(c.text.strip() for c in result.chunks), "a kept chunk is never empty"
    assert result.trim_params["threshold"] == 0.85 and "trim" in result.timings_ms


def test_a_low_threshold_keeps_every_chunk_unchanged(library):
    result = retrieve(QUESTION, top_k=5, trim=True, trim_threshold=-1.0, filters={"app": library})
    assert all(c.text == c.original_text and not c.trimmed for c in result.chunks)
    assert result.tokens_in_context == result.tokens_before


def test_chunks_stored_without_sentences_fall_back_to_one_batch_call(library, seed_trimming):
    first = retrieve(QUESTION, top_k=2, trim=False, filters={"app": library, "source_type": "en"})
    Sentence.objects.filter(chunk_id__in=[c.id for c in first.chunks]).delete()
    result = retrieve(
        QUESTION,
        top_k=2,
        trim=True,
        trim_threshold=0.85,
        trim_window=1,
        filters={"app": library, "source_type": "en"},
    )
    assert result.trim_embedding_calls == 1
    assert "30 minutes" in result.chunks[0].content


def test_none_means_the_settings(library, settings):
    settings.RETRIEVAL_TRIM = True
    settings.RETRIEVAL_TRIM_THRESHOLD = 0.9
    settings.RETRIEVAL_TRIM_WINDOW = 2
    result = retrieve(QUESTION, filters={"app": library})
    assert result.trimmed and result.trim_params["threshold"] == 0.9 and result.trim_params["window"] == 2
    settings.RETRIEVAL_TRIM = False
    assert not retrieve(QUESTION, filters={"app": library}).trimmed


def test_filters_and_top_k_are_checked(library):
    spanish = retrieve(
        "¿Cuánto cuesta el plan Equipo?", top_k=20, filters={"app": library, "source_type": "es"}
    )
    assert spanish.chunks and all(
        "Facturación" in c.title or "cuenta" in c.title.lower() for c in spanish.chunks
    )
    with pytest.raises(ValueError, match="top_k"):
        retrieve(QUESTION, top_k=21)
    with pytest.raises(ValueError, match="unknown filter"):
        retrieve(QUESTION, filters={"lang": "en"})


def test_one_preparation_trims_many_ways_counting_tokens_as_retrieve_does(library, seed_trimming):
    filters = {"app": library, "source_type": "en"}
    prepared = retrieval_prepare(QUESTION, top_k=5, filters=filters)
    assert prepared.tokens_before == sum(prepared.chunk_tokens.values()) > 0
    assert set(prepared.timings_ms) == {"embedding", "search"}
    embedder = get_embedder()
    calls = embedder.calls
    tight = retrieval_trim(prepared, params=resolve_trim_params(threshold=0.85, window=1))
    loose = retrieval_trim(prepared, params=resolve_trim_params(threshold=-1.0, window=1))
    assert embedder.calls == calls, "trimming reuses the prepared query vector and the stored sentences"
    assert loose.tokens == prepared.tokens_before and loose.chunks == prepared.chunks
    assert tight.tokens < prepared.tokens_before
    whole = retrieve(QUESTION, top_k=5, trim=True, trim_threshold=0.85, trim_window=1, filters=filters)
    assert whole.tokens_in_context == tight.tokens
    assert [c.text for c in whole.chunks] == [c.text for c in tight.chunks]


def test_a_given_query_vector_is_not_embedded_again(library):
    vector = get_embedder().embed_query(QUESTION)
    calls = get_embedder().calls
    prepared = retrieval_prepare(QUESTION, top_k=3, filters={"app": library}, query_vector=vector)
    assert get_embedder().calls == calls and prepared.query_vector is vector


def _trim_reads(queries: CaptureQueriesContext) -> list[str]:
    """The statements that read stored sentences for trimming (not the hybrid search's own sentence side)."""
    reads = [q["sql"] for q in queries.captured_queries if Sentence._meta.db_table in q["sql"]]
    return [sql for sql in reads if "sentence_side" not in sql]


def test_a_trimmed_retrieval_reads_its_passages_sentences_once_then_remembers_them(library, settings):
    settings.RETRIEVAL_CACHE = False
    memory.clear()
    filters = {"app": library, "source_type": "en"}
    with CaptureQueriesContext(connection) as first:
        result = retrieve(QUESTION, top_k=5, trim=True, trim_threshold=0.85, filters=filters)
    assert len(_trim_reads(first)) == 1, "one read of the passages' sentences"
    assert any(c.layout is not None for c in result.chunks), "the fixture grows passages"
    with CaptureQueriesContext(connection) as again:
        remembered = retrieve(QUESTION, top_k=5, trim=True, trim_threshold=0.85, filters=filters)
    assert _trim_reads(again) == [], "remembered at the generation the search read"
    assert [c.text for c in remembered.chunks] == [c.text for c in result.chunks]

    settings.RETRIEVAL_SENTENCE_MEMORY_MB = 0
    with CaptureQueriesContext(connection) as off:
        unremembered = retrieve(QUESTION, top_k=5, trim=True, trim_threshold=0.85, filters=filters)
    assert len(_trim_reads(off)) == 1
    assert [c.text for c in unremembered.chunks] == [c.text for c in result.chunks]

    chunks = search(
        query_vector=result.query_vector, top_k=5, filters=filters, query_text=QUESTION, hybrid=True
    )
    params = resolve_trim_params(threshold=0.85)
    from_read, _ = trim_retrieved(
        chunks,
        query_vector=result.query_vector,
        params=params,
        stored=sentences_for_chunks([i for c in chunks for i in c.member_ids]),
        query_terms=trim_terms(QUESTION, params=params, filters=filters, chunks=chunks),
    )
    assert [c.text for c in result.chunks] == [c.text for c in from_read]


def test_trimming_keeps_the_unit_holding_an_identifier_the_question_names(library, seed_trimming, settings):
    question = "When are invoices sent? Is billing@example.com the billing contact?"
    prepared = retrieval_prepare(question, top_k=3, filters={"app": library, "source_type": "en"})
    named = retrieval_trim(prepared, params=resolve_trim_params(threshold=0.99, window=0))
    settings.RETRIEVAL_TRIM_IDENTIFIER_UNITS = 0
    unnamed = retrieval_trim(prepared, params=resolve_trim_params(threshold=0.99, window=0))
    refunds = "Refunds are possible within 30 days of a charge; write to billing@example.com."
    assert not any(refunds in c.text for c in unnamed.chunks), "its cosine alone does not keep it"
    assert any(refunds in c.text for c in named.chunks)
    assert named.chunks[0].text.startswith("Invoices are sent on the first day of each month")


def test_a_passage_the_vector_search_ranks_best_is_not_dropped(library):
    filters = {"app": library, "source_type": "en"}
    prepared = retrieval_prepare(QUESTION, top_k=3, filters=filters)
    chunks = prepared.chunks
    # the last passage is made the search's favourite; a zero drop margin makes every later passage hopeless
    favourite = [*chunks[:-1], replace(chunks[-1], score=chunks[0].score + 0.01)]
    params = replace(resolve_trim_params(threshold=0.99), drop_margin=0.0, drop_search_margin=0.0)
    stored = stored_sentences(chunks)
    kept, _ = trim_retrieved(favourite, query_vector=prepared.query_vector, params=params, stored=stored)
    assert [c.id for c in kept] == [chunks[0].id, chunks[-1].id]
    assert kept[-1].trimmed, "kept for its search score, cut to its best line"
    plain, _ = trim_retrieved(chunks, query_vector=prepared.query_vector, params=params, stored=stored)
    assert [c.id for c in plain] == [chunks[0].id]
    assert resolve_trim_params().drop_search_margin == 0.0
    with override_settings(RETRIEVAL_TRIM_DROP_SEARCH_MARGIN=None):
        assert resolve_trim_params().drop_search_margin is None


def test_a_near_miss_keeps_its_best_line_instead_of_going_whole(library):
    filters = {"app": library, "source_type": "en"}
    prepared = retrieval_prepare(QUESTION, top_k=3, filters=filters)
    chunks = prepared.chunks
    assert len(chunks) == 3
    # a zero drop margin makes every later passage hopeless; margins of 1 make each of them a near miss, and
    # the closer one keeps a line
    params = replace(resolve_trim_params(threshold=0.99), drop_margin=0.0, drop_search_margin=None)
    stored = stored_sentences(chunks)
    near = replace(params, drop_best_line_margin=1.0, drop_best_line_search_margin=1.0)
    kept, _ = trim_retrieved(chunks, query_vector=prepared.query_vector, params=near, stored=stored)
    assert len(kept) == 2 and kept[0].id == chunks[0].id
    (whole,) = [c for c in chunks[1:] if c.id == kept[1].id]
    # one line of it, unbroken: no window, no elision
    assert kept[1].trimmed and len(kept[1].text) < len(whole.text)
    assert kept[1].text in whole.text
    off = replace(params, drop_best_line_margin=None)
    plain, _ = trim_retrieved(chunks, query_vector=prepared.query_vector, params=off, stored=stored)
    assert [c.id for c in plain] == [chunks[0].id]
    defaults = resolve_trim_params()
    assert (defaults.drop_best_line_margin, defaults.drop_best_line_search_margin) == (0.035, 0.03)
    with override_settings(RETRIEVAL_TRIM_DROP_BEST_LINE_MARGIN=None):
        assert resolve_trim_params().drop_best_line_margin is None


def test_the_closest_line_setting_reaches_the_trimmer():
    assert resolve_trim_params().closest_line
    with override_settings(RETRIEVAL_TRIM_CLOSEST_LINE=False):
        assert not resolve_trim_params().closest_line


def test_the_heading_answer_setting_reaches_the_trimmer():
    assert resolve_trim_params().heading_answer
    with override_settings(RETRIEVAL_TRIM_HEADING_ANSWER=False):
        assert not resolve_trim_params().heading_answer


def test_a_passage_knows_where_it_sits_in_its_document(library):
    prepared = retrieval_prepare("How do I reset my password?", top_k=3, filters={"app": library})
    assert any(c.layout is not None for c in prepared.chunks), (
        "the fixture's passages grow to their neighbours"
    )
    for passage in prepared.chunks:
        low, high = passage.index_range
        indexes = Chunk.objects.filter(id__in=passage.member_ids).values_list("chunk_index", flat=True)
        assert sorted(indexes) == list(range(low, high + 1))


def _placed(document_id: int, index_range: tuple[int, int] | None, heading: str) -> RetrievedChunk:
    return RetrievedChunk(
        id=index_range[0] if index_range else 0,
        chunk_id="",
        document_id=document_id,
        title="Page",
        heading_path=[heading],
        url="",
        score=0.8,
        text="Text.",
        original_text="Text.",
        index_range=index_range,
    )


def test_a_passage_continues_the_first_when_it_touches_it_on_its_page_under_another_heading():
    first = _placed(1, (3, 5), "## Reference")
    assert continues_first(
        [
            first,
            _placed(1, (6, 6), "## Usage"),
            _placed(1, (1, 2), "## Overview"),
            _placed(1, (6, 7), "## Reference"),
            _placed(1, (8, 9), "## Troubleshooting"),
            _placed(2, (6, 6), "## Usage"),
            _placed(1, None, "## Usage"),
        ]
    ) == [False, True, True, False, False, False, False]
    # a first passage whose place is not known (a caller's own chunks) is continued by none
    assert continues_first([_placed(1, None, "## Reference"), _placed(1, (6, 6), "## Usage")]) == [
        False,
        False,
    ]
    assert continues_first([]) == []


def test_the_first_passages_next_section_is_dropped_only_by_the_neighbour_margin(library):
    prepared = retrieval_prepare(QUESTION, top_k=3, filters={"app": library, "source_type": "en"})
    chunks = prepared.chunks
    first, later = chunks[0], chunks[-1]
    _, high = first.index_range
    # the last passage is placed right after the first on its page, under another heading
    placed = [
        *chunks[:-1],
        replace(
            later, document_id=first.document_id, index_range=(high + 1, high + 1), heading_path=["## Next"]
        ),
    ]
    params = replace(resolve_trim_params(threshold=0.99), drop_margin=0.0, drop_neighbour_margin=1.0)
    stored = stored_sentences(chunks)
    kept, _ = trim_retrieved(placed, query_vector=prepared.query_vector, params=params, stored=stored)
    assert [c.id for c in kept] == [first.id, later.id]
    plain, _ = trim_retrieved(chunks, query_vector=prepared.query_vector, params=params, stored=stored)
    assert [c.id for c in plain] == [first.id]
    assert resolve_trim_params().drop_neighbour_margin == 0.0375
    with override_settings(RETRIEVAL_TRIM_DROP_NEIGHBOUR_MARGIN=None):
        assert resolve_trim_params().drop_neighbour_margin is None


def test_the_earlier_sections_rule_follows_its_setting():
    assert resolve_trim_params().earlier_sections
    with override_settings(RETRIEVAL_TRIM_EARLIER_SECTIONS=False):
        assert not resolve_trim_params().earlier_sections


def test_a_question_asking_why_keeps_what_follows_its_best_line(library, seed_trimming):
    strict = resolve_trim_params(threshold=0.99, window=0)
    follow = replace(strict, reason_follow=3)
    why = retrieval_prepare(
        "Why are invoices sent on the first day of the month?", top_k=3, filters={"app": library}
    )
    how = retrieval_prepare(
        "How are invoices sent on the first day of the month?", top_k=3, filters={"app": library}
    )
    assert retrieval_trim(why, params=follow).tokens > retrieval_trim(why, params=strict).tokens
    assert [c.text for c in retrieval_trim(how, params=follow).chunks] == [
        c.text for c in retrieval_trim(how, params=strict).chunks
    ]


def test_an_invalid_trimming_setting_is_a_configuration_error(settings):
    assert trim_settings() == []
    settings.RETRIEVAL_TRIM_PARAGRAPH_FOLLOW = -1
    (error,) = trim_settings()
    assert error.id == "biblioteca.E008" and "RETRIEVAL_TRIM_PARAGRAPH_FOLLOW" in error.msg


def test_a_grown_passage_tells_the_trimmer_where_the_chunk_retrieval_found_begins(library):
    prepared = retrieval_prepare("How do I reset my password?", top_k=3, filters={"app": library})
    grown = [c for c in prepared.chunks if c.layout is not None and len(c.layout.members) > 1]
    assert grown, "the fixture's passages grow to their neighbours"
    for passage, trim in zip(grown, stored_trim_inputs(grown, query_vector=prepared.query_vector)):
        hit = next(m for m in passage.layout.members if m.chunk_id == passage.id)
        starts = [a for a, _ in trim.spans]
        assert trim.hit_start == hit.offset
        assert starts[trim.hit_unit] >= hit.offset
        assert all(a < hit.offset for a in starts[: trim.hit_unit])
    alone = [c for c in prepared.chunks if c.layout is None]
    assert all(t.hit_start is None for t in stored_trim_inputs(alone, query_vector=prepared.query_vector))


def test_a_passage_met_for_the_first_time_takes_the_stems_stored_with_its_sentences(library):
    """The stems ingest stored are those stemming anew gives; trimming takes them rather than stemming, and only
    while the search finds the document processed under today's versions."""
    question = "How do I reset my password?"

    met: list[TrimInput] = []

    def units_terms() -> tuple[tuple[frozenset[str], ...], tuple[str, ...], RetrievedChunk]:
        prepared = retrieval_prepare(question, top_k=5, filters={"app": library})
        passage = next(c for c in prepared.chunks if c.layout is not None and len(c.layout.members) > 1)
        passage_units.cache_clear()  # the passage met for the first time
        stored = sentences_for_chunks(passage.member_ids)
        (trim,) = stored_trim_inputs([passage], query_vector=prepared.query_vector, stored=stored)
        met.append(trim)
        return trim.unit_terms, trim.units, passage

    def keys_of(unit: int) -> frozenset[str]:
        return met[-1].identifier_keys[unit]

    terms, units, passage = units_terms()
    assert terms == tuple(unit_terms(u, passage.language) for u in units)
    last = Sentence.objects.filter(chunk_id=passage.id).order_by("-position").first()
    assert last.text.strip() in units

    Sentence.objects.filter(pk=last.pk).update(terms="stored", identifier_keys="--stored")
    terms, units, _ = units_terms()
    assert terms[units.index(last.text.strip())] == {"stored"}
    assert keys_of(units.index(last.text.strip())) == {"--stored"}
    # A sentence stored without its stems (by the release before, while this one rolls out): its chunk's are
    # stemmed anew.
    Sentence.objects.filter(pk=last.pk).update(terms=None)
    terms, units, passage = units_terms()
    assert sentences_for_chunks([passage.id])[passage.id].terms is None
    assert terms == tuple(unit_terms(u, passage.language) for u in units)
    Sentence.objects.filter(pk=last.pk).update(terms="stored")
    Document.objects.filter(pk=passage.document_id).update(processed_with="text 2, terms 0, chunks 500/50")
    terms, units, passage = units_terms()
    assert passage.processed_with == "text 2, terms 0, chunks 500/50"
    assert terms == tuple(unit_terms(u, passage.language) for u in units)
    assert met[-1].identifier_keys == tuple(identifier_keys(u) for u in units)


def test_trim_inputs_carry_their_headings_cosines_with_the_question(library):
    prepared = retrieval_prepare("How do I reset my password?", top_k=5, filters={"app": library})
    inputs = stored_trim_inputs(prepared.chunks, query_vector=prepared.query_vector)
    embedder = get_embedder()
    headed = set(
        Chunk.objects.filter(app=library, heading_embedding__isnull=False).values_list("pk", flat=True)
    )
    put_back = 0
    for chunk, trim_input in zip(prepared.chunks, inputs):
        cosines = dict(trim_input.heading_cosines)
        if chunk.layout is None:
            continue
        for unit, (a, b) in enumerate(trim_input.spans):
            if (a, b) in chunk.layout.headings:
                words = heading_words(chunk.layout.text[a:b])
                expected = float(embedder.embed_documents([words])[0] @ prepared.query_vector)
                assert cosines[unit] == pytest.approx(expected, abs=3e-3)
                put_back += 1
        # the heading the passage starts under counts when its first chunk opens that section
        assert (-1 in cosines) == (chunk.layout.members[0].chunk_id in headed)
    assert put_back, "some passage must hold a heading put back between its chunks"


def test_chunks_stored_before_heading_vectors_give_no_heading_cosines(library):
    """Trimming then does what it did before: a library gets its heading vectors at its next ingest."""
    Chunk.objects.filter(app=library).update(heading_embedding=None)
    memory.clear()
    prepared = retrieval_prepare("How do I reset my password?", top_k=5, filters={"app": library})
    inputs = stored_trim_inputs(prepared.chunks, query_vector=prepared.query_vector)
    assert inputs and all(t.heading_cosines == () for t in inputs)


def test_trim_inputs_survive_pickling_with_their_stored_stems_unasked(library):
    """A calibration sweep keeps its trim inputs in var/ between runs (bench/calibrate_trim.py); what a passage
    asks of its stored sentences goes with it, and gives the same units and stems after the trip."""
    prepared = retrieval_prepare("How do I reset my password?", top_k=5, filters={"app": library})
    assert any(c.layout is not None and len(c.layout.members) > 1 for c in prepared.chunks)
    inputs = stored_trim_inputs(prepared.chunks, query_vector=prepared.query_vector)
    assert all(t.stored_terms is not None for t in inputs)
    passage_units.cache_clear()
    copies = pickle.loads(pickle.dumps(inputs))
    assert [c.stored_terms() for c in copies] == [t.stored_terms() for t in inputs]
    assert [(c.units, c.unit_terms, c.identifier_keys) for c in copies] == [
        (t.units, t.unit_terms, t.identifier_keys) for t in inputs
    ]


def test_the_trimmer_knows_the_level_of_the_heading_a_passage_starts_under(library):
    prepared = retrieval_prepare("How do I reset my password?", top_k=3, filters={"app": library})
    under = [
        replace(prepared.chunks[0], heading_path=path)
        for path in ([], ["# Guide"], ["# Guide", "### Tokens"])
    ]
    assert [t.heading_level for t in stored_trim_inputs(under, query_vector=prepared.query_vector)] == [
        0,
        1,
        3,
    ]
    assert [t.section_levels[0] for t in stored_trim_inputs(under, query_vector=prepared.query_vector)] == [
        0,
        1,
        3,
    ]


def test_params_dict_is_asdict_and_each_caller_gets_its_own_copy():
    params = resolve_trim_params(threshold=0.8)
    first = params_dict(params)
    assert first == asdict(params)
    first["threshold"] = 0.1
    assert params_dict(params)["threshold"] == 0.8
    assert params_dict(resolve_trim_params(threshold=0.7))["threshold"] == 0.7
