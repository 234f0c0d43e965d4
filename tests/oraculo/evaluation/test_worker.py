"""Evaluation runs through Django's tasks API: queued by eval_run_create, executed by the real db_worker."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django_tasks_db.models import DBTaskResult

from biblioteca.errors import ConflictError
from oraculo.evaluation.params import eval_params_build
from oraculo.evaluation.questions import LabelledQuestion
from oraculo.evaluation.selectors import run_report
from oraculo.evaluation.services import eval_run_create
from oraculo.evaluation.worker import eval_run_execute
from oraculo.models import EvalRun


def run_worker(monkeypatch) -> None:
    """Drain the queue with `manage.py db_worker --batch` inside the test's transaction: the worker's connection
    recycling and signal handlers are switched off, the rest (claiming, running, recording) is the real thing."""
    from django_tasks_db.management.commands import db_worker

    monkeypatch.setattr(db_worker, "close_old_connections", lambda: None)
    monkeypatch.setattr(db_worker.Worker, "configure_signals", lambda self: None)
    call_command("db_worker", batch=True, reload=False, startup_delay=False, interval=0, verbosity=0)


@pytest.mark.django_db
def test_a_created_run_is_queued_with_its_rows_and_a_task(library):
    run = eval_run_create(
        questions=[
            LabelledQuestion("How do I reset my password?", "30 minutes"),
            LabelledQuestion("When are invoices sent?"),
        ],
        params=eval_params_build(app=library),
    )
    assert run.status == EvalRun.Status.QUEUED and run.progress == 0 and run.total == 2
    assert [(r.position, r.question, r.expected_answer, r.variants) for r in run.results.all()] == [
        (1, "How do I reset my password?", "30 minutes", {}),
        (2, "When are invoices sent?", "", {}),
    ]
    task = DBTaskResult.objects.get()
    assert task.task_path == "oraculo.tasks.eval_run_task"
    assert task.args_kwargs == {"args": [], "kwargs": {"run_id": run.pk}}


@pytest.mark.django_db
def test_the_worker_completes_the_run(library, monkeypatch):
    run = eval_run_create(
        questions=[
            LabelledQuestion("How do I reset my password?", "30 minutes"),
            LabelledQuestion("When are invoices sent?"),
        ],
        params=eval_params_build(app=library, sweep="threshold=0.8,0.9 window=0,1"),
    )
    run_worker(monkeypatch)
    run.refresh_from_db()
    assert run.status == EvalRun.Status.DONE, run.error
    assert run.progress == 2 and run.started_at and run.finished_at and not run.error
    assert run.summary["questions"] == 2 and run.summary["labelled"] == 1
    assert len(run.sweep["rows"]) == 4
    # read back as the command prints it, though jsonb stores the floor's keys in its own order
    assert list(run_report(run=run)["sweep"]["floor"]) == ["min_retention", "min_overlap"]
    for row in run.results.all():
        assert set(row.variants) == {"baseline", "trim"} and not row.error
    assert DBTaskResult.objects.get(task_path="oraculo.tasks.eval_run_task").status == "SUCCESSFUL"


@pytest.mark.django_db
def test_a_failure_ends_the_run_as_failed_with_the_error(library, monkeypatch):
    run = eval_run_create(questions=[LabelledQuestion("Q")], params=eval_params_build(app=library))

    def broken(**kwargs):
        raise RuntimeError("pgvector went away")

    monkeypatch.setattr("oraculo.evaluation.worker.evaluation_run", broken)
    eval_run_execute(run_id=run.pk)
    run.refresh_from_db()
    assert run.status == EvalRun.Status.FAILED
    assert run.error == "RuntimeError: pgvector went away"
    assert run.finished_at is not None


@pytest.mark.django_db
def test_only_a_queued_run_executes(library, monkeypatch):
    run = eval_run_create(questions=[LabelledQuestion("Q")], params=eval_params_build(app=library))
    EvalRun.objects.filter(pk=run.pk).update(status=EvalRun.Status.DONE)
    monkeypatch.setattr(
        "oraculo.evaluation.worker.evaluation_run", lambda **kw: pytest.fail("must not run twice")
    )
    eval_run_execute(run_id=run.pk)
    eval_run_execute(run_id=999_999)


@pytest.mark.django_db
def test_a_failed_run_queued_again_is_completed_by_the_worker(library, monkeypatch):
    from oraculo.evaluation.worker import eval_run_requeue

    run = eval_run_create(
        questions=[LabelledQuestion("How do I reset my password?", "30 minutes")],
        params=eval_params_build(app=library),
    )
    EvalRun.objects.filter(pk=run.pk).update(status=EvalRun.Status.FAILED, error="worker lost")
    DBTaskResult.objects.all().delete()
    eval_run_requeue(run_id=run.pk)
    run_worker(monkeypatch)
    run.refresh_from_db()
    assert run.status == EvalRun.Status.DONE and not run.error and run.heartbeat_at
    assert set(run.results.get().variants) == {"baseline", "trim"}


@pytest.mark.django_db
def test_a_running_run_is_queued_again_only_once_its_worker_went_silent(library):
    from datetime import timedelta

    from django.utils import timezone

    from oraculo.evaluation.worker import eval_run_requeue

    run = eval_run_create(questions=[LabelledQuestion("Q")], params=eval_params_build(app=library))
    EvalRun.objects.filter(pk=run.pk).update(
        status=EvalRun.Status.RUNNING, progress=1, heartbeat_at=timezone.now() - timedelta(minutes=2)
    )
    with pytest.raises(ConflictError, match="only failed runs, or running ones silent for 10 minutes"):
        eval_run_requeue(run_id=run.pk)
    EvalRun.objects.filter(pk=run.pk).update(heartbeat_at=timezone.now() - timedelta(minutes=11))
    run = eval_run_requeue(run_id=run.pk)
    assert run.status == EvalRun.Status.QUEUED and run.progress == 0
    assert DBTaskResult.objects.filter(args_kwargs__kwargs__run_id=run.pk).count() == 2
    done = EvalRun.objects.filter(pk=run.pk)
    done.update(status=EvalRun.Status.DONE)
    with pytest.raises(ConflictError, match="is done"):
        eval_run_requeue(run_id=run.pk)


@pytest.mark.django_db
def test_a_stalled_run_is_queued_again_without_anyone_and_completed(library, monkeypatch, settings):
    """Its worker was killed: the next run a worker starts first queues the silent one again."""
    from datetime import timedelta

    from django.utils import timezone

    settings.EVAL_STALLED_AFTER = 60
    stalled = eval_run_create(
        questions=[LabelledQuestion("How do I reset my password?")], params=eval_params_build(app=library)
    )
    EvalRun.objects.filter(pk=stalled.pk).update(
        status=EvalRun.Status.RUNNING,
        attempt=1,
        progress=0,
        heartbeat_at=timezone.now() - timedelta(seconds=61),
    )
    DBTaskResult.objects.all().delete()  # its task was taken by the worker that died
    fresh = eval_run_create(
        questions=[LabelledQuestion("When are invoices sent?")], params=eval_params_build(app=library)
    )
    assert EvalRun.objects.get(pk=stalled.pk).status == EvalRun.Status.QUEUED
    run_worker(monkeypatch)
    for run in (stalled, fresh):
        run.refresh_from_db()
        assert run.status == EvalRun.Status.DONE and run.progress == 1, run.error
    assert stalled.attempt == 3  # the dead worker's 1, the requeue's 2, the new worker's 3


@pytest.mark.django_db
def test_a_requeued_run_and_its_slow_original_worker_cannot_both_write(library, monkeypatch, settings):
    """The original worker pauses after its first question (as a hung one does); meanwhile the run is queued
    again and a second worker completes it. When the original wakes up it writes nothing more."""
    from datetime import timedelta

    from django.utils import timezone

    from oraculo.evaluation import worker as eval_actions
    from oraculo.evaluation.harness import QuestionResult, VariantResult

    stale = QuestionResult(
        question="How do I reset my password?",
        variants={"baseline": VariantResult("baseline", [], 0.0, 0, 0, 0.0)},
    )
    settings.EVAL_STALLED_AFTER = 60
    real_run = eval_actions.evaluation_run
    run = eval_run_create(
        questions=[
            LabelledQuestion("How do I reset my password?"),
            LabelledQuestion("When are invoices sent?"),
        ],
        params=eval_params_build(app=library),
    )
    seen = {}

    def slow_original(*, questions, params, on_progress):
        """Answers question 1, then stalls; the run is requeued and redone by another worker meanwhile."""
        on_progress(1, 2, stale)
        EvalRun.objects.filter(pk=run.pk).update(heartbeat_at=timezone.now() - timedelta(seconds=61))
        monkeypatch.setattr(eval_actions, "evaluation_run", real_run)
        assert eval_actions.eval_runs_requeue_stalled() == [run.pk]
        eval_run_execute(run_id=run.pk)
        seen["after_second_worker"] = list(EvalRun.objects.filter(pk=run.pk).values_list("status", "attempt"))
        on_progress(2, 2, stale)
        pytest.fail("the superseded worker went on writing")

    monkeypatch.setattr(eval_actions, "evaluation_run", slow_original)
    eval_run_execute(run_id=run.pk)
    assert seen["after_second_worker"] == [(EvalRun.Status.DONE, 3)]
    run.refresh_from_db()
    assert run.status == EvalRun.Status.DONE and run.progress == 2 and not run.error
    rows = list(run.results.order_by("position"))
    assert len(rows) == 2 and all(set(r.variants) == {"baseline", "trim"} for r in rows)


@pytest.mark.django_db
def test_each_claim_leaves_a_watchdog_that_requeues_a_silent_attempt(library, monkeypatch, settings):
    """No person, no new run: the watchdog task deferred at the claim finds the attempt silent and queues the
    run again; a live attempt only gets its watchdog deferred once more."""
    from datetime import timedelta

    from django.utils import timezone

    from oraculo.evaluation.worker import _claim, eval_run_watch

    settings.EVAL_STALLED_AFTER = 60
    run = eval_run_create(questions=[LabelledQuestion("Q")], params=eval_params_build(app=library))
    attempt = _claim(run_id=run.pk)
    watchdog = DBTaskResult.objects.get(task_path="oraculo.tasks.eval_run_watchdog_task")
    assert watchdog.args_kwargs["kwargs"] == {"run_id": run.pk, "attempt": attempt}
    assert watchdog.run_after > timezone.now() + timedelta(seconds=59)

    eval_run_watch(run_id=run.pk, attempt=attempt)  # alive: looks again later
    assert EvalRun.objects.get(pk=run.pk).status == EvalRun.Status.RUNNING
    assert DBTaskResult.objects.filter(task_path="oraculo.tasks.eval_run_watchdog_task").count() == 2

    EvalRun.objects.filter(pk=run.pk).update(heartbeat_at=timezone.now() - timedelta(seconds=61))
    eval_run_watch(run_id=run.pk, attempt=attempt)
    run.refresh_from_db()
    assert run.status == EvalRun.Status.QUEUED and run.attempt == attempt + 1
    eval_run_watch(run_id=run.pk, attempt=attempt)  # a stale watchdog changes nothing
    assert EvalRun.objects.get(pk=run.pk).attempt == attempt + 1
