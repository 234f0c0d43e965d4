"""Read replicas (DATABASE_REPLICA_URLS): which database each query goes to.

Reads go to a replica only when all of these hold, else to the primary:

* the code asked for it with `replica_reads()`: the search and retrieval selectors and the dashboard's list pages
  do; authentication, widget keys and anything read before a write stay on the primary, where a row written by
  the previous request is always visible;
* the primary connection is not inside a transaction (a transaction reads what it is about to write);
* the current run has not written. A run is one HTTP request (`PrimaryPinningMiddleware`), one task executed by
  the worker (the task signals), or, elsewhere (a management command, a shell), the whole thread.

How a write pins the run: every connection to the primary gets an execute wrapper that flags the run as soon as
a statement that is not a read (INSERT, UPDATE, DELETE, COPY, DDL...) runs on it, from the ORM or from raw SQL
alike, so nothing that writes can forget to pin. Afterwards the run reads the primary, so an ask right after an
ingest in the same run never reads rows the replica has not replayed yet. A run keeps one replica (chosen at
random), so a search's transaction and its queries land on the same server.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections, router
from django.db.backends.base.base import BaseDatabaseWrapper
from django.http import HttpRequest, HttpResponse


@dataclass
class RoutingRun:
    wrote: bool = False
    replica: str | None = None


_run: ContextVar[RoutingRun | None] = ContextVar("database_routing_run", default=None)
_replica_reads: ContextVar[bool] = ContextVar("database_replica_reads", default=False)


def current_run() -> RoutingRun:
    run = _run.get()
    if run is None:
        run = RoutingRun()
        _run.set(run)
    return run


@contextmanager
def fresh_run() -> Iterator[RoutingRun]:
    """A run that has not written yet, for as long as the block lasts."""
    run = RoutingRun()
    token = _run.set(run)
    try:
        yield run
    finally:
        _run.reset(token)


@contextmanager
def replica_reads() -> Iterator[None]:
    """Reads inside may go to a replica (also usable as a decorator: `@replica_reads()`)."""
    token = _replica_reads.set(True)
    try:
        yield
    finally:
        _replica_reads.reset(token)


def replica_aliases() -> list[str]:
    return list(getattr(settings, "DATABASE_REPLICAS", []))


def read_alias() -> str:
    """The database the current read goes to; see the module's docstring for the rules."""
    replicas = replica_aliases()
    if not replicas or not _replica_reads.get() or connections[DEFAULT_DB_ALIAS].in_atomic_block:
        return DEFAULT_DB_ALIAS
    run = current_run()
    if run.wrote:
        return DEFAULT_DB_ALIAS
    if run.replica not in replicas:
        run.replica = random.choice(replicas)
    return run.replica


def read_connection(model: type) -> BaseDatabaseWrapper:
    """The connection a raw-SQL read of `model`'s table should use (the router's choice, as the ORM's)."""
    return connections[router.db_for_read(model)]


class ReplicaRouter:
    """Writes and migrations on the primary; reads where `read_alias` says."""

    def db_for_read(self, model: type, **hints) -> str:
        return read_alias()

    def db_for_write(self, model: type, **hints) -> str:
        return DEFAULT_DB_ALIAS

    def allow_relation(self, obj1, obj2, **hints) -> bool | None:
        """A replica holds the primary's rows, so objects read from either may be related."""
        known = {DEFAULT_DB_ALIAS, *replica_aliases()}
        return True if {obj1._state.db, obj2._state.db} <= known else None

    def allow_migrate(self, db: str, app_label: str, **hints) -> bool:
        return db == DEFAULT_DB_ALIAS


_READ_STATEMENTS = {
    "SELECT",
    "SHOW",
    "SET",
    "RESET",
    "BEGIN",
    "START",
    "COMMIT",
    "ROLLBACK",
    "SAVEPOINT",
    "RELEASE",
    "EXPLAIN",
    "VALUES",
    "TABLE",
    "FETCH",
    "DECLARE",
    "CLOSE",
    "MOVE",
    "WITH",
}
_FIRST_WORD = re.compile(r"\s*\(?\s*([A-Za-z]+)")
_DATA_CHANGE = re.compile(r"\b(INSERT|UPDATE|DELETE|MERGE)\b", re.IGNORECASE)


def statement_writes(sql: str) -> bool:
    """Whether a statement may change data. Unknown statements count as writes: pinning too often costs only
    replica offload, pinning too rarely would read stale rows."""
    match = _FIRST_WORD.match(sql)
    if match is None:
        return True
    word = match.group(1).upper()
    if word not in _READ_STATEMENTS:
        return True
    return word == "WITH" and bool(_DATA_CHANGE.search(sql))


def pin_on_write(execute: Callable, sql: str, params, many: bool, context: dict) -> object:
    if statement_writes(sql if isinstance(sql, str) else str(sql)):
        current_run().wrote = True
    return execute(sql, params, many, context)


def install_pinning(*, sender, connection: BaseDatabaseWrapper, **kwargs) -> None:
    """`connection_created` receiver: the primary's connections pin the run on their first write."""
    if connection.alias == DEFAULT_DB_ALIAS and pin_on_write not in connection.execute_wrappers:
        connection.execute_wrappers.append(pin_on_write)


def task_run_started(**kwargs) -> None:
    _run.set(RoutingRun())


def task_run_finished(**kwargs) -> None:
    _run.set(None)


def connect_signals() -> None:
    from django.db.backends.signals import connection_created
    from django_tasks.signals import task_finished, task_started

    connection_created.connect(install_pinning, dispatch_uid="config.replicas.install_pinning")
    task_started.connect(task_run_started, dispatch_uid="config.replicas.task_run_started")
    task_finished.connect(task_run_finished, dispatch_uid="config.replicas.task_run_finished")
    for connection in connections.all(initialized_only=True):
        if connection.connection is not None:
            install_pinning(sender=type(connection), connection=connection)


class PrimaryPinningMiddleware:
    """Each request is its own run: it starts reading replicas and pins itself to the primary once it writes."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        with fresh_run():
            return self.get_response(request)


class ReplicaReadsAdminMixin:
    """The dashboard's list pages read (and render) from a replica; their POSTs (actions) stay on the primary."""

    def changelist_view(self, request: HttpRequest, extra_context=None):
        if request.method not in ("GET", "HEAD"):
            return super().changelist_view(request, extra_context)
        with replica_reads():
            response = super().changelist_view(request, extra_context)
            if hasattr(response, "render") and not getattr(response, "is_rendered", True):
                response.render()
        return response
