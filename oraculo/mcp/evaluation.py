"""Every call the MCP door makes into the evaluation services, in one place: questions resolved and checked as for
every door (`evaluation_questions`), then run here (`evaluation_run_inline`, printed as `report_json`, the JSON of
`eval_retrieval --format json`) or queued for a worker (`evaluation_start`), and a run read back."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.urls import reverse

from biblioteca.errors import NotFoundError
from oraculo.evaluation.export import report_json
from oraculo.evaluation.params import eval_params_build
from oraculo.evaluation.questions import LabelledQuestion
from oraculo.evaluation.selectors import run_report
from oraculo.evaluation.services import (
    QuestionSource,
    eval_run_read,
    evaluation_questions,
    evaluation_run_inline,
    evaluation_start,
)
from oraculo.models import EvalRun


def run_admin_path(run_id: int) -> str:
    return reverse("admin:oraculo_evalrun_change", args=[run_id])


def run_status(run: EvalRun) -> dict:
    """The run's id, status and admin path; its report (summary + results) once it is done."""
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
    """bib_ask's A/B harness: explicit questions, or the last real ones (with the permission to read the log).
    Up to MCP_EVAL_INLINE_MAX questions it runs here and returns the report `eval_retrieval --format json`
    prints; beyond that it queues a run for a worker and returns the run's status."""
    eval_params = eval_params_build(**params)
    source = QuestionSource(explicit=questions or None, last=last, channels=channels)
    chosen = evaluation_questions(questions=source, params=eval_params, created_by=user)
    if len(chosen) <= settings.MCP_EVAL_INLINE_MAX:
        return report_json(evaluation_run_inline(questions=chosen, params=eval_params, created_by=user))
    return run_status(evaluation_start(questions=chosen, params=eval_params, created_by=user))


def evaluation_run_read(*, user: AbstractBaseUser, run_id: int) -> dict:
    """A run the user queued (or any run, with the permission to read the question log)."""
    run = eval_run_read(user=user, run_id=run_id)
    if run is None:
        raise NotFoundError(f"No evaluation run #{run_id} that you may read.", extra={"id": "no such run"})
    return run_status(run)
