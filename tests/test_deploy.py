"""Production settings: DEBUG is off unless asked for, `check --deploy` is clean with the README's production
environment, the throttling check warns about what it needs, and error pages never show credentials."""

from __future__ import annotations

import os
import re
import secrets
import subprocess
import sys
from pathlib import Path

from django.test import RequestFactory
from django.views.debug import ExceptionReporter

from oraculo.checks import throttling_is_shared_and_sees_clients

ROOT = Path(__file__).resolve().parent.parent


def production_env() -> dict[str, str]:
    """The variables of the README's production block, with a real random SECRET_KEY."""
    block = re.search(
        r"```sh\n\s*# The production environment\n(.*?)```", (ROOT / "README.md").read_text(), re.S
    )
    assert block, "README.md has no production environment block"
    lines = [line.strip() for line in block[1].splitlines()]
    env = dict(line.split("=", 1) for line in lines if line and not line.startswith("#"))
    env["SECRET_KEY"] = secrets.token_urlsafe(50)
    assert env.pop("DATABASE_URL")  # its host does not exist here: the embedded PostgreSQL stands in for it
    return env


def manage(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    clean = {
        k: v for k, v in os.environ.items() if k not in {"DEBUG", "SECRET_KEY", "DJANGO_SETTINGS_MODULE"}
    }
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=clean | env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_debug_is_off_unless_asked_for_and_then_a_secret_key_is_required():
    shell = "from django.conf import settings; print(settings.DEBUG)"
    assert (
        manage("shell", "--no-imports", "-c", shell, env={"SECRET_KEY": "x" * 50}).stdout.strip() == "False"
    )
    refused = manage("shell", "--no-imports", "-c", shell, env={})
    assert refused.returncode != 0 and "Set the SECRET_KEY environment variable" in refused.stderr
    assert manage("shell", "--no-imports", "-c", shell, env={"DEBUG": "true"}).stdout.strip() == "True"


def test_check_deploy_is_clean_with_the_documented_production_environment():
    env = production_env()
    result = manage("check", "--deploy", "--fail-level", "WARNING", env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout
    shell = (
        "from django.conf import settings as s; "
        "print(s.SECURE_SSL_REDIRECT, s.SECURE_HSTS_SECONDS, s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE)"
    )
    printed = manage("shell", "--no-imports", "-c", shell, env=env).stdout.split()
    assert printed == ["True", env["SECURE_HSTS_SECONDS"], "True", "True"]


def test_check_deploy_names_what_a_bare_production_environment_lacks():
    result = manage("check", "--deploy", env={"SECRET_KEY": secrets.token_urlsafe(50)})
    for check in ("security.W004", "oraculo.W001", "oraculo.W002"):
        assert check in result.stderr + result.stdout
    assert "security.W008" not in result.stderr + result.stdout


def test_the_throttling_check_warns_about_proxies_and_a_per_process_cache(settings):
    settings.DEBUG = False
    settings.NUM_PROXIES_SET = False
    assert [w.id for w in throttling_is_shared_and_sees_clients()] == ["oraculo.W001", "oraculo.W002"]
    settings.NUM_PROXIES_SET = True
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": "redis://127.0.0.1:1/0",
        }
    }
    assert throttling_is_shared_and_sees_clients() == []
    settings.DEBUG = True
    settings.NUM_PROXIES_SET = False
    assert throttling_is_shared_and_sees_clients() == []


def test_error_pages_never_show_credentials(settings):
    """The secrets are made at run time (the page also shows this test's source lines) and kept in a local whose
    name is hidden, as Django hides any variable named like a secret."""
    test_secrets = [secrets.token_hex(8) for _ in range(4)]
    settings.DEBUG = True
    settings.LLM_BASE_URL = f"https://user:{test_secrets[0]}@llm.example.com/v1"
    settings.SOME_CACHE_LOCATION = f"redis://:{test_secrets[1]}@redis.example.com:6379/0"
    request = RequestFactory().get("/boom")
    database_url = f"postgres://oraculo:{test_secrets[2]}@db.example.com:5432/oraculo"  # noqa: F841 (a local)
    conn_params = {"host": "db.example.com", "password": test_secrets[3]}  # noqa: F841
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        html = ExceptionReporter(request, *sys.exc_info()).get_traceback_html()
        text = ExceptionReporter(request, *sys.exc_info()).get_traceback_text()
    assert "db.example.com" in html
    for page in (html, text):
        assert "boom" in page and "llm.example.com" in page
        for secret in test_secrets:
            assert secret not in page
