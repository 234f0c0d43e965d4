"""Every rule of trim_chunks with hand-made vectors: no model involved, so each score is known exactly."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from biblioteca.text.lexical import terms, unit_terms
from biblioteca.trimming import (
    TrimInput,
    TrimParams,
    earlier_sections_floor,
    is_markup,
    join_runs,
    lexical_evidence,
    select_sentences,
    trim_chunks,
    unit_companions,
    with_short_gaps,
    without_markup_edges,
)

QUERY = np.array([1.0, 0.0], dtype=np.float32)


def vec(score: float) -> list[float]:
    """A unit vector whose cosine with QUERY is `score`."""
    return [score, float(np.sqrt(max(0.0, 1 - score * score)))]


def chunk(sentences: list[str], scores: list[float], sep: str = " ") -> TrimInput:
    text = sep.join(sentences)
    spans, cursor = [], 0
    for s in sentences:
        start = text.index(s, cursor)
        spans.append((start, start + len(s)))
        cursor = start + len(s)
    return TrimInput(text, spans, np.asarray([vec(x) for x in scores], dtype=np.float32).reshape(-1, 2))


def trim_one(c: TrimInput, **params) -> str:
    (out,) = trim_chunks([c], QUERY, TrimParams(**params))
    return out.text


SEED = chunk(["Sentence A.", "Sentence B (relevante).", "Sentence C."], [0.3, 0.8, 0.2])


def test_seed_example_1_threshold_alone_keeps_the_relevant_sentence():
    assert trim_one(SEED, threshold=0.5, window=0) == "Sentence B (relevante)."


def test_seed_example_2_a_window_that_reaches_everything_returns_the_chunk_unchanged():
    assert trim_one(SEED, threshold=0.5, window=1) == SEED.text


def test_seed_example_3_the_minimum_is_topped_up_with_the_best_in_original_order():
    c = chunk(["A", "B", "C", "D"], [0.1, 0.2, 0.3, 0.05])
    assert trim_one(c, threshold=0.5, min_sentences=2, window=0) == "B C"


def test_separate_runs_are_joined_with_an_elision_marker():
    c = chunk(["One.", "Two.", "Three.", "Four.", "Five."], [0.9, 0.1, 0.1, 0.1, 0.9])
    assert trim_one(c, threshold=0.5, window=0) == "One. [...] Five."


def test_contiguous_kept_sentences_keep_their_original_text_between_them():
    c = chunk(
        ["Intro.", "```sh\nmake run\n```", "Then open the page.", "Unrelated."],
        [0.1, 0.9, 0.9, 0.1],
        sep="\n\n",
    )
    assert trim_one(c, threshold=0.5, window=0) == "```sh\nmake run\n```\n\nThen open the page."


def test_the_window_adds_neighbours_on_both_sides():
    c = chunk(list("ABCDEFG"), [0, 0, 0, 0.9, 0, 0, 0])
    assert trim_one(c, threshold=0.5, window=1) == "C D E"
    assert trim_one(c, threshold=0.5, window=2) == "B C D E F"


def test_a_chunk_without_sentences_comes_back_unchanged():
    empty = TrimInput("", [], np.zeros((0, 2), dtype=np.float32))
    (out,) = trim_chunks([empty], QUERY, TrimParams(threshold=0.5))
    assert out.text == "" and not out.dropped


def test_no_sentence_above_threshold_never_empties_the_chunk():
    c = chunk(["A.", "B.", "C."], [0.1, 0.3, 0.2])
    assert trim_one(c, threshold=0.99, window=0) == "B."


def test_relative_margin_keeps_sentences_near_the_best_of_the_query():
    first = chunk(["A.", "B."], [0.60, 0.10])
    second = chunk(["C.", "D."], [0.58, 0.10])
    outs = trim_chunks([first, second], QUERY, TrimParams(threshold=0.9, window=0, relative_margin=0.05))
    assert [o.text for o in outs] == ["A.", "C."]


def test_drop_margin_drops_hopeless_chunks_but_never_all_of_them():
    good = chunk(["A.", "B."], [0.9, 0.1])
    hopeless = chunk(["C.", "D."], [0.3, 0.2])
    outs = trim_chunks([good, hopeless], QUERY, TrimParams(threshold=0.5, window=0, drop_margin=0.2))
    assert outs[0].text == "A." and outs[1].dropped and outs[1].text == ""
    (alone,) = trim_chunks([hopeless], QUERY, TrimParams(threshold=0.5, window=0, drop_margin=0.2))
    assert not alone.dropped and alone.text == "C."


def test_kept_indices_are_reported_in_order():
    (out,) = trim_chunks([chunk(list("ABCD"), [0.9, 0, 0, 0.9])], QUERY, TrimParams(threshold=0.5, window=0))
    assert out.kept == (0, 3)


def test_select_sentences_and_join_runs_directly():
    assert select_sentences(np.array([0.1, 0.9, 0.2]), threshold=0.5, min_sentences=1, window=0) == [1]
    assert select_sentences(np.array([]), threshold=0.5, min_sentences=1, window=0) == []
    assert join_runs("ab cd ef", [(0, 2), (3, 5), (6, 8)], [0, 2]) == "ab [...] ef"


BLOCKS = [
    "Setup takes a minute.",
    "Most teams never change it.",
    "## Install",
    "Run this:",
    '```json\n{"port": 8000}\n```',
    "| Name | Default |",
    "|---|---|",
    "| host | 0.0.0.0 |",
    "| port | 8000 |",
    "| debug | false |",
    "- Linux",
    "- Debian, tested weekly",
]
BLOCKS_TEXT = (
    "Setup takes a minute. Most teams never change it.\n\n## Install\n\nRun this:\n\n"
    '```json\n{"port": 8000}\n```\n\n| Name | Default |\n|---|---|\n| host | 0.0.0.0 |\n| port | 8000 |\n'
    "| debug | false |\n\n- Linux\n  - Debian, tested weekly\n"
)


def _spans(text: str, units: list[str]) -> list[tuple[int, int]]:
    spans, cursor = [], 0
    for unit in units:
        start = text.index(unit, cursor)
        spans.append((start, start + len(unit)))
        cursor = start + len(unit)
    return spans


def test_a_trimmed_passage_is_still_the_markdown_it_was():
    """A gap between blocks gets a line of its own, so the heading, the code fence, the table and the nested
    list after it still parse as what they were; a gap between two rows is a row; a gap in a line stays in it."""
    from markdown_it import MarkdownIt

    spans = _spans(BLOCKS_TEXT, BLOCKS)
    trimmed = join_runs(BLOCKS_TEXT, spans, [0, 2, 4, 5, 6, 7, 9, 11])
    assert trimmed.startswith("Setup takes a minute.\n\n[...]\n\n## Install\n\n[...]\n\n```json")
    assert "| host | 0.0.0.0 |\n| [...] |\n| debug | false |" in trimmed
    assert trimmed.endswith("\n\n[...]\n\n- Debian, tested weekly")

    def blocks(text: str) -> list[str]:
        return [
            t.type
            for t in MarkdownIt("commonmark").enable("table").parse(text)
            if t.level == 0 and t.nesting >= 0
        ]

    assert blocks(trimmed) == [
        "paragraph_open", "paragraph_open", "heading_open", "paragraph_open", "fence", "table_open",
        "paragraph_open", "bullet_list_open",
    ]  # fmt: skip
    assert join_runs(BLOCKS_TEXT, spans, [1, 3]) == "Most teams never change it.\n\n[...]\n\nRun this:"
    assert (
        join_runs(BLOCKS_TEXT, spans, [0, 1, 3])
        == "Setup takes a minute. Most teams never change it.\n\n[...]\n\nRun this:"
    )


def test_a_gap_never_turns_an_indented_line_into_code_nor_two_tables_into_one():
    from markdown_it import MarkdownIt

    def blocks(text: str) -> list[str]:
        return [
            t.type
            for t in MarkdownIt("commonmark").enable("table").parse(text)
            if t.level == 0 and t.nesting >= 0
        ]

    nested = "Supported systems:\n\n- Linux\n    - Debian, tested weekly.\n- macOS\n    - Sonoma only.\n"
    units = ["Supported systems:", "- Linux", "- Debian, tested weekly.", "- macOS", "- Sonoma only."]
    trimmed = join_runs(nested, _spans(nested, units), [0, 4])
    assert trimmed == "Supported systems:\n\n[...]\n\n- Sonoma only."
    assert "code_block" not in blocks(trimmed)

    tables = (
        "| A | B |\n|---|---|\n| a1 | b1 |\n| a2 | b2 |\n\n| X | Y | Z |\n|---|---|---|\n| x1 | y1 | z1 |\n"
    )
    units = [
        "| A | B |",
        "|---|---|",
        "| a1 | b1 |",
        "| a2 | b2 |",
        "| X | Y | Z |",
        "|---|---|---|",
        "| x1 | y1 | z1 |",
    ]
    trimmed = join_runs(tables, _spans(tables, units), [0, 1, 2, 4, 5, 6])
    assert (
        trimmed
        == "| A | B |\n|---|---|\n| a1 | b1 |\n\n[...]\n\n| X | Y | Z |\n|---|---|---|\n| x1 | y1 | z1 |"
    )
    assert blocks(trimmed).count("table_open") == 2
    shapes = ["row", "rule", "row", "row", "row", "rule", "row"]
    assert join_runs(tables, _spans(tables, units), [0, 1, 2, 4, 5, 6], shapes=shapes) == trimmed
    assert "| [...] |" in join_runs(tables, _spans(tables, units), [0, 1, 3], shapes=shapes)


def test_a_kept_table_row_brings_its_own_tables_header_and_rule_even_from_the_window():
    text = "Pick a key.\n\n| Key | Value |\n|---|---|\n| `workers` | 4 |\n| `timeout` | 30 |\n\n| K | V |\n|---|---|\n| a | b |"
    units = ["Pick a key.", "| Key | Value |", "|---|---|", "| `workers` | 4 |", "| `timeout` | 30 |"]
    units += ["| K | V |", "|---|---|", "| a | b |"]
    c = TrimInput(
        text, _spans(text, units), np.asarray([vec(x) for x in [0.95, 0, 0, 0, 0, 0, 0, 0]], np.float32)
    )
    # the window (1) adds the header row after the best line: its rule comes with it
    out = trim_chunks([c], QUERY, TrimParams(threshold=0.9, window=1))[0]
    assert out.text == "Pick a key.\n\n| Key | Value |\n|---|---|"
    # a row of the second table brings that table's header and rule, not the first table's
    c = replace(c, vectors=np.asarray([vec(x) for x in [0, 0, 0, 0, 0, 0, 0, 0.95]], np.float32))
    out = trim_chunks([c], QUERY, TrimParams(threshold=0.9, window=0))[0]
    assert out.text == "| K | V |\n|---|---|\n| a | b |"


@pytest.mark.parametrize(
    ("next_steps", "later"),
    [("## Next steps", "## Later"), ("Next steps\n----------", "Later\n=====")],  # ATX or setext
)
def test_a_heading_whose_section_was_cut_does_not_close_a_run(next_steps, later):
    c = chunk(
        ["Setup takes a minute.", next_steps, "Read the guide.", later, "L0."],
        [0.95, 0.0, 0.1, 0.0, 0.96],
        sep="\n\n",
    )
    out = trim_chunks([c], QUERY, TrimParams(threshold=0.9, window=1, trim_markup=True))[0]
    assert out.text == f"Setup takes a minute.\n\n[...]\n\n{later}\n\nL0."
    assert 1 not in out.kept and 3 in out.kept, "a heading over kept text stays"


def test_select_sentences_gives_the_window_only_to_units_at_the_window_floor():
    scores = np.array([0.1, 0.9, 0.1, 0.1, 0.7, 0.1, 0.1])
    assert select_sentences(scores, threshold=0.6, min_sentences=1, window=1) == [0, 1, 2, 3, 4, 5]
    assert select_sentences(scores, threshold=0.6, min_sentences=1, window=1, window_floor=0.8) == [
        0,
        1,
        2,
        4,
    ]
    # a companion still comes with a unit below the window floor
    companions = [(), (), (), (), (6,), (), ()]
    assert select_sentences(
        scores, threshold=0.6, min_sentences=1, window=1, window_floor=0.8, companions=companions
    ) == [0, 1, 2, 4, 6]


@pytest.mark.parametrize(
    "bad",
    [
        dict(threshold=1.5),
        dict(threshold=0.5, window=-1),
        dict(threshold=0.5, min_sentences=0),
        dict(threshold=0.5, lexical_weight=-0.1),
        dict(threshold=0.5, spread_factor=0),
        dict(threshold=0.5, passage_spread=-0.1),
        dict(threshold=0.5, window_spread=-0.1),
    ],
)
def test_invalid_parameters_are_refused(bad):
    with pytest.raises(ValueError):
        TrimParams(**bad)


# Documentation rules: words as evidence, units kept together, margins that follow the spread of the scores.

TERMS = {"responsemodelexcludeunset": 6.0, "respons": 1.0, "model": 1.0, "exclud": 1.0, "unset": 1.0}


def test_lexical_evidence_is_the_share_of_the_question_weight_a_unit_holds():
    c = replace(
        chunk(["Set `response_model_exclude_unset=True`.", "Unrelated words here."], [0.8, 0.8]),
        language="en",
    )
    evidence = lexical_evidence(c, TERMS, heading_weight=0.5)
    assert evidence[0] == pytest.approx(1.0)
    assert evidence[1] == 0.0


def test_lexical_evidence_counts_the_heading_for_the_units_under_it():
    c = replace(
        chunk(
            ["### response_model_exclude_unset", "Leaves out the defaults.", "## Other", "Something else."],
            [0.8, 0.8, 0.8, 0.8],
            sep="\n\n",
        ),
        language="en",
    )
    evidence = lexical_evidence(c, TERMS, heading_weight=0.5)
    assert evidence[0] == pytest.approx(1.0)
    assert evidence[1] == pytest.approx(0.5)
    assert evidence[3] == 0.0


def test_lexical_evidence_does_not_count_a_word_found_only_in_a_links_destination():
    c = replace(
        chunk(
            [
                "Open the browser window (see [the first steps](guide/overview#configurar-pruebas)).",
                'Read [the guide](setup.md "Pruebas y configuración") first.',
                "Las pruebas se ejecutan una vez en CI.",
            ],
            [0.8, 0.8, 0.8],
        ),
        language="es",
    )
    evidence = lexical_evidence(c, {"prueb": 1.0}, heading_weight=0.5)
    assert list(evidence) == [0.0, 0.0, pytest.approx(1.0)]


def test_the_chunk_heading_path_counts_before_the_first_heading_unit():
    c = replace(
        chunk(["Leaves out the defaults."], [0.8]),
        language="en",
        heading="# Response model ## response_model_exclude_unset",
    )
    assert lexical_evidence(c, TERMS, heading_weight=0.5)[0] == pytest.approx(0.5)


def _evidence_unit_by_unit(c, query_terms, heading_weight):
    """lexical_evidence's definition, one unit after the other (what it computed before its term index)."""
    total = sum(query_terms.values())

    def share(found):
        if found.isdisjoint(query_terms):
            return 0.0
        return sum(query_terms[t] for t in found.intersection(query_terms)) / total

    heading = share(frozenset(terms(c.heading, language=c.language))) if c.heading else 0.0
    out = []
    for unit in c.units:
        own = share(frozenset(terms(unit, language=c.language)))
        if unit.lstrip().startswith("#"):
            heading = own
            out.append(own)
        else:
            out.append(max(own, heading_weight * heading))
    return np.array(out, dtype=np.float32)


@pytest.mark.parametrize("heading_weight", [0.0, 0.3, 0.5, 1.0])
def test_lexical_evidence_is_bit_for_bit_the_unit_by_unit_definition(heading_weight):
    weights = {"respons": 0.37, "model": 1.3, "exclud": 2.9, "unset": 0.11, "default": 1.7, "port": 0.9}
    units = [
        "Intro with the default port.",
        "### response_model_exclude_unset",
        "Leaves out the defaults of the response model.",
        "Unrelated words.",
        "## Ports",
        "The port, the model and what is unset.",
        "Nothing here.",
    ]
    c = replace(
        chunk(units, [0.5] * len(units), sep="\n\n"), language="en", heading="# Response model defaults"
    )
    expected = _evidence_unit_by_unit(c, weights, heading_weight)
    got = lexical_evidence(c, weights, heading_weight=heading_weight)
    assert got.dtype == np.float32 and got.tobytes() == expected.tobytes()
    assert len(set(got.tolist())) >= 4  # the case sums many different shares
    # A question's passages share their sums: a second passage, without headings, reuses the first one's.
    flat = replace(chunk(units[2:4] + units[5:], [0.5] * 4), language="en", heading="# Ports")
    shares: dict = {}
    for passage in (c, flat):
        got = lexical_evidence(passage, weights, heading_weight=heading_weight, shares=shares)
        assert got.tobytes() == _evidence_unit_by_unit(passage, weights, heading_weight).tobytes()
    assert len(shares) >= 3


def test_a_passage_finds_the_units_holding_a_stem_in_order_and_remembers_only_its_own_stems():
    c = replace(
        chunk(
            ["The port to listen on.", "Unrelated words.", "Ports and more ports.", "Default port."],
            [0.5] * 4,
        ),
        language="en",
    )
    assert c.units_holding("port") == (0, 2, 3)
    assert c.units_holding("unrel") == (1,)
    assert c.units_holding("absent") == ()
    assert c.units_holding("port") is c.units_holding("port")
    # A stem the passage lacks is not remembered: questions bring endless words, a passage holds few.
    assert set(c._units.stems._found) == {"port", "unrel"}


def test_a_passage_takes_the_stems_stored_with_its_sentences_and_stems_only_the_units_without():
    asked = []

    def stored():
        asked.append(True)
        return ["stored", None]

    units = ["Words a passage met first in storage.", "A unit stemmed anew for this passage."]
    c = replace(chunk(units, [0.5, 0.5]), language="en", stored_terms=stored)
    assert c.unit_terms == (frozenset({"stored"}), unit_terms(units[1], "en"))
    assert c.units_holding("stored") == (0,) and c.units_holding("word") == ()
    # Another question over the same passage finds its stems known and asks storage for nothing.
    assert replace(c, stored_terms=stored).unit_terms == c.unit_terms
    assert asked == [True]


def test_stems_kept_packed_find_the_same_units_as_sets_of_them():
    """A stem is found whole in its unit's packed line: never as part of a longer stem, nor across two lines."""
    lines = ["import port", "", "portal ports", "port", "a port z", "zeta"]
    units = [f"Unit {i} of a passage kept packed." for i in range(len(lines))]
    packed = replace(chunk(units, [0.5] * len(units)), stored_terms=lambda: lines)
    as_sets = replace(chunk([f"{u} " for u in units], [0.5] * len(units)), stored_terms=lambda: [None] * 6)
    assert packed.unit_terms == tuple(frozenset(line.split()) for line in lines)
    for term in ("port", "ports", "portal", "import", "a", "z", "zeta", "ort", "port portal", "", "absent"):
        expected = tuple(i for i, line in enumerate(lines) if term in line.split())
        assert packed.units_holding(term) == expected, term
    assert as_sets.units_holding("unit") == tuple(range(6))


def test_a_short_unit_naming_the_option_survives_thanks_to_its_words():
    c = replace(
        chunk(
            [
                "Intro about responses in general.",
                "Other prose.",
                "Default: `response_model_exclude_unset`",
                "More prose.",
            ],
            [0.86, 0.85, 0.78, 0.85],
        ),
        language="en",
    )
    plain = TrimParams(threshold=0.95, window=0, relative_margin=0.03)
    assert "Default" not in trim_chunks([c], QUERY, plain, TERMS)[0].text
    lexical = replace(plain, lexical_weight=0.2)
    assert "Default: `response_model_exclude_unset`" in trim_chunks([c], QUERY, lexical, TERMS)[0].text


def test_a_chunk_is_dropped_on_its_cosines_not_on_shared_words():
    good = replace(chunk(["The answer.", "Filler."], [0.90, 0.5]), language="en")
    wordy = replace(
        chunk(["response_model_exclude_unset mentioned in passing.", "Filler."], [0.70, 0.5]), language="en"
    )
    params = TrimParams(threshold=0.95, window=0, relative_margin=0.05, drop_margin=0.05, lexical_weight=0.5)
    outs = trim_chunks([good, wordy], QUERY, params, TERMS)
    assert outs[1].dropped


def test_the_spread_factor_shrinks_the_margins_when_scores_are_close_together():
    scores = [0.84, 0.83, 0.82, 0.81, 0.80, 0.80, 0.80]
    c = chunk([f"S{i}." for i in range(len(scores))], scores)
    wide = TrimParams(threshold=0.95, window=0, relative_margin=0.10)
    assert trim_one(c, **wide.__dict__) == c.text
    (out,) = trim_chunks([c], QUERY, replace(wide, spread_factor=0.5))
    assert out.text == "S0. S1."  # margin 0.5 * (0.84 - median 0.81) = 0.015: S1 at 0.83 stays, 0.82 goes


@pytest.mark.parametrize(
    ("units", "expected"),
    [
        (
            ["| Name | Default |", "|---|---|", "| port | 8000 |", "| host | 0.0.0.0 |"],
            [(1,), (0,), (0, 1), (0, 1)],
        ),
        # two tables with no line of prose between them: the second one's rows have its own header
        (
            [
                "| Name | Default |",
                "|---|---|",
                "| port | 8000 |",
                "| Flag | Meaning |",
                "|---|---|",
                "| -v | loud |",
            ],
            [(1,), (0,), (0, 1), (4,), (3,), (3, 4)],
        ),
        (
            ["The options are:", "- `include`: fields to keep.", "- `exclude`: fields to leave out."],
            [(1, 2), (0,), (0,)],
        ),
        (
            ["Two options exist.", "- `include`: fields to keep.", "- `exclude`: fields to leave out."],
            [(), (0,), (0,)],
        ),
        (
            ["### response_model", "**Type:** `Any`", "**Default:** `None`", "Prose after."],
            [(1, 2), (0, 2), (0, 1), (0, 1, 2)],
        ),
        (["### port", "The port to listen on.", "Default: 8000"], [(2,), (0, 2), (0, 1)]),
        # field lines written on consecutive lines make one unit, a field all the same
        (
            ["### `retries`", "Type: `integer`\nDefault: `3`", "How many times to retry."],
            [(1,), (0,), (0, 1)],
        ),
        (
            ["### `modo`", "**Tipo:** `string`<br>\n**Por defecto:** `rápido`", "Elige el modo."],
            [(1,), (0,), (0, 1)],
        ),
        # every line of an option's section, its example too, brings the option's heading and fields, up to the
        # next heading; a section whose fields are not at its top is no option's card
        (
            [
                "## out.dir",
                "- **Type:** `string`",
                "- **Default:** `dist`",
                "Where the build goes.",
                "```js\nout: { dir: 'build' }\n```",
                "## Notes",
                "A paragraph first.",
                "Another one.",
                "Default: 3",
            ],
            [(1, 2), (0, 2), (0, 1), (0, 1, 2), (0, 1, 2), (), (), (), (7,)],
        ),
        # a definition list as MDN writes it: each definition comes with its term and the term with each of
        # its definitions; an item opening with a colon after prose defines nothing, nor does `Note: ...`
        (
            [
                "## Directives",
                "- `*` (wildcard)",
                "  - : Any header may have shaped the answer.",
                "- `<name>`",
                "  - : A request header that shaped it.",
                "  - : Or several, comma-separated.",
            ],
            [(), (0, 2), (0, 1), (0, 4, 5), (0, 3), (0, 3)],
        ),
        (["Some prose.", "- : a stray colon item"], [(), (0,)]),
        (["- Note: not a definition", "- Plain item"], [(), ()]),
        (["Just prose.", "More prose."], [(), ()]),
        # a lead-in ending with a colon over subsections announces them: the first one's heading and first line
        # come with it; a line over a heading that does not end with a colon announces nothing
        (
            [
                "Shrink the text in one of two ways:",
                "### Per slide",
                "#### Inline",
                "Add a style tag.",
                "More.",
            ],
            [(1, 2, 3), (), (), (), ()],
        ),
        (["The end of a section.", "## Next", "Its first line."], [(), (), ()]),
        (["A lead-in at the very end:", "## Next"], [(1,), ()]),
    ],
)
def test_units_that_belong_together(units, expected):
    assert unit_companions(units) == expected


def test_companions_come_with_a_kept_unit_but_bring_no_window():
    units = ["| Name | Default |", "|---|---|", "| port | 8000 |", "| host | 0.0.0.0 |", "| user | app |"]
    c = chunk(units, [0.1, 0.1, 0.1, 0.9, 0.1], sep="\n")
    params = TrimParams(threshold=0.5, window=0, companions=True)
    assert (
        trim_chunks([c], QUERY, params)[0].text
        == "| Name | Default |\n|---|---|\n| [...] |\n| host | 0.0.0.0 |"
    )
    # without companions too: a kept row always renders under its header and rule
    assert (
        trim_one(c, threshold=0.5, window=0) == "| Name | Default |\n|---|---|\n| [...] |\n| host | 0.0.0.0 |"
    )


def test_a_lead_in_ending_with_a_colon_brings_its_list():
    c = chunk(
        ["The command refers to:", "- `main`: the file.", "- `app`: the object.", "Prose after."],
        [0.9, 0.5, 0.4, 0.3],
    )
    params = TrimParams(threshold=0.8, window=0, companions=True)
    assert (
        trim_chunks([c], QUERY, params)[0].text
        == "The command refers to: - `main`: the file. - `app`: the object."
    )


def test_a_kept_description_brings_its_options_type_and_default():
    units = [
        "## preview.host",
        "- **Type:** `string`",
        "- **Default:** `localhost`",
        "Which address the preview server listens on.",
        "## preview.port",
        "- **Type:** `number`",
        "- **Default:** `4173`",
        "The preview server's port.",
        "When the port is taken, the next free one is tried.",
    ]
    c = chunk(units, [0.0, 0.5, 0.5, 0.5, 0.0, 0.5, 0.5, 0.5, 0.9], sep="\n\n")
    params = TrimParams(threshold=0.8, window=0, companions=True)
    assert trim_chunks([c], QUERY, params)[0].text == "\n\n".join([*units[4:7], "[...]", units[8]])
    assert trim_chunks([c], QUERY, replace(params, companions=False))[0].text == units[-1]


def test_the_first_chunk_is_never_dropped_later_ones_are():
    first = chunk(["A.", "B."], [0.60, 0.5])
    better = chunk(["C.", "D."], [0.90, 0.5])
    weak = chunk(["E.", "F."], [0.60, 0.5])
    params = TrimParams(threshold=0.95, window=0, drop_margin=0.2)
    outs = trim_chunks([first, better, weak], QUERY, params)
    assert [o.dropped for o in outs] == [False, False, True]
    assert outs[0].text == "A."


def test_the_search_margin_keeps_the_vector_searchs_favourite_cut_to_its_best_line():
    first = chunk(["A.", "B."], [0.80, 0.5])
    favourite = chunk(["C.", "D.", "E."], [0.55, 0.60, 0.52])
    near = chunk(["F.", "G."], [0.55, 0.5])
    far = chunk(["H.", "I."], [0.55, 0.5])
    params = TrimParams(threshold=0.95, window=0, relative_margin=0.3, drop_margin=0.1)
    searched = [0.84, 0.86, 0.85, 0.80]
    outs = trim_chunks([first, favourite, near, far], QUERY, params)
    assert [o.dropped for o in outs] == [False, True, True, True]
    outs = trim_chunks(
        [first, favourite, near, far], QUERY, replace(params, drop_search_margin=0.0), search_scores=searched
    )
    # the whole passage ranks best by its own cosine though no sentence comes close: it gives its best line,
    # not every line the query-wide margin would keep
    assert [o.dropped for o in outs] == [False, False, True, True]
    assert outs[1].text == "D."
    wider = trim_chunks(
        [first, favourite, near, far], QUERY, replace(params, drop_search_margin=0.02), search_scores=searched
    )
    assert [o.dropped for o in wider] == [False, False, False, True]
    assert wider[2].text == "F."
    # no search scores given (a caller trimming texts of its own): the drop rule alone
    assert trim_chunks([first, favourite], QUERY, replace(params, drop_search_margin=0.0))[1].dropped
    with pytest.raises(ValueError):
        TrimParams(threshold=0.5, drop_search_margin=-0.01)


def test_a_chunk_that_continues_the_first_on_its_page_is_dropped_only_further_below():
    first = chunk(["A.", "B."], [0.90, 0.5])
    usage = chunk(["C.", "D."], [0.87, 0.5])
    elsewhere = chunk(["E.", "F."], [0.87, 0.5])
    far = chunk(["G.", "H."], [0.84, 0.5])
    params = TrimParams(
        threshold=0.95, window=0, relative_margin=0.3, drop_margin=0.02, drop_neighbour_margin=0.04
    )
    outs = trim_chunks(
        [first, usage, elsewhere, far], QUERY, params, continues_first=[False, True, False, False]
    )
    # 0.03 under the best: too far for another page's passage, close enough for the first one's next section
    assert [o.dropped for o in outs] == [False, False, True, True]
    assert outs[1].text == "C."
    too_far = trim_chunks([first, far], QUERY, params, continues_first=[False, True])
    assert too_far[1].dropped
    # without the neighbour margin, or without being told which chunk continues the first: the drop margin
    assert trim_chunks(
        [first, usage], QUERY, replace(params, drop_neighbour_margin=None), continues_first=[False, True]
    )[1].dropped
    assert trim_chunks([first, usage], QUERY, params)[1].dropped
    with pytest.raises(ValueError):
        TrimParams(threshold=0.5, drop_neighbour_margin=-0.01)


def test_the_neighbour_margin_is_never_narrower_than_the_drop_margin():
    first = chunk(["A.", "B."], [0.90, 0.5])
    next_section = chunk(["C.", "D."], [0.855, 0.5])
    elsewhere = chunk(["E.", "F."], [0.855, 0.5])
    params = TrimParams(
        threshold=0.95, window=0, relative_margin=0.3, drop_margin=0.05, drop_neighbour_margin=0.04
    )
    outs = trim_chunks([first, next_section, elsewhere], QUERY, params, continues_first=[False, True, False])
    # 0.045 under the best: within the drop margin, so the page's next section stays as another page's does
    assert [o.dropped for o in outs] == [False, False, False]
    narrower = trim_chunks(
        [first, next_section, elsewhere],
        QUERY,
        replace(params, drop_margin=0.02),
        continues_first=[False, True, False],
    )
    assert [o.dropped for o in narrower] == [False, True, True]


def test_the_neighbour_margin_drops_nothing_without_the_drop_margin():
    first = chunk(["A.", "B."], [0.90, 0.5])
    next_section = chunk(["C.", "D."], [0.80, 0.5])
    params = TrimParams(threshold=0.95, window=0, drop_neighbour_margin=0.04)
    outs = trim_chunks([first, next_section], QUERY, params, continues_first=[False, True])
    # the drop rule is off: the passage the neighbour margin spares more is not the one passage that goes
    assert not outs[1].dropped
    dropping = trim_chunks(
        [first, next_section], QUERY, replace(params, drop_margin=0.02), continues_first=[False, True]
    )
    assert dropping[1].dropped


NEAR_MISS = TrimParams(
    threshold=0.95,
    window=1,
    relative_margin=0.3,
    drop_margin=0.02,
    drop_best_line_margin=0.035,
    drop_best_line_search_margin=0.03,
)


def test_a_near_miss_keeps_its_best_line_by_cosine_alone():
    first = chunk(["A.", "B."], [0.90, 0.5])
    near = chunk(["N0.", "N1.", "N2."], [0.70, 0.87, 0.60])
    searched_lower = chunk(["S0.", "S1."], [0.87, 0.5])
    further = chunk(["F0.", "F1."], [0.86, 0.5])
    params = NEAR_MISS
    chunks, searched = [first, near, searched_lower, further], [0.85, 0.83, 0.81, 0.84]
    outs = trim_chunks(chunks, QUERY, params, search_scores=searched)
    # 0.03 under the best line and 0.02 under the best search score: its best line, without the window; the
    # other two miss one margin each (search 0.04 under, cosine 0.04 under)
    assert [o.dropped for o in outs] == [False, False, True, True]
    assert outs[1].text == "N1."
    assert outs[1].kept == (1,)
    # two near misses: only the closer by cosine keeps its line
    closer = chunk(["C0.", "C1."], [0.5, 0.875])
    outs = trim_chunks([first, near, closer], QUERY, params, search_scores=[0.85, 0.83, 0.84])
    assert [o.dropped for o in outs] == [False, True, False]
    assert outs[2].text == "C1."
    # either margin off, or no search scores given: the drop rule alone
    for off in ({"drop_best_line_margin": None}, {"drop_best_line_search_margin": None}):
        assert trim_chunks(chunks, QUERY, replace(params, **off), search_scores=searched)[1].dropped
    assert trim_chunks(chunks, QUERY, params)[1].dropped
    for name in ("drop_best_line_margin", "drop_best_line_search_margin"):
        with pytest.raises(ValueError):
            replace(params, **{name: -0.01})


def test_the_line_a_near_miss_keeps_is_its_best_by_cosine_not_by_words():
    first = replace(chunk(["The answer.", "Filler."], [0.90, 0.5]), language="en")
    near = replace(
        chunk(["It refuses the connection.", "response_model_exclude_unset is named."], [0.87, 0.80]),
        language="en",
    )
    params = replace(NEAR_MISS, window=0, lexical_weight=0.5)
    outs = trim_chunks([first, near], QUERY, params, TERMS, search_scores=[0.85, 0.84])
    assert outs[1].text == "It refuses the connection."


def test_a_kept_chunk_keeps_its_line_closest_in_meaning_when_words_lift_another_past_its_bar():
    passage = replace(
        chunk(
            ["Set response_model_exclude_unset here.", "Filler.", "It refuses the connection.", "Tail."],
            [0.80, 0.5, 0.85, 0.4],
        ),
        language="en",
    )
    params = TrimParams(threshold=0.95, window=0, relative_margin=0.03, lexical_weight=0.5, closest_line=True)
    # the identifier's line scores 0.80 plus its words; 0.85, the best cosine, falls under the margin's bar
    assert trim_chunks([passage], QUERY, params, TERMS)[0].kept == (0, 2)
    assert trim_chunks([passage], QUERY, replace(params, closest_line=False), TERMS)[0].kept == (0,)
    # without words, the best score is the best cosine: the rule adds nothing
    assert trim_chunks([passage], QUERY, replace(params, lexical_weight=None))[0].kept == (2,)


def test_the_score_margin_drops_a_later_chunk_far_in_meaning_and_in_words():
    first = replace(chunk(["The answer.", "Filler."], [0.80, 0.5]), language="en")
    close = replace(chunk(["response_model_exclude_unset here.", "Filler."], [0.78, 0.5]), language="en")
    far = replace(chunk(["Unrelated.", "Filler."], [0.78, 0.5]), language="en")
    params = TrimParams(threshold=0.95, window=0, lexical_weight=0.5, drop_margin=0.1, drop_score_margin=0.1)
    outs = trim_chunks([first, close, far], QUERY, params, TERMS)
    assert [o.dropped for o in outs] == [False, False, True]
    # the score margin alone: cosines 0.02 apart, but `far` holds none of the question's words
    assert not trim_chunks([first, close, far], QUERY, replace(params, drop_score_margin=None), TERMS)[
        2
    ].dropped


def test_the_passage_margin_keeps_only_a_later_chunks_best_lines():
    first = chunk(["S0.", "S1.", "S2."], [0.90, 0.80, 0.78])
    later = chunk(["T0.", "T1.", "T2."], [0.85, 0.80, 0.78])
    params = TrimParams(threshold=0.95, window=0, relative_margin=0.2)
    assert [o.text for o in trim_chunks([first, later], QUERY, params)] == [first.text, later.text]
    narrow = replace(params, passage_margin=0.06)
    # the first chunk keeps every line within the query-wide margin; the later one only those near its own best
    assert [o.text for o in trim_chunks([first, later], QUERY, narrow)] == [first.text, "T0. T1."]


def test_the_passage_spread_shrinks_a_later_chunks_margin_to_its_own_spread_never_widens_it():
    first = chunk(["S0.", "S1."], [0.95, 0.5])
    compressed = chunk(["T0.", "T1.", "T2.", "T3.", "T4."], [0.90, 0.86, 0.84, 0.83, 0.82])
    spread = chunk(["U0.", "U1.", "U2.", "U3.", "U4."], [0.90, 0.83, 0.50, 0.40, 0.30])
    params = TrimParams(threshold=0.99, window=0, passage_margin=0.09)
    texts = [o.text for o in trim_chunks([first, compressed, spread], QUERY, params)]
    # a fixed margin keeps every line of a passage whose scores sit within it
    assert texts == ["S0.", compressed.text, "U0. U1."]
    narrow = replace(params, passage_spread=0.5)
    # its own spread is 0.90 - 0.84 = 0.06: half of it keeps its top; the spread passage's margin stays 0.09
    assert [o.text for o in trim_chunks([first, compressed, spread], QUERY, narrow)] == [
        "S0.",
        "T0.",
        "U0. U1.",
    ]
    # the first chunk keeps its context (here, the query-wide margin's): the passage spread acts only after it
    wide = replace(narrow, relative_margin=0.15)
    assert trim_chunks([compressed, first], QUERY, wide)[0].text == compressed.text


def test_a_passages_spread_leaves_out_its_headings_which_have_no_vector():
    c = chunk(["## Port", "T0.", "T1.", "T2."], [0.0, 0.90, 0.88, 0.80], sep="\n")
    assert c.shapes[0] == "heading"
    assert c.spread(c.scores(QUERY)) == pytest.approx(0.02, abs=1e-6)
    first = chunk(["S0."], [0.95])
    params = TrimParams(threshold=0.99, window=0, passage_margin=0.09, passage_spread=0.5)
    assert trim_chunks([first, c], QUERY, params)[1].text == "T0."


def test_the_window_spread_gives_context_only_to_strong_evidence():
    c = chunk(["U0.", "U1.", "U2.", "U3.", "U4.", "U5.", "U6."], [0.5, 0.95, 0.5, 0.5, 0.80, 0.5, 0.5])
    params = TrimParams(threshold=0.99, window=1, relative_margin=0.2)
    assert trim_chunks([c], QUERY, params)[0].text == "U0. U1. U2. U3. U4. U5."
    # the spread is 0.95 - 0.5: within a fifth of it only U1 gets its neighbours; U4 stays, alone
    assert trim_chunks([c], QUERY, replace(params, window_spread=0.2))[0].text == "U0. U1. U2. [...] U4."
    assert trim_chunks([c], QUERY, replace(params, window_spread=0.5))[0].text == "U0. U1. U2. U3. U4. U5."


@pytest.mark.parametrize(
    ("unit", "markup"),
    [
        ("</div>", True),
        ('<div class="termy">', True),
        ('<Tabs>\n  <TabItem value="npm" label="npm">', True),
        ("</TabItem>\n</Tabs>", True),
        ("/// tip | Consejo", True),
        ("///", True),
        ("::: warning", True),
        ('!!! warning "Before you upgrade"', True),
        ("???+ tip", True),
        ("!!! note\n    Back up first.", False),
        ('=== "Python"', True),
        ('===+ "Node"', True),
        ("=== is how strict equality is spelled.", False),
        ("{* ../../docs_src/app/tutorial001.py hl[6] *}", True),
        ("[!INCLUDE[footer-include](includes/footer-banner.md)]", True),
        ("[!include[prereqs](../includes/prereqs.md)]", True),
        ("[!INCLUDE [sql-server](../includes/applies-to.md)]", True),
        ("[!INCLUDE[ssNoVersion](../includes/ssnoversion-md.md)] listens on port 1433.", False),
        ("[!code-csharp[Main](../samples/Modeling/ShadowProperty.cs?name=ShadowProperty)]", True),
        ("[!code-sql[Main](scripts/create.sql)]", True),
        ("[!code-csharp[Main](Sample.cs)] shows the whole context.", False),
        ("{{HTTPSidebar}}", True),
        ("{{Compat}}", True),
        ('{{EmbedInteractiveExample("pages/css/color.html")}}', True),
        ('The {{HTTPHeader("Vary")}} header lists the request headers.', False),
        ("[!NOTE] Save the flow first.", False),
        ("---", True),
        ("{{< note >}}", True),
        ('{{% tab name="Linux" %}}', True),
        ('{% hint style="warning" %}', True),
        ("{% endhint %}", True),
        ("{: .no_toc }", True),
        ("{:toc}", True),
        # a one-line comment is a tooling marker; one over several lines may hold notes for the reader
        ("<!-- overview -->", True),
        ("<!-- prettier-ignore -->\n", True),
        ("<!-- YAML\nadded: v1.2.0\n-->", False),
        ("<!-- note --> Set the port first.", False),
        ('A {{< glossary_tooltip text="Pod" term_id="pod" >}} runs one or more containers.', False),
        ("Use `--port` to choose a port.", False),
        ("<img> shows the page.", False),
        ("```console\n$ vite\n```", False),
    ],
)
def test_bare_markup_is_told_apart_from_words(unit, markup):
    assert is_markup(unit) is markup


def test_markup_is_left_out_at_the_edges_of_a_kept_run_but_not_inside_it():
    units = ["Intro.", "/// tip", "The answer.", "///", "Next.", "Far.", "</div>"]
    c = chunk(units, [0.1, 0.1, 0.9, 0.1, 0.85, 0.1, 0.1], sep="\n")
    params = TrimParams(threshold=0.8, window=1)
    assert trim_chunks([c], QUERY, params)[0].text == "/// tip\nThe answer.\n///\nNext.\nFar."
    marked = replace(params, trim_markup=True)
    assert trim_chunks([c], QUERY, marked)[0].text == "The answer.\n///\nNext.\nFar."
    only_markup = chunk(["///", "Words.", "</div>"], [0.9, 0.1, 0.1], sep="\n")
    assert trim_chunks([only_markup], QUERY, replace(marked, window=0))[0].text == "///"


def test_without_markup_edges():
    markup = [True, False, True, False, True]
    assert without_markup_edges([0, 1, 2, 3, 4], markup) == [1, 2, 3]
    assert without_markup_edges([0], markup) == [0]
    assert without_markup_edges([2, 3], markup) == [3]


def test_a_passage_read_again_under_other_spans_or_language_gets_its_own_units():
    text = "## Port\n\nThe port. </div>"
    whole = TrimInput(text, [(0, 7), (9, 18), (19, 25)], np.zeros((3, 2), np.float32), language="en")
    again = TrimInput(text, [(0, 7), (9, 18), (19, 25)], np.zeros((3, 2), np.float32), language="en")
    fewer = TrimInput(text, [(0, 7), (9, 25)], np.zeros((2, 2), np.float32), language="en")
    spanish = TrimInput(text, [(0, 7), (9, 18), (19, 25)], np.zeros((3, 2), np.float32), language="es")
    assert whole.units == ("## Port", "The port.", "</div>")
    assert whole.shapes == ("heading", "prose", "prose") and whole.markup == (False, False, True)
    assert again.units is whole.units
    assert fewer.units == ("## Port", "The port. </div>") and fewer.markup == (False, False)
    assert spanish.unit_terms is not whole.unit_terms
    assert whole.companions == tuple(unit_companions(whole.units))


def test_the_first_passage_cuts_the_sections_before_its_match_like_a_supporting_passage():
    first = chunk(
        ["## Setup", "P0.", "P1.", "## Fix", "F0.", "F1.", "## Next", "N0."],
        [0.0, 0.91, 0.80, 0.0, 0.95, 0.80, 0.0, 0.78],
        sep="\n",
    )
    params = TrimParams(threshold=0.99, window=0, relative_margin=0.2, passage_margin=0.06)
    assert trim_chunks([first], QUERY, params)[0].text == "P0.\nP1.\n\n[...]\n\nF0.\nF1.\n\n[...]\n\nN0."
    # before the matching section, only lines within 0.06 of the best (0.95); from it on, the query-wide 0.2
    sections = replace(params, earlier_sections=True)
    assert trim_chunks([first], QUERY, sections)[0].text == "P0.\n\n[...]\n\nF0.\nF1.\n\n[...]\n\nN0."
    # without a passage margin there is no supporting passage's bar to borrow: the rule does nothing
    assert trim_chunks([first], QUERY, replace(sections, passage_margin=None))[0].text == (
        trim_chunks([first], QUERY, params)[0].text
    )


def test_a_supporting_passage_is_cut_by_its_own_bar_with_or_without_the_earlier_sections_rule():
    first = chunk(["S0."], [0.95])
    later = chunk(["E0.", "E1.", "E2.", "## Match", "M0.", "M1."], [0.965, 0.93, 0.90, 0.0, 0.98, 0.93])
    params = TrimParams(threshold=0.99, window=0, passage_margin=0.06)
    # the bar is 0.98 - 0.06: a strong line before the best is as much the passage's match as the best itself
    assert trim_chunks([first, later], QUERY, params)[1].text == "E0. E1. [...] M0. M1."
    assert trim_chunks([first, later], QUERY, replace(params, earlier_sections=True))[1].text == (
        "E0. E1. [...] M0. M1."
    )


def test_the_first_passages_match_starts_no_later_than_the_chunk_retrieval_found():
    units = ["## Problem", "P0.", "P1.", "## Fix", "F0.", "F1."]
    scores = [0.0, 0.86, 0.84, 0.0, 0.90, 0.80]
    grown = chunk(units, scores, sep="\n")
    params = TrimParams(
        threshold=0.99, window=0, relative_margin=0.2, passage_margin=0.03, earlier_sections=True
    )
    # found through its neighbour "Fix", the "Problem" section only leads up to it: its bar is 0.90 - 0.03
    assert trim_chunks([grown], QUERY, params)[0].text == "F0.\nF1."
    # found itself (a line's vector or words put it first), "Problem" is the match: the query-wide margin holds
    found_problem = replace(grown, hit_start=grown.spans[1][0])
    assert found_problem.hit_unit == 1
    assert trim_chunks([found_problem], QUERY, params)[0].text == "P0.\nP1.\n\n[...]\n\nF0.\nF1."
    # found through "Fix" said as much: as without a hit
    found_fix = replace(grown, hit_start=grown.spans[3][0])
    assert trim_chunks([found_fix], QUERY, params)[0].text == "F0.\nF1."


def test_the_first_passage_keeps_the_lead_of_each_section_its_match_sits_under():
    units = ["L0.", "## Install", "I0.", "## Flags", "F0.", "### Debug", "D0.", "D1."]
    grown = chunk(units, [0.90, 0.0, 0.90, 0.0, 0.90, 0.0, 0.95, 0.80], sep="\n")
    params = TrimParams(
        threshold=0.99, window=0, relative_margin=0.2, passage_margin=0.03, earlier_sections=True
    )
    assert grown.section_levels == (None, 2, 2, 3)
    # the passage's level unknown: "Flags" opens the section "Debug" sits under, and introduces it; "Install",
    # a sibling of "Flags", only leads up to it and meets the bar 0.95 - 0.03
    assert trim_chunks([grown], QUERY, params)[0].text == "F0.\n\n[...]\n\nD0.\nD1."
    # starting under the page's "# Page", its opening line introduces every section below it
    under_page = replace(grown, heading_level=1)
    assert under_page.section_levels == (1, 2, 2, 3)
    assert trim_chunks([under_page], QUERY, params)[0].text == "L0.\n\n[...]\n\nF0.\n\n[...]\n\nD0.\nD1."
    # starting under a "####", the opening lines sit deeper than the match: they only lead up to it
    assert trim_chunks([replace(grown, heading_level=4)], QUERY, params)[0].text == "F0.\n\n[...]\n\nD0.\nD1."
    # at the page's top (level 0), before any heading, they introduce the page
    assert trim_chunks([replace(grown, heading_level=0)], QUERY, params)[0].text == (
        "L0.\n\n[...]\n\nF0.\n\n[...]\n\nD0.\nD1."
    )


def test_a_passage_whose_best_sits_in_its_first_section_is_trimmed_as_before():
    first = chunk(["S0.", "S1.", "## Later", "L0.", "L1."], [0.95, 0.70, 0.0, 0.80, 0.60], sep="\n")
    params = TrimParams(threshold=0.99, window=0, relative_margin=0.2, passage_margin=0.06)
    assert (
        trim_chunks([first], QUERY, replace(params, earlier_sections=True))[0].text
        == trim_chunks([first], QUERY, params)[0].text
        == "S0.\n\n[...]\n\nL0."
    )


def test_earlier_sections_floor_gives_each_sentence_its_sections_bar():
    sections = np.array([0, 0, 1, 1, 2])
    scores = np.array([0.5, 0.6, 0.0, 0.9, 0.7])
    floors = earlier_sections_floor(sections, scores, later=0.7, earlier=0.85)
    assert floors.tolist() == [0.85, 0.85, 0.7, 0.7, 0.7]
    # no bar (None) means only the threshold: an infinite floor, which the threshold caps
    assert earlier_sections_floor(sections, scores, later=None, earlier=None).tolist() == [np.inf] * 5
    assert earlier_sections_floor(np.array([0, 0]), np.array([0.9, 0.1]), later=0.7, earlier=0.85) == 0.7
    # best in section 2, but the chunk retrieval found begins in section 1 (unit 2): the match starts there
    late_best = np.array([0.5, 0.6, 0.0, 0.7, 0.9])
    assert earlier_sections_floor(sections, late_best, later=0.7, earlier=0.85).tolist() == [0.85] * 4 + [0.7]
    floors = earlier_sections_floor(sections, late_best, later=0.7, earlier=0.85, hit=2)
    assert floors.tolist() == [0.85, 0.85, 0.7, 0.7, 0.7]
    assert earlier_sections_floor(sections, scores, later=0.7, earlier=0.85, hit=0) == 0.7
    # the match (section 2, a "###") sits under section 0's "#" but beside section 1's "###"
    floors = earlier_sections_floor(sections, late_best, later=0.7, earlier=0.85, levels=(1, 3, 3))
    assert floors.tolist() == [0.7, 0.7, 0.85, 0.85, 0.7]
    floors = earlier_sections_floor(sections, late_best, later=0.7, earlier=0.85, levels=(None, 2, 3))
    assert floors.tolist() == [0.85, 0.85, 0.7, 0.7, 0.7]


def spaced(pieces: list[tuple[str, float]], seps: list[str]) -> TrimInput:
    """A passage whose units are joined by the given separators (`seps[i]` comes after unit i)."""
    text = "".join(unit + sep for (unit, _), sep in zip(pieces, [*seps, ""], strict=True))
    spans, cursor = [], 0
    for unit, _ in pieces:
        start = text.index(unit, cursor)
        spans.append((start, start + len(unit)))
        cursor = start + len(unit)
    vectors = np.asarray([vec(score) for _, score in pieces], dtype=np.float32).reshape(-1, 2)
    return TrimInput(text, spans, vectors)


INIT = spaced(
    [
        ("Init asks you some questions.", 0.95),
        ("It writes a manifest.", 0.3),
        ("It keeps what was set.", 0.3),
        ("Pass -y to skip the questions.", 0.3),
        ("It stops there.", 0.3),
        ("Another paragraph.", 0.3),
    ],
    [" ", "\n", " ", " ", "\n\n"],
)


def test_the_best_unit_keeps_the_rest_of_its_paragraph_up_to_the_limit():
    assert trim_one(INIT, threshold=0.9, window=1) == "Init asks you some questions. It writes a manifest."
    assert trim_one(INIT, threshold=0.9, window=1, paragraph_follow=3) == (
        "Init asks you some questions. It writes a manifest.\nIt keeps what was set. Pass -y to skip the questions."
    )
    assert trim_one(INIT, threshold=0.9, window=0, paragraph_follow=9) == INIT.text[: INIT.text.index("\n\n")]


def test_a_paragraph_follow_stops_at_a_blank_line_and_at_anything_but_prose():
    short = spaced([("Best claim.", 0.95), ("Next paragraph.", 0.3), ("More.", 0.3)], ["\n\n", " "])
    assert trim_one(short, threshold=0.9, window=0, paragraph_follow=3) == "Best claim."
    listed = spaced([("Options:", 0.95), ("- `a` one", 0.3), ("Then prose.", 0.3)], ["\n", "\n"])
    assert trim_one(listed, threshold=0.9, window=0, paragraph_follow=3, companions=False) == "Options:"


CACHE = spaced(
    [
        ("Intro.", 0.3),
        ("The cache is on by default.", 0.3),
        ("Set it to `false` to turn it off.", 0.95),
        ("Next paragraph.", 0.3),
    ],
    ["\n\n", " ", "\n\n"],
)


def test_a_run_starting_inside_a_paragraph_starts_at_its_first_sentence():
    assert trim_one(CACHE, threshold=0.9, window=0) == "Set it to `false` to turn it off."
    assert trim_one(CACHE, threshold=0.9, window=0, paragraph_start=2) == (
        "The cache is on by default. Set it to `false` to turn it off."
    )


def test_a_paragraph_start_reaches_back_no_further_than_its_limit():
    deep = spaced([("First.", 0.3), ("Second.", 0.3), ("Third.", 0.3), ("Best one.", 0.95)], [" ", " ", " "])
    assert trim_one(deep, threshold=0.9, window=0, paragraph_start=2) == "Best one."
    assert trim_one(deep, threshold=0.9, window=0, paragraph_start=3) == deep.text


def test_a_paragraph_start_looks_back_over_prose_only():
    listed = spaced([("- an item", 0.3), ("Best line.", 0.95)], ["\n"])
    assert trim_one(listed, threshold=0.9, window=0, paragraph_start=2, companions=False) == "Best line."
    opening = spaced([("Earlier paragraph.", 0.3), ("Best opens its own.", 0.95)], ["\n\n"])
    assert trim_one(opening, threshold=0.9, window=0, paragraph_start=2) == "Best opens its own."


STEPS = spaced(
    [
        ("To check the nomination:", 0.3),
        ("1. Open Polkadot.js Apps.", 0.3),
        ("2. Select the pallet.", 0.95),
        ("3. Select the query.", 0.3),
        ("4. Click the plus button.", 0.3),
        ("Done.", 0.3),
        ("- a bullet", 0.95),
        ("- another bullet", 0.3),
    ],
    ["\n\n", "\n", "\n", "\n", "\n\n", "\n\n", "\n"],
)


def test_a_kept_step_of_a_numbered_list_keeps_the_steps_after_it_up_to_the_limit():
    off = trim_one(STEPS, threshold=0.9, window=0, companions=False)
    assert off == "2. Select the pallet.\n\n[...]\n\n- a bullet"
    one = trim_one(STEPS, threshold=0.9, window=0, companions=False, next_steps=1)
    assert one == "2. Select the pallet.\n3. Select the query.\n\n[...]\n\n- a bullet"
    more = trim_one(STEPS, threshold=0.9, window=0, companions=False, next_steps=5)
    assert (
        more
        == "2. Select the pallet.\n3. Select the query.\n4. Click the plus button.\n\n[...]\n\n- a bullet"
    )


def config_folder(note: list[tuple[str, float]], note_seps: list[str]) -> TrimInput:
    """A procedure whose last step is followed by `note`, then a paragraph."""
    return spaced(
        [
            ("To set your config folder:", 0.3),
            ("1. Open the settings.", 0.3),
            ("2. Type the folder's name.", 0.95),
            ("3. Relaunch the app.", 0.3),
            *note,
            ("Each profile keeps its own plugins.", 0.3),
        ],
        ["\n\n", "\n", "\n", "\n\n", *note_seps],
    )


@pytest.mark.parametrize(
    ("note", "seps", "kept_note"),
    [
        (
            [("> [!info] Settings in the old folder do not carry over.", 0.3)],
            ["\n\n"],
            "> [!info] Settings in the old folder do not carry over.",
        ),
        (
            [("> [!NOTE]", 0.3), ("> La configuración de la carpeta anterior no se traslada.", 0.3)],
            ["\n", "\n\n"],
            "> [!NOTE]\n> La configuración de la carpeta anterior no se traslada.",
        ),
        (
            [(":::caution", 0.3), ("Settings in the old folder do not carry over.", 0.3), (":::", 0.3)],
            ["\n", "\n", "\n\n"],
            ":::caution\nSettings in the old folder do not carry over.",
        ),
        (
            [("> **Note:** settings in the old folder do not carry over.", 0.3)],
            ["\n\n"],
            "> **Note:** settings in the old folder do not carry over.",
        ),
    ],
)
def test_a_kept_last_step_keeps_the_note_right_after_it(note, seps, kept_note):
    c = config_folder(note, seps)
    steps = "2. Type the folder's name.\n3. Relaunch the app."
    assert trim_one(c, threshold=0.9, window=0, companions=False, trim_markup=True) == (
        "2. Type the folder's name."
    ), "without next_steps, neither the next step nor the note"
    out = trim_one(c, threshold=0.9, window=0, companions=False, trim_markup=True, next_steps=1)
    assert out.startswith(f"{steps}\n\n{kept_note}")
    assert "Each profile" not in out


def test_a_quote_or_a_paragraph_after_a_step_is_no_note():
    for after in ("> Ship early, ship often.", "Each profile keeps its own plugins."):
        c = config_folder([(after, 0.3)], ["\n\n"])
        out = trim_one(c, threshold=0.9, window=0, companions=False, trim_markup=True, next_steps=1)
        assert out == "2. Type the folder's name.\n3. Relaunch the app."


PROCEDURE = spaced(
    [
        ("1. An older list's step.", 0.3),
        ("## Import YAML", 0.0),
        ("1. Install the plugin:", 0.3),
        ("```sh\nnpm i yaml-plugin\n```", 0.3),
        ("2. Register it in the config:", 0.3),
        ("```js\nplugins: [yaml()]\n```", 0.3),
        ("3. Import the data file.", 0.95),
        ("4. Read its keys.", 0.3),
    ],
    ["\n\n", "\n\n", "\n", "\n", "\n", "\n", "\n"],
)


def test_a_kept_step_keeps_the_steps_before_it_over_what_they_hold():
    steps = dict(threshold=0.9, window=0, companions=False, trim_markup=True)
    assert trim_one(PROCEDURE, **steps) == "3. Import the data file."
    assert trim_one(PROCEDURE, **steps, earlier_steps=1) == (
        "2. Register it in the config:\n\n[...]\n\n3. Import the data file."
    )
    both = trim_one(PROCEDURE, **steps, earlier_steps=5, next_steps=1)
    assert both == (
        "1. Install the plugin:\n\n[...]\n\n2. Register it in the config:\n\n[...]\n\n"
        "3. Import the data file.\n4. Read its keys."
    )  # the heading above the list stops the walk: the older list's step stays out


def test_earlier_steps_stop_at_their_list_s_first_step():
    lists = spaced(
        [
            ("1. Clone it.", 0.3),
            ("2. Build it.", 0.3),
            ("Then, to test:", 0.3),
            ("1. Run it.", 0.3),
            ("2. Check the log.", 0.95),
        ],
        ["\n", "\n\n", "\n\n", "\n"],
    )
    kept = trim_one(lists, threshold=0.9, window=0, companions=False, earlier_steps=3)
    assert kept == "1. Run it.\n2. Check the log."
    first = spaced([("1. Run it.", 0.95), ("2. Check the log.", 0.3)], ["\n"])
    assert trim_one(first, threshold=0.9, window=0, companions=False, earlier_steps=3) == "1. Run it."


def test_steps_all_numbered_one_are_one_list():
    """Microsoft Learn writes every step `1.`; the rendered list counts on."""
    options = spaced(
        [
            ("To change the option:", 0.3),
            ("1. Go to **Tools** > **Options**.", 0.3),
            ("1. Select **Open definition in peek view**.", 0.3),
            ("![The option](media/peek.png)", 0.3),
            ("1. Select **OK**.", 0.95),
            ("Then, to undo it:", 0.3),
            ("1. Clear the option.", 0.3),
            ("1. Select **OK** again.", 0.3),
        ],
        ["\n\n", "\n", "\n\n", "\n\n", "\n\n", "\n\n", "\n"],
    )
    assert options.first_step == (False, True, False, False, False, False, True, False)
    kept = trim_one(options, threshold=0.9, window=0, companions=False, earlier_steps=2)
    assert kept == (
        "1. Go to **Tools** > **Options**.\n1. Select **Open definition in peek view**.\n\n[...]\n\n1. Select **OK**."
    )


NOTE = spaced(
    [
        ("Deploy with Buddy, a CI service.", 0.95),
        (":::note", 0.3),
        ("Buddy does not host your site.", 0.3),
        ("It hands the build to a host.", 0.3),
        (":::", 0.3),
        ("Unrelated.", 0.3),
    ],
    ["\n\n", "\n", " ", "\n", "\n\n"],
)


def test_a_window_reaching_an_admonition_s_opening_line_reaches_its_first_line():
    kept = trim_one(NOTE, threshold=0.9, window=1, companions=False, trim_markup=True)
    assert kept == "Deploy with Buddy, a CI service.\n\n:::note\nBuddy does not host your site."
    raw = trim_one(NOTE, threshold=0.9, window=1, companions=False, trim_markup=False)
    assert raw == "Deploy with Buddy, a CI service.\n\n:::note"


def test_only_an_opening_line_with_a_name_leads_into_a_box():
    assert NOTE.opens_box == (False, True, False, False, False, False)
    openers = ["/// tip | Consejo", '!!! warning "Careful"', "???+ note", '=== "Python"', "::: tip Title"]
    closers = ["///", ":::", "<Steps>", "{* ../docs_src/app.py *}"]
    for line in openers + closers:
        unit = spaced([("Before.", 0.95), (line, 0.3), ("After.", 0.3)], ["\n", "\n"])
        assert unit.opens_box[1] is (line in openers), line
    closing = spaced(
        [("The last line of a note.", 0.95), (":::", 0.3), ("After the note.", 0.3)], ["\n", "\n\n"]
    )
    kept = trim_one(closing, threshold=0.9, window=1, companions=False, trim_markup=True)
    assert kept == "The last line of a note."


def test_a_step_mdx_wraps_in_a_component_tag_is_still_a_step():
    """`<Steps>` on the line above `1.` makes CommonMark read both as one HTML block: one unit."""
    wrapped = spaced(
        [("<Steps>\n1. Install the plugin:", 0.95), ("2. Add it to the config.", 0.3), ("Unrelated.", 0.3)],
        ["\n", "\n\n"],
    )
    assert wrapped.shapes[0] == "item"
    assert wrapped.numbered[:2] == (True, True)
    kept = trim_one(wrapped, threshold=0.9, window=0, companions=False, next_steps=1)
    assert kept == "<Steps>\n1. Install the plugin:\n2. Add it to the config."
    note = spaced([(":::note\n- not a step but an item", 0.9), ("</Steps>", 0.3)], ["\n"])
    assert note.shapes == ("item", "prose")
    assert note.markup == (False, True)
    ruled = spaced([("|---|---|\n- an item", 0.9), ("After.", 0.3)], ["\n\n"])
    assert ruled.shapes == ("row", "prose")  # a table's rule has no words, but it is no wrapper


def test_a_label_and_colon_in_the_middle_of_a_paragraph_is_a_sentence_not_a_field_line():
    """A field line (`Default: None`) starts its line; "It should look like this: `{...}`." inside a paragraph
    is one of its sentences, and the best sentence's follow-on reaches it."""
    para = spaced(
        [
            ("The last argument, `{}`, holds what the template may use.", 0.95),
            ("We name them after what they are.", 0.3),
            ("It should look like this: `{'posts': posts}`.", 0.3),
            ("Default: None", 0.3),
        ],
        [" ", " ", "\n\n"],
    )
    assert para.shapes == ("prose", "prose", "prose", "field")
    kept = trim_one(para, threshold=0.9, window=0, companions=False, paragraph_follow=3)
    assert kept.startswith(
        "The last argument, `{}`, holds what the template may use. We name them after what they"
    )
    assert "`{'posts': posts}`." in kept
    alone = spaced([("Intro.", 0.3), ("Type: boolean", 0.3)], ["\n"])
    assert alone.shapes == ("prose", "field"), "on a line of its own, it is a field"


REASON = spaced(
    [
        ("Vite needs Node 20.", 0.95),
        ("Node 18 is gone.", 0.3),
        ("We need these ranges for require(esm).", 0.3),
        ("Unrelated.", 0.3),
        ("## Next", 0.0),
        ("Other.", 0.3),
    ],
    [" ", "\n\n", " ", "\n\n", "\n\n"],
)


def test_a_question_asking_why_keeps_the_units_after_the_best_up_to_its_section():
    params = TrimParams(threshold=0.9, window=0, reason_follow=2)
    (plain,) = trim_chunks([REASON], QUERY, params)
    (why,) = trim_chunks([REASON], QUERY, params, asks_reason=True)
    assert plain.kept == (0,)
    assert why.kept == (0, 1, 2)
    (far,) = trim_chunks([REASON], QUERY, replace(params, reason_follow=9), asks_reason=True)
    assert far.kept == (0, 1, 2, 3)


ALERT = spaced(
    [
        ("You can be told when stock runs low, for one vendor's items only.", 0.95),
        ("Here is how.", 0.3),
        ("1. Open My Settings.", 0.3),
        ("2. Choose Notifications.", 0.3),
        ("![The page](settings.png)", 0.3),
        ("3. Switch the alert on.", 0.3),
        ("4. Choose Edit conditions and pick the vendor.", 0.3),
        ("5. Close the page.", 0.3),
        ("## See also", 0.0),
        ("1. Another list.", 0.3),
    ],
    ["\n\n", "\n\n", "\n", "\n", "\n", "\n", "\n", "\n\n", "\n\n"],
)


def test_a_question_asking_how_keeps_the_procedure_after_the_best_line():
    params = TrimParams(threshold=0.9, window=0, how_steps=4)
    (plain,) = trim_chunks([ALERT], QUERY, params)
    (how,) = trim_chunks([ALERT], QUERY, params, asks_how=True)
    assert plain.kept == (0,)
    assert how.kept == (0, 2, 3, 5, 6)  # four steps, over the screenshot a step holds
    (all_steps,) = trim_chunks([ALERT], QUERY, replace(params, how_steps=9), asks_how=True)
    assert all_steps.kept == (0, 2, 3, 5, 6, 7)  # the heading ends the procedure, not another list


def test_a_procedure_too_far_after_the_best_line_is_not_its_answer():
    far = spaced(
        [
            ("Alerts can be limited to one vendor.", 0.95),
            ("One.", 0.3),
            ("Two.", 0.3),
            ("Three.", 0.3),
            ("1. Open My Settings.", 0.3),
        ],
        ["\n\n", " ", " ", "\n\n"],
    )
    (how,) = trim_chunks([far], QUERY, TrimParams(threshold=0.9, window=0, how_steps=4), asks_how=True)
    assert how.kept == (0,)
    two_lists = spaced(
        [
            ("Alerts can be limited to one vendor.", 0.95),
            ("1. Open My Settings.", 0.3),
            ("2. Pick the vendor.", 0.3),
            ("To undo it:", 0.3),
            ("1. Clear the vendor.", 0.3),
        ],
        ["\n", "\n", "\n\n", "\n"],
    )
    params = TrimParams(threshold=0.9, window=0, how_steps=9)
    (first_list,) = trim_chunks([two_lists], QUERY, params, asks_how=True)
    assert first_list.kept == (0, 1, 2)  # another list's first step ends the procedure


def test_the_follow_rules_reject_negative_counts():
    with pytest.raises(ValueError, match="paragraph_follow"):
        TrimParams(threshold=0.5, paragraph_follow=-1)
    with pytest.raises(ValueError, match="reason_follow"):
        TrimParams(threshold=0.5, reason_follow=-1)
    with pytest.raises(ValueError, match="paragraph_start"):
        TrimParams(threshold=0.5, paragraph_start=-1)
    with pytest.raises(ValueError, match="next_steps"):
        TrimParams(threshold=0.5, next_steps=-1)
    with pytest.raises(ValueError, match="earlier_steps"):
        TrimParams(threshold=0.5, earlier_steps=-1)
    with pytest.raises(ValueError, match="how_steps"):
        TrimParams(threshold=0.5, how_steps=-1)


def test_a_negative_heading_weight_is_refused():
    """Negative, a heading holding the question's words would push its section's lines under those of others."""
    with pytest.raises(ValueError, match="heading_weight"):
        TrimParams(threshold=0.5, heading_weight=-0.5)
    assert TrimParams(threshold=0.5, heading_weight=0.0).heading_weight == 0.0


def test_a_short_lone_unit_between_two_kept_ones_is_kept_a_long_one_or_a_heading_is_not():
    c = chunk(
        ["Match one.", "Only one level of access.", "Match two.", "Far.", "Far.", "Match three."],
        [0.95, 0.3, 0.95, 0.3, 0.3, 0.95],
    )
    assert trim_one(c, threshold=0.9, window=0) == "Match one. [...] Match two. [...] Match three."
    assert trim_one(c, threshold=0.9, window=0, gap_words=5) == (
        "Match one. Only one level of access. Match two. [...] Match three."
    )
    assert (
        trim_one(c, threshold=0.9, window=0, gap_words=4) == "Match one. [...] Match two. [...] Match three."
    )
    headed = chunk(["Match one.", "## Next", "Match two."], [0.95, 0.0, 0.95], sep="\n\n")
    assert trim_one(headed, threshold=0.9, window=0, gap_words=20, trim_markup=True).count("## Next") == 0


def test_with_short_gaps():
    units, shapes = ["a", "b c", "d", "e f g", "h"], ["prose"] * 5
    assert with_short_gaps([0, 2, 4], units, shapes, words=2) == [0, 1, 2, 4]
    assert with_short_gaps([0, 2, 4], units, shapes, words=3) == [0, 1, 2, 3, 4]
    assert with_short_gaps([0, 4], units, shapes, words=9) == [0, 4]


def test_a_short_last_line_of_a_section_after_a_kept_one_is_kept_a_long_one_or_one_mid_section_is_not():
    c = chunk(
        [
            "## User groups",
            "A user group may take the name when it meets these terms.",
            "- It makes no profit.",
            "You may not hold a conference under the name.",
            "## Domains",
            "Register no domain holding the name.",
        ],
        [0.0, 0.95, 0.93, 0.3, 0.0, 0.3],
        sep="\n\n",
    )
    plain = "A user group may take the name when it meets these terms.\n\n- It makes no profit."
    assert trim_one(c, threshold=0.9, window=0, trim_markup=True) == plain
    assert trim_one(c, threshold=0.9, window=0, gap_words=10, trim_markup=True) == (
        plain + "\n\nYou may not hold a conference under the name."
    )
    assert trim_one(c, threshold=0.9, window=0, gap_words=8, trim_markup=True) == plain
    units = ["a", "b", "c", "## d", "e"]
    shapes = ["prose", "prose", "prose", "heading", "prose"]
    assert with_short_gaps([1], units, shapes, words=9) == [1, 2]
    assert with_short_gaps([0], units, shapes, words=9) == [0], "two lines short of the heading: not its last"
    assert with_short_gaps([4], units, shapes, words=9) == [4], "the passage's end is no heading"


def _setext(unit: str) -> str:
    """`## Install` as a setext heading: `Install` over a line of `-` (`=` for level 1)."""
    marks, _, title = unit.partition(" ")
    return f"{title}\n{('=' if marks == '#' else '-') * len(title)}"


def test_setext_headings_open_sections_for_the_section_rules_as_atx_ones_do():
    atx = ["L0.", "# Install", "I0.", "## Flags", "F0.", "### Debug", "D0.", "D1."]
    setext = [_setext(u) if u.startswith(("# ", "## ")) else u for u in atx]
    scores = [0.90, 0.0, 0.90, 0.0, 0.90, 0.0, 0.95, 0.80]
    params = TrimParams(
        threshold=0.99, window=0, relative_margin=0.2, passage_margin=0.03, earlier_sections=True
    )
    a, s = chunk(atx, scores, sep="\n"), chunk(setext, scores, sep="\n")
    assert s.shapes == a.shapes and s.section_levels == a.section_levels == (None, 1, 2, 3)
    # "Install", a level-1 heading, opens the section "Flags" and "Debug" sit in: its lead introduces them
    assert (
        trim_chunks([s], QUERY, params)[0].text
        == trim_chunks([a], QUERY, params)[0].text
        == ("I0.\n\n[...]\n\nF0.\n\n[...]\n\nD0.\nD1.")
    )


def test_a_setext_heading_lends_its_words_to_the_units_under_it_and_is_left_out_of_the_spread():
    c = replace(
        chunk(
            [_setext("## response_model_exclude_unset"), "Leaves out the defaults.", "Other\n-----", "Else."],
            [0.8, 0.8, 0.0, 0.8],
            sep="\n\n",
        ),
        language="en",
    )
    evidence = lexical_evidence(c, TERMS, heading_weight=0.5)
    assert evidence[1] == pytest.approx(0.5) and evidence[3] == 0.0
    assert c.spread(c.scores(QUERY)) == pytest.approx(0.0, abs=1e-6)


def test_a_setext_option_heading_holds_its_fields_together():
    assert unit_companions(["port\n----", "The port to listen on.", "Default: 8000"]) == [
        (2,),
        (0, 2),
        (0, 1),
    ]


FAQ = [
    "Billing is monthly.",
    "## Why don't I see any bills?",
    "<div>",
    "Bills appear after your first payment.",
    "Other line.",
    "## Refunds",
    "## Refund times",
    "Refunds take a week.",
]
FAQ_SCORES = [0.88, 0.0, 0.5, 0.80, 0.6, 0.0, 0.0, 0.7]
FAQ_PARAMS = TrimParams(threshold=0.95, window=0, relative_margin=0.03, heading_answer=True)


def faq(headings: tuple[tuple[int, float], ...]) -> TrimInput:
    return replace(chunk(FAQ, FAQ_SCORES, sep="\n\n"), heading_cosines=headings)


def test_a_section_headed_as_close_as_the_best_line_keeps_its_first_line():
    """A help page titles a section with the question and answers it in its own words, under the bar."""
    assert trim_chunks([faq(())], QUERY, FAQ_PARAMS)[0].kept == (0,)
    # the heading's cosine reaches the passage's best line (0.88): its first line past the markup is kept, with
    # the heading
    assert trim_chunks([faq(((1, 0.90),))], QUERY, FAQ_PARAMS)[0].kept == (0, 1, 2, 3)
    assert trim_chunks([faq(((1, 0.88),))], QUERY, FAQ_PARAMS)[0].kept == (0, 1, 2, 3)
    assert trim_chunks([faq(((1, 0.87),))], QUERY, FAQ_PARAMS)[0].kept == (0,)
    shown = trim_chunks([faq(((1, 0.90),))], QUERY, replace(FAQ_PARAMS, trim_markup=True))[0].text
    assert "## Why don't I see any bills?\n\n<div>\n\nBills appear after your first payment." in shown
    assert trim_chunks([faq(((1, 0.90),))], QUERY, replace(FAQ_PARAMS, heading_answer=False))[0].kept == (0,)


def test_a_close_heading_with_a_subsection_right_under_it_keeps_no_line_of_another_section():
    assert trim_chunks([faq(((5, 0.95),))], QUERY, FAQ_PARAMS)[0].kept == (0,)
    assert trim_chunks([faq(((6, 0.95),))], QUERY, FAQ_PARAMS)[0].kept == (0, 6, 7)


def test_the_heading_a_chunk_starts_under_gives_its_first_line():
    passage = replace(
        chunk(["Open Settings.", "Filler.", "Best line."], [0.7, 0.5, 0.9]), heading_cosines=((-1, 0.93),)
    )
    assert trim_chunks([passage], QUERY, FAQ_PARAMS)[0].kept == (0, 2)
    assert trim_chunks([passage], QUERY, replace(FAQ_PARAMS, heading_answer=False))[0].kept == (2,)


def test_a_dropped_chunk_keeps_nothing_for_its_heading():
    first = chunk(["The answer."], [0.95])
    far = replace(chunk(["Far away.", "Also far."], [0.6, 0.5]), heading_cosines=((-1, 0.99),))
    params = replace(FAQ_PARAMS, drop_margin=0.05)
    assert trim_chunks([first, far], QUERY, params)[1].dropped
