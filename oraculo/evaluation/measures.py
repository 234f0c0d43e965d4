"""The measures of an evaluation, pure functions the benches import too: whether a context still holds the expected
answer, the overlap of two chunk lists, answer retention, citations, and the Pareto front of a sweep."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

CITATION = re.compile(r"\[\d+\]")


def normalise_text(text: str) -> str:
    """Casefolded, accents stripped, white space collapsed: how an expected answer is looked for."""
    decomposed = unicodedata.normalize("NFKD", text)
    bare = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return " ".join(bare.casefold().split())


# Punctuation (and markdown's backticks and tildes) around an expected answer is not part of it: quotes,
# brackets, a sentence's full stop, a `%`. But a leading `-`, `_`, `.`, `#`, `@` or `$` before a word belongs to it
# (`--cache`, `__init__.py`, `.env`, `-1`), as does a trailing `#` or `_` after one (`C#`).
_KEEP_LEADING = frozenset("-_.#@$")
_KEEP_TRAILING = frozenset("#_")


def _wrapping(ch: str) -> bool:
    return unicodedata.category(ch).startswith("P") or ch.isspace() or ch in "`~"


def _strip_wrapping(text: str) -> str:
    start, end = 0, len(text)
    while start < end and _wrapping(text[start]):
        if (
            text[start] in _KEEP_LEADING
            and start + 1 < end
            and (text[start + 1].isalnum() or text[start + 1] in _KEEP_LEADING)
        ):
            break
        start += 1
    while end > start and _wrapping(text[end - 1]):
        if text[end - 1] in _KEEP_TRAILING and end - 2 >= start and text[end - 2].isalnum():
            break
        end -= 1
    return text[start:end]


def answer_in_context(*, expected: str, texts: Sequence[str]) -> bool:
    """Whether one of the passages still contains the expected answer as whole words, after normalising both."""
    needle = _strip_wrapping(normalise_text(expected))
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


def mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def rounded(value: float | None, digits: int | None = None) -> float | int | None:
    if value is None:
        return None
    return round(value) if digits is None else round(value, digits)


def retention_pct(pairs: Sequence[tuple[bool, bool]]) -> float | None:
    """Of the questions whose baseline context held the answer, the percentage whose trimmed context still does."""
    kept = [trim for base, trim in pairs if base]
    return 100.0 * sum(kept) / len(kept) if kept else None


def pareto_front(points: Sequence[tuple[float, float]]) -> set[int]:
    """Indices of the points no other point beats on both axes (higher is better on each)."""
    front = set()
    for i, (x, y) in enumerate(points):
        if not any((ox >= x and oy >= y) and (ox > x or oy > y) for ox, oy in points):
            front.add(i)
    return front
