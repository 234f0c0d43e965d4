"""Every call the MCP door makes into the evaluation code, in one place: the A/B harness inline, a queued run,
and a run read back. The tools only translate their arguments and results."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.urls import reverse

from biblioteca.errors import ApplicationError, NotAllowedError, NotFoundError
from oraculo.api.permissions import VIEW_QUERIES
from oraculo.eval_actions import eval_run_create, eval_runs_requeue_stalled
from oraculo.evaluation import EvalParamsError, eval_params_build, evaluation_run, run_report
from oraculo.models import EvalRun
from oraculo.questions import DEFAULT_LAST, LabelledQuestion, recent_questions


def run_admin_path(run_id: int) -> str:
    return reverse("admin:oraculo_evalrun_change", args=[run_id])


def run_status(run: EvalRun) -> dict:
    """The run's id, status and admin path; its report (the seed's summary + results) once it is done."""
    out: dict = {
        "id": run.pk,
        "status": run.status,
        "progress": run.progress,
        "total": run.total,
        "admin_url": run_admin_path(run.pk),
    }
    if run.error:
        out["error"] = run.error
    if run.status == EvalRun.Status.DONE:
        out |= run_report(run=run)
    return out


def evaluation_request(
    *,
    user: AbstractBaseUser,
    questions: Sequence[LabelledQuestion] | None,
    last: int | None,
    channels: Sequence[str] | None,
    params: Mapping,
) -> dict:
    """The seed's bib_eval_retrieval: explicit questions, or the last real ones (with the permission to read the
    log). Up to MCP_EVAL_INLINE_MAX questions it runs here and returns the report that `eval_retrieval --format
    json` prints; beyond that it queues a run for a worker and returns the run's status."""
    try:
        eval_params = eval_params_build(**params)
    except EvalParamsError as exc:
        raise ApplicationError(str(exc)) from exc
    if not questions:
        if not user.has_perm(VIEW_QUERIES):
            raise NotAllowedError(
                "Evaluating the question log needs the permission to view queries; pass `questions` instead.",
                extra={"questions": "required without the permission to view queries"},
            )
        questions = recent_questions(last=last or DEFAULT_LAST, app=eval_params.app, channels=channels)
        if not questions:
            where = f" in app {eval_params.app!r}" if eval_params.app else ""
            raise ApplicationError(
                f"No questions found: nobody has asked anything yet{where}; pass `questions`.",
                extra={"questions": "no recent questions to evaluate"},
            )
    if len(questions) <= settings.MCP_EVAL_INLINE_MAX:
        return evaluation_run(questions=questions, params=eval_params).as_dict()
    run = eval_run_create(questions=questions, params=eval_params, created_by=user)
    return run_status(run)


def evaluation_run_read(*, user: AbstractBaseUser, run_id: int) -> dict:
    """A run the user queued (or any run, with the permission to read the question log)."""
    eval_runs_requeue_stalled()
    run = EvalRun.objects.filter(pk=run_id).first()
    if run is None or (run.created_by_id != user.pk and not user.has_perm(VIEW_QUERIES)):
        raise NotFoundError(f"No evaluation run #{run_id} that you may read.", extra={"id": "no such run"})
    return run_status(run)
