"""API-wide error handling: every error is JSON, a lost database is a 503 rather than a traceback."""
from __future__ import annotations

import logging

from django.db import DatabaseError
from rest_framework import status
from rest_framework.authtoken.models import Token
from rest_framework.permissions import BasePermission
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

logger = logging.getLogger(__name__)


def exception_handler(exc, context):
    response = drf_exception_handler(exc, context)
    if response is not None:
        return response
    if isinstance(exc, DatabaseError):
        logger.exception("database error in %s", context.get("view"))
        return Response({"detail": "The database is unavailable. Try again shortly."},
                        status=status.HTTP_503_SERVICE_UNAVAILABLE)
    return None


class IsStaffOrToken(BasePermission):
    """Staff with a session, or any caller with an API token (DRF TokenAuthentication)."""

    message = "Authentication as staff or with an API token is required."

    def has_permission(self, request, view) -> bool:
        user = request.user
        if not (user and user.is_authenticated):
            return False
        return bool(user.is_staff or isinstance(request.auth, Token))
