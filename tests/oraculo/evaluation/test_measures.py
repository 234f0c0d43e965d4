"""The pure measures on hand-made cases: overlap, answer in context, citations, the Pareto front."""

from __future__ import annotations

import pytest

from oraculo.evaluation.measures import (
    answer_in_context,
    cites_source,
    overlap_share,
    pareto_front,
)


def test_overlap_is_the_share_of_baseline_chunks_still_present():
    assert overlap_share([1, 2, 3], [1, 2]) == pytest.approx(2 / 3)
    assert overlap_share([1, 2, 3], [3, 2, 1]) == 1.0
    assert overlap_share([1, 2, 3, 4], [9]) == 0.0
    assert overlap_share([1, 2], [1, 2, 7]) == 1.0
    assert overlap_share([], []) is None


def test_answer_in_context_normalises_case_accents_spaces_and_end_punctuation():
    context = ["El enlace  caduca a los\n30 MINUTOS. Pide uno nuevo.", "Facturación: 11 € por puesto al mes."]
    assert answer_in_context(expected="30 minutos", texts=context)
    assert answer_in_context(expected="  «30 minutos.» ", texts=context)
    assert answer_in_context(expected="FACTURACION", texts=context)
    assert answer_in_context(expected="11 € por puesto", texts=context)
    assert not answer_in_context(expected="3 minutos", texts=context), "whole words only"
    assert not answer_in_context(expected="30 minutos pide uno nuevo hoy", texts=context)
    assert not answer_in_context(expected="...", texts=context)
    assert not answer_in_context(expected="30 minutos", texts=["El enlace caduca a los 30 [...] minutos."])


@pytest.mark.parametrize(
    ("expected", "text", "found"),
    [
        ("--cache", "Clear it with the cache command.", False),
        ("--cache", "Run `vite --cache` to keep it.", True),
        ("-1", "The default is 1.", False),
        ("C#", "See section C for the details.", False),
        (".env", "The env file holds it.", False),
        (".env", "Copy `.env` first.", True),
        ("__init__.py", "Add an `__init__.py` file.", True),
        ("_id", "The id field.", False),
        ("`Queue again`", "Click Queue again in the list.", True),
        ("**Volver a poner en cola**", "Pulsa Volver a poner en cola.", True),
        ("12%", "Sube un 12 % al año.", True),
    ],
)
def test_what_belongs_to_an_identifier_stays_in_the_expected_answer(expected, text, found):
    """Quotes, emphasis and end punctuation wrap an answer; a flag's dashes or a file's dot are part of it."""
    assert answer_in_context(expected=expected, texts=[text]) is found


def test_cites_source_looks_for_bracketed_numbers():
    assert cites_source("Open Settings [1].")
    assert cites_source("Yes [2][3]")
    assert not cites_source("See the docs [a] or (1).")
    assert not cites_source(None)


def test_pareto_front_keeps_the_points_nobody_beats_on_both_axes():
    points = [(10, 100), (20, 99), (20, 95), (30, 90), (25, 90), (5, 100), (30, 90)]
    assert pareto_front(points) == {0, 1, 3, 6}
