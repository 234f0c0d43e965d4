from django.db import migrations, models


def api_when_no_widget_key(apps, schema_editor):
    """Questions logged before the channel was recorded: a widget key's came from the widget, the rest from the
    REST API (staff sessions and API tokens)."""
    OraculoQuery = apps.get_model("oraculo", "OraculoQuery")
    OraculoQuery.objects.filter(widget_key__isnull=True).update(channel="api")


class Migration(migrations.Migration):
    dependencies = [
        ("oraculo", "0006_query_threads"),
    ]

    operations = [
        migrations.AddField(
            model_name="oraculoquery",
            name="channel",
            field=models.CharField(
                choices=[("widget", "Widget"), ("api", "API"), ("mcp", "MCP (agents)")],
                db_index=True,
                default="widget",
                max_length=10,
            ),
        ),
        migrations.RunPython(api_when_no_widget_key, migrations.RunPython.noop),
    ]
