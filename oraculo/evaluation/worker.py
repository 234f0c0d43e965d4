"""A queued run's life on the worker: claimed under an attempt number, executed with a heartbeat and each
question's result written as it comes, watched by a deferred watchdog, and queued again when its worker went
silent (or, by hand, when it failed)."""

from __future__ import annotations

import logging
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from biblioteca.errors import ConflictError
from oraculo.evaluation.harness import QuestionResult, evaluation_run
from oraculo.evaluation.params import EvalParams
from oraculo.evaluation.questions import LabelledQuestion
from oraculo.models import EvalResult, EvalRun

logger = logging.getLogger(__name__)

ACTIVE = (EvalRun.Status.QUEUED, EvalRun.Status.RUNNING)


class Superseded(Exception):
    """The run was queued again (its worker had gone silent): this attempt must stop writing."""


def _claim(*, run_id: int) -> int | None:
    """Take a queued run: it becomes `running` under a new attempt number, which this worker then owns."""
    with transaction.atomic():
        run = EvalRun.objects.select_for_update().filter(pk=run_id, status=EvalRun.Status.QUEUED).first()
        if run is None:
            return None
        now = timezone.now()
        run.status, run.started_at, run.heartbeat_at, run.progress, run.error = (
            EvalRun.Status.RUNNING,
            now,
            now,
            0,
            "",
        )
        run.attempt += 1
        run.save(update_fields=["status", "started_at", "heartbeat_at", "progress", "error", "attempt"])
        _watch_later(run_id=run.pk, attempt=run.attempt, after=now)
        return run.attempt


def _watch_later(*, run_id: int, attempt: int, after) -> None:
    from oraculo.tasks import eval_run_watchdog_task

    run_after = after + _stalled_after() + timedelta(seconds=1)
    eval_run_watchdog_task.using(run_after=run_after).enqueue(run_id=run_id, attempt=attempt)


def eval_run_watch(*, run_id: int, attempt: int) -> None:
    """The watchdog of one attempt: if that attempt still runs but its worker went silent (killed, say), the run
    is queued again, without anyone asking; while it shows signs of life, look again later."""
    with transaction.atomic():
        run = (
            EvalRun.objects.select_for_update()
            .filter(pk=run_id, attempt=attempt, status=EvalRun.Status.RUNNING)
            .first()
        )
        if run is None:
            return  # finished, failed, or already queued again: a new attempt has its own watchdog
        if _is_stalled(run, _stalled_after()):
            logger.warning("evaluation run %s went silent in attempt %s; queued again", run_id, attempt)
            _requeue_locked(run)
        else:
            _watch_later(run_id=run_id, attempt=attempt, after=run.heartbeat_at or timezone.now())


def eval_run_execute(*, run_id: int) -> None:
    """Run a queued evaluation, recording progress and each question's result as it goes; any failure ends the
    run as `failed` with the error kept, never as a run stuck in `running`. Every write first checks, under
    the run's row lock, that this attempt is still the run's current one: a stalled worker that wakes up after
    its run was queued again stops without writing."""
    eval_runs_requeue_stalled()
    attempt = _claim(run_id=run_id)
    if attempt is None:
        logger.warning("evaluation run %s is not queued (missing or already taken); skipped", run_id)
        return
    rows = list(EvalResult.objects.filter(run_id=run_id).order_by("position"))
    mine = EvalRun.objects.filter(pk=run_id, attempt=attempt, status=EvalRun.Status.RUNNING)

    def on_progress(done: int, total: int, result: QuestionResult | None) -> None:
        with transaction.atomic():
            if not list(mine.select_for_update().values_list("pk", flat=True)):
                raise Superseded
            if result is not None:
                EvalResult.objects.filter(pk=rows[done - 1].pk).update(
                    variants={name: v.as_dict() for name, v in result.variants.items()},
                    answer_similarity=result.answer_similarity,
                    error=result.error,
                )
            mine.update(progress=done, heartbeat_at=timezone.now())

    try:
        params = EvalParams.from_dict(EvalRun.objects.values_list("params", flat=True).get(pk=run_id))
        report = evaluation_run(
            questions=[LabelledQuestion(r.question, r.expected_answer) for r in rows],
            params=params,
            on_progress=on_progress,
        )
    except Superseded:
        logger.warning(
            "evaluation run %s was queued again while attempt %s ran; this attempt stops", run_id, attempt
        )
        return
    except Exception as exc:
        logger.exception("evaluation run %s failed", run_id)
        mine.update(
            status=EvalRun.Status.FAILED, finished_at=timezone.now(), error=f"{type(exc).__name__}: {exc}"
        )
        return
    mine.update(
        status=EvalRun.Status.DONE,
        finished_at=timezone.now(),
        progress=len(rows),
        summary=report.summary,
        sweep=report.sweep.as_dict() if report.sweep else {},
    )


def _stalled_after() -> timedelta:
    return timedelta(seconds=settings.EVAL_STALLED_AFTER)


def _is_stalled(run: EvalRun, stalled_after: timedelta) -> bool:
    return (
        run.status == EvalRun.Status.RUNNING
        and (run.heartbeat_at or run.started_at or run.created_at) < timezone.now() - stalled_after
    )


def _requeue_locked(run: EvalRun) -> None:
    """Queue a run (locked by the caller) again under a new attempt, its question rows kept and reset."""
    from oraculo.tasks import eval_run_task

    run.status, run.progress, run.error = EvalRun.Status.QUEUED, 0, ""
    run.started_at = run.heartbeat_at = run.finished_at = None
    run.attempt += 1
    run.save(
        update_fields=["status", "progress", "error", "started_at", "heartbeat_at", "finished_at", "attempt"]
    )
    run.results.update(variants={}, answer_similarity=None, error="")
    eval_run_task.enqueue(run_id=run.pk)


def eval_run_requeue(*, run_id: int, stalled_after: timedelta | None = None) -> EvalRun:
    """Queue a failed run again, or a running one whose worker has shown no sign of life for `stalled_after`
    (EVAL_STALLED_AFTER by default)."""
    stalled_after = stalled_after or _stalled_after()
    with transaction.atomic():
        run = EvalRun.objects.select_for_update().get(pk=run_id)
        if run.status != EvalRun.Status.FAILED and not _is_stalled(run, stalled_after):
            raise ConflictError(
                f"{run} is {run.status}; only failed runs, or running ones silent for "
                f"{int(stalled_after.total_seconds() // 60)} minutes, can be queued again."
            )
        _requeue_locked(run)
    return run


def eval_runs_requeue_stalled(*, stalled_after: timedelta | None = None) -> list[int]:
    """Queue again every running run whose worker went silent (killed, say): the watchdog does it for each
    attempt; this sweep also runs whenever a run is created, a worker starts one, or a run is read (runs
    claimed before the watchdog existed). Returns their ids."""
    stalled_after = stalled_after or _stalled_after()
    cutoff = timezone.now() - stalled_after
    candidates = list(
        EvalRun.objects.filter(status=EvalRun.Status.RUNNING)
        .filter(Q(heartbeat_at__lt=cutoff) | Q(heartbeat_at__isnull=True, started_at__lt=cutoff))
        .values_list("pk", flat=True)
    )
    requeued = []
    for run_id in candidates:
        with transaction.atomic():
            run = EvalRun.objects.select_for_update(skip_locked=True).filter(pk=run_id).first()
            if run is not None and _is_stalled(run, stalled_after):
                _requeue_locked(run)
                requeued.append(run_id)
    if requeued:
        logger.warning("evaluation runs %s went silent and were queued again", requeued)
    return requeued
