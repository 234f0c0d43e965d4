"""The calibration sweep: every (threshold, window[, drop margin]) combination trimmed on each prepared question,
tallied, then the rows, their Pareto front and the recommendation with the largest token cut that keeps the quality
floor."""

from __future__ import annotations

import itertools
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

from biblioteca.retrieval import resolve_trim_params, retrieval_trim, stored_sentences
from oraculo.evaluation.measures import overlap_share, pareto_front, rounded
from oraculo.evaluation.params import DEFAULT_MIN_OVERLAP, DEFAULT_MIN_RETENTION, SweepSpec

if TYPE_CHECKING:
    from oraculo.evaluation.harness import PreparedQuestion


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
    drop_margin: float | None = None  # None: not swept, the configured one

    @property
    def env_lines(self) -> list[str]:
        lines = [
            f"RETRIEVAL_TRIM_THRESHOLD={float(self.threshold)!r}",
            f"RETRIEVAL_TRIM_WINDOW={self.window}",
        ]
        if self.drop_margin is not None:
            lines.append(f"RETRIEVAL_TRIM_DROP_MARGIN={float(self.drop_margin)!r}")
        return lines


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


class Sweep:
    """Every (threshold, window, drop margin) combination trimmed on each prepared question, tallied as it goes."""

    def __init__(self, spec: SweepSpec, *, top_k: int) -> None:
        self.spec = spec
        self.top_k = top_k
        self.combos = list(itertools.product(spec.thresholds, spec.windows, spec.drop_margins or (None,)))
        self.tallies = {c: _Tally() for c in self.combos}
        self.questions = self.labelled = self.base_hits = self.base_tokens = 0

    def add(self, prepared: PreparedQuestion) -> None:
        self.questions += 1
        self.base_tokens += prepared.tokens_before
        base_hit = prepared.holds_answer(prepared.chunks)
        if base_hit is not None:
            self.labelled += 1
            self.base_hits += base_hit
        stored = stored_sentences(prepared.chunks)
        for threshold, window, drop_margin in self.combos:
            trimmed = retrieval_trim(
                prepared.retrieval,
                params=resolve_trim_params(threshold=threshold, window=window, drop_margin=drop_margin),
                stored=stored,
            )
            tally = self.tallies[(threshold, window, drop_margin)]
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
                avg_overlap_vs_baseline=rounded(overlap, 2),
                answer_retention_pct=rounded(retention, 1),
                trim_embedding_calls=t.calls,
                pareto=i in front,
                meets_floor=ok,
                drop_margin=combo[2],
            )
            for i, (combo, t, reduction, overlap, retention, quality, ok) in enumerate(exact)
        ]
        candidates = [(e, row) for e, row in zip(exact, rows) if e[6]]
        recommended = None
        note = ""
        if candidates:
            recommended = max(
                candidates,
                key=lambda c: (
                    c[0][2],
                    c[0][5] or 0.0,
                    c[1].window,
                    c[1].drop_margin or 0.0,
                    -c[1].threshold,
                ),
            )[1]
        else:
            floor = (
                f"answer retention >= {min_retention:g}%"
                if min_retention is not None
                else f"overlap >= {min_overlap:g}%"
            )
            note = (
                f"No setting keeps {floor}; lower the thresholds, widen the window or the drop margin, or relax "
                "the floor."
            )
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
