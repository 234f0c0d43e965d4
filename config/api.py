"""What every API endpoint shares: JSON errors (ApplicationErrors with their status; a lost database is a 503,
not a traceback), the staff-or-token permission, and request fields that refuse what they do not know. The parser and token authentication that
settings name live in config.doors (DRF imports them while this module imports DRF's views)."""

from __future__ import annotations

import logging
from collections.abc import Mapping

from django.db import InterfaceError, OperationalError
from rest_framework import serializers, status
from rest_framework.authtoken.models import Token
from rest_framework.permissions import BasePermission
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from biblioteca.errors import ApplicationError, UnavailableError

logger = logging.getLogger(__name__)


def exception_handler(exc, context):
    """The one translation of errors for every API: DRF's as they are, an ApplicationError as its status with
    `{"detail": message, **extra}` (and Retry-After), a lost database connection (and only that, of database
    errors) as a JSON 503. A component that is down is logged with its internal message; the caller gets the
    public one."""
    response = drf_exception_handler(exc, context)
    if response is not None:
        return response
    if isinstance(exc, ApplicationError):
        if isinstance(exc, UnavailableError):
            logger.error("%s in %s: %s", type(exc).__name__, context.get("view"), exc.message, exc_info=exc)
        headers = {"Retry-After": str(exc.retry_after)} if exc.retry_after else None
        return Response({"detail": exc.detail, **exc.extra}, status=exc.status_code, headers=headers)
    if isinstance(exc, (OperationalError, InterfaceError)):
        logger.exception("database error in %s", context.get("view"))
        return Response(
            {"detail": "The database is unavailable. Try again shortly."},
            status=status.HTTP_503_SERVICE_UNAVAILABLE,
        )
    return None


class IsStaffOrToken(BasePermission):
    """Staff with a session, or any caller with an API token (DRF TokenAuthentication)."""

    message = "Authentication as staff or with an API token is required."

    def has_permission(self, request, view) -> bool:
        user = request.user
        if not (user and user.is_authenticated):
            return False
        return bool(user.is_staff or isinstance(request.auth, Token))


JSON_TYPES = {bool: "a boolean", int: "a number", float: "a number", list: "an array", dict: "an object"}


class TextField(serializers.CharField):
    """A CharField that refuses numbers and booleans instead of turning them into strings."""

    default_error_messages = {"not_text": "Must be text (a JSON string), not {kind}."}

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("not_text", kind=JSON_TYPES.get(type(data), type(data).__name__))
        return super().to_internal_value(data)


class StrictInputSerializer(serializers.Serializer):
    """Rejects fields it does not know, naming them, alongside any other field errors."""

    def to_internal_value(self, data):
        errors: dict = {}
        try:
            value = super().to_internal_value(data)
        except serializers.ValidationError as exc:
            errors.update(exc.detail if isinstance(exc.detail, Mapping) else {"non_field_errors": exc.detail})
            value = None
        if isinstance(data, Mapping):
            accepted = ", ".join(name for name, field in self.fields.items() if not field.read_only)
            for name in sorted(set(data) - set(self.fields)):
                errors[name] = [f"Unknown field. Accepted fields: {accepted}."]
        if errors:
            raise serializers.ValidationError(errors)
        return value
