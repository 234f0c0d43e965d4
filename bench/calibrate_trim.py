"""Calibrate sentence trimming on prose and on documentation at once: answer retention against token cut.

    .venv/bin/python bench/calibrate_trim.py [--datasets xquad fastapi] [--top-k 5] [--limit N] [--fresh]

For each dataset of bench/docs_qa.py and each language, ingests the documents (re-runs are free), retrieves the
top_k chunks per question ONCE with the configured retrieval (RETRIEVAL_HYBRID), then replays the trimmer over a
grid of settings on the stored sentence vectors. A question counts when its untrimmed context holds a gold
answer (each dataset's own hit test); it is retained when the trimmed context still holds one. Prints the curves
docs/en/calibration.md shows and, per family of rules, the setting with the largest worst-case token cut that
keeps the floors (`--floor` on prose, `--docs-floor` on documentation) in every dataset and language.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import itertools
import json
import pickle
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _django

_django.setup()

import docs_qa  # noqa: E402
from django.conf import settings  # noqa: E402

from biblioteca.retrieval import (  # noqa: E402
    continues_first,
    question_trim_params,
    resolve_trim_params,
    retrieval_prepare,
    stored_trim_inputs,
)
from biblioteca.search import RetrievedChunk  # noqa: E402
from biblioteca.selectors import query_term_weights  # noqa: E402
from biblioteca.text.identifiers import question_identifiers  # noqa: E402
from biblioteca.text.question_words import asks_how, asks_reason  # noqa: E402
from biblioteca.text.tokens import count_tokens  # noqa: E402
from biblioteca.trimming import TrimInput, TrimOutput, TrimParams, trim_chunks  # noqa: E402


@cache
def tokens(text: str) -> int:
    return count_tokens(text, encoding=settings.TOKEN_ENCODING)


@dataclass
class Case:
    question: str
    answers: tuple[str, ...]
    chunks: list[RetrievedChunk]
    inputs: list[TrimInput]
    query_vector: np.ndarray
    query_terms: dict[str, float]
    baseline_tokens: int
    baseline_hit: bool
    doc_line_tokens: list[int]
    sentence_tokens: list[np.ndarray]
    languages: tuple[str, str] | None = None  # a question in another language than the docs: theirs


def load_cases(
    dataset: str, lang: str, top_k: int, limit: int | None, loader: Callable | None = None
) -> tuple[list[Case], Callable]:
    folders, questions, hit = (loader or docs_qa.DATASETS[dataset])([lang])
    app = docs_qa.app_name(dataset, lang)
    _django.ingest(paths=[folders[lang]], app=app, source_type="xquad" if dataset == "xquad" else "docs")
    questions = questions[:limit] if limit else questions
    cases = []
    for q in questions:
        prepared = retrieval_prepare(
            q.text, top_k=top_k, filters={"app": app}, hybrid=settings.RETRIEVAL_HYBRID
        )
        chunks = prepared.chunks
        inputs = stored_trim_inputs(chunks, query_vector=prepared.query_vector)
        cases.append(
            Case(
                q.text,
                q.answers,
                chunks,
                inputs,
                prepared.query_vector,
                query_term_weights(text=q.text, app=app),
                prepared.tokens_before,
                hit(q.answers, [c.content for c in chunks]),
                [tokens(c.doc_line + "\n") for c in chunks],
                [np.array([tokens(i.text[s:e]) for s, e in i.spans]) for i in inputs],
                prepared.languages,
            )
        )
    return cases, hit


ELISION_TOKENS = 3


def trim_case(case: Case, params: TrimParams) -> list[TrimOutput]:
    """One question's passages trimmed with `params`, as retrieve() trims them."""
    return trim_chunks(
        case.inputs,
        case.query_vector,
        question_trim_params(params, languages=case.languages),
        case.query_terms,
        identifiers=question_identifiers(case.question),
        asks_reason=asks_reason(case.question),
        asks_how=asks_how(case.question),
        search_scores=[c.score for c in case.chunks],
        continues_first=continues_first(case.chunks),
    )


def evaluate(cases: list[Case], hit: Callable, params: TrimParams) -> tuple[float, float]:
    """(retention %, token reduction %) of one setting over the cases.

    A trimmed chunk's tokens are its doc line's plus its kept sentences' plus three per " [...] ": counting
    every trimmed text exactly, for hundreds of settings, would take long in pure Python; the product counts
    exactly (retrieve() reports tokens with o200k_base), and `exact_reduction` confirms the chosen rows.
    """
    kept = hits = base_tokens = trim_tokens = 0
    for case in cases:
        outs = trim_case(case, params)
        base_tokens += case.baseline_tokens
        for i, out in enumerate(outs):
            if out.dropped:
                continue
            if len(out.kept) == len(case.inputs[i].spans):
                trim_tokens += tokens(case.chunks[i].content)
                continue
            gaps = sum(1 for a, b in zip(out.kept, out.kept[1:]) if b != a + 1)
            trim_tokens += (
                case.doc_line_tokens[i]
                + int(case.sentence_tokens[i][list(out.kept)].sum())
                + ELISION_TOKENS * gaps
            )
        if case.baseline_hit:
            hits += 1
            kept += hit(case.answers, [o.text for o in outs if not o.dropped])
    return 100.0 * kept / max(hits, 1), 100.0 * (1 - trim_tokens / max(base_tokens, 1))


def exact_reduction(cases: list[Case], params: TrimParams) -> float:
    """The token cut of one setting with every trimmed context counted exactly with o200k_base."""
    base = trimmed = 0
    for case in cases:
        outs = trim_case(case, params)
        base += case.baseline_tokens
        trimmed += sum(tokens(f"{c.doc_line}\n{o.text}") for c, o in zip(case.chunks, outs) if not o.dropped)
    return 100.0 * (1 - trimmed / max(base, 1))


def grid() -> dict[str, list[TrimParams]]:
    def product(**axes):
        names = list(axes)
        return [TrimParams(**dict(zip(names, values))) for values in itertools.product(*axes.values())]

    return {
        "relative margin + drop (no words)": product(
            threshold=[0.90],
            window=[1, 2],
            relative_margin=[0.05, 0.07, 0.10, 0.12, 0.15, 0.20],
            drop_margin=[0.02, 0.025, 0.03],
        ),
        "+ lexical evidence and companions": product(
            threshold=[0.90],
            window=[1, 2],
            relative_margin=[0.07, 0.10, 0.12, 0.15, 0.17, 0.20, 0.25],
            drop_margin=[0.02, 0.025, 0.03],
            lexical_weight=[0.1, 0.15, 0.2, 0.25, 0.3],
            companions=[True],
        ),
        "+ supporting passages cut harder": product(
            threshold=[0.90],
            window=[1],
            relative_margin=[0.15, 0.17, 0.20],
            drop_margin=[0.015, 0.02, 0.025],
            drop_score_margin=[None, 0.06, 0.08, 0.10],
            passage_margin=[None, 0.06, 0.08, 0.09, 0.10, 0.12],
            lexical_weight=[0.2],
            companions=[True],
            trim_markup=[True],
        ),
        "+ margins and windows from each passage's own spread (the defaults' family)": product(
            threshold=[0.90],
            window=[1],
            relative_margin=[0.17, 0.20],
            drop_margin=[0.02, 0.025],
            passage_margin=[0.09],
            passage_spread=[None, 0.5, 0.7, 0.9, 1.1],
            window_spread=[None, 0.4, 0.5, 0.6, 0.8],
            lexical_weight=[0.2],
            companions=[True],
            trim_markup=[True],
        ),
        "+ the sections before each passage's match cut harder": product(
            threshold=[0.90],
            window=[1],
            relative_margin=[0.15, 0.17, 0.20],
            drop_margin=[0.02, 0.025],
            passage_margin=[0.09],
            passage_spread=[0.6, 0.7, 0.8, 0.9],
            window_spread=[0.4, 0.5, 0.6],
            lexical_weight=[0.2],
            companions=[True],
            trim_markup=[True],
            earlier_sections=[True],
        ),
        "+ spread-adaptive margins": product(
            threshold=[0.90],
            window=[1],
            relative_margin=[0.10, 0.15, 0.17, 0.20, 0.25],
            drop_margin=[0.02, 0.03, 0.04],
            lexical_weight=[0.1, 0.2, 0.3],
            companions=[True],
            spread_factor=[0.5, 1.0, 2.0],
        ),
    }


def print_curves(sets: dict[str, tuple[list[Case], Callable]]) -> None:
    """The curves docs/en/calibration.md shows, as markdown tables: each default moved alone."""
    base = resolve_trim_params()
    curves = {
        "relative margin": [("relative_margin", m) for m in (0.10, 0.13, 0.15, 0.17, 0.20, 0.22, 0.25)],
        "lexical weight": [("lexical_weight", w) for w in (None, 0.1, 0.15, 0.2, 0.25, 0.3)],
        "drop margin": [("drop_margin", d) for d in (0.015, 0.02, 0.0225, 0.025, 0.03, 0.04)],
        "drop neighbour margin": [
            ("drop_neighbour_margin", d) for d in (None, 0.025, 0.03, 0.0375, 0.045, 0.06)
        ],
        "drop score margin": [("drop_score_margin", d) for d in (None, 0.06, 0.07, 0.08, 0.10, 0.12)],
        "drop search margin": [("drop_search_margin", d) for d in (None, 0.0, 0.005, 0.01, 0.02)],
        "drop best line margin": [("drop_best_line_margin", d) for d in (None, 0.025, 0.03, 0.035, 0.04)],
        "drop best line search margin": [
            ("drop_best_line_search_margin", d) for d in (None, 0.015, 0.02, 0.03, 0.04)
        ],
        "passage margin": [("passage_margin", m) for m in (None, 0.06, 0.08, 0.09, 0.10, 0.12)],
        "passage spread": [("passage_spread", f) for f in (None, 0.4, 0.5, 0.7, 0.8, 0.9, 1.0, 1.2)],
        "window spread": [("window_spread", f) for f in (None, 0.3, 0.4, 0.5, 0.55, 0.6, 0.7, 0.8, 1.0)],
        "earlier sections": [("earlier_sections", on) for on in (False, True)],
    }
    for title, points in curves.items():
        print(f"\n| {title} | " + " | ".join(f"{name} retention / cut" for name in sets) + " |")
        print("|---|" + "---|" * len(sets))
        for field, value in points:
            params = TrimParams(**{**asdict(base), field: value})
            cells = [evaluate(cases, hit, params) for cases, hit in sets.values()]
            label = "off" if value is None or value is False else "on" if value is True else f"{value:g}"
            print(f"| {label} | " + " | ".join(f"{k:.1f}% / {c:.1f}%" for k, c in cells) + " |")


# Moves when the kept cases lack something trimming now reads (2: each passage's place in its document; 3: its
# headings' cosines), so an older file in var/ is retrieved afresh rather than trimmed without it.
CASES_REVISION = 3


class CaseUnpickler(pickle.Unpickler):
    """Reads the cases whichever script wrote them (run as a script, this module is `__main__`)."""

    def find_class(self, module: str, name: str):
        return Case if name == "Case" else super().find_class(module, name)


def cached_cases(
    datasets: list[str],
    top_k: int,
    limit: int | None,
    fresh: bool,
    loaders: dict[str, Callable] | None = None,
    langs: tuple[str, ...] = ("en", "es"),
    variant: str = "",
) -> dict[str, tuple[list[Case], Callable]]:
    """Retrieval for ~1,350 questions takes minutes on a CPU: keep it in var/ between runs (`variant` names
    which questions, when a dataset's name does not)."""
    mode = f"{'hybrid' if settings.RETRIEVAL_HYBRID else 'vector'}-p{settings.RETRIEVAL_PASSAGE_WORDS}-r{CASES_REVISION}"
    loaders = loaders or docs_qa.DATASETS
    out = {}
    for dataset in datasets:
        for lang in langs:
            path = (
                _django.ROOT
                / "var"
                / f"calibration-{dataset}{variant and '-' + variant}-{lang}-k{top_k}-{mode}-{limit or 'all'}.pickle"
            )
            if path.exists() and not fresh:
                cases = CaseUnpickler(io.BytesIO(path.read_bytes())).load()
                hit = loaders[dataset]([lang])[2]
            else:
                cases, hit = load_cases(dataset, lang, top_k, limit, loaders[dataset])
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(pickle.dumps(cases))
            out[f"{dataset}-{lang}"] = (cases, hit)
    return out


def custom_cases(
    qa_files: list[Path], corpus: str, *, top_k: int, limit: int | None, fresh: bool, langs: tuple[str, ...]
) -> dict[str, tuple[list[Case], Callable]]:
    """`cached_cases` for your own labelled questions over `corpus`. Each corpus gets its own apps and each set of
    questions its own cases in var/: two held-out sets run one after the other never share either."""

    def custom(langs: list[str]) -> tuple[dict[str, Path], list, Callable]:
        found = [docs_qa.custom(path, corpus, langs) for path in qa_files]
        return found[0][0], [q for f in found for q in f[1]], found[0][2]

    name = f"custom-{_digest(corpus.encode())}"
    questions = _digest(b"".join(path.read_bytes() for path in qa_files))
    cases = cached_cases([name], top_k, limit, fresh, {name: custom}, langs, variant=questions)
    return {key.replace(name, "custom"): value for key, value in cases.items()}


def _digest(data: bytes) -> str:
    return hashlib.sha1(data).hexdigest()[:8]


def floor_for(name: str, args: argparse.Namespace) -> float:
    return args.floor if name.startswith("xquad") else args.docs_floor


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--datasets", nargs="+", default=["xquad", "fastapi"], choices=sorted(docs_qa.DATASETS)
    )
    parser.add_argument("--top-k", type=int, default=5)
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--floor", type=float, default=99.0, help="retention floor on prose (XQuAD)")
    parser.add_argument("--docs-floor", type=float, default=98.0, help="retention floor on documentation")
    parser.add_argument("--fresh", action="store_true", help="retrieve again instead of reading var/")
    parser.add_argument("--curves-only", action="store_true", help="the defaults and their curves, no grid")
    parser.add_argument("--output", type=Path, default=_django.ROOT / "var" / "calibration.json")
    parser.add_argument(
        "--qa-file",
        type=Path,
        nargs="+",
        default=[],
        help="held-out questions (bench/docs_qa.py's format): shown next to the others, never calibrated on",
    )
    parser.add_argument(
        "--corpus", default=None, help="with --qa-file: the docs folder, {lang} for the language"
    )
    parser.add_argument("--langs", nargs="+", default=["en", "es"], help="with --qa-file: its languages")
    args = parser.parse_args()

    started = time.perf_counter()
    sys.stdout.reconfigure(line_buffering=True)
    sets = cached_cases(args.datasets, args.top_k, args.limit, args.fresh)
    held_out: set[str] = set()
    if args.qa_file:
        if not args.corpus:
            parser.error("--qa-file needs --corpus")

        extra = custom_cases(
            args.qa_file,
            args.corpus,
            top_k=args.top_k,
            limit=args.limit,
            fresh=args.fresh,
            langs=tuple(args.langs),
        )
        held_out = set(extra)
        sets.update(extra)
    chosen = {name: value for name, value in sets.items() if name not in held_out}
    for name, (cases, _) in sets.items():
        base = sum(c.baseline_hit for c in cases)
        print(
            f"{name}: {len(cases)} questions, answer in the untrimmed top-{args.top_k} for {base} "
            f"({100 * base / len(cases):.1f}%)"
        )
    print(f"retrieval done in {time.perf_counter() - started:.0f}s")

    defaults = resolve_trim_params()
    print(f"\ncurrent settings {asdict(defaults)}")
    for name, (cases, hit) in sets.items():
        keep, cut = evaluate(cases, hit, defaults)
        print(
            f"  {name}: retention {keep:.1f}%, cut {cut:.1f}% (exact {exact_reduction(cases, defaults):.1f}%)"
        )

    print_curves(sets)
    if args.curves_only:
        return
    report = {}
    for family, settings_list in grid().items():
        rows = []
        for params in settings_list:
            rows.append(
                {
                    "params": asdict(params),
                    **{name: evaluate(cases, hit, params) for name, (cases, hit) in sets.items()},
                }
            )
        ok = [r for r in rows if all(r[name][0] >= floor_for(name, args) for name in chosen)]
        best = max(ok, key=lambda r: min(r[name][1] for name in chosen), default=None)
        report[family] = {"rows": rows, "best": best}
        print(f"\n== {family}: {len(rows)} settings, {len(ok)} keep the floors")
        for r in sorted(ok, key=lambda r: -min(r[name][1] for name in chosen))[:8]:
            cells = " | ".join(f"{name} {r[name][0]:.1f}/{r[name][1]:.1f}" for name in sets)
            print(f"  {json.dumps({k: v for k, v in r['params'].items() if v is not None})}: {cells}")
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=1))
    print()
    for family, data in report.items():
        best = data["best"]
        if not best:
            print(f"{family}: no setting keeps the floors everywhere")
            continue
        params = TrimParams(**best["params"])
        cells = ", ".join(
            f"{name} keep {best[name][0]:.1f}% cut {best[name][1]:.1f}% "
            f"(exact {exact_reduction(sets[name][0], params):.1f}%)"
            for name in sets
        )
        print(f"best, {family}: {best['params']}\n    {cells}")
    print(f"\n{time.perf_counter() - started:.0f}s; every row in {args.output}")


if __name__ == "__main__":
    main()
