"""MCP fixtures: staff users with bearer tokens, the fixture docs ingested on the live server's database, and a
helper that runs the official SDK's client (mcp 2.x) against a real server."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import httpx2
import pytest
from django.contrib.auth.models import Permission, User
from django_mcpz.bearer_tokens.models import Token
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.conftest import FIXTURE_DOCS, LIBRARY_APP

MODES = {"2026-07-28": "2026-07-28", "2025-11-25": "legacy"}  # protocol revision -> the SDK client's mode


def connect(
    url: str, *, token: str | None, mode: str = "auto", headers: dict | None = None, seen: list | None = None
):
    """An SDK client over Streamable HTTP, with the bearer token (and any other headers) on every request;
    `seen` collects the HTTP responses (status and headers), which the SDK's errors do not carry."""
    sent = dict(headers or {})
    if token is not None:
        sent["Authorization"] = f"Bearer {token}"

    async def record(response) -> None:
        if seen is not None:
            await response.aread()
            seen.append(response)

    http = httpx2.AsyncClient(headers=sent, timeout=httpx2.Timeout(60.0), event_hooks={"response": [record]})
    return Connection(Client(streamable_http_client(url, http_client=http), mode=mode), http)


@dataclass
class Connection:
    client: Client
    http: httpx2.AsyncClient | None = None


def run(connection: Connection | Client, use: Callable[[Client], Awaitable[Any]]) -> Any:
    """One session: `use(client)`'s result. The HTTP client is closed after it, so the live server's threads end
    (and close their database connections) before the test database is dropped."""
    if isinstance(connection, Client):
        connection = Connection(connection)

    async def session() -> Any:
        try:
            async with connection.client:
                return await use(connection.client)
        finally:
            if connection.http is not None:
                await connection.http.aclose()

    return asyncio.run(session())


def failure(client: Connection, use: Callable[[Client], Awaitable[Any]]) -> BaseException:
    """The error the session ended with, out of the SDK's task groups."""
    with pytest.raises(BaseException) as caught:
        run(client, use)
    error = caught.value
    while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
        error = error.exceptions[0]
    return error


@pytest.fixture
def ingested(db):
    """The fixture docs (app fixture-guide, English), committed where the live server reads them."""
    from biblioteca.ingest import directory_ingest

    report = directory_ingest(
        paths=[FIXTURE_DOCS / "en"],
        app=LIBRARY_APP,
        source_type="en",
        url_prefix="https://docs.example.com/en",
    )
    assert not report.failed
    return LIBRARY_APP


def staff_token(username: str, *perms: str, is_staff: bool = True) -> tuple[User, str]:
    user = User.objects.create_user(username, is_staff=is_staff)
    for perm in perms:
        app_label, codename = perm.split(".")
        user.user_permissions.add(
            Permission.objects.get(content_type__app_label=app_label, codename=codename)
        )
    _, value = Token.create(name=f"{username}'s agent", user=user)
    return user, value


@pytest.fixture
def mcp_url(live_server) -> str:
    return f"{live_server.url}/mcp"
