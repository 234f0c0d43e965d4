"""What retrieve(trim=True) returns, dumped as JSON lines, so a change meant to make trimming faster can be shown
to keep exactly the same texts and token counts: dump before, dump after, diff.

    .venv/bin/python bench/trim_dump.py > before.jsonl   # then after the change
    .venv/bin/python bench/trim_dump.py > after.jsonl && diff before.jsonl after.jsonl
    .venv/bin/python bench/trim_dump.py --xquad 200 --qa-file vite_qa.jsonl vite_qa_es.jsonl \
        --config "RETRIEVAL_HYBRID=false RETRIEVAL_PASSAGE_WORDS=0" > before.jsonl

The 80 FastAPI questions and the first 50 XQuAD questions per language (`--xquad`), at top_k 5 and 20, on the
apps bench/docs_qa.py ingests (nothing is ingested here); `--qa-file` adds labelled questions of your own
(bench/docs_qa.py's format) asked of the apps `--app` names; `--config` dumps under more settings too.
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
from django.test.utils import override_settings  # noqa: E402

from biblioteca.embeddings import get_embedder  # noqa: E402
from biblioteca.retrieval import retrieve  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--xquad", type=int, default=50, help="XQuAD questions per language")
    parser.add_argument("--qa-file", type=Path, nargs="*", default=[], help="labelled questions (JSONL)")
    parser.add_argument(
        "--app", default="docsqa-custom-{lang}", help="with --qa-file: the app, {lang} for the language"
    )
    parser.add_argument(
        "--config", nargs="*", default=[], help="settings overrides dumped besides the settings"
    )
    args = parser.parse_args()
    embedder = get_embedder()
    sets = []
    for dataset, per_lang in (("fastapi", None), ("xquad", args.xquad)):
        _, questions, _ = docs_qa.DATASETS[dataset](["en", "es"])
        for lang in ("en", "es"):
            asked = [q for q in questions if q.lang == lang][:per_lang]
            sets.append((dataset, docs_qa.app_name(dataset, lang), asked))
    for path in args.qa_file:
        _, questions, _ = docs_qa.custom(path, "", ["en", "es"])
        for lang in ("en", "es"):
            sets.append((path.name, args.app.format(lang=lang), [q for q in questions if q.lang == lang]))
    for config in ["", *args.config]:
        with override_settings(**docs_qa.parse_config(config)):
            for dataset, app, asked in sets:
                for q in asked:
                    vector = embedder.embed_query(q.text)
                    for top_k in (5, 20):
                        result = retrieve(
                            q.text, top_k=top_k, trim=True, filters={"app": app}, query_vector=vector
                        )
                        row = {
                            "config": config,
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
