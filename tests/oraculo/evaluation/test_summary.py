"""A run's summary over hand-made results: the long-standing numbers and answer retention."""

from __future__ import annotations

import pytest

from oraculo.evaluation.harness import QuestionResult
from oraculo.evaluation.measures import (
    retention_pct,
)
from oraculo.evaluation.summary import summary_build
from tests.oraculo.evaluation.test_harness import SEED_SUMMARY_KEYS, hand_result, params


def test_summary_reproduces_the_seed_example_numbers():
    results = [
        hand_result(base_tokens=180, trim_tokens=95, base_ids=[1, 2, 3], trim_ids=[1, 2]),
        hand_result(base_tokens=132, trim_tokens=83, base_ids=[4, 5], trim_ids=[4, 5]),
    ]
    summary = summary_build(
        results=[QuestionResult.from_dict(r) for r in results],
        params=params(trim_threshold=0.38, trim_window=1),
    )
    assert {k: summary[k] for k in SEED_SUMMARY_KEYS} == {
        "questions": 2,
        "top_k": 5,
        "trim_threshold": 0.38,
        "trim_window": 1,
        "avg_tokens_baseline": 156,
        "avg_tokens_trim": 89,
        "token_reduction_pct": 43,
        "avg_overlap_vs_baseline": 0.83,
    }


def test_retention_counts_trim_hits_among_baseline_hits_only():
    assert retention_pct([(True, True), (True, False), (False, True), (True, True)]) == pytest.approx(200 / 3)
    assert retention_pct([(False, False), (False, True)]) is None
    results = [
        hand_result(
            base_tokens=100,
            trim_tokens=50,
            base_ids=[1],
            trim_ids=[1],
            expected="a",
            base_hit=True,
            trim_hit=True,
        ),
        hand_result(
            base_tokens=100,
            trim_tokens=50,
            base_ids=[1],
            trim_ids=[1],
            expected="b",
            base_hit=True,
            trim_hit=False,
        ),
        hand_result(
            base_tokens=100,
            trim_tokens=50,
            base_ids=[1],
            trim_ids=[1],
            expected="c",
            base_hit=False,
            trim_hit=True,
        ),
        hand_result(base_tokens=100, trim_tokens=50, base_ids=[1], trim_ids=[1]),
    ]
    summary = summary_build(results=[QuestionResult.from_dict(r) for r in results], params=params())
    assert summary["labelled"] == 3
    assert summary["answer_in_context_baseline"] == 2
    assert summary["answer_in_context_trim"] == 2
    assert summary["answer_retention_pct"] == 50.0
