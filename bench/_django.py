"""Lets a bench script use the project's Django setup (settings, database) when run by hand."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from biblioteca.ingest import IngestReport

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"


def setup() -> None:
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("DEBUG", "true")  # benches run on a development machine, like `make run`
    import django

    django.setup()
    migrate()


def migrate() -> None:
    """A fresh clone's database has no tables yet: apply the migrations first, as `make run` does."""
    from django.core.management import call_command
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    executor = MigrationExecutor(connection)
    pending = executor.migration_plan(executor.loader.graph.leaf_nodes())
    if pending:
        print(f"applying {len(pending)} migration(s) first, as `make migrate` would", file=sys.stderr)
        call_command("migrate", verbosity=0)


def ingest(*, paths: Sequence[str | Path], app: str, source_type: str = "docs", **options) -> IngestReport:
    """`directory_ingest`, stopping the bench when a file failed: figures over part of a library mislead."""
    from biblioteca.ingest import directory_ingest

    report = directory_ingest(paths=paths, app=app, source_type=source_type, **options)
    if report.failed:
        sys.exit(
            f"{len(report.failed)} file(s) failed to ingest into app {app!r}, first: "
            + "; ".join(f"{r.source_path}: {r.error}" for r in report.failed[:3])
        )
    return report
