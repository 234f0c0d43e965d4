"""Calibrate sentence trimming on XQuAD (EN and ES): answer retention against token reduction.

    .venv/bin/python bench/calibrate_trim.py [--qa ../shared/qa/xquad_dev] [--top-k 5] [--limit N]

Ingests the articles (once; re-runs are free), retrieves top_k chunks per question ONCE, then replays the
trimmer over a grid of settings on the stored sentence vectors. A question counts when its untrimmed context
holds a gold answer; it is retained when the trimmed context still holds one. Prints, per strategy, the curve
and the best token cut that keeps >= 99% retention in both languages with one setting.
"""
from __future__ import annotations

import argparse
import json
import pickle
import sys
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _django  # noqa: E402

_django.setup()

from django.conf import settings  # noqa: E402

from biblioteca.embeddings import get_embedder  # noqa: E402
from biblioteca.ingest import directory_ingest  # noqa: E402
from biblioteca.retrieval import RetrievedChunk, search  # noqa: E402
from biblioteca.selectors import sentences_for_chunks  # noqa: E402
from biblioteca.text.tokens import count_tokens  # noqa: E402
from biblioteca.trimming import TrimInput, TrimParams, trim_chunks  # noqa: E402
from oraculo.evaluation import answer_in_context  # noqa: E402


def holds_answer(answers: list[str], texts: list[str]) -> bool:
    """The harness's own test (oraculo.evaluation.answer_in_context), so both measure the same thing."""
    return any(answer_in_context(expected=a, texts=texts) for a in answers)


@lru_cache(maxsize=None)
def tokens(text: str) -> int:
    return count_tokens(text, encoding=settings.TOKEN_ENCODING)


@dataclass
class Case:
    question: str
    answers: list[str]
    chunks: list[RetrievedChunk]
    inputs: list[TrimInput]
    query_vector: np.ndarray
    baseline_tokens: int
    baseline_hit: bool
    doc_line_tokens: list[int]
    sentence_tokens: list[np.ndarray]


def load_cases(qa_dir: Path, lang: str, top_k: int, limit: int | None) -> list[Case]:
    app = f"xquad-{lang}"
    directory_ingest(paths=[qa_dir / f"docs_{lang}"], app=app, source_type="xquad")
    rows = [json.loads(line) for line in (qa_dir / f"qa_{lang}.jsonl").read_text().splitlines() if line.strip()]
    rows = rows[:limit] if limit else rows
    embedder = get_embedder()
    cases = []
    for row in rows:
        vector = embedder.embed_query(row["question"])
        chunks = search(query_vector=vector, top_k=top_k, filters={"app": app})
        stored = sentences_for_chunks([c.id for c in chunks])
        inputs = [TrimInput(c.original_text, stored[c.id].spans, stored[c.id].vectors) for c in chunks]
        answers = [a["text"] for a in row["answers"]]
        cases.append(Case(row["question"], answers, chunks, inputs, vector,
                          sum(tokens(c.content) for c in chunks), holds_answer(answers, [c.text for c in chunks]),
                          [tokens(c.doc_line + "\n") for c in chunks],
                          [np.array([tokens(i.text[s:e]) for s, e in i.spans]) for i in inputs]))
    return cases


ELISION_TOKENS = 3


def evaluate(cases: list[Case], params: TrimParams) -> tuple[float, float]:
    """(retention %, token reduction %) of one setting over the cases.

    A trimmed chunk's tokens are its doc line's plus its kept sentences' plus three per " [...] ": counting
    every trimmed text exactly, for hundreds of settings, would take hours in pure Python; the product counts
    exactly (retrieve() reports tokens with o200k_base), and bench/eval runs confirm the figures.
    """
    kept = hits = base_tokens = trim_tokens = 0
    for case in cases:
        outs = trim_chunks(case.inputs, case.query_vector, params)
        base_tokens += case.baseline_tokens
        for i, out in enumerate(outs):
            if out.dropped:
                continue
            if len(out.kept) == len(case.inputs[i].spans):
                trim_tokens += tokens(case.chunks[i].content)
                continue
            gaps = sum(1 for a, b in zip(out.kept, out.kept[1:]) if b != a + 1)
            trim_tokens += (case.doc_line_tokens[i] + int(case.sentence_tokens[i][list(out.kept)].sum())
                            + ELISION_TOKENS * gaps)
        if case.baseline_hit:
            hits += 1
            kept += holds_answer(case.answers, [o.text for o in outs if not o.dropped])
    return 100.0 * kept / max(hits, 1), 100.0 * (1 - trim_tokens / max(base_tokens, 1))


def exact_reduction(cases: list[Case], params: TrimParams) -> float:
    """The token cut of one setting with every trimmed context counted exactly with o200k_base."""
    base = trimmed = 0
    for case in cases:
        outs = trim_chunks(case.inputs, case.query_vector, params)
        base += case.baseline_tokens
        trimmed += sum(tokens(f"{c.doc_line}\n{o.text}") for c, o in zip(case.chunks, outs) if not o.dropped)
    return 100.0 * (1 - trimmed / max(base, 1))


def grid() -> dict[str, list[TrimParams]]:
    thresholds = [round(x, 3) for x in np.arange(0.76, 0.921, 0.01)]
    return {
        "seed (threshold, window)": [TrimParams(threshold=t, window=w) for t in thresholds for w in (0, 1, 2)],
        "seed + drop hopeless chunks": [TrimParams(threshold=t, window=w, drop_margin=d)
                                        for t in thresholds for w in (0, 1) for d in (0.02, 0.04, 0.06)],
        "relative to the query's best + drop": [
            TrimParams(threshold=t, window=w, relative_margin=m, drop_margin=d)
            for t in (0.84, 0.86, 0.88, 0.90, 1.0) for w in (1, 2) for m in (0.04, 0.05, 0.06, 0.07, 0.08)
            for d in (0.03, 0.04, 0.05, 0.06, 0.08)],
    }


def cached_cases(qa_dir: Path, top_k: int, limit: int | None) -> dict[str, list[Case]]:
    """Retrieval for ~1,250 questions takes minutes on a CPU: keep it in var/ between runs."""
    path = _django.ROOT / "var" / f"calibration-cases-k{top_k}-{limit or 'all'}.pickle"
    if path.exists():
        return pickle.loads(path.read_bytes())
    cases = {lang: load_cases(qa_dir, lang, top_k, limit) for lang in ("en", "es")}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(pickle.dumps(cases))
    return cases


def print_curves(cases: dict[str, list[Case]]) -> None:
    """The two curves docs/en/calibration.md shows, as markdown tables: the seed's threshold at window 1, and
    the default rules (window 1, drop margin 0.03, absolute threshold 0.90) as the relative margin moves."""
    curves = {
        "seed rules, window 1: threshold": [(t, TrimParams(threshold=t, window=1))
                                            for t in (0.76, 0.78, 0.80, 0.81, 0.82, 0.84, 0.86)],
        "default rules: relative margin": [(m, TrimParams(threshold=0.90, window=1, relative_margin=m,
                                                          drop_margin=0.03))
                                           for m in (0.03, 0.04, 0.05, 0.06, 0.07, 0.08, 0.10, 0.12)],
    }
    for name, points in curves.items():
        print(f"\n| {name} | EN retention | EN token cut | ES retention | ES token cut |\n|---|---|---|---|---|")
        for x, params in points:
            en, es = evaluate(cases["en"], params), evaluate(cases["es"], params)
            print(f"| {x:.2f} | {en[0]:.1f}% | {en[1]:.1f}% | {es[0]:.1f}% | {es[1]:.1f}% |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--qa", type=Path, default=_django.SHARED / "qa" / "xquad_dev")
    parser.add_argument("--top-k", type=int, default=5)
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--floor", type=float, default=99.0)
    parser.add_argument("--output", type=Path, default=_django.ROOT / "var" / "calibration.json")
    args = parser.parse_args()

    started = time.perf_counter()
    sys.stdout.reconfigure(line_buffering=True)
    cases = cached_cases(args.qa, args.top_k, args.limit)
    for lang, cs in cases.items():
        print(f"{lang}: {len(cs)} questions, gold answer in the untrimmed top-{args.top_k} for "
              f"{sum(c.baseline_hit for c in cs)} ({100 * sum(c.baseline_hit for c in cs) / len(cs):.1f}%)")
    print(f"retrieval done in {time.perf_counter() - started:.0f}s\n")

    print_curves(cases)
    report = {}
    for family, settings_list in grid().items():
        rows = []
        for params in settings_list:
            en, es = evaluate(cases["en"], params), evaluate(cases["es"], params)
            rows.append({"params": params.__dict__, "en": en, "es": es})
        ok = [r for r in rows if min(r["en"][0], r["es"][0]) >= args.floor]
        best = max(ok, key=lambda r: min(r["en"][1], r["es"][1]), default=None)
        report[family] = {"rows": rows, "best": best}
        print(f"== {family}")
        print(f"{'threshold':>9} {'win':>3} {'rel':>5} {'drop':>5} | {'EN keep':>7} {'EN cut':>6} | "
              f"{'ES keep':>7} {'ES cut':>6}")
        for r in sorted(rows, key=lambda r: -min(r["en"][1], r["es"][1])):
            p = r["params"]
            if min(r["en"][0], r["es"][0]) < args.floor - 3:
                continue
            mark = " <= best" if r is best else ""
            print(f"{p['threshold']:>9.2f} {p['window']:>3} {p['relative_margin'] or '-':>5} "
                  f"{p['drop_margin'] or '-':>5} | {r['en'][0]:>6.1f}% {r['en'][1]:>5.1f}% | "
                  f"{r['es'][0]:>6.1f}% {r['es'][1]:>5.1f}%{mark}")
        print()
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=1))
    for family, data in report.items():
        best = data["best"]
        if best:
            params = TrimParams(**best["params"])
            exact = {lang: exact_reduction(cases[lang], params) for lang in ("en", "es")}
            print(f"best at >= {args.floor}% in both languages, {family}: {best['params']} -> EN keep "
                  f"{best['en'][0]:.1f}% cut {best['en'][1]:.1f}% (exact {exact['en']:.1f}%), ES keep "
                  f"{best['es'][0]:.1f}% cut {best['es'][1]:.1f}% (exact {exact['es']:.1f}%)")
        else:
            print(f"{family}: no setting reaches {args.floor}% in both languages")
    print(f"\n{time.perf_counter() - started:.0f}s; full curve in {args.output}")


if __name__ == "__main__":
    main()
