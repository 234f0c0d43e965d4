"""Full-text search beside the vectors: each document's language, each chunk's search vector.

Existing chunks are indexed from their stored text and header: nothing is embedded again.
"""

import django.contrib.postgres.indexes
import django.contrib.postgres.search
from django.conf import settings
from django.db import migrations, models

from biblioteca.migrations._search_index import index_chunks
from biblioteca.text.lexical import detect_language, search_config


def index_existing_chunks(apps, schema_editor):
    Document = apps.get_model("biblioteca", "Document")
    Chunk = apps.get_model("biblioteca", "Chunk")
    connection = schema_editor.connection
    for document in Document.objects.using(connection.alias).order_by("pk").iterator():
        chunks = list(Chunk.objects.using(connection.alias).filter(document=document).order_by("chunk_index"))
        language = settings.DOCUMENT_LANGUAGE_BY_APP.get(document.app) or detect_language(
            "\n\n".join(c.text for c in chunks)
        )
        document.language, document.search_config = language, search_config(language)
        document.save(update_fields=["language", "search_config"])
        index_chunks(connection, Chunk, document, chunks)


class Migration(migrations.Migration):
    dependencies = [
        ("biblioteca", "0001_initial"),
    ]

    operations = [
        migrations.AddField(
            model_name="chunk",
            name="search_vector",
            field=django.contrib.postgres.search.SearchVectorField(
                help_text="Full-text index of the passage header and text, accents folded and identifiers spelled out (biblioteca.text.lexical).",
                null=True,
            ),
        ),
        migrations.AddField(
            model_name="chunk",
            name="search_length",
            field=models.PositiveIntegerField(
                default=0,
                help_text="Words indexed in search_vector: the passage length full-text ranking normalises by.",
            ),
        ),
        migrations.AddField(
            model_name="document",
            name="language",
            field=models.CharField(
                blank=True,
                help_text="ISO 639-1 code of its prose, detected at ingest or set per app; blank when unknown.",
                max_length=8,
            ),
        ),
        migrations.AddField(
            model_name="document",
            name="search_config",
            field=models.CharField(
                default="simple",
                help_text="PostgreSQL text-search configuration its chunks are indexed with, from its language.",
                max_length=32,
            ),
        ),
        migrations.RunPython(index_existing_chunks, migrations.RunPython.noop, elidable=True),
        migrations.AddIndex(
            model_name="chunk",
            index=django.contrib.postgres.indexes.GinIndex(
                fields=["search_vector"], name="chunk_search_vector_gin"
            ),
        ),
    ]
