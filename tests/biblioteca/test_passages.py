"""Growing a hit into a passage: neighbours within the word budget, overlaps said once, headings put back."""

from __future__ import annotations

import numpy as np
import pytest

from biblioteca.passages import (
    Piece,
    grow,
    heading_path_at,
    join,
    passage_heading_cosines,
    passage_sentences,
    passage_stored_lines,
)

DOC = (
    "Intro text here.\n\n## Install\n\nRun the installer. It takes a minute.\n\n## Configure\n\n"
    "Set the port. Set the host too."
)


def piece(id: int, index: int, heading: tuple[str, ...], text: str) -> Piece:
    start = DOC.index(text)
    return Piece(id=id, index=index, heading_path=heading, text=text, start=start, end=start + len(text))


INTRO = piece(1, 0, ("# Guide",), "Intro text here.")
INSTALL = piece(2, 1, ("# Guide", "## Install"), "Run the installer. It takes a minute.")
CONFIGURE = piece(3, 2, ("# Guide", "## Configure"), "Set the port. Set the host too.")
ALL = [INTRO, INSTALL, CONFIGURE]


def test_a_hit_grows_forward_then_backward_within_the_budget():
    assert [p.id for p in grow(INSTALL, ALL, budget=100)] == [1, 2, 3]
    assert [p.id for p in grow(INSTALL, ALL, budget=INSTALL.words + CONFIGURE.words)] == [2, 3]
    assert [p.id for p in grow(INSTALL, ALL, budget=INSTALL.words)] == [2]


def test_a_hit_never_takes_a_chunk_another_passage_holds():
    assert [p.id for p in grow(INSTALL, ALL, budget=100, taken={3})] == [1, 2]


def test_a_hit_larger_than_the_budget_stays_whole():
    assert grow(CONFIGURE, ALL, budget=1) == [CONFIGURE]


def test_join_puts_back_the_heading_of_each_new_section():
    joined = join(ALL)
    assert joined.text == (
        "Intro text here.\n\n## Install\n\nRun the installer. It takes a minute.\n\n"
        "## Configure\n\nSet the port. Set the host too."
    )
    assert [joined.text[a:b] for a, b in joined.headings] == ["## Install", "## Configure"]
    assert joined.heading_path == ("# Guide",)


def test_the_heading_path_at_a_place_in_a_passage_is_its_sections():
    """What a trimmed passage is headed by, when trimming cut the sections before the text it keeps."""
    joined = join(ALL)
    at = lambda words: heading_path_at(joined, joined.text.index(words))  # noqa: E731
    assert at("Intro") == ("# Guide",)
    assert at("## Install") == at("Run the installer") == at("a minute") == ("# Guide", "## Install")
    assert at("## Configure") == at("the host") == ("# Guide", "## Configure")


def test_join_says_an_overlap_once():
    first = Piece(id=1, index=0, heading_path=("# A",), text="one two three four", start=0, end=18)
    second = Piece(id=2, index=1, heading_path=("# A",), text="three four five six", start=8, end=27)
    joined = join([first, second])
    assert joined.text == "one two three four five six"
    assert joined.members[1].cut == 10 and joined.members[1].offset == 18


def test_cosines_map_onto_their_sentences_and_a_put_back_heading_scores_zero():
    joined = join([INSTALL, CONFIGURE])
    spans = {2: [(0, 18), (19, 37)], 3: [(0, 13), (14, 31)]}
    cosines = {2: np.array([0.9, 0.8], np.float32), 3: np.array([0.7, 0.6], np.float32)}
    mapped, values = passage_sentences(joined, spans, cosines)
    assert [joined.text[a:b] for a, b in mapped] == [
        "Run the installer.",
        "It takes a minute.",
        "## Configure",
        "Set the port.",
        "Set the host too.",
    ]
    assert values.dtype == np.float32
    assert values.tolist() == pytest.approx([0.9, 0.8, 0.0, 0.7, 0.6])


def test_each_put_back_heading_gets_the_cosine_of_the_chunk_it_opens():
    joined = join([INSTALL, CONFIGURE])
    assert joined.opens == (1,)
    spans, _ = passage_sentences(
        joined,
        {2: [(0, 18), (19, 37)], 3: [(0, 13), (14, 31)]},
        {
            2: np.array([0.9, 0.8], np.float32),
            3: np.array([0.7, 0.6], np.float32),
        },
    )
    # the passage starts under Install's heading, which its first member opens; Configure's is unit 2
    assert passage_heading_cosines(joined, spans, {2: 0.81, 3: 0.93}) == ((-1, 0.81), (2, 0.93))


def test_a_heading_whose_chunk_stored_no_vector_gets_none():
    """Chunks stored before heading vectors were, or that continue their section, have none to give."""
    joined = join([INSTALL, CONFIGURE])
    spans, _ = passage_sentences(
        joined,
        {2: [(0, 18), (19, 37)], 3: [(0, 13), (14, 31)]},
        {
            2: np.array([0.9, 0.8], np.float32),
            3: np.array([0.7, 0.6], np.float32),
        },
    )
    assert passage_heading_cosines(joined, spans, {3: 0.93}) == ((2, 0.93),)
    assert passage_heading_cosines(joined, spans, {}) == ()


def test_a_sentence_cut_by_an_overlap_drops_its_value_with_its_old_part():
    first = Piece(id=1, index=0, heading_path=("# A",), text="one two three four", start=0, end=18)
    second = Piece(id=2, index=1, heading_path=("# A",), text="three four five six", start=8, end=27)
    joined = join([first, second])
    mapped, values = passage_sentences(
        joined,
        {1: [(0, 7), (8, 18)], 2: [(0, 10), (11, 19)]},
        {1: np.array([0.1, 0.2], np.float32), 2: np.array([0.3, 0.4], np.float32)},
    )
    assert [joined.text[a:b] for a, b in mapped] == ["one two", "three four", "five six"]
    assert values.tolist() == pytest.approx([0.1, 0.2, 0.4])


def test_a_sentence_cut_by_an_overlap_keeps_only_its_new_part():
    first = Piece(id=1, index=0, heading_path=("# A",), text="one two three four", start=0, end=18)
    second = Piece(id=2, index=1, heading_path=("# A",), text="three four five six", start=8, end=27)
    joined = join([first, second])
    mapped, _ = passage_sentences(
        joined,
        {1: [(0, 18)], 2: [(0, 19)]},
        {1: np.ones(1, np.float32), 2: np.ones(1, np.float32)},
    )
    assert [joined.text[a:b] for a, b in mapped] == ["one two three four", "five six"]


def test_a_member_without_stored_sentences_gives_none():
    assert passage_sentences(join([INTRO, INSTALL]), {1: [(0, 16)]}, {1: np.ones(1, np.float32)}) is None


def test_stored_stems_go_to_the_units_that_are_their_whole_sentences():
    """A put-back heading, and the new part of a sentence an overlap cut into, are stemmed anew: their text is
    not the stored sentence's."""
    first = Piece(id=1, index=0, heading_path=("# A",), text="one two three four", start=0, end=18)
    second = Piece(id=2, index=1, heading_path=("# A",), text="three four five six", start=8, end=27)
    joined = join([first, second])
    spans = {1: [(0, 7), (8, 18)], 2: [(0, 15), (16, 19)]}
    stems = {1: [frozenset({"one"}), frozenset({"three"})], 2: [frozenset({"cut"}), frozenset({"six"})]}
    mapped, _ = passage_sentences(joined, spans, {i: np.ones(2, np.float32) for i in spans})
    assert [joined.text[a:b] for a, b in mapped] == ["one two", "three four", "five", "six"]
    assert passage_stored_lines(joined, spans, stems) == [{"one"}, {"three"}, None, {"six"}]

    with_heading = join([INSTALL, CONFIGURE])
    spans = {2: [(0, 18), (19, 37)], 3: [(0, 13), (14, 31)]}
    stems = {2: [frozenset({"run"}), frozenset({"minut"})], 3: None}
    assert passage_stored_lines(with_heading, spans, stems) == [{"run"}, {"minut"}, None, None, None]
