"""What the apps' system checks share: a setting under the least value the product can work with, outside the
range it can take, or none of the values it knows, is refused by name at startup, instead of failing every ingest
or question later (or silently doing nothing)."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from urllib.parse import urlsplit

from django.conf import settings
from django.core.checks import Error


def settings_under_floor(floors: Mapping[str, float], *, check_id: str, why: str = "") -> list[Error]:
    """An Error for each setting in `floors` (name -> least value) set lower; `why` ends its hint."""
    return [
        Error(
            f"{name} is {getattr(settings, name)}.",
            hint=f"Use {floor:g} or more{': ' + why if why else ''}.",
            id=check_id,
        )
        for name, floor in floors.items()
        if getattr(settings, name) < floor
    ]


def settings_outside(
    names: Collection[str], low: float, high: float, *, check_id: str, hint: str
) -> list[Error]:
    """An Error for each setting in `names` outside [`low`, `high`]; `hint` says what to use."""
    return [
        Error(f"{name} is {getattr(settings, name)}.", hint=hint, id=check_id)
        for name in names
        if not low <= getattr(settings, name) <= high
    ]


def setting_not_among(name: str, choices: Collection[str], *, check_id: str) -> list[Error]:
    """An Error when setting `name` is none of `choices`."""
    value = getattr(settings, name)
    if value in choices:
        return []
    return [Error(f"{name} is {value!r}.", hint=f"Use one of {', '.join(choices)}.", id=check_id)]


def settings_not_http_urls(names: Collection[str], *, check_id: str) -> list[Error]:
    """An Error for each setting in `names` set (non-empty) to anything but an absolute http(s) URL. Hosts without
    a dot (`http://embeddings:8000/v1`, a container's name) are fine."""
    problems = []
    for name in names:
        value = getattr(settings, name)
        parts = urlsplit(value)
        if value and (parts.scheme not in ("http", "https") or not parts.hostname):
            problems.append(
                Error(
                    f"{name} is {value!r}.",
                    hint="Use an absolute http:// or https:// URL, or leave it empty.",
                    id=check_id,
                )
            )
    return problems
