"""The stdio transport (`manage.py mcp_stdio`): the official SDK's low-level server reads and writes the protocol
on stdin/stdout, in either era (the initialize handshake or the 2026-07-28 per-request envelope), and hands each
tools/list and tools/call to the same view that serves /mcp, as the chosen user. So both transports serve the
same tool definitions, checks and errors."""

from __future__ import annotations

import json
from typing import Any

import anyio
import mcp_types as types
from asgiref.sync import sync_to_async
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db import close_old_connections
from django.http import HttpRequest
from django_mcpz.headers import encode_header_value
from django_mcpz.server import META_CLIENT_CAPABILITIES, META_PROTOCOL_VERSION, PROTOCOL_VERSION
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

from biblioteca.errors import NotAllowedError
from oraculo.mcp.access import local_request_user
from oraculo.mcp.server import INSTRUCTIONS, VERSION
from oraculo.mcp.tools import server as http_server


def stdio_user(*, username: str) -> AbstractBaseUser:
    """The active staff user the stdio server acts as; read again for each request, so a user deactivated or
    demoted meanwhile loses the tools at once."""
    user = get_user_model().objects.filter(**{get_user_model().USERNAME_FIELD: username}).first()
    if user is None or not user.is_active:
        raise NotAllowedError(f"No active user {username!r}.")
    if not user.is_staff:
        raise NotAllowedError(f"{username!r} is not a staff user; MCP tools are for staff.")
    return user


def local_call(*, username: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """One MCP request through the /mcp view, in process: its result, or MCPError for a JSON-RPC error."""
    close_old_connections()
    try:
        user = stdio_user(username=username)
    except NotAllowedError as exc:
        raise MCPError(types.INVALID_REQUEST, exc.message) from exc
    request = HttpRequest()
    request.method = "POST"
    request.META.update(
        SERVER_NAME="localhost",
        SERVER_PORT="80",
        CONTENT_TYPE="application/json",
        HTTP_MCP_PROTOCOL_VERSION=PROTOCOL_VERSION,
        HTTP_MCP_METHOD=method,
    )
    if method == "tools/call":
        request.META["HTTP_MCP_NAME"] = encode_header_value(params["name"])
    meta = {META_PROTOCOL_VERSION: PROTOCOL_VERSION, META_CLIENT_CAPABILITIES: {}}
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": meta}}
    request._body = json.dumps(body).encode()
    local_request_user(request, user)
    payload = json.loads(http_server(request).content)
    if "error" in payload:
        error = payload["error"]
        raise MCPError(error["code"], error["message"], error.get("data"))
    return payload["result"]


def stdio_server_for(*, username: str) -> Server:
    call = sync_to_async(local_call, thread_sensitive=True)

    async def list_tools(ctx, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        result = await call(username=username, method="tools/list", params={})
        return types.ListToolsResult.model_validate(result)

    async def call_tool(ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        result = await call(
            username=username,
            method="tools/call",
            params={"name": params.name, "arguments": params.arguments or {}},
        )
        return types.CallToolResult.model_validate(result)

    return Server(
        "biblioteca",
        version=VERSION,
        title="Biblioteca / Oráculo",
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def stdio_serve(*, username: str) -> None:
    """Serve on stdin/stdout until the client closes them."""
    server = stdio_server_for(username=username)

    async def main() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(main)
