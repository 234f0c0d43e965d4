"""Rate limits for widget traffic: each key's own rate, and a per-client-IP rate from the settings.

Staff and API-token callers are trusted and not throttled. Rates are read per request, so a key's
rate_limit edited in the admin applies at once.
"""
from __future__ import annotations

from rest_framework.request import Request
from rest_framework.settings import api_settings
from rest_framework.throttling import SimpleRateThrottle

from oraculo.api.authentication import widget_key_of


class _LiveRateThrottle(SimpleRateThrottle):
    def get_rate(self) -> str | None:
        return api_settings.DEFAULT_THROTTLE_RATES.get(self.scope)


class WidgetKeyRateThrottle(_LiveRateThrottle):
    """The key's own `rate_limit`; the "widget_key" rate of the settings when it cannot be read."""

    scope = "widget_key"

    def allow_request(self, request: Request, view) -> bool:
        widget_key = widget_key_of(request)
        if widget_key is None:
            return True
        try:
            self.num_requests, self.duration = self.parse_rate(widget_key.rate_limit)
            self.rate = widget_key.rate_limit
        except (ValueError, KeyError, IndexError):
            pass
        return super().allow_request(request, view)

    def get_cache_key(self, request: Request, view) -> str | None:
        widget_key = widget_key_of(request)
        return None if widget_key is None else self.cache_format % {"scope": self.scope, "ident": widget_key.pk}


class ClientIPRateThrottle(_LiveRateThrottle):
    scope = "client_ip"

    def get_cache_key(self, request: Request, view) -> str | None:
        if widget_key_of(request) is None:
            return None
        return self.cache_format % {"scope": self.scope, "ident": self.get_ident(request)}
