"""`manage.py eval_retrieval`: a thin door onto oraculo.evaluation (A/B of trimming, or a calibration sweep)."""

from __future__ import annotations

import json
import sys
from contextlib import ExitStack

from django.core.management.base import BaseCommand, CommandError
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text  # user text as Text, never markup: a question may contain "[/x]"

from biblioteca.embeddings import EmbeddingError
from oraculo.eval_actions import eval_run_save
from oraculo.evaluation import VARIANTS, EvalParamsError, EvalReport, eval_params_build, evaluation_run
from oraculo.models import Channel
from oraculo.questions import DEFAULT_LAST, QuestionFileError, labelled, questions_read, recent_questions

BAD_ARGUMENTS = 2


def _usage(message: str) -> CommandError:
    return CommandError(message, returncode=BAD_ARGUMENTS)


def _mark(value: bool | None) -> str:
    return "-" if value is None else ("yes" if value else "no")


def _fmt(value, suffix: str = "") -> str:
    return "-" if value is None else f"{value}{suffix}"


class Command(BaseCommand):
    help = (
        "Compare retrieval with and without sentence trimming on real or labelled questions; with --sweep, "
        "calibrate the trim threshold and window and print the settings to paste."
    )

    def add_arguments(self, parser):
        src = parser.add_argument_group("questions")
        src.add_argument(
            "--question",
            action="append",
            dest="questions",
            default=[],
            metavar="Q",
            help="A question to evaluate (repeatable).",
        )
        src.add_argument(
            "--questions-file",
            metavar="FILE",
            help="One question per line, or JSONL with question and optional expected_answer.",
        )
        src.add_argument(
            "--last",
            type=int,
            metavar="N",
            help=f"Without explicit questions: the last N distinct asked questions (default {DEFAULT_LAST}).",
        )
        src.add_argument(
            "--channel",
            action="append",
            dest="channels",
            choices=Channel.values,
            metavar="CHANNEL",
            help=f"With the last N: only questions asked through this channel (repeatable; "
            f"{', '.join(Channel.values)}), e.g. leave out agents' (mcp) questions.",
        )
        run = parser.add_argument_group("evaluation")
        run.add_argument("--variants", nargs="+", choices=VARIANTS, default=list(VARIANTS))
        run.add_argument("--top-k", type=int, default=None, help="Chunks retrieved (default 5, max 20).")
        run.add_argument(
            "--trim-threshold",
            type=float,
            default=None,
            help="Default: the RETRIEVAL_TRIM_THRESHOLD setting.",
        )
        run.add_argument(
            "--trim-window", type=int, default=None, help="Default: the RETRIEVAL_TRIM_WINDOW setting."
        )
        run.add_argument(
            "--synthesize", action="store_true", help="Also answer with the LLM for each variant."
        )
        run.add_argument("--app", help="Search only this app's documents (and pick its questions).")
        run.add_argument("--source-type", help="Search only this source type.")
        sweep = parser.add_argument_group("calibration")
        sweep.add_argument(
            "--sweep",
            nargs="+",
            metavar="SPEC",
            help="e.g. --sweep threshold=0.70:0.90:0.02 window=0,1,2 (start:stop:step or a,b,c).",
        )
        sweep.add_argument(
            "--min-retention",
            type=float,
            metavar="PCT",
            help="Quality floor for the recommendation: answer retention %% (labelled questions).",
        )
        sweep.add_argument(
            "--min-overlap",
            type=float,
            metavar="PCT",
            help="Quality floor for the recommendation: chunk overlap with the baseline, %%.",
        )
        out = parser.add_argument_group("output")
        out.add_argument("--format", choices=["table", "json"], default="table")
        out.add_argument("--output", metavar="FILE", help="Write the report to FILE instead of stdout.")
        out.add_argument(
            "--save", action="store_true", help="Store the run (EvalRun + EvalResult) for the admin."
        )

    def handle(self, *args, **opts):
        params = self._params(opts)
        questions = self._questions(opts)
        if opts["min_retention"] is not None and not any(q.expected_answer for q in questions):
            raise _usage("--min-retention needs labelled questions: a JSONL file with expected_answer.")
        console = Console(file=getattr(self.stderr, "_out", sys.stderr), quiet=opts["verbosity"] == 0)
        progress = Progress(
            TextColumn("[bold]evaluating"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            transient=True,
            disable=opts["verbosity"] == 0,
        )
        task = progress.add_task("evaluating", total=len(questions))
        try:
            with progress:
                report = evaluation_run(
                    questions=questions,
                    params=params,
                    on_progress=lambda done, total, _: progress.update(task, completed=done),
                )
        except EmbeddingError as exc:
            raise CommandError(f"Embedding failed: {exc}") from exc

        with ExitStack() as stack:
            if opts["output"]:
                try:
                    stream = stack.enter_context(open(opts["output"], "w", encoding="utf-8"))
                except OSError as exc:
                    raise CommandError(f"Cannot write {opts['output']}: {exc.strerror}.") from exc
            else:
                stream = getattr(self.stdout, "_out", sys.stdout)
            if opts["format"] == "json":
                stream.write(json.dumps(report.as_dict(), ensure_ascii=False, indent=2) + "\n")
            else:
                self._table(
                    report,
                    Console(
                        file=stream, width=None if stream.isatty() else 140, highlight=False, soft_wrap=False
                    ),
                )
        if opts["save"]:
            run = eval_run_save(report=report, params=params)
            self.stderr.write(f"Saved as evaluation run #{run.pk}.")
        if opts["output"]:
            self.stderr.write(f"Report written to {opts['output']}.")

    def _params(self, opts):
        try:
            return eval_params_build(
                variants=opts["variants"],
                top_k=opts["top_k"],
                trim_threshold=opts["trim_threshold"],
                trim_window=opts["trim_window"],
                synthesize=opts["synthesize"],
                app=opts["app"],
                source_type=opts["source_type"],
                sweep=opts["sweep"],
                min_retention=opts["min_retention"],
                min_overlap=opts["min_overlap"],
            )
        except EvalParamsError as exc:
            raise _usage(str(exc)) from exc

    def _questions(self, opts):
        explicit = labelled(opts["questions"])
        if opts["questions_file"]:
            try:
                explicit += questions_read(path=opts["questions_file"])
            except QuestionFileError as exc:
                raise _usage(str(exc)) from exc
        if explicit:
            for option, given in (
                ("--last", opts["last"] is not None),
                ("--channel", bool(opts["channels"])),
            ):
                if given:
                    raise _usage(
                        f"{option} picks recent questions; it cannot be combined with --question or "
                        "--questions-file."
                    )
            return explicit
        last = DEFAULT_LAST if opts["last"] is None else opts["last"]
        if last < 1:
            raise _usage("--last must be at least 1.")
        recent = recent_questions(last=last, app=opts["app"], channels=opts["channels"])
        if not recent:
            where = f" for app {opts['app']!r}" if opts["app"] else ""
            raise CommandError(
                f"No questions found{where}: nobody has asked anything yet. Pass --question or "
                "--questions-file.",
                returncode=1,
            )
        return recent

    def _table(self, report: EvalReport, console: Console) -> None:
        if report.sweep is not None:
            self._sweep_table(report, console)
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
        for i, r in enumerate(report.results, start=1):
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

    def _sweep_table(self, report: EvalReport, console: Console) -> None:
        sweep = report.sweep
        by_retention = sweep.quality == "answer_retention_pct"
        table = Table(
            title=f"Calibration sweep: {sweep.questions} questions, top_k {sweep.top_k}, "
            f"baseline {sweep.avg_tokens_baseline} tokens on average",
            title_justify="left",
        )
        for name in ["threshold", "window", "avg tokens", "reduction %", "overlap"]:
            table.add_column(name, justify="right")
        if sweep.labelled:
            table.add_column("retention %", justify="right")
        table.add_column("pareto", justify="center")
        table.add_column("floor", justify="center")
        table.add_column("")
        for row in sweep.rows:
            chosen = row == sweep.recommended
            cells = [
                f"{row.threshold:g}",
                str(row.window),
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
            f"pareto (*): no other setting has both more reduction and more quality. "
            f"floor: {sweep.floor_text}.",
            markup=False,
        )
        if sweep.recommended is None:
            console.print(sweep.note, markup=False)
            return
        rec = sweep.recommended
        console.print(
            f"recommended: threshold {rec.threshold:g}, window {rec.window} → "
            f"{rec.token_reduction_pct:.1f}% fewer tokens, overlap {_fmt(rec.avg_overlap_vs_baseline)}"
            + (f", retention {_fmt(rec.answer_retention_pct, '%')}" if sweep.labelled else "")
            + ". Paste:",
            markup=False,
        )
        for line in rec.env_lines:
            console.print(line, markup=False, highlight=False)
