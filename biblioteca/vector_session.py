"""pgvector's per-search settings, scoped to the search's own transaction."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.conf import settings
from django.db import connections, transaction

ITERATIVE_SCAN_MODES = ("off", "relaxed_order", "strict_order")
PGVECTOR_DEFAULT_EF_SEARCH = 40
PGVECTOR_MAX_EF_SEARCH = 1000


def vector_search_parameters(*, iterative: bool) -> dict[str, str]:
    """pgvector's settings a search needs: RETRIEVAL_EF_SEARCH and, when asked, the iterative scan."""
    parameters = {}
    if settings.RETRIEVAL_EF_SEARCH > 0:
        parameters["hnsw.ef_search"] = str(int(settings.RETRIEVAL_EF_SEARCH))
    mode = settings.RETRIEVAL_ITERATIVE_SCAN
    if iterative and mode in ITERATIVE_SCAN_MODES[1:]:
        parameters["hnsw.iterative_scan"] = mode
        if settings.RETRIEVAL_MAX_SCAN_TUPLES > 0:
            parameters["hnsw.max_scan_tuples"] = str(int(settings.RETRIEVAL_MAX_SCAN_TUPLES))
    return parameters


def vector_search_statement(*, iterative: bool) -> str | None:
    """One statement that sets them all for the transaction (`set_config(..., true)` is `SET LOCAL`): one round
    trip however many there are. None when there is nothing to set."""
    parameters = vector_search_parameters(iterative=iterative)
    if not parameters:
        return None
    return "SELECT " + ", ".join(
        f"set_config('{name}', '{value}', true)" for name, value in parameters.items()
    )


@contextmanager
def vector_search_session(*, alias: str, iterative: bool) -> Iterator[None]:
    """Run the block's search with RETRIEVAL_EF_SEARCH and, when asked, pgvector's iterative scan
    (RETRIEVAL_ITERATIVE_SCAN, up to RETRIEVAL_MAX_SCAN_TUPLES).

    Local to a transaction, never a session SET: a pooled connection (Django's pool, or PgBouncer in
    transaction mode, where consecutive transactions may reach different server connections) then hands no
    setting to its next user, and the search's transaction carries its own. Nothing to set: no transaction.
    """
    statement = vector_search_statement(iterative=iterative)
    if statement is None:
        yield
        return
    with transaction.atomic(using=alias), connections[alias].cursor() as cursor:
        cursor.execute(statement)
        yield
