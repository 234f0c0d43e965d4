"""Trimming never loses what a question names: the units of the retrieved passages that hold one of the
question's identifiers (`--assetsInlineLimit`, `import.meta.hot.prune`) are kept, whatever their cosines.

Documentation answers such a question in a table row, a `Default:` line or the sentence under an API heading:
short units that embed poorly, in passages whose best cosine may sit below the others'. Only rare identifiers
count (held by at most `limit` units across the passages), so a question naming `import.meta.env`, which half
the lines of a page hold, trims as before.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from biblioteca.text.identifiers import identifier_keys
from biblioteca.text.list_markers import LIST_MARKER

if TYPE_CHECKING:
    from biblioteca.trimming import TrimInput

HEADING_PATH = -1
# A list item holding a name alone (`- **$route.fullPath**`, `` - `push(location)` ``): a reference written as a
# list heads each entry so, its type and description nested under it.
_NAME_ITEM = re.compile(
    rf"\s*{LIST_MARKER}[ \t]+(?:\*\*|__|`)*[^\s*`()]+(?:\([^()\n]*\))?(?:\*\*|__|`)*:?\s*"
)


def identifier_units(
    chunks: Sequence[TrimInput], identifiers: Sequence[frozenset[str]], *, limit: int, companions: bool
) -> list[set[int]]:
    """Per chunk, the units to keep for the question's rare identifiers: each unit holding one; under a heading
    holding one (a heading unit, or the chunk's heading path for the units before its first heading) the first
    unit with words, where a reference states what the identifier is, and so under a list item holding only
    its name; with `companions`, theirs (a row's header row, a field's heading and siblings)."""
    out: list[set[int]] = [set() for _ in chunks]
    if not identifiers or limit <= 0:
        return out
    headings = [identifier_keys(c.heading) if c.heading else frozenset() for c in chunks]
    for keys in identifiers:
        holders = _holders(chunks, headings, keys)
        if len(holders) > limit:
            continue
        for c, i in holders:
            chunk = chunks[c]
            if i == HEADING_PATH or chunk.shapes[i] == "heading" or _names_entry(chunk, i):
                if i != HEADING_PATH:
                    out[c].add(i)
                first = _first_words(chunk, i + 1)
                if first is not None and not _names_entry(chunk, first):
                    out[c].add(first)
            else:
                out[c].add(i)
    if companions:
        for chunk, kept in zip(chunks, out):
            kept.update(j for i in list(kept) for j in chunk.companions[i])
    return out


def _holders(
    chunks: Sequence[TrimInput], headings: Sequence[frozenset[str]], keys: frozenset[str]
) -> list[tuple[int, int]]:
    """(chunk, unit) of every unit holding one of `keys`; unit HEADING_PATH for a chunk's heading path."""
    found: list[tuple[int, int]] = []
    for c, (chunk, heading) in enumerate(zip(chunks, headings, strict=True)):
        if not heading.isdisjoint(keys):
            found.append((c, HEADING_PATH))
        units = {i for key in keys for i in chunk.units_keyed(key)}
        found.extend((c, i) for i in sorted(units))
    return found


def _names_entry(chunk: TrimInput, i: int) -> bool:
    return chunk.shapes[i] == "item" and _NAME_ITEM.fullmatch(chunk.units[i]) is not None


def _first_words(chunk: TrimInput, start: int) -> int | None:
    """The first unit from `start` that is neither markup nor a heading, unless a heading comes first; past an
    option's field lines (`Type:`, `Default:`, kept as the heading's companions) to the sentence saying what it
    does, when one follows them."""
    field = None
    for j in range(start, len(chunk.units)):
        if chunk.shapes[j] == "heading":
            break
        if chunk.markup[j]:
            continue
        if chunk.shapes[j] != "field":
            return j
        if field is None:
            field = j
    return field
