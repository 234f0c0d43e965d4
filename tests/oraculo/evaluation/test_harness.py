"""The A/B harness on the fixture library: the report's shape key by key, variants, labels, progress, and a run
with a sweep measuring exactly what the A/B run measures. Its helpers serve the other evaluation tests."""

from __future__ import annotations

import json

import pytest

from oraculo.evaluation.harness import evaluation_run
from oraculo.evaluation.measures import (
    overlap_share,
    retention_pct,
)
from oraculo.evaluation.params import EvalParams, eval_params_build
from oraculo.evaluation.questions import LabelledQuestion

SEED_SUMMARY_KEYS = [
    "questions",
    "top_k",
    "trim_threshold",
    "trim_window",
    "avg_tokens_baseline",
    "avg_tokens_trim",
    "token_reduction_pct",
    "avg_overlap_vs_baseline",
]
SEED_VARIANT_KEYS = ["chunk_ids", "top_score", "tokens", "tokens_before"]

GOLD = [
    LabelledQuestion("How long is a password reset link valid?", "30 minutes"),
    LabelledQuestion("When does deleting an account become permanent?", "after 14 days"),
    LabelledQuestion("How many API requests per minute are allowed per token?", "100 requests per minute"),
    LabelledQuestion("When are invoices sent?", "on the first day of each month"),
    LabelledQuestion("¿Cuántos caracteres debe tener una contraseña?", "12 caracteres"),
    LabelledQuestion("¿Cuánto cuesta el plan Equipo?", "11 € por puesto al mes"),
]


def params(**kw) -> EvalParams:
    return eval_params_build(**kw)


def hand_result(
    *,
    base_tokens: int,
    trim_tokens: int,
    base_ids,
    trim_ids,
    base_hit=None,
    trim_hit=None,
    expected: str = "",
) -> dict:
    base = {
        "chunk_ids": base_ids,
        "top_score": 0.9,
        "tokens": base_tokens,
        "tokens_before": base_tokens,
        "latency_ms": 10.0,
    }
    trim = {
        "chunk_ids": trim_ids,
        "top_score": 0.9,
        "tokens": trim_tokens,
        "tokens_before": base_tokens,
        "overlap_vs_baseline": round(overlap_share(base_ids, trim_ids), 2),
        "latency_ms": 12.0,
        "trim_embedding_calls": 0,
    }
    result = {"question": "q", "variants": {"baseline": base, "trim": trim}}
    if expected:
        result["expected_answer"] = expected
        base["answer_in_context"], trim["answer_in_context"] = base_hit, trim_hit
    return result


# The seed's shape, on the real fixture library


@pytest.mark.django_db
def test_output_has_the_seeds_shape_key_by_key(library):
    questions = [
        LabelledQuestion("How do I reset my password?"),
        LabelledQuestion("¿Cómo elimino mi cuenta?"),
    ]
    report = evaluation_run(
        questions=questions, params=params(app=library, trim_threshold=0.85, trim_window=1)
    )
    out = json.loads(json.dumps(report.as_dict()))

    assert list(out) == ["summary", "results"]
    summary = out["summary"]
    assert list(summary)[: len(SEED_SUMMARY_KEYS)] == SEED_SUMMARY_KEYS
    assert summary["questions"] == 2
    assert summary["top_k"] == 5
    assert summary["trim_threshold"] == 0.85
    assert summary["trim_window"] == 1
    for key in ("avg_tokens_baseline", "avg_tokens_trim", "token_reduction_pct"):
        assert isinstance(summary[key], int), key
    assert isinstance(summary["avg_overlap_vs_baseline"], float)
    assert summary["avg_overlap_vs_baseline"] == round(summary["avg_overlap_vs_baseline"], 2)
    assert summary["trim_embedding_calls"] == 0

    assert len(out["results"]) == 2
    for question, result in zip(questions, out["results"]):
        assert list(result) == ["question", "variants"]
        assert result["question"] == question.question
        assert list(result["variants"]) == ["baseline", "trim"]
        base, trim = result["variants"]["baseline"], result["variants"]["trim"]
        assert list(base)[:4] == SEED_VARIANT_KEYS
        assert list(trim)[:5] == [*SEED_VARIANT_KEYS, "overlap_vs_baseline"]
        assert all(isinstance(i, int) for i in base["chunk_ids"]) and len(base["chunk_ids"]) == 5
        assert base["tokens"] == base["tokens_before"] == trim["tokens_before"]
        assert trim["tokens"] <= base["tokens"]
        assert set(trim["chunk_ids"]) <= set(base["chunk_ids"])
        assert base["top_score"] == round(base["top_score"], 3) and 0 < base["top_score"] <= 1
        assert trim["overlap_vs_baseline"] == round(
            len(set(trim["chunk_ids"]) & set(base["chunk_ids"])) / len(base["chunk_ids"]), 2
        )
        assert base["latency_ms"] > 0 and trim["latency_ms"] >= base["latency_ms"]
        assert trim["trim_embedding_calls"] == 0
        assert "answer" not in base and "answer_in_context" not in base
    reduction = round(100 * (1 - summary["avg_tokens_trim"] / summary["avg_tokens_baseline"]))
    assert abs(summary["token_reduction_pct"] - reduction) <= 1


@pytest.mark.django_db
def test_only_the_chosen_variants_are_reported(library):
    report = evaluation_run(
        questions=[LabelledQuestion("How do I reset my password?")],
        params=params(app=library, variants=["baseline"]),
    )
    assert list(report.as_dict()["results"][0]["variants"]) == ["baseline"]
    assert report.summary["avg_tokens_trim"] is None and report.summary["token_reduction_pct"] is None

    report = evaluation_run(
        questions=[LabelledQuestion("How do I reset my password?")],
        params=params(app=library, variants=["trim"]),
    )
    assert list(report.as_dict()["results"][0]["variants"]) == ["trim"]
    assert (
        report.summary["avg_tokens_baseline"]
        == report.as_dict()["results"][0]["variants"]["trim"]["tokens_before"]
    )


@pytest.mark.django_db
def test_labelled_questions_report_answer_in_context_and_retention(library):
    report = evaluation_run(questions=GOLD, params=params(app=library, trim_threshold=0.85, trim_window=1))
    for question, result in zip(GOLD, report.as_dict()["results"]):
        assert result["expected_answer"] == question.expected_answer
        for variant in result["variants"].values():
            assert isinstance(variant["answer_in_context"], bool)
    hits = [
        (r["variants"]["baseline"]["answer_in_context"], r["variants"]["trim"]["answer_in_context"])
        for r in report.as_dict()["results"]
    ]
    assert sum(b for b, _ in hits) >= 5, "the fixture library holds these answers"
    assert report.summary["labelled"] == len(GOLD)
    assert report.summary["answer_in_context_baseline"] == sum(b for b, _ in hits)
    assert report.summary["answer_retention_pct"] == round(retention_pct(hits), 1)


@pytest.mark.django_db
def test_progress_is_reported_after_each_question(library):
    seen = []
    evaluation_run(
        questions=GOLD[:3],
        params=params(app=library),
        on_progress=lambda done, total, result: seen.append((done, total, result.question)),
    )
    assert seen == [(i + 1, 3, q.question) for i, q in enumerate(GOLD[:3])]


@pytest.mark.django_db
def test_an_evaluation_with_a_sweep_reports_both(library):
    p = params(app=library, sweep=["threshold=0.8,0.9", "window=0,1"], min_retention=90)
    report = evaluation_run(questions=GOLD[:3], params=p)
    out = report.as_dict()
    assert list(out) == ["summary", "results", "sweep"]
    assert len(out["sweep"]["rows"]) == 4
    assert out["sweep"]["floor"] == {"min_retention": 90.0, "min_overlap": None}
    assert out["sweep"]["env"] == (report.sweep.recommended.env_lines if report.sweep.recommended else [])


@pytest.mark.django_db
def test_the_sweep_measures_exactly_what_the_ab_run_measures(library):
    p = params(app=library, trim_threshold=0.85, trim_window=1, sweep=["threshold=0.8,0.85", "window=0,1"])
    report = evaluation_run(questions=GOLD, params=p)
    row = next(r for r in report.sweep.rows if (r.threshold, r.window) == (0.85, 1))
    trim_tokens = [r["variants"]["trim"]["tokens"] for r in report.as_dict()["results"]]
    assert row.avg_tokens_trim == round(sum(trim_tokens) / len(trim_tokens))
    assert report.sweep.avg_tokens_baseline == report.summary["avg_tokens_baseline"]
    assert row.answer_retention_pct == report.summary["answer_retention_pct"]


@pytest.mark.django_db
def test_chunks_dropped_by_the_trimmer_lower_the_overlap(library, settings):
    settings.RETRIEVAL_TRIM_DROP_MARGIN = 0.0
    report = evaluation_run(questions=GOLD, params=params(app=library, trim_threshold=0.95, trim_window=0))
    overlaps = []
    for result in report.as_dict()["results"]:
        base, trim = result["variants"]["baseline"], result["variants"]["trim"]
        assert set(trim["chunk_ids"]) < set(base["chunk_ids"])
        assert trim["overlap_vs_baseline"] == round(len(trim["chunk_ids"]) / len(base["chunk_ids"]), 2)
        overlaps.append(trim["overlap_vs_baseline"])
    assert report.summary["avg_overlap_vs_baseline"] == round(
        sum(
            len(r["variants"]["trim"]["chunk_ids"]) / len(r["variants"]["baseline"]["chunk_ids"])
            for r in report.as_dict()["results"]
        )
        / len(report.results),
        2,
    )
    assert max(overlaps) < 1.0
