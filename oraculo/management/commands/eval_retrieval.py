"""`manage.py eval_retrieval`: a thin door onto oraculo.evaluation.services (A/B of trimming, or a calibration
sweep), run here and now; it prints with oraculo.evaluation.render or .export."""

from __future__ import annotations

import json
import sys
from contextlib import ExitStack

from django.core.management.base import BaseCommand, CommandError
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from biblioteca.embeddings import EmbeddingError
from biblioteca.errors import ApplicationError
from oraculo.evaluation.export import report_json
from oraculo.evaluation.params import VARIANTS, EvalParamsError, eval_params_build
from oraculo.evaluation.questions import DEFAULT_LAST
from oraculo.evaluation.render import report_table
from oraculo.evaluation.services import NoQuestionsFound, QuestionSource, eval_run_save, evaluation_run_inline
from oraculo.models import Channel

BAD_ARGUMENTS = 2


def _command_error(exc: ApplicationError) -> CommandError:
    """The service's error as the command says it: a parameter named as its option (`--min-retention`); an empty
    question log exits 1 (nothing to do), other bad input 2 (bad arguments)."""
    message = exc.message
    field = getattr(exc, "field", "")
    if field and message.startswith(field):
        message = "--" + field.replace("_", "-") + message[len(field) :]
    bad_arguments = exc.status_code == 400 and not isinstance(exc, NoQuestionsFound)
    return CommandError(message, returncode=BAD_ARGUMENTS if bad_arguments else 1)


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
            "--channels",
            nargs="+",
            choices=Channel.values,
            metavar="CHANNEL",
            help=f"With the last N: only questions asked through these channels ({', '.join(Channel.values)}), "
            "e.g. --channels widget api to leave out agents' questions.",
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
        try:
            params = eval_params_build(
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
            raise _command_error(exc) from exc
        given = opts["questions"] or opts["questions_file"]
        source = QuestionSource(
            explicit=opts["questions"] if given else None,
            path=opts["questions_file"],
            last=opts["last"],
            channels=opts["channels"],
        )
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
        task = progress.add_task("evaluating", total=None)
        try:
            with progress:
                report = evaluation_run_inline(
                    questions=source,
                    params=params,
                    on_progress=lambda done, total, _: progress.update(task, completed=done, total=total),
                )
        except EmbeddingError as exc:
            raise CommandError(f"Embedding failed: {exc.message}") from exc
        except ApplicationError as exc:
            raise _command_error(exc) from exc

        with ExitStack() as stack:
            if opts["output"]:
                try:
                    stream = stack.enter_context(open(opts["output"], "w", encoding="utf-8"))
                except OSError as exc:
                    raise CommandError(f"Cannot write {opts['output']}: {exc.strerror}.") from exc
            else:
                stream = getattr(self.stdout, "_out", sys.stdout)
            if opts["format"] == "json":
                stream.write(json.dumps(report_json(report), ensure_ascii=False, indent=2) + "\n")
            else:
                report_table(
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
