"""Errors a caller can act on. Services raise them; each door (API, admin, command, task, MCP tool) turns
them into its own form: the API's one exception handler answers `status_code` with the message and `extra`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class ApplicationError(Exception):
    """Bad input or a state the caller can fix: a 400 unless a subclass says otherwise."""

    status_code = 400
    retry_after: int | None = None
    public_message: str | None = None  # said instead of `message` when that names internals (a URL, a model)

    def __init__(self, message: str, *, extra: Mapping[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.extra = dict(extra or {})

    @property
    def detail(self) -> str:
        """What a remote caller is told."""
        return self.public_message or self.message


class NotAllowedError(ApplicationError):
    """The caller may not do this (a 403)."""

    status_code = 403


class NotFoundError(ApplicationError):
    """What the caller named does not exist, or is not theirs to see (a 404)."""

    status_code = 404


class ConflictError(ApplicationError):
    """The request clashes with what is stored or running now (a 409)."""

    status_code = 409


class UnavailableError(ApplicationError):
    """A component the request needs (a model, an LLM, the database) is down: try again shortly (a 503)."""

    status_code = 503
    retry_after = 30
