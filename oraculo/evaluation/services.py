"""The evaluation's services, one for each door (command, admin, staff API, MCP): `evaluation_start` resolves
the questions, validates them against the parameters and queues a run for a worker; `evaluation_run_inline` does
the same checks and runs here and now (the command); `eval_run_save` stores such a run for the admin."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from biblioteca.errors import ApplicationError, NotAllowedError
from oraculo.evaluation.harness import EvalReport, ProgressCallback, evaluation_run
from oraculo.evaluation.params import EvalParams, EvalParamsError
from oraculo.evaluation.questions import (
    DEFAULT_LAST,
    LabelledQuestion,
    labelled,
    questions_parse,
    questions_read,
)
from oraculo.evaluation.selectors import VIEW_QUERIES, eval_runs_readable, recent_questions
from oraculo.evaluation.worker import ACTIVE, eval_runs_requeue_stalled
from oraculo.llm import llm_configured
from oraculo.models import EvalResult, EvalRun


class NoQuestionsFound(EvalParamsError):
    """The question log holds nothing to evaluate (for the app asked)."""


@dataclass(frozen=True)
class QuestionSource:
    """Where a run's questions come from: explicit ones and a question file (a path, or an upload's text) together;
    without either, the last `last` distinct questions asked (of the run's app)."""

    explicit: Sequence[LabelledQuestion | str | dict] | None = None
    path: str | Path | None = None
    text: str | None = None
    name: str = "questions"
    last: int | None = None
    app: str | None = None  # whose log `last` reads; None: the run's app
    channels: Sequence[str] | None = None  # `last` reads only questions asked through these (all when None)

    @property
    def given(self) -> bool:
        return self.explicit is not None or self.path is not None or self.text is not None


def evaluation_questions(
    *,
    questions: QuestionSource | Iterable[LabelledQuestion | str | dict],
    params: EvalParams,
    created_by: AbstractBaseUser | None = None,
) -> list[LabelledQuestion]:
    """The questions a run evaluates, checked against its parameters: reading the question log needs the
    permission to view queries (a door without a user, the command, is the operator), and a retention floor needs
    labelled questions."""
    if params.synthesize and not llm_configured():
        raise EvalParamsError(
            "synthesize answers every question with the LLM, and none is configured (set LLM_MODEL and "
            "LLM_BASE_URL or LLM_API_KEY).",
            field="synthesize",
        )
    source = questions if isinstance(questions, QuestionSource) else QuestionSource(explicit=tuple(questions))
    chosen = labelled(source.explicit or ())
    if source.path is not None:
        chosen += questions_read(path=source.path)
    if source.text is not None:
        chosen += questions_parse(text=source.text, name=source.name)
    _check_lengths(chosen)
    for name, value in (("last", source.last), ("channels", source.channels)):
        if chosen and value:
            raise EvalParamsError(
                f"{name} picks recent questions; it cannot be combined with explicit questions or a questions "
                "file.",
                field=name,
            )
    if not source.given:
        last = DEFAULT_LAST if source.last is None else source.last
        chosen = _recent(last=last, app=source.app or params.app, channels=source.channels, user=created_by)
    if not chosen:
        raise EvalParamsError("No questions to evaluate: give some, or a questions file.", field="questions")
    if params.sweep and params.sweep.min_retention is not None and not any(q.expected_answer for q in chosen):
        raise EvalParamsError(
            "min_retention needs labelled questions: a JSONL file (or objects) with expected_answer.",
            field="min_retention",
        )
    return chosen


def _check_lengths(questions: Sequence[LabelledQuestion]) -> None:
    """A question given for a run is held to the limit of one asked: each is embedded, and one of a megabyte
    would keep a worker for minutes."""
    limit = settings.QUERY_MAX_LENGTH
    for number, q in enumerate(questions, start=1):
        if len(q.question) > limit:
            raise EvalParamsError(
                f"Question {number} is too long ({len(q.question):,} characters): at most {limit:,}, as when "
                "asking (QUERY_MAX_LENGTH).",
                field="questions",
            )


def _recent(
    *, last: int, app: str | None, channels: Sequence[str] | None, user: AbstractBaseUser | None
) -> list[LabelledQuestion]:
    if last < 1:
        raise EvalParamsError("last must be at least 1.", field="last")
    if user is not None and not user.has_perm(VIEW_QUERIES):
        raise NotAllowedError(
            "Evaluating the question log needs the permission to view queries; send `questions` instead."
        )
    recent = recent_questions(last=last, app=app, channels=channels)
    if not recent:
        where = f" for app {app!r}" if app else ""
        raise NoQuestionsFound(
            f"No questions found{where}: nobody has asked anything yet. Send questions or a questions file.",
            field="questions",
        )
    return recent


def evaluation_start(
    *,
    questions: QuestionSource | Iterable[LabelledQuestion | str | dict],
    params: EvalParams,
    created_by: AbstractBaseUser | None,
) -> EvalRun:
    """Resolve and check the questions, then queue a run of them for a worker; returns the queued run."""
    chosen = evaluation_questions(questions=questions, params=params, created_by=created_by)
    return eval_run_create(questions=chosen, params=params, created_by=created_by)


def evaluation_run_inline(
    *,
    questions: QuestionSource | Iterable[LabelledQuestion | str | dict],
    params: EvalParams,
    created_by: AbstractBaseUser | None = None,
    on_progress: ProgressCallback | None = None,
) -> EvalReport:
    """Resolve and check the questions as `evaluation_start` does, then evaluate them here and now (no writes);
    `export.report_json(report)` is the JSON the command prints."""
    chosen = evaluation_questions(questions=questions, params=params, created_by=created_by)
    return evaluation_run(questions=chosen, params=params, on_progress=on_progress)


def _user(user: AbstractBaseUser | None) -> AbstractBaseUser | None:
    return user if user is not None and user.is_authenticated else None


class TooManyActiveRuns(ApplicationError):
    """Each person may have only EVAL_MAX_ACTIVE_RUNS_PER_USER runs queued or running: runs can call the LLM
    for every question, so one token must not fill the queue."""

    status_code = 429
    retry_after = 60


def eval_run_read(*, user: AbstractBaseUser, run_id: int) -> EvalRun | None:
    """The run `user` may read (see eval_runs_readable), or None. Stalled runs are requeued first, so a run
    whose worker died reads as queued again instead of running forever."""
    eval_runs_requeue_stalled()
    return eval_runs_readable(user=user).filter(pk=run_id).first()


def eval_run_create(
    *, questions: Sequence[LabelledQuestion], params: EvalParams, created_by: AbstractBaseUser | None = None
) -> EvalRun:
    """A queued run with one pending row per question, enqueued in the same transaction: it never runs inside
    the request, and a worker never sees a half-created run."""
    from oraculo.tasks import eval_run_task

    if not questions:
        raise ApplicationError("An evaluation needs at least one question.")
    eval_runs_requeue_stalled()
    user = _user(created_by)
    with transaction.atomic():
        if user is not None:
            # One lock per person, so two requests at once cannot both pass the cap.
            get_user_model().objects.select_for_update().filter(pk=user.pk).first()
            active = EvalRun.objects.filter(created_by=user, status__in=ACTIVE).count()
            if active >= settings.EVAL_MAX_ACTIVE_RUNS_PER_USER:
                raise TooManyActiveRuns(
                    f"You already have {active} evaluation run(s) queued or running (at most "
                    f"{settings.EVAL_MAX_ACTIVE_RUNS_PER_USER}); wait until one finishes."
                )
        run = EvalRun.objects.create(params=params.as_dict(), total=len(questions), created_by=user)
        EvalResult.objects.bulk_create(
            EvalResult(run=run, position=i, question=q.question, expected_answer=q.expected_answer)
            for i, q in enumerate(questions, start=1)
        )
        eval_run_task.enqueue(run_id=run.pk)
    return run


@transaction.atomic
def eval_run_save(
    *, report: EvalReport, params: EvalParams, created_by: AbstractBaseUser | None = None
) -> EvalRun:
    """Store a run already executed elsewhere (the command's --save) as a finished EvalRun."""
    now = timezone.now()
    run = EvalRun.objects.create(
        params=params.as_dict(),
        status=EvalRun.Status.DONE,
        total=len(report.results),
        progress=len(report.results),
        summary=report.summary,
        sweep=report.sweep.as_dict() if report.sweep else {},
        created_by=_user(created_by),
        started_at=now,
        finished_at=now,
    )
    EvalResult.objects.bulk_create(
        EvalResult(
            run=run,
            position=i,
            question=r.question,
            expected_answer=r.expected_answer,
            variants={name: v.as_dict() for name, v in r.variants.items()},
            answer_similarity=r.answer_similarity,
            error=r.error,
        )
        for i, r in enumerate(report.results, start=1)
    )
    return run
