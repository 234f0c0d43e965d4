"""Settings, all from the environment (django-environ); the README's configuration table lists every variable.

One module, over 300 lines, on purpose: every variable read in one place, in sections, as the README lists them."""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import environ
from corsheaders.defaults import default_headers as cors_default_headers
from django.core.exceptions import ImproperlyConfigured

from config.database import embedded_database_url

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = BASE_DIR / "var"

env = environ.Env()
environ.Env.read_env(BASE_DIR / ".env", overwrite=False)

# Off unless asked for: a deploy that forgets DEBUG must not run with a known key and debug pages.
# `make run` and `make test` set DEBUG=true.
DEBUG = env.bool("DEBUG", default=False)
SECRET_KEY = env.str("SECRET_KEY", default="dev-only-insecure-key-change-me" if DEBUG else environ.Env.NOTSET)
ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["127.0.0.1", "localhost", "testserver"])
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "corsheaders",
    "axes",
    "django_tasks",
    "django_tasks_db",
    "config",
    # MCP bearer tokens: stored as SHA-256 digests, shown once, revoked in the admin or with `manage.py mcp_token`.
    "django_mcpz.bearer_tokens",
    "biblioteca",
    "oraculo",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "corsheaders.middleware.CorsMiddleware",
    "config.http_edge.StorableTextMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "axes.middleware.AxesMiddleware",
]

# Failed admin logins are counted per user name and client IP (django-axes, in the database, so every process
# shares the count); the IP is read as the API throttles read it (NUM_PROXIES).
AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend", "django.contrib.auth.backends.ModelBackend"]
AXES_FAILURE_LIMIT = env.int("AXES_FAILURE_LIMIT", default=5)
AXES_COOLOFF_TIME = timedelta(minutes=env.int("AXES_COOLOFF_MINUTES", default=30))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_CLIENT_IP_CALLABLE = "config.doors.client_ip"

ROOT_URLCONF = "config.urls"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

WSGI_APPLICATION = "config.wsgi.application"
ASGI_APPLICATION = "config.asgi.application"

# Not kept as a setting: Django's debug page lists settings, and the URL carries the password.
DATABASES = {
    "default": env.db_url_config(
        env.str("DATABASE_URL", default="")
        or embedded_database_url(Path(env.str("EMBEDDED_PGDATA", default=str(VAR_DIR / "pgdata"))))
    )
}
DATABASES["default"]["CONN_MAX_AGE"] = env.int("CONN_MAX_AGE", default=60)
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
DATABASES["default"].setdefault("OPTIONS", {})["connect_timeout"] = env.int(
    "DATABASE_CONNECT_TIMEOUT", default=5
)
# One test database per test process, so concurrent runs on one server never drop each other's database.
DATABASES["default"]["TEST"] = {
    "NAME": env.str("TEST_DATABASE_NAME", default=f"test_biblioteca_{os.getpid()}")
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

CACHES = {"default": env.cache_url("CACHE_URL", default="locmemcache://oraculo")}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]

LANGUAGE_CODE = "en"
LANGUAGES = [("en", "English"), ("es", "Español")]
TIME_ZONE = env.str("TIME_ZONE", default="UTC")
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "var" / "static"
WHITENOISE_USE_FINDERS = DEBUG
WHITENOISE_AUTOREFRESH = DEBUG
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}

TASKS = {"default": {"BACKEND": env.str("TASKS_BACKEND", default="django_tasks_db.DatabaseBackend")}}

REST_FRAMEWORK = {
    # The token first: DRF answers a request without credentials with the first class's challenge, so a
    # missing or wrong token gets a 401 with `WWW-Authenticate: Token` (session auth has no challenge: 403).
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "config.doors.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAdminUser"],
    "DEFAULT_PARSER_CLASSES": ["config.doors.JSONParser"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "config.api.exception_handler",
    "DEFAULT_THROTTLE_RATES": {
        "widget_key": env.str("THROTTLE_WIDGET_KEY", default="120/min"),
        # Well below a key's rate (60/min by default), so one visitor cannot use up a key for everyone.
        "client_ip": env.str("THROTTLE_CLIENT_IP", default="10/min"),
        "eval_runs": env.str("THROTTLE_EVAL_RUNS", default="20/hour"),
        # Every request to /mcp with one bearer token (an agent's session sends a few per tool call).
        "mcp_token": env.str("THROTTLE_MCP_TOKEN", default="120/min"),
    },
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
    # Behind N reverse proxies, the client IP for throttling is the Nth address from the right of
    # X-Forwarded-For; at 0 (the default) REMOTE_ADDR is used and a forged header changes nothing.
    "NUM_PROXIES": env.int("NUM_PROXIES", default=0),
}
# Whether the operator said how many proxies there are (0 included); oraculo.checks warns in production if not.
NUM_PROXIES_SET = bool(env.str("NUM_PROXIES", default="").strip())

SPECTACULAR_SETTINGS = {
    "TITLE": "Biblioteca / Oráculo API",
    "DESCRIPTION": "Answers help questions from a team's own documentation.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
}

CORS_URLS_REGEX = r"^/api/v1/(ask|queries/.*)$"
CORS_ALLOW_HEADERS = (*cors_default_headers, "x-widget-key")
CORS_EXPOSE_HEADERS = ["Retry-After"]

# Biblioteca: chunking and embeddings
CHUNK_SIZE = env.int("CHUNK_SIZE", default=500)
CHUNK_OVERLAP = env.int("CHUNK_OVERLAP", default=50)
INGEST_MAX_FILE_BYTES = env.int("INGEST_MAX_FILE_BYTES", default=2 * 1024 * 1024)
EMBEDDING_BACKEND = env.str("EMBEDDING_BACKEND", default="local")
EMBEDDING_MODEL = env.str("EMBEDDING_MODEL", default="multilingual-e5-small")
EMBEDDING_BASE_URL = env.str("EMBEDDING_BASE_URL", default="")
EMBEDDING_API_KEY = env.str("EMBEDDING_API_KEY", default="")
EMBEDDING_DIMENSIONS = env.int("EMBEDDING_DIMENSIONS", default=384)
EMBEDDING_BATCH_SIZE = env.int("EMBEDDING_BATCH_SIZE", default=64)
EMBEDDING_TIMEOUT = env.float("EMBEDDING_TIMEOUT", default=30.0)
EMBEDDING_MAX_RETRIES = env.int("EMBEDDING_MAX_RETRIES", default=3)
EMBEDDING_QUERY_PREFIX = env.str("EMBEDDING_QUERY_PREFIX", default="")
EMBEDDING_PASSAGE_PREFIX = env.str("EMBEDDING_PASSAGE_PREFIX", default="")
EMBEDDING_SEND_INPUT_TYPE = env.bool("EMBEDDING_SEND_INPUT_TYPE", default=False)
EMBEDDING_THREADS = env.int("EMBEDDING_THREADS", default=0)
# Batches in flight at once with EMBEDDING_BACKEND=openai: a GPU embeddings server is kept busy only with several.
EMBEDDING_CONCURRENCY = env.int("EMBEDDING_CONCURRENCY", default=1)
TOKEN_ENCODING = env.str("TOKEN_ENCODING", default="o200k_base")


def language_by_app(raw: str) -> dict[str, str]:
    """`guide=en,ayuda=es` -> {"guide": "en", "ayuda": "es"}: the language of an app's documents when
    detection should not decide."""
    pairs = [item.split("=", 1) for item in raw.split(",") if item.strip()]
    if any(len(pair) != 2 or not pair[0].strip() or not pair[1].strip() for pair in pairs):
        raise ImproperlyConfigured(f"DOCUMENT_LANGUAGE_BY_APP must look like 'app=en,other=es', not {raw!r}")
    return {app.strip(): lang.strip().lower() for app, lang in pairs}


DOCUMENT_LANGUAGE_BY_APP = language_by_app(env.str("DOCUMENT_LANGUAGE_BY_APP", default=""))

# Retrieval and trimming
RETRIEVAL_HYBRID = env.bool("RETRIEVAL_HYBRID", default=True)
RETRIEVAL_HYBRID_CANDIDATES = env.int("RETRIEVAL_HYBRID_CANDIDATES", default=40)
RETRIEVAL_HYBRID_RRF_K = env.int("RETRIEVAL_HYBRID_RRF_K", default=5)
RETRIEVAL_HYBRID_VECTOR_WEIGHT = env.float("RETRIEVAL_HYBRID_VECTOR_WEIGHT", default=1.0)
RETRIEVAL_HYBRID_LEXICAL_WEIGHT = env.float("RETRIEVAL_HYBRID_LEXICAL_WEIGHT", default=2.0)
RETRIEVAL_HYBRID_SENTENCE_WEIGHT = env.float("RETRIEVAL_HYBRID_SENTENCE_WEIGHT", default=1.0)
RETRIEVAL_HYBRID_SENTENCE_POOL = env.int("RETRIEVAL_HYBRID_SENTENCE_POOL", default=30)
RETRIEVAL_HYBRID_OTHER_LANGUAGE_WEIGHT = env.float("RETRIEVAL_HYBRID_OTHER_LANGUAGE_WEIGHT", default=0.7)
# A question in another language than the docs (all in one language): the words side weighs this share of
# RETRIEVAL_HYBRID_LEXICAL_WEIGHT (its words are mostly not the docs'; docs/en/calibration.md).
RETRIEVAL_HYBRID_CROSS_LANGUAGE_LEXICAL_SHARE = env.float(
    "RETRIEVAL_HYBRID_CROSS_LANGUAGE_LEXICAL_SHARE", default=0.25
)
RETRIEVAL_HYBRID_VECTOR_SEAT = env.bool("RETRIEVAL_HYBRID_VECTOR_SEAT", default=True)
RETRIEVAL_HYBRID_TERM_COVERAGE = env.float("RETRIEVAL_HYBRID_TERM_COVERAGE", default=0.5)
# The languages questions are asked in (ISO 639-1 codes with a stemmer): the function words of the one a question
# is written in are never its search terms, even over docs in another language.
RETRIEVAL_QUESTION_LANGUAGES = [
    code.strip().lower()
    for code in env.list("RETRIEVAL_QUESTION_LANGUAGES", default=["en", "es"])
    if code.strip()
]
# A question in another language than the docs (all in one language) has its vector moved this far towards
# the docs' language (biblioteca/language_shift.py); 0: off.
RETRIEVAL_LANGUAGE_SHIFT = env.float("RETRIEVAL_LANGUAGE_SHIFT", default=1.0)
RETRIEVAL_PASSAGE_WORDS = env.int("RETRIEVAL_PASSAGE_WORDS", default=450)
RETRIEVAL_TRIM = env.bool("RETRIEVAL_TRIM", default=False)
# Calibrated for multilingual-e5-small on XQuAD EN+ES (docs/en/calibration.md): >= 99% answer retention.
RETRIEVAL_TRIM_THRESHOLD = env.float("RETRIEVAL_TRIM_THRESHOLD", default=0.90)
RETRIEVAL_TRIM_WINDOW = env.int("RETRIEVAL_TRIM_WINDOW", default=1)
RETRIEVAL_TRIM_MIN_SENTENCES = env.int("RETRIEVAL_TRIM_MIN_SENTENCES", default=1)


def optional_margin(name: str, default: float | None) -> float | None:
    """A margin in cosine units, or None when set to `off` (no such rule)."""
    raw = env.str(name, default="off" if default is None else str(default)).strip().lower()
    return None if raw in ("", "off", "none") else float(raw)


RETRIEVAL_TRIM_RELATIVE_MARGIN = optional_margin("RETRIEVAL_TRIM_RELATIVE_MARGIN", 0.2)
RETRIEVAL_TRIM_DROP_MARGIN = optional_margin("RETRIEVAL_TRIM_DROP_MARGIN", 0.0225)
RETRIEVAL_TRIM_DROP_NEIGHBOUR_MARGIN = optional_margin("RETRIEVAL_TRIM_DROP_NEIGHBOUR_MARGIN", 0.0375)
RETRIEVAL_TRIM_DROP_SCORE_MARGIN = optional_margin("RETRIEVAL_TRIM_DROP_SCORE_MARGIN", None)
RETRIEVAL_TRIM_DROP_SEARCH_MARGIN = optional_margin("RETRIEVAL_TRIM_DROP_SEARCH_MARGIN", 0.0)
RETRIEVAL_TRIM_DROP_BEST_LINE_MARGIN = optional_margin("RETRIEVAL_TRIM_DROP_BEST_LINE_MARGIN", 0.035)
RETRIEVAL_TRIM_DROP_BEST_LINE_SEARCH_MARGIN = optional_margin(
    "RETRIEVAL_TRIM_DROP_BEST_LINE_SEARCH_MARGIN", 0.03
)
RETRIEVAL_TRIM_PASSAGE_MARGIN = optional_margin("RETRIEVAL_TRIM_PASSAGE_MARGIN", 0.09)
RETRIEVAL_TRIM_PASSAGE_SPREAD = optional_margin("RETRIEVAL_TRIM_PASSAGE_SPREAD", 0.9)
RETRIEVAL_TRIM_WINDOW_SPREAD = optional_margin("RETRIEVAL_TRIM_WINDOW_SPREAD", 0.55)
RETRIEVAL_TRIM_LEXICAL_WEIGHT = optional_margin("RETRIEVAL_TRIM_LEXICAL_WEIGHT", 0.2)
# A question in another language than the docs (all in one language) counts its words for this share of
# RETRIEVAL_TRIM_LEXICAL_WEIGHT (docs/en/calibration.md).
RETRIEVAL_TRIM_CROSS_LANGUAGE_LEXICAL_SHARE = env.float(
    "RETRIEVAL_TRIM_CROSS_LANGUAGE_LEXICAL_SHARE", default=0.75
)
RETRIEVAL_TRIM_HEADING_WEIGHT = env.float("RETRIEVAL_TRIM_HEADING_WEIGHT", default=0.5)
RETRIEVAL_TRIM_SPREAD_FACTOR = optional_margin("RETRIEVAL_TRIM_SPREAD_FACTOR", None)
RETRIEVAL_TRIM_COMPANIONS = env.bool("RETRIEVAL_TRIM_COMPANIONS", default=True)
RETRIEVAL_TRIM_CLOSEST_LINE = env.bool("RETRIEVAL_TRIM_CLOSEST_LINE", default=True)
RETRIEVAL_TRIM_HEADING_ANSWER = env.bool("RETRIEVAL_TRIM_HEADING_ANSWER", default=True)
RETRIEVAL_TRIM_MARKUP = env.bool("RETRIEVAL_TRIM_MARKUP", default=True)
RETRIEVAL_TRIM_IDENTIFIER_UNITS = env.int("RETRIEVAL_TRIM_IDENTIFIER_UNITS", default=6)
RETRIEVAL_TRIM_EARLIER_SECTIONS = env.bool("RETRIEVAL_TRIM_EARLIER_SECTIONS", default=True)
RETRIEVAL_TRIM_PARAGRAPH_FOLLOW = env.int("RETRIEVAL_TRIM_PARAGRAPH_FOLLOW", default=3)
RETRIEVAL_TRIM_REASON_FOLLOW = env.int("RETRIEVAL_TRIM_REASON_FOLLOW", default=2)
RETRIEVAL_TRIM_GAP_WORDS = env.int("RETRIEVAL_TRIM_GAP_WORDS", default=20)
RETRIEVAL_TRIM_PARAGRAPH_START = env.int("RETRIEVAL_TRIM_PARAGRAPH_START", default=2)
RETRIEVAL_TRIM_NEXT_STEPS = env.int("RETRIEVAL_TRIM_NEXT_STEPS", default=1)
RETRIEVAL_TRIM_EARLIER_STEPS = env.int("RETRIEVAL_TRIM_EARLIER_STEPS", default=2)
RETRIEVAL_TRIM_HOW_STEPS = env.int("RETRIEVAL_TRIM_HOW_STEPS", default=4)
QUERY_MAX_LENGTH = env.int("QUERY_MAX_LENGTH", default=2000)

# Oráculo: the LLM
LLM_BASE_URL = env.str("LLM_BASE_URL", default="")
LLM_MODEL = env.str("LLM_MODEL", default="")
LLM_API_KEY = env.str("LLM_API_KEY", default="")
LLM_TIMEOUT = env.float("LLM_TIMEOUT", default=20.0)
LLM_MAX_RETRIES = env.int("LLM_MAX_RETRIES", default=1)
LLM_MAX_TOKENS = env.int("LLM_MAX_TOKENS", default=600)
# Cut there whatever the server sends (some ignore max_tokens); the query log records the cut.
LLM_MAX_ANSWER_CHARS = env.int("LLM_MAX_ANSWER_CHARS", default=6000)

# Follow-up questions: how many earlier turns of a conversation the LLM sees again.
THREAD_MAX_TURNS = env.int("THREAD_MAX_TURNS", default=3)

# Gaps dashboard: a question whose best passage scores under DASHBOARD_GAP_SCORE is a gap; questions whose
# vectors are at least DASHBOARD_DUPLICATE_SIMILARITY alike (cosine) are grouped as near-duplicates.
DASHBOARD_GAP_SCORE = env.float("DASHBOARD_GAP_SCORE", default=0.80)
DASHBOARD_DUPLICATE_SIMILARITY = env.float("DASHBOARD_DUPLICATE_SIMILARITY", default=0.93)

# Evaluation runs
EVAL_MAX_ACTIVE_RUNS_PER_USER = env.int("EVAL_MAX_ACTIVE_RUNS_PER_USER", default=2)
# A running run whose worker has not written for this long is queued again, without anyone asking.
EVAL_STALLED_AFTER = env.int("EVAL_STALLED_AFTER", default=600)

# MCP (/mcp and `manage.py mcp_stdio`): bib_eval_retrieval runs up to this many questions inline, and queues an
# evaluation run (for a worker) beyond it. PUBLIC_URL (e.g. https://help.example.com) makes the admin links that
# the stdio server returns absolute; over HTTP they are built from the request.
MCP_EVAL_INLINE_MAX = env.int("MCP_EVAL_INLINE_MAX", default=15)
PUBLIC_URL = env.str("PUBLIC_URL", default="").rstrip("/")

# The demo page at / shows the widget on DEMO_APP's docs with the key `manage.py demo_widget_key` makes (the page
# never writes one); on with DEBUG, so off in production unless asked for.
DEMO_PAGE = env.bool("DEMO_PAGE", default=DEBUG)
DEMO_APP = env.str("DEMO_APP", default="guide")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="WARNING")},
}

# Error reports (debug pages, admin e-mails) hide URLs' passwords and every setting named like a credential.
DEFAULT_EXCEPTION_REPORTER_FILTER = "config.errors.CredentialHidingFilter"

if not DEBUG:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SESSION_COOKIE_SECURE = env.bool("SESSION_COOKIE_SECURE", default=True)
    CSRF_COOKIE_SECURE = env.bool("CSRF_COOKIE_SECURE", default=True)
    SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", default=True)
    # Load balancers often probe over plain HTTP.
    SECURE_REDIRECT_EXEMPT = [r"^api/v1/health$"]
    SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=0)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", default=False)
    SECURE_HSTS_PRELOAD = env.bool("SECURE_HSTS_PRELOAD", default=False)

# Query-vector cache: a repeated question (same model, same normalised text) costs no embedding. Its own cache
# alias on the CACHE_URL backend, so vectors never evict throttle counters; in memory it holds at most
# QUERY_VECTOR_CACHE_SIZE vectors per process, in Redis/Memcached entries expire after the timeout.
# The question log is committed without waiting for the WAL flush (a database crash may lose its last fraction
# of a second); true waits, like every other write.
QUERY_LOG_SYNCHRONOUS_COMMIT = env.bool("QUERY_LOG_SYNCHRONOUS_COMMIT", default=True)
QUERY_VECTOR_CACHE = env.bool("QUERY_VECTOR_CACHE", default=True)
QUERY_VECTOR_CACHE_SIZE = env.int("QUERY_VECTOR_CACHE_SIZE", default=4096)
QUERY_VECTOR_CACHE_TIMEOUT = env.int("QUERY_VECTOR_CACHE_TIMEOUT", default=7 * 24 * 3600)


def bounded_cache(*, prefix: str, location: str, timeout: int, size: int) -> dict:
    """A cache alias on the CACHE_URL backend with its own key prefix; in memory, its own store of `size` entries."""
    alias = {**CACHES["default"], "KEY_PREFIX": prefix, "TIMEOUT": timeout}
    if CACHES["default"]["BACKEND"].endswith("LocMemCache"):
        alias.update(LOCATION=location, OPTIONS={**CACHES["default"].get("OPTIONS", {}), "MAX_ENTRIES": size})
    return alias


CACHES["query_vectors"] = bounded_cache(
    prefix="oraculo-qv",
    location="oraculo-query-vectors",
    timeout=QUERY_VECTOR_CACHE_TIMEOUT,
    size=QUERY_VECTOR_CACHE_SIZE,
)

# Retrieval-result cache: a repeated question with the same options skips the embedding and the search. Keyed on
# the library's generation (biblioteca.models.LibraryGeneration, bumped by triggers on every write), so a result
# is never served after the library changed; in memory it holds at most RETRIEVAL_CACHE_SIZE results per process.
RETRIEVAL_CACHE = env.bool("RETRIEVAL_CACHE", default=True)
RETRIEVAL_CACHE_SIZE = env.int("RETRIEVAL_CACHE_SIZE", default=1024)
RETRIEVAL_CACHE_TIMEOUT = env.int("RETRIEVAL_CACHE_TIMEOUT", default=24 * 3600)
CACHES["retrieval_results"] = bounded_cache(
    prefix="oraculo-rr",
    location="oraculo-retrieval-results",
    timeout=RETRIEVAL_CACHE_TIMEOUT,
    size=RETRIEVAL_CACHE_SIZE,
)
# Each process remembers the sentence spans and vectors it read for trimming, under the library generation they
# were read at (biblioteca/sentence_memory.py), within this many MiB (about 600 sentences a MiB at 384
# dimensions); 0 reads them on every trimmed question.
RETRIEVAL_SENTENCE_MEMORY_MB = env.int("RETRIEVAL_SENTENCE_MEMORY_MB", default=64)

# Read replicas and pooling (README: "Read replicas and pooling"). Searches, retrieval and the dashboard's lists
# read a replica; writes, transactions and a request or task run that has written use the primary
# (config/replicas.py).
from config.database import connection_settings, replica_databases  # noqa: E402

DATABASE_POOL = env.bool("DATABASE_POOL", default=False)
DATABASE_POOL_MIN_SIZE = env.int("DATABASE_POOL_MIN_SIZE", default=2)
DATABASE_POOL_MAX_SIZE = env.int("DATABASE_POOL_MAX_SIZE", default=10)
DATABASE_POOL_TIMEOUT = env.float("DATABASE_POOL_TIMEOUT", default=10.0)
DATABASE_DISABLE_SERVER_SIDE_CURSORS = env.bool("DATABASE_DISABLE_SERVER_SIDE_CURSORS", default=False)
# The HNSW index over chunk vectors and how searches walk it (README: "Sizing"; bench/scale.py measured the
# defaults). m and ef_construction are read when the index is built (migration 0001, `rebuild_vector_index`);
# ef_search, the iterative scan and its tuple budget with SET LOCAL inside each search's transaction. ef_search
# is four times the vector side's 40 candidates (RETRIEVAL_HYBRID_CANDIDATES): at twice, a filtered search in a
# shared table missed some of its app's 40 nearest chunks (docs/*/calibration.md).
RETRIEVAL_HNSW_M = env.int("RETRIEVAL_HNSW_M", default=16)
RETRIEVAL_HNSW_EF_CONSTRUCTION = env.int("RETRIEVAL_HNSW_EF_CONSTRUCTION", default=64)
RETRIEVAL_EF_SEARCH = env.int("RETRIEVAL_EF_SEARCH", default=160)
RETRIEVAL_ITERATIVE_SCAN = env.str("RETRIEVAL_ITERATIVE_SCAN", default="strict_order")
RETRIEVAL_MAX_SCAN_TUPLES = env.int("RETRIEVAL_MAX_SCAN_TUPLES", default=0)
_database_options = dict(
    conn_max_age=DATABASES["default"]["CONN_MAX_AGE"],
    connect_timeout=DATABASES["default"]["OPTIONS"]["connect_timeout"],
    pool={
        "min_size": DATABASE_POOL_MIN_SIZE,
        "max_size": DATABASE_POOL_MAX_SIZE,
        "timeout": DATABASE_POOL_TIMEOUT,
    }
    if DATABASE_POOL
    else None,
    disable_server_side_cursors=DATABASE_DISABLE_SERVER_SIDE_CURSORS,
)
DATABASES["default"] = connection_settings(url_config=DATABASES["default"], **_database_options)
DATABASES.update(replica_databases(urls=env.list("DATABASE_REPLICA_URLS", default=[]), **_database_options))
DATABASE_REPLICAS = [alias for alias in DATABASES if alias != "default"]
DATABASE_ROUTERS = ["config.replicas.ReplicaRouter"]
MIDDLEWARE = ["config.replicas.PrimaryPinningMiddleware", *MIDDLEWARE]
