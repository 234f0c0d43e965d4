"""The full-text index is written directly, without GIN's pending list (see `Chunk.Meta.indexes`).

Altered in place rather than rebuilt: turning the option off is instant on any library size, and the entries
already pending are then moved into the index, so the first search after the migration reads none.
"""

import django.contrib.postgres.indexes
from django.db import migrations

INDEX = "chunk_search_vector_gin"


class Migration(migrations.Migration):
    dependencies = [
        ("biblioteca", "0006_chunk_scope_trigger"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.RemoveIndex(model_name="chunk", name=INDEX),
                migrations.AddIndex(
                    model_name="chunk",
                    index=django.contrib.postgres.indexes.GinIndex(
                        fastupdate=False, fields=["search_vector"], name=INDEX
                    ),
                ),
            ],
            database_operations=[
                migrations.RunSQL(
                    f"ALTER INDEX {INDEX} SET (fastupdate = off)",
                    reverse_sql=f"ALTER INDEX {INDEX} RESET (fastupdate)",
                ),
                migrations.RunSQL(
                    f"SELECT gin_clean_pending_list('{INDEX}'::regclass)", reverse_sql=migrations.RunSQL.noop
                ),
            ],
        ),
    ]
