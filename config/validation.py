"""What no door accepts: text PostgreSQL cannot store (NUL characters, lone surrogates) and JSON nested deeper
than any request needs. One place, so the API, the admin's question files and the commands refuse the same."""

from __future__ import annotations

MAX_JSON_DEPTH = 32


def text_problem(text: str) -> str | None:
    """Why PostgreSQL could not store `text` (a NUL character, a lone surrogate), or None."""
    if "\x00" in text:
        return "Text may not contain NUL characters (\\u0000)."
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "Text may not contain lone surrogates (\\ud800-\\udfff without their pair)."
    return None


def json_problem(data, *, max_depth: int = MAX_JSON_DEPTH) -> str | None:
    """The first reason to refuse parsed JSON: nesting deeper than `max_depth`, or a key or string that the
    database cannot store. Iterative, so no input can exhaust the stack."""
    stack = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, (dict, list)):
            if depth > max_depth:
                return f"JSON nested too deeply: at most {max_depth} levels."
            items = value.items() if isinstance(value, dict) else ((None, v) for v in value)
            for key, item in items:
                if key is not None and (problem := text_problem(key)):
                    return problem
                stack.append((item, depth + 1))
        elif isinstance(value, str) and (problem := text_problem(value)):
            return problem
    return None


RATE_PERIODS = frozenset({"s", "sec", "m", "min", "h", "hour", "d", "day"})


def rate_problem(rate: str) -> str | None:
    """Why `rate` is no request rate DRF's throttles read (`N/sec`, `N/min`, `N/hour`, `N/day`), or None."""
    num, _, period = rate.partition("/")
    if not num.isdigit() or period not in RATE_PERIODS:
        return "Write it as N/sec, N/min, N/hour or N/day."
    return None
