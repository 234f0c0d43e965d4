"""`manage.py mcp_stdio --user NAME`: the MCP tools over stdin/stdout for a local agent, as that staff user."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from biblioteca.errors import NotAllowedError
from oraculo.mcp.stdio import stdio_serve, stdio_user


class Command(BaseCommand):
    help = (
        "Serve the MCP tools (bib_ask, bib_apps, bib_eval_*) over stdio for a local agent, as a staff user."
    )
    requires_system_checks: list = []

    def add_arguments(self, parser):
        parser.add_argument("--user", required=True, help="The staff user the agent acts as.")

    def handle(self, *args, **opts):
        try:
            stdio_user(username=opts["user"])
        except NotAllowedError as exc:
            raise CommandError(exc.message) from exc
        stdio_serve(username=opts["user"])
