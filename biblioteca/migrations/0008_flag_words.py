"""Command-line flags become words of their own in the full-text index (`--port` -> `port`, `flagport`).

Only chunks whose title, headings or text hold two dashes are indexed again, from their stored text and with
their document's configuration: nothing is embedded again.
"""

from collections import defaultdict

from django.db import migrations

from biblioteca.migrations._search_index import index_chunks

CANDIDATES_SQL = (
    "SELECT c.document_id, c.id FROM {chunk} AS c JOIN {document} AS d ON d.id = c.document_id "
    "WHERE c.text LIKE %(dashes)s OR d.title LIKE %(dashes)s OR c.heading_path::text LIKE %(dashes)s"
)


def index_chunks_with_flags(apps, schema_editor):
    Document = apps.get_model("biblioteca", "Document")
    Chunk = apps.get_model("biblioteca", "Chunk")
    connection = schema_editor.connection
    alias = connection.alias
    candidates: dict[int, list[int]] = defaultdict(list)
    with connection.cursor() as cursor:
        cursor.execute(
            CANDIDATES_SQL.format(chunk=Chunk._meta.db_table, document=Document._meta.db_table),
            {"dashes": "%--%"},
        )
        for document_id, chunk_id in cursor.fetchall():
            candidates[document_id].append(chunk_id)
    for document in Document.objects.using(alias).filter(pk__in=list(candidates)).order_by("pk"):
        ids = candidates[document.pk]
        chunks = list(Chunk.objects.using(alias).filter(pk__in=ids).only("pk", "heading_path", "text"))
        index_chunks(connection, Chunk, document, chunks)


class Migration(migrations.Migration):
    dependencies = [
        ("biblioteca", "0007_search_index_without_pending_list"),
    ]

    operations = [
        migrations.RunPython(index_chunks_with_flags, migrations.RunPython.noop, elidable=True),
    ]
