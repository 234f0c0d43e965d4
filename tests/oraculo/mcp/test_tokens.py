"""MCP bearer tokens: created for active staff only (shown once, stored as a digest), listed and revoked, with
`manage.py mcp_token` and in the admin."""

from __future__ import annotations

import hashlib
import io

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django_mcpz.bearer_tokens.models import Token

from biblioteca.errors import ApplicationError, ConflictError, NotFoundError
from oraculo.mcp.tokens import token_create, token_revoke

pytestmark = pytest.mark.django_db


def command(*args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("mcp_token", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_create_prints_the_value_once_and_stores_only_its_digest():
    User.objects.create_user("alice", is_staff=True)
    out, err = command("create", "--user", "alice", "--name", "Claude Code", "--expires-in-days", "30")
    value = out.strip()
    token = Token.objects.get()
    assert value.startswith("mcp_") and len(value) > 40
    assert token.digest == hashlib.sha256(value.encode()).hexdigest() and value not in token.digest
    assert (token.name, token.user.username, token.expires_at is not None) == ("Claude Code", "alice", True)
    assert f"Token #{token.pk} for alice" in err and value not in err
    listed, _ = command("list")
    assert f"#{token.pk}\talice\tClaude Code\tactive\tlast used never" in listed
    assert value not in listed


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: User.objects.create_user("bob"), "'bob' is not an active staff user"),
        (
            lambda: User.objects.create_user("bob", is_staff=True, is_active=False),
            "'bob' is not an active staff",
        ),
        (lambda: None, "No user 'bob'."),
    ],
)
def test_create_refuses_who_is_not_active_staff(make, message):
    make()
    with pytest.raises(CommandError, match=message):
        command("create", "--user", "bob")
    assert not Token.objects.exists()


def test_revoke_is_one_way_and_unknown_ids_are_named():
    user = User.objects.create_user("alice", is_staff=True)
    token, _ = token_create(user=user, name="laptop")
    out, _ = command("revoke", str(token.pk))
    assert out.strip() == f"Revoked MCP token #{token.pk}."
    token.refresh_from_db()
    assert token.is_revoked
    with pytest.raises(CommandError, match="was already revoked"):
        command("revoke", str(token.pk))
    with pytest.raises(CommandError, match="No MCP token #999."):
        command("revoke", "999")
    assert "\trevoked\t" in command("list", "--user", "alice")[0]


def test_the_services_raise_application_errors():
    user = User.objects.create_user("alice", is_staff=True)
    with pytest.raises(ApplicationError, match="needs a name"):
        token_create(user=user, name="  ")
    for days in (0, 3651, 99_999_999):
        with pytest.raises(ApplicationError, match="between 1 and 3,650 days"):
            token_create(user=user, name="x", expires_in_days=days)
    with pytest.raises(ApplicationError, match=r"at most 200 characters \(this one has 300\)"):
        token_create(user=user, name="n" * 300)
    with pytest.raises(CommandError, match="between 1 and 3,650 days"):
        command("create", "--user", "alice", "--expires-in-days", "99999999")
    assert not Token.objects.exists()
    token, _ = token_create(user=user, name="x")
    token_revoke(token_id=token.pk)
    with pytest.raises(ConflictError):
        token_revoke(token_id=token.pk)
    with pytest.raises(NotFoundError):
        token_revoke(token_id=token.pk + 1)


def test_the_admin_offers_only_active_staff_and_shows_the_new_value_once(admin_client):
    staff = User.objects.create_user("alice", is_staff=True)
    User.objects.create_user("visitor")
    User.objects.create_user("gone", is_staff=True, is_active=False)
    page = admin_client.get("/admin/django_mcpz_bearer_tokens/token/add/")
    choices = [u.username for u in page.context["adminform"].form.fields["user"].queryset]
    assert sorted(choices) == ["admin", "alice"]
    refused = admin_client.post(
        "/admin/django_mcpz_bearer_tokens/token/add/", {"name": "x", "user": 2 + staff.pk}
    )
    assert refused.status_code == 200 and not Token.objects.exists()
    created = admin_client.post(
        "/admin/django_mcpz_bearer_tokens/token/add/", {"name": "laptop", "user": staff.pk}, follow=True
    )
    [message] = [str(m) for m in created.context["messages"] if str(m).startswith("Token created.")]
    value = message.rsplit(" ", 1)[1]
    assert message.startswith("Token created. Its value, shown only this once, is: mcp_")
    assert value not in admin_client.get("/admin/django_mcpz_bearer_tokens/token/").content.decode()
    assert Token.objects.get().digest == hashlib.sha256(value.encode()).hexdigest()


def test_the_question_log_admin_filters_by_channel(admin_client):
    from oraculo.models import Channel, OraculoQuery

    OraculoQuery.objects.create(question="from a person", channel=Channel.WIDGET)
    OraculoQuery.objects.create(question="from an agent", channel=Channel.MCP)
    page = admin_client.get("/admin/oraculo/oraculoquery/", {"channel__exact": "mcp"})
    assert page.status_code == 200
    assert [q.question for q in page.context["cl"].result_list] == ["from an agent"]
