"""Error reports never show credentials: Django already hides settings named like API_KEY or PASSWORD, but a
URL such as postgres://user:secret@host or redis://:secret@host carries its password under an innocent name."""

from __future__ import annotations

import re
from urllib.parse import urlsplit, urlunsplit

from django.views.debug import SafeExceptionReporterFilter

URL_PASSWORD = re.compile(r"(?P<scheme>[a-z][a-z0-9+.-]*://)(?P<userinfo>[^/@\s'\"]*)@", re.IGNORECASE)


def url_credentials_hidden(text: str) -> str:
    """`scheme://user:pass@host` -> `scheme://********@host`."""
    return URL_PASSWORD.sub(
        lambda m: f"{m['scheme']}{SafeExceptionReporterFilter.cleansed_substitute}@", str(text)
    )


def url_for_messages(url: object) -> str:
    """A base URL fit for an error message or a log: no `user:password@`, no query string (where some proxies
    take the key)."""
    parts = urlsplit(str(url))
    netloc = parts.hostname or ""
    if parts.port:
        netloc = f"{netloc}:{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


class CredentialHidingFilter(SafeExceptionReporterFilter):
    hidden_settings = re.compile(
        r"API|AUTH|TOKEN|KEY|SECRET|PASS|SIGNATURE|HTTP_COOKIE|DSN", flags=re.IGNORECASE
    )

    def cleanse_setting(self, key, value):
        value = super().cleanse_setting(key, value)
        return url_credentials_hidden(value) if type(value) is str else value

    def get_traceback_frame_variables(self, request, tb_frame):
        """Local strings, dicts and lists get the settings' treatment too (a connection's `password` key, a URL)."""
        return [
            (name, self.cleanse_setting(name, value) if type(value) in (str, dict, list, tuple) else value)
            for name, value in super().get_traceback_frame_variables(request, tb_frame)
        ]
