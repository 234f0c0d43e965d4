"""Accent folding, identifier terms, stems and language detection: the text side of full-text search."""

from __future__ import annotations

import unicodedata

import pytest
import Stemmer
from hypothesis import given, settings
from hypothesis import strategies as st

from biblioteca.text.identifiers import _TOKEN
from biblioteca.text.lexical import (
    _WORD,
    _WORDISH,
    _spelled,
    detect_language,
    fold,
    lexical_text,
    lexical_words,
    search_config,
    terms,
    word_tokens,
)


def test_fold_strips_diacritics_in_both_languages():
    assert fold("configuración según Año PÁGINA naïve") == "configuracion segun Ano PAGINA naive"


def _fold_by_definition(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text)
    return unicodedata.normalize("NFC", "".join(c for c in decomposed if not unicodedata.combining(c)))


@settings(max_examples=2000, deadline=None)
@given(st.text())
def test_fold_is_the_decomposition_less_its_marks_recomposed_for_any_text(text):
    assert fold(text) == _fold_by_definition(text)


@pytest.mark.parametrize(
    "text",
    ["e\u0301\u0327 ç̈ ñ", "ﬁ ½ Ⅻ ｆｕｌｌ", "한국어 \u1100\u1161", "Ά ǅ ẛ̣", "\u0b92\u0bd7 \u0915\u093c"],
)
def test_fold_is_the_decomposition_less_its_marks_recomposed(text):
    assert fold(text) == _fold_by_definition(text)


def test_fold_leaves_plain_text_alone():
    text = "plain ASCII text, with 3.14 and `code`"
    assert fold(text) == text


@pytest.mark.parametrize(
    ("identifier", "expected"),
    [
        ("app.include_router", ["app", "include", "router", "appincluderouter", "includerouter"]),
        (
            "response_model_exclude_unset",
            ["response", "model", "exclude", "unset", "responsemodelexcludeunset"],
        ),
        ("DATABASE_URL", ["database", "url", "databaseurl"]),
        ("--port", ["port", "flagport"]),  # a flag named by a common word is a word of its own too
        ("--assetsInlineLimit", ["assets", "inline", "limit", "assetsinlinelimit", "flagassetsinlinelimit"]),
        ("`--base=/app/`", ["base", "flagbase", "app"]),
        ("x--y", ["x", "y", "xy"]),  # dashes inside a word make no flag
        ("---port", ["port"]),
        ("a -- b", ["a", "b"]),
        ("HTTPException", ["http", "exception", "httpexception"]),
    ],
)
def test_identifiers_are_spelled_out_by_their_parts_and_whole(identifier, expected):
    assert lexical_text(identifier).lower().split() == expected


def test_plain_words_keep_their_order_and_identifiers_sit_where_they_were():
    assert lexical_text("Set", "the response_model now") == "Set the response model responsemodel now"


def test_terms_are_stemmed_in_the_given_language_and_folded():
    assert terms("Configuring routers", language="en") == ["configur", "router"]
    assert terms("configuración de los puertos", language="es")[0] == terms("configuracion", language="es")[0]


def test_terms_without_a_known_language_are_only_lower_cased():
    assert terms("Routers ROUTING", language="") == ["routers", "routing"]


def test_search_config_maps_known_languages_and_falls_back_to_simple():
    assert search_config("en") == "english"
    assert search_config("es") == "spanish"
    assert search_config("") == "simple"
    assert search_config("xx") == "simple"


@pytest.mark.parametrize(
    ("text", "language"),
    [
        (
            "# Getting started\n\nInstall the package, then run the server and open the page in your browser.",
            "en",
        ),
        (
            "# Primeros pasos\n\nInstala el paquete, luego ejecuta el servidor y abre la página en tu navegador.",
            "es",
        ),
    ],
)
def test_detect_language_of_prose(text, language):
    assert detect_language(text) == language


def test_detect_language_ignores_code_blocks():
    text = (
        "Para empezar, crea un archivo con este contenido y guárdalo en la carpeta del proyecto.\n\n"
        "```python\nfrom the_library import something_in_english\nprint('hello world, this is English')\n```\n"
    )
    assert detect_language(text) == "es"


def test_detect_language_gives_up_on_too_little_prose():
    assert detect_language("```sh\nmake run\n```") == ""


SPELLINGS = [
    "plain",
    "The",
    "FastAPI",
    "HTTPServer",
    "snake_case_name",
    "app.include_router",
    "--port",
    "x2Y",
    "abc123",
    "ÑANDÚ",
    "configuración",
    "naïve_café",
    "C3PO",
    "²",
    "ﬁle",
]


@pytest.mark.parametrize("token", SPELLINGS)
def test_a_plain_words_shortcut_spells_every_token_as_the_identifier_rules_do(token):
    """lexical_words skips the identifier rules for plain words: it must give what they give."""
    folded = fold(token)
    expected = [
        (word, len(spelled) == 1 and word == match.group())
        for match in _WORDISH.finditer(folded)
        for spelled in [_spelled(match.group())]
        for word in spelled
    ]
    assert lexical_words(token) == expected


def test_folding_ascii_text_gives_it_back_and_other_text_loses_its_accents_only():
    ascii_text = "Set `--port` to 8000; see app.include_router (default: None)."
    assert fold(ascii_text) is ascii_text
    assert fold("Configuración del puerto: ñandú") == "Configuracion del puerto: nandu"
    assert fold("ﬁle") == "file"
    assert fold("cafe\u0301 de\u0301ja\u0300 vu, 日本語 ✓ Ωmega") == "cafe deja vu, 日本語 ✓ Ωmega"


@pytest.mark.parametrize("language", ["en", "es", ""])
def test_terms_are_the_stemmed_words_of_the_lexical_text(language):
    """terms() walks the text once instead of joining its lexical text and splitting it again: same words."""
    texts = [
        "Set `response_model_exclude_unset=True` in @app.get('/items/{item_id}').",
        "Use --port 8000 and DATABASE_URL; HTTPServer, FastAPI's APIRouter, x2Y_z.",
        "Configuración según la PÁGINA: ñandú, naïve café, ﬁle, ²³, __init__.py",
        "## Default: `None` | `str` | int",
    ]
    for text in texts:
        words = [w.lower() for w in _WORD.findall(lexical_text(text))]
        stemmer = Stemmer.Stemmer(search_config(language)) if language else None
        assert terms(text, language=language) == (stemmer.stemWords(words) if stemmer else words)


# Words, the characters that join or stop them, and the punctuation that clings to their edges, in both languages.
_TOKENISH = st.text(
    alphabet=st.sampled_from(list("abZ9_é¿?¡!.,:;/-()[]`*\"'«»… \n\t") + ["\u00a0", "\u2014", "²", "ß"]),
    max_size=40,
)


@pytest.mark.parametrize("pattern", [_WORDISH, _TOKEN], ids=["terms", "identifiers"])
@pytest.mark.parametrize(
    "text",
    [
        "Use `app.include_router()` (see **Default:** `None`).",
        "(--port) x--y a)--b ¿Cómo? e.g. https://example.com/a/b.",
        "-x --- -- a-)b .a.b. don't «comillas» …fin— foo_bar _x_",
        "x:y::z a:::b a::::b a/ /b",
    ],
)
def test_word_tokens_are_the_patterns_own_tokens(pattern, text):
    assert word_tokens(text, pattern) == pattern.findall(text)


@settings(max_examples=1000, deadline=None)
@given(_TOKENISH)
def test_word_tokens_are_the_patterns_own_tokens_for_any_text(text):
    for pattern in (_WORDISH, _TOKEN):
        assert word_tokens(text, pattern) == pattern.findall(text)
