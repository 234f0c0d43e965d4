"""The terminal tables of an evaluation (rich), printed by `eval_retrieval` and by the benches."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text  # user text as Text, never markup: a question may contain "[/x]"

from oraculo.evaluation.harness import EvalReport
from oraculo.evaluation.sweep import SweepReport


def _mark(value: bool | None) -> str:
    return "-" if value is None else ("yes" if value else "no")


def _fmt(value, suffix: str = "") -> str:
    return "-" if value is None else f"{value}{suffix}"


def report_table(report: EvalReport, console: Console) -> None:
    """The A/B table and its summary lines, or for a sweep its table and recommendation."""
    if report.sweep is not None:
        sweep_table(report.sweep, console)
        return
    s = report.summary
    labelled_run = s.get("labelled", 0) > 0
    table = Table(title="A/B: retrieval without and with trimming", title_justify="left")
    for name, justify in [
        ("#", "right"),
        ("question", "left"),
        ("baseline tok", "right"),
        ("trim tok", "right"),
        ("reduction", "right"),
        ("overlap", "right"),
        ("top score", "right"),
        ("ms base/trim", "right"),
    ]:
        table.add_column(
            name,
            justify=justify,
            overflow="ellipsis",
            no_wrap=name == "question",
            max_width=60 if name == "question" else None,
        )
    if labelled_run:
        table.add_column("answer in ctx base/trim", justify="center")
    if report.params.synthesize:
        table.add_column("answer sim.", justify="right")
        table.add_column("cites base/trim", justify="center")
        table.add_column("error", overflow="fold", max_width=40)
    for i, r in enumerate((q.as_dict() for q in report.results), start=1):
        base, trim = r["variants"].get("baseline", {}), r["variants"].get("trim", {})
        before = base.get("tokens", trim.get("tokens_before"))
        reduction = f"{100 * (1 - trim['tokens'] / before):.0f}%" if trim and before else "-"
        row = [
            str(i),
            Text(r["question"]),
            _fmt(before),
            _fmt(trim.get("tokens")),
            reduction,
            _fmt(trim.get("overlap_vs_baseline")),
            _fmt(base.get("top_score", trim.get("top_score"))),
            f"{_fmt(base.get('latency_ms'))}/{_fmt(trim.get('latency_ms'))}",
        ]
        if labelled_run:
            row.append(
                f"{_mark(base.get('answer_in_context'))}/{_mark(trim.get('answer_in_context'))}"
                if r.get("expected_answer")
                else ""
            )
        if report.params.synthesize:
            row += [
                _fmt(r.get("answer_similarity")),
                f"{_mark(base.get('cites_source') if base else None)}/"
                f"{_mark(trim.get('cites_source') if trim else None)}",
                Text(r.get("error", "")),
            ]
        table.add_row(*row)
    console.print(table)
    lines = [
        f"questions {s['questions']} · top_k {s['top_k']} · trim_threshold {s['trim_threshold']:g} · "
        f"trim_window {s['trim_window']}",
        f"avg tokens: baseline {_fmt(s['avg_tokens_baseline'])}, trim {_fmt(s['avg_tokens_trim'])} "
        f"→ reduction {_fmt(s['token_reduction_pct'], '%')} · avg overlap vs baseline "
        f"{_fmt(s['avg_overlap_vs_baseline'])}",
        f"avg latency ms: baseline {_fmt(s['avg_latency_ms_baseline'])}, trim "
        f"{_fmt(s['avg_latency_ms_trim'])} · embedding calls made by the trimmer: "
        f"{s['trim_embedding_calls']}",
    ]
    if labelled_run:
        lines.append(
            f"labelled {s['labelled']}: answer in context baseline "
            f"{_fmt(s.get('answer_in_context_baseline'))}, trim {_fmt(s.get('answer_in_context_trim'))}"
            f" → answer retention {_fmt(s.get('answer_retention_pct'), '%')}"
        )
    if report.params.synthesize:
        lines.append(
            f"avg answer similarity {_fmt(s.get('avg_answer_similarity'))} · cites a source: "
            f"baseline {_fmt(s.get('cites_source_pct_baseline'), '%')}, "
            f"trim {_fmt(s.get('cites_source_pct_trim'), '%')} · questions with errors {s['errors']}"
        )
    for line in lines:
        console.print(line, markup=False)


def sweep_table(sweep: SweepReport, console: Console) -> None:
    """A sweep's rows (Pareto front, floor, recommendation) and the settings to paste."""
    by_retention = sweep.quality == "answer_retention_pct"
    table = Table(
        title=f"Calibration sweep: {sweep.questions} questions, top_k {sweep.top_k}, "
        f"baseline {sweep.avg_tokens_baseline} tokens on average",
        title_justify="left",
    )
    swept_drop = any(row.drop_margin is not None for row in sweep.rows)
    for name in [
        "threshold",
        "window",
        *(["drop margin"] if swept_drop else []),
        "avg tokens",
        "reduction %",
        "overlap",
    ]:
        table.add_column(name, justify="right")
    if sweep.labelled:
        table.add_column("retention %", justify="right")
    table.add_column("pareto", justify="center")
    table.add_column("floor", justify="center")
    table.add_column("")
    for row in sweep.rows:
        chosen = row == sweep.recommended
        cells = [
            f"{float(row.threshold)!r}",
            str(row.window),
            *([f"{float(row.drop_margin)!r}"] if swept_drop else []),
            str(row.avg_tokens_trim),
            f"{row.token_reduction_pct:.1f}",
            _fmt(row.avg_overlap_vs_baseline),
        ]
        if sweep.labelled:
            cells.append(_fmt(row.answer_retention_pct))
        cells += [
            "*" if row.pareto else "",
            "ok" if row.meets_floor else "",
            "◀ recommended" if chosen else "",
        ]
        table.add_row(*cells, style="bold green" if chosen else None)
    console.print(table)
    if sweep.labelled:
        console.print(
            f"labelled {sweep.labelled}: the baseline context holds the answer for "
            f"{sweep.answer_in_context_baseline}; quality = "
            f"{'answer retention' if by_retention else 'chunk overlap'}",
            markup=False,
        )
    console.print(
        f"pareto (*): no other setting has both more reduction and more quality. floor: {sweep.floor_text}.",
        markup=False,
    )
    if sweep.recommended is None:
        console.print(sweep.note, markup=False)
        return
    rec = sweep.recommended
    console.print(
        f"recommended: threshold {float(rec.threshold)!r}, window {rec.window}"
        + (f", drop margin {float(rec.drop_margin)!r}" if rec.drop_margin is not None else "")
        + " → "
        f"{rec.token_reduction_pct:.1f}% fewer tokens, overlap {_fmt(rec.avg_overlap_vs_baseline)}"
        + (f", retention {_fmt(rec.answer_retention_pct, '%')}" if sweep.labelled else "")
        + ". Paste:",
        markup=False,
    )
    for line in rec.env_lines:
        console.print(line, markup=False, highlight=False)
