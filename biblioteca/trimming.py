"""Trimming retrieved chunks to the sentences that matter for a question (the seed's trimChunksBySentence).

Pure numpy, no Django: the caller brings each chunk's sentence spans and their stored vectors, so no sentence
is embedded at query time. The seed's contract holds: keep sentences with cosine >= threshold, top up to
`min_sentences` with the best ones, add a +/-`window` of neighbours, keep the original order, join separate runs
with " [...] ", return a chunk unchanged when every sentence is kept or it has none.

Beyond the seed, two query-level rules (both optional):
- `relative_margin`: a sentence scoring within this margin of the best sentence across all chunks is kept even
  under the threshold, so the best evidence survives when the whole query scores low;
- `drop_margin`: a chunk whose best sentence is further than this below the best sentence across all chunks is
  dropped outright (never emptied), so hopeless chunks stop paying their one-sentence floor.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

ELISION = " [...] "


@dataclass(frozen=True)
class TrimParams:
    threshold: float
    window: int = 1
    min_sentences: int = 1
    relative_margin: float | None = None
    drop_margin: float | None = None

    def __post_init__(self) -> None:
        if not -1.0 <= self.threshold <= 1.0:
            raise ValueError("threshold must be within [-1, 1]")
        if self.window < 0:
            raise ValueError("window must be >= 0")
        if self.min_sentences < 1:
            raise ValueError("min_sentences must be >= 1: a kept chunk is never empty")


@dataclass(frozen=True)
class TrimInput:
    """A chunk's text, its sentence spans (offsets into text) and their unit vectors, shape (n, d)."""

    text: str
    spans: Sequence[tuple[int, int]]
    vectors: np.ndarray


@dataclass(frozen=True)
class TrimOutput:
    text: str
    kept: tuple[int, ...]
    dropped: bool = False


def select_sentences(scores: np.ndarray, *, threshold: float, min_sentences: int, window: int,
                     floor: float | None = None) -> list[int]:
    """Indices to keep, ascending: above the threshold (or the floor), topped up to the minimum, widened."""
    n = len(scores)
    if n == 0:
        return []
    cut = threshold if floor is None else min(threshold, floor)
    keep = set(np.flatnonzero(scores >= cut).tolist())
    if len(keep) < min_sentences:
        for i in np.argsort(-scores, kind="stable").tolist():
            if len(keep) >= min_sentences:
                break
            keep.add(i)
    if window > 0:
        keep = {j for i in keep for j in range(max(0, i - window), min(n, i + window + 1))}
    return sorted(keep)


def join_runs(text: str, spans: Sequence[tuple[int, int]], keep: Sequence[int]) -> str:
    """Kept sentences as verbatim runs of the original text, separate runs joined with ' [...] '."""
    pieces: list[str] = []
    run_start = prev = None
    for i in keep:
        if prev is not None and i == prev + 1:
            prev = i
            continue
        if run_start is not None:
            pieces.append(text[spans[run_start][0]:spans[prev][1]])
        run_start = prev = i
    if run_start is not None:
        pieces.append(text[spans[run_start][0]:spans[prev][1]])
    return ELISION.join(pieces)


def trim_chunks(chunks: Sequence[TrimInput], query_vector: np.ndarray, params: TrimParams) -> list[TrimOutput]:
    """Trim each chunk for the query; a dropped chunk is flagged, never returned empty."""
    scores = [c.vectors @ query_vector if len(c.spans) else np.zeros(0, dtype=np.float32) for c in chunks]
    best = [float(s.max()) if len(s) else None for s in scores]
    overall = max((b for b in best if b is not None), default=None)
    floor = overall - params.relative_margin if overall is not None and params.relative_margin is not None else None
    out: list[TrimOutput] = []
    for chunk, chunk_scores, chunk_best in zip(chunks, scores, best):
        n = len(chunk.spans)
        if n == 0:
            out.append(TrimOutput(chunk.text, ()))
            continue
        if (params.drop_margin is not None and overall is not None and chunk_best < overall - params.drop_margin
                and chunk_best < params.threshold):
            out.append(TrimOutput("", (), dropped=True))
            continue
        keep = select_sentences(chunk_scores, threshold=params.threshold, min_sentences=params.min_sentences,
                                window=params.window, floor=floor)
        if len(keep) >= n:
            out.append(TrimOutput(chunk.text, tuple(range(n))))
        else:
            out.append(TrimOutput(join_runs(chunk.text, chunk.spans, keep), tuple(keep)))
    return out
