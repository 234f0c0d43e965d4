"""Each chunk that opens a section stores its heading's vector, so trimming can tell a section titled with the
question.

Existing chunks keep a null one: a migration does not embed. Their document's next ingest embeds its headings
alone and stores them, leaving its chunks, sentences and their vectors as they are; until then trimming reads
no heading vector for them and does what it did before.
"""

import pgvector.django.halfvec
from django.conf import settings
from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("biblioteca", "0010_sentence_terms"),
    ]

    operations = [
        migrations.AddField(
            model_name="chunk",
            name="heading_embedding",
            field=pgvector.django.halfvec.HalfVectorField(
                blank=True,
                dimensions=settings.EMBEDDING_DIMENSIONS,
                help_text="The vector of the heading this chunk opens its section under, embedded bare as "
                "sentences are; null for a chunk that continues its section or has no heading. Chunks stored "
                "before it get theirs at their document's next ingest.",
                null=True,
            ),
        ),
    ]
