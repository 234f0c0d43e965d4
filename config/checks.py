"""What the apps' system checks share: a setting under the least value the product can work with is refused by
name, at startup, instead of failing every ingest or question later (or silently doing nothing)."""

from __future__ import annotations

from collections.abc import Mapping

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
