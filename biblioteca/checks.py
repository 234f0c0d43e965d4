"""System checks: the database must have pgvector, and stored vectors must come from the configured model; every
setting the library reads is refused, by name, when the product cannot work with it."""

from __future__ import annotations

from django.core.checks import Error, Tags, Warning, register
from django.db import DatabaseError, connection


@register(Tags.database)
def pgvector_available(app_configs=None, **kwargs):
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")
            available = cursor.fetchone() is not None
    except DatabaseError as exc:
        return [
            Error(
                f"The database is unreachable: {exc}".strip(),
                hint="Check DATABASE_URL.",
                id="biblioteca.E001",
            )
        ]
    if not available:
        return [
            Error(
                "The database has no pgvector extension available.",
                hint="Install pgvector >= 0.7 on the server, or unset DATABASE_URL to use the embedded one.",
                id="biblioteca.E002",
            )
        ]
    return []


@register(Tags.database)
def vector_columns_match_dimensions(app_configs=None, **kwargs):
    """The vector columns are created with EMBEDDING_DIMENSIONS; a later change needs a fresh library."""
    from django.conf import settings

    from biblioteca.models import Chunk, Sentence

    errors = []
    try:
        with connection.cursor() as cursor:
            for model in (Chunk, Sentence):
                cursor.execute(
                    "SELECT atttypmod FROM pg_attribute WHERE attrelid = %s::regclass "
                    "AND attname = 'embedding'",
                    [model._meta.db_table],
                )
                row = cursor.fetchone()
                if row and row[0] != settings.EMBEDDING_DIMENSIONS:
                    errors.append(
                        Error(
                            f"{model._meta.db_table}.embedding holds {row[0]}-dimensional vectors but "
                            f"EMBEDDING_DIMENSIONS is {settings.EMBEDDING_DIMENSIONS}.",
                            hint="Set EMBEDDING_DIMENSIONS back, or start a new database for the new model "
                            "(migrate, then ingest again).",
                            id="biblioteca.E003",
                        )
                    )
    except DatabaseError:
        return []
    return errors


@register(Tags.database)
def embedding_model_matches(app_configs=None, **kwargs):
    """Stored vectors should come from the configured model (an unknown backend has none: E014 says so)."""
    from django.conf import settings

    from biblioteca.embeddings import EMBEDDING_BACKENDS, configured_model_name
    from biblioteca.selectors import stored_embedding_models

    if settings.EMBEDDING_BACKEND not in EMBEDDING_BACKENDS:
        return []
    try:
        stored = stored_embedding_models()
    except DatabaseError:
        return []
    configured = configured_model_name()
    others = sorted(set(stored) - {configured})
    if not others:
        return []
    return [
        Warning(
            f"Chunks were embedded with {', '.join(others)} but the configured model is {configured}; "
            "their vectors are not comparable.",
            hint="Run `python manage.py reembed` to embed them again with the configured model.",
            id="biblioteca.W001",
        )
    ]


@register(Tags.database)
def heading_vectors_stored(app_configs=None, **kwargs):
    """Documents stored before heading vectors were are trimmed without them until their next ingest. Counting them
    reads every chunk, so only when asked (`check --database default`), not at every command's start."""
    from biblioteca.selectors import documents_without_heading_vectors

    if not kwargs.get("databases"):
        return []
    try:
        count = documents_without_heading_vectors()
    except DatabaseError:
        return []
    if not count:
        return []
    return [
        Warning(
            f"{count} document(s) were stored before their headings' vectors were; trimming reads none for them "
            "(RETRIEVAL_TRIM_HEADING_ANSWER).",
            hint="Run `python manage.py ingest_docs` on their folders again: it embeds their headings alone.",
            id="biblioteca.W005",
        )
    ]


@register()
def backend_settings(app_configs=None, **kwargs):
    """An embedding backend, token encoding or embeddings server URL the product cannot use fails every ingest and
    every question."""
    from biblioteca.embeddings import EMBEDDING_BACKENDS
    from biblioteca.text.tokens import token_encodings
    from config.checks import setting_not_among, settings_not_http_urls

    return [
        *setting_not_among("EMBEDDING_BACKEND", EMBEDDING_BACKENDS, check_id="biblioteca.E014"),
        *setting_not_among("TOKEN_ENCODING", token_encodings(), check_id="biblioteca.E015"),
        *settings_not_http_urls(["EMBEDDING_BASE_URL"], check_id="biblioteca.E017"),
    ]


# The least value each of these settings can work with: a file cap, batch or concurrency of 0 ingests nothing; a
# timeout under a tenth of a second fails every call; a cache of no entries caches nothing, yet costs its lookups.
LIMIT_FLOORS = {
    "INGEST_MAX_FILE_BYTES": 1,
    "EMBEDDING_BATCH_SIZE": 1,
    "EMBEDDING_TIMEOUT": 0.1,
    "EMBEDDING_MAX_RETRIES": 0,
    "EMBEDDING_THREADS": 0,
    "EMBEDDING_CONCURRENCY": 1,
    "QUERY_VECTOR_CACHE_SIZE": 1,
    "QUERY_VECTOR_CACHE_TIMEOUT": 0,
    "RETRIEVAL_CACHE_SIZE": 1,
    "RETRIEVAL_CACHE_TIMEOUT": 0,
    "RETRIEVAL_MAX_SCAN_TUPLES": 0,
    "RETRIEVAL_SENTENCE_MEMORY_MB": 0,
}


@register()
def limit_settings(app_configs=None, **kwargs):
    """Ingest, embedding and cache limits no lower than the product can work with (LIMIT_FLOORS)."""
    from config.checks import settings_under_floor

    return settings_under_floor(LIMIT_FLOORS, check_id="biblioteca.E016")


@register()
def chunk_settings(app_configs=None, **kwargs):
    """CHUNK_SIZE and CHUNK_OVERLAP as the chunker takes them: otherwise every page ingested would fail."""
    from django.conf import settings

    from biblioteca.text.chunking import check_chunk_sizes

    try:
        check_chunk_sizes(settings.CHUNK_SIZE, settings.CHUNK_OVERLAP)
    except ValueError as exc:
        return [
            Error(
                f"CHUNK_SIZE {settings.CHUNK_SIZE}, CHUNK_OVERLAP {settings.CHUNK_OVERLAP}: {exc}.",
                hint="Use a size of at least 1 word and an overlap from 0 to less than the size (500 and 50 by "
                "default).",
                id="biblioteca.E013",
            )
        ]
    return []


@register()
def vector_search_options(app_configs=None, **kwargs):
    """The iterative scan mode must be one pgvector knows (another is never set, so filtered searches would walk
    without one). ef_search must be a value pgvector takes: it checks the value only once a connection has loaded
    it, so one past 1,000 passes a connection's first search and fails every later one. Under the vector side's
    candidates, it leaves that side fewer than it asks for."""
    from django.conf import settings

    from biblioteca.vector_session import (
        ITERATIVE_SCAN_MODES,
        PGVECTOR_DEFAULT_EF_SEARCH,
        PGVECTOR_MAX_EF_SEARCH,
    )
    from config.checks import setting_not_among

    problems = setting_not_among("RETRIEVAL_ITERATIVE_SCAN", ITERATIVE_SCAN_MODES, check_id="biblioteca.E004")
    ef_search = settings.RETRIEVAL_EF_SEARCH
    width = ef_search or PGVECTOR_DEFAULT_EF_SEARCH
    if not 0 <= ef_search <= PGVECTOR_MAX_EF_SEARCH:
        problems.append(
            Error(
                f"RETRIEVAL_EF_SEARCH is {ef_search}.",
                hint=f"Use 1 to {PGVECTOR_MAX_EF_SEARCH:,} (pgvector's range), or 0 for pgvector's default "
                f"({PGVECTOR_DEFAULT_EF_SEARCH}).",
                id="biblioteca.E011",
            )
        )
    elif width < settings.RETRIEVAL_HYBRID_CANDIDATES:
        problems.append(
            Warning(
                f"RETRIEVAL_EF_SEARCH is {width}, under the {settings.RETRIEVAL_HYBRID_CANDIDATES} candidates the "
                "vector side asks for (RETRIEVAL_HYBRID_CANDIDATES): a search without a filter gets no more than "
                "ef_search of them, and a filtered one misses more of the nearest.",
                hint="Raise RETRIEVAL_EF_SEARCH; the default, 160, is four times the default candidates.",
                id="biblioteca.W003",
            )
        )
    return problems


@register(Tags.database)
def vector_search_settings(app_configs=None, **kwargs):
    """The HNSW index should be built as configured."""
    from biblioteca.vector_index import (
        IndexOptionsError,
        configured_hnsw_options,
        live_hnsw_options,
        validated,
    )

    try:
        configured = validated(configured_hnsw_options())
    except IndexOptionsError as exc:
        return [Error(exc.message, hint="Fix RETRIEVAL_HNSW_M / _EF_CONSTRUCTION.", id="biblioteca.E005")]
    try:
        live = live_hnsw_options()
    except DatabaseError:
        return []
    if live is not None and live != configured:
        return [
            Warning(
                f"The chunk vector index was built with m={live.m}, ef_construction={live.ef_construction}; "
                f"the settings say m={configured.m}, ef_construction={configured.ef_construction}.",
                hint="Run `python manage.py rebuild_vector_index` (searches go on while it builds).",
                id="biblioteca.W002",
            )
        ]
    return []


@register()
def hybrid_search_settings(app_configs=None, **kwargs):
    """The sides' weights, candidates and fusion constant are 0 or more. The language weight is a share of a score:
    above 0 (0 would tie every section in another language at nothing), at most 1; the cross-language words share
    is a share of a weight, 0 to 1. The term coverage is an exponent: below 0 it would favour sections holding
    fewer of the question's terms. A question language needs PostgreSQL's function words for it; a document
    language without its stemmer is searched unstemmed. A negative language shift would move a question away from
    the docs' language."""
    from django.conf import settings

    from biblioteca.text.lexical import SEARCH_CONFIGS
    from config.checks import settings_outside, settings_under_floor

    problems = settings_under_floor(
        {
            f"RETRIEVAL_HYBRID_{name}": 0
            for name in (
                "CANDIDATES",
                "RRF_K",
                "SENTENCE_POOL",
                "VECTOR_WEIGHT",
                "LEXICAL_WEIGHT",
                "SENTENCE_WEIGHT",
            )
        },
        check_id="biblioteca.E012",
        why="a negative weight ranks the worst matches first, and a negative count or fusion constant fails every "
        "search",
    )
    weight = settings.RETRIEVAL_HYBRID_OTHER_LANGUAGE_WEIGHT
    if not 0 < weight <= 1:
        problems.append(
            Error(
                f"RETRIEVAL_HYBRID_OTHER_LANGUAGE_WEIGHT is {weight}.",
                hint="Use a share above 0 and at most 1 (1: no preference for the question's language).",
                id="biblioteca.E006",
            )
        )
    problems += settings_outside(
        ["RETRIEVAL_HYBRID_CROSS_LANGUAGE_LEXICAL_SHARE"],
        0,
        1,
        check_id="biblioteca.E018",
        hint="Use a share from 0 (a question in another language than the docs is searched by meaning alone) to 1 "
        "(its words weigh as much as a question's in the docs' language).",
    )
    coverage = settings.RETRIEVAL_HYBRID_TERM_COVERAGE
    if coverage < 0:
        problems.append(
            Error(
                f"RETRIEVAL_HYBRID_TERM_COVERAGE is {coverage}.",
                hint="Use 0 (plain BM25) or more; the default, 0.5, weighs a section by the square root of the "
                "share of the question's terms it holds.",
                id="biblioteca.E007",
            )
        )
    unknown = [code for code in settings.RETRIEVAL_QUESTION_LANGUAGES if code not in SEARCH_CONFIGS]
    if unknown:
        problems.append(
            Error(
                f"RETRIEVAL_QUESTION_LANGUAGES names {', '.join(map(repr, unknown))}, which PostgreSQL cannot stem.",
                hint=f"Use ISO 639-1 codes among: {', '.join(sorted(SEARCH_CONFIGS))}.",
                id="biblioteca.E009",
            )
        )
    unstemmed = {
        app: code for app, code in settings.DOCUMENT_LANGUAGE_BY_APP.items() if code not in SEARCH_CONFIGS
    }
    if unstemmed:
        problems.append(
            Warning(
                "DOCUMENT_LANGUAGE_BY_APP gives "
                + ", ".join(f"{app!r} the language {code!r}" for app, code in sorted(unstemmed.items()))
                + ", which PostgreSQL cannot stem: those documents are searched by their words as written.",
                hint=f"Right for a language without a stemmer; otherwise use an ISO 639-1 code among: "
                f"{', '.join(sorted(SEARCH_CONFIGS))}.",
                id="biblioteca.W004",
            )
        )
    if settings.RETRIEVAL_LANGUAGE_SHIFT < 0:
        problems.append(
            Error(
                f"RETRIEVAL_LANGUAGE_SHIFT is {settings.RETRIEVAL_LANGUAGE_SHIFT}.",
                hint="Use 0 (off) or more; the default, 1, moves a question by the whole difference between "
                "the languages.",
                id="biblioteca.E010",
            )
        )
    return problems


@register()
def trim_settings(app_configs=None, **kwargs):
    """The trimming settings as the product reads them: a value `TrimParams` refuses (a negative window or
    follow count, a threshold outside [-1, 1]) would otherwise fail the first question that trims. The
    cross-language words share is a share of a weight, 0 to 1."""
    from biblioteca.retrieval import resolve_trim_params
    from biblioteca.trimming import TrimParamError
    from config.checks import settings_outside

    try:
        resolve_trim_params()
    except TrimParamError as exc:
        return [
            Error(
                f"RETRIEVAL_TRIM_{exc.field.upper()}: {exc}.", hint="Fix that setting.", id="biblioteca.E008"
            )
        ]
    return settings_outside(
        ["RETRIEVAL_TRIM_CROSS_LANGUAGE_LEXICAL_SHARE"],
        0,
        1,
        check_id="biblioteca.E019",
        hint="Use a share from 0 (a question in another language than the docs is trimmed by meaning alone) to 1 "
        "(its words count as a question's in the docs' language).",
    )
