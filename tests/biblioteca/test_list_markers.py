"""The list item markers the splitter and the trimmer share are CommonMark's."""

from __future__ import annotations

import re

import pytest

from biblioteca.text.list_markers import BULLET, LIST_MARKER, ORDERED


@pytest.mark.parametrize("marker", ["-", "*", "+", "1.", "7)", "123456789.", "0)"])
def test_commonmark_markers_match(marker: str) -> None:
    assert re.fullmatch(LIST_MARKER, marker)


@pytest.mark.parametrize("marker", ["1234567890.", "١.", "a.", "•", "1", "1:", "--"])
def test_what_commonmark_does_not_call_a_marker_does_not_match(marker: str) -> None:
    assert re.fullmatch(LIST_MARKER, marker) is None


def test_bullets_and_ordered_markers_are_told_apart() -> None:
    assert re.fullmatch(BULLET, "-") and not re.fullmatch(BULLET, "1.")
    assert re.fullmatch(ORDERED, "2)") and not re.fullmatch(ORDERED, "+")
