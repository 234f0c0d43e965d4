"""The report's outward shape: the JSON `eval_retrieval --format json` prints (and a stored run reproduces, key
order included), and the CSV for a spreadsheet."""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from oraculo.evaluation.params import VARIANTS

if TYPE_CHECKING:
    from oraculo.evaluation.harness import EvalReport

SUMMARY_ORDER = (
    "questions",
    "top_k",
    "trim_threshold",
    "trim_window",
    "avg_tokens_baseline",
    "avg_tokens_trim",
    "token_reduction_pct",
    "avg_overlap_vs_baseline",
    "variants",
    "avg_latency_ms_baseline",
    "avg_latency_ms_trim",
    "trim_embedding_calls",
    "labelled",
    "answer_in_context_baseline",
    "answer_in_context_trim",
    "answer_retention_pct",
    "avg_answer_similarity",
    "cites_source_pct_baseline",
    "cites_source_pct_trim",
    "errors",
)
VARIANT_ORDER = (
    "chunk_ids",
    "top_score",
    "tokens",
    "tokens_before",
    "overlap_vs_baseline",
    "answer",
    "latency_ms",
    "trim_embedding_calls",
    "answer_in_context",
    "cites_source",
    "answer_model",
    "answer_latency_ms",
    "answer_error",
)
SWEEP_ORDER = (
    "questions",
    "top_k",
    "labelled",
    "avg_tokens_baseline",
    "answer_in_context_baseline",
    "quality",
    "floor",
    "rows",
    "recommended",
    "env",
    "note",
)


FLOOR_ORDER = ("min_retention", "min_overlap")


def ordered(data: Mapping, order: Sequence[str]) -> dict:
    """`data` with its keys in `order` (others after): PostgreSQL's jsonb forgets the order we wrote."""
    rank = {key: i for i, key in enumerate(order)}
    return dict(sorted(data.items(), key=lambda item: rank.get(item[0], len(rank))))


def report_json(report: EvalReport) -> dict:
    """The JSON of a report, exactly as `eval_retrieval --format json` prints it: `summary`, `results` (one per
    question, its variants side by side) and, for a sweep, `sweep`."""
    out = {"summary": report.summary, "results": [r.as_dict() for r in report.results]}
    if report.sweep is not None:
        out["sweep"] = report.sweep.as_dict()
    return out


CSV_VARIANT_FIELDS = (
    "tokens",
    "tokens_before",
    "top_score",
    "chunk_ids",
    "overlap_vs_baseline",
    "answer_in_context",
    "latency_ms",
    "answer",
    "cites_source",
    "answer_error",
)


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_safe(value):
    """Text that a spreadsheet would run as a formula (a question such as `=HYPERLINK(...)`) gets a leading
    apostrophe, so it shows as the text it is; numbers are left alone."""
    return f"'{value}" if isinstance(value, str) and value.startswith(FORMULA_STARTS) else value


def report_csv(report: Mapping) -> str:
    """One row per question, the variants side by side: for a spreadsheet, so no cell is a formula."""
    variants = report.get("summary", {}).get("variants") or list(VARIANTS)
    header = ["position", "question", "expected_answer"]
    header += [f"{v}_{f}" for v in variants for f in CSV_VARIANT_FIELDS]
    header += ["answer_similarity", "error"]
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(header)
    for position, result in enumerate(report.get("results", []), start=1):
        row = [position, result.get("question", ""), result.get("expected_answer", "")]
        for v in variants:
            data = result.get("variants", {}).get(v, {})
            for f in CSV_VARIANT_FIELDS:
                value = data.get(f)
                row.append(
                    " ".join(map(str, value)) if isinstance(value, list) else ("" if value is None else value)
                )
        row += [result.get("answer_similarity", ""), result.get("error", "")]
        writer.writerow([spreadsheet_safe(cell) for cell in row])
    return out.getvalue()
