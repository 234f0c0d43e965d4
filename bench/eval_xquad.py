"""Calibration sweep of sentence trimming on XQuAD (EN and ES), through oraculo.evaluation.

    .venv/bin/python bench/eval_xquad.py [--qa ../shared/qa/xquad_dev] [--langs en es]
        [--sweep threshold=0.70:0.90:0.02 window=0,1,2] [--min-retention 99] [--top-k 5] [--limit N]

Ingests docs_LANG into app xquad-LANG (re-runs skip unchanged files), labels each question with its first gold
answer, runs the engine's sweep per language (query vectors and retrieval once per question), prints each
language's table with its Pareto front and recommendation, then the one setting that keeps the floor in every
language with the largest mean reduction.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _django

_django.setup()

from rich.console import Console  # noqa: E402
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn  # noqa: E402
from rich.table import Table  # noqa: E402

from oraculo.evaluation.harness import calibration_sweep  # noqa: E402
from oraculo.evaluation.params import sweep_parse  # noqa: E402
from oraculo.evaluation.questions import LabelledQuestion  # noqa: E402
from oraculo.evaluation.render import sweep_table  # noqa: E402


def gold(qa_dir: Path, lang: str, limit: int | None) -> list[LabelledQuestion]:
    rows = [
        json.loads(line)
        for line in (qa_dir / f"qa_{lang}.jsonl").read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    questions = [LabelledQuestion(r["question"], r["answers"][0]["text"]) for r in rows if r.get("answers")]
    return questions[:limit] if limit else questions


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--qa", type=Path, default=_django.SHARED / "qa" / "xquad_dev")
    parser.add_argument("--langs", nargs="+", default=["en", "es"])
    parser.add_argument("--sweep", nargs="+", default=["threshold=0.70:0.90:0.02", "window=0,1,2"])
    parser.add_argument("--min-retention", type=float, default=99.0)
    parser.add_argument("--top-k", type=int, default=5)
    parser.add_argument("--limit", type=int, default=None, help="Only the first N questions per language.")
    parser.add_argument("--json", type=Path, help="Also write every language's sweep report here.")
    args = parser.parse_args()

    thresholds, windows = sweep_parse(args.sweep, default_threshold=0.8, default_window=1)
    console = Console(width=140)
    reports = {}
    for lang in args.langs:
        app = f"xquad-{lang}"
        ingest = _django.ingest(paths=[args.qa / f"docs_{lang}"], app=app, source_type="xquad")
        questions = gold(args.qa, lang, args.limit)
        console.print(
            f"[bold]{app}[/]: {len(ingest.results)} documents ({ingest.count('unchanged')} unchanged), "
            f"{len(questions)} labelled questions, {len(thresholds) * len(windows)} settings"
        )
        started = time.perf_counter()
        with Progress(
            TextColumn(f"[bold]{lang}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            transient=True,
        ) as progress:
            task = progress.add_task(lang, total=len(questions))
            report = calibration_sweep(
                questions=questions,
                thresholds=thresholds,
                windows=windows,
                top_k=args.top_k,
                filters={"app": app},
                min_retention=args.min_retention,
                on_progress=lambda done, total, _, task=task: progress.update(task, completed=done),
            )
        console.print(f"{lang}: swept in {time.perf_counter() - started:.0f}s")
        sweep_table(report, console)
        console.print()
        reports[lang] = report

    if len(reports) > 1:
        combos = [(row.threshold, row.window) for row in next(iter(reports.values())).rows]
        table = Table(
            title=f"One setting for {', '.join(reports)}: min retention across languages, mean reduction",
            title_justify="left",
        )
        for name in ["threshold", "window", "mean reduction %", "min retention %", "floor"]:
            table.add_column(name, justify="right")
        best = None
        for i, (threshold, window) in enumerate(combos):
            rows = [r.rows[i] for r in reports.values()]
            reduction = sum(r.token_reduction_pct for r in rows) / len(rows)
            retention = min(
                (r.answer_retention_pct for r in rows if r.answer_retention_pct is not None), default=None
            )
            ok = all(r.meets_floor for r in rows)
            if ok and (best is None or reduction > best[2]):
                best = (threshold, window, reduction, retention)
            table.add_row(
                f"{threshold:g}",
                str(window),
                f"{reduction:.1f}",
                "-" if retention is None else f"{retention:.1f}",
                "ok" if ok else "",
            )
        console.print(table)
        if best is None:
            console.print(
                f"No single setting keeps answer retention >= {args.min_retention:g}% in every language."
            )
        else:
            console.print(
                f"recommended for all languages: threshold {best[0]:g}, window {best[1]} → "
                f"{best[2]:.1f}% fewer tokens on average, retention >= {best[3]:.1f}%. Paste:"
            )
            console.print(
                f"RETRIEVAL_TRIM_THRESHOLD={best[0]:g}\nRETRIEVAL_TRIM_WINDOW={best[1]}", markup=False
            )
    if args.json:
        args.json.write_text(
            json.dumps({lang: r.as_dict() for lang, r in reports.items()}, indent=2), encoding="utf-8"
        )


if __name__ == "__main__":
    main()
