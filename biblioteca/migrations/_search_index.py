"""What the full-text migrations share: the statement that indexes chunks from their stored text (the same as
`biblioteca.ingest`'s when they were written, frozen here as migrations must be). Django's migration loader
skips modules whose names start with `_`."""

from biblioteca.text.lexical import lexical_text

INDEX_SQL = (
    "UPDATE {table} AS c SET search_vector = t.vector, "
    "search_length = (SELECT coalesce(sum(cardinality(u.positions)), 0) FROM unnest(t.vector) AS u) "
    "FROM (SELECT v.id, to_tsvector(%s::regconfig, v.body) AS vector "
    "FROM unnest(%s::bigint[], %s::text[]) AS v(id, body)) AS t WHERE c.id = t.id"
)


def index_chunks(connection, Chunk, document, chunks) -> None:
    """Index `chunks` (of `document`) for full-text search with the document's configuration."""
    bodies = [lexical_text(document.title, *c.heading_path, c.text) for c in chunks]
    with connection.cursor() as cursor:
        cursor.execute(
            INDEX_SQL.format(table=Chunk._meta.db_table),
            [document.search_config, [c.pk for c in chunks], bodies],
        )
