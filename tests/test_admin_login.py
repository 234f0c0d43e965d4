"""The admin login is rate-limited (django-axes): after AXES_FAILURE_LIMIT wrong passwords for a user name from
one IP, even the right password is refused until the cool-off; other IPs and users are not locked."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

pytestmark = pytest.mark.django_db

LOGIN = "/admin/login/?next=/admin/"


def attempt(client: Client, password: str, *, ip: str = "10.9.9.9", username: str = "admin"):
    return client.post(LOGIN, {"username": username, "password": password}, REMOTE_ADDR=ip)


def test_the_admin_login_locks_after_the_failure_limit(settings):
    settings.AXES_FAILURE_LIMIT = 3
    User.objects.create_superuser("admin", password="the-right-password")
    client = Client()
    for _ in range(2):
        assert attempt(client, "wrong").status_code == 200  # the form again, with its error
    assert attempt(client, "wrong").status_code == 429
    locked = attempt(client, "the-right-password")
    assert locked.status_code == 429 and "_auth_user_id" not in client.session
    assert attempt(Client(), "the-right-password", ip="10.1.1.1").status_code == 302


def test_a_success_resets_the_count(settings):
    settings.AXES_FAILURE_LIMIT = 3
    User.objects.create_superuser("admin", password="the-right-password")
    for _ in range(2):
        attempt(Client(), "wrong")
    assert attempt(Client(), "the-right-password").status_code == 302
    for _ in range(2):
        assert attempt(Client(), "wrong").status_code == 200
    assert attempt(Client(), "the-right-password").status_code == 302
