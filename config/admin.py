"""What the project's admins share."""

from __future__ import annotations

from django.contrib.admin.options import IncorrectLookupParameters
from django.contrib.admin.views.main import ChangeList


class ReadOnlyAdminMixin:
    """For derived or evidential rows (chunks, the question log, evaluation runs): code writes them, nobody
    adds or edits them by hand."""

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


class _DateBoundChangeList(ChangeList):
    def get_filters(self, request):
        try:
            return super().get_filters(request)
        except OverflowError as exc:
            raise IncorrectLookupParameters(exc) from exc


class DateHierarchyAdminMixin:
    """A date-hierarchy year past the calendar (`?created_at__year=99999999999`) is the admin's usual "invalid
    filter" redirect, as a malformed date already is, not a 500."""

    def get_changelist(self, request, **kwargs):
        return _DateBoundChangeList
