"""The token lookup of every API request: the same token and user the ORM reads, in one statement."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from rest_framework.authtoken.models import Token

from config.selectors import token_with_user

pytestmark = pytest.mark.django_db


def test_the_token_comes_with_its_user_as_the_orm_reads_them(django_assert_num_queries):
    user = get_user_model().objects.create_user(
        "ana", email="ana@example.com", password="pw", first_name="Ana"
    )
    token = Token.objects.create(user=user)
    with django_assert_num_queries(1):
        found = token_with_user(key=token.key)
        assert found.user.email == "ana@example.com"
    expected = Token.objects.select_related("user").get(key=token.key)
    assert (found.pk, found.user_id, found.created) == (expected.pk, expected.user_id, expected.created)
    for field in get_user_model()._meta.concrete_fields:
        assert getattr(found.user, field.attname) == getattr(expected.user, field.attname), field.name
    assert found._state.adding is False and found.user._state.adding is False


def test_an_unknown_key_is_none():
    user = get_user_model().objects.create_user("bo")
    Token.objects.create(user=user)
    assert token_with_user(key="0" * 40) is None
