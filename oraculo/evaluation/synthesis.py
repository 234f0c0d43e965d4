"""An evaluation's answers: each variant's context answered by the LLM, and how alike the two answers are. A
failure is kept with the result, never raised, so one bad answer never stops a run."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from biblioteca.embeddings import get_embedder
from biblioteca.search import RetrievedChunk
from oraculo.evaluation.measures import cites_source
from oraculo.llm import LLMError, synthesize_answer


@dataclass(frozen=True)
class Synthesis:
    """The LLM's answer from one variant's context, or why there is none."""

    answer: str | None
    cites_source: bool
    latency_ms: float
    model: str = ""
    error: str = ""

    def as_dict(self) -> dict:
        out: dict = {"answer": self.answer, "cites_source": self.cites_source}
        out |= {"answer_error": self.error} if self.error else {"answer_model": self.model}
        return out | {"answer_latency_ms": self.latency_ms}


def synthesis_get(*, question: str, chunks: Sequence[RetrievedChunk]) -> Synthesis:
    """The LLM's answer for one variant; a failure (including no LLM configured) is kept, never raised, so one
    bad answer never stops a run."""
    started = time.perf_counter()
    try:
        result = synthesize_answer(question=question, chunks=chunks)
    except LLMError as exc:
        return Synthesis(
            answer=None,
            cites_source=False,
            error=str(exc) or type(exc).__name__,
            latency_ms=round((time.perf_counter() - started) * 1000, 1),
        )
    return Synthesis(
        answer=result.text,
        cites_source=cites_source(result.text),
        model=result.model,
        latency_ms=round((time.perf_counter() - started) * 1000, 1),
    )


def answer_similarity(a: str, b: str) -> float:
    """Cosine of the two answers' embeddings: 1.0 means trimming did not change what was said."""
    vectors = get_embedder().embed_documents([a, b])
    return round(float(vectors[0] @ vectors[1]), 3)
