"""Ingestion throughput: docs/s, chunks/s and the share of time spent embedding.

    .venv/bin/python bench/ingest.py [DIR]     (default ../shared/corpus/vite_es)

Ingests DIR into a throw-away app (so nothing is skipped), then again (everything unchanged: no embedding),
prints both runs, and removes the app's documents.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _django

_django.setup()

from biblioteca.embeddings import get_embedder  # noqa: E402
from biblioteca.ingest import directory_ingest  # noqa: E402
from biblioteca.models import Document  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("dir", nargs="?", type=Path, default=_django.SHARED / "corpus" / "vite_es")
    args = parser.parse_args()
    app = f"bench-ingest-{int(time.time())}"
    embedder = get_embedder()
    embedder.embed_query("warm up")
    try:
        first = directory_ingest(paths=[args.dir], app=app)
        docs = first.count("added")
        sentences = sum(r.sentences for r in first.results)
        print(f"embedder: {embedder.model_name}; corpus: {args.dir}")
        print(
            f"first run : {docs} docs, {first.chunks} chunks, {sentences} sentences in {first.seconds:.1f}s"
        )
        print(
            f"            {docs / first.seconds:.2f} docs/s, {first.chunks / first.seconds:.2f} chunks/s, "
            f"{first.embedded_texts / first.embed_seconds:.1f} texts/s embedded"
        )
        print(f"            embedding share of the time: {100 * first.embed_seconds / first.seconds:.1f}%")
        calls = embedder.calls
        second = directory_ingest(paths=[args.dir], app=app)
        print(
            f"second run: {second.count('unchanged')} unchanged in {second.seconds:.2f}s, "
            f"{embedder.calls - calls} embedding calls"
        )
        if first.failed:
            print(f"failed: {[(r.source_path, r.error) for r in first.failed]}")
    finally:
        Document.objects.filter(app=app).delete()


if __name__ == "__main__":
    main()
