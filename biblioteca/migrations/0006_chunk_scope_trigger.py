"""A document's chunks follow its app and source type through every write, by a trigger.

The scope columns (0004) were kept in step by the ingest service and the admin only, so a write through any
other path (a queryset update, a shell, SQL) left chunks searched under the old scope. The trigger holds the
invariant for all of them, and only touches chunks when the scope really changed.
"""

from django.db import migrations

FUNCTION = """
CREATE FUNCTION biblioteca_document_scope_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE biblioteca_chunk SET app = NEW.app, source_type = NEW.source_type
    WHERE document_id = NEW.id AND (app, source_type) IS DISTINCT FROM (NEW.app, NEW.source_type);
    RETURN NULL;
END
$$;
CREATE TRIGGER biblioteca_document_scope AFTER UPDATE OF app, source_type ON biblioteca_document
    FOR EACH ROW WHEN ((OLD.app, OLD.source_type) IS DISTINCT FROM (NEW.app, NEW.source_type))
    EXECUTE FUNCTION biblioteca_document_scope_changed();
"""

DROP = """
DROP TRIGGER IF EXISTS biblioteca_document_scope ON biblioteca_document;
DROP FUNCTION IF EXISTS biblioteca_document_scope_changed();
"""


class Migration(migrations.Migration):
    dependencies = [
        ("biblioteca", "0005_library_generation"),
    ]

    operations = [migrations.RunSQL(FUNCTION, reverse_sql=DROP)]
