"""Reads over the library: nearest chunks, stored sentence vectors, model bookkeeping.

Over 300 lines because the hybrid search is one SQL statement with its parameters and row mapping; it reads best
whole, next to the other reads it shares helpers with."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from django.contrib.postgres.aggregates import ArrayAgg
from django.db import connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.postgresql.base import ServerBindingCursor
from django.db.backends.utils import CursorWrapper
from django.db.models import Count, Q, QuerySet
from django.db.models.query import RawQuerySet
from pgvector import Vector
from pgvector.django import CosineDistance
from psycopg.pq import Format

from biblioteca.models import Chunk, Document, LibraryGeneration, Sentence
from biblioteca.passages import Piece
from biblioteca.text.lexical import SEARCH_LANGUAGES
from biblioteca.text.question_words import question_text
from biblioteca.vector_session import vector_search_session
from config.replicas import read_connection, replica_reads


def stored_embedding_models() -> dict[str, int]:
    """How many chunks each embedding model made."""
    rows = Chunk.objects.values("embedding_model").annotate(n=Count("id")).order_by()
    return {row["embedding_model"]: row["n"] for row in rows}


def documents_without_heading_vectors() -> int:
    """Documents stored before heading vectors were: some chunk has a heading, and none stores its vector."""
    return (
        Document.objects.annotate(
            headed=Count("chunks", filter=~Q(chunks__heading_path=[])),
            with_vectors=Count("chunks", filter=Q(chunks__heading_embedding__isnull=False)),
        )
        .filter(headed__gt=0, with_vectors=0)
        .count()
    )


def pgvector_version(*, using: str = "default") -> str:
    """The installed pgvector's version, or "" when the extension is missing."""
    with connections[using].cursor() as cursor:
        cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        row = cursor.fetchone()
    return row[0] if row else ""


@replica_reads()
def library_generation(*, app: str | None) -> str:
    """The app's generation, or without an app a digest of every app's: it changes whenever rows a search reads
    change, and never comes back. Read where the search then reads (a run keeps its replica) and before it, so a
    result is never filed under a generation newer than its rows."""
    table = LibraryGeneration._meta.db_table
    with read_connection(LibraryGeneration).cursor() as cursor:
        if app:
            cursor.execute(f"SELECT generation FROM {table} WHERE app = %s", [app])
        else:
            cursor.execute(
                f"SELECT md5(coalesce(string_agg(app || ':' || generation, ',' ORDER BY app), '')) FROM {table}"
            )
        row = cursor.fetchone()
    return str(row[0]) if row else "0"


@lru_cache(maxsize=1)
def _has_iterative_scan(alias: str) -> bool:
    """pgvector >= 0.8 can keep walking the HNSW graph until the filters are satisfied."""
    version = pgvector_version(using=alias)
    return bool(version) and tuple(int(p) for p in version.split(".")[:2]) >= (0, 8)


def _filtered_scope(qs: QuerySet, *, app: str | None, source_type: str | None) -> QuerySet:
    """`qs` (chunks or documents: both carry the app and source type) narrowed to a search's scope."""
    if app:
        qs = qs.filter(app=app)
    if source_type:
        qs = qs.filter(source_type=source_type)
    return qs


def _nearest(run: Callable[[], list[Chunk]], *, alias: str, filtered: bool) -> list[Chunk]:
    """Run a nearest-neighbour read; a filtered one asks pgvector for a strict-order iterative scan.

    With a filter, the HNSW index alone returns its `ef_search` nearest chunks and the filter then drops those of
    other apps: an app among many could get fewer than `top_k`, or none. An iterative scan prevents that.
    """
    with vector_search_session(alias=alias, iterative=filtered and _has_iterative_scan(alias)):
        return run()


@replica_reads()
def chunk_search(
    *,
    query_vector: np.ndarray,
    top_k: int,
    app: str | None = None,
    source_type: str | None = None,
    query_text: str | None = None,
    hybrid: HybridParams | None = None,
    seat: int | None = None,
) -> list[Chunk]:
    """The `top_k` best chunks for the query, each annotated with `score` (cosine similarity).

    Without `hybrid` they are the nearest by cosine. With it (and a `query_text`), the nearest by cosine and the
    best full-text matches are fused by reciprocal rank, in one statement (`hybrid_chunk_search`); `seat` is
    the place the nearest chunk is sure of (default `top_k`).
    """
    if hybrid is not None and query_text and query_text.strip():
        return hybrid_chunk_search(
            query_vector=query_vector,
            query_text=query_text,
            top_k=top_k,
            app=app,
            source_type=source_type,
            params=hybrid,
            seat=seat,
        )
    qs = _filtered_scope(Chunk.objects.select_related("document"), app=app, source_type=source_type)
    qs = qs.annotate(distance=CosineDistance("embedding", query_vector)).order_by("distance")[:top_k]
    chunks = _nearest(lambda: list(qs), alias=qs.db, filtered=bool(app or source_type))
    for chunk in chunks:
        chunk.score = 1.0 - float(chunk.distance)
    return chunks


HYBRID_MAX_DF = 2000
HYBRID_COMMON_FLOOR = 10
HYBRID_MAX_DF_SHARE = 0.25


@dataclass(frozen=True)
class HybridParams:
    """Reciprocal rank fusion: a chunk scores `weight / (rrf_k + rank)` on each side that ranks it; `k1` and
    `b` are BM25's saturation and length normalisation. `sentence_weight` 0 leaves the sentence side out; with
    `keep_first` it reorders and promotes chunks but never takes first place from the other two sides' best.
    The words side multiplies a chunk's BM25 score by the share of the question's terms it holds, to the power
    `term_coverage` (0: plain BM25). With `vector_seat` (and a vector weight above 0), the chunk nearest by
    cosine (unless its page is in another language than the question's) ranks no lower than the search's
    `seat`: the words side's weight lets a few pages holding the question's words fill the top 5 over the
    passage closest in meaning.
    In a scope with documents in several languages, a chunk whose document is in another language than the
    question's (the one whose function words it uses) scores `other_language_weight` times as much.
    `question_configs` are the text-search configurations of the languages questions are asked in: a question's
    function words in its own language are no terms, whatever the docs' language."""

    candidates: int = 40
    rrf_k: int = 5
    vector_weight: float = 1.0
    lexical_weight: float = 2.0
    sentence_weight: float = 1.0
    sentence_pool: int = 30
    keep_first: bool = True
    vector_seat: bool = True
    term_coverage: float = 0.5
    other_language_weight: float = 1.0
    max_df: int = HYBRID_MAX_DF
    max_df_share: float = HYBRID_MAX_DF_SHARE
    common_floor: int = HYBRID_COMMON_FLOOR
    question_configs: tuple[str, ...] = ("english", "spanish")
    k1: float = 1.2
    b: float = 0.75


_DOCUMENT_FIELDS = ("app", "source_path", "source_type", "title", "url", "language", "processed_with")

# The question's terms, parsed with the text-search configuration of every language in scope (a Spanish
# question meets Spanish stems, an English one English stems), less the words any of them drops as a function
# word: in an app with English and Spanish docs, `spanish` keeps `how`, `do` and `i`, which then matched only
# the Spanish pages quoting an English sentence and, rare there, ranked them first for every "How do I...?".
# Nor are the function words of the language the question is written in terms, when that is not the docs' own:
# `english` keeps `de`, `la` and `en`, which a Spanish question over English docs is full of and the docs hold
# a few times (`de facto`), rare enough to be the question's heaviest terms. That language is the one among
# `question_configs` (RETRIEVAL_QUESTION_LANGUAGES) that alone drops the most of its words; an English question
# over English docs keeps `os`, a Spanish function word and Node's module.
# Each term is weighed by its rarity within the scope searched (the app and source type, from the chunk's own
# columns): its chunks holding the term, read off the GIN index up to `max_df`, against the scope's size. A
# term in more than `max_df_share` of the scope (or `max_df` chunks) says little and is left out, which also
# bounds the work; so is a term in none. A small scope keeps the terms found in up to `common_floor` chunks,
# or a team's first pages would have no rare words at all. Other apps never move the weights.
# The scope's size is counted on the (app, source type) index up to `size_cap` chunks, so a question never counts
# a large app's chunks: past the cap, weights are those of an app of `size_cap` chunks (a little flatter than the
# true ones; still the app's own). The planner's estimate (pg_stats) would be closer, but planning its view
# doubled the statement's planning time.
_TERMS_SQL = """
configs AS MATERIALIZED (
    SELECT DISTINCT d.search_config::regconfig AS config FROM {document} d WHERE {document_scope}
),
asked_in_votes AS MATERIALIZED (
    SELECT a.config, count(*) AS votes
    FROM unnest(%(question_configs)s::regconfig[]) AS a(config), unnest(%(words)s::text[]) AS w(word)
    WHERE length(to_tsvector(a.config, w.word)) = 0
    GROUP BY a.config
),
function_word_configs AS MATERIALIZED (
    SELECT config FROM configs
    UNION
    SELECT config FROM asked_in_votes v
    WHERE votes > coalesce((SELECT max(o.votes) FROM asked_in_votes o WHERE o.config <> v.config), 0)
),
query_terms AS MATERIALIZED (
    SELECT DISTINCT lexeme
    FROM unnest(%(words)s::text[]) AS w(word), configs,
         unnest(tsvector_to_array(to_tsvector(configs.config, w.word))) AS lexeme
    WHERE NOT EXISTS (SELECT 1 FROM function_word_configs c WHERE length(to_tsvector(c.config, w.word)) = 0)
),
library AS MATERIALIZED (
    {library_size}
),
term_hits AS MATERIALIZED (
    SELECT q.lexeme, q.query, h.df, h.ids, h.lengths
    FROM (SELECT lexeme, quote_literal(lexeme)::tsquery AS query FROM query_terms) q,
         LATERAL (SELECT count(*) AS df, array_agg(c.id) AS ids, array_agg(greatest(c.search_length, 1)) AS lengths
                  FROM (SELECT c.id, c.search_length FROM {chunk} c
                        WHERE c.search_vector @@ q.query AND {scope} LIMIT %(max_df)s) c) h
),
term_weights AS MATERIALIZED (
    SELECT t.lexeme, t.query, t.ids, t.lengths,
           ln(1 + (greatest(library.size, t.df) - t.df + 0.5) / (t.df + 0.5)) AS weight
    FROM term_hits t, library
    WHERE t.df BETWEEN 1 AND %(max_df)s - 1
      AND t.df <= greatest(%(max_df_share)s * library.size, %(common_floor)s)
)"""

_LIBRARY_SIZE_SQL = """SELECT coalesce((SELECT nullif(greatest(reltuples, 0), 0) FROM pg_class WHERE oid = '{chunk}'::regclass),
                    (SELECT count(*) FROM {chunk}))::float8 AS size"""

_SCOPE_SIZE_SQL = """SELECT count(*)::float8 AS size
    FROM (SELECT 1 FROM {chunk} c WHERE {scope} LIMIT %(size_cap)s) s"""

# The vector side walks the HNSW index. The lexical side is BM25 on the GIN index, counting whether a chunk holds
# a term rather than how often (chunks are short, and reading every matched chunk's positions measured no better):
# each question term it holds adds its weight, normalised by the chunk's length against the matched chunks' mean.
# Both filter on the chunk's own app and source type: no document is read until the `top_k` are known (but for
# the candidates' language in a scope of several, below).
# A chunk's BM25 score is multiplied by the share of the question's terms it holds, to the power
# `term_coverage` (Lucene's old coordination factor): a help question in the user's own words has many terms, and
# a chunk that holds only one of them, rare as it may be, otherwise outranks the sections that hold several
# (measured on 224 docs questions: three more answers in the top 5, none lost; at 0.75 and 1, answers lost).
# The sentence side ranks the chunks the other two found by their best sentence's cosine (the vectors stored for
# trimming): a question worded unlike the docs often matches one sentence of its answer closely while the whole
# chunk's vector, diluted by its other sentences, ranks it tenth. It reads no index and no chunk the other sides
# did not bring. It does not take first place from the chunk vectors and words agree on best: one close sentence
# is weaker evidence than that, and the first passage is the one trimming keeps whole (measured: letting it move
# the first place lost answers to trimming, and prose's ranking gained nothing in the top 5).
# In a scope with documents in several languages, the question's language is the configuration that alone drops
# the most of its words as function words (`how`, `do`; `cómo`, `de`), and a chunk in another language scores
# `other_language_weight` times as much, both sides and the sentence side: translated pages otherwise take
# places in the top 5 from the question's language. A question with no such words (`signing_key`) prefers none,
# and a scope in one language is never touched.
# The chunk the vector side ranks first is placed no lower than `seat` (the passages the search asks for): at
# twice the vectors' weight, a few chunks holding the question's words outrank it on words alone, and for a
# question in other words than the docs it is often the one that answers (measured on 160 docs questions: two
# more answers in the top 5, none lost; prose unchanged). A chunk in another language than the question's
# has no seat: the language weight put it lower on purpose.
_SENTENCE_SIDE_SQL = """
sentence_side AS (
    SELECT p.id, row_number() OVER (ORDER BY b.distance, p.id) AS rank
    FROM (SELECT id FROM pairs ORDER BY fused DESC, vector_rank NULLS LAST LIMIT %(sentence_pool)s) p,
         LATERAL (SELECT min(s.embedding <=> (SELECT half FROM question)) AS distance
                  FROM {sentence} s WHERE s.chunk_id = p.id) b
    WHERE b.distance IS NOT NULL
),"""
_NO_SENTENCE_SIDE_SQL = """
sentence_side AS (SELECT NULL::bigint AS id, NULL::bigint AS rank WHERE false),"""

_LANGUAGE_SIDE_SQL = """
language_votes AS MATERIALIZED (
    SELECT c.config, count(*) AS votes
    FROM configs c, unnest(%(words)s::text[]) AS w(word)
    WHERE length(to_tsvector(c.config, w.word)) = 0
      AND EXISTS (SELECT 1 FROM configs o WHERE length(to_tsvector(o.config, w.word)) > 0)
    GROUP BY c.config
),
question_config AS MATERIALIZED (
    SELECT config FROM language_votes v
    WHERE votes > coalesce((SELECT max(o.votes) FROM language_votes o WHERE o.config <> v.config), 0)
),
pairs AS (
    SELECT u.id, u.fused * f.factor AS fused, u.vector_rank, u.lexical_rank, f.factor
    FROM unweighed_pairs u,
         LATERAL (SELECT CASE WHEN NOT EXISTS (SELECT 1 FROM question_config)
                                   OR (SELECT d.search_config::regconfig FROM {chunk} c
                                       JOIN {document} d ON d.id = c.document_id WHERE c.id = u.id)
                                      = (SELECT config FROM question_config)
                              THEN 1.0::float8 ELSE %(other_language_weight)s::float8 END AS factor OFFSET 0) f
),"""

_HYBRID_SQL = (
    """
WITH question AS MATERIALIZED (SELECT %(vector)s::vector AS vector, %(vector)s::halfvec AS half),
vector_side AS (
    SELECT c.id, row_number() OVER (ORDER BY c.distance) AS rank
    FROM (SELECT c.id, c.embedding <=> (SELECT vector FROM question) AS distance
          FROM {chunk} c
          WHERE {scope} ORDER BY c.embedding <=> (SELECT vector FROM question) LIMIT %(candidates)s) c
),"""
    + _TERMS_SQL
    + """,
matches AS (
    SELECT h.id, w.weight, h.length FROM term_weights w, unnest(w.ids, w.lengths) AS h(id, length)
),
lexical_side AS (
    SELECT id, row_number() OVER (ORDER BY score DESC, id) AS rank
    FROM (SELECT id, sum(weight * (%(k1)s::float8 + 1)
                         / (1 + %(k1)s::float8 * (1 - %(b)s::float8 + %(b)s::float8 * length / mean_length)))
                     * power(count(*)::float8 / greatest((SELECT count(*) FROM term_weights), 1),
                             %(term_coverage)s::float8) AS score
          FROM (SELECT m.*, avg(m.length::float8) OVER () AS mean_length FROM matches m) m
          GROUP BY id ORDER BY score DESC, id LIMIT %(candidates)s) best
),
{raw_pairs} AS (
    SELECT coalesce(v.id, l.id) AS id,
           coalesce(%(vector_weight)s::float8 / (%(rrf_k)s + v.rank), 0)
           + coalesce(%(lexical_weight)s::float8 / (%(rrf_k)s + l.rank), 0) AS fused,
           v.rank AS vector_rank, l.rank AS lexical_rank
    FROM vector_side v FULL OUTER JOIN lexical_side l ON l.id = v.id
),{language_side}{sentence_side}
scored AS (
    SELECT p.id, p.fused + {sentence_factor}coalesce(%(sentence_weight)s::float8 / (%(rrf_k)s + s.rank), 0) AS fused,
           p.vector_rank, p.lexical_rank, s.rank AS sentence_rank,
           %(keep_first)s AND p.id = (SELECT id FROM pairs ORDER BY fused DESC, vector_rank NULLS LAST LIMIT 1)
               AS first,
           {own_language} AS own_language
    FROM pairs p LEFT JOIN sentence_side s ON s.id = p.id
),
fused AS (
    SELECT r.*, CASE WHEN %(vector_seat)s AND r.vector_rank = 1 AND r.own_language AND r.position > %(seat)s
                     THEN %(seat)s - 0.5 ELSE r.position END AS place
    FROM (SELECT s.*, row_number() OVER (ORDER BY first DESC, fused DESC, vector_rank NULLS LAST) AS position
          FROM scored s) r
    ORDER BY place LIMIT %(top_k)s
)
SELECT c.id, c.document_id, c.chunk_index, c.heading_path, c.text, c.start_offset, c.end_offset, c.token_count,
       c.embedding_model, {document_columns}, 1 - (c.embedding <=> (SELECT vector FROM question)) AS score,
       f.fused, f.vector_rank, f.lexical_rank, f.sentence_rank,
       (SELECT json_object_agg(lexeme, weight) FROM term_weights) AS query_terms,
       (SELECT array_agg(config::text) FROM configs) AS scope_configs
FROM fused f JOIN {chunk} c ON c.id = f.id JOIN {document} d ON d.id = c.document_id
ORDER BY f.place
"""
)

SCOPE_SIZE_CAP = 20_000


def _scope(app: str | None, source_type: str | None, *, table: str = "c") -> str:
    scope = ["TRUE"]
    if app:
        scope.append(f"{table}.app = %(app)s")
    if source_type:
        scope.append(f"{table}.source_type = %(source_type)s")
    return " AND ".join(scope)


def _terms_sql(sql: str, *, app: str | None, source_type: str | None, **names: str) -> str:
    chunk = Chunk._meta.db_table
    library_size = _SCOPE_SIZE_SQL if app or source_type else _LIBRARY_SIZE_SQL
    return sql.format(
        chunk=chunk,
        document=Document._meta.db_table,
        scope=_scope(app, source_type),
        document_scope=_scope(app, source_type, table="d"),
        library_size=library_size.format(chunk=chunk, scope=_scope(app, source_type)),
        **names,
    )


def _terms_values(*, text: str, app: str | None, source_type: str | None, params: HybridParams) -> dict:
    return {
        "words": question_text(text).split(),
        "app": app,
        "source_type": source_type,
        "max_df": params.max_df,
        "max_df_share": params.max_df_share,
        "common_floor": params.common_floor,
        "size_cap": SCOPE_SIZE_CAP,
        "question_configs": list(params.question_configs),
    }


@replica_reads()
def query_term_weights(
    *, text: str, app: str | None = None, source_type: str | None = None, params: HybridParams | None = None
) -> dict[str, float]:
    """The question's index terms (stems, as the chunks were indexed) and their rarity weights in the scope."""
    if not text.strip():
        return {}
    sql = _terms_sql(
        "WITH " + _TERMS_SQL + " SELECT lexeme, weight FROM term_weights", app=app, source_type=source_type
    )
    values = _terms_values(text=text, app=app, source_type=source_type, params=params or HybridParams())
    with read_connection(Chunk).cursor() as cursor:
        cursor.execute(sql, values)
        return {lexeme: float(weight) for lexeme, weight in cursor.fetchall()}


# The text-search configurations (languages) of each scope's documents, as its last search found them (every
# search statement reads them): a scope in one language searches without the language votes, and the first
# search after a second language arrives finds it and searches again with them. Unknown scopes count as several.
_scope_configs: dict[tuple[str | None, str | None], frozenset[str]] = {}


def forget_scope_languages() -> None:
    """Forget every scope's languages: the next search of each reads them again, with the votes on."""
    _scope_configs.clear()


@replica_reads()
def scope_document_languages(*, app: str | None = None, source_type: str | None = None) -> frozenset[str]:
    """The languages (ISO 639-1; `""` for none PostgreSQL stems) of the documents a search in this scope reads:
    as the scope's last search statement in this process found them, else read now."""
    configs = _scope_configs.get((app, source_type))
    if configs is None:
        documents = _filtered_scope(Document.objects.order_by(), app=app, source_type=source_type)
        configs = frozenset(documents.values_list("search_config", flat=True).distinct())
    return frozenset(SEARCH_LANGUAGES.get(config, "") for config in configs)


def _hybrid_sql(*, app: str | None, source_type: str | None, params: HybridParams, several: bool) -> str:
    """`_HYBRID_SQL` for the scope, with the language votes when `several` languages share it."""
    sentence_side = _SENTENCE_SIDE_SQL if params.sentence_weight else _NO_SENTENCE_SIDE_SQL
    return _terms_sql(
        _HYBRID_SQL,
        app=app,
        source_type=source_type,
        document_columns=", ".join(f"d.{f} AS document__{f}" for f in _DOCUMENT_FIELDS),
        sentence_side=sentence_side.format(sentence=Sentence._meta.db_table),
        raw_pairs="unweighed_pairs" if several else "pairs",
        language_side=_LANGUAGE_SIDE_SQL.format(chunk=Chunk._meta.db_table, document=Document._meta.db_table)
        if several
        else "",
        sentence_factor="p.factor * " if several else "",
        own_language="p.factor = 1.0" if several else "true",
    )


@replica_reads()
def hybrid_chunk_search(
    *,
    query_vector: np.ndarray,
    query_text: str,
    top_k: int,
    app: str | None,
    source_type: str | None,
    params: HybridParams,
    seat: int | None = None,
) -> list[Chunk]:
    """Vector, full-text and best-sentence rankings fused by reciprocal rank, in one round trip; see
    `_HYBRID_SQL`. `seat` (default `top_k`, never first) is the lowest place the vector side's best may take."""
    scope = (app, source_type)
    values = {
        **_terms_values(text=query_text, app=app, source_type=source_type, params=params),
        "vector": vector_literal(query_vector),
        "candidates": max(params.candidates, top_k),
        "top_k": top_k,
        "rrf_k": params.rrf_k,
        "vector_weight": params.vector_weight,
        "lexical_weight": params.lexical_weight,
        "sentence_weight": params.sentence_weight,
        "other_language_weight": params.other_language_weight,
        "sentence_pool": params.sentence_pool,
        "keep_first": params.keep_first,
        "vector_seat": params.vector_seat and params.vector_weight > 0,
        "seat": max(seat or top_k, 2),
        "term_coverage": params.term_coverage,
        "k1": params.k1,
        "b": params.b,
    }

    def run(several: bool) -> tuple[RawQuerySet, list[Chunk]]:
        raw = Chunk.objects.raw(
            _hybrid_sql(app=app, source_type=source_type, params=params, several=several), values
        )
        return raw, _nearest(lambda: list(raw), alias=raw.db, filtered=bool(app or source_type))

    weighs_languages = params.other_language_weight != 1.0
    # A scope in one language (every factor would be 1) searches without the votes: they cost its statement
    # about a millisecond of planning and execution.
    known = _scope_configs.get(scope)
    several = weighs_languages and (known is None or len(known) > 1)
    raw, chunks = run(several)
    if chunks and weighs_languages and not several and len(chunks[0].scope_configs or ()) > 1:
        # A second language arrived since this process last searched the scope: search again with the votes.
        raw, chunks = run(True)
    if chunks:
        _scope_configs[scope] = frozenset(chunks[0].scope_configs or ())
    for chunk in chunks:
        chunk.document = Document.from_db(
            raw.db,
            ["id", *_DOCUMENT_FIELDS],
            [chunk.document_id, *(getattr(chunk, f"document__{f}") for f in _DOCUMENT_FIELDS)],
        )
        chunk.score = float(chunk.score)
        if isinstance(chunk.query_terms, str):
            chunk.query_terms = json.loads(chunk.query_terms)
        chunk.query_terms = {k: float(v) for k, v in (chunk.query_terms or {}).items()}
    return chunks


NEIGHBOUR_REACH = 4


def vector_literal(vector: np.ndarray) -> str:
    """pgvector's text form of a query vector. A question sends its vector twice (the search, then the logged
    question's row), and formatting 384 floats costs a fifth of a millisecond: it is done once."""
    vector = np.asarray(vector, dtype=np.float32)
    if vector.ndim != 1:
        raise ValueError("expected a vector of one dimension")
    return _vector_literal(vector.tobytes())


@lru_cache(maxsize=64)
def _vector_literal(raw: bytes) -> str:
    return Vector._to_db(np.frombuffer(raw, dtype=np.float32))


@dataclass(frozen=True)
class Neighbourhood:
    """Per document, its chunks around the hits, in order, and (when asked) the library generation they were read
    at (their app's: `LibraryGeneration`; absent when the app has none)."""

    pieces: dict[int, list[Piece]]
    generations: dict[int, int]


@replica_reads()
def chunk_neighbours(
    *,
    hits: Sequence[tuple[int, int]],
    reach: int = NEIGHBOUR_REACH,
    generations: bool = False,
    app: str | None = None,
) -> Neighbourhood:
    """Per document, its chunks within `reach` positions of the given (document id, chunk index) hits, in
    order: what a passage can grow into. One indexed read of (document, chunk_index); with `generations` it also
    reads each document's generation in the same statement (a join, about 0.3 ms more; when every hit is of
    `app`, that app's generation looked up once, about 0.15 ms), so that trimming can use sentences remembered
    from earlier questions while they are current."""
    if not hits:
        return Neighbourhood({}, {})
    documents, indexes = zip(*set(hits))
    generation, join, params = ", NULL", "", [list(documents), list(indexes), reach, reach]
    if generations and app is not None:
        generation = f", (SELECT generation FROM {LibraryGeneration._meta.db_table} WHERE app = %s)"
        params.insert(0, app)
    elif generations:
        generation = ", g.generation"
        join = f"LEFT JOIN {LibraryGeneration._meta.db_table} g ON g.app = c.app "
    sql = _NEIGHBOURS_SQL.format(chunks=Chunk._meta.db_table, generation=generation, join=join)
    with read_connection(Chunk).cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    pieces: dict[int, list[Piece]] = {}
    known: dict[int, int] = {}
    for id_, document_id, index, heading_path, text, start, end, generation in rows:
        pieces.setdefault(document_id, []).append(
            Piece(
                id=id_,
                index=index,
                heading_path=tuple(json.loads(heading_path)),
                text=text,
                start=start,
                end=end,
            )
        )
        if generation is not None:
            known[document_id] = generation
    return Neighbourhood(pieces, known)


_NEIGHBOURS_SQL = (
    "SELECT DISTINCT c.id, c.document_id, c.chunk_index, c.heading_path::text, c.text, c.start_offset, "
    "c.end_offset{generation} FROM {chunks} c "
    "JOIN unnest(%s::bigint[], %s::int[]) AS h(document_id, chunk_index) ON c.document_id = h.document_id "
    "AND c.chunk_index BETWEEN h.chunk_index - %s AND h.chunk_index + %s "
    "{join}ORDER BY c.document_id, c.chunk_index"
)


@dataclass(frozen=True)
class StoredSentences:
    """A chunk's sentence spans (offsets into its text) and their vectors, shape (n, d), read at library generation
    `generation` (None when its app has none), and their stems and identifier keys as stored (`terms`, `keys`: one
    line per sentence); `heading_vector`, the vector of the heading the chunk opens its section under (None when it
    opens none, or was stored before)."""

    spans: tuple[tuple[int, int], ...]
    vectors: np.ndarray
    generation: int | None = None
    terms: str | None = None
    keys: str | None = None
    heading_vector: np.ndarray | None = None

    def sentence_terms(self) -> list[str] | None:
        """Each sentence's stems, packed (`lexical.pack_terms`), as stored at ingest (None when not read); only
        today's if its document's processed_with is. Split only when a passage is met for the first time."""
        return self._lines(self.terms)

    def sentence_keys(self) -> list[str] | None:
        """Each sentence's identifier keys, packed, as `sentence_terms` gives its stems."""
        return self._lines(self.keys)

    def _lines(self, packed: str | None) -> list[str] | None:
        if packed is None:
            return None
        lines = packed.split("\n")
        return lines if len(lines) == len(self.spans) else None


@replica_reads()
def sentences_for_chunks(chunk_ids: Sequence[int]) -> dict[int, StoredSentences]:
    """Stored sentences of the given chunks, in order, with the generation they were read at; chunks without
    any are absent.

    Each chunk's sentences come as one binary value (`_SENTENCES_SQL`), in the binary wire format, read by numpy
    in one call: the text form of the vectors costs several milliseconds per query to parse, and the hex text of
    the binary value half as much again as the value itself.
    """
    if not chunk_ids:
        return {}
    sql = _SENTENCES_SQL.format(
        chunks=Chunk._meta.db_table,
        sentences=Sentence._meta.db_table,
        generations=LibraryGeneration._meta.db_table,
    )
    with binary_results(read_connection(Sentence)) as cursor:
        cursor.execute(sql, [list(chunk_ids)])
        rows = cursor.fetchall()
    out: dict[int, StoredSentences] = {}
    for chunk_id, generation, count, packed, terms, keys, heading in rows:
        if not count:
            continue
        dimensions = (len(packed) // count - 8) // 2
        sentences = np.frombuffer(packed, dtype=_packed_sentences(dimensions))
        out[chunk_id] = StoredSentences(
            tuple(zip(sentences["start"].tolist(), sentences["end"].tolist())),
            sentences["vector"].astype(np.float32),
            generation,
            terms,
            keys,
            None if heading is None else np.frombuffer(heading, dtype=">f2").astype(np.float32),
        )
    return out


# Per chunk, its sentences in position order, each as its start and end offsets (big-endian int4) and its vector
# as pgvector's binary form gives it (`halfvec_send`, past its two int16 headers: big-endian float16s); and their
# stems and identifier keys, a line each, unless one was stored without them; and the chunk's heading vector, as
# a sentence's, when it has one. Whether the stems and keys are today's is the search's to say, from the document
# it read: joining the documents here cost 0.8 ms a read, more than half again.
_SENTENCES_SQL = (
    "SELECT c.id, g.generation, s.count, s.packed, s.terms, s.keys, "
    "substring(halfvec_send(c.heading_embedding) from 5) FROM {chunks} c "
    "LEFT JOIN {generations} g ON g.app = c.app "
    "CROSS JOIN LATERAL (SELECT count(*) AS count, string_agg(int4send(s.start_offset::int) || "
    "int4send(s.end_offset::int) || substring(halfvec_send(s.embedding) from 5), ''::bytea ORDER BY s.position) "
    "AS packed, CASE WHEN count(s.terms) = count(*) THEN string_agg(s.terms, E'\\n' ORDER BY s.position) END "
    "AS terms, CASE WHEN count(s.identifier_keys) = count(*) THEN "
    "string_agg(s.identifier_keys, E'\\n' ORDER BY s.position) END AS keys FROM {sentences} s "
    "WHERE s.chunk_id = c.id) s "
    "WHERE c.id = ANY(%s)"
)


@contextmanager
def binary_results(connection: BaseDatabaseWrapper) -> Iterator[CursorWrapper]:
    """A cursor of `connection` whose results come in PostgreSQL's binary format, wrapped as Django wraps its own
    (queries logged when they are, database errors translated). Django's cursors bind parameters on the client,
    which psycopg allows only with results in text, where a bytea value travels as hex: twice its size. Binding
    on the server prepares nothing (Django turns psycopg's prepared statements off), so PgBouncer is no matter."""
    connection.ensure_connection()
    connection.validate_thread_sharing()
    with connection.wrap_database_errors:
        raw = ServerBindingCursor(connection.connection)
    raw.format = Format.BINARY
    cursor = connection.make_debug_cursor(raw) if connection.queries_logged else connection.make_cursor(raw)
    with cursor:
        yield cursor


@lru_cache(maxsize=4)
def _packed_sentences(dimensions: int) -> np.dtype:
    return np.dtype([("start", ">i4"), ("end", ">i4"), ("vector", ">f2", (dimensions,))])


@dataclass(frozen=True)
class LibraryScope:
    """One app and source type of the library: what a search can be filtered on, and how much is there."""

    app: str
    source_type: str
    documents: int
    chunks: int
    languages: tuple[str, ...]


def library_scopes() -> list[LibraryScope]:
    """Every (app, source type) pair with its document and chunk counts and its documents' languages."""
    documents = (
        Document.objects.values("app", "source_type")
        .annotate(n=Count("id"), languages=ArrayAgg("language", distinct=True, default=[]))
        .order_by("app", "source_type")
    )
    chunks = {
        (row["app"], row["source_type"]): row["n"]
        for row in Chunk.objects.values("app", "source_type").annotate(n=Count("id")).order_by()
    }
    return [
        LibraryScope(
            app=row["app"],
            source_type=row["source_type"],
            documents=row["n"],
            chunks=chunks.get((row["app"], row["source_type"]), 0),
            languages=tuple(sorted(lang for lang in row["languages"] if lang)),
        )
        for row in documents
    ]
