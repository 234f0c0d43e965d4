"""`manage.py eval_retrieval`: the thin command door onto the engine."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from oraculo.models import Channel, EvalRun, OraculoQuery
from tests.oraculo.evaluation.test_harness import GOLD, SEED_SUMMARY_KEYS

ROOT = Path(__file__).resolve().parents[2]


def run(*args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("eval_retrieval", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def gold_file(tmp_path: Path) -> Path:
    path = tmp_path / "gold.jsonl"
    path.write_text(
        "".join(
            json.dumps({"question": q.question, "expected_answer": q.expected_answer}, ensure_ascii=False)
            + "\n"
            for q in GOLD
        ),
        encoding="utf-8",
    )
    return path


@pytest.mark.django_db
def test_json_format_prints_the_seeds_shape(library):
    out, _ = run(
        "--question",
        "How do I reset my password?",
        "--question",
        "When are invoices sent?",
        "--app",
        library,
        "--top-k",
        "3",
        "--trim-threshold",
        "0.85",
        "--trim-window",
        "0",
        "--format",
        "json",
    )
    report = json.loads(out)
    assert list(report["summary"])[:8] == SEED_SUMMARY_KEYS
    assert report["summary"]["questions"] == 2
    assert report["summary"]["top_k"] == 3
    assert (report["summary"]["trim_threshold"], report["summary"]["trim_window"]) == (0.85, 0)
    assert [r["question"] for r in report["results"]] == [
        "How do I reset my password?",
        "When are invoices sent?",
    ]
    assert all(len(r["variants"]["baseline"]["chunk_ids"]) == 3 for r in report["results"])


@pytest.mark.django_db
def test_table_is_the_default_and_labelled_files_report_retention(library, tmp_path):
    out, _ = run("--questions-file", str(gold_file(tmp_path)), "--app", library)
    assert "A/B: retrieval without and with trimming" in out
    assert "How long is a password reset link valid?" in out
    assert "answer retention" in out
    assert "embedding calls made by the trimmer: 0" in out


@pytest.mark.django_db
def test_output_file_and_save_store_the_run(library, tmp_path):
    target = tmp_path / "report.json"
    out, err = run(
        "--questions-file",
        str(gold_file(tmp_path)),
        "--app",
        library,
        "--format",
        "json",
        "--output",
        str(target),
        "--save",
    )
    assert out == ""
    report = json.loads(target.read_text(encoding="utf-8"))
    run_ = EvalRun.objects.get()
    assert f"Saved as evaluation run #{run_.pk}" in err
    assert run_.status == EvalRun.Status.DONE and run_.progress == run_.total == len(GOLD)
    assert run_.summary == report["summary"]
    rows = list(run_.results.order_by("position"))
    assert [r.question for r in rows] == [q.question for q in GOLD]
    assert [r.expected_answer for r in rows] == [q.expected_answer for q in GOLD]
    assert rows[0].variants == report["results"][0]["variants"]


@pytest.mark.django_db
def test_without_questions_it_takes_the_last_asked_ones_of_the_app(library):
    OraculoQuery.objects.create(question="How do I reset my password?", app=library)
    OraculoQuery.objects.create(question="Not this app", app="other")
    out, _ = run("--app", library, "--format", "json")
    assert [r["question"] for r in json.loads(out)["results"]] == ["How do I reset my password?"]


@pytest.mark.django_db
def test_the_last_asked_ones_can_leave_agents_questions_out(library):
    OraculoQuery.objects.create(question="How do I reset my password?", app=library, channel=Channel.WIDGET)
    OraculoQuery.objects.create(question="When are invoices sent?", app=library, channel=Channel.MCP)
    out, _ = run("--app", library, "--channels", "widget", "api", "--format", "json")
    assert [r["question"] for r in json.loads(out)["results"]] == ["How do I reset my password?"]
    out, _ = run("--app", library, "--channels", "mcp", "--format", "json")
    assert [r["question"] for r in json.loads(out)["results"]] == ["When are invoices sent?"]


@pytest.mark.django_db
def test_no_questions_found_exits_1():
    with pytest.raises(CommandError, match="No questions found for app 'nothing'") as err:
        run("--app", "nothing")
    assert err.value.returncode == 1


def sweep(library: str, tmp_path, *axes: str, retention: str, fmt: str = "table") -> str:
    """The gold file swept over `axes` in `library`, with a retention floor: what the command prints."""
    args = ["--questions-file", str(gold_file(tmp_path)), "--app", library, "--sweep", *axes]
    out, _ = run(*args, "--min-retention", retention, "--format", fmt)
    return out


@pytest.mark.django_db
def test_sweep_prints_the_table_the_front_and_the_lines_to_paste(library, tmp_path):
    out = sweep(library, tmp_path, "threshold=0.80:0.90:0.05", "window=0,1", retention="99")
    assert "Calibration sweep" in out and "retention %" in out and "◀ recommended" in out
    lines = out.strip().splitlines()
    assert lines[-2].startswith("RETRIEVAL_TRIM_THRESHOLD=") and lines[-1].startswith(
        "RETRIEVAL_TRIM_WINDOW="
    )
    assert "answer retention >= 99%" in out

    out = sweep(library, tmp_path, "threshold=0.80:0.90:0.05", "window=0,1", retention="99", fmt="json")
    report = json.loads(out)["sweep"]
    assert len(report["rows"]) == 6
    assert report["recommended"]["answer_retention_pct"] >= 99
    assert lines[-2:] == report["env"]


@pytest.mark.django_db
def test_a_sweep_over_drop_margins_shows_them_and_pastes_the_chosen_one(library, tmp_path):
    out = sweep(library, tmp_path, "window=1", "drop_margin=0.02,0.5", retention="0")
    assert "drop margin" in out
    lines = out.strip().splitlines()
    assert lines[-3].startswith("RETRIEVAL_TRIM_THRESHOLD=") and lines[-1].startswith(
        "RETRIEVAL_TRIM_DROP_MARGIN="
    )
    assert "recommended: threshold" in out and ", drop margin " in out


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--question", "Q", "--top-k", "50"], "^--top-k must be a whole number between 1 and 20"),
        (
            ["--question", "Q", "--trim-window", "11"],
            "^--trim-window must be a whole number between 0 and 10",
        ),
        (
            ["--question", "Q", "--sweep", "window=0,1", "--min-overlap", "150"],
            "^--min-overlap is a percentage between 0 and 100",
        ),
        (["--question", "Q", "--sweep", "threshold=0.9:0.7:0.1"], "is after the stop"),
        (["--question", "Q", "--sweep", "speed=3"], "is not threshold=..., window=... or drop_margin=..."),
        (["--question", "Q", "--trim-threshold", "2"], "^--trim-threshold is a cosine similarity"),
        (["--question", "Q", "--min-overlap", "95"], "give a sweep"),
        (
            ["--question", "Q", "--sweep", "window=0,1", "--min-retention", "99"],
            "--min-retention needs labelled",
        ),
        (["--question", "Q", "--last", "3"], "--last picks recent questions"),
        (["--question", "Q", "--channels", "mcp"], "--channels picks recent questions"),
        (["--last", "0"], "--last must be at least 1"),
    ],
)
def test_bad_arguments_exit_2_with_a_clear_message(args, message):
    with pytest.raises(CommandError, match=message) as err:
        run(*args)
    assert err.value.returncode == 2


@pytest.mark.django_db
def test_a_malformed_questions_file_names_the_line_and_exits_2(tmp_path):
    path = tmp_path / "gold.jsonl"
    path.write_text(
        '{"question": "Q1"}\n# fine\n{"question": "Q2", "expected_answer": 3}\n', encoding="utf-8"
    )
    with pytest.raises(
        CommandError, match=r"gold.jsonl, line 3: \"expected_answer\" must be a string"
    ) as err:
        run("--questions-file", str(path))
    assert err.value.returncode == 2


def test_from_the_shell_bad_arguments_exit_with_code_2():
    result = subprocess.run(
        [sys.executable, "manage.py", "eval_retrieval", "--question", "Q", "--sweep", "threshold=abc"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2
    assert "sweep threshold: 'abc' is not a number" in result.stderr
    result = subprocess.run(
        [sys.executable, "manage.py", "eval_retrieval", "--format", "xml"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2
    assert "invalid choice: 'xml'" in result.stderr


@pytest.mark.django_db
def test_user_text_is_printed_literally_and_the_run_is_still_saved(library):
    """A question is not rich markup: "[/x]" used to crash the table before --save stored the run."""
    from oraculo.models import EvalRun

    question = "Why does [/x] or [bold]this[/bold] appear in my password reset?"
    out, _ = run("--question", question, "--app", library, "--save")
    assert "[/x]" in out and "[bold]this[/bold]" in out
    assert EvalRun.objects.get().results.get().question == question
