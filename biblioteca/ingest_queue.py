"""Ingest spread over task workers: one task per document, so N `db_worker` processes embed in parallel.

Each task runs `document_ingest`, so a document is still replaced in one transaction, and an unchanged one costs
no embedding call. The document's text travels inside its task, so workers on other machines need no shared disk.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from django.db import transaction
from django_tasks_db.models import DBTaskResult

from biblioteca.ingest import (
    DocumentResult,
    IngestError,
    IngestReport,
    document_ingest,
    document_url,
    documents_prune,
    find_markdown_files,
    ingest_scope_check,
    read_markdown,
)


@dataclass
class QueuedIngest:
    """What an enqueue did: one task per readable document, and the files refused or unreadable on the spot."""

    task_ids: list[str] = field(default_factory=list)
    refused: list[DocumentResult] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    started: float = field(default_factory=time.perf_counter)

    @property
    def total(self) -> int:
        return len(self.task_ids) + len(self.refused)


def queued_document_ingest(
    *, source_path: str, content: str, app: str, source_type: str, url: str, force: bool
) -> dict:
    """The task's body: `document_ingest`, its outcome as a dict; a failure is a result, as in directory_ingest."""
    try:
        result = document_ingest(
            source_path=source_path, content=content, app=app, source_type=source_type, url=url, force=force
        )
    except Exception as exc:  # one bad document must not look like a broken worker; the report names it
        result = DocumentResult(source_path, "failed", error=str(exc) or type(exc).__name__)
    return asdict(result)


def directory_ingest_enqueue(
    *,
    paths: Sequence[str | Path],
    app: str = "default",
    source_type: str = "docs",
    url_prefix: str = "",
    prune: bool = False,
    force: bool = False,
) -> QueuedIngest:
    """Queue one task per markdown file under `paths` (all of them or, on error, none), pruning like
    directory_ingest; files refused or unreadable are reported at once and never queued."""
    from biblioteca.tasks import ingest_document_task

    ingest_scope_check(app=app, source_type=source_type, url_prefix=url_prefix)
    files = find_markdown_files(paths)
    queued = QueuedIngest()
    emptied: list[str] = []
    with transaction.atomic():
        for source in files:
            if source.refused:
                queued.refused.append(DocumentResult(source.source_path, source.refused, error=source.reason))
                continue
            try:
                content = read_markdown(source.path)
            except IngestError as exc:
                queued.refused.append(DocumentResult(source.source_path, "failed", error=str(exc)))
                continue
            if not content.strip():
                queued.refused.append(DocumentResult(source.source_path, "skipped", error="empty file"))
                emptied.append(source.source_path)
                continue
            task = ingest_document_task.enqueue(
                source_path=source.source_path,
                content=content,
                app=app,
                source_type=source_type,
                url=document_url(url_prefix=url_prefix, source_path=source.source_path),
                force=force,
            )
            queued.task_ids.append(str(task.id))
        if prune:
            queued.removed = documents_prune(app=app, source_type=source_type, files=files, emptied=emptied)
    return queued


def queued_ingest_results(*, task_ids: Sequence[str]) -> dict[str, DocumentResult]:
    """The finished tasks among `task_ids` and their documents' outcomes (a task that crashed is a failure)."""
    rows = DBTaskResult.objects.filter(
        id__in=list(task_ids), status__in=("SUCCESSFUL", "FAILED")
    ).values_list("id", "status", "return_value", "args_kwargs", "exception_class_path")
    out = {}
    for id_, status, value, args, exception in rows:
        if status == "SUCCESSFUL" and isinstance(value, dict):
            out[str(id_)] = DocumentResult(**value)
        else:
            source_path = args.get("kwargs", {}).get("source_path", "?")
            out[str(id_)] = DocumentResult(
                source_path, "failed", error=f"the task failed: {exception or status}"
            )
    return out


def queued_ingest_wait(
    *,
    queued: QueuedIngest,
    on_result: Callable[[DocumentResult], None] | None = None,
    poll_seconds: float = 0.5,
    timeout: float | None = None,
) -> IngestReport:
    """Wait for the workers to finish every queued document; each outcome is passed to `on_result` once, as it
    arrives. Gives up after `timeout` seconds, leaving the tasks queued, with an IngestError saying how many are
    left."""
    report = IngestReport(removed=queued.removed)
    for result in queued.refused:
        report.results.append(result)
        if on_result:
            on_result(result)
    waiting = set(queued.task_ids)
    deadline = None if timeout is None else time.monotonic() + timeout
    while waiting:
        for id_, result in queued_ingest_results(task_ids=sorted(waiting)).items():
            waiting.discard(id_)
            report.results.append(result)
            if on_result:
                on_result(result)
        if not waiting:
            break
        if deadline is not None and time.monotonic() > deadline:
            raise IngestError(
                f"{len(waiting)} of {len(queued.task_ids)} queued document(s) not ingested after {timeout:.0f}s; "
                "they stay queued: is `manage.py db_worker` running?"
            )
        time.sleep(poll_seconds)
    report.seconds = time.perf_counter() - queued.started
    return report
