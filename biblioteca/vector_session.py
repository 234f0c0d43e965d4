"""pgvector's per-search settings, scoped to the search's own transaction."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.conf import settings
from django.db import connections, transaction

ITERATIVE_SCAN_MODES = ("off", "relaxed_order", "strict_order")


def vector_search_statements(*, iterative: bool) -> list[str]:
    statements = []
    if settings.RETRIEVAL_EF_SEARCH > 0:
        statements.append(f"SET LOCAL hnsw.ef_search = {int(settings.RETRIEVAL_EF_SEARCH)}")
    mode = settings.RETRIEVAL_ITERATIVE_SCAN
    if iterative and mode in ITERATIVE_SCAN_MODES[1:]:
        statements.append(f"SET LOCAL hnsw.iterative_scan = {mode}")
        if settings.RETRIEVAL_MAX_SCAN_TUPLES > 0:
            statements.append(f"SET LOCAL hnsw.max_scan_tuples = {int(settings.RETRIEVAL_MAX_SCAN_TUPLES)}")
    return statements


@contextmanager
def vector_search_session(*, alias: str, iterative: bool) -> Iterator[None]:
    """Run the block's search with RETRIEVAL_EF_SEARCH and, when asked, pgvector's iterative scan
    (RETRIEVAL_ITERATIVE_SCAN, up to RETRIEVAL_MAX_SCAN_TUPLES).

    SET LOCAL inside a transaction, never a session SET: a pooled connection (Django's pool, or PgBouncer in
    transaction mode, where consecutive transactions may reach different server connections) then hands no
    setting to its next user, and the search's transaction carries its own. Nothing to set: no transaction.
    """
    statements = vector_search_statements(iterative=iterative)
    if not statements:
        yield
        return
    with transaction.atomic(using=alias), connections[alias].cursor() as cursor:
        for statement in statements:
            cursor.execute(statement)
        yield
