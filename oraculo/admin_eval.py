"""Admin side of the A/B evaluation harness (placeholder until the harness lands)."""
from __future__ import annotations


class EvalAdminMixin:
    """Adds the evaluation action and button to the OraculoQuery changelist."""
