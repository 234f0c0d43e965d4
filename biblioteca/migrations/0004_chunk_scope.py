"""Each chunk carries its document's app and source type, so searches filter and count chunks without a join.

Existing chunks take them from their documents in one UPDATE: nothing is embedded again.
"""

from django.db import migrations, models

FILL_SQL = (
    "UPDATE biblioteca_chunk AS c SET app = d.app, source_type = d.source_type "
    "FROM biblioteca_document AS d WHERE d.id = c.document_id"
)


class Migration(migrations.Migration):
    dependencies = [
        ("biblioteca", "0003_sentence_halfvec"),
    ]

    operations = [
        migrations.AddField(
            model_name="chunk",
            name="app",
            field=models.CharField(default="", editable=False, max_length=100),
            preserve_default=False,
        ),
        migrations.AddField(
            model_name="chunk",
            name="source_type",
            field=models.CharField(default="", editable=False, max_length=50),
            preserve_default=False,
        ),
        migrations.RunSQL(FILL_SQL, migrations.RunSQL.noop, elidable=True),
        migrations.AddIndex(
            model_name="chunk",
            index=models.Index(fields=["app", "source_type"], name="chunk_app_type_idx"),
        ),
    ]
