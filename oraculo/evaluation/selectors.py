"""Reads of the evaluation: the questions to evaluate from the question log, and stored runs as reports."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import fields

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Max, QuerySet, TextField, Value
from django.db.models.functions import Coalesce, NullIf, Trim

from oraculo.evaluation.export import FLOOR_ORDER, SUMMARY_ORDER, SWEEP_ORDER, VARIANT_ORDER, ordered
from oraculo.evaluation.params import VARIANTS
from oraculo.evaluation.questions import DEFAULT_LAST, LabelledQuestion
from oraculo.evaluation.sweep import SweepRow
from oraculo.models import EvalRun, OraculoQuery

VIEW_QUERIES = "oraculo.view_oraculoquery"


def _searched():
    """A follow-up as it was searched (rewritten with its thread's context), so replaying it replays the thread."""
    return Coalesce(NullIf("retrieval_question", Value("", output_field=TextField())), "question")


def recent_questions(
    *, last: int = DEFAULT_LAST, app: str | None = None, channels: Collection[str] | None = None
) -> list[LabelledQuestion]:
    """The `last` most recently asked distinct questions (newest first), optionally of one app and only from
    some channels (agents' questions left out, say); a follow-up as it was searched (rewritten with its
    thread's context), so replaying it replays the thread."""
    qs = OraculoQuery.objects.all()
    if app:
        qs = qs.filter(app=app)
    if channels:
        qs = qs.filter(channel__in=list(channels))
    rows = (
        qs.annotate(text=Trim(_searched()))
        .exclude(text="")
        .values("text")
        .annotate(last_asked=Max("created_at"), last_id=Max("id"))
        .order_by("-last_asked", "-last_id")[:last]
    )
    return [LabelledQuestion(row["text"]) for row in rows]


def questions_of_queries(*, ids: Sequence[int]) -> list[LabelledQuestion]:
    """The logged questions with these ids, newest first, as searched, each text once."""
    texts = (
        OraculoQuery.objects.filter(pk__in=ids)
        .order_by("-created_at", "-id")
        .values_list(_searched(), flat=True)
    )
    return [LabelledQuestion(q) for q in dict.fromkeys(" ".join(t.split()) for t in texts) if q]


def eval_runs_readable(*, user: AbstractBaseUser) -> QuerySet[EvalRun]:
    """The runs `user` may read: their own, or everybody's with the permission to view queries (other people's
    runs can hold real users' questions)."""
    runs = EvalRun.objects.all()
    return runs if user.has_perm(VIEW_QUERIES) else runs.filter(created_by_id=user.pk)


def run_report(*, run) -> dict:
    """A stored EvalRun in the shape `eval_retrieval --format json` prints (plus `sweep` for a sweep), from its
    EvalResult rows: one query for them."""
    results = []
    for row in run.results.order_by("position"):
        result: dict = {"question": row.question}
        if row.expected_answer:
            result["expected_answer"] = row.expected_answer
        result["variants"] = {
            name: ordered(row.variants[name], VARIANT_ORDER) for name in VARIANTS if name in row.variants
        }
        if row.answer_similarity is not None:
            result["answer_similarity"] = row.answer_similarity
        if row.error:
            result["error"] = row.error
        results.append(result)
    out = {"summary": ordered(run.summary, SUMMARY_ORDER), "results": results}
    if run.sweep:
        sweep = ordered(run.sweep, SWEEP_ORDER)
        row_order = [f.name for f in fields(SweepRow)]
        sweep["rows"] = [ordered(row, row_order) for row in sweep.get("rows", [])]
        if isinstance(sweep.get("floor"), dict):
            sweep["floor"] = ordered(sweep["floor"], FLOOR_ORDER)
        if sweep.get("recommended"):
            sweep["recommended"] = ordered(sweep["recommended"], row_order)
        out["sweep"] = sweep
    return out
