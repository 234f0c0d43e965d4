"""What an evaluation is asked to do: the variants, top_k, trimming settings, filters and an optional calibration
sweep, validated once with messages that say what is wrong. Every door (command, admin, API) builds them here."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from decimal import Decimal, InvalidOperation

from django.conf import settings

from biblioteca.errors import ApplicationError
from biblioteca.models import Document
from biblioteca.search import MAX_TOP_K

VARIANTS = ("baseline", "trim")
SWEEP_AXES = ("threshold", "window", "drop_margin")
DEFAULT_TOP_K = 5
MAX_SWEEP_COMBINATIONS = 200
MAX_TRIM_WINDOW = 10
DEFAULT_MIN_RETENTION = 99.0
DEFAULT_MIN_OVERLAP = 95.0


class EvalParamsError(ApplicationError):
    """Evaluation parameters that make no sense; the message says which and why. `field` names the parameter
    (a door names it its own way: a command option, an API field); its message is also under that key in
    `extra`, as an API's field errors are."""

    def __init__(self, message: str, *, field: str = "non_field_errors") -> None:
        super().__init__(message, extra={field: [message]})
        self.field = field


@dataclass(frozen=True)
class SweepSpec:
    """The axes a sweep combines. `drop_margins` empty: the drop margin is not swept and stays as configured."""

    thresholds: tuple[float, ...]
    windows: tuple[int, ...]
    min_retention: float | None = None
    min_overlap: float | None = None
    drop_margins: tuple[float, ...] = ()

    def as_dict(self) -> dict:
        return {
            "thresholds": list(self.thresholds),
            "windows": list(self.windows),
            "drop_margins": list(self.drop_margins),
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
            drop_margins=tuple(float(m) for m in data.get("drop_margins") or ()),
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


def percent_param(value: float | None, name: str) -> float | None:
    if value is None:
        return None
    value = float(value)
    if not 0 <= value <= 100:
        raise EvalParamsError(f"{name} is a percentage between 0 and 100, not {value:g}.", field=name)
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
    """Validated parameters with the defaults; `None` means the default (threshold: the setting)."""
    chosen = list(variants) if variants else list(VARIANTS)
    unknown = sorted(set(chosen) - set(VARIANTS))
    if unknown:
        raise EvalParamsError(
            f"Unknown variant(s): {', '.join(unknown)}. Choose from: {', '.join(VARIANTS)}."
        )
    top_k = DEFAULT_TOP_K if top_k is None else top_k
    if not isinstance(top_k, int) or not 1 <= top_k <= MAX_TOP_K:
        raise EvalParamsError(
            f"top_k must be a whole number between 1 and {MAX_TOP_K}, not {top_k}.", field="top_k"
        )
    threshold = settings.RETRIEVAL_TRIM_THRESHOLD if trim_threshold is None else float(trim_threshold)
    if not -1.0 <= threshold <= 1.0:
        raise EvalParamsError(
            f"trim_threshold is a cosine similarity between -1 and 1, not {threshold:g}.",
            field="trim_threshold",
        )
    window = settings.RETRIEVAL_TRIM_WINDOW if trim_window is None else trim_window
    if not isinstance(window, int) or not 0 <= window <= MAX_TRIM_WINDOW:
        raise EvalParamsError(
            f"trim_window must be a whole number between 0 and {MAX_TRIM_WINDOW}, not {window}.",
            field="trim_window",
        )
    for name, value in (("app", app), ("source_type", source_type)):
        limit = Document._meta.get_field(name).max_length
        if value and len(value) > limit:
            raise EvalParamsError(f"{name} is {len(value)} characters long: at most {limit}.", field=name)
    if sweep is not None and not isinstance(sweep, SweepSpec):
        sweep = sweep_parse(sweep, default_threshold=threshold, default_window=window)
    if sweep is not None and (min_retention is not None or min_overlap is not None):
        sweep = replace(
            sweep,
            min_retention=percent_param(min_retention, "min_retention"),
            min_overlap=percent_param(min_overlap, "min_overlap"),
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
        try:
            count = int((stop - start) / step) + 1
        except ArithmeticError:  # a step so small the count has no decimal
            count = MAX_SWEEP_COMBINATIONS + 1
        if count > MAX_SWEEP_COMBINATIONS:
            raise EvalParamsError(f"sweep {key}: {count} values; at most {MAX_SWEEP_COMBINATIONS}.")
        return [start + i * step for i in range(count)]
    values = [number(p) for p in text.split(",") if p.strip()]
    if not values:
        raise EvalParamsError(f"sweep {key}: no values.")
    return values


def sweep_parse(specs: Sequence[str] | str, *, default_threshold: float, default_window: int) -> SweepSpec:
    """`threshold=0.70:0.90:0.02 window=0,1,2 drop_margin=0.02,0.03` as the axes to combine. A threshold or
    window left out is held at its default; a drop margin left out, at the configured one (not swept)."""
    items = specs.split() if isinstance(specs, str) else [p for s in specs for p in str(s).split()]
    if not items:
        raise EvalParamsError("sweep: give threshold=start:stop:step, window=a,b,c and/or drop_margin=a,b,c.")
    axes: dict[str, list[Decimal]] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip().lower()
        key = {"thresholds": "threshold", "windows": "window", "drop_margins": "drop_margin"}.get(key, key)
        if not sep or key not in SWEEP_AXES:
            raise EvalParamsError(
                f"sweep: {item!r} is not threshold=..., window=... or drop_margin=... "
                "(e.g. threshold=0.70:0.90:0.02 window=0,1,2 drop_margin=0.02,0.03,0.04)."
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
    drop_margins = tuple(dict.fromkeys(float(m) for m in axes.get("drop_margin", [])))
    for m in drop_margins:
        if not 0.0 <= m <= 2.0:
            raise EvalParamsError(f"sweep drop_margin: {m:g} is outside [0, 2] (a difference of cosines).")
    combos = len(thresholds) * len(windows) * max(len(drop_margins), 1)
    if combos > MAX_SWEEP_COMBINATIONS:
        raise EvalParamsError(
            f"sweep: {len(thresholds)} thresholds x {len(windows)} windows"
            + (f" x {len(drop_margins)} drop margins" if drop_margins else "")
            + f" = {combos} combinations; at most {MAX_SWEEP_COMBINATIONS}."
        )
    return SweepSpec(thresholds=thresholds, windows=windows, drop_margins=drop_margins)
