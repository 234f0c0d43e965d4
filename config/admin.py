"""What the project's admins share."""

from __future__ import annotations


class ReadOnlyAdminMixin:
    """For derived or evidential rows (chunks, the question log, evaluation runs): code writes them, nobody
    adds or edits them by hand."""

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False
