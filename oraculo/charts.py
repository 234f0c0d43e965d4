"""Server-rendered SVG charts for the evaluation pages: no JavaScript, no CDN, every piece of text escaped.

Charts come back as SafeString because every interpolated text and attribute goes through `_esc` here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape

from django.utils.safestring import SafeString, mark_safe

BASELINE_COLOR = "#79aec8"
TRIM_COLOR = "#e8a33d"
INK = "#333"
GRID = "#ddd"
FRONT_COLOR = "#417690"
RECOMMENDED_COLOR = "#ba2121"
FONT = 'font-family="system-ui, -apple-system, Segoe UI, Roboto, sans-serif" font-size="12"'


def _esc(value: object) -> str:
    return escape(str(value), quote=True)


def _num(value: float) -> str:
    return f"{value:.1f}".rstrip("0").rstrip(".")


def _setting(row: dict) -> str:
    """A sweep row's setting as staff read it: threshold, window and, when swept, the drop margin."""
    text = f"threshold {row['threshold']:g}, window {row['window']}"
    if row.get("drop_margin") is not None:
        text += f", drop margin {row['drop_margin']:g}"
    return text


def _short(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _svg(width: int, height: int, title: str, body: list[str]) -> SafeString:
    return mark_safe(
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="100%" '
        f'style="max-width:{width}px" role="img" aria-label="{_esc(title)}" {FONT}>'
        f"<title>{_esc(title)}</title>" + "".join(body) + "</svg>"
    )


def _nice_step(span: float, target: int = 5) -> float:
    raw = span / max(target, 1)
    magnitude = 10 ** math.floor(math.log10(raw)) if raw > 0 else 1
    for m in (1, 2, 2.5, 5, 10):
        if raw <= m * magnitude:
            return m * magnitude
    return 10 * magnitude


def tokens_per_question_svg(
    *, labels: Sequence[str], baseline: Sequence[int | None], trim: Sequence[int | None], width: int = 760
) -> SafeString:
    """Horizontal bars, two per question: context tokens without and with trimming."""
    title = "Context tokens per question: baseline vs trim"
    label_w, right_pad, top, row_h, bar_h = 250, 50, 42, 30, 11
    height = top + row_h * max(len(labels), 1) + 44
    plot_w = width - label_w - right_pad
    top_value = max([v for v in [*baseline, *trim] if v] or [1])
    step = _nice_step(top_value)
    axis_max = math.ceil(top_value / step) * step

    def x(value: float) -> float:
        return label_w + plot_w * value / axis_max

    body = [
        f'<rect x="{label_w}" y="8" width="12" height="12" fill="{BASELINE_COLOR}"/>'
        f'<text x="{label_w + 18}" y="18" fill="{INK}">baseline</text>'
        f'<rect x="{label_w + 90}" y="8" width="12" height="12" fill="{TRIM_COLOR}"/>'
        f'<text x="{label_w + 108}" y="18" fill="{INK}">trim</text>'
    ]
    bottom = top + row_h * max(len(labels), 1)
    tick = 0.0
    while tick <= axis_max + 1e-9:
        body.append(
            f'<line x1="{x(tick):.1f}" y1="{top - 6}" x2="{x(tick):.1f}" y2="{bottom}" stroke="{GRID}"/>'
            f'<text x="{x(tick):.1f}" y="{bottom + 16}" text-anchor="middle" fill="{INK}">'
            f"{_num(tick)}</text>"
        )
        tick += step
    for i, label in enumerate(labels):
        y0 = top + i * row_h
        body.append(
            f'<g><title>{_esc(label)}</title><text x="{label_w - 8}" y="{y0 + row_h / 2 + 4:.1f}" '
            f'text-anchor="end" fill="{INK}">{_esc(f"{i + 1}. " + _short(label, 30))}</text></g>'
        )
        for j, (values, color, name) in enumerate(
            ((baseline, BASELINE_COLOR, "baseline"), (trim, TRIM_COLOR, "trim"))
        ):
            value = values[i] if i < len(values) else None
            if value is None:
                continue
            y = y0 + 3 + j * (bar_h + 2)
            body.append(
                f'<rect x="{label_w}" y="{y}" width="{max(x(value) - label_w, 0.5):.1f}" height="{bar_h}" '
                f'fill="{color}"><title>{_esc(f"{name}: {value} tokens")}</title></rect>'
                f'<text x="{x(value) + 4:.1f}" y="{y + bar_h - 1}" font-size="10" fill="{INK}">'
                f"{_esc(value)}</text>"
            )
    body.append(
        f'<text x="{label_w + plot_w / 2:.1f}" y="{height - 2}" text-anchor="middle" fill="{INK}">'
        f"tokens in context</text>"
    )
    return _svg(width, height, title, body)


def sweep_curve_svg(
    *,
    rows: Sequence[dict],
    quality_key: str,
    recommended: dict | None = None,
    floor: float | None = None,
    width: int = 760,
    height: int = 420,
) -> SafeString:
    """Token reduction against quality, one point per (threshold, window), the Pareto front joined, the floor
    dashed and the recommended setting ringed."""
    quality_label = (
        "answer retention %" if quality_key == "answer_retention_pct" else "overlap with baseline %"
    )
    title = f"Token reduction vs {quality_label}"

    def quality(row: dict) -> float | None:
        value = row.get(quality_key)
        if value is None:
            return None
        return float(value) if quality_key == "answer_retention_pct" else float(value) * 100

    points = [(row, quality(row), float(row["token_reduction_pct"])) for row in rows]
    points = [p for p in points if p[1] is not None]
    left, right, top, bottom = 60, 30, 30, 50
    plot_w, plot_h = width - left - right, height - top - bottom
    qs = [p[1] for p in points] + ([floor] if floor is not None else [])
    q_step = _nice_step(max(100 - min(qs, default=90), 10))
    q_lo = max(0.0, math.floor(min(qs, default=90) / q_step) * q_step)
    if q_lo >= 100:
        q_lo = 100 - q_step
    rs = [p[2] for p in points]
    r_lo = min(0.0, math.floor(min(rs, default=0) / 10) * 10)
    r_hi = max(10.0, math.ceil(max(rs, default=10) / 10) * 10)
    r_step = _nice_step(r_hi - r_lo)

    def px(q: float) -> float:
        return left + plot_w * (q - q_lo) / (100 - q_lo)

    def py(r: float) -> float:
        return top + plot_h * (1 - (r - r_lo) / (r_hi - r_lo))

    body: list[str] = []
    tick = q_lo
    while tick <= 100 + 1e-9:
        body.append(
            f'<line x1="{px(tick):.1f}" y1="{top}" x2="{px(tick):.1f}" y2="{top + plot_h}" stroke="{GRID}"/>'
            f'<text x="{px(tick):.1f}" y="{top + plot_h + 16}" text-anchor="middle" fill="{INK}">'
            f"{_num(tick)}</text>"
        )
        tick += q_step
    tick = r_lo
    while tick <= r_hi + 1e-9:
        body.append(
            f'<line x1="{left}" y1="{py(tick):.1f}" x2="{left + plot_w}" y2="{py(tick):.1f}" stroke="{GRID}"/>'
            f'<text x="{left - 6}" y="{py(tick) + 4:.1f}" text-anchor="end" fill="{INK}">{_num(tick)}</text>'
        )
        tick += r_step
    body.append(
        f'<text x="{left + plot_w / 2:.1f}" y="{height - 8}" text-anchor="middle" fill="{INK}">'
        f"{_esc(quality_label)} →</text>"
        f'<text transform="translate(14 {top + plot_h / 2:.1f}) rotate(-90)" text-anchor="middle" '
        f'fill="{INK}">token reduction % →</text>'
    )
    if floor is not None and q_lo <= floor <= 100:
        body.append(
            f'<line x1="{px(floor):.1f}" y1="{top}" x2="{px(floor):.1f}" y2="{top + plot_h}" '
            f'stroke="{RECOMMENDED_COLOR}" stroke-dasharray="5 4"/>'
            f'<text x="{px(floor) - 4:.1f}" y="{top + 12}" text-anchor="end" fill="{RECOMMENDED_COLOR}">'
            f"{_esc(f'floor {_num(floor)}%')}</text>"
        )
    front = sorted((p for p in points if p[0].get("pareto")), key=lambda p: p[1])
    if len(front) > 1:
        coords = " ".join(f"{px(q):.1f},{py(r):.1f}" for _, q, r in front)
        body.append(f'<polyline points="{coords}" fill="none" stroke="{FRONT_COLOR}" stroke-width="2"/>')
    for row, q, r in points:
        tip = f"{_setting(row)}: {row['token_reduction_pct']}% fewer tokens, {quality_label} {_num(q)}" + (
            " (Pareto front)" if row.get("pareto") else ""
        )
        fill = FRONT_COLOR if row.get("pareto") else "#fff"
        body.append(
            f'<circle cx="{px(q):.1f}" cy="{py(r):.1f}" r="5" fill="{fill}" stroke="{FRONT_COLOR}" '
            f'stroke-width="1.5"><title>{_esc(tip)}</title></circle>'
        )
    if recommended is not None and quality(recommended) is not None:
        q, r = quality(recommended), float(recommended["token_reduction_pct"])
        label = f"recommended: {_setting(recommended)}"
        anchor = "end" if px(q) > left + plot_w * 0.6 else "start"
        dx = -12 if anchor == "end" else 12
        body.append(
            f'<circle cx="{px(q):.1f}" cy="{py(r):.1f}" r="10" fill="none" stroke="{RECOMMENDED_COLOR}" '
            f'stroke-width="2.5"/><text x="{px(q) + dx:.1f}" y="{py(r) - 12:.1f}" text-anchor="{anchor}" '
            f'fill="{RECOMMENDED_COLOR}" font-weight="bold" stroke="#fff" stroke-width="4" '
            f'paint-order="stroke">'
            f"{_esc(label)}</text>"
        )
    return _svg(width, height, title, body)


LLM_COLOR = "#417690"
EXTRACTIVE_COLOR = "#79aec8"
NOTHING_COLOR = "#ba2121"


def questions_per_day_svg(*, days: Sequence, width: int = 760, height: int = 260) -> SafeString:
    """Stacked bars, one per day: answered by the LLM, extractively, or with nothing found."""
    title = "Questions per day"
    left, right, top, bottom = 50, 20, 30, 40
    plot_w, plot_h = width - left - right, height - top - bottom
    peak = max([d.total for d in days] or [0]) or 1
    step = _nice_step(peak)
    axis_max = max(math.ceil(peak / step) * step, 1)
    slot = plot_w / max(len(days), 1)
    bar_w = max(slot * 0.8, 1)

    def y(value: float) -> float:
        return top + plot_h * (1 - value / axis_max)

    body = []
    legend_x = left
    for name, color in (
        ("LLM", LLM_COLOR),
        ("extractive", EXTRACTIVE_COLOR),
        ("nothing found", NOTHING_COLOR),
    ):
        body.append(
            f'<rect x="{legend_x}" y="8" width="12" height="12" fill="{color}"/>'
            f'<text x="{legend_x + 16}" y="18" fill="{INK}">{_esc(name)}</text>'
        )
        legend_x += 30 + 8 * len(name)
    tick = 0.0
    while tick <= axis_max + 1e-9:
        body.append(
            f'<line x1="{left}" y1="{y(tick):.1f}" x2="{left + plot_w}" y2="{y(tick):.1f}" stroke="{GRID}"/>'
            f'<text x="{left - 6}" y="{y(tick) + 4:.1f}" text-anchor="end" fill="{INK}">{_num(tick)}</text>'
        )
        tick += step
    label_every = max(1, math.ceil(len(days) / 10))
    for i, d in enumerate(days):
        x = left + i * slot + (slot - bar_w) / 2
        base = 0
        tip = (
            f"{d.day.isoformat()}: {d.total} questions ({d.llm} LLM, {d.extractive} extractive, "
            f"{d.nothing} nothing found)"
        )
        parts = [f"<g><title>{_esc(tip)}</title>"]
        for value, color in (
            (d.llm, LLM_COLOR),
            (d.extractive, EXTRACTIVE_COLOR),
            (d.nothing, NOTHING_COLOR),
        ):
            if value:
                parts.append(
                    f'<rect x="{x:.1f}" y="{y(base + value):.1f}" width="{bar_w:.1f}" '
                    f'height="{y(base) - y(base + value):.1f}" fill="{color}"/>'
                )
                base += value
        if not base:
            parts.append(
                f'<rect x="{x:.1f}" y="{top}" width="{bar_w:.1f}" height="{plot_h}" fill="transparent"/>'
            )
        body.append("".join(parts) + "</g>")
        if i % label_every == 0:
            body.append(
                f'<text x="{x + bar_w / 2:.1f}" y="{top + plot_h + 16}" text-anchor="middle" fill="{INK}" '
                f'font-size="10">{_esc(d.day.strftime("%m-%d"))}</text>'
            )
    return _svg(width, height, title, body)
