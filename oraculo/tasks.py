"""Background tasks (django-tasks, database backend: `manage.py db_worker` runs them)."""
from __future__ import annotations

from django_tasks import task

from oraculo.eval_actions import eval_run_execute


@task()
def eval_run_task(run_id: int) -> None:
    """Execute one queued evaluation run."""
    eval_run_execute(run_id=run_id)
