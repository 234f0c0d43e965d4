"""Admin for Oráculo: the question log, read-only (it is evidence), the widget keys, editable, and the MCP bearer
tokens of staff users."""

from __future__ import annotations

from django.contrib import admin
from django.contrib.auth import get_user_model
from django.db.models import QuerySet
from django.http import HttpRequest
from django_mcpz.bearer_tokens.admin import TokenAdmin
from django_mcpz.bearer_tokens.models import Token as McpToken

from config.admin import DateHierarchyAdminMixin, ReadOnlyAdminMixin
from config.replicas import ReplicaReadsAdminMixin
from oraculo.admin_dashboard import DashboardAdminMixin
from oraculo.evaluation.admin.evaluate import EvalAdminMixin
from oraculo.evaluation.admin.runs import EvalRunAdmin
from oraculo.models import EvalRun, OraculoQuery, WidgetKey


class FeedbackFilter(admin.SimpleListFilter):
    title = "feedback"
    parameter_name = "feedback"

    def lookups(self, request, model_admin):
        return [("yes", "Helpful"), ("no", "Not helpful"), ("none", "No feedback")]

    def queryset(self, request, queryset: QuerySet[OraculoQuery]) -> QuerySet[OraculoQuery]:
        value = self.value()
        if value == "yes":
            return queryset.filter(helpful=True)
        if value == "no":
            return queryset.filter(helpful=False)
        if value == "none":
            return queryset.filter(helpful__isnull=True)
        return queryset


@admin.register(OraculoQuery)
class OraculoQueryAdmin(
    EvalAdminMixin,
    DashboardAdminMixin,
    ReplicaReadsAdminMixin,
    ReadOnlyAdminMixin,
    DateHierarchyAdminMixin,
    admin.ModelAdmin,
):
    """Only the API writes queries and only purge_queries deletes them (retention of personal data)."""

    list_display = [
        "short_question",
        "app",
        "answer_mode",
        "trimmed",
        "tokens_in_context",
        "tokens_before",
        "total_ms",
        "llm_model",
        "helpful",
        "channel",
        "caller",
        "created_at",
    ]
    list_filter = ["app", "channel", "answer_mode", "trimmed", FeedbackFilter, "created_at"]
    list_select_related = ["widget_key", "user"]
    search_fields = ["question"]
    date_hierarchy = "created_at"
    fields = [
        "question",
        "retrieval_question",
        "previous",
        "thread",
        "answer",
        "answer_mode",
        "app",
        "source_type",
        "page_url",
        "channel",
        "widget_key",
        "user",
        "chunk_ids",
        "chunk_scores",
        "top_score",
        "trimmed",
        "trim_params",
        "tokens_before",
        "tokens_in_context",
        "latency_ms",
        "llm_model",
        "llm_error",
        "answer_truncated",
        "helpful",
        "feedback_comment",
        "feedback_at",
        "created_at",
    ]
    readonly_fields = fields

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    @admin.display(description="question", ordering="question")
    def short_question(self, obj: OraculoQuery) -> str:
        return obj.question if len(obj.question) <= 80 else obj.question[:79] + "…"

    @admin.display(description="total ms")
    def total_ms(self, obj: OraculoQuery) -> str:
        total = (obj.latency_ms or {}).get("total")
        return "-" if total is None else f"{total:.0f}"

    @admin.display(description="asked by")
    def caller(self, obj: OraculoQuery) -> str:
        if obj.widget_key_id:
            return f"key: {obj.widget_key.name}"
        return f"user: {obj.user}" if obj.user_id else "-"


@admin.register(WidgetKey)
class WidgetKeyAdmin(admin.ModelAdmin):
    list_display = ["name", "app", "key", "origins", "rate_limit", "daily_quota", "is_active", "created_at"]
    list_filter = ["app", "is_active"]
    search_fields = ["name", "key", "app"]
    fields = ["name", "app", "key", "allowed_origins", "rate_limit", "daily_quota", "is_active", "created_at"]
    readonly_fields = ["key", "created_at"]

    @admin.display(description="allowed origins")
    def origins(self, obj: WidgetKey) -> str:
        return ", ".join(obj.allowed_origins) or "-"


admin.site.register(EvalRun, EvalRunAdmin)
admin.site.unregister(McpToken)


@admin.register(McpToken)
class McpTokenAdmin(TokenAdmin):
    """django-mcpz's token admin (the value shown once when a token is added; the revoke action), offering only
    active staff users: only staff get the MCP tools."""

    raw_id_fields: list[str] = []

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        if db_field.name == "user":
            kwargs["queryset"] = get_user_model().objects.filter(is_active=True, is_staff=True)
        return super().formfield_for_foreignkey(db_field, request, **kwargs)
