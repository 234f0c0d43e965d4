"""Every write to EvalRun and EvalResult: creating a run (and enqueuing it), executing it, saving a finished one."""
from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import timedelta

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from oraculo.evaluation import EvalParams, EvalReport, evaluation_run
from oraculo.models import EvalResult, EvalRun
from oraculo.questions import LabelledQuestion

logger = logging.getLogger(__name__)


def _user(user: AbstractBaseUser | None) -> AbstractBaseUser | None:
    return user if user is not None and user.is_authenticated else None


def eval_run_create(*, questions: Sequence[LabelledQuestion], params: EvalParams,
                    created_by: AbstractBaseUser | None = None) -> EvalRun:
    """A queued run with one pending row per question, enqueued in the same transaction: it never runs inside
    the request, and a worker never sees a half-created run."""
    from oraculo.tasks import eval_run_task

    if not questions:
        raise ValueError("An evaluation needs at least one question.")
    with transaction.atomic():
        run = EvalRun.objects.create(params=params.as_dict(), total=len(questions), created_by=_user(created_by))
        EvalResult.objects.bulk_create(
            EvalResult(run=run, position=i, question=q.question, expected_answer=q.expected_answer)
            for i, q in enumerate(questions, start=1)
        )
        eval_run_task.enqueue(run_id=run.pk)
    return run


def eval_run_execute(*, run_id: int) -> None:
    """Run a queued evaluation, recording progress and each question's result as it goes; any failure ends the
    run as `failed` with the error kept, never as a run stuck in `running`."""
    now = timezone.now()
    claimed = EvalRun.objects.filter(pk=run_id, status=EvalRun.Status.QUEUED).update(
        status=EvalRun.Status.RUNNING, started_at=now, heartbeat_at=now, progress=0, error="")
    if not claimed:
        logger.warning("evaluation run %s is not queued (missing or already taken); skipped", run_id)
        return
    rows = list(EvalResult.objects.filter(run_id=run_id).order_by("position"))

    def on_progress(done: int, total: int, result: dict | None) -> None:
        if result is not None:
            EvalResult.objects.filter(pk=rows[done - 1].pk).update(
                variants=result["variants"], answer_similarity=result.get("answer_similarity"),
                error=result.get("error", ""))
        EvalRun.objects.filter(pk=run_id).update(progress=done, heartbeat_at=timezone.now())

    try:
        params = EvalParams.from_dict(EvalRun.objects.values_list("params", flat=True).get(pk=run_id))
        report = evaluation_run(questions=[LabelledQuestion(r.question, r.expected_answer) for r in rows],
                                params=params, on_progress=on_progress)
    except Exception as exc:
        logger.exception("evaluation run %s failed", run_id)
        EvalRun.objects.filter(pk=run_id).update(status=EvalRun.Status.FAILED, finished_at=timezone.now(),
                                                 error=f"{type(exc).__name__}: {exc}")
        return
    EvalRun.objects.filter(pk=run_id).update(
        status=EvalRun.Status.DONE, finished_at=timezone.now(), progress=len(rows), summary=report.summary,
        sweep=report.sweep.as_dict() if report.sweep else {})


STALLED_AFTER = timedelta(minutes=10)


def eval_run_requeue(*, run_id: int, stalled_after: timedelta = STALLED_AFTER) -> EvalRun:
    """Queue a failed run again, or a running one whose worker has shown no sign of life for `stalled_after`
    (a worker killed mid-run leaves it `running` for ever). Its question rows are kept and reset."""
    from oraculo.tasks import eval_run_task

    with transaction.atomic():
        run = EvalRun.objects.select_for_update().get(pk=run_id)
        stalled = (run.status == EvalRun.Status.RUNNING
                   and (run.heartbeat_at or run.started_at or run.created_at) < timezone.now() - stalled_after)
        if run.status != EvalRun.Status.FAILED and not stalled:
            raise ValueError(f"{run} is {run.status}; only failed runs, or running ones silent for "
                             f"{int(stalled_after.total_seconds() // 60)} minutes, can be queued again.")
        run.status, run.progress, run.error = EvalRun.Status.QUEUED, 0, ""
        run.started_at = run.heartbeat_at = run.finished_at = None
        run.save(update_fields=["status", "progress", "error", "started_at", "heartbeat_at", "finished_at"])
        run.results.update(variants={}, answer_similarity=None, error="")
        eval_run_task.enqueue(run_id=run.pk)
    return run


@transaction.atomic
def eval_run_save(*, report: EvalReport, params: EvalParams, created_by: AbstractBaseUser | None = None) -> EvalRun:
    """Store a run already executed elsewhere (the command's --save) as a finished EvalRun."""
    now = timezone.now()
    run = EvalRun.objects.create(params=params.as_dict(), status=EvalRun.Status.DONE, total=len(report.results),
                                 progress=len(report.results), summary=report.summary,
                                 sweep=report.sweep.as_dict() if report.sweep else {},
                                 created_by=_user(created_by), started_at=now, finished_at=now)
    EvalResult.objects.bulk_create(
        EvalResult(run=run, position=i, question=r["question"], expected_answer=r.get("expected_answer", ""),
                   variants=r["variants"], answer_similarity=r.get("answer_similarity"), error=r.get("error", ""))
        for i, r in enumerate(report.results, start=1)
    )
    return run
