"""`manage.py demo_widget_key --origin URL`: create or extend the demo page's widget key (`make run` calls it)."""

from __future__ import annotations

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from oraculo.actions import InvalidOrigin, demo_widget_key_ensure


class Command(BaseCommand):
    help = "Create the demo page's widget key for DEMO_APP, or add origins to it."

    def add_arguments(self, parser):
        parser.add_argument(
            "--origin",
            action="append",
            default=[],
            required=True,
            help="An origin the demo page is served from, e.g. http://127.0.0.1:8000 (repeatable).",
        )

    def handle(self, *args, **opts):
        try:
            key, created = demo_widget_key_ensure(origins=opts["origin"])
        except InvalidOrigin as exc:
            raise CommandError(f"--origin: {exc}") from exc
        self.stdout.write(
            f"{'created' if created else 'kept'} the demo widget key for app {settings.DEMO_APP}, "
            f"allowing {', '.join(key.allowed_origins)}"
        )
