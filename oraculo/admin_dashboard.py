"""Admin side of the gaps dashboard: a form for the app and the dates, the page, and its CSV. A thin door onto
oraculo.dashboard; staff who may view the question log may see it."""

from __future__ import annotations

from datetime import date, timedelta
from urllib.parse import urlencode

from django import forms
from django.contrib import admin
from django.contrib.admin.options import IncorrectLookupParameters
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone

from oraculo.charts import questions_per_day_svg
from oraculo.dashboard import (
    TEXT_GROUPS,
    asked_alike,
    dashboard_apps,
    dashboard_bounds,
    dashboard_csv,
    dashboard_get,
)
from oraculo.models import OraculoQuery

DEFAULT_DAYS = 30
MAX_DAYS = 366
EARLIEST, LATEST = date(2000, 1, 1), date(2999, 12, 31)  # the day after LATEST must still be a date


class DashboardForm(forms.Form):
    app = forms.CharField(required=False, max_length=100)
    start = forms.DateField(required=False, widget=forms.DateInput(attrs={"type": "date"}))
    end = forms.DateField(required=False, widget=forms.DateInput(attrs={"type": "date"}))

    def clean(self):
        data = super().clean()
        today = timezone.now().date()
        end = data.get("end") or today
        start = data.get("start") or end - timedelta(days=DEFAULT_DAYS - 1)
        if not (start >= EARLIEST and end <= LATEST):
            raise forms.ValidationError(f"Dates between {EARLIEST} and {LATEST}.")
        if start > end:
            raise forms.ValidationError("The start date is after the end date.")
        if (end - start).days >= MAX_DAYS:
            raise forms.ValidationError(f"At most {MAX_DAYS} days at a time.")
        data["start"], data["end"] = start, end
        return data


class AskedAlikeFilter(admin.SimpleListFilter):
    """The log rows of one dashboard group, however many: `?asked_alike=` one row id per variant text. Shown in
    the sidebar only while it is used."""

    title = "dashboard group"
    parameter_name = "asked_alike"
    label = "its questions"
    gaps = False

    def lookups(self, request, model_admin):
        return [(self.value(), self.label)] if self.value() else []

    def queryset(self, request, queryset: QuerySet[OraculoQuery]) -> QuerySet[OraculoQuery]:
        if self.value() is None:
            return queryset
        try:
            ids = [int(part) for part in self.value().split(",")]
        except ValueError:
            raise IncorrectLookupParameters(
                f"{self.parameter_name}: log row ids, separated by commas."
            ) from None
        if not 0 < len(ids) <= TEXT_GROUPS:
            raise IncorrectLookupParameters(f"{self.parameter_name}: 1 to {TEXT_GROUPS} log row ids.")
        return asked_alike(queryset, row_ids=ids, gaps=self.gaps)


class GapsAlikeFilter(AskedAlikeFilter):
    """A dashboard gap's rows: its group's questions that scored low or were rated unhelpful."""

    parameter_name = "gaps_alike"
    label = "its gaps"
    gaps = True


class DashboardAdminMixin:
    """Adds the gaps dashboard (and its CSV) to the OraculoQuery admin, and the filters its links use."""

    dashboard_template = "admin/oraculo/oraculoquery/dashboard.html"

    def get_list_filter(self, request):
        return [*super().get_list_filter(request), AskedAlikeFilter, GapsAlikeFilter]

    def get_urls(self):
        opts = self.model._meta
        return [
            path(
                "dashboard/",
                self.admin_site.admin_view(self.dashboard_view),
                name=f"{opts.app_label}_{opts.model_name}_dashboard",
            ),
            *super().get_urls(),
        ]

    def changelist_view(self, request: HttpRequest, extra_context=None):
        extra_context = dict(extra_context or {})
        if self.has_view_permission(request):
            opts = self.model._meta
            extra_context["dashboard_url"] = reverse(
                f"admin:{opts.app_label}_{opts.model_name}_dashboard", current_app=self.admin_site.name
            )
        return super().changelist_view(request, extra_context=extra_context)

    def dashboard_view(self, request: HttpRequest):
        if not self.has_view_permission(request):
            raise PermissionDenied
        form = DashboardForm(request.GET)
        if not form.is_valid():
            return TemplateResponse(
                request, self.dashboard_template, self._context(request, form, None), status=400
            )
        data = form.cleaned_data
        board = dashboard_get(app=data.get("app") or None, start=data["start"], end=data["end"])
        if request.GET.get("format") == "csv":
            response = HttpResponse(dashboard_csv(board), content_type="text/csv; charset=utf-8")
            response["Content-Disposition"] = (
                f'attachment; filename="oraculo-dashboard-{board.start}-{board.end}.csv"'
            )
            return response
        return TemplateResponse(request, self.dashboard_template, self._context(request, form, board))

    def _context(self, request: HttpRequest, form: DashboardForm, board) -> dict:
        opts = self.model._meta
        changelist = reverse(
            f"admin:{opts.app_label}_{opts.model_name}_changelist", current_app=self.admin_site.name
        )
        context = {
            **self.admin_site.each_context(request),
            "opts": opts,
            "title": "Questions and gaps",
            "form": form,
            "board": board,
            "apps": dashboard_apps(),
        }
        if board is not None:
            query = {"app": board.app or "", "start": board.start.isoformat(), "end": board.end.isoformat()}
            since, until = dashboard_bounds(board.start, board.end)
            period = {"created_at__gte": since.isoformat(" "), "created_at__lt": until.isoformat(" ")}
            if board.app:
                period["app"] = board.app

            def rows(group, parameter: str) -> str:
                return f"{changelist}?{urlencode({**period, parameter: ','.join(map(str, group.text_ids))})}"

            context |= {
                "chart": questions_per_day_svg(days=board.days),
                "csv_url": "?" + urlencode({**query, "format": "csv"}),
                "shares": [
                    ("LLM", board.llm, board.share(board.llm)),
                    ("extractive", board.extractive, board.share(board.extractive)),
                    ("nothing found", board.nothing, board.share(board.nothing)),
                ],
                "top": [(g, rows(g, AskedAlikeFilter.parameter_name)) for g in board.top],
                "gaps": [(g, rows(g, GapsAlikeFilter.parameter_name)) for g in board.gaps],
            }
        return context
