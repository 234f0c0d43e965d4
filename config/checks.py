"""What the apps' system checks share: a setting under the least value the product can work with, or none of the
values it knows, is refused by name at startup, instead of failing every ingest or question later (or silently
doing nothing)."""

from __future__ import annotations

from collections.abc import Collection, Mapping

from django.conf import settings
from django.core.checks import Error


def settings_under_floor(floors: Mapping[str, float], *, check_id: str) -> list[Error]:
    """An Error for each setting in `floors` (name -> least value) set lower."""
    return [
        Error(
            f"{name} is {getattr(settings, name)}.",
            hint=f"Use {floor:g} or more.",
            id=check_id,
        )
        for name, floor in floors.items()
        if getattr(settings, name) < floor
    ]


def setting_not_among(name: str, choices: Collection[str], *, check_id: str) -> list[Error]:
    """An Error when setting `name` is none of `choices`."""
    value = getattr(settings, name)
    if value in choices:
        return []
    return [Error(f"{name} is {value!r}.", hint=f"Use one of {', '.join(choices)}.", id=check_id)]
