"""A generation per app that every write to documents, chunks and sentences moves, by statement-level triggers.

Each trigger finds the apps its statement touched in the statement's transition tables (a chunk carries its app; a
sentence's is its chunk's, which still exists: Django deletes children first) and upserts their rows in app order, so
two writers lock them in the same order. TRUNCATE moves every app. The new value commits with the write, so a
reader never sees new rows under an old generation; it comes from a sequence, so a value a rolled-back write
took (and its own transaction may have seen) is never given again.
"""

from django.db import migrations, models

TABLES = {
    "biblioteca_document": "SELECT app FROM {rows}",
    "biblioteca_chunk": "SELECT app FROM {rows}",
    "biblioteca_sentence": "SELECT c.app FROM {rows} r JOIN biblioteca_chunk c ON c.id = r.chunk_id",
}


def function_sql(table: str, apps_of: str) -> str:
    return f"""
CREATE FUNCTION {table}_changed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    apps text[];
BEGIN
    IF TG_OP = 'TRUNCATE' THEN
        UPDATE biblioteca_librarygeneration SET generation = nextval('biblioteca_library_generation_seq');
        RETURN NULL;
    ELSIF TG_OP = 'INSERT' THEN
        SELECT array_agg(DISTINCT app ORDER BY app) INTO apps FROM ({apps_of.format(rows="new_rows")}) a;
    ELSIF TG_OP = 'DELETE' THEN
        SELECT array_agg(DISTINCT app ORDER BY app) INTO apps FROM ({apps_of.format(rows="old_rows")}) a;
    ELSE
        SELECT array_agg(DISTINCT app ORDER BY app) INTO apps FROM (
            {apps_of.format(rows="old_rows")} UNION ALL {apps_of.format(rows="new_rows")}
        ) a;
    END IF;
    IF apps IS NOT NULL THEN
        INSERT INTO biblioteca_librarygeneration AS g (app, generation)
        SELECT app, nextval('biblioteca_library_generation_seq') FROM unnest(apps) WITH ORDINALITY AS u(app, n)
        ORDER BY n
        ON CONFLICT (app) DO UPDATE SET generation = excluded.generation;
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER {table}_inserted AFTER INSERT ON {table}
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION {table}_changed();
CREATE TRIGGER {table}_updated AFTER UPDATE ON {table}
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION {table}_changed();
CREATE TRIGGER {table}_deleted AFTER DELETE ON {table}
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION {table}_changed();
CREATE TRIGGER {table}_truncated AFTER TRUNCATE ON {table}
    FOR EACH STATEMENT EXECUTE FUNCTION {table}_changed();
"""


def drop_sql(table: str) -> str:
    return (
        "".join(
            f"DROP TRIGGER IF EXISTS {table}_{event} ON {table};"
            for event in ("inserted", "updated", "deleted", "truncated")
        )
        + f"DROP FUNCTION IF EXISTS {table}_changed();"
    )


class Migration(migrations.Migration):
    dependencies = [
        ("biblioteca", "0004_chunk_scope"),
    ]

    operations = [
        migrations.CreateModel(
            name="LibraryGeneration",
            fields=[
                ("app", models.CharField(max_length=100, primary_key=True, serialize=False)),
                ("generation", models.BigIntegerField(default=0)),
            ],
        ),
        migrations.RunSQL(
            "CREATE SEQUENCE biblioteca_library_generation_seq",
            reverse_sql="DROP SEQUENCE biblioteca_library_generation_seq",
        ),
        *(
            migrations.RunSQL(function_sql(table, apps_of), reverse_sql=drop_sql(table))
            for table, apps_of in TABLES.items()
        ),
    ]
