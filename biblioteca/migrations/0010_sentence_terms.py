"""Each sentence's stems and identifier keys stored with it, so trimming a passage met for the first time reads
them.

Existing sentences of documents processed under text version 2 get them from their stored text (and their
document's language), and the document is marked as processed with terms version 1: nothing is embedded or
chunked again. Documents processed under another version keep null ones until their next ingest processes them
again.
"""

import re

from django.db import migrations, models

from biblioteca.text.identifiers import identifier_keys
from biblioteca.text.lexical import unit_terms

_BEFORE_TERMS = re.compile(r"text 2, (chunks \d+/\d+)")


def fill_terms(apps, schema_editor):
    Document = apps.get_model("biblioteca", "Document")
    Sentence = apps.get_model("biblioteca", "Sentence")
    connection = schema_editor.connection
    documents = Document.objects.using(connection.alias).filter(processed_with__regex=_BEFORE_TERMS.pattern)
    for document in documents.order_by("pk").iterator():
        match = _BEFORE_TERMS.fullmatch(document.processed_with)
        if match is None:
            continue
        rows = (
            Sentence.objects.using(connection.alias)
            .filter(chunk__document=document)
            .values_list("id", "text")
        )
        ids, terms, keys = [], [], []
        for sentence_id, text in rows:
            ids.append(sentence_id)
            terms.append(" ".join(sorted(unit_terms(text, document.language))))
            keys.append(" ".join(sorted(identifier_keys(text))))
        with connection.cursor() as cursor:
            cursor.execute(
                f"UPDATE {Sentence._meta.db_table} AS s SET terms = t.terms, identifier_keys = t.keys "
                "FROM unnest(%s::bigint[], %s::text[], %s::text[]) AS t(id, terms, keys) WHERE s.id = t.id",
                [ids, terms, keys],
            )
        document.processed_with = f"text 2, terms 1, {match.group(1)}"
        document.save(update_fields=["processed_with"])


def forget_terms(apps, schema_editor):
    """Going back, the stems go with their column: documents no longer claim them."""
    Document = apps.get_model("biblioteca", "Document")
    documents = Document.objects.using(schema_editor.connection.alias)
    for document in documents.filter(processed_with__startswith="text 2, terms 1, "):
        document.processed_with = document.processed_with.replace("terms 1, ", "", 1)
        document.save(update_fields=["processed_with"])


class Migration(migrations.Migration):
    dependencies = [
        ("biblioteca", "0009_document_processed_with"),
    ]

    operations = [
        migrations.AddField(
            model_name="sentence",
            name="terms",
            field=models.TextField(
                blank=True,
                help_text="The sentence's stems in its document's language, space-separated (`lexical.pack_terms`); null when stored without them. Used only while the document's processed_with is current.",
                null=True,
            ),
        ),
        migrations.AddField(
            model_name="sentence",
            name="identifier_keys",
            field=models.TextField(
                blank=True,
                help_text="The keys of the identifiers the sentence holds (`identifiers.identifier_keys`), space-separated; null when stored without them. Used only while the document's processed_with is current.",
                null=True,
            ),
        ),
        migrations.AlterField(
            model_name="document",
            name="processed_with",
            field=models.CharField(
                blank=True,
                help_text="The text pipeline's versions and chunk settings that made its chunks and its sentences' stems and keys; blank when not known. A document made under others is processed again at its next ingest.",
                max_length=64,
            ),
        ),
        migrations.RunPython(fill_terms, forget_terms),
    ]
