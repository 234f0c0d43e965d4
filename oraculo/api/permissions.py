"""Who may ask: a widget key used from one of its origins, a staff user, or an API token."""

from __future__ import annotations

from rest_framework.permissions import BasePermission
from rest_framework.request import Request

from config.api import IsStaffOrToken
from oraculo.api.authentication import HEADER, widget_key_of


class IsWidgetKeyStaffOrToken(BasePermission):
    message = (
        f"Send a widget key in the {HEADER} header, or authenticate as a staff user or with an API token."
    )

    def has_permission(self, request: Request, view) -> bool:
        return widget_key_of(request) is not None or IsStaffOrToken().has_permission(request, view)


class WidgetKeyOriginAllowed(BasePermission):
    """A browser's Origin must be one the key lists; requests without Origin (servers, curl) pass."""

    def has_permission(self, request: Request, view) -> bool:
        widget_key = widget_key_of(request)
        origin = request.headers.get("Origin")
        if widget_key is None or not origin or widget_key.allows_origin(origin):
            return True
        self.message = f"The origin {origin} is not allowed for this widget key."
        return False


VIEW_QUERIES = "oraculo.view_oraculoquery"


class EvalRunPermission(BasePermission):
    """The admin's model permissions, not just `is_staff`: queueing needs *add evaluation run*, reading needs
    *view evaluation run*. Whether the log's questions may be used or read is checked by the views."""

    message = "You need the permission to add evaluation runs (to queue one) or to view them (to read one)."
    perms = {
        "POST": "oraculo.add_evalrun",
        "GET": "oraculo.view_evalrun",
        "HEAD": "oraculo.view_evalrun",
        "OPTIONS": "oraculo.view_evalrun",
    }

    def has_permission(self, request: Request, view) -> bool:
        user = request.user
        perm = self.perms.get(request.method)
        return bool(user and user.is_authenticated and user.is_staff and perm and user.has_perm(perm))
