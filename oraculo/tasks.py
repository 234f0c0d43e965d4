"""Background tasks (django-tasks, database backend: `manage.py db_worker` runs them)."""

from __future__ import annotations

from django_tasks import task

from oraculo.evaluation.worker import eval_run_execute, eval_run_watch


@task()
def eval_run_task(run_id: int) -> None:
    """Execute one queued evaluation run."""
    eval_run_execute(run_id=run_id)


@task()
def eval_run_watchdog_task(run_id: int, attempt: int) -> None:
    """Deferred by each claim: queues the run again if its worker went silent, else looks again later."""
    eval_run_watch(run_id=run_id, attempt=attempt)
