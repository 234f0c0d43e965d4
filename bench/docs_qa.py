"""Retrieval and trimming on labelled questions: recall@1/5/10, MRR, trimmed retention, token cut, latency.

    .venv/bin/python bench/docs_qa.py [--dataset fastapi|xquad] [--langs en es] [--top-k 5]
        [--compare "RETRIEVAL_HYBRID=false" "RETRIEVAL_HYBRID=true"] [--limit N] [--output FILE] [--failures]
    .venv/bin/python bench/docs_qa.py --qa-file my_questions.jsonl --corpus "docs/{lang}" --langs en [--name N]

Ingests each language's documents into its own app (re-runs skip unchanged files), embeds every question once,
then for each configuration (SETTING=value pairs, space-separated; none means today's settings) retrieves the
top 10 untrimmed (recall@1 and @10 and MRR over those), the top `--top-k` untrimmed (its recall: the vector
side's best has a seat there, so it is not always the top 10's head) and trimmed. Retention counts, among the
questions whose untrimmed top-k holds the answer, those whose trimmed context still holds it; the token cut is
over every question. Latency is retrieve() with the question's vector given (search, trimming, token counts),
and the question's own embedding is timed apart.

Datasets (from ../shared/qa):
- fastapi: docs_dev/fastapi_qa.jsonl over corpus/fastapi_en|es. A hit is the README's: the gold text, white
  space collapsed and lower-cased, inside a returned passage treated the same way.
- xquad: xquad_dev/qa_LANG.jsonl over its docs_LANG articles; a hit is the harness's answer_in_context.
- your own (`--qa-file`, `--corpus`): lines like fastapi's (`lang`, `kind`, `question`, `gold`), counted the
  same way, over the folder `--corpus` names for each language.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _django

_django.setup()

import numpy as np  # noqa: E402
from django.conf import settings  # noqa: E402
from django.test.utils import override_settings  # noqa: E402

from biblioteca.embeddings import get_embedder  # noqa: E402
from biblioteca.retrieval import retrieve  # noqa: E402
from oraculo.evaluation.measures import answer_in_context  # noqa: E402

QA = _django.SHARED / "qa"
CORPUS = _django.SHARED / "corpus"


@dataclass(frozen=True)
class Question:
    lang: str
    kind: str
    text: str
    answers: tuple[str, ...]


@dataclass
class Outcome:
    lang: str
    kind: str
    rank: int | None
    baseline_hit: bool
    trimmed_hit: bool
    tokens_before: int
    tokens_after: int
    latency_ms: float
    question: str = ""


def _collapsed(text: str) -> str:
    return " ".join(text.split()).lower()


def readme_hit(answers: tuple[str, ...], texts: list[str]) -> bool:
    return any(_collapsed(a) in _collapsed(t) for a in answers for t in texts)


def harness_hit(answers: tuple[str, ...], texts: list[str]) -> bool:
    return any(answer_in_context(expected=a, texts=texts) for a in answers)


def fastapi(langs: list[str]) -> tuple[dict[str, Path], list[Question], Callable]:
    rows = [
        json.loads(line) for line in (QA / "docs_dev" / "fastapi_qa.jsonl").read_text().splitlines() if line
    ]
    questions = [
        Question(r["lang"], r["kind"], r["question"], (r["gold"],)) for r in rows if r["lang"] in langs
    ]
    return {lang: CORPUS / f"fastapi_{lang}" for lang in langs}, questions, readme_hit


def xquad(langs: list[str]) -> tuple[dict[str, Path], list[Question], Callable]:
    questions = []
    for lang in langs:
        for line in (QA / "xquad_dev" / f"qa_{lang}.jsonl").read_text().splitlines():
            if line.strip():
                row = json.loads(line)
                questions.append(
                    Question(lang, "prose", row["question"], tuple(a["text"] for a in row["answers"]))
                )
    return {lang: QA / "xquad_dev" / f"docs_{lang}" for lang in langs}, questions, harness_hit


DATASETS = {"fastapi": fastapi, "xquad": xquad}


def custom(path: Path, corpus: str, langs: list[str]) -> tuple[dict[str, Path], list[Question], Callable]:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    questions = [
        Question(r["lang"], r.get("kind", "question"), r["question"], (r["gold"],))
        for r in rows
        if r["lang"] in langs
    ]
    return {lang: Path(corpus.format(lang=lang)) for lang in langs}, questions, readme_hit


def app_name(dataset: str, lang: str) -> str:
    """XQuAD shares its apps with bench/calibrate_trim.py and bench/eval_xquad.py, so one ingest serves all."""
    return f"xquad-{lang}" if dataset == "xquad" else f"docsqa-{dataset}-{lang}"


def parse_config(text: str) -> dict[str, object]:
    """`RETRIEVAL_HYBRID=false RETRIEVAL_TRIM_THRESHOLD=0.85 RETRIEVAL_QUESTION_LANGUAGES=en,es` -> settings
    overrides (typed like the settings; a list setting is comma-separated, empty for none)."""
    out: dict[str, object] = {}
    for pair in text.split():
        name, _, raw = pair.partition("=")
        if not hasattr(settings, name):
            raise SystemExit(f"unknown setting {name!r}")
        current = getattr(settings, name)
        low = raw.lower()
        if isinstance(current, list | tuple):
            value = [item.strip() for item in low.split(",") if item.strip()]
        elif low in ("off", "none", ""):
            value = None
        elif isinstance(current, bool):
            value = low in ("1", "true", "yes", "on")
        elif isinstance(current, int):
            value = int(raw)
        elif isinstance(current, float) or current is None:
            value = float(raw)
        else:
            value = raw
        out[name] = value
    return out


def run(
    dataset: str, questions: list[Question], vectors: list[np.ndarray], hit: Callable, top_k: int
) -> list[Outcome]:
    outcomes = []
    for q, vector in zip(questions, vectors):
        filters = {"app": app_name(dataset, q.lang)}
        wide = retrieve(q.text, top_k=10, trim=False, filters=filters, query_vector=vector)
        rank = next((i + 1 for i, c in enumerate(wide.chunks) if hit(q.answers, [c.content])), None)
        # The top k asked for is not always the top 10's first k: the vector side's best has a seat in it.
        untrimmed = retrieve(q.text, top_k=top_k, trim=False, filters=filters, query_vector=vector)
        started = time.perf_counter()
        narrow = retrieve(q.text, top_k=top_k, trim=True, filters=filters, query_vector=vector)
        latency = (time.perf_counter() - started) * 1000
        baseline_hit = hit(q.answers, [c.content for c in untrimmed.chunks])
        outcomes.append(
            Outcome(
                q.lang,
                q.kind,
                rank,
                baseline_hit,
                baseline_hit and hit(q.answers, [c.content for c in narrow.chunks]),
                narrow.tokens_before,
                narrow.tokens_in_context,
                latency,
                q.text,
            )
        )
    return outcomes


def print_failures(outcomes: list[Outcome], top_k: int) -> None:
    """The questions whose answer the untrimmed top k misses (with its rank in the top 10), then those whose
    answer trimming cut: where to look first on your own docs."""
    missed = [o for o in outcomes if not o.baseline_hit]
    lost = [o for o in outcomes if o.baseline_hit and not o.trimmed_hit]
    print(f"\nnot in the top {top_k} ({len(missed)}):")
    for o in missed:
        print(f"- [{o.lang} {o.kind}, rank {o.rank or '-'}] {o.question}")
    print(f"lost to trimming ({len(lost)}):")
    for o in lost:
        print(f"- [{o.lang} {o.kind}] {o.question}")


def summary(outcomes: list[Outcome], top_k: int) -> dict[str, float]:
    n = len(outcomes)
    base = [o for o in outcomes if o.baseline_hit]
    before = sum(o.tokens_before for o in outcomes)
    return {
        "n": n,
        "r@1": 100 * sum(o.rank == 1 for o in outcomes) / n,
        f"r@{top_k}": 100 * len(base) / n,
        "r@10": 100 * sum(o.rank is not None for o in outcomes) / n,
        "mrr": sum(1 / o.rank for o in outcomes if o.rank) / n,
        "retention": 100 * sum(o.trimmed_hit for o in base) / len(base) if base else float("nan"),
        "cut": 100 * (1 - sum(o.tokens_after for o in outcomes) / before) if before else 0.0,
        "p50_ms": statistics.median(o.latency_ms for o in outcomes),
    }


def groups(outcomes: list[Outcome]) -> dict[str, list[Outcome]]:
    out: dict[str, list[Outcome]] = {"all": outcomes}
    for lang in sorted({o.lang for o in outcomes}):
        mine = [o for o in outcomes if o.lang == lang]
        out[lang] = mine
        for kind in sorted({o.kind for o in mine}):
            out[f"{lang} {kind}"] = [o for o in mine if o.kind == kind]
    kinds = sorted({o.kind for o in outcomes})
    if len(kinds) > 1:
        for kind in kinds:
            out[f"all {kind}"] = [o for o in outcomes if o.kind == kind]
    return out


def print_table(name: str, outcomes: list[Outcome], top_k: int) -> dict[str, dict[str, float]]:
    print(f"\n## {name}\n")
    print(f"| group | n | R@1 | R@{top_k} | R@10 | MRR | retention | cut | p50 ms |")
    print("|---|---|---|---|---|---|---|---|---|")
    table = {}
    for group, items in groups(outcomes).items():
        s = summary(items, top_k)
        table[group] = s
        print(
            f"| {group} | {s['n']} | {s['r@1']:.1f}% | {s[f'r@{top_k}']:.1f}% | {s['r@10']:.1f}% | "
            f"{s['mrr']:.3f} | {s['retention']:.1f}% | {s['cut']:.1f}% | {s['p50_ms']:.1f} |"
        )
    return table


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dataset", choices=sorted(DATASETS), default="fastapi")
    parser.add_argument("--langs", nargs="+", default=["en", "es"])
    parser.add_argument("--top-k", type=int, default=5)
    parser.add_argument("--compare", nargs="+", default=[""], metavar="CONFIG")
    parser.add_argument("--limit", type=int, default=None, help="first N questions per language")
    parser.add_argument("--output", type=Path, default=None, help="write every outcome as JSON")
    parser.add_argument(
        "--failures", action="store_true", help="list the questions missed and the answers trimming lost"
    )
    parser.add_argument("--qa-file", type=Path, default=None, help="your own labelled questions (JSONL)")
    parser.add_argument(
        "--corpus", default="", help="with --qa-file: the docs folder, {lang} for the language"
    )
    parser.add_argument(
        "--name",
        default="custom",
        help="with --qa-file: apps docsqa-NAME-LANG; `--name fastapi` reuses the fastapi dataset's ingest",
    )
    args = parser.parse_args()
    sys.stdout.reconfigure(line_buffering=True)

    if args.qa_file:
        args.dataset = args.name
        folders, questions, hit = custom(args.qa_file, args.corpus, args.langs)
    else:
        folders, questions, hit = DATASETS[args.dataset](args.langs)
    if args.limit:
        questions = [q for lang in args.langs for q in [q for q in questions if q.lang == lang][: args.limit]]
    for lang, folder in folders.items():
        report = _django.ingest(
            paths=[folder],
            app=app_name(args.dataset, lang),
            source_type="xquad" if args.dataset == "xquad" else "docs",
        )
        print(
            f"{lang}: {folder} -> app {app_name(args.dataset, lang)}: {report.count('added')} added, "
            f"{report.count('updated')} updated, {report.count('unchanged')} unchanged"
        )
    embedder = get_embedder()
    embedder.embed_query("warm up")
    embed_ms, vectors = [], []
    for q in questions:
        started = time.perf_counter()
        vectors.append(embedder.embed_query(q.text))
        embed_ms.append((time.perf_counter() - started) * 1000)
    print(f"{len(questions)} questions; question embedding p50 {statistics.median(embed_ms):.1f} ms")

    results = {}
    for config in args.compare:
        overrides = parse_config(config)
        with override_settings(**overrides):
            outcomes = run(args.dataset, questions, vectors, hit, args.top_k)
        results[config or "settings"] = {
            "table": print_table(config or "current settings", outcomes, args.top_k),
            "outcomes": [asdict(o) for o in outcomes],
        }
        if args.failures:
            print_failures(outcomes, args.top_k)
    if len(results) > 1:
        print(f"\n## side by side (R@{args.top_k} / MRR / retention / cut / p50 ms)\n")
        names = list(results)
        print("| group | " + " | ".join(names) + " |")
        print("|---|" + "---|" * len(names))
        for group in results[names[0]]["table"]:
            cells = []
            for name in names:
                s = results[name]["table"][group]
                cells.append(
                    f"{s[f'r@{args.top_k}']:.1f} / {s['mrr']:.2f} / {s['retention']:.1f} / "
                    f"{s['cut']:.1f} / {s['p50_ms']:.1f}"
                )
            print(f"| {group} | " + " | ".join(cells) + " |")
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
