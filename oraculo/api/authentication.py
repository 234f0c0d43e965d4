"""The widget's credential: a public key in the X-Widget-Key header, scoped to one app and a list of origins."""

from __future__ import annotations

from django.contrib.auth.models import AnonymousUser
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework.authentication import BaseAuthentication
from rest_framework.exceptions import AuthenticationFailed
from rest_framework.request import Request

from oraculo.models import WidgetKey
from oraculo.selectors import widget_key_get_active

HEADER = "X-Widget-Key"
# The key authentication found, kept on the Django request so the CORS check of its response needs no second read.
REQUEST_ATTRIBUTE = "oraculo_widget_key"


def widget_key_of(request: Request) -> WidgetKey | None:
    return request.auth if isinstance(request.auth, WidgetKey) else None


class WidgetKeyAuthentication(BaseAuthentication):
    """A key identifies a site, not a person: the user stays anonymous and `request.auth` is the WidgetKey."""

    def authenticate(self, request: Request) -> tuple[AnonymousUser, WidgetKey] | None:
        key = request.headers.get(HEADER, "").strip()
        if not key:
            return None
        widget_key = widget_key_get_active(key=key)
        if widget_key is None:
            raise AuthenticationFailed(f"The {HEADER} header holds an unknown or inactive widget key.")
        setattr(request._request, REQUEST_ATTRIBUTE, widget_key)
        return AnonymousUser(), widget_key

    def authenticate_header(self, request: Request) -> str:
        """Makes a missing credential a 401 rather than a 403."""
        return f'WidgetKey header="{HEADER}"'


class WidgetKeyAuthenticationScheme(OpenApiAuthenticationExtension):
    target_class = WidgetKeyAuthentication
    name = "widgetKey"

    def get_security_definition(self, auto_schema) -> dict:
        return {
            "type": "apiKey",
            "in": "header",
            "name": HEADER,
            "description": "A widget key (wk_...) created in the admin; scoped to one app and its origins.",
        }
