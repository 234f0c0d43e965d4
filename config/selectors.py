"""Reads of the project's own doors: the API token and its user, on every request that carries one."""

from __future__ import annotations

from functools import lru_cache

from django.db import connections, router
from rest_framework.authtoken.models import Token


def token_with_user(*, key: str) -> Token | None:
    """The token with this key and its user (read with it, as `token.user`), or None. One statement, compiled once
    per process: the ORM's `select_related("user").get(key=...)` built the same SQL anew on every API request
    (0.45 ms of CPU here, where the statement alone takes 0.1 ms)."""
    alias = router.db_for_read(Token)
    statement, token_names, user_names = _token_statement(alias)
    with connections[alias].cursor() as cursor:
        cursor.execute(statement, [key])
        row = cursor.fetchone()
    if row is None:
        return None
    token = Token.from_db(alias, token_names, row[: len(token_names)])
    token.user = Token._meta.get_field("user").related_model.from_db(
        alias, user_names, row[len(token_names) :]
    )
    return token


@lru_cache(maxsize=8)
def _token_statement(alias: str) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
    """SELECT every column of the token and of its user, by the token's key; and the attribute names, in order."""
    quote = connections[alias].ops.quote_name
    token = Token._meta
    user_field = token.get_field("user")
    user = user_field.related_model._meta
    token_fields, user_fields = token.concrete_fields, user.concrete_fields
    columns = [f"t.{quote(f.column)}" for f in token_fields] + [f"u.{quote(f.column)}" for f in user_fields]
    statement = (
        f"SELECT {', '.join(columns)} FROM {quote(token.db_table)} t "
        f"JOIN {quote(user.db_table)} u ON u.{quote(user.pk.column)} = t.{quote(user_field.column)} "
        f"WHERE t.{quote(token.get_field('key').column)} = %s"
    )
    return statement, tuple(f.attname for f in token_fields), tuple(f.attname for f in user_fields)
