"""evaluation_start, the one service every door calls: it resolves explicit, file or last-N questions, checks them
against the parameters (the same rules in every door) and queues a run."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission, User

from biblioteca.errors import NotAllowedError
from oraculo.evaluation.export import report_json
from oraculo.evaluation.params import EvalParamsError, eval_params_build
from oraculo.evaluation.questions import LabelledQuestion, QuestionFileError
from oraculo.evaluation.services import (
    NoQuestionsFound,
    QuestionSource,
    evaluation_run_inline,
    evaluation_start,
)
from oraculo.models import EvalRun, OraculoQuery

pytestmark = pytest.mark.django_db

LABELLED = LabelledQuestion("How long is a password reset link valid?", "30 minutes")


def staff(*codenames: str) -> User:
    user = User.objects.create_user("staff", is_staff=True)
    user.user_permissions.set(Permission.objects.filter(codename__in=codenames))
    return User.objects.get(pk=user.pk)  # permissions are cached per instance


def test_explicit_questions_are_queued_as_given(library):
    run = evaluation_start(
        questions=["How do I reset my password?", {"question": "Q2", "expected_answer": "A"}, "  "],
        params=eval_params_build(app=library),
        created_by=None,
    )
    assert run.status == EvalRun.Status.QUEUED and run.total == 2
    assert [(r.question, r.expected_answer) for r in run.results.order_by("position")] == [
        ("How do I reset my password?", ""),
        ("Q2", "A"),
    ]


@pytest.mark.parametrize(
    "source",
    [
        lambda long: QuestionSource(explicit=["How do I reset my password?", long]),
        lambda long: QuestionSource(text=f"How do I reset my password?\n{long}\n", name="q.txt"),
    ],
)
def test_a_question_longer_than_one_may_ask_is_refused_before_anything_is_queued(library, settings, source):
    settings.QUERY_MAX_LENGTH = 50
    with pytest.raises(EvalParamsError, match=r"Question 2 is too long \(51 characters\): at most 50"):
        evaluation_start(questions=source("x" * 51), params=eval_params_build(app=library), created_by=None)
    assert not EvalRun.objects.exists()
    run = evaluation_start(questions=source("x" * 50), params=eval_params_build(app=library), created_by=None)
    assert run.total == 2


def test_synthesis_without_an_llm_is_refused_before_anything_is_queued(library, settings):
    settings.LLM_MODEL = ""
    params = eval_params_build(app=library, synthesize=True)
    with pytest.raises(EvalParamsError, match="none is configured") as refused:
        evaluation_start(questions=["How do I reset my password?"], params=params, created_by=None)
    assert refused.value.field == "synthesize"
    with pytest.raises(EvalParamsError, match="none is configured"):
        evaluation_run_inline(questions=["How do I reset my password?"], params=params)
    assert not EvalRun.objects.exists()


def test_a_retention_floor_needs_labelled_questions(library):
    params = eval_params_build(app=library, sweep=["window=0,1"], min_retention=99)
    with pytest.raises(EvalParamsError, match="min_retention needs labelled questions") as caught:
        evaluation_start(questions=["Q"], params=params, created_by=None)
    assert caught.value.field == "min_retention"
    assert evaluation_start(questions=[LABELLED], params=params, created_by=None).total == 1
    assert EvalRun.objects.count() == 1


def test_the_question_log_needs_the_permission_to_view_queries(library):
    OraculoQuery.objects.create(question="a real user's question", app=library)
    params = eval_params_build(app=library)
    with pytest.raises(NotAllowedError, match="view queries"):
        evaluation_start(questions=QuestionSource(), params=params, created_by=staff("add_evalrun"))
    assert not EvalRun.objects.exists()
    run = evaluation_start(questions=QuestionSource(last=5), params=params, created_by=None)
    assert [r.question for r in run.results.all()] == ["a real user's question"]


def test_an_empty_log_and_an_empty_selection_are_refused_differently(library):
    params = eval_params_build(app=library)
    with pytest.raises(NoQuestionsFound, match="No questions found for app"):
        evaluation_start(questions=QuestionSource(), params=params, created_by=None)
    with pytest.raises(EvalParamsError, match="No questions to evaluate"):
        evaluation_start(questions=QuestionSource(explicit=[]), params=params, created_by=None)
    with pytest.raises(EvalParamsError, match="last picks recent questions"):
        evaluation_start(questions=QuestionSource(explicit=["Q"], last=3), params=params, created_by=None)
    with pytest.raises(EvalParamsError, match="last must be at least 1"):
        evaluation_start(questions=QuestionSource(last=0), params=params, created_by=None)
    assert not EvalRun.objects.exists()


def test_a_question_file_is_read_from_a_path_or_an_upload(library, tmp_path):
    path = tmp_path / "gold.jsonl"
    path.write_text('{"question": "Q1", "expected_answer": "A1"}\n', encoding="utf-8")
    params = eval_params_build(app=library)
    run = evaluation_start(
        questions=QuestionSource(explicit=["Q0"], path=path, text="Q2\n# a comment\n", name="upload.txt"),
        params=params,
        created_by=None,
    )
    assert [r.question for r in run.results.order_by("position")] == ["Q0", "Q1", "Q2"]
    with pytest.raises(QuestionFileError, match="upload.jsonl, line 1"):
        evaluation_start(
            questions=QuestionSource(text="{", name="upload.jsonl"), params=params, created_by=None
        )


def test_the_inline_run_applies_the_same_checks_and_returns_the_printed_report(library):
    params = eval_params_build(app=library, sweep=["window=0,1"], min_retention=99)
    with pytest.raises(EvalParamsError, match="labelled"):
        evaluation_run_inline(questions=["Q"], params=params)
    report = evaluation_run_inline(questions=[LABELLED], params=params)
    out = report_json(report)
    assert list(out) == ["summary", "results", "sweep"]
    assert out["results"][0]["expected_answer"] == "30 minutes" and out["summary"]["questions"] == 1
    assert not EvalRun.objects.exists(), "the inline run writes nothing"
