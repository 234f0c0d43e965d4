"""What retrieval and trimming cost at query time: p50/p95 of retrieve() with and without trimming, for each
configuration given, and trimming from stored sentence vectors against the seed's way (embedding every retrieved
sentence per query).

Trimming is also timed with the sentence memory off (RETRIEVAL_SENTENCE_MEMORY_MB=0: every passage's sentences
read, as for passages a process has not met), in the same turns, so what remembering saves is measured on one
machine at one moment.

    .venv/bin/python bench/trim.py [--dataset xquad|fastapi] [--questions 60] [--top-k 5 20] [--seed-sample 20]
        [--compare "RETRIEVAL_HYBRID=false RETRIEVAL_PASSAGE_WORDS=0" ""]

Uses bench/docs_qa.py's datasets (ingested on first use) and their real questions, EN and ES. Configurations are
measured in turns, question by question, so a busy machine slows them alike. The first round warms up; what
trimming added in it, each passage met for the first time, is printed apart (run one configuration alone for it).
The later rounds repeat their questions, so the trimmed contexts' token counts come remembered: what counting
one costs the first time (a new question over passages already met) is timed apart and printed with them.

`--first-sight` measures instead what a process already serving pays for passages it has not met: it answers
half the questions (shuffled, both languages), then times the other half twice, the first time their passages
are new to it (their sentences read, their words stemmed), then again.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _django

_django.setup()

import docs_qa  # noqa: E402
from django.conf import settings  # noqa: E402
from django.test.utils import override_settings  # noqa: E402

from biblioteca.embeddings import get_embedder  # noqa: E402
from biblioteca.retrieval import (  # noqa: E402
    resolve_trim_params,
    retrieve,
    trim_retrieved,
    trim_terms,
)
from biblioteca.search import search  # noqa: E402
from biblioteca.text.identifiers import question_identifiers  # noqa: E402
from biblioteca.text.question_words import asks_how, asks_reason  # noqa: E402
from biblioteca.text.sentences import split_sentence_spans  # noqa: E402
from biblioteca.text.tokens import count_tokens  # noqa: E402
from biblioteca.trimming import TrimInput, trim_chunks  # noqa: E402


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(values, q))


def line(name: str, values: list[float]) -> str:
    return f"{name:<46} p50 {pct(values, 50):8.2f} ms   p95 {pct(values, 95):8.2f} ms"


def first_count_ms(trimmed: list) -> float:
    """What counting a trimmed context's tokens costs when its texts were never counted (`count_tokens` past
    its whole-text memory, so nothing remembered is forgotten), the untrimmed passages already counted, as
    retrieve() counts them before trimming; ms."""
    started = time.perf_counter()
    sum(count_tokens.__wrapped__(c.content, encoding=settings.TOKEN_ENCODING) for c in trimmed if c.trimmed)
    return (time.perf_counter() - started) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dataset", choices=sorted(docs_qa.DATASETS), default="xquad")
    parser.add_argument("--questions", type=int, default=60)
    parser.add_argument("--compare", nargs="+", default=[""], metavar="CONFIG")
    parser.add_argument(
        "--rounds", type=int, default=3, help="passes over the questions (the first warms up)"
    )
    parser.add_argument("--top-k", type=int, nargs="+", default=[5, 20])
    parser.add_argument(
        "--seed-sample",
        type=int,
        default=20,
        help="questions trimmed the seed's way too (embedding every sentence: slow); 0 skips it",
    )
    parser.add_argument(
        "--first-sight",
        action="store_true",
        help="time passages met for the first time by a process already serving (instead of the rounds)",
    )
    args = parser.parse_args()
    folders, all_questions, _ = docs_qa.DATASETS[args.dataset](["en", "es"])
    questions = []
    for lang, folder in folders.items():
        app = docs_qa.app_name(args.dataset, lang)
        _django.ingest(paths=[folder], app=app, source_type="xquad" if args.dataset == "xquad" else "docs")
        questions += [(q.text, app) for q in all_questions if q.lang == lang][: args.questions // 2]
    embedder = get_embedder()
    vectors = [embedder.embed_query(q) for q, _ in questions]
    configs = {config or "settings": docs_qa.parse_config(config) for config in args.compare}
    print(f"{len(questions)} questions of {args.dataset}; trimming with {resolve_trim_params()}")
    if args.first_sight:
        first_sight(questions, vectors, top_k=args.top_k[0])
        return

    for top_k in args.top_k:
        timings = {
            name: {
                "retrieve, no trim": [],
                "retrieve, trim": [],
                "trim stage inside retrieve": [],
                "retrieve, trim, sentence memory off": [],
                "counting a new trimmed context's tokens": [],
                "paired": [],
                "first": [],
                "first stage": [],
            }
            for name in configs
        }
        for round_ in range(args.rounds):
            for (question, app), vector in zip(questions, vectors):
                for name, overrides in configs.items():
                    with override_settings(**overrides):
                        filters = {"app": app}
                        base = retrieve(
                            question, top_k=top_k, trim=False, filters=filters, query_vector=vector
                        )
                        trimmed = retrieve(
                            question, top_k=top_k, trim=True, filters=filters, query_vector=vector
                        )
                        with override_settings(RETRIEVAL_SENTENCE_MEMORY_MB=0):
                            unremembered = retrieve(
                                question, top_k=top_k, trim=True, filters=filters, query_vector=vector
                            )
                        counted = first_count_ms(trimmed.chunks)
                    if round_ == 0:
                        timings[name]["first"].append(trimmed.timings_ms["total"] - base.timings_ms["total"])
                        timings[name]["first stage"].append(trimmed.timings_ms["trim"])
                        continue
                    timings[name]["retrieve, no trim"].append(base.timings_ms["total"])
                    timings[name]["retrieve, trim"].append(trimmed.timings_ms["total"])
                    timings[name]["trim stage inside retrieve"].append(trimmed.timings_ms["trim"])
                    timings[name]["retrieve, trim, sentence memory off"].append(
                        unremembered.timings_ms["total"]
                    )
                    timings[name]["counting a new trimmed context's tokens"].append(counted)
                    timings[name]["paired"].append(trimmed.timings_ms["total"] - base.timings_ms["total"])
        for name, series in timings.items():
            print(f"\n{name}: top_k={top_k} (query embedding excluded: vectors given)")
            paired = series.pop("paired")
            first, first_stage = series.pop("first"), series.pop("first stage")
            for label, values in series.items():
                print(line(label, values))
            added = statistics.median(series["retrieve, trim"]) - statistics.median(
                series["retrieve, no trim"]
            )
            print(f"{'trimming adds (difference of the p50s)':<46} {added:8.2f} ms")
            # Each question's two retrievals ran back to back: the median of their differences shrugs off load
            # that comes and goes between turns.
            print(f"{'  median of the per-question differences':<46} {statistics.median(paired):8.2f} ms")
            unremembered = statistics.median(
                series["retrieve, trim, sentence memory off"]
            ) - statistics.median(series["retrieve, no trim"])
            print(f"{'  with the sentence memory off, it adds':<46} {unremembered:8.2f} ms")
            # retrieve() above found each trimmed context's count remembered; a new question counts its own.
            new = statistics.median(paired) + statistics.median(
                series["counting a new trimmed context's tokens"]
            )
            print(f"{'  a new question (its context counted): about':<46} {new:8.2f} ms")
            # The first round meets each question's passages for the first time (their units' stems, shapes and
            # layout are worked out then), as a new question over a large library does; an earlier
            # configuration in --compare has already seen the same units.
            print(
                f"{'first time (round 1): per-question median':<46} {statistics.median(first):8.2f} ms"
                f"   (trim stage p50 {statistics.median(first_stage):.2f} ms)"
            )
    if args.seed_sample:
        seed_comparison(questions, vectors, sample=args.seed_sample)


def first_sight(questions: list[tuple[str, str]], vectors: list[np.ndarray], *, top_k: int) -> None:
    pairs = list(zip(questions, vectors))
    random.Random(7).shuffle(pairs)
    served, new = pairs[: len(pairs) // 2], pairs[len(pairs) // 2 :]

    def ask(batch: list) -> tuple[list[float], list[float]]:
        stage, added = [], []
        for (question, app), vector in batch:
            filters = {"app": app}
            base = retrieve(question, top_k=top_k, trim=False, filters=filters, query_vector=vector)
            trimmed = retrieve(question, top_k=top_k, trim=True, filters=filters, query_vector=vector)
            stage.append(trimmed.timings_ms["trim"])
            added.append(trimmed.timings_ms["total"] - base.timings_ms["total"])
        return stage, added

    ask(served)
    print(
        f"\ntop_k={top_k}: {len(served)} questions served first, then {len(new)} others (query embedding excluded)"
    )
    for label in ("their passages met for the first time", "the same questions again"):
        stage, added = ask(new)
        print(f"{label}:")
        print(f"  {'trim stage':<44} p50 {pct(stage, 50):8.2f} ms   mean {statistics.mean(stage):8.2f} ms")
        print(
            f"  {'trimming adds, per-question':<44} p50 {pct(added, 50):8.2f} ms   mean {statistics.mean(added):8.2f} ms"
        )


def seed_comparison(questions: list[tuple[str, str]], vectors: list[np.ndarray], *, sample: int) -> None:
    embedder = get_embedder()
    params = resolve_trim_params()
    stored, at_query_time = [], []
    for (question, app), vector in list(zip(questions, vectors))[:sample]:
        chunks = search(query_vector=vector, top_k=5, filters={"app": app}, query_text=question, hybrid=True)
        started = time.perf_counter()
        trim_retrieved(
            chunks,
            query_vector=vector,
            params=params,
            query_terms=trim_terms(question, params=params, filters={"app": app}, chunks=chunks),
            identifiers=question_identifiers(question),
            asks_reason=asks_reason(question),
            asks_how=asks_how(question),
        )
        stored.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        spans = [split_sentence_spans(c.original_text) for c in chunks]
        texts = [c.original_text[s:e] for c, sp in zip(chunks, spans) for s, e in sp]
        sentence_vectors = embedder.embed_documents(texts)
        inputs, cursor = [], 0
        for c, sp in zip(chunks, spans):
            inputs.append(TrimInput(c.original_text, sp, sentence_vectors[cursor : cursor + len(sp)]))
            cursor += len(sp)
        trim_chunks(inputs, vector, params)
        at_query_time.append((time.perf_counter() - started) * 1000)
    print(f"\ntrimming top-5 of {len(stored)} questions")
    print(line("stored sentence vectors (ours)", stored))
    print(line("embedding the sentences per query (the seed)", at_query_time))
    print(f"ratio of the p50s: {statistics.median(at_query_time) / statistics.median(stored):.0f}x faster")


if __name__ == "__main__":
    main()
