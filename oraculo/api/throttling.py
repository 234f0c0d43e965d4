"""Rate limits for widget traffic: per client IP first, then the key's own rate, then the key's daily quota.

Widget keys are public, so whatever one visitor sends must not use up a key for everyone: the per-IP limit
(well below a key's rate) is checked first and the first refusal stops the others, so a refused request
never counts against the key. Staff and API-token callers are trusted and not throttled. Rates are read per
request, so a key's rate_limit or daily_quota edited in the admin applies at once.
"""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta

from django.core.cache import cache as default_cache
from rest_framework.request import Request
from rest_framework.settings import api_settings
from rest_framework.throttling import BaseThrottle, SimpleRateThrottle, UserRateThrottle

from oraculo.api.authentication import widget_key_of


class _LiveRateThrottle(SimpleRateThrottle):
    def get_rate(self) -> str | None:
        return api_settings.DEFAULT_THROTTLE_RATES.get(self.scope)


class ClientIPRateThrottle(_LiveRateThrottle):
    scope = "client_ip"

    def get_cache_key(self, request: Request, view) -> str | None:
        if widget_key_of(request) is None:
            return None
        return self.cache_format % {"scope": self.scope, "ident": self.get_ident(request)}


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
        return (
            None if widget_key is None else self.cache_format % {"scope": self.scope, "ident": widget_key.pk}
        )


class WidgetKeyDailyQuota(BaseThrottle):
    """At most `daily_quota` requests per key and UTC day: one counter per key and day (an atomic increment in
    the cache), so a quota of thousands costs what a single number does."""

    cache = default_cache
    detail = "This widget key's daily quota is used up; it renews at midnight UTC."

    def __init__(self) -> None:
        self.resets_at: datetime | None = None

    def allow_request(self, request: Request, view) -> bool:
        widget_key = widget_key_of(request)
        if widget_key is None:
            return True
        now = datetime.now(UTC)
        self.resets_at = datetime.combine(now.date() + timedelta(days=1), time(), tzinfo=UTC)
        key = f"throttle_widget_key_day_{widget_key.pk}_{now:%Y%m%d}"
        self.cache.add(key, 0, timeout=int((self.resets_at - now).total_seconds()) + 60)
        try:
            count = self.cache.incr(key)
        except ValueError:  # expired between add and incr: this request opens a new day
            self.cache.add(key, 1, timeout=int((self.resets_at - now).total_seconds()) + 60)
            count = 1
        return count <= widget_key.daily_quota

    def wait(self) -> float | None:
        if self.resets_at is None:
            return None
        return max(1.0, (self.resets_at - datetime.now(UTC)).total_seconds())


class EvalRunCreateThrottle(UserRateThrottle):
    """Runs queued per person (THROTTLE_EVAL_RUNS): each can call the LLM for every question. A request is
    checked against the runs already counted, and counts only once its run is queued (`count_run`): a refused
    body queues nothing, so it uses up nothing."""

    scope = "eval_runs"
    counting = False

    def get_rate(self) -> str | None:
        return api_settings.DEFAULT_THROTTLE_RATES.get(self.scope)

    def throttle_success(self) -> bool:
        return super().throttle_success() if self.counting else True

    def count_run(self, request: Request, view) -> None:
        """Count one queued run against the person's rate, as DRF records a request it lets through."""
        self.counting = True
        self.allow_request(request, view)
