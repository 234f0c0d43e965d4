"""Background tasks of the library (django-tasks, database backend: `manage.py db_worker` runs them)."""

from __future__ import annotations

from django_tasks import task

from biblioteca.ingest_queue import queued_document_ingest


@task()
def ingest_document_task(
    *, source_path: str, content: str, app: str, source_type: str, url: str, force: bool
) -> dict:
    """Ingest one document queued by `ingest_docs --queue`; returns its DocumentResult as a dict."""
    return queued_document_ingest(
        source_path=source_path, content=content, app=app, source_type=source_type, url=url, force=force
    )
