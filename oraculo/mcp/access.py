"""Who may use the MCP tools: staff with a bearer token (per user, stored hashed), throttled per token; or, over
stdio, the user `manage.py mcp_stdio --user` names. Browsers' Origins are checked by the server before this."""

from __future__ import annotations

from http import HTTPStatus

from django.contrib.auth.models import AbstractBaseUser
from django.http import HttpRequest, HttpResponse
from django_mcpz.bearer_tokens.auth import token_auth
from django_mcpz.jsonrpc import INVALID_REQUEST, error_response
from rest_framework.settings import api_settings
from rest_framework.throttling import SimpleRateThrottle

NOT_STAFF = "MCP tools are for staff users; this token's user is not staff."
THROTTLED = "Too many requests with this token (THROTTLE_MCP_TOKEN); try again in {wait} s."


class McpTokenThrottle(SimpleRateThrottle):
    """THROTTLE_MCP_TOKEN requests per bearer token, counted in the configured cache as the API's throttles are."""

    scope = "mcp_token"

    def get_rate(self) -> str | None:
        return api_settings.DEFAULT_THROTTLE_RATES.get(self.scope)

    def get_cache_key(self, request, view) -> str:
        return self.cache_format % {"scope": self.scope, "ident": request.mcp_token.pk}


def local_request_user(request: HttpRequest, user: AbstractBaseUser) -> None:
    """Mark an in-process request (the stdio server's) as the chosen user's: no HTTP request can carry it."""
    request.mcp_local_user = user  # type: ignore[attr-defined]


def mcp_auth(request: HttpRequest) -> HttpResponse | None:
    """None to serve the request, or the response that refuses it: 401 without a valid token, 403 for a user who
    is not staff, 429 with Retry-After past the token's rate."""
    local_user = getattr(request, "mcp_local_user", None)
    if local_user is not None:
        request.user = local_user
        return None
    refused = token_auth(request)
    if refused is not None:
        return refused
    if not request.user.is_staff:
        return error_response(None, INVALID_REQUEST, NOT_STAFF, status=HTTPStatus.FORBIDDEN)
    throttle = McpTokenThrottle()
    if not throttle.allow_request(request, None):
        wait = max(1, round(throttle.wait() or 1))
        response = error_response(
            None, INVALID_REQUEST, THROTTLED.format(wait=wait), status=HTTPStatus.TOO_MANY_REQUESTS
        )
        response["Retry-After"] = str(wait)
        return response
    return None
