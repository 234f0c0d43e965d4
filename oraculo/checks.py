"""System checks for production: per-IP limits need to know the proxies in front, and every limit needs a cache
that all web processes share."""

from __future__ import annotations

from django.conf import settings
from django.core.checks import Tags, Warning, register

PER_PROCESS_CACHES = (
    "django.core.cache.backends.locmem.LocMemCache",
    "django.core.cache.backends.dummy.DummyCache",
)


@register(Tags.security)
def throttling_is_shared_and_sees_clients(app_configs=None, **kwargs):
    if settings.DEBUG:
        return []
    warnings = []
    if not getattr(settings, "NUM_PROXIES_SET", True):
        warnings.append(
            Warning(
                "NUM_PROXIES is not set: behind a reverse proxy every visitor has the proxy's address, so the per-IP "
                "limit becomes one limit for everyone.",
                hint="Set NUM_PROXIES to the number of proxies in front of the app (0 when clients connect directly).",
                id="oraculo.W001",
            )
        )
    if settings.CACHES["default"]["BACKEND"] in PER_PROCESS_CACHES:
        warnings.append(
            Warning(
                "The cache is per process, so every rate limit and daily quota is multiplied by the number of web "
                "processes.",
                hint="Set CACHE_URL to a shared cache such as redis://host:6379/0.",
                id="oraculo.W002",
            )
        )
    return warnings
