"""bench/load.py measures this machine only, within bounds."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
import load


@pytest.mark.parametrize(
    "args",
    [
        ["--url", "http://example.com:8000", "--token", "t"],
        ["--url", "http://10.0.0.1:8000", "--token", "t"],
        ["--url", "https://127.0.0.1:8000", "--token", "t"],
        ["--clients", "500", "--token", "t"],
        ["--duration", "3600", "--token", "t"],
        ["--url", "http://127.0.0.1:8000"],
        ["--repeat-share", "1.5", "--token", "t"],
    ],
)
def test_refuses_anything_but_a_bounded_loopback_run(args, capsys):
    with pytest.raises(SystemExit) as exit_:
        load.main(args)
    assert exit_.value.code == 2


def test_percentiles():
    values = [float(v) for v in range(1, 101)]
    assert (load.percentile(values, 50), load.percentile(values, 95), load.percentile(values, 99)) == (
        50,
        95,
        99,
    )


def test_half_the_questions_repeat_and_the_others_are_new():
    asked = [load.question_for(client=c, i=i, repeat_share=0.5) for c in range(10) for i in range(200)]
    repeats = [q for q in asked if q in load.QUESTIONS]
    assert 0.45 < len(repeats) / len(asked) < 0.55
    fresh = [q for q in asked if q not in load.QUESTIONS]
    assert len(set(fresh)) == len(fresh), "a new question is never asked twice"
    assert all(load.question_for(client=1, i=i, repeat_share=1.0) in load.QUESTIONS for i in range(50))
