"""MCP bearer tokens, per user: created for active staff only (the value shown once, only its SHA-256 digest
stored), listed, and revoked. The admin and `manage.py mcp_token` both call these."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.utils import timezone
from django_mcpz.bearer_tokens.models import Token

from biblioteca.errors import ApplicationError, ConflictError, NotFoundError

MAX_EXPIRES_IN_DAYS = 3650  # ten years; for longer, a token that never expires


def token_create(
    *, user: AbstractBaseUser, name: str, expires_in_days: int | None = None
) -> tuple[Token, str]:
    """A new token for `user` and its value, which cannot be read again: pass it on at once."""
    name = name.strip()
    if not name:
        raise ApplicationError(
            "A token needs a name, e.g. the agent that uses it.", extra={"name": "required"}
        )
    if not (user.is_active and user.is_staff):
        raise ApplicationError(
            f"{user.get_username()!r} is not an active staff user; MCP tools are for staff.",
            extra={"user": "not active staff"},
        )
    limit = Token._meta.get_field("name").max_length
    if len(name) > limit:
        raise ApplicationError(
            f"A token's name is at most {limit} characters (this one has {len(name)}).",
            extra={"name": "too long"},
        )
    if expires_in_days is not None and not 1 <= expires_in_days <= MAX_EXPIRES_IN_DAYS:
        raise ApplicationError(
            f"A token expires between 1 and {MAX_EXPIRES_IN_DAYS:,} days after it is made (or never).",
            extra={"expires_in_days": f"1 to {MAX_EXPIRES_IN_DAYS}"},
        )
    expires_at = timezone.now() + timedelta(days=expires_in_days) if expires_in_days else None
    return Token.create(name=name, user=user, expires_at=expires_at)


def token_revoke(*, token_id: int) -> Token:
    """Refuse the token from now on; revoking is one-way, and a revoked token stays listed as evidence."""
    token = Token.objects.filter(pk=token_id).first()
    if token is None:
        raise NotFoundError(f"No MCP token #{token_id}.", extra={"id": "no such token"})
    if token.is_revoked:
        raise ConflictError(
            f"MCP token #{token_id} was already revoked on {token.revoked_at:%Y-%m-%d %H:%M} UTC."
        )
    token.revoke()
    return token


def user_by_name(*, username: str) -> AbstractBaseUser:
    model = get_user_model()
    user = model.objects.filter(**{model.USERNAME_FIELD: username}).first()
    if user is None:
        raise NotFoundError(f"No user {username!r}.", extra={"user": "no such user"})
    return user


def tokens_list(*, username: str | None = None) -> Sequence[Token]:
    tokens = Token.objects.select_related("user").order_by("-created_at")
    if username:
        tokens = tokens.filter(**{f"user__{get_user_model().USERNAME_FIELD}": username})
    return list(tokens)
