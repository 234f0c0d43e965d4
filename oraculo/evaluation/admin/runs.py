"""The EvalRun admin pages: progress while a run is queued or running, then its summary, per-question table,
charts and downloads; and the action that queues a failed or silent run again."""

from __future__ import annotations

import json

from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse

from biblioteca.errors import ConflictError
from config.admin import ReadOnlyAdminMixin
from config.replicas import ReplicaReadsAdminMixin
from oraculo.charts import sweep_curve_svg, tokens_per_question_svg
from oraculo.evaluation.export import report_csv
from oraculo.evaluation.params import VARIANTS
from oraculo.evaluation.selectors import VIEW_QUERIES, run_report
from oraculo.evaluation.worker import eval_run_requeue, eval_runs_requeue_stalled
from oraculo.models import EvalRun

REQUEUE_PERMISSION = "oraculo.change_evalrun"


def _result_rows(report: dict, variants: list[str]) -> list[dict]:
    rows = []
    for position, result in enumerate(report["results"], start=1):
        v = result.get("variants") or {}
        base, trim = v.get("baseline") or {}, v.get("trim") or {}
        rows.append(
            {
                "position": position,
                "question": result["question"],
                "expected_answer": result.get("expected_answer", ""),
                "pending": not v,
                "baseline": base,
                "trim": trim,
                "similarity": result.get("answer_similarity"),
                "error": result.get("error", ""),
            }
        )
    return rows


class EvalRunAdmin(ReplicaReadsAdminMixin, ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = [
        "__str__",
        "status",
        "progress_display",
        "kind",
        "reduction",
        "retention",
        "created_by",
        "created_at",
    ]
    list_filter = ["status"]
    list_select_related = ["created_by"]
    actions = ["queue_again"]
    detail_template = "admin/oraculo/evalrun/detail.html"
    refresh_seconds = 3

    def has_requeue_permission(self, request: HttpRequest) -> bool:
        """Runs are read-only here (ReadOnlyAdminMixin), yet the change permission may queue one again."""
        return request.user.has_perm(REQUEUE_PERMISSION)

    @admin.action(
        description="Queue again (failed runs, or running ones whose worker went silent)",
        permissions=["requeue"],
    )
    def queue_again(self, request: HttpRequest, queryset: QuerySet[EvalRun]):
        queued = 0
        for run in queryset:
            try:
                eval_run_requeue(run_id=run.pk)
                queued += 1
            except ConflictError as exc:
                self.message_user(request, exc.message, messages.WARNING)
        if queued:
            self.message_user(request, f"{queued} run(s) queued again for the worker.", messages.SUCCESS)

    @admin.display(description="progress")
    def progress_display(self, obj: EvalRun) -> str:
        return f"{obj.progress}/{obj.total}"

    @admin.display(description="kind")
    def kind(self, obj: EvalRun) -> str:
        return "sweep" if (obj.params or {}).get("sweep") else "A/B"

    @admin.display(description="token reduction")
    def reduction(self, obj: EvalRun) -> str:
        value = (obj.summary or {}).get("token_reduction_pct")
        return "-" if value is None else f"{value}%"

    @admin.display(description="answer retention")
    def retention(self, obj: EvalRun) -> str:
        value = (obj.summary or {}).get("answer_retention_pct")
        return "-" if value is None else f"{value}%"

    def get_urls(self):
        opts = self.model._meta
        prefix = f"{opts.app_label}_{opts.model_name}"
        return [
            path(
                "<path:object_id>/report.json",
                self.admin_site.admin_view(self.download_json),
                name=f"{prefix}_json",
            ),
            path(
                "<path:object_id>/report.csv",
                self.admin_site.admin_view(self.download_csv),
                name=f"{prefix}_csv",
            ),
            *super().get_urls(),
        ]

    def _run(self, request: HttpRequest, object_id: str) -> EvalRun:
        object_id = unquote(object_id)
        if not object_id.isdigit():
            raise Http404("No such evaluation run.")
        eval_runs_requeue_stalled()
        run = get_object_or_404(EvalRun, pk=object_id)
        if not self.has_view_or_change_permission(request, run):
            raise PermissionDenied
        if run.created_by_id != request.user.pk and not request.user.has_perm(VIEW_QUERIES):
            raise PermissionDenied  # other people's runs can hold real users' questions
        return run

    def download_json(self, request: HttpRequest, object_id: str) -> HttpResponse:
        run = self._run(request, object_id)
        body = {
            "run": {"id": run.pk, "status": run.status, "params": run.params, "error": run.error},
            **run_report(run=run),
        }
        response = JsonResponse(body, json_dumps_params={"ensure_ascii": False, "indent": 2})
        response["Content-Disposition"] = f'attachment; filename="evaluation-{run.pk}.json"'
        return response

    def download_csv(self, request: HttpRequest, object_id: str) -> HttpResponse:
        run = self._run(request, object_id)
        report = run_report(run=run)
        report["summary"] = {"variants": (run.params or {}).get("variants") or list(VARIANTS)}
        response = HttpResponse(report_csv(report), content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="evaluation-{run.pk}.csv"'
        return response

    def change_view(self, request: HttpRequest, object_id: str, form_url: str = "", extra_context=None):
        run = self._run(request, object_id)
        report = run_report(run=run)
        params = run.params or {}
        variants = params.get("variants") or list(VARIANTS)
        rows = _result_rows(report, variants)
        done_rows = [r for r in rows if not r["pending"]]
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": str(run),
            "run": run,
            "params": params,
            "params_json": json.dumps(params, ensure_ascii=False, indent=2),
            "variants": variants,
            "rows": rows,
            "labelled": any(r["expected_answer"] for r in rows),
            "synthesized": bool(params.get("synthesize")),
            "summary": report["summary"],
            "summary_items": list(report["summary"].items()),
            "refresh_seconds": self.refresh_seconds
            if run.status in (EvalRun.Status.QUEUED, EvalRun.Status.RUNNING)
            else None,
            "percent": round(100 * run.progress / run.total) if run.total else 0,
            "json_url": reverse(
                "admin:oraculo_evalrun_json", args=[run.pk], current_app=self.admin_site.name
            ),
            "csv_url": reverse("admin:oraculo_evalrun_csv", args=[run.pk], current_app=self.admin_site.name),
            "has_delete_permission": self.has_delete_permission(request, run),
        }
        if done_rows:
            context["tokens_chart"] = tokens_per_question_svg(
                labels=[r["question"] for r in done_rows],
                baseline=[r["baseline"].get("tokens", r["trim"].get("tokens_before")) for r in done_rows],
                trim=[r["trim"].get("tokens") for r in done_rows],
            )
        sweep = report.get("sweep")
        if sweep and sweep.get("rows"):
            floor = sweep.get("floor") or {}
            by_retention = sweep.get("quality") == "answer_retention_pct"
            context["sweep"] = sweep
            context["swept_drop"] = any(row.get("drop_margin") is not None for row in sweep["rows"])
            context["sweep_floor"] = floor.get("min_retention") if by_retention else floor.get("min_overlap")
            context["sweep_chart"] = sweep_curve_svg(
                rows=sweep["rows"],
                quality_key=sweep.get("quality", "avg_overlap_vs_baseline"),
                recommended=sweep.get("recommended"),
                floor=context["sweep_floor"],
            )
        context.update(extra_context or {})
        return TemplateResponse(request, self.detail_template, context)
