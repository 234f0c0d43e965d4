"""Admin side of the A/B harness: the OraculoQuery action and button that open the evaluation form, and the
EvalRun pages (progress while queued/running, then summary, per-question table, charts, downloads).

The admin only creates runs (through oraculo.eval_actions); a worker executes them, never the request.
"""

from __future__ import annotations

import json
from urllib.parse import urlencode

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet, TextField, Value
from django.db.models.functions import Coalesce, NullIf
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse

from biblioteca.errors import ConflictError
from biblioteca.search import MAX_TOP_K
from config.admin import ReadOnlyAdminMixin
from config.replicas import ReplicaReadsAdminMixin
from oraculo.charts import sweep_curve_svg, tokens_per_question_svg
from oraculo.eval_actions import (
    TooManyActiveRuns,
    eval_run_create,
    eval_run_requeue,
    eval_runs_requeue_stalled,
)
from oraculo.evaluation import (
    DEFAULT_TOP_K,
    MAX_TRIM_WINDOW,
    VARIANTS,
    EvalParamsError,
    eval_params_build,
    report_csv,
    run_report,
)
from oraculo.models import EvalRun, OraculoQuery
from oraculo.questions import (
    DEFAULT_LAST,
    LabelledQuestion,
    QuestionFileError,
    questions_parse,
    recent_questions,
)

MAX_ADMIN_QUESTIONS = 200
MAX_QUESTIONS_FILE_BYTES = 2 * 1024 * 1024
EVAL_PERMISSIONS = ("oraculo.add_evalrun", "oraculo.view_oraculoquery")
REQUEUE_PERMISSION = "oraculo.change_evalrun"
VIEW_QUERIES = "oraculo.view_oraculoquery"


class EvalForm(forms.Form):
    top_k = forms.IntegerField(min_value=1, max_value=MAX_TOP_K, initial=DEFAULT_TOP_K)
    trim_threshold = forms.FloatField(
        min_value=-1, max_value=1, help_text="Default: RETRIEVAL_TRIM_THRESHOLD."
    )
    trim_window = forms.IntegerField(
        min_value=0, max_value=MAX_TRIM_WINDOW, help_text="Default: RETRIEVAL_TRIM_WINDOW."
    )
    variants = forms.MultipleChoiceField(
        choices=[(v, v) for v in VARIANTS], initial=list(VARIANTS), widget=forms.CheckboxSelectMultiple
    )
    synthesize = forms.BooleanField(
        required=False, help_text="Also answer with the LLM for each variant (slower)."
    )
    app = forms.CharField(required=False, help_text="Search only this app's documents.")
    source_type = forms.CharField(required=False, help_text="Search only this source type.")
    sweep_thresholds = forms.CharField(
        required=False,
        label="Sweep thresholds",
        help_text="Calibration sweep: start:stop:step or a,b,c, e.g. 0.70:0.90:0.02.",
    )
    sweep_windows = forms.CharField(required=False, label="Sweep windows", help_text="e.g. 0,1,2.")
    min_retention = forms.FloatField(
        required=False,
        min_value=0,
        max_value=100,
        label="Min retention %",
        help_text="Sweep floor for labelled questions (default 99).",
    )
    min_overlap = forms.FloatField(
        required=False,
        min_value=0,
        max_value=100,
        label="Min overlap %",
        help_text="Sweep floor on chunk overlap (default 95 without labels).",
    )
    questions_file = forms.FileField(
        required=False,
        help_text="Optional: a gold set instead of the questions "
        "above (plain text or JSONL with expected_answer).",
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["trim_threshold"].initial = settings.RETRIEVAL_TRIM_THRESHOLD
        self.fields["trim_window"].initial = settings.RETRIEVAL_TRIM_WINDOW

    def clean_questions_file(self) -> list[LabelledQuestion] | None:
        upload = self.cleaned_data.get("questions_file")
        if not upload:
            return None
        if upload.size > MAX_QUESTIONS_FILE_BYTES:
            raise forms.ValidationError(f"At most {MAX_QUESTIONS_FILE_BYTES // 1024 // 1024} MB.")
        try:
            text = upload.read().decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise forms.ValidationError(f"{upload.name}: not UTF-8 text.") from exc
        try:
            parsed = questions_parse(text=text, name=upload.name)
        except QuestionFileError as exc:
            raise forms.ValidationError(str(exc)) from exc
        if not parsed:
            raise forms.ValidationError(f"{upload.name}: no questions in it.")
        return parsed

    def clean(self):
        data = super().clean()
        sweep = [
            f"{axis}={data[key].strip()}"
            for axis, key in (("threshold", "sweep_thresholds"), ("window", "sweep_windows"))
            if data.get(key)
        ]
        try:
            data["params"] = eval_params_build(
                variants=data.get("variants"),
                top_k=data.get("top_k"),
                trim_threshold=data.get("trim_threshold"),
                trim_window=data.get("trim_window"),
                synthesize=data.get("synthesize", False),
                app=data.get("app"),
                source_type=data.get("source_type"),
                sweep=sweep or None,
                min_retention=data.get("min_retention") if sweep else None,
                min_overlap=data.get("min_overlap") if sweep else None,
            )
        except EvalParamsError as exc:
            raise forms.ValidationError(str(exc)) from exc
        return data


def _distinct(questions: list[str]) -> list[LabelledQuestion]:
    return [LabelledQuestion(q) for q in dict.fromkeys(" ".join(q.split()) for q in questions) if q]


class EvalAdminMixin:
    """Adds the "Evaluate selected questions (A/B)" action and the "Evaluate the last 15" button to the
    OraculoQuery changelist; both open the same form."""

    def get_urls(self):
        urls = super().get_urls()
        opts = self.model._meta
        return [
            path(
                "evaluate/",
                self.admin_site.admin_view(self.evaluate_view),
                name=f"{opts.app_label}_{opts.model_name}_evaluate",
            ),
            *urls,
        ]

    def _evaluate_url(self) -> str:
        opts = self.model._meta
        return reverse(f"admin:{opts.app_label}_{opts.model_name}_evaluate", current_app=self.admin_site.name)

    def _can_evaluate(self, request: HttpRequest) -> bool:
        """Queueing a run, on a page that lists the log's questions."""
        return request.user.has_perms(EVAL_PERMISSIONS)

    def get_actions(self, request: HttpRequest):
        actions = super().get_actions(request)
        if self._can_evaluate(request):
            actions["evaluate_selected"] = self.get_action("evaluate_selected")
        return actions

    @admin.action(description="Evaluate selected questions (A/B)")
    def evaluate_selected(self, request: HttpRequest, queryset: QuerySet[OraculoQuery]):
        ids = list(
            queryset.order_by("-created_at", "-id").values_list("id", flat=True)[: MAX_ADMIN_QUESTIONS + 1]
        )
        if len(ids) > MAX_ADMIN_QUESTIONS:
            self.message_user(
                request,
                f"Only the {MAX_ADMIN_QUESTIONS} most recent selected questions are evaluated.",
                messages.WARNING,
            )
            ids = ids[:MAX_ADMIN_QUESTIONS]
        return HttpResponseRedirect(f"{self._evaluate_url()}?{urlencode({'ids': ','.join(map(str, ids))})}")

    def changelist_view(self, request: HttpRequest, extra_context=None):
        extra_context = dict(extra_context or {})
        if self._can_evaluate(request):
            query = {"last": DEFAULT_LAST} | ({"app": request.GET["app"]} if request.GET.get("app") else {})
            extra_context["evaluate_last_url"] = f"{self._evaluate_url()}?{urlencode(query)}"
            extra_context["evaluate_last_count"] = DEFAULT_LAST
        return super().changelist_view(request, extra_context=extra_context)

    def _form_questions(self, request: HttpRequest) -> tuple[list[LabelledQuestion], str]:
        """The questions the form was opened for, and how they were chosen."""
        source = request.POST if request.method == "POST" else request.GET
        if source.get("ids"):
            try:
                ids = [int(i) for i in source["ids"].split(",") if i.strip()][:MAX_ADMIN_QUESTIONS]
            except ValueError:
                return [], "no valid question ids"
            searched = Coalesce(NullIf("retrieval_question", Value("", output_field=TextField())), "question")
            texts = (
                OraculoQuery.objects.filter(pk__in=ids)
                .order_by("-created_at", "-id")  # follow-ups as searched
                .values_list(searched, flat=True)
            )
            return _distinct(list(texts)), "the selected questions"
        try:
            last = min(max(int(source.get("last") or DEFAULT_LAST), 1), MAX_ADMIN_QUESTIONS)
        except ValueError:
            last = DEFAULT_LAST
        app = source.get("qapp" if request.method == "POST" else "app") or None
        return recent_questions(last=last, app=app), f"the last {last} distinct questions" + (
            f" of app {app}" if app else ""
        )

    @staticmethod
    def _hidden(request: HttpRequest) -> dict[str, str]:
        """How the questions were chosen, carried from the GET that opened the form to its POST."""
        if request.method == "POST":
            return {k: request.POST[k] for k in ("ids", "last", "qapp") if request.POST.get(k)}
        hidden = {k: request.GET[k] for k in ("ids", "last") if request.GET.get(k)}
        return hidden | ({"qapp": request.GET["app"]} if request.GET.get("app") else {})

    def evaluate_view(self, request: HttpRequest):
        if not self._can_evaluate(request):
            raise PermissionDenied
        questions, chosen = self._form_questions(request)
        if request.method == "POST":
            form = EvalForm(request.POST, request.FILES)
            if form.is_valid():
                questions = form.cleaned_data["questions_file"] or questions
                if not questions:
                    form.add_error(None, "No questions to evaluate: select some, or upload a questions file.")
                else:
                    try:
                        run = eval_run_create(
                            questions=questions, params=form.cleaned_data["params"], created_by=request.user
                        )
                    except TooManyActiveRuns as exc:
                        form.add_error(None, str(exc))
                    else:
                        self.message_user(
                            request,
                            f"Evaluation #{run.pk} of {len(questions)} question(s) is "
                            "queued; a worker (manage.py db_worker) runs it.",
                            messages.SUCCESS,
                        )
                        return HttpResponseRedirect(
                            reverse(
                                "admin:oraculo_evalrun_change",
                                args=[run.pk],
                                current_app=self.admin_site.name,
                            )
                        )
        else:
            form = EvalForm(initial={"app": request.GET.get("app", "")})
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": "Evaluate retrieval: baseline vs trim",
            "form": form,
            "questions": questions,
            "chosen": chosen,
            "hidden": self._hidden(request),
        }
        return TemplateResponse(request, "admin/oraculo/eval_form.html", context)


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


@admin.register(EvalRun)
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

    def get_actions(self, request: HttpRequest):
        actions = super().get_actions(request)
        if not request.user.has_perm(REQUEUE_PERMISSION):
            actions.pop("queue_again", None)
        return actions

    @admin.action(description="Queue again (failed runs, or running ones whose worker went silent)")
    def queue_again(self, request: HttpRequest, queryset: QuerySet[EvalRun]):
        if not request.user.has_perm(REQUEUE_PERMISSION):
            raise PermissionDenied
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
            context["sweep_floor"] = floor.get("min_retention") if by_retention else floor.get("min_overlap")
            context["sweep_chart"] = sweep_curve_svg(
                rows=sweep["rows"],
                quality_key=sweep.get("quality", "avg_overlap_vs_baseline"),
                recommended=sweep.get("recommended"),
                floor=context["sweep_floor"],
            )
        context.update(extra_context or {})
        return TemplateResponse(request, self.detail_template, context)
