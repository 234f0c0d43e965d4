"""Sentence vectors in half precision: half the bytes, cosines within about 1e-3, nothing embedded again.

PostgreSQL converts the stored vectors in place (`ALTER COLUMN ... TYPE halfvec USING embedding::halfvec`).
"""

import pgvector.django.halfvec
from django.conf import settings
from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("biblioteca", "0002_lexical_search"),
    ]

    operations = [
        migrations.AlterField(
            model_name="sentence",
            name="embedding",
            field=pgvector.django.halfvec.HalfVectorField(dimensions=settings.EMBEDDING_DIMENSIONS),
        ),
    ]
