"""`ingest_docs --queue`: one task per document, drained by real `db_worker` processes."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from django.conf import settings as django_settings
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import DEFAULT_DB_ALIAS, connections
from django_tasks_db.models import DBTaskResult

from biblioteca.ingest import IngestError
from biblioteca.ingest_queue import directory_ingest_enqueue, queued_ingest_wait
from biblioteca.models import Chunk, Document

TOPICS = ["lighthouse", "harbour", "ferry", "tides", "anchors", "buoys", "charts", "beacons"]


def write_docs(folder, *, edited: str = "") -> None:
    folder.mkdir(exist_ok=True)
    for topic in TOPICS:
        extra = "It was repainted red this spring." if topic == edited else ""
        (folder / f"{topic}.md").write_text(
            f"# The {topic}\n\nThe {topic} is inspected every week by the harbour master. {extra}\n\n"
            f"## Opening hours\n\nVisitors may see the {topic} on Saturdays from ten to four.\n"
        )


def database_url() -> str:
    primary = connections[DEFAULT_DB_ALIAS].settings_dict
    socket_dir = primary["OPTIONS"].get("host") or primary["HOST"]
    if not socket_dir or primary["PORT"] not in ("", None, 5432, "5432"):
        pytest.skip("the workers reach the embedded test database through its socket")
    return f"postgres://{primary['USER']}@/{primary['NAME']}?host={socket_dir}"


@pytest.fixture
def two_workers():
    """Two real `manage.py db_worker` processes on the test database, polling before anything is queued, so
    both take documents."""
    env = {**os.environ, "DATABASE_URL": database_url(), "EMBEDDING_THREADS": "1", "PYTHONUNBUFFERED": "1"}
    workers = [
        subprocess.Popen(
            [
                sys.executable,
                "manage.py",
                "db_worker",
                "--interval",
                "0.2",
                "--no-startup-delay",
                "--worker-id",
                f"worker-{n}",
            ],
            cwd=django_settings.BASE_DIR,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for n in (1, 2)
    ]
    try:
        for worker in workers:
            for line in worker.stdout:
                if "Starting worker" in line:
                    break
            else:
                pytest.fail(f"db_worker exited with {worker.wait()}")
        yield ["worker-1", "worker-2"]
    finally:
        for worker in workers:
            worker.terminate()
        for worker in workers:
            worker.wait(30)


@pytest.mark.django_db(transaction=True)
def test_two_workers_drain_the_queue_with_atomic_replace_and_zero_call_reingest(tmp_path, two_workers):
    docs = tmp_path / "docs"
    write_docs(docs)
    first = queued_ingest_wait(queued=directory_ingest_enqueue(paths=[docs], app="queued"), timeout=300)
    assert sorted(r.source_path for r in first.results) == sorted(f"{t}.md" for t in TOPICS)
    assert {r.status for r in first.results} == {"added"}, first.failed
    assert Document.objects.filter(app="queued").count() == len(TOPICS)
    assert (
        Chunk.objects.filter(document__app="queued", sentences__isnull=False).distinct().count()
        == first.chunks
    )
    workers = {w for ids in DBTaskResult.objects.values_list("worker_ids", flat=True) for w in ids}
    assert workers == set(two_workers), "both workers embedded documents"

    kept = set(
        Chunk.objects.filter(document__app="queued")
        .exclude(document__source_path="ferry.md")
        .values_list("id", flat=True)
    )
    write_docs(docs, edited="ferry")
    second = queued_ingest_wait(queued=directory_ingest_enqueue(paths=[docs], app="queued"), timeout=300)
    statuses = {r.source_path: (r.status, r.embedded_texts) for r in second.results}
    assert statuses.pop("ferry.md")[0] == "updated"
    assert set(statuses.values()) == {("unchanged", 0)}, "unchanged documents cost no embedding"
    assert kept <= set(Chunk.objects.values_list("id", flat=True)), "the other documents' rows are untouched"
    ferry = Chunk.objects.filter(document__app="queued", document__source_path="ferry.md")
    assert any("repainted red" in c.text for c in ferry)


@pytest.mark.django_db
def test_enqueue_queues_one_task_per_document_and_reports_refusals_at_once(tmp_path, settings):
    docs = tmp_path / "docs"
    write_docs(docs)
    (docs / "huge.md").write_text("# Huge\n\n" + "word " * 1000)
    (docs / "latin1.md").write_bytes("# Año\n\nEl año pasó.".encode("latin-1"))
    settings.INGEST_MAX_FILE_BYTES = 2000
    queued = directory_ingest_enqueue(paths=[docs], app="queued", url_prefix="https://docs.example.com")
    assert len(queued.task_ids) == len(TOPICS)
    assert {(r.source_path, r.status) for r in queued.refused} == {
        ("huge.md", "too_large"),
        ("latin1.md", "failed"),
    }
    task = DBTaskResult.objects.get(args_kwargs__kwargs__source_path="tides.md")
    assert task.task_path == "biblioteca.tasks.ingest_document_task" and task.status == "READY"
    kwargs = task.args_kwargs["kwargs"]
    assert kwargs["url"] == "https://docs.example.com/tides" and "inspected every week" in kwargs["content"]


@pytest.mark.django_db
def test_waiting_without_workers_gives_up_with_a_clear_error_and_leaves_the_tasks_queued(tmp_path):
    docs = tmp_path / "docs"
    write_docs(docs)
    queued = directory_ingest_enqueue(paths=[docs], app="queued")
    with pytest.raises(IngestError, match=r"8 of 8 queued document\(s\) not ingested .* db_worker"):
        queued_ingest_wait(queued=queued, timeout=0.3, poll_seconds=0.1)
    assert DBTaskResult.objects.filter(status="READY").count() == len(TOPICS)


@pytest.mark.django_db
def test_the_command_queues_and_refuses_a_dry_run(tmp_path, capsys):
    docs = tmp_path / "docs"
    write_docs(docs)
    call_command("ingest_docs", str(docs), "--app", "queued", "--queue")
    assert "8 document(s) queued" in capsys.readouterr().out
    with pytest.raises(CommandError, match="nothing to queue"):
        call_command("ingest_docs", str(docs), "--queue", "--dry-run")
    with pytest.raises(CommandError, match="not ingested after"):
        call_command("ingest_docs", str(docs), "--queue", "--wait", "--timeout", "0.2", verbosity=0)


@pytest.mark.django_db
def test_queueing_takes_down_an_emptied_page_with_prune_and_fails_on_an_unreadable_file(tmp_path, capsys):
    docs = tmp_path / "docs"
    write_docs(docs)
    Document.objects.create(app="queued", source_path="tides.md", title="Tides", content_hash="x")
    (docs / "tides.md").write_text("\n")
    queued = directory_ingest_enqueue(paths=[docs], app="queued", prune=True)
    assert queued.removed == ["tides.md"] and ("tides.md", "skipped") in {
        (r.source_path, r.status) for r in queued.refused
    }
    assert not DBTaskResult.objects.filter(args_kwargs__kwargs__source_path="tides.md").exists()
    (docs / "latin1.md").write_bytes("# Año\n\nEl año pasó.".encode("latin-1"))
    with pytest.raises(
        CommandError, match=r"1 file\(s\) failed and were not queued \(the others were\): latin1.md"
    ):
        call_command("ingest_docs", str(docs), "--app", "queued", "--queue")
    out = capsys.readouterr().out
    assert "failed: latin1.md: " in out and "not UTF-8" in out and "skipped: tides.md: empty file" in out


@pytest.mark.django_db
def test_waiting_options_go_with_the_queue(tmp_path):
    for options, message in (
        (["--wait"], "add --queue"),
        (["--timeout", "5"], "add --queue"),
        (["--queue", "--wait", "--timeout", "-5"], "positive number of seconds"),
    ):
        with pytest.raises(CommandError, match=message):
            call_command("ingest_docs", str(tmp_path), "--app", "queued", *options)
