"""A run's summary over its per-question results: average tokens and reduction, overlap, latency, and for
labelled or synthesized runs answer retention, similarity and citations."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from oraculo.evaluation.measures import mean, retention_pct, rounded
from oraculo.evaluation.params import EvalParams

if TYPE_CHECKING:
    from oraculo.evaluation.harness import QuestionResult, VariantResult


def summary_build(*, results: Sequence[QuestionResult], params: EvalParams) -> dict:
    """The summary's first eight keys are the report's long-standing ones; the added measures follow."""

    def variant(name: str) -> list[VariantResult]:
        return [r.variants[name] for r in results if name in r.variants]

    base, trim = variant("baseline"), variant("trim")
    tokens_base = mean([v.tokens for v in base]) if base else mean([v.tokens_before for v in trim])
    tokens_trim = mean([v.tokens for v in trim])
    reduction = (
        100.0 * (1 - tokens_trim / tokens_base)
        if tokens_trim is not None and tokens_base
        else (0.0 if tokens_trim is not None else None)
    )
    overlaps = [v.overlap_vs_baseline for v in trim if v.overlap_vs_baseline is not None]
    summary = {
        "questions": len(results),
        "top_k": params.top_k,
        "trim_threshold": params.trim_threshold,
        "trim_window": params.trim_window,
        "avg_tokens_baseline": rounded(tokens_base),
        "avg_tokens_trim": rounded(tokens_trim),
        "token_reduction_pct": rounded(reduction),
        "avg_overlap_vs_baseline": rounded(mean(overlaps), 2),
        "variants": list(params.variants),
        "avg_latency_ms_baseline": rounded(mean([v.latency_ms for v in base]), 1),
        "avg_latency_ms_trim": rounded(mean([v.latency_ms for v in trim]), 1),
        "trim_embedding_calls": sum(v.trim_embedding_calls for v in trim),
    }
    labelled = [r for r in results if r.expected_answer]
    summary["labelled"] = len(labelled)
    if labelled:
        for name in params.variants:
            summary[f"answer_in_context_{name}"] = sum(
                1 for r in labelled if name in r.variants and r.variants[name].answer_in_context
            )
        pairs = [
            (r.variants["baseline"].answer_in_context, r.variants["trim"].answer_in_context)
            for r in labelled
            if {"baseline", "trim"} <= set(r.variants)
        ]
        summary["answer_retention_pct"] = rounded(retention_pct(pairs), 1)
    if params.synthesize:
        summary["avg_answer_similarity"] = rounded(
            mean([r.answer_similarity for r in results if r.answer_similarity is not None]), 3
        )
        for name in params.variants:
            answered = [v.synthesis for v in variant(name) if v.synthesis is not None and v.synthesis.answer]
            summary[f"cites_source_pct_{name}"] = rounded(
                100.0 * sum(1 for s in answered if s.cites_source) / len(answered) if answered else None
            )
    summary["errors"] = sum(1 for r in results if r.error)
    return summary
