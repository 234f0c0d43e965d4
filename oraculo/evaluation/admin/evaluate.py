"""The OraculoQuery changelist's way into an evaluation: the "Evaluate selected questions (A/B)" action and the
"Evaluate the last 15" button open one form, which queues a run through `evaluation_start` (a worker runs it,
never the request)."""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse

from biblioteca.errors import ApplicationError
from oraculo.evaluation.admin.forms import EvalForm
from oraculo.evaluation.questions import DEFAULT_LAST, LabelledQuestion
from oraculo.evaluation.selectors import questions_of_queries, recent_questions
from oraculo.evaluation.services import QuestionSource, evaluation_start
from oraculo.models import OraculoQuery

MAX_ADMIN_QUESTIONS = 200
EVAL_PERMISSIONS = ("oraculo.add_evalrun", "oraculo.view_oraculoquery")


class EvalAdminMixin:
    """Adds the "Evaluate selected questions (A/B)" action and the "Evaluate the last 15" button to the
    OraculoQuery changelist; both open the same form."""

    actions = ["evaluate_selected"]

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

    def has_evaluate_permission(self, request: HttpRequest) -> bool:
        """Queueing a run, on a page that lists the log's questions."""
        return request.user.has_perms(EVAL_PERMISSIONS)

    @admin.action(description="Evaluate selected questions (A/B)", permissions=["evaluate"])
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
        if self.has_evaluate_permission(request):
            query = {"last": DEFAULT_LAST} | ({"app": request.GET["app"]} if request.GET.get("app") else {})
            extra_context["evaluate_last_url"] = f"{self._evaluate_url()}?{urlencode(query)}"
            extra_context["evaluate_last_count"] = DEFAULT_LAST
        return super().changelist_view(request, extra_context=extra_context)

    def _form_questions(self, request: HttpRequest) -> tuple[list[LabelledQuestion], str]:
        """The questions the form was opened for, and how they were chosen."""
        source = request.POST if request.method == "POST" else request.GET
        if source.get("ids"):
            parts = [i.strip() for i in source["ids"].split(",") if i.strip()]
            if not all(p.isdecimal() for p in parts):
                return [], "no valid question ids"
            ids = [int(p) for p in parts][:MAX_ADMIN_QUESTIONS]
            return questions_of_queries(ids=ids), "the selected questions"
        raw = (source.get("last") or "").strip()
        last = min(max(int(raw), 1), MAX_ADMIN_QUESTIONS) if raw.isdecimal() else DEFAULT_LAST
        # The changelist's app filter; on the form, else the app it searches (as `--app` picks the command's).
        app = source.get("qapp" if request.method == "POST" else "app") or None
        if app is None and request.method == "POST":
            app = (source.get("app") or "").strip() or None
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
        if not self.has_evaluate_permission(request):
            raise PermissionDenied
        questions, chosen = self._form_questions(request)
        if request.method == "POST":
            form = EvalForm(request.POST, request.FILES)
            if form.is_valid():
                try:
                    run = evaluation_start(
                        questions=form.cleaned_data["questions_file"] or QuestionSource(explicit=questions),
                        params=form.cleaned_data["params"],
                        created_by=request.user,
                    )
                except ApplicationError as exc:
                    form.add_error(None, exc.message)
                else:
                    self.message_user(
                        request,
                        f"Evaluation #{run.pk} of {run.total} question(s) is "
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
