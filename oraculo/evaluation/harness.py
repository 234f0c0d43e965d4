"""The A/B harness: the same questions retrieved with and without sentence trimming, compared.

Plain Python with no writes, so the management command, a worker (for the admin and the API) and the benches all
run exactly this. Each question is prepared once (`retrieval_prepare`: embedded, searched, its tokens counted);
the variants and every sweep combination trim that preparation (`retrieval_trim`), so only the trimming differs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from django.conf import settings

from biblioteca.embeddings import get_embedder
from biblioteca.retrieval import PreparedRetrieval, resolve_trim_params, retrieval_prepare, retrieval_trim
from biblioteca.search import RetrievedChunk
from oraculo.evaluation.export import VARIANT_ORDER, ordered, report_json
from oraculo.evaluation.measures import answer_in_context, overlap_share, rounded
from oraculo.evaluation.params import DEFAULT_TOP_K, VARIANTS, EvalParams, SweepSpec, percent_param
from oraculo.evaluation.questions import LabelledQuestion
from oraculo.evaluation.summary import summary_build
from oraculo.evaluation.sweep import Sweep, SweepReport
from oraculo.evaluation.synthesis import Synthesis, answer_similarity, synthesis_get

ProgressCallback = Callable[[int, int, "QuestionResult | None"], None]


@dataclass
class VariantResult:
    """One question under one variant. The trim variant also has its overlap with the baseline and the
    trimmer's embedding calls; `answer_in_context` is None for an unlabelled question."""

    name: str
    chunk_ids: list[int]
    top_score: float
    tokens: int
    tokens_before: int
    latency_ms: float
    overlap_vs_baseline: float | None = None
    trim_embedding_calls: int = 0
    answer_in_context: bool | None = None
    synthesis: Synthesis | None = None

    def as_dict(self) -> dict:
        out: dict = {
            "chunk_ids": self.chunk_ids,
            "top_score": self.top_score,
            "tokens": self.tokens,
            "tokens_before": self.tokens_before,
            "latency_ms": self.latency_ms,
        }
        if self.name == "trim":
            out |= {
                "overlap_vs_baseline": self.overlap_vs_baseline,
                "trim_embedding_calls": self.trim_embedding_calls,
            }
        if self.answer_in_context is not None:
            out["answer_in_context"] = self.answer_in_context
        if self.synthesis is not None:
            out |= self.synthesis.as_dict()
        return ordered(out, VARIANT_ORDER)

    @classmethod
    def from_dict(cls, name: str, data: Mapping) -> VariantResult:
        """A variant as `as_dict` wrote it (a stored run's row, a saved report)."""
        synthesis = None
        if "answer" in data:
            synthesis = Synthesis(
                answer=data["answer"],
                cites_source=bool(data.get("cites_source")),
                latency_ms=data.get("answer_latency_ms", 0.0),
                model=data.get("answer_model", ""),
                error=data.get("answer_error", ""),
            )
        return cls(
            name=name,
            chunk_ids=list(data["chunk_ids"]),
            top_score=data["top_score"],
            tokens=data["tokens"],
            tokens_before=data["tokens_before"],
            latency_ms=data["latency_ms"],
            overlap_vs_baseline=data.get("overlap_vs_baseline"),
            trim_embedding_calls=data.get("trim_embedding_calls", 0),
            answer_in_context=data.get("answer_in_context"),
            synthesis=synthesis,
        )


@dataclass
class QuestionResult:
    question: str
    variants: dict[str, VariantResult]
    expected_answer: str = ""
    answer_similarity: float | None = None
    error: str = ""

    def as_dict(self) -> dict:
        out: dict = {"question": self.question}
        if self.expected_answer:
            out["expected_answer"] = self.expected_answer
        out["variants"] = {name: v.as_dict() for name, v in self.variants.items()}
        if self.answer_similarity is not None:
            out["answer_similarity"] = self.answer_similarity
        if self.error:
            out["error"] = self.error
        return out

    @classmethod
    def from_dict(cls, data: Mapping) -> QuestionResult:
        return cls(
            question=data["question"],
            variants={name: VariantResult.from_dict(name, v) for name, v in data.get("variants", {}).items()},
            expected_answer=data.get("expected_answer", ""),
            answer_similarity=data.get("answer_similarity"),
            error=data.get("error", ""),
        )


@dataclass
class PreparedQuestion:
    question: LabelledQuestion
    retrieval: PreparedRetrieval

    @property
    def chunks(self) -> list[RetrievedChunk]:
        return self.retrieval.chunks

    @property
    def tokens_before(self) -> int:
        return self.retrieval.tokens_before

    @property
    def chunk_ids(self) -> list[int]:
        return self.retrieval.chunk_ids

    def holds_answer(self, chunks: Sequence[RetrievedChunk]) -> bool | None:
        if not self.question.expected_answer:
            return None
        return answer_in_context(expected=self.question.expected_answer, texts=[c.text for c in chunks])


def questions_prepared(
    questions: Sequence[LabelledQuestion], *, top_k: int, filters: Mapping[str, str]
) -> Iterator[PreparedQuestion]:
    for question in questions:
        yield PreparedQuestion(
            question=question,
            retrieval=retrieval_prepare(
                question.question,
                top_k=top_k,
                filters=filters,
                hybrid=settings.RETRIEVAL_HYBRID,
                trimming=True,
            ),
        )


def _variant(
    name: str, prepared: PreparedQuestion, chunks: Sequence[RetrievedChunk], *, tokens: int, latency_ms: float
) -> VariantResult:
    return VariantResult(
        name=name,
        chunk_ids=[c.id for c in chunks],
        top_score=round(max((c.score for c in chunks), default=0.0), 3),
        tokens=tokens,
        tokens_before=prepared.tokens_before,
        latency_ms=round(latency_ms, 1),
    )


def question_evaluate(prepared: PreparedQuestion, *, params: EvalParams) -> QuestionResult:
    """One prepared question under each chosen variant (answered by the LLM too with `params.synthesize`)."""
    q = prepared.question
    variants: dict[str, VariantResult] = {}
    contexts: dict[str, list[RetrievedChunk]] = {}
    retrieval_ms = prepared.retrieval.retrieval_ms
    if "baseline" in params.variants:
        contexts["baseline"] = prepared.chunks
        variants["baseline"] = _variant(
            "baseline", prepared, prepared.chunks, tokens=prepared.tokens_before, latency_ms=retrieval_ms
        )
    if "trim" in params.variants:
        trimmed = retrieval_trim(
            prepared.retrieval,
            params=resolve_trim_params(threshold=params.trim_threshold, window=params.trim_window),
        )
        contexts["trim"] = trimmed.chunks
        variants["trim"] = _variant(
            "trim", prepared, trimmed.chunks, tokens=trimmed.tokens, latency_ms=retrieval_ms + trimmed.trim_ms
        )
        variants["trim"].overlap_vs_baseline = rounded(
            overlap_share(prepared.chunk_ids, [c.id for c in trimmed.chunks]), 2
        )
        variants["trim"].trim_embedding_calls = trimmed.embedding_calls
    result = QuestionResult(question=q.question, variants=variants, expected_answer=q.expected_answer)
    if q.expected_answer:
        for name, chunks in contexts.items():
            variants[name].answer_in_context = prepared.holds_answer(chunks)
    if params.synthesize:
        errors: list[str] = []
        for name, chunks in contexts.items():
            variants[name].synthesis = synthesis_get(question=q.question, chunks=chunks)
            if variants[name].synthesis.error:
                errors.append(f"{name}: {variants[name].synthesis.error}")
        answers = [variants[n].synthesis.answer for n in VARIANTS if n in variants]
        if len(answers) == 2 and all(answers):
            result.answer_similarity = answer_similarity(*answers)
        result.error = "; ".join(dict.fromkeys(errors))
    return result


@dataclass
class EvalReport:
    summary: dict
    results: list[QuestionResult]
    sweep: SweepReport | None = None
    params: EvalParams | None = field(default=None, repr=False)

    def as_dict(self) -> dict:
        return report_json(self)


def evaluation_run(
    *, questions: Sequence[LabelledQuestion], params: EvalParams, on_progress: ProgressCallback | None = None
) -> EvalReport:
    """Evaluate every question under each variant (and, with `params.sweep`, every sweep combination), here and
    now. `on_progress(done, total, result)` is called after each question with that question's result."""
    get_embedder()  # built (model loaded) before the first question is timed
    sweep = Sweep(params.sweep, top_k=params.top_k) if params.sweep else None
    results: list[QuestionResult] = []
    for prepared in questions_prepared(questions, top_k=params.top_k, filters=params.filters):
        result = question_evaluate(prepared, params=params)
        results.append(result)
        if sweep is not None:
            sweep.add(prepared)
        if on_progress is not None:
            on_progress(len(results), len(questions), result)
    return EvalReport(
        summary=summary_build(results=results, params=params),
        results=results,
        sweep=sweep.report() if sweep else None,
        params=params,
    )


def calibration_sweep(
    *,
    questions: Sequence[LabelledQuestion],
    thresholds: Sequence[float],
    windows: Sequence[int],
    drop_margins: Sequence[float] = (),
    top_k: int = DEFAULT_TOP_K,
    filters: Mapping[str, str] | None = None,
    min_retention: float | None = None,
    min_overlap: float | None = None,
    on_progress: ProgressCallback | None = None,
) -> SweepReport:
    """Only the sweep: the recommendation with the largest token reduction that keeps the quality floor.
    `drop_margins` empty: the drop margin stays as configured."""
    spec = SweepSpec(
        thresholds=tuple(thresholds),
        windows=tuple(windows),
        drop_margins=tuple(drop_margins),
        min_retention=percent_param(min_retention, "min_retention"),
        min_overlap=percent_param(min_overlap, "min_overlap"),
    )
    sweep = Sweep(spec, top_k=top_k)
    for done, prepared in enumerate(
        questions_prepared(questions, top_k=top_k, filters=filters or {}), start=1
    ):
        sweep.add(prepared)
        if on_progress is not None:
            on_progress(done, len(questions), None)
    return sweep.report()
