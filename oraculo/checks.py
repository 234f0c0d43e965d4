"""System checks. For production: per-IP limits need to know the proxies in front, and every limit needs a cache
that all web processes share. Always: the question, answer, LLM and evaluation settings are ones the product can
work with."""

from __future__ import annotations

from django.conf import settings
from django.core.checks import Error, Tags, Warning, register

from config.checks import settings_not_http_urls, settings_outside, settings_under_floor
from config.validation import rate_problem

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


# The least value each of these settings can work with: a question limit, answer cap or token budget of 0 refuses
# or empties every answer, a timeout under a tenth of a second fails every LLM call, and no active run allowed
# refuses every evaluation.
LIMIT_FLOORS = {
    "QUERY_MAX_LENGTH": 1,
    "LLM_TIMEOUT": 0.1,
    "LLM_MAX_RETRIES": 0,
    "LLM_MAX_TOKENS": 1,
    "LLM_MAX_ANSWER_CHARS": 1,
    "THREAD_MAX_TURNS": 0,
    "EVAL_MAX_ACTIVE_RUNS_PER_USER": 1,
    "EVAL_STALLED_AFTER": 1,
    "MCP_EVAL_INLINE_MAX": 0,
}


@register()
def limit_settings(app_configs=None, **kwargs):
    """Question, answer, LLM and evaluation limits no lower than the product can work with (LIMIT_FLOORS), and the
    dashboard's similarity thresholds cosines can reach."""
    return settings_under_floor(LIMIT_FLOORS, check_id="oraculo.E001") + settings_outside(
        ("DASHBOARD_GAP_SCORE", "DASHBOARD_DUPLICATE_SIMILARITY"),
        -1,
        1,
        check_id="oraculo.E002",
        hint="Use a cosine, from -1 to 1.",
    )


@register()
def url_settings(app_configs=None, **kwargs):
    """The LLM's and the public site's addresses are http(s) URLs: a mistyped LLM_BASE_URL would turn every answer
    extractive, with only the query log saying why."""
    return settings_not_http_urls(["LLM_BASE_URL", "PUBLIC_URL"], check_id="oraculo.E003")


@register()
def throttle_settings(app_configs=None, **kwargs):
    """Each THROTTLE_* rate as DRF's throttles read it: another fails every request its throttle guards."""
    return [
        Error(f"THROTTLE_{scope.upper()} is {rate!r}.", hint=problem, id="oraculo.E004")
        for scope, rate in settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"].items()
        if rate is not None and (problem := rate_problem(rate))
    ]
