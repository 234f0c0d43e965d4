"""`manage.py ensure_superuser` (the project's own command): a first admin once, its password printed once."""

from __future__ import annotations

import io

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

pytestmark = pytest.mark.django_db


def test_a_first_superuser_is_made_once():
    out = io.StringIO()
    call_command("ensure_superuser", "--username", "boss", stdout=out)
    user = get_user_model().objects.get(username="boss")
    assert user.is_superuser
    printed = out.getvalue()
    assert any(len(word) >= 12 and user.check_password(word.strip(".:,")) for word in printed.split()), (
        printed
    )
    again = io.StringIO()
    call_command("ensure_superuser", "--username", "other", stdout=again)
    assert not get_user_model().objects.filter(username="other").exists()
