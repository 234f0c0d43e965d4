"""The HNSW index over chunk vectors, built with RETRIEVAL_HNSW_M and RETRIEVAL_HNSW_EF_CONSTRUCTION.

Migration 0001 builds it with the settings of the day; when they change later, `rebuild_vector_index` builds the
new index beside the old one (CONCURRENTLY: searches and ingest go on) and swaps the two, so nothing is lost.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from django.conf import settings
from django.db import DataError, connections

from biblioteca.errors import ApplicationError
from biblioteca.models import Chunk

INDEX_NAME = "chunk_embedding_hnsw"


class IndexOptionsError(ApplicationError):
    """HNSW parameters pgvector would refuse (m 2..100, ef_construction 4..1000 and at least 2 m)."""


@dataclass(frozen=True)
class HnswOptions:
    m: int
    ef_construction: int


def configured_hnsw_options() -> HnswOptions:
    return HnswOptions(m=settings.RETRIEVAL_HNSW_M, ef_construction=settings.RETRIEVAL_HNSW_EF_CONSTRUCTION)


def validated(options: HnswOptions) -> HnswOptions:
    if not 2 <= options.m <= 100:
        raise IndexOptionsError(f"HNSW m must be between 2 and 100, not {options.m}")
    if not max(4, 2 * options.m) <= options.ef_construction <= 1000:
        raise IndexOptionsError(
            f"HNSW ef_construction must be between {max(4, 2 * options.m)} (twice m) and 1000, "
            f"not {options.ef_construction}"
        )
    return options


def live_hnsw_options(*, using: str = "default") -> HnswOptions | None:
    """The options the index was built with (pgvector's 16 and 64 when it was built without any); None when
    there is no such index."""
    with connections[using].cursor() as cursor:
        cursor.execute(
            "SELECT coalesce(reloptions, '{}') FROM pg_class WHERE relname = %s AND relkind = 'i'",
            [INDEX_NAME],
        )
        row = cursor.fetchone()
    if row is None:
        return None
    options = dict(option.split("=", 1) for option in row[0])
    return HnswOptions(m=int(options.get("m", 16)), ef_construction=int(options.get("ef_construction", 64)))


def hnsw_index_sql(*, options: HnswOptions, name: str = INDEX_NAME, concurrently: bool = False) -> str:
    options = validated(options)
    return (
        f"CREATE INDEX {'CONCURRENTLY ' if concurrently else ''}{name} ON {Chunk._meta.db_table} "
        f"USING hnsw (embedding vector_cosine_ops) WITH (m = {int(options.m)}, "
        f"ef_construction = {int(options.ef_construction)})"
    )


def vector_index_rebuild(
    *, options: HnswOptions | None = None, maintenance_work_mem: str = "", using: str = "default"
) -> float:
    """Build the index again with `options` (default: the settings) and return the seconds it took.

    The new index is built CONCURRENTLY under another name, then swapped in: the old one serves searches until
    the new one is valid. `maintenance_work_mem` should hold the whole graph (about 1.1 times the index size)
    or the build slows several-fold once it spills.
    """
    options = validated(options or configured_hnsw_options())
    building = f"{INDEX_NAME}_new"
    connection = connections[using]
    started = time.perf_counter()
    with connection.cursor() as cursor:
        if maintenance_work_mem:
            try:
                cursor.execute("SELECT set_config('maintenance_work_mem', %s, false)", [maintenance_work_mem])
            except DataError as exc:
                raise IndexOptionsError(
                    f"maintenance_work_mem {maintenance_work_mem!r} is not a memory size PostgreSQL takes "
                    "(e.g. 512MB or 4GB)."
                ) from exc
        try:
            cursor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {building}")
            cursor.execute(hnsw_index_sql(options=options, name=building, concurrently=True))
            cursor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {INDEX_NAME}")
            cursor.execute(f"ALTER INDEX {building} RENAME TO {INDEX_NAME}")
        finally:
            if maintenance_work_mem:
                cursor.execute("RESET maintenance_work_mem")
    return time.perf_counter() - started
