"""`manage.py ingest_docs PATH...`: a thin door onto biblioteca.ingest.directory_ingest."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from biblioteca.embeddings import EmbeddingError, configured_model_name
from biblioteca.ingest import IngestError, directory_ingest
from biblioteca.ingest_queue import directory_ingest_enqueue, queued_ingest_wait
from biblioteca.selectors import stored_embedding_models


class Command(BaseCommand):
    help = "Ingest markdown files (.md, .markdown, .mdx) into the library: chunk, embed, store. Unchanged files are skipped."

    def add_arguments(self, parser):
        parser.add_argument("paths", nargs="+", help="Markdown files or folders (searched recursively).")
        parser.add_argument("--app", default="default", help="The app these documents belong to.")
        parser.add_argument(
            "--source-type", default="docs", help="A label to filter searches by (docs, faq...)."
        )
        parser.add_argument(
            "--url-prefix", default="", help="Public URL prefix; a document's URL is prefix/path."
        )
        parser.add_argument(
            "--prune",
            action="store_true",
            help="Remove documents of this app and source type whose files are gone.",
        )
        parser.add_argument("--dry-run", action="store_true", help="Report what would change; write nothing.")
        parser.add_argument("--force", action="store_true", help="Re-embed even unchanged documents.")
        parser.add_argument(
            "--queue",
            action="store_true",
            help="Queue one task per document for `manage.py db_worker` processes (as many as you start, on any "
            "machine) instead of embedding here.",
        )
        parser.add_argument(
            "--wait", action="store_true", help="With --queue: wait for the workers, with a progress bar."
        )
        parser.add_argument(
            "--timeout",
            type=float,
            default=None,
            help="With --wait: give up waiting after this many seconds.",
        )

    def handle(self, *args, **opts):
        console = Console(stderr=True, quiet=opts["verbosity"] == 0)
        stale = sorted(set(stored_embedding_models()) - {configured_model_name()})
        if stale:
            console.print(
                f"[yellow]warning:[/] stored chunks were embedded with {', '.join(stale)}, the configured "
                f"model is {configured_model_name()}; run `manage.py reembed`."
            )
        progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[chunks]} chunks · {task.fields[rate]}"),
            TimeElapsedColumn(),
            console=console,
            transient=False,
            disable=opts["verbosity"] == 0,
        )
        state = {"task": None, "chunks": 0, "texts": 0, "embed_seconds": 0.0}

        def on_start(total: int) -> None:
            state["task"] = progress.add_task("ingesting", total=total, chunks=0, rate="")

        def on_result(result) -> None:
            state["chunks"] += result.chunks if result.status in ("added", "updated") else 0
            state["texts"] += result.embedded_texts
            state["embed_seconds"] += result.embed_seconds
            rate = (
                f"{state['texts'] / state['embed_seconds']:.0f} texts/s embedded"
                if state["embed_seconds"]
                else "no embedding needed"
            )
            progress.update(state["task"], advance=1, chunks=state["chunks"], rate=rate)
            if result.status == "failed":
                progress.console.print(f"[red]failed:[/] {result.source_path}: {result.error}")

        if not opts["queue"] and (opts["wait"] or opts["timeout"] is not None):
            raise CommandError("--wait and --timeout wait for queued work: add --queue")
        if opts["timeout"] is not None and not opts["timeout"] > 0:
            raise CommandError("--timeout must be a positive number of seconds")
        if opts["queue"]:
            if opts["dry_run"]:
                raise CommandError("--dry-run writes nothing, so there is nothing to queue: drop --queue")
            try:
                queued = directory_ingest_enqueue(
                    paths=opts["paths"],
                    app=opts["app"],
                    source_type=opts["source_type"],
                    url_prefix=opts["url_prefix"],
                    prune=opts["prune"],
                    force=opts["force"],
                )
            except IngestError as exc:
                raise CommandError(str(exc)) from exc
            if not opts["wait"]:
                self.stdout.write(
                    f"{len(queued.task_ids)} document(s) queued, {len(queued.refused)} refused, "
                    f"{len(queued.removed)} removed; `manage.py db_worker` processes ingest them."
                )
                for result in queued.refused:
                    self.stdout.write(
                        f"{result.status.replace('_', ' ')}: {result.source_path}: {result.error}"
                    )
                failed = [r for r in queued.refused if r.status == "failed"]
                if failed:
                    raise CommandError(
                        f"{len(failed)} file(s) failed and were not queued (the others were): "
                        + "; ".join(f"{r.source_path}: {r.error}" for r in failed)
                    )
                return
            try:
                with progress:
                    on_start(queued.total)
                    report = queued_ingest_wait(queued=queued, on_result=on_result, timeout=opts["timeout"])
            except IngestError as exc:
                raise CommandError(str(exc)) from exc
            self.report(report, opts)
            return
        try:
            with progress:
                report = directory_ingest(
                    paths=opts["paths"],
                    app=opts["app"],
                    source_type=opts["source_type"],
                    url_prefix=opts["url_prefix"],
                    prune=opts["prune"],
                    dry_run=opts["dry_run"],
                    force=opts["force"],
                    on_start=on_start,
                    on_result=on_result,
                )
        except (IngestError, EmbeddingError) as exc:
            raise CommandError(str(exc)) from exc
        self.report(report, opts)

    def report(self, report, opts) -> None:
        prefix = "dry run: " if opts.get("dry_run") else ""
        rechunked = (
            f" ({report.rechunked} re-chunked: new text version or chunk settings)"
            if report.rechunked
            else ""
        )
        self.stdout.write(
            f"{prefix}{report.count('added')} added, {report.count('updated')} updated{rechunked}, "
            f"{report.count('unchanged')} unchanged, {len(report.removed)} removed, {report.count('skipped')} skipped, "
            f"{report.count('outside')} links outside the folder, {report.count('too_large')} too large, "
            f"{report.count('duplicate')} duplicates, "
            f"{len(report.failed)} failed; {report.chunks} chunks in {report.seconds:.1f}s "
            f"({report.embed_seconds:.1f}s embedding)"
        )
        for result in report.results:
            if result.status in ("skipped", "outside", "too_large", "duplicate"):
                self.stdout.write(
                    f"{result.status.replace('_', ' ')}: {result.source_path}: {result.error}"
                    if result.status != "skipped"
                    else f"skipped {result.source_path}: {result.error}"
                )
        if report.failed:
            raise CommandError(
                f"{len(report.failed)} file(s) failed: "
                + "; ".join(f"{r.source_path}: {r.error}" for r in report.failed)
            )
