"""Evaluation parameters and sweep specs: defaults, and bad input refused with a message that says why."""

from __future__ import annotations

import json

import pytest

from oraculo.evaluation.params import EvalParams, EvalParamsError, SweepSpec, eval_params_build, sweep_parse

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
        ({"app": "a" * 101}, "app is 101 characters long: at most 100"),
        ({"source_type": "s" * 51}, "source_type is 51 characters long: at most 50"),
    ],
)
def test_bad_parameters_say_what_is_wrong(kwargs, message):
    with pytest.raises(EvalParamsError, match=message):
        eval_params_build(**kwargs)


def test_sweep_ranges_are_inclusive_and_free_of_float_drift():
    spec = sweep_parse(["threshold=0.70:0.90:0.02", "window=0,1,2"], default_threshold=0.8, default_window=1)
    assert spec.thresholds == (0.7, 0.72, 0.74, 0.76, 0.78, 0.8, 0.82, 0.84, 0.86, 0.88, 0.9)
    assert spec.windows == (0, 1, 2)
    assert spec.drop_margins == ()
    assert sweep_parse("threshold=0.1:0.3:0.1", default_threshold=0.8, default_window=1).thresholds == (
        0.1,
        0.2,
        0.3,
    )
    assert (
        sweep_parse(["threshold=0.70:0.90:0.03"], default_threshold=0.8, default_window=1).thresholds[-1]
        == 0.88
    )
    margins = sweep_parse(
        ["drop_margin=0.01:0.03:0.01"], default_threshold=0.8, default_window=1
    ).drop_margins
    assert margins == (0.01, 0.02, 0.03)


def test_a_sweep_axis_left_out_is_held_at_its_default():
    assert sweep_parse(["window=0:2:1"], default_threshold=0.81, default_window=1) == SweepSpec(
        thresholds=(0.81,), windows=(0, 1, 2)
    )
    assert sweep_parse(["threshold=0.7,0.8"], default_threshold=0.81, default_window=2) == SweepSpec(
        thresholds=(0.7, 0.8), windows=(2,)
    )
    # the drop margin alone: threshold and window at their defaults, the margins as given
    assert sweep_parse(["drop_margins=0.02,0.04"], default_threshold=0.81, default_window=2) == SweepSpec(
        thresholds=(0.81,), windows=(2,), drop_margins=(0.02, 0.04)
    )


def test_a_stored_sweep_from_before_drop_margins_reads_as_not_sweeping_them():
    stored = {"thresholds": [0.8, 0.9], "windows": [1], "min_retention": 99.0, "min_overlap": None}
    spec = SweepSpec.from_dict(stored)
    assert spec.drop_margins == ()
    assert SweepSpec.from_dict(spec.as_dict()) == spec
    swept = SweepSpec(thresholds=(0.8,), windows=(1,), drop_margins=(0.02, 0.05))
    assert SweepSpec.from_dict(swept.as_dict()) == swept


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
        ("gamma=1", "is not threshold=..., window=... or drop_margin=..."),
        ("threshold", "is not threshold=..., window=... or drop_margin=..."),
        ("drop_margin=-0.01", "outside \\[0, 2\\]"),
        ("drop_margin=0.02,x", "'x' is not a number"),
        ("threshold=0.5:0.99:0.01 window=0,1,2 drop_margin=0.02,0.03", "x 2 drop margins = 300 combinations"),
        ("threshold=0.7 threshold=0.8", "given twice"),
        ("threshold=0:1:0.001", "at most 200"),
        ("threshold=0:1:1e-1000000", "at most 200"),
        ("threshold=0.50:0.99:0.01 window=0,1,2,3,4", "combinations; at most 200"),
        ("", "give threshold"),
    ],
)
def test_bad_sweeps_are_refused_clearly(spec, message):
    with pytest.raises(EvalParamsError, match=message):
        sweep_parse(spec, default_threshold=0.8, default_window=1)
