"""What trimming costs at query time: p50/p95 of retrieve() with and without it, and trimming from stored
sentence vectors against the seed's way (embedding every retrieved sentence per query).

    .venv/bin/python bench/trim.py [--qa ../shared/qa/xquad_dev] [--questions 60]

Uses the XQuAD articles (ingested on first use) and their real questions, EN and ES alternating.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _django  # noqa: E402

_django.setup()

from biblioteca.embeddings import get_embedder  # noqa: E402
from biblioteca.ingest import directory_ingest  # noqa: E402
from biblioteca.retrieval import resolve_trim_params, retrieve, search, trim_retrieved  # noqa: E402
from biblioteca.text.sentences import split_sentence_spans  # noqa: E402
from biblioteca.trimming import TrimInput, trim_chunks  # noqa: E402


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(values, q))


def line(name: str, values: list[float]) -> str:
    return f"{name:<46} p50 {pct(values, 50):8.2f} ms   p95 {pct(values, 95):8.2f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--qa", type=Path, default=_django.SHARED / "qa" / "xquad_dev")
    parser.add_argument("--questions", type=int, default=60)
    args = parser.parse_args()
    questions = []
    for lang in ("en", "es"):
        directory_ingest(paths=[args.qa / f"docs_{lang}"], app=f"xquad-{lang}", source_type="xquad")
        rows = [json.loads(x) for x in (args.qa / f"qa_{lang}.jsonl").read_text().splitlines() if x.strip()]
        questions += [(r["question"], f"xquad-{lang}") for r in rows[: args.questions // 2]]
    embedder = get_embedder()
    vectors = [embedder.embed_query(q) for q, _ in questions]
    params = resolve_trim_params()
    print(f"{len(questions)} questions; trimming with {params}")

    for top_k in (5, 20):
        timings: dict[str, list[float]] = {"retrieve, no trim": [], "retrieve, trim": [],
                                           "trim stage inside retrieve": []}
        for (question, app), vector in zip(questions, vectors):
            filters = {"app": app}
            base = retrieve(question, top_k=top_k, trim=False, filters=filters, query_vector=vector)
            trimmed = retrieve(question, top_k=top_k, trim=True, filters=filters, query_vector=vector)
            timings["retrieve, no trim"].append(base.timings_ms["total"])
            timings["retrieve, trim"].append(trimmed.timings_ms["total"])
            timings["trim stage inside retrieve"].append(trimmed.timings_ms["trim"])
        print(f"\ntop_k={top_k} (query embedding excluded: vectors given)")
        for name, values in timings.items():
            print(line(name, values))
        added = statistics.median(timings["retrieve, trim"]) - statistics.median(timings["retrieve, no trim"])
        print(f"{'trimming adds (difference of the p50s)':<46} {added:8.2f} ms")

    stored, at_query_time = [], []
    sample = list(zip(questions, vectors))[:20]
    for (question, app), vector in sample:
        chunks = search(query_vector=vector, top_k=5, filters={"app": app})
        started = time.perf_counter()
        trim_retrieved(chunks, query_vector=vector, params=params)
        stored.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        spans = [split_sentence_spans(c.original_text) for c in chunks]
        texts = [c.original_text[s:e] for c, sp in zip(chunks, spans) for s, e in sp]
        sentence_vectors = embedder.embed_documents(texts)
        inputs, cursor = [], 0
        for c, sp in zip(chunks, spans):
            inputs.append(TrimInput(c.original_text, sp, sentence_vectors[cursor:cursor + len(sp)]))
            cursor += len(sp)
        trim_chunks(inputs, vector, params)
        at_query_time.append((time.perf_counter() - started) * 1000)
    print(f"\ntrimming top-5 of {len(sample)} questions")
    print(line("stored sentence vectors (ours)", stored))
    print(line("embedding the sentences per query (the seed)", at_query_time))
    print(f"ratio of the p50s: {statistics.median(at_query_time) / statistics.median(stored):.0f}x faster")


if __name__ == "__main__":
    main()
