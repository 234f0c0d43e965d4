"""Evaluation runs through Django's tasks API: queued by eval_run_create, executed by the real db_worker."""
from __future__ import annotations

import pytest
from django.core.management import call_command
from django_tasks_db.models import DBTaskResult

from oraculo.eval_actions import eval_run_create, eval_run_execute
from oraculo.evaluation import eval_params_build
from oraculo.models import EvalRun
from oraculo.questions import LabelledQuestion


def run_worker(monkeypatch) -> None:
    """Drain the queue with `manage.py db_worker --batch` inside the test's transaction: the worker's connection
    recycling and signal handlers are switched off, the rest (claiming, running, recording) is the real thing."""
    from django_tasks_db.management.commands import db_worker

    monkeypatch.setattr(db_worker, "close_old_connections", lambda: None)
    monkeypatch.setattr(db_worker.Worker, "configure_signals", lambda self: None)
    call_command("db_worker", batch=True, reload=False, startup_delay=False, interval=0, verbosity=0)


@pytest.mark.django_db
def test_a_created_run_is_queued_with_its_rows_and_a_task(library):
    run = eval_run_create(questions=[LabelledQuestion("How do I reset my password?", "30 minutes"),
                                     LabelledQuestion("When are invoices sent?")],
                          params=eval_params_build(app=library))
    assert run.status == EvalRun.Status.QUEUED and run.progress == 0 and run.total == 2
    assert [(r.position, r.question, r.expected_answer, r.variants) for r in run.results.all()] == [
        (1, "How do I reset my password?", "30 minutes", {}), (2, "When are invoices sent?", "", {})]
    task = DBTaskResult.objects.get()
    assert task.task_path == "oraculo.tasks.eval_run_task"
    assert task.args_kwargs == {"args": [], "kwargs": {"run_id": run.pk}}


@pytest.mark.django_db
def test_the_worker_completes_the_run(library, monkeypatch):
    run = eval_run_create(questions=[LabelledQuestion("How do I reset my password?", "30 minutes"),
                                     LabelledQuestion("When are invoices sent?")],
                          params=eval_params_build(app=library, sweep="threshold=0.8,0.9 window=0,1"))
    run_worker(monkeypatch)
    run.refresh_from_db()
    assert run.status == EvalRun.Status.DONE, run.error
    assert run.progress == 2 and run.started_at and run.finished_at and not run.error
    assert run.summary["questions"] == 2 and run.summary["labelled"] == 1
    assert len(run.sweep["rows"]) == 4
    for row in run.results.all():
        assert set(row.variants) == {"baseline", "trim"} and not row.error
    assert DBTaskResult.objects.get().status == "SUCCESSFUL"


@pytest.mark.django_db
def test_a_failure_ends_the_run_as_failed_with_the_error(library, monkeypatch):
    run = eval_run_create(questions=[LabelledQuestion("Q")], params=eval_params_build(app=library))

    def broken(**kwargs):
        raise RuntimeError("pgvector went away")

    monkeypatch.setattr("oraculo.eval_actions.evaluation_run", broken)
    eval_run_execute(run_id=run.pk)
    run.refresh_from_db()
    assert run.status == EvalRun.Status.FAILED
    assert run.error == "RuntimeError: pgvector went away"
    assert run.finished_at is not None


@pytest.mark.django_db
def test_only_a_queued_run_executes(library, monkeypatch):
    run = eval_run_create(questions=[LabelledQuestion("Q")], params=eval_params_build(app=library))
    EvalRun.objects.filter(pk=run.pk).update(status=EvalRun.Status.DONE)
    monkeypatch.setattr("oraculo.eval_actions.evaluation_run", lambda **kw: pytest.fail("must not run twice"))
    eval_run_execute(run_id=run.pk)
    eval_run_execute(run_id=999_999)


@pytest.mark.django_db
def test_a_failed_run_queued_again_is_completed_by_the_worker(library, monkeypatch):
    from oraculo.eval_actions import eval_run_requeue

    run = eval_run_create(questions=[LabelledQuestion("How do I reset my password?", "30 minutes")],
                          params=eval_params_build(app=library))
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

    from oraculo.eval_actions import eval_run_requeue

    run = eval_run_create(questions=[LabelledQuestion("Q")], params=eval_params_build(app=library))
    EvalRun.objects.filter(pk=run.pk).update(status=EvalRun.Status.RUNNING, progress=1,
                                             heartbeat_at=timezone.now() - timedelta(minutes=2))
    with pytest.raises(ValueError, match="only failed runs, or running ones silent for 10 minutes"):
        eval_run_requeue(run_id=run.pk)
    EvalRun.objects.filter(pk=run.pk).update(heartbeat_at=timezone.now() - timedelta(minutes=11))
    run = eval_run_requeue(run_id=run.pk)
    assert run.status == EvalRun.Status.QUEUED and run.progress == 0
    assert DBTaskResult.objects.filter(args_kwargs__kwargs__run_id=run.pk).count() == 2
    done = EvalRun.objects.filter(pk=run.pk)
    done.update(status=EvalRun.Status.DONE)
    with pytest.raises(ValueError, match="is done"):
        eval_run_requeue(run_id=run.pk)
