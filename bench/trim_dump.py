"""What retrieve(trim=True) returns, dumped as JSON lines, so a change meant to make trimming faster can be shown
to keep exactly the same texts and token counts: dump before, dump after, diff.

    .venv/bin/python bench/trim_dump.py > before.jsonl   # then after the change
    .venv/bin/python bench/trim_dump.py > after.jsonl && diff before.jsonl after.jsonl

The 80 FastAPI questions and the first 50 XQuAD questions per language, at top_k 5 and 20, on the apps
bench/docs_qa.py ingests (nothing is ingested here).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _django

_django.setup()

import docs_qa  # noqa: E402

from biblioteca.embeddings import get_embedder  # noqa: E402
from biblioteca.retrieval import retrieve  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--xquad", type=int, default=50, help="XQuAD questions per language")
    args = parser.parse_args()
    embedder = get_embedder()
    for dataset, per_lang in (("fastapi", None), ("xquad", args.xquad)):
        _, questions, _ = docs_qa.DATASETS[dataset](["en", "es"])
        for lang in ("en", "es"):
            asked = [q for q in questions if q.lang == lang][:per_lang]
            for q in asked:
                vector = embedder.embed_query(q.text)
                for top_k in (5, 20):
                    result = retrieve(
                        q.text,
                        top_k=top_k,
                        trim=True,
                        filters={"app": docs_qa.app_name(dataset, lang)},
                        query_vector=vector,
                    )
                    row = {
                        "dataset": dataset,
                        "question": q.text,
                        "top_k": top_k,
                        "tokens_before": result.tokens_before,
                        "tokens": result.tokens_in_context,
                        "chunks": [[c.id, c.trimmed, c.content] for c in result.chunks],
                    }
                    print(json.dumps(row, ensure_ascii=False))


if __name__ == "__main__":
    main()
