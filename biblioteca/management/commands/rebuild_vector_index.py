"""`manage.py rebuild_vector_index`: a thin door onto biblioteca.vector_index.vector_index_rebuild."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from biblioteca.vector_index import (
    HnswOptions,
    IndexOptionsError,
    configured_hnsw_options,
    live_hnsw_options,
    validated,
    vector_index_rebuild,
)


class Command(BaseCommand):
    help = (
        "Build the chunk vectors' HNSW index again with RETRIEVAL_HNSW_M and RETRIEVAL_HNSW_EF_CONSTRUCTION "
        "(or the given values), concurrently: searches and ingest go on meanwhile."
    )

    def add_arguments(self, parser):
        parser.add_argument("--m", type=int, default=None)
        parser.add_argument("--ef-construction", type=int, default=None)
        parser.add_argument(
            "--if-changed", action="store_true", help="Only when the index was built with other values."
        )
        parser.add_argument(
            "--maintenance-work-mem",
            default="",
            help="Memory for the build, e.g. 4GB; it should hold the whole graph (about the index's size).",
        )

    def handle(self, *args, **opts):
        configured = configured_hnsw_options()
        options = HnswOptions(
            m=configured.m if opts["m"] is None else opts["m"],
            ef_construction=configured.ef_construction
            if opts["ef_construction"] is None
            else opts["ef_construction"],
        )
        try:
            validated(options)
        except IndexOptionsError as exc:
            raise CommandError(exc.message) from exc
        if opts["if_changed"] and live_hnsw_options() == options:
            self.stdout.write(
                f"The index is already built with m={options.m}, ef_construction={options.ef_construction}."
            )
            return
        try:
            seconds = vector_index_rebuild(options=options, maintenance_work_mem=opts["maintenance_work_mem"])
        except IndexOptionsError as exc:
            raise CommandError(exc.message) from exc
        self.stdout.write(
            f"Rebuilt the index with m={options.m}, ef_construction={options.ef_construction} in {seconds:.1f}s."
        )
