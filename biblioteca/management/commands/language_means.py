"""Write the reference questions' mean vectors for the configured model, so no process embeds them at run time."""

from __future__ import annotations

from django.core.management.base import BaseCommand

from biblioteca.embeddings import get_embedder
from biblioteca.language_shift import write_shipped_means


class Command(BaseCommand):
    help = (
        "Embed the reference questions (biblioteca/data/questions_<lang>.txt) with the configured model and write "
        "their mean vectors to biblioteca/data/language_means.npz. Run it after changing those questions, or to "
        "ship the means for another model."
    )

    def handle(self, *args, **options):
        path = write_shipped_means()
        self.stdout.write(f"wrote {path} for {get_embedder().query_identity()}")
