"""`manage.py ensure_superuser`: a first admin account for `make run`, its password printed once."""

from __future__ import annotations

import os
import secrets

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Create a superuser if none exists, printing its generated password once."

    def add_arguments(self, parser):
        parser.add_argument("--username", default=os.environ.get("ADMIN_USERNAME", "admin"))

    def handle(self, *args, **opts):
        User = get_user_model()
        if User.objects.filter(is_superuser=True).exists():
            return
        password = os.environ.get("ADMIN_PASSWORD") or secrets.token_urlsafe(12)
        User.objects.create_superuser(username=opts["username"], email="", password=password)
        self.stdout.write(
            self.style.SUCCESS(
                f"Created superuser '{opts['username']}' with password: {password}  (shown once; change it in the admin)"
            )
        )
