"""Token authentication answers as DRF's does: the user and the token, or 401 with DRF's messages."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from rest_framework.authtoken.models import Token
from rest_framework.exceptions import AuthenticationFailed

from config.doors import TokenAuthentication

pytestmark = pytest.mark.django_db


def test_a_token_authenticates_its_user(django_assert_num_queries):
    user = get_user_model().objects.create_user("ana")
    token = Token.objects.create(user=user)
    with django_assert_num_queries(1):
        authenticated, credential = TokenAuthentication().authenticate_credentials(token.key)
    assert authenticated == user and credential == token and credential.user is authenticated


@pytest.mark.parametrize(
    ("key", "message"),
    [("0" * 40, "Invalid token."), ("abc\x00", "Invalid token."), ("ümlaut", "Invalid token.")],
)
def test_a_key_no_token_has_is_refused(key, message):
    Token.objects.create(user=get_user_model().objects.create_user("ana"))
    with pytest.raises(AuthenticationFailed) as refused:
        TokenAuthentication().authenticate_credentials(key)
    assert str(refused.value.detail) == message


def test_an_inactive_users_token_is_refused():
    token = Token.objects.create(user=get_user_model().objects.create_user("ana", is_active=False))
    with pytest.raises(AuthenticationFailed) as refused:
        TokenAuthentication().authenticate_credentials(token.key)
    assert str(refused.value.detail) == "User inactive or deleted."


def test_the_api_answers_401_to_an_unknown_token(client):
    response = client.post(
        "/api/v1/ask",
        {"question": "hi"},
        content_type="application/json",
        HTTP_AUTHORIZATION="Token " + "1" * 40,
    )
    assert response.status_code == 401
    assert response.json()["detail"] == "Invalid token."
