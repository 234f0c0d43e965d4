"""The JSON parser and token authentication every API view uses (named in REST_FRAMEWORK's settings), and the
client IP that the admin's login limit counts by."""

from __future__ import annotations

from django.utils.translation import gettext_lazy as _
from rest_framework import authentication, parsers
from rest_framework.exceptions import AuthenticationFailed, ParseError
from rest_framework.throttling import BaseThrottle

from config.selectors import token_with_user
from config.validation import MAX_JSON_DEPTH, json_problem


class JSONParser(parsers.JSONParser):
    """DRF's JSON parser, plus a 400 (never a 500) for JSON nested too deeply for Python's parser or for the
    depth limit, and for NUL characters or lone surrogates anywhere in the body."""

    def parse(self, stream, media_type=None, parser_context=None):
        try:
            data = super().parse(stream, media_type=media_type, parser_context=parser_context)
        except RecursionError as exc:
            raise ParseError(
                f"JSON parse error - nested too deeply: at most {MAX_JSON_DEPTH} levels."
            ) from exc
        if problem := json_problem(data):
            raise ParseError(f"JSON parse error - {problem}")
        return data


class TokenAuthentication(authentication.TokenAuthentication):
    """DRF's token authentication, with its answers; a value no token could have (a NUL byte, say) is refused
    before the lookup, and the lookup is one precompiled statement (`token_with_user`)."""

    def authenticate_credentials(self, key):
        if not key.isascii() or not key.isalnum():
            raise AuthenticationFailed("Invalid token.")
        token = token_with_user(key=key)
        if token is None:
            raise AuthenticationFailed(_("Invalid token."))
        if not token.user.is_active:
            raise AuthenticationFailed(_("User inactive or deleted."))
        return token.user, token


def client_ip(request) -> str:
    """The client's address as the API throttles see it: X-Forwarded-For only behind NUM_PROXIES proxies."""
    return BaseThrottle().get_ident(request)
