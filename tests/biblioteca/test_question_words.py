"""Conversational words left out of a question's full-text terms, in English and Spanish."""

from __future__ import annotations

import pytest

from biblioteca.text.lexical import lexical_text, lexical_words
from biblioteca.text.question_words import QUESTION_FILLER, asks_how, asks_reason, question_text


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("I still want the server to reload on save", "I the server to reload on save"),
        ("Shouldn't the build keep my comments?", "t the build my comments"),
        ("Quiero que el servidor recargue al guardar", "que el servidor recargue al guardar"),
        ("¿Todavía no hay ninguna forma de cambiar el puerto?", "no forma de cambiar el puerto"),
    ],
)
def test_conversational_words_are_left_out_in_both_languages(question, expected):
    assert question_text(question) == expected


def test_spanish_stop_words_spelled_with_accents_are_left_out_once_folded():
    """PostgreSQL's list spells them with accents; folded, they would pass it as rare words."""
    assert question_text("¿Qué más tendría que hacer si ya había instalado el paquete? Será el puerto") == (
        "Que que ya instalado el paquete el puerto"
    )


def test_case_and_accents_do_not_hide_a_filler_word():
    assert question_text("QUIERO todavía ningún puerto") == "puerto"
    assert question_text("Todavía falla. Ningún puerto responde") == "falla puerto responde"


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("¿Qué es Hey API y para qué sirve?", "Que es Hey API y para que sirve"),
        ("Does Keep sync my notes?", "Keep sync my notes"),
        ("Hey, how do I keep my notes?", "how do I my notes"),
        ("hey what does Keep do? Keep calm.", "what Keep do Keep calm"),
    ],
)
def test_a_filler_word_capitalised_inside_a_sentence_is_a_name_and_stays(question, expected):
    assert question_text(question) == expected


def test_identifiers_keep_every_part_even_a_filler_one():
    assert question_text("What does keep_alive do?") == lexical_text("What does keep_alive do?").replace(
        "does ", ""
    )
    assert "keep" in question_text("set keep_alive").split()
    assert "keepalive" in question_text("set keepAlive").split()


def test_words_documentation_uses_are_not_filler():
    """Nor are words that are values or code in documentation: `None`, `try`, pretty-printing, `pasar` a value."""
    words = (
        "port",
        "build",
        "server",
        "config",
        "none",
        "try",
        "pretty",
        "puerto",
        "servidor",
        "archivo",
        "pasar",
    )
    for word in words:
        assert word not in QUESTION_FILLER
        assert question_text(word) == word


def test_negations_and_frequency_are_meaning_not_filler():
    """`the shutdown code never runs` asks something else than `the shutdown code runs`."""
    assert question_text("the shutdown code never runs") == "the shutdown code never runs"
    assert question_text("el código de apagado nunca se ejecuta, siempre falla") == (
        "el codigo de apagado nunca se ejecuta siempre falla"
    )


def test_the_list_is_folded_and_lower_cased_like_the_indexed_text():
    assert all(word == lexical_text(word).lower() for word in QUESTION_FILLER)


def test_lexical_words_tell_plain_words_from_identifier_parts():
    assert lexical_words("run app.include_router now") == [
        ("run", True),
        ("app", False),
        ("include", False),
        ("router", False),
        ("appincluderouter", False),
        ("includerouter", False),
        ("now", True),
    ]


@pytest.mark.parametrize(
    "question",
    [
        "Why does the build hang?",
        "The reload never fires. Why?",
        "How come my port is ignored?",
        "¿Por qué Vite exige Node 20?",
        "¿Para qué sirve check_same_thread?",
        "¿por que no arranca el servidor?",
        "Por que falla?",
        "What's the reason the build output is minified?",
        "What is the point of the lockfile?",
        "Is this flag deprecated, and what for?",
        "¿A qué se debe que el servidor tarde tanto?",
        "¿Cuál es el motivo de fijar la versión exacta?",
    ],
)
def test_a_question_asking_why_is_told(question):
    assert asks_reason(question)


@pytest.mark.parametrize(
    "question",
    [
        "How do I set the port?",
        "¿Cómo lo configuro para que arranque solo?",
        "¿Falla porque falta la variable?",
        "¿Es necesario reiniciar por que cambié el .env?",
        "Whyever not?",
    ],
)
def test_a_how_to_using_because_or_so_that_does_not_ask_why(question):
    assert not asks_reason(question)


@pytest.mark.parametrize(
    "question",
    [
        "How do I turn on the low-stock alert for one vendor?",
        "how can i rotate the keys",
        "What steps publish a web service?",
        "¿Cómo hago que el aviso salte solo para un proveedor?",
        "como activo el recorte",
        "¿Qué pasos hay que seguir para archivar un pedido?",
        "¿Cuáles son los pasos para publicar un servicio web?",
    ],
)
def test_a_question_asking_how_is_told(question):
    assert asks_how(question)


@pytest.mark.parametrize(
    "question",
    [
        "How many workers does the queue start?",
        "How long is a reset link valid?",
        "How come my port is ignored?",
        "¿Puedo ejecutarlo como root?",
        "Which placeholder inserts the total amount?",
        "¿Por qué falla el arranque?",
    ],
)
def test_a_question_asking_how_much_or_why_does_not_ask_how(question):
    assert not asks_how(question)
