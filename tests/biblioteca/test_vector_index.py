"""The HNSW index is built with the configured m and ef_construction, and rebuilt in place when they change."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import DataError, connection

from biblioteca.checks import vector_search_options, vector_search_settings
from biblioteca.embeddings import get_embedder
from biblioteca.ingest import document_ingest
from biblioteca.selectors import chunk_search
from biblioteca.vector_index import (
    HnswOptions,
    IndexOptionsError,
    configured_hnsw_options,
    hnsw_index_sql,
    live_hnsw_options,
    vector_index_rebuild,
)
from biblioteca.vector_session import vector_search_statement

# CREATE INDEX CONCURRENTLY cannot run inside a transaction: the rebuild tests commit, and ingest their own
# document (the session's fixture library is flushed by whichever transactional test runs first).
rebuilding = pytest.mark.django_db(transaction=True)
DOC = "# Lighthouse\n\nThe lighthouse lamp is cleaned every Tuesday by the keeper.\n"


@pytest.fixture
def restore_index():
    yield
    vector_index_rebuild(options=configured_hnsw_options())


@pytest.mark.django_db
def test_the_migrated_index_has_the_configured_options():
    assert live_hnsw_options() == configured_hnsw_options() == HnswOptions(m=16, ef_construction=64)


@rebuilding
def test_a_rebuild_swaps_in_an_index_with_new_options_and_searches_still_work(restore_index):
    document_ingest(source_path="lighthouse.md", content=DOC, app="rebuild", source_type="en")
    vector_index_rebuild(options=HnswOptions(m=8, ef_construction=32), maintenance_work_mem="256MB")
    assert live_hnsw_options() == HnswOptions(m=8, ef_construction=32)
    hits = chunk_search(query_vector=get_embedder().embed_query("When is the lamp cleaned?"), top_k=1)
    assert hits and "lamp" in hits[0].text
    codes = [message.id for message in vector_search_settings()]
    assert "biblioteca.W002" in codes, "the check says the index differs from the settings"


@rebuilding
def test_the_command_rebuilds_only_when_asked_values_differ(restore_index, capsys):
    call_command("rebuild_vector_index", "--if-changed")
    assert "already built with m=16" in capsys.readouterr().out
    call_command("rebuild_vector_index", "--m", "12", "--ef-construction", "48")
    assert live_hnsw_options() == HnswOptions(m=12, ef_construction=48)


@pytest.mark.django_db
@pytest.mark.parametrize(("m", "ef"), [(1, 64), (101, 400), (16, 20), (16, 1001), (0, 64), (16, 0)])
def test_options_pgvector_would_refuse_are_refused_before_touching_the_index(m, ef):
    with pytest.raises(IndexOptionsError):
        hnsw_index_sql(options=HnswOptions(m=m, ef_construction=ef))
    with pytest.raises(CommandError, match="HNSW"):
        call_command("rebuild_vector_index", "--m", str(m), "--ef-construction", str(ef))
    with pytest.raises(CommandError, match="HNSW"):
        call_command("rebuild_vector_index", "--m", str(m), "--ef-construction", str(ef), "--if-changed")
    assert live_hnsw_options() == configured_hnsw_options()


@pytest.mark.django_db(transaction=True)  # as the command runs: autocommit, no transaction to abort
def test_a_memory_size_postgresql_refuses_is_named_and_the_index_left_alone():
    with pytest.raises(CommandError, match="maintenance_work_mem 'bogus' is not a memory size"):
        call_command("rebuild_vector_index", "--maintenance-work-mem", "bogus")
    assert live_hnsw_options() == configured_hnsw_options()


def test_the_iterative_scan_mode_and_its_budget_are_settings(settings):
    settings.RETRIEVAL_EF_SEARCH = 0
    settings.RETRIEVAL_ITERATIVE_SCAN = "relaxed_order"
    settings.RETRIEVAL_MAX_SCAN_TUPLES = 50000
    assert vector_search_statement(iterative=True) == (
        "SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true), "
        "set_config('hnsw.max_scan_tuples', '50000', true)"
    )
    assert vector_search_statement(iterative=False) is None
    settings.RETRIEVAL_ITERATIVE_SCAN = "off"
    assert vector_search_statement(iterative=True) is None


def test_an_unknown_iterative_scan_mode_is_a_configuration_error(settings):
    settings.RETRIEVAL_ITERATIVE_SCAN = "sideways"
    settings.RETRIEVAL_EF_SEARCH = 64
    assert [m.id for m in vector_search_options()] == ["biblioteca.E004"]
    assert vector_search_statement(iterative=True) == "SELECT set_config('hnsw.ef_search', '64', true)", (
        "never set, so the check is all that says it"
    )


@pytest.mark.django_db
def test_an_ef_search_pgvector_refuses_fails_searches_so_the_check_refuses_it(settings):
    settings.RETRIEVAL_EF_SEARCH = 1001
    with connection.cursor() as cursor:
        cursor.execute("SELECT '[1]'::vector")  # pgvector checks the range once loaded in the connection
    with pytest.raises(DataError, match="ef_search"):
        chunk_search(query_vector=get_embedder().embed_query("When is the lamp cleaned?"), top_k=1)
    assert [m.id for m in vector_search_options()] == ["biblioteca.E011"]
    settings.RETRIEVAL_EF_SEARCH = -1
    assert [m.id for m in vector_search_options()] == ["biblioteca.E011"]


@pytest.mark.parametrize(
    ("ef_search", "candidates", "codes"),
    [
        (160, 40, []),
        (1000, 40, []),
        (40, 40, []),
        (20, 40, ["biblioteca.W003"]),
        (0, 60, ["biblioteca.W003"]),
    ],
)
def test_an_ef_search_under_the_vector_sides_candidates_is_warned_of(settings, ef_search, candidates, codes):
    settings.RETRIEVAL_EF_SEARCH = ef_search
    settings.RETRIEVAL_HYBRID_CANDIDATES = candidates
    assert [m.id for m in vector_search_options()] == codes
