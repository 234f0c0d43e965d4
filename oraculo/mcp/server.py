"""The MCP server object (django-mcpz: a synchronous Django view speaking the stateless protocol revision
2026-07-28 and the stateless mode of the 2025 revisions), and what every tool shares: its errors as in-band tool
errors with a message per field, and a readable text block beside the structured content."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Mapping
from http import HTTPStatus
from typing import Any

from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse
from django_mcpz.jsonrpc import PARSE_ERROR, error_response
from django_mcpz.server import MCPServer, ToolError
from rest_framework.exceptions import ValidationError

from biblioteca.errors import ApplicationError
from oraculo.mcp.access import mcp_auth

logger = logging.getLogger(__name__)

VERSION = "1.0.0"
INSTRUCTIONS = (
    "Biblioteca answers questions from this team's own documentation. Call bib_apps to see which apps and "
    "source types can be searched, then bib_ask with a query (answer: true also writes Oráculo's answer). "
    "Staff with the permission can compare retrieval with and without sentence trimming with bib_eval_retrieval."
)


def _path(prefix: str, key: Any) -> str:
    if not prefix:
        return "" if key == "non_field_errors" else str(key)
    return f"{prefix}[{key}]" if str(key).isdigit() else f"{prefix}.{key}"


def field_messages(detail: Any, prefix: str = "") -> list[str]:
    """A serializer's errors as `field: message` lines, nested fields and list items named by their path."""
    if isinstance(detail, Mapping):
        out = []
        for key, value in detail.items():
            out += field_messages(value, _path(prefix, key))
        return out
    if isinstance(detail, list):
        if all(isinstance(item, str) for item in detail):
            return [f"{prefix}: {item}" if prefix else str(item) for item in detail]
        out = []
        for index, item in enumerate(detail):
            if item:
                out += field_messages(item, f"{prefix}[{index}]")
        return out
    return [f"{prefix}: {detail}" if prefix else str(detail)]


def _unrepeated(line: str) -> str:
    """`last: last must be at least 1.` as `last must be at least 1.`: the message names its field already."""
    field, _, text = line.partition(": ")
    return text if text.startswith(field) else line


def tool_error_message(exc: Exception) -> str | None:
    """What the calling model reads for an error it can act on, or None for a bug (logged, never shown)."""
    if isinstance(exc, ValidationError):
        return "Invalid arguments:\n" + "\n".join(f"- {line}" for line in field_messages(exc.detail))
    if isinstance(exc, ApplicationError):
        fields = field_messages(exc.extra)
        if exc.status_code == 400 and fields and all(line.endswith(f": {exc.message}") for line in fields):
            lines = ["Invalid arguments:", *(f"- {_unrepeated(line)}" for line in fields)]
        else:
            lines = [exc.detail, *(f"- {line}" for line in fields)]
        if exc.retry_after:
            lines.append(f"Try again in {exc.retry_after} s.")
        return "\n".join(lines)
    if isinstance(exc, (OperationalError, InterfaceError)):
        return "The database is unavailable. Try again shortly."
    return None


class LibraryServer(MCPServer):
    """django-mcpz's server, whose structured results carry a readable text block (when the tool made one)
    instead of the same JSON twice: the structured content is for programs, the text for the model."""

    def __call__(self, request: HttpRequest) -> HttpResponse:
        # A body nested deeper than the JSON decoder can follow is malformed input, as the REST API says too.
        try:
            return super().__call__(request)
        except RecursionError:
            return error_response(
                None, PARSE_ERROR, "Parse error: JSON nested too deeply.", status=HTTPStatus.BAD_REQUEST
            )

    def _result(self, request: HttpRequest, request_id, result: dict[str, Any], **kwargs) -> HttpResponse:
        text = getattr(request, "mcp_readable_text", None)
        if text is not None and "structuredContent" in result:
            result = {**result, "content": [{"type": "text", "text": text}]}
        return super()._result(request, request_id, result, **kwargs)


def door(readable: Callable[[Any], str]) -> Callable:
    """Wrap a tool function: errors a caller can act on become tool errors, and `readable(result)` is the text
    block that goes with the structured result."""

    def decorate(func: Callable) -> Callable:
        @functools.wraps(func)
        def wrapper(request: HttpRequest, *arguments: Any) -> Any:
            try:
                result = func(request, *arguments)
            except ToolError:
                raise
            except Exception as exc:
                message = tool_error_message(exc)
                if message is None:
                    raise
                logger.info("MCP tool %s refused: %s", func.__name__, message)
                raise ToolError(message) from exc
            request.mcp_readable_text = readable(result)  # type: ignore[attr-defined]
            return result

        return wrapper

    return decorate


server = LibraryServer(
    name="biblioteca",
    title="Biblioteca / Oráculo",
    version=VERSION,
    description="Search and answer from the team's documentation; evaluate retrieval.",
    instructions=INSTRUCTIONS,
    auth=mcp_auth,
)
