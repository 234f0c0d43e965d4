"""Synthesized evaluations: an answer per variant from the (fake) LLM, their similarity and citations, and runs
that finish with the error kept per question when the LLM fails or is missing."""

from __future__ import annotations

import pytest

from oraculo.evaluation.harness import evaluation_run
from oraculo.evaluation.params import eval_params_build
from oraculo.evaluation.questions import LabelledQuestion
from oraculo.evaluation.services import eval_run_create
from oraculo.models import EvalRun
from tests.oraculo.evaluation.test_worker import run_worker

QUESTIONS = [LabelledQuestion("How do I reset my password?"), LabelledQuestion("When are invoices sent?")]


@pytest.mark.django_db
def test_each_variant_gets_an_answer_with_similarity_and_citations(library, fake_llm):
    report = evaluation_run(
        questions=QUESTIONS, params=eval_params_build(app=library, synthesize=True, trim_threshold=0.85)
    )
    assert len(fake_llm.requests) == 4, "one chat call per question and variant"
    for result in report.as_dict()["results"]:
        base, trim = result["variants"]["baseline"], result["variants"]["trim"]
        for variant in (base, trim):
            assert variant["answer"].startswith("According to [Doc: ")
            assert variant["cites_source"] is True
            assert variant["answer_model"] == "fake-chat-1"
        assert 0.0 < result["answer_similarity"] <= 1.0
        assert "error" not in result
    identical = [
        r
        for r in report.as_dict()["results"]
        if r["variants"]["baseline"]["answer"] == r["variants"]["trim"]["answer"]
    ]
    assert all(r["answer_similarity"] == pytest.approx(1.0, abs=1e-3) for r in identical)
    summary = report.summary
    assert summary["cites_source_pct_baseline"] == summary["cites_source_pct_trim"] == 100
    assert 0 < summary["avg_answer_similarity"] <= 1 and summary["errors"] == 0


@pytest.mark.django_db
def test_a_run_whose_llm_fails_still_finishes_with_the_error_per_question(library, fake_llm, monkeypatch):
    fake_llm.reset("error")
    run = eval_run_create(questions=QUESTIONS, params=eval_params_build(app=library, synthesize=True))
    run_worker(monkeypatch)
    run.refresh_from_db()
    assert run.status == EvalRun.Status.DONE and run.error == ""
    assert run.summary["errors"] == 2 and run.summary["avg_answer_similarity"] is None
    for row in run.results.all():
        assert "HTTP 500" in row.error and row.error.startswith("baseline: ")
        assert "trim: " in row.error
        assert row.variants["baseline"]["answer"] is None and row.variants["trim"]["tokens"] > 0
        assert "HTTP 500" in row.variants["trim"]["answer_error"]
        assert row.answer_similarity is None


@pytest.mark.django_db
def test_without_an_llm_each_question_says_so(library, fake_llm_server, admin_client, monkeypatch):
    fake_llm_server.reset()
    run = eval_run_create(questions=QUESTIONS[:1], params=eval_params_build(app=library, synthesize=True))
    run_worker(monkeypatch)
    run.refresh_from_db()
    assert run.status == EvalRun.Status.DONE
    row = run.results.get()
    assert "no LLM is configured" in row.error
    assert fake_llm_server.requests == []
    html = admin_client.get(f"/admin/oraculo/evalrun/{run.pk}/change/").content.decode()
    assert "answer baseline" in html and "no LLM is configured" in html
