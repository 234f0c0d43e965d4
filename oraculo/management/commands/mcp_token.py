"""`manage.py mcp_token create|list|revoke`: bearer tokens for agents that use /mcp (the admin does the same)."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from biblioteca.errors import ApplicationError
from oraculo.mcp.tokens import token_create, token_revoke, tokens_list, user_by_name


class Command(BaseCommand):
    help = "Create (shown once), list or revoke the MCP bearer tokens of staff users."

    def add_arguments(self, parser):
        commands = parser.add_subparsers(dest="action", required=True)
        create = commands.add_parser("create", help="Create a token and print its value, once.")
        create.add_argument("--user", required=True, help="The staff user the token acts as.")
        create.add_argument(
            "--name", default="MCP client", help="What uses it, e.g. 'Claude Code on my laptop'."
        )
        create.add_argument(
            "--expires-in-days", type=int, help="Refused after this many days (default: never)."
        )
        listing = commands.add_parser("list", help="The tokens (never their values), newest first.")
        listing.add_argument("--user", help="Only this user's tokens.")
        revoke = commands.add_parser("revoke", help="Refuse these tokens from now on.")
        revoke.add_argument("ids", nargs="+", type=int, metavar="ID")

    def handle(self, *args, **opts):
        try:
            getattr(self, f"_{opts['action']}")(opts)
        except ApplicationError as exc:
            raise CommandError(exc.message) from exc

    def _create(self, opts):
        token, value = token_create(
            user=user_by_name(username=opts["user"]),
            name=opts["name"],
            expires_in_days=opts["expires_in_days"],
        )
        self.stderr.write(f"Token #{token.pk} for {opts['user']}; its value is shown only this once:")
        self.stdout.write(value)

    def _list(self, opts):
        for token in tokens_list(username=opts["user"]):
            state = "revoked" if token.is_revoked else "expired" if token.is_expired else "active"
            used = f"{token.last_used_at:%Y-%m-%d %H:%M}" if token.last_used_at else "never"
            self.stdout.write(
                f"#{token.pk}\t{token.user.get_username()}\t{token.name}\t{state}\tlast used {used}"
            )

    def _revoke(self, opts):
        for token_id in opts["ids"]:
            token_revoke(token_id=token_id)
            self.stdout.write(f"Revoked MCP token #{token_id}.")
