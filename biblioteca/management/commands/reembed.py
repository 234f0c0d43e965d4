"""`manage.py reembed`: new vectors for chunks from another model, and sentences for chunks that have none."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from biblioteca.embeddings import EmbeddingError
from biblioteca.ingest import IngestError, chunks_reembed


class Command(BaseCommand):
    help = (
        "Embed again the chunks whose vectors came from another model than the configured one, and backfill "
        "sentence vectors for chunks stored without them."
    )

    def add_arguments(self, parser):
        parser.add_argument("--app", default=None, help="Only this app's documents (default: every app).")
        parser.add_argument("--all", action="store_true", help="Every document, not only the stale ones.")

    def handle(self, *args, **opts):
        def report(document) -> None:
            if opts["verbosity"] > 1:
                self.stdout.write(f"re-embedded {document.source_path}")

        try:
            count = chunks_reembed(app=opts["app"], everything=opts["all"], on_document=report)
        except (EmbeddingError, IngestError) as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"{count} document(s) re-embedded.")
