"""The calibration sweep on the fixture library: the recommendation keeps the floor with the largest cut."""

from __future__ import annotations

import pytest

from oraculo.evaluation.harness import calibration_sweep
from oraculo.evaluation.questions import LabelledQuestion
from tests.oraculo.evaluation.test_harness import GOLD

# The calibration sweep on the fixture library


@pytest.fixture
def seed_trimming(settings):
    """The seed's trimming rules (no query-level margins), so these expectations do not move with tuning."""
    settings.RETRIEVAL_TRIM_MIN_SENTENCES = 1
    settings.RETRIEVAL_TRIM_RELATIVE_MARGIN = None
    settings.RETRIEVAL_TRIM_DROP_MARGIN = None
    settings.RETRIEVAL_TRIM_DROP_SCORE_MARGIN = None
    settings.RETRIEVAL_TRIM_PASSAGE_MARGIN = None
    settings.RETRIEVAL_TRIM_WINDOW_SPREAD = None
    settings.RETRIEVAL_TRIM_PARAGRAPH_FOLLOW = 0
    settings.RETRIEVAL_TRIM_REASON_FOLLOW = 0
    settings.RETRIEVAL_TRIM_GAP_WORDS = 0
    settings.RETRIEVAL_TRIM_PARAGRAPH_START = 0
    settings.RETRIEVAL_TRIM_NEXT_STEPS = 0
    settings.RETRIEVAL_TRIM_EARLIER_STEPS = 0
    settings.RETRIEVAL_TRIM_HOW_STEPS = 0


@pytest.mark.django_db
def test_sweep_recommends_the_largest_reduction_that_keeps_the_floor(library, seed_trimming):
    report = calibration_sweep(
        questions=GOLD,
        thresholds=[0.75, 0.8, 0.85, 0.9, 0.95],
        windows=[0, 1, 2],
        filters={"app": library},
        min_retention=100,
    )
    assert len(report.rows) == 15
    assert report.quality == "answer_retention_pct"
    assert report.labelled == len(GOLD) and report.answer_in_context_baseline >= 5
    assert all(row.trim_embedding_calls == 0 for row in report.rows)
    assert any(row.token_reduction_pct > 0 for row in report.rows)
    keeping = [row for row in report.rows if row.answer_retention_pct == 100.0]
    assert [row.meets_floor for row in report.rows] == [row in keeping for row in report.rows]
    rec = report.recommended
    assert rec is not None and rec.meets_floor and rec.answer_retention_pct >= 100
    assert rec.token_reduction_pct == max(row.token_reduction_pct for row in keeping)
    assert any(
        not row.meets_floor and row.token_reduction_pct > rec.token_reduction_pct for row in report.rows
    ), "the floor binds: cutting harder loses answers on this gold set"
    assert rec.env_lines == [
        f"RETRIEVAL_TRIM_THRESHOLD={rec.threshold!r}",
        f"RETRIEVAL_TRIM_WINDOW={rec.window}",
    ]
    front = [row for row in report.rows if row.pareto]
    assert rec in front
    for row in report.rows:
        beaten = any(
            o.token_reduction_pct >= row.token_reduction_pct
            and o.answer_retention_pct >= row.answer_retention_pct
            and (
                o.token_reduction_pct > row.token_reduction_pct
                or o.answer_retention_pct > row.answer_retention_pct
            )
            for o in report.rows
        )
        assert row.pareto == (not beaten)


@pytest.mark.django_db
def test_a_looser_floor_never_recommends_less_reduction(library, seed_trimming):
    strict = calibration_sweep(
        questions=GOLD,
        thresholds=[0.8, 0.9, 0.95],
        windows=[0, 1],
        filters={"app": library},
        min_retention=100,
    )
    loose = calibration_sweep(
        questions=GOLD, thresholds=[0.8, 0.9, 0.95], windows=[0, 1], filters={"app": library}, min_retention=0
    )
    assert loose.recommended.token_reduction_pct == max(r.token_reduction_pct for r in loose.rows)
    assert loose.recommended.token_reduction_pct >= strict.recommended.token_reduction_pct


@pytest.mark.django_db
def test_sweep_without_labels_uses_overlap_and_an_impossible_floor_recommends_nothing(library, seed_trimming):
    questions = [LabelledQuestion(q.question) for q in GOLD]
    report = calibration_sweep(
        questions=questions, thresholds=[0.8, 0.9], windows=[0, 1], filters={"app": library}
    )
    assert report.quality == "avg_overlap_vs_baseline"
    assert report.floor == {"min_retention": None, "min_overlap": 95.0}
    assert report.recommended is not None and report.recommended.avg_overlap_vs_baseline >= 0.95
    assert all(row.answer_retention_pct is None for row in report.rows)

    report = calibration_sweep(
        questions=[LabelledQuestion("How do I reset my password?", "no such answer")],
        thresholds=[0.8],
        windows=[1],
        filters={"app": library},
        min_retention=99,
    )
    assert report.recommended is None
    assert "never contains the expected answers" in report.note


def test_the_pasted_threshold_is_the_one_tested_to_the_last_digit():
    from oraculo.evaluation.sweep import SweepRow

    fields = {f: None for f in SweepRow.__dataclass_fields__}
    row = SweepRow(**{**fields, "threshold": 0.8512345, "window": 1})
    assert row.env_lines == ["RETRIEVAL_TRIM_THRESHOLD=0.8512345", "RETRIEVAL_TRIM_WINDOW=1"]


@pytest.mark.django_db
def test_a_sweep_over_drop_margins_trims_with_each_and_pastes_the_chosen_one(library):
    report = calibration_sweep(
        questions=GOLD,
        thresholds=[0.9],
        windows=[1],
        drop_margins=[0.0, 0.5],
        filters={"app": library},
        min_retention=0,
    )
    narrow, wide = report.rows
    assert (narrow.drop_margin, wide.drop_margin) == (0.0, 0.5)
    # a passage whose best line is under the question's best goes at 0 and stays at 0.5: fewer tokens, and
    # never an answer more
    assert narrow.token_reduction_pct > wide.token_reduction_pct
    assert narrow.answer_retention_pct <= wide.answer_retention_pct
    rec = report.recommended
    assert rec == narrow  # the floor is 0: the largest cut
    assert rec.env_lines == [
        "RETRIEVAL_TRIM_THRESHOLD=0.9",
        "RETRIEVAL_TRIM_WINDOW=1",
        "RETRIEVAL_TRIM_DROP_MARGIN=0.0",
    ]
    # not swept: the configured margin, and no line for it
    plain = calibration_sweep(questions=GOLD, thresholds=[0.9], windows=[1], filters={"app": library})
    assert plain.rows[0].drop_margin is None
    assert [line.split("=")[0] for line in plain.rows[0].env_lines] == [
        "RETRIEVAL_TRIM_THRESHOLD",
        "RETRIEVAL_TRIM_WINDOW",
    ]
