"""The A/B harness: the same questions retrieved with and without sentence trimming, compared.

Plain Python with no writes, so the management command, the admin (through a task) and the staff API all run
exactly this. Each question is embedded and searched once; the variants and every sweep combination reuse that
query vector and those chunks, so only the trimming differs between them.

The output keeps the seed's shape (`summary` + `results[i].variants.baseline|trim`) and adds fields beside it.
"""

from __future__ import annotations

import csv
import io
import itertools
import re
import time
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from decimal import Decimal, InvalidOperation

from django.conf import settings

from biblioteca.embeddings import get_embedder
from biblioteca.errors import ApplicationError
from biblioteca.retrieval import (
    PreparedRetrieval,
    resolve_trim_params,
    retrieval_prepare,
    retrieval_trim,
    stored_sentences,
)
from biblioteca.search import MAX_TOP_K, RetrievedChunk
from oraculo.llm import LLMError, synthesize_answer
from oraculo.questions import LabelledQuestion

VARIANTS = ("baseline", "trim")
DEFAULT_TOP_K = 5
MAX_SWEEP_COMBINATIONS = 200
MAX_TRIM_WINDOW = 10
DEFAULT_MIN_RETENTION = 99.0
DEFAULT_MIN_OVERLAP = 95.0
CITATION = re.compile(r"\[\d+\]")

ProgressCallback = Callable[[int, int, "dict | None"], None]


class EvalParamsError(ApplicationError):
    """Evaluation parameters that make no sense; the message says which and why."""


# Parameters


@dataclass(frozen=True)
class SweepSpec:
    thresholds: tuple[float, ...]
    windows: tuple[int, ...]
    min_retention: float | None = None
    min_overlap: float | None = None

    def as_dict(self) -> dict:
        return {
            "thresholds": list(self.thresholds),
            "windows": list(self.windows),
            "min_retention": self.min_retention,
            "min_overlap": self.min_overlap,
        }

    @classmethod
    def from_dict(cls, data: Mapping) -> SweepSpec:
        return cls(
            thresholds=tuple(float(t) for t in data["thresholds"]),
            windows=tuple(int(w) for w in data["windows"]),
            min_retention=data.get("min_retention"),
            min_overlap=data.get("min_overlap"),
        )


@dataclass(frozen=True)
class EvalParams:
    variants: tuple[str, ...] = VARIANTS
    top_k: int = DEFAULT_TOP_K
    trim_threshold: float = 0.8
    trim_window: int = 1
    synthesize: bool = False
    app: str | None = None
    source_type: str | None = None
    sweep: SweepSpec | None = None

    @property
    def filters(self) -> dict[str, str]:
        return {k: v for k, v in (("app", self.app), ("source_type", self.source_type)) if v}

    def as_dict(self) -> dict:
        out = asdict(self)
        out["variants"] = list(self.variants)
        out["sweep"] = self.sweep.as_dict() if self.sweep else None
        return out

    @classmethod
    def from_dict(cls, data: Mapping) -> EvalParams:
        return eval_params_build(
            variants=data.get("variants"),
            top_k=data.get("top_k"),
            trim_threshold=data.get("trim_threshold"),
            trim_window=data.get("trim_window"),
            synthesize=bool(data.get("synthesize")),
            app=data.get("app"),
            source_type=data.get("source_type"),
            sweep=SweepSpec.from_dict(data["sweep"]) if data.get("sweep") else None,
        )


def _percent(value: float | None, name: str) -> float | None:
    if value is None:
        return None
    value = float(value)
    if not 0 <= value <= 100:
        raise EvalParamsError(f"{name} is a percentage between 0 and 100, not {value:g}.")
    return value


def eval_params_build(
    *,
    variants: Sequence[str] | None = None,
    top_k: int | None = None,
    trim_threshold: float | None = None,
    trim_window: int | None = None,
    synthesize: bool = False,
    app: str | None = None,
    source_type: str | None = None,
    sweep: SweepSpec | Sequence[str] | str | None = None,
    min_retention: float | None = None,
    min_overlap: float | None = None,
) -> EvalParams:
    """Validated parameters with the seed's defaults; `None` means the default (threshold: the setting)."""
    chosen = list(variants) if variants else list(VARIANTS)
    unknown = sorted(set(chosen) - set(VARIANTS))
    if unknown:
        raise EvalParamsError(
            f"Unknown variant(s): {', '.join(unknown)}. Choose from: {', '.join(VARIANTS)}."
        )
    top_k = DEFAULT_TOP_K if top_k is None else top_k
    if not isinstance(top_k, int) or not 1 <= top_k <= MAX_TOP_K:
        raise EvalParamsError(f"top_k must be a whole number between 1 and {MAX_TOP_K}, not {top_k}.")
    threshold = settings.RETRIEVAL_TRIM_THRESHOLD if trim_threshold is None else float(trim_threshold)
    if not -1.0 <= threshold <= 1.0:
        raise EvalParamsError(f"trim_threshold is a cosine similarity between -1 and 1, not {threshold:g}.")
    window = settings.RETRIEVAL_TRIM_WINDOW if trim_window is None else trim_window
    if not isinstance(window, int) or not 0 <= window <= MAX_TRIM_WINDOW:
        raise EvalParamsError(
            f"trim_window must be a whole number between 0 and {MAX_TRIM_WINDOW}, not {window}."
        )
    if sweep is not None and not isinstance(sweep, SweepSpec):
        thresholds, windows = sweep_parse(sweep, default_threshold=threshold, default_window=window)
        sweep = SweepSpec(thresholds=thresholds, windows=windows)
    if sweep is not None and (min_retention is not None or min_overlap is not None):
        sweep = SweepSpec(
            thresholds=sweep.thresholds,
            windows=sweep.windows,
            min_retention=_percent(min_retention, "min_retention"),
            min_overlap=_percent(min_overlap, "min_overlap"),
        )
    elif sweep is None and (min_retention is not None or min_overlap is not None):
        raise EvalParamsError(
            "min_retention and min_overlap are floors for a sweep's recommendation: give a sweep as well."
        )
    return EvalParams(
        variants=tuple(v for v in VARIANTS if v in chosen),
        top_k=top_k,
        trim_threshold=threshold,
        trim_window=window,
        synthesize=bool(synthesize),
        app=app or None,
        source_type=source_type or None,
        sweep=sweep,
    )


def _decimals(text: str, key: str) -> list[Decimal]:
    """`start:stop:step` (stop included when the steps reach it exactly) or `a,b,c`, in exact decimals."""

    def number(raw: str) -> Decimal:
        try:
            value = Decimal(raw.strip())
        except InvalidOperation:
            raise EvalParamsError(f"sweep {key}: {raw.strip()!r} is not a number.") from None
        if not value.is_finite():
            raise EvalParamsError(f"sweep {key}: {raw.strip()!r} is not a finite number.")
        return value

    if ":" in text:
        parts = text.split(":")
        if len(parts) != 3:
            raise EvalParamsError(
                f"sweep {key}: write a range as start:stop:step, e.g. {key}=0.70:0.90:0.02."
            )
        start, stop, step = (number(p) for p in parts)
        if step <= 0:
            raise EvalParamsError(f"sweep {key}: the step must be positive.")
        if start > stop:
            raise EvalParamsError(f"sweep {key}: the start ({start}) is after the stop ({stop}).")
        count = int((stop - start) / step) + 1
        if count > MAX_SWEEP_COMBINATIONS:
            raise EvalParamsError(f"sweep {key}: {count} values; at most {MAX_SWEEP_COMBINATIONS}.")
        return [start + i * step for i in range(count)]
    values = [number(p) for p in text.split(",") if p.strip()]
    if not values:
        raise EvalParamsError(f"sweep {key}: no values.")
    return values


def sweep_parse(
    specs: Sequence[str] | str, *, default_threshold: float, default_window: int
) -> tuple[tuple[float, ...], tuple[int, ...]]:
    """`threshold=0.70:0.90:0.02 window=0,1,2` as the thresholds and windows to combine; an axis left out is
    held at its default."""
    items = specs.split() if isinstance(specs, str) else [p for s in specs for p in str(s).split()]
    if not items:
        raise EvalParamsError("sweep: give threshold=start:stop:step and/or window=a,b,c.")
    axes: dict[str, list[Decimal]] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = {"thresholds": "threshold", "windows": "window"}.get(key.strip().lower(), key.strip().lower())
        if not sep or key not in ("threshold", "window"):
            raise EvalParamsError(
                f"sweep: {item!r} is not threshold=... or window=... "
                "(e.g. threshold=0.70:0.90:0.02 window=0,1,2)."
            )
        if key in axes:
            raise EvalParamsError(f"sweep: {key} is given twice.")
        axes[key] = _decimals(value, key)
    thresholds = tuple(
        dict.fromkeys(float(v) for v in axes.get("threshold", [Decimal(str(default_threshold))]))
    )
    for t in thresholds:
        if not -1.0 <= t <= 1.0:
            raise EvalParamsError(f"sweep threshold: {t:g} is outside [-1, 1].")
    windows_raw = axes.get("window", [Decimal(default_window)])
    for w in windows_raw:
        if w != w.to_integral_value() or not 0 <= w <= MAX_TRIM_WINDOW:
            raise EvalParamsError(f"sweep window: {w} is not a whole number between 0 and {MAX_TRIM_WINDOW}.")
    windows = tuple(dict.fromkeys(int(w) for w in windows_raw))
    combos = len(thresholds) * len(windows)
    if combos > MAX_SWEEP_COMBINATIONS:
        raise EvalParamsError(
            f"sweep: {len(thresholds)} thresholds x {len(windows)} windows = {combos} "
            f"combinations; at most {MAX_SWEEP_COMBINATIONS}."
        )
    return thresholds, windows


# Measures

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


def _ordered(data: Mapping, order: Sequence[str]) -> dict:
    """`data` with its keys in `order` (others after): PostgreSQL's jsonb forgets the order we wrote."""
    rank = {key: i for i, key in enumerate(order)}
    return dict(sorted(data.items(), key=lambda item: rank.get(item[0], len(rank))))


def normalise_text(text: str) -> str:
    """Casefolded, accents stripped, white space collapsed: how an expected answer is looked for."""
    decomposed = unicodedata.normalize("NFKD", text)
    bare = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return " ".join(bare.casefold().split())


def _strip_punctuation(text: str) -> str:
    start, end = 0, len(text)
    while start < end and (unicodedata.category(text[start]).startswith("P") or text[start].isspace()):
        start += 1
    while end > start and (unicodedata.category(text[end - 1]).startswith("P") or text[end - 1].isspace()):
        end -= 1
    return text[start:end]


def answer_in_context(*, expected: str, texts: Sequence[str]) -> bool:
    """Whether one of the passages still contains the expected answer as whole words, after normalising both."""
    needle = _strip_punctuation(normalise_text(expected))
    if not needle:
        return False
    pattern = re.compile(r"(?<!\w)" + re.escape(needle) + r"(?!\w)")
    return any(pattern.search(normalise_text(t)) for t in texts)


def overlap_share(baseline_ids: Sequence[int], trim_ids: Sequence[int]) -> float | None:
    """The share of the baseline's chunks still present after trimming (None with no baseline chunks)."""
    if not baseline_ids:
        return None
    kept = set(trim_ids)
    return sum(1 for i in baseline_ids if i in kept) / len(baseline_ids)


def cites_source(answer: str | None) -> bool:
    return bool(answer and CITATION.search(answer))


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _round(value: float | None, digits: int | None = None) -> float | int | None:
    if value is None:
        return None
    return round(value) if digits is None else round(value, digits)


def retention_pct(pairs: Sequence[tuple[bool, bool]]) -> float | None:
    """Of the questions whose baseline context held the answer, the percentage whose trimmed context still does."""
    kept = [trim for base, trim in pairs if base]
    return 100.0 * sum(kept) / len(kept) if kept else None


def summary_build(*, results: Sequence[dict], params: EvalParams) -> dict:
    """The seed's summary over per-question results, then the added measures."""

    def variant(name: str) -> list[dict]:
        return [r["variants"][name] for r in results if name in r.get("variants", {})]

    base, trim = variant("baseline"), variant("trim")
    tokens_base = _mean([v["tokens"] for v in base]) if base else _mean([v["tokens_before"] for v in trim])
    tokens_trim = _mean([v["tokens"] for v in trim])
    reduction = (
        100.0 * (1 - tokens_trim / tokens_base)
        if tokens_trim is not None and tokens_base
        else (0.0 if tokens_trim is not None else None)
    )
    overlaps = [v["overlap_vs_baseline"] for v in trim if v.get("overlap_vs_baseline") is not None]
    summary = {
        "questions": len(results),
        "top_k": params.top_k,
        "trim_threshold": params.trim_threshold,
        "trim_window": params.trim_window,
        "avg_tokens_baseline": _round(tokens_base),
        "avg_tokens_trim": _round(tokens_trim),
        "token_reduction_pct": _round(reduction),
        "avg_overlap_vs_baseline": _round(_mean(overlaps), 2),
        "variants": list(params.variants),
        "avg_latency_ms_baseline": _round(_mean([v["latency_ms"] for v in base]), 1),
        "avg_latency_ms_trim": _round(_mean([v["latency_ms"] for v in trim]), 1),
        "trim_embedding_calls": sum(v.get("trim_embedding_calls", 0) for v in trim),
    }
    labelled = [r for r in results if r.get("expected_answer")]
    summary["labelled"] = len(labelled)
    if labelled:
        for name in params.variants:
            summary[f"answer_in_context_{name}"] = sum(
                1 for r in labelled if r["variants"].get(name, {}).get("answer_in_context")
            )
        pairs = [
            (r["variants"]["baseline"]["answer_in_context"], r["variants"]["trim"]["answer_in_context"])
            for r in labelled
            if {"baseline", "trim"} <= set(r["variants"])
        ]
        summary["answer_retention_pct"] = _round(retention_pct(pairs), 1)
    if params.synthesize:
        summary["avg_answer_similarity"] = _round(
            _mean([r["answer_similarity"] for r in results if r.get("answer_similarity") is not None]), 3
        )
        for name in params.variants:
            answered = [v for v in variant(name) if v.get("answer")]
            summary[f"cites_source_pct_{name}"] = _round(
                100.0 * sum(1 for v in answered if v.get("cites_source")) / len(answered)
                if answered
                else None
            )
    summary["errors"] = sum(1 for r in results if r.get("error"))
    return summary


# The run


@dataclass
class _Prepared:
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


def _prepare(question: LabelledQuestion, *, top_k: int, filters: Mapping[str, str]) -> _Prepared:
    return _Prepared(
        question=question,
        retrieval=retrieval_prepare(
            question.question, top_k=top_k, filters=filters, hybrid=settings.RETRIEVAL_HYBRID
        ),
    )


def _variant(prepared: _Prepared, chunks: Sequence[RetrievedChunk], *, tokens: int) -> dict:
    return {
        "chunk_ids": [c.id for c in chunks],
        "top_score": round(max((c.score for c in chunks), default=0.0), 3),
        "tokens": tokens,
        "tokens_before": prepared.tokens_before,
    }


def _synthesize(*, question: str, chunks: Sequence[RetrievedChunk]) -> dict:
    """The LLM's answer for one variant; a failure (including no LLM configured) is kept, never raised, so one
    bad answer never stops a run."""
    started = time.perf_counter()
    try:
        result = synthesize_answer(question=question, chunks=chunks)
    except LLMError as exc:
        return {
            "answer": None,
            "cites_source": False,
            "answer_error": str(exc) or type(exc).__name__,
            "answer_latency_ms": round((time.perf_counter() - started) * 1000, 1),
        }
    return {
        "answer": result.text,
        "cites_source": cites_source(result.text),
        "answer_model": result.model,
        "answer_latency_ms": round((time.perf_counter() - started) * 1000, 1),
    }


def answer_similarity(a: str, b: str) -> float:
    """Cosine of the two answers' embeddings: 1.0 means trimming did not change what was said."""
    vectors = get_embedder().embed_documents([a, b])
    return round(float(vectors[0] @ vectors[1]), 3)


def _evaluate(prepared: _Prepared, *, params: EvalParams) -> dict:
    q = prepared.question
    variants: dict[str, dict] = {}
    contexts: dict[str, list[RetrievedChunk]] = {}
    if "baseline" in params.variants:
        contexts["baseline"] = prepared.chunks
        variants["baseline"] = {
            **_variant(prepared, prepared.chunks, tokens=prepared.tokens_before),
            "latency_ms": round(prepared.retrieval.retrieval_ms, 1),
        }
    if "trim" in params.variants:
        trimmed = retrieval_trim(
            prepared.retrieval,
            params=resolve_trim_params(threshold=params.trim_threshold, window=params.trim_window),
        )
        contexts["trim"] = trimmed.chunks
        overlap = overlap_share(prepared.chunk_ids, [c.id for c in trimmed.chunks])
        variants["trim"] = {
            **_variant(prepared, trimmed.chunks, tokens=trimmed.tokens),
            "overlap_vs_baseline": _round(overlap, 2),
            "latency_ms": round(prepared.retrieval.retrieval_ms + trimmed.trim_ms, 1),
            "trim_embedding_calls": trimmed.embedding_calls,
        }
    result: dict = {"question": q.question}
    if q.expected_answer:
        result["expected_answer"] = q.expected_answer
        for name, chunks in contexts.items():
            variants[name]["answer_in_context"] = prepared.holds_answer(chunks)
    errors: list[str] = []
    if params.synthesize:
        for name, chunks in contexts.items():
            answered = _synthesize(question=q.question, chunks=chunks)
            variants[name].update(answered)
            if answered.get("answer_error"):
                errors.append(f"{name}: {answered['answer_error']}")
    result["variants"] = {name: _ordered(v, VARIANT_ORDER) for name, v in variants.items()}
    answers = [variants[n].get("answer") for n in VARIANTS if n in variants]
    if params.synthesize and len(answers) == 2 and all(answers):
        result["answer_similarity"] = answer_similarity(*answers)
    if errors:
        result["error"] = "; ".join(dict.fromkeys(errors))
    return result


@dataclass(frozen=True)
class SweepRow:
    threshold: float
    window: int
    avg_tokens_trim: int
    token_reduction_pct: float
    avg_overlap_vs_baseline: float | None
    answer_retention_pct: float | None
    trim_embedding_calls: int
    pareto: bool = False
    meets_floor: bool = False

    @property
    def env_lines(self) -> list[str]:
        return [f"RETRIEVAL_TRIM_THRESHOLD={self.threshold:g}", f"RETRIEVAL_TRIM_WINDOW={self.window}"]


@dataclass
class SweepReport:
    questions: int
    top_k: int
    labelled: int
    avg_tokens_baseline: int
    answer_in_context_baseline: int | None
    quality: str
    floor: dict
    rows: list[SweepRow]
    recommended: SweepRow | None
    note: str = ""

    @property
    def floor_text(self) -> str:
        parts = []
        if self.floor.get("min_retention") is not None:
            parts.append(f"answer retention >= {self.floor['min_retention']:g}%")
        if self.floor.get("min_overlap") is not None:
            parts.append(f"overlap >= {self.floor['min_overlap']:g}%")
        return " and ".join(parts)

    def as_dict(self) -> dict:
        return {
            "questions": self.questions,
            "top_k": self.top_k,
            "labelled": self.labelled,
            "avg_tokens_baseline": self.avg_tokens_baseline,
            "answer_in_context_baseline": self.answer_in_context_baseline,
            "quality": self.quality,
            "floor": self.floor,
            "rows": [asdict(r) for r in self.rows],
            "recommended": asdict(self.recommended) if self.recommended else None,
            "env": self.recommended.env_lines if self.recommended else [],
            "note": self.note,
        }


@dataclass
class _Tally:
    tokens: int = 0
    overlap_sum: float = 0.0
    overlap_n: int = 0
    kept_hits: int = 0
    calls: int = 0


class _Sweep:
    """Every (threshold, window) combination trimmed on each prepared question, tallied as it goes."""

    def __init__(self, spec: SweepSpec, *, top_k: int) -> None:
        self.spec = spec
        self.top_k = top_k
        self.combos = list(itertools.product(spec.thresholds, spec.windows))
        self.tallies = {c: _Tally() for c in self.combos}
        self.questions = self.labelled = self.base_hits = self.base_tokens = 0

    def add(self, prepared: _Prepared) -> None:
        self.questions += 1
        self.base_tokens += prepared.tokens_before
        base_hit = prepared.holds_answer(prepared.chunks)
        if base_hit is not None:
            self.labelled += 1
            self.base_hits += base_hit
        stored = stored_sentences(prepared.chunks)
        for threshold, window in self.combos:
            trimmed = retrieval_trim(
                prepared.retrieval,
                params=resolve_trim_params(threshold=threshold, window=window),
                stored=stored,
            )
            tally = self.tallies[(threshold, window)]
            tally.tokens += trimmed.tokens
            tally.calls += trimmed.embedding_calls
            overlap = overlap_share(prepared.chunk_ids, [c.id for c in trimmed.chunks])
            if overlap is not None:
                tally.overlap_sum += overlap
                tally.overlap_n += 1
            if base_hit:
                tally.kept_hits += bool(prepared.holds_answer(trimmed.chunks))

    def report(self) -> SweepReport:
        by_retention = self.labelled > 0 and self.base_hits > 0
        min_retention, min_overlap = self.spec.min_retention, self.spec.min_overlap
        if min_retention is None and min_overlap is None:
            if self.labelled:
                min_retention = DEFAULT_MIN_RETENTION
            else:
                min_overlap = DEFAULT_MIN_OVERLAP
        exact = []
        for combo in self.combos:
            t = self.tallies[combo]
            reduction = 100.0 * (1 - t.tokens / self.base_tokens) if self.base_tokens else 0.0
            overlap = t.overlap_sum / t.overlap_n if t.overlap_n else None
            retention = 100.0 * t.kept_hits / self.base_hits if self.base_hits else None
            quality = retention if by_retention else (overlap * 100 if overlap is not None else None)
            ok = (
                min_retention is None or (retention is not None and retention >= min_retention - 1e-9)
            ) and (min_overlap is None or (overlap is not None and overlap * 100 >= min_overlap - 1e-9))
            exact.append((combo, t, reduction, overlap, retention, quality, ok))
        front = pareto_front([(e[2], e[5] if e[5] is not None else -1.0) for e in exact])
        rows = [
            SweepRow(
                threshold=combo[0],
                window=combo[1],
                avg_tokens_trim=round(t.tokens / self.questions) if self.questions else 0,
                token_reduction_pct=round(reduction, 1),
                avg_overlap_vs_baseline=_round(overlap, 2),
                answer_retention_pct=_round(retention, 1),
                trim_embedding_calls=t.calls,
                pareto=i in front,
                meets_floor=ok,
            )
            for i, (combo, t, reduction, overlap, retention, quality, ok) in enumerate(exact)
        ]
        candidates = [(e, row) for e, row in zip(exact, rows) if e[6]]
        recommended = None
        note = ""
        if candidates:
            recommended = max(
                candidates, key=lambda c: (c[0][2], c[0][5] or 0.0, c[1].window, -c[1].threshold)
            )[1]
        else:
            floor = (
                f"answer retention >= {min_retention:g}%"
                if min_retention is not None
                else f"overlap >= {min_overlap:g}%"
            )
            note = f"No setting keeps {floor}; lower the thresholds, widen the window or relax the floor."
            if min_retention is not None and not self.base_hits:
                note = (
                    "The baseline context never contains the expected answers, so retention cannot be "
                    "measured; check the labels or raise top_k."
                )
        return SweepReport(
            questions=self.questions,
            top_k=self.top_k,
            labelled=self.labelled,
            avg_tokens_baseline=round(self.base_tokens / self.questions) if self.questions else 0,
            answer_in_context_baseline=self.base_hits if self.labelled else None,
            quality="answer_retention_pct" if by_retention else "avg_overlap_vs_baseline",
            floor={"min_retention": min_retention, "min_overlap": min_overlap},
            rows=rows,
            recommended=recommended,
            note=note,
        )


def pareto_front(points: Sequence[tuple[float, float]]) -> set[int]:
    """Indices of the points no other point beats on both axes (higher is better on each)."""
    front = set()
    for i, (x, y) in enumerate(points):
        if not any((ox >= x and oy >= y) and (ox > x or oy > y) for ox, oy in points):
            front.add(i)
    return front


@dataclass
class EvalReport:
    summary: dict
    results: list[dict]
    sweep: SweepReport | None = None
    params: EvalParams | None = None

    def as_dict(self) -> dict:
        out = {"summary": self.summary, "results": self.results}
        if self.sweep is not None:
            out["sweep"] = self.sweep.as_dict()
        return out


def _prepared(questions: Sequence[LabelledQuestion], top_k: int, filters: Mapping[str, str]):
    for question in questions:
        yield _prepare(question, top_k=top_k, filters=filters)


def evaluation_run(
    *, questions: Sequence[LabelledQuestion], params: EvalParams, on_progress: ProgressCallback | None = None
) -> EvalReport:
    """Evaluate every question under each variant (and, with `params.sweep`, every sweep combination).

    `on_progress(done, total, result)` is called after each question with that question's result.
    """
    get_embedder()  # built (model loaded) before the first question is timed
    sweep = _Sweep(params.sweep, top_k=params.top_k) if params.sweep else None
    results: list[dict] = []
    for prepared in _prepared(questions, params.top_k, params.filters):
        result = _evaluate(prepared, params=params)
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
    top_k: int = DEFAULT_TOP_K,
    filters: Mapping[str, str] | None = None,
    min_retention: float | None = None,
    min_overlap: float | None = None,
    on_progress: ProgressCallback | None = None,
) -> SweepReport:
    """Only the sweep: the recommendation with the largest token reduction that keeps the quality floor."""
    spec = SweepSpec(
        thresholds=tuple(thresholds),
        windows=tuple(windows),
        min_retention=_percent(min_retention, "min_retention"),
        min_overlap=_percent(min_overlap, "min_overlap"),
    )
    sweep = _Sweep(spec, top_k=top_k)
    for done, prepared in enumerate(_prepared(questions, top_k, filters or {}), start=1):
        sweep.add(prepared)
        if on_progress is not None:
            on_progress(done, len(questions), None)
    return sweep.report()


# Exports

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


def run_report(*, run) -> dict:
    """A stored EvalRun in the seed's shape (plus `sweep` for a sweep), from its EvalResult rows."""
    results = []
    for row in run.results.order_by("position"):
        result: dict = {"question": row.question}
        if row.expected_answer:
            result["expected_answer"] = row.expected_answer
        result["variants"] = {
            name: _ordered(row.variants[name], VARIANT_ORDER) for name in VARIANTS if name in row.variants
        }
        if row.answer_similarity is not None:
            result["answer_similarity"] = row.answer_similarity
        if row.error:
            result["error"] = row.error
        results.append(result)
    out = {"summary": _ordered(run.summary, SUMMARY_ORDER), "results": results}
    if run.sweep:
        sweep = _ordered(run.sweep, SWEEP_ORDER)
        row_order = [f.name for f in fields(SweepRow)]
        sweep["rows"] = [_ordered(row, row_order) for row in sweep.get("rows", [])]
        if sweep.get("recommended"):
            sweep["recommended"] = _ordered(sweep["recommended"], row_order)
        out["sweep"] = sweep
    return out
