"""The identifiers a question names (`--assetsInlineLimit`, `import.meta.hot.prune`, `build.assetsInlineLimit`,
`DATABASE_URL`) and the keys by which a passage's unit is found to hold them.

Pure Python, no Django. A key is an identifier's parts joined and lower-cased, accents folded, so spellings
meet: `build.assetsInlineLimit` and `--assetsInlineLimit` share `assetsinlinelimit`; `import.meta.hot.prune`
and a heading `hot.prune(cb)` share `hotprune`. A question's side is strict (a dotted, underscored, lower-camel
or `--` token, or anything in backticks with two parts or more): hyphenated words and product names
(`server-side`, `JavaScript`) are not identifiers. A unit's side gives every multi-part token's keys, so that a
unit holds a question's identifier whichever way it spells it. A heading naming one plain word in code, as a
reference names its options, holds that word's flag too: `--force` finds the section headed `force`. A
placeholder of a message or template (`%7`, `%APPDATA%`, `{0}`) is an identifier too, its key spelled as written:
a table row is all that says what it inserts.
"""

from __future__ import annotations

import re
from functools import lru_cache

from biblioteca.text.chunking import unit_heading_level
from biblioteca.text.lexical import fold, identifier_parts, is_compound, plain_word, word_tokens

_TOKEN = re.compile(r"(?<![\w-])(?:--)?\w+(?:(?:[.:/]{1,3}|-{1,2})\w+)*")
_SEGMENTS = re.compile(r"[.:/]+")
_LOWER_CAMEL = re.compile(r"[a-z][a-z0-9]*[A-Z]")
_JOINED = re.compile(r"\w[.:/_]+\w")
_CODE = re.compile(r"`([^`\n]+)`")
_WORD = re.compile(r"\w+")
_PLACEHOLDER = re.compile(r"(?<![\w%])(?:%\d{1,2}|%[A-Za-z_]\w*%|\{\d{1,2}\})(?![\w%])")
_MIN_KEY = 4


def _parts(segment: str) -> list[str]:
    return [p.lower() for p in identifier_parts(segment)]


def _keys(token: str, *, runs: bool) -> set[str]:
    """`token`'s whole, its runs of dotted segments and its multi-part segments' wholes: every one when `runs`
    (a unit's side), else those ending the token (a question's `import.meta.hot.prune` is found in `hot.prune`,
    not in `import.meta`; its `optimizeDeps.exclude` in `exclude`'s option, not in every `optimizeDeps`)."""
    body = token.lstrip("-")
    segments = [_parts(s) for s in _SEGMENTS.split(body) if s]
    segments = [s for s in segments if s]
    out: set[str] = set()
    if token.startswith("--") and segments:
        out.add("--" + "".join(p for s in segments for p in s))
    for start in range(len(segments) - 1):
        ends = range(start + 2, len(segments) + 1) if runs else [len(segments)]
        out.update("".join(p for s in segments[start:end] for p in s) for end in ends)
    named = segments if runs else segments[-1:]
    out.update("".join(s) for s in named if len(s) > 1)
    return {
        k for k in out if len(k.lstrip("-")) >= (2 if k.startswith("--") else _MIN_KEY) and not k.isdigit()
    }


def _is_identifier(token: str, *, quoted: bool) -> bool:
    body = token.lstrip("-")
    if token.startswith("--"):
        return bool(body)
    if _JOINED.search(body) or _LOWER_CAMEL.match(body):
        return True
    return quoted and len(_parts(body)) > 1


@lru_cache(maxsize=4096)
def question_identifiers(question: str) -> tuple[frozenset[str], ...]:
    """Each identifier the question names, as its set of keys; in the order they come."""
    text = fold(question)
    spans = [(m.start(1), m.end(1)) for m in _CODE.finditer(text)]
    found: list[tuple[int, frozenset[str]]] = []
    for match in _TOKEN.finditer(text):
        token = match.group()
        if _is_identifier(token, quoted=any(a <= match.start() < b for a, b in spans)):
            keys = frozenset(_keys(token, runs=False))
            if keys:
                found.append((match.start(), keys))
    found.extend((m.start(), frozenset({m.group().lower()})) for m in _PLACEHOLDER.finditer(text))
    return tuple(dict.fromkeys(keys for _, keys in sorted(found, key=lambda f: f[0])))


@lru_cache(maxsize=50_000)
def identifier_keys(text: str) -> frozenset[str]:
    """Every key of every multi-part token (and `--flag`, and placeholder) in a passage's unit; a heading's
    words in code as flags too."""
    out: set[str] = set()
    folded = fold(text)
    for token in word_tokens(folded, _TOKEN):
        if not plain_word(token):
            out.update(_token_keys(token))
    if "%" in folded or "{" in folded:
        out.update(m.group().lower() for m in _PLACEHOLDER.finditer(folded))
    if unit_heading_level(text.lstrip()) is not None:
        out.update(
            f"--{word}"
            for word in (fold(m.group(1)).lower() for m in _CODE.finditer(text))
            if _WORD.fullmatch(word)
        )
    return frozenset(out)


@lru_cache(maxsize=16384)
def _token_keys(token: str) -> frozenset[str]:
    """A unit's token's keys, worked out once per token: the same words come back in passage after passage."""
    if token.startswith("--") or is_compound(token):
        return frozenset(_keys(token, runs=True))
    return frozenset()
