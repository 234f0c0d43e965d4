"""Tests for the markdown-aware sentence splitter (pure Python: no Django, no database)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from biblioteca.text import sentences
from biblioteca.text.sentences import _split_spans_full, split_sentence_spans, split_sentences

DATA = Path(__file__).parent / "data"


def _rules(lang: str) -> list[dict]:
    with (DATA / f"golden_rules_{lang}.jsonl").open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


GOLDEN_EN = _rules("en")
GOLDEN_ES = _rules("es")


def _check_invariants(text: str) -> list[tuple[int, int]]:
    spans = split_sentence_spans(text)
    prev_end = 0
    for start, end in spans:
        assert prev_end <= start < end <= len(text)
        piece = text[start:end]
        assert piece == piece.strip()
        prev_end = end
    assert "".join("".join(text[s:e].split()) for s, e in spans) == "".join(text.split())
    assert split_sentences(text) == [text[s:e] for s, e in spans]
    return spans


# -- the design document's examples ------------------------------------------------------------


def test_design_example_question() -> None:
    assert split_sentences("Hola. ¿Cómo estás?") == ["Hola.", "¿Cómo estás?"]


def test_design_example_version() -> None:
    assert split_sentences("La v.1.2.3 fue publicada.") == ["La v.1.2.3 fue publicada."]


def test_design_example_code_then_prose() -> None:
    text = '\nfunction foo() {\n  console.log("hola");\n}\n\nExplicación. Otro párrafo.\n'
    assert split_sentences(text) == [
        'function foo() {\n  console.log("hola");\n}',
        "Explicación.",
        "Otro párrafo.",
    ]


def test_design_example_code_in_fence() -> None:
    fence = '```js\nfunction foo() {\n  console.log("hola");\n}\n```'
    text = f"\n{fence}\n\nExplicación. Otro párrafo.\n"
    assert split_sentences(text) == [fence, "Explicación.", "Otro párrafo."]


def test_design_example_list() -> None:
    assert split_sentences("- Item 1\n- Item 2") == ["- Item 1", "- Item 2"]


# -- golden rules (pySBD, MIT; copied into tests/biblioteca/data) ------------------------------


@pytest.mark.parametrize("rule", GOLDEN_EN, ids=lambda r: f"en{r['rule_no']:02d}")
def test_golden_rule_en(rule: dict) -> None:
    assert split_sentences(rule["text"]) == rule["sentences"], rule["name"]


@pytest.mark.parametrize("rule", GOLDEN_ES, ids=lambda r: r["name"].split("[")[-1].rstrip("]"))
def test_golden_rule_es(rule: dict) -> None:
    assert split_sentences(rule["text"]) == rule["sentences"], rule["name"]


def test_golden_rule_pass_rates(capsys: pytest.CaptureFixture[str]) -> None:
    assert len(GOLDEN_EN) == 48 and len(GOLDEN_ES) == 5
    en = sum(split_sentences(r["text"]) == r["sentences"] for r in GOLDEN_EN)
    es = sum(split_sentences(r["text"]) == r["sentences"] for r in GOLDEN_ES)
    with capsys.disabled():
        print(f"\ngolden rules: EN {en}/{len(GOLDEN_EN)}, ES {es}/{len(GOLDEN_ES)}")
    assert en >= 47
    assert es == 5


# -- invariants --------------------------------------------------------------------------------

_FRAGMENT = st.one_of(
    st.sampled_from(list("#`~|-*+>_=[]()<>!?.:;,\"'¿¡«»“”…•0123456789 \t\n\r")),
    st.sampled_from(list("aAbBeEiIxXñÑáÁéÉüÜ")),
    st.sampled_from(["```", "~~~", "\n\n", "    ", "- ", "1. ", "> ", "| a |", "Dr.", "U.S."]),
    st.characters(blacklist_categories=("Cs",)),
)
_MARKDOWNISH = st.lists(_FRAGMENT, max_size=200).map("".join)


@settings(max_examples=300, deadline=None)
@given(_MARKDOWNISH)
def test_nothing_is_lost(text: str) -> None:
    spans = _check_invariants(text)
    assert all(e > s for s, e in spans)


@pytest.mark.parametrize(
    "text",
    [
        "",
        " \n\t\r\n ",
        "\x00.\x00 A",
        "a\r\nb. C\rd\n",
        "  \n  ",
        "x\n   ",
        "\u2028Hola. Adiós.\x85",
        "-\n\n>\n\n#\n\n```",
        "| a |\n|---|\n",
    ],
)
def test_edge_inputs(text: str) -> None:
    _check_invariants(text)


def test_spans_are_verbatim_ordered_and_stripped() -> None:
    text = "  # Título\n\nPrimera frase.  Segunda frase!\n\n```py\nx = 1\n```\n\n- uno\n- dos  \n"
    spans = _check_invariants(text)
    assert [text[s:e] for s, e in spans] == [
        "# Título",
        "Primera frase.",
        "Segunda frase!",
        "```py\nx = 1\n```",
        "- uno",
        "- dos",
    ]
    assert spans == sorted(spans)


def test_crlf_offsets_map_back() -> None:
    text = "Uno. Dos.\r\n\r\n```\r\ncode\r\n```\r\nTres."
    assert split_sentences(text) == ["Uno.", "Dos.", "```\r\ncode\r\n```", "Tres."]


# -- markdown structure ------------------------------------------------------------------------


def test_nested_lists() -> None:
    text = "- Item 1\n  - Sub a. Con dos frases\n    - Sub sub\n- Item 2\n\n1. Uno\n2) Dos\n"
    assert split_sentences(text) == [
        "- Item 1",
        "- Sub a. Con dos frases",
        "- Sub sub",
        "- Item 2",
        "1. Uno",
        "2) Dos",
    ]


def test_list_markers() -> None:
    text = "* estrella\n+ más\n\n3) tres\n4) cuatro"
    assert split_sentences(text) == ["* estrella", "+ más", "3) tres", "4) cuatro"]


def test_list_item_second_paragraph_is_prose() -> None:
    text = "- Primero.\n\n  Segundo párrafo. Con dos frases.\n"
    assert split_sentences(text) == ["- Primero.", "Segundo párrafo.", "Con dos frases."]


def test_indented_code() -> None:
    text = "Antes.\n\n    x = 1. Y = 2\n    print(x)\n\nDespués."
    assert split_sentences(text) == ["Antes.", "x = 1. Y = 2\n    print(x)", "Después."]


def test_four_backtick_fence_with_inner_fences() -> None:
    fence = "````md\n```js\nconst a = 1. B\n```\n\nTexto. Más\n````"
    assert split_sentences(f"Intro. Dos.\n\n{fence}\nFin.") == ["Intro.", "Dos.", fence, "Fin."]


def test_tilde_fence() -> None:
    fence = "~~~\nUno. Dos.\n```\n~~~"
    assert split_sentences(f"{fence}\n\nTres. Cuatro.") == [fence, "Tres.", "Cuatro."]


def test_unclosed_fence_takes_the_rest() -> None:
    text = "Antes. Sí.\n\n```\ncódigo\n\nTexto. Más texto.\n"
    assert split_sentences(text) == ["Antes.", "Sí.", "```\ncódigo\n\nTexto. Más texto."]


def test_html_block() -> None:
    html = '<div class="tip">\n<p>Hola. Adiós.</p>\n</div>'
    assert split_sentences(f"{html}\n\nTexto. Otro.") == [html, "Texto.", "Otro."]


def test_table_rows_and_delimiter_row_are_units() -> None:
    text = "| Opción | Valor |\n| --- | :---: |\n| a. B | 1.5 |\n| c | 2 |\n\nDespués."
    assert split_sentences(text) == [
        "| Opción | Valor |",
        "| --- | :---: |",
        "| a. B | 1.5 |",
        "| c | 2 |",
        "Después.",
    ]


def test_blockquote_lines() -> None:
    text = "> Primera línea. Dos\n> segunda línea\n>\n> > anidada\n\nFuera. Sí."
    assert split_sentences(text) == [
        "> Primera línea. Dos",
        "> segunda línea",
        ">",
        "> > anidada",
        "Fuera.",
        "Sí.",
    ]


def test_headings() -> None:
    text = "# Título. Uno\n\n## Sub ##\nTexto. Más.\n\nSetext. Dos\n======\n\nOtro\n---\n"
    assert split_sentences(text) == [
        "# Título. Uno",
        "## Sub ##",
        "Texto.",
        "Más.",
        "Setext. Dos\n======",
        "Otro\n---",
    ]


def test_hr_and_reference_definition_are_kept() -> None:
    text = "Uno.\n\n***\n\n[ref]: https://example.com\n\nDos."
    assert split_sentences(text) == ["Uno.", "***", "[ref]: https://example.com", "Dos."]


def test_paragraph_soft_wrap_is_not_a_boundary() -> None:
    assert split_sentences("Una frase que\nsigue aquí. Otra\nfrase.") == [
        "Una frase que\nsigue aquí.",
        "Otra\nfrase.",
    ]


# -- protections -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "Vino el Sr. García con la Sra. Pérez y la Srta. Ruiz.",
        "La Dra. Gómez y el Lic. Naser hablaron con el Ing. Ruiz y el Prof. Díaz.",
        "Hay frutas, p. ej. Manzanas y peras.",
        "Hay frutas, p.ej. Manzanas y peras.",
        "Un ejemplo, v.g. Madrid, sirve.",
        "Compara cf. Smith y también vs. Jones.",
        "It costs approx. Ten dollars, aprox. Diez euros.",
        "Use a tool, e.g. Vite, or i.e. Rollup.",
        "Mr. Smith, Mrs. Smith and Ms. Jones met Dr. Who.",
        "John Smith Jr. Visited Acme Inc. Headquarters.",
        "He has a Ph.D. Degree in physics.",
        "Vive en EE. UU. Desde 2010.",
        "It was 5 p.m. Eastern time.",
        "Meet on Jan. Fifth or Feb. Sixth.",
        "Ver fig. Tres y vol. Dos, pp. Diez, núm. Cinco.",
        "Según el registro, máx. Diez intentos por hora.",
        "Llama al tel. Del centro o al dept. De ventas.",
        "Set the size in MB. Values above the cap fail.",
    ],
)
def test_abbreviations(text: str) -> None:
    assert split_sentences(text) == [text]


@pytest.mark.parametrize(
    "text",
    [
        "Pi vale 3.14 aproximadamente.",
        "La casa cuesta $170.500.000,00 hoy.",
        "Instala v1.2.3 o v.1.2.3 o 1.2.3-beta.1 ahora.",
        "El servidor 192.168.1.1 responde.",
        "Lee https://example.com/a.b?x=1&y=2.3#Frag antes.",
        "Escribe a jane.doe@example.com hoy.",
        "Jonas E. Smith y J. R. R. Tolkien escribieron.",
        "Espera... no sé… quizá sí.",
        "Ver capítulo 2. 3 ejemplos siguen.",
        "Ese es el capítulo [...] Luego viene otro.",
    ],
)
def test_no_split_inside(text: str) -> None:
    assert split_sentences(text) == [text]


def test_url_then_sentence() -> None:
    assert split_sentences("Visita https://example.com/a.b?x=1. Next sentence.") == [
        "Visita https://example.com/a.b?x=1.",
        "Next sentence.",
    ]


def test_email_then_sentence() -> None:
    assert split_sentences("Escribe a juan.perez@example.com. Luego espera.") == [
        "Escribe a juan.perez@example.com.",
        "Luego espera.",
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("¿Vienes? ¡Claro! Vale.", ["¿Vienes?", "¡Claro!", "Vale."]),
        ('Dijo "hola." Luego se fue.', ['Dijo "hola."', "Luego se fue."]),
        ("Fin (del todo.) Ahora sí.", ["Fin (del todo.)", "Ahora sí."]),
        ("Termina. «Empieza» otra.", ["Termina.", "«Empieza» otra."]),
        ("Termina. (Nota) otra.", ["Termina.", "(Nota) otra."]),
        ("Espera… Ahora.", ["Espera…", "Ahora."]),
        ("Terminó. Élla llegó. Ñandú corre.", ["Terminó.", "Élla llegó.", "Ñandú corre."]),
        ("Compró apples, etc. The rest waited.", ["Compró apples, etc.", "The rest waited."]),
        ("Vive en EE. UU. El resto no.", ["Vive en EE. UU.", "El resto no."]),
    ],
)
def test_splits(text: str, expected: list[str]) -> None:
    assert split_sentences(text) == expected


def test_digit_after_a_unit_does_not_start_a_sentence() -> None:
    assert split_sentences("Mide 10 cm. 20 son demasiados.") == ["Mide 10 cm. 20 son demasiados."]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "Uploads stop at 25 MB. Bigger files get a 413.",
            ["Uploads stop at 25 MB.", "Bigger files get a 413."],
        ),
        ("Tarda 5 min. Según el registro, es normal.", ["Tarda 5 min.", "Según el registro, es normal."]),
        ("El paquete pesa 1,2 kg. Cabe en el buzón.", ["El paquete pesa 1,2 kg.", "Cabe en el buzón."]),
        (
            "La pista mide 400 m. Hay que dar tres vueltas.",
            ["La pista mide 400 m.", "Hay que dar tres vueltas."],
        ),
        ("Recorrimos 3 km. y luego volvimos.", ["Recorrimos 3 km. y luego volvimos."]),
    ],
)
def test_a_unit_after_a_number_ends_a_sentence_before_a_capital(text: str, expected: list[str]) -> None:
    """Unit symbols take no period of their own, so after a number the period is the sentence's."""
    assert split_sentences(text) == expected


def test_a_name_opening_lower_case_may_open_a_sentence() -> None:
    assert split_sentences("Pedí el reembolso por la web. eBay contestó al día siguiente.") == [
        "Pedí el reembolso por la web.",
        "eBay contestó al día siguiente.",
    ]
    assert split_sentences("Wrap the state in a hook. useMemo keeps it between renders.") == [
        "Wrap the state in a hook.",
        "useMemo keeps it between renders.",
    ]
    assert split_sentences("Mira la fig. iOS y la sect. 4 del manual.") == [
        "Mira la fig. iOS y la sect. 4 del manual."
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Marca la ext. 2210 para soporte.", ["Marca la ext. 2210 para soporte."]),
        ("Dial ext. 31 and ask for Ana.", ["Dial ext. 31 and ask for Ana."]),
        (
            "Guarda el archivo con otra ext. Luego ábrelo.",
            ["Guarda el archivo con otra ext.", "Luego ábrelo."],
        ),
    ],
)
def test_an_extension_takes_the_number_after_it(text: str, expected: list[str]) -> None:
    assert split_sentences(text) == expected


# -- adversarial inputs: must finish, with time linear in size ---------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "1." * 50_000,
        "." * 100_000,
        "1.1.1.1" + "." * 50_000 + "x",
        "```\n" * 10_000,
        "```\n~~~~\n````a\n" * 3_000,
        "word " * 40_000,
        "a. " * 40_000,
        "A. " * 40_000,
        "Hello. " * 20_000,
        " ." * 50_000,
        "w. . . . " * 10_000,
        "• x " * 20_000,
        ". A" * 30_000,
        "> " * 50_000,
        "- " * 50_000,
        "[" * 100_000,
        "| a " * 20_000 + "\n" + "|---" * 20_000,
        "- a\n" * 5_000,
        '."' * 50_000 + " A",
        "1. x " * 20_000,
        "a.B" * 30_000,
        "done.Then " * 10_000,
        "x. a) " * 20_000,
        ". (1) (2) " * 10_000,
        "w.[1] A" * 15_000,
        "w.[1," * 20_000,
        "w.1 A" * 20_000,
        "。！" * 30_000,
        "．１" * 30_000,
        "? - " * 25_000,
        "x.¿" * 30_000,
        "a.m. A " * 15_000,
        "- a\n" + "  - b\n    - c\n" * 20_000,
        "1. a\n" + "   1. b\n      - c\n" * 15_000,
    ],
    ids=lambda t: repr(t[:12]),
)
def test_adversarial_inputs_finish(text: str) -> None:
    _check_invariants(text)


# -- the segmented path matches one markdown-it parse of the whole text ------------------------

_LINE_HEAD = st.sampled_from(
    [
        *["", "", "", " ", "  ", "   ", "    ", "\t", "- ", "* ", "+ ", "1. ", "2) ", "  - "],
        *["   1. ", "> ", ">", "# ", "## ", "#", "```", "````", "~~~", "``` js", "```a`"],
        *["    ```", "  ```", "---", "***", "___", "===", "- - -", "[a]: /u", "[a]", "["],
        *["| ", "|---|", ":-:", "-:", "<div>", "</div>", "<!--", "-->", "<script>", "</script>"],
        *["<?", "?>", "<!X", "<![CDATA[", "]]>", "<pre>", "<a href=x>", "**", "__", "`x`"],
        *["~~x~~", "-", "*", "1.", "\\", "**T:** ", ":::", "-x", "+1", "2024 "],
    ]
)
_LINE_TEXT = st.lists(
    st.sampled_from(
        [
            "Hola.",
            "A",
            "b",
            " ",
            "|",
            "]:",
            "`",
            "~",
            "*",
            "-",
            ">",
            "<",
            "#",
            "1.",
            "Dr.",
            "x\t",
            "\u00a0",
            "\x0c",
            ".",
        ]
    ),
    max_size=4,
).map("".join)
_MD_LINES = st.lists(st.tuples(_LINE_HEAD, _LINE_TEXT).map("".join), max_size=30)


@settings(max_examples=500, deadline=None)
@given(_MD_LINES, st.sampled_from(["\n", "\r\n", "\r"]), st.booleans())
def test_segmented_parse_matches_full_parse(lines: list[str], newline: str, tail: bool) -> None:
    text = newline.join(lines) + (newline if tail else "")
    assert split_sentence_spans(text) == _split_spans_full(text)


@settings(max_examples=300, deadline=None)
@given(_MARKDOWNISH)
def test_segmented_parse_matches_full_parse_on_noise(text: str) -> None:
    assert split_sentence_spans(text) == _split_spans_full(text)


_NESTED_ITEM = st.tuples(
    st.sampled_from(["", " ", "  ", "   ", "    ", "     ", "      ", "        ", "          ", "\t"]),
    st.sampled_from(["- ", "* ", "+ ", "1. ", "2. ", "10. ", "01. ", "1) ", "3) ", "-  ", "* # "]),
    st.sampled_from(["Uno. Dos", "`a.b` sí. No", "[enlace](u). Más", "e.g. this", "fin.", "[a]: /u", "1. x"]),
).map("".join)
_NESTED_LINE = st.one_of(
    _NESTED_ITEM,
    _NESTED_ITEM,
    st.sampled_from(["", "", "perezosa. Línea", "  sigue aquí. Y", "    más. Texto", "---", "> cita", "```"]),
)


@settings(max_examples=500, deadline=None)
@given(_NESTED_ITEM, st.lists(_NESTED_LINE, max_size=14), st.booleans())
def test_segmented_parse_matches_full_parse_on_nested_lists(
    first: str, lines: list[str], prose_after: bool
) -> None:
    text = "\n".join([first, *lines]) + ("\n\nDespués. Fin." if prose_after else "")
    assert split_sentence_spans(text) == _split_spans_full(text)


def test_nested_list_items_are_units_of_their_own() -> None:
    text = (
        "* `UUID`:\n"
        "    * A standard identifier, common in databases. It is unique.\n"
        "    * Shown as a `str`.\n"
        "        1. Even deeper.\n"
        "* `datetime`: sent\n"
        "  as a string. Parsed back.\n"
    )
    assert split_sentences(text) == [
        "* `UUID`:",
        "* A standard identifier, common in databases. It is unique.",
        "* Shown as a `str`.",
        "1. Even deeper.",
        "* `datetime`: sent\n  as a string. Parsed back.",
    ]
    assert split_sentence_spans(text) == _split_spans_full(text)


@pytest.mark.parametrize(
    ("text", "parses"),
    [
        ("- a\n  - b\n    1. c\n  - d\n- e\n\nFin. Ya.", 0),
        ("1. a\n   1. b\n   2. c\n2. d", 0),
        ("- a\n  - b\n    - c\n      - d", 1),  # a fourth level
        ("- a\n  2. b", 1),  # would interrupt a's paragraph, which only "1." may
        ("- a\n      - b", 1),  # four columns past a's text
        ("<!-- YAML\nadded: v1.0\n\nchanges: none\n-->\n\nText. More.", 0),  # a blank line does not end it
        ("<!-- once -->\n\n<!-- never closed\n\n# Not a heading", 0),
        ("<!-- a | b -->\n|---|---|\n| c | d |", 1),  # a table's header row
    ],
)
def test_plain_blocks_are_scanned_without_markdown_it(
    text: str, parses: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = []
    parse = sentences._parse
    monkeypatch.setattr(sentences, "_parse", lambda src: calls.append(src) or parse(src))
    assert split_sentence_spans(text) == _split_spans_full(text)
    assert len(calls) == parses + 1  # the full parse is one call


@pytest.mark.parametrize(
    "text",
    [
        "<!-- YAML\nadded: v1\n\n-->\nTexto. Más.\n\n  <!-- a -->\n    <!-- b\n\n--> fin\n\n<!-->\nY. Z.",
        "Párrafo. Sigue\n<!-- dentro -->\n\n- a\n  <!-- en el ítem\n\n  -->\n\nFin.",
        "- a\n  - b\n    - c\n      - d\n        - e\n\nFin. Ya.",
        "- a\n  2. b\n\nFin.",
        "- a\n  1. b\n  2. c\n- d",
        "- a\n  * b\n  - c\n\nFin.",
        "1. a\n    10. b\n2. c",
        "- a\n      - b\n- c",
        "- a\n  - b\n\n  - c\n\nFin.",
        "- a\n  - b\nperezosa. Línea\n- c",
        "Uno. Dos.\n\n- a\n- b\n\nTres.\n\n## T\n\n```js\nx\n\nY. Z\n```\nCuatro.",
        "- a\n\n  sigue. Aquí\n\nFuera. Sí.",
        "- a\n- b\nperezosa. Línea\n\nFin.",
        "1. a\n\n   ```sh\n   npm i\n\n   ```\n\nDespués. Sí.",
        "<!--\n\nDentro. Sí.\n\n-->\n\nFuera. Sí.",
        "<div>\n```\n</div>\n\n```\nHola.\n\nMundo. Sí.\n```\n\nFin. Ya.",
        "- a\n  ```\n\nfoo. Bar\n\n  ```\n\nbar. Baz.",
        "- ```\n  x\n\n  ```\nbar. Baz\n\n```\n\nqux. Y\n\n```",
        "[ref]:\n/url\n\nTexto. Otro.\n\n[no es\nreferencia]\n\nFin.",
        "**Tipo:** `x`. Sigue\n\n- **Defecto:** `y`\n- [enlace](u). Más\n\nFin.",
        "Párrafo\n    indentado. Sigue\n\tcon tab\n\n> cita\n\nTexto\n===\n\nY | z\n:-:\n",
        "> " * 30 + "x\n\nTexto. Más.\n\n" + "- " * 30 + "y\n\nFin. Ya.",
        "１1. uno\n２) dos\n\n1１. tres",
    ],
)
def test_segmented_parse_matches_full_parse_examples(text: str) -> None:
    assert split_sentence_spans(text) == _split_spans_full(text)


# -- families of boundaries that prose outside the docs needs ----------------------------------
# Per family: cases that must split, then counter-examples that must stay whole.


def _cases(*marked: str) -> list[tuple[str, list[str]]]:
    """(text, units) from texts where "|" marks each cut; a text without one stays whole."""
    return [(m.replace("|", ""), [u.strip() for u in m.split("|")]) for m in marked]


# 1. A citation or footnote mark glued to a full stop closes the sentence.
CITATIONS = _cases(
    "Sales doubled last year.[8]| Margins did not.",
    "The method is old.[1][2]| Nobody uses it now.",
    "Lo probaron tres equipos.[4, 5]| El cuarto no.",
    "Rainfall peaks in June.14| Farmers wait for it.",
    "Snow fell in May.²| Nobody expected it.",
    "La idea ya existía (Ruiz, 1987).6| Nadie la citó.",
    "The ratio is 2.14 Farmers agree.",
    "Update to v3.12 Tomorrow is too late.",
    "See Fig.3 Left panel for the mesh.",
    "The array holds x[1] and y[2] today.",
    "El pH es 7.4 Los valores normales varían.",
    "The plot covers 40 m² Most of it is grass.",
)

# 2. a.m./p.m. and dotted abbreviations end a sentence when a new one visibly opens.
TIMES_AND_DOTTED = _cases(
    "The gates open at 8 a.m.| Parking is free.",
    "We ate at 9 P.M.| Nobody was hungry.",
    "Cenamos a las 9 p.m.| Luego paseamos.",
    "Salimos a las 7 a. m.| Luego llovió.",
    "He grew up in the U.K.| Later he moved.",
    "Pack socks, maps, etc.| Check the weather too.",
    "Trae mapas, agua, etc.| Consulta el tiempo.",
    "The talk ended at 5 p.m.| Sarah left first.",
    "The gates open at 8 a.m. and close at noon.",
    "The talk starts at 4 P.M. Friday and ends at 6.",
    "The call is at 10 a.m. Central time.",
    "At 7 a.m. Dr. Lee opened the clinic.",
    "She studied at a U.S. College in Ohio.",
    "Abre a las 8 a.m. y cierra tarde.",
    "Abre a las 8 a. m. y cierra a las 2 p. m. los sábados.",
)

# 3. Stops inside closing quotes and brackets; parenthesised sentences; nested quotes.
QUOTES_AND_PARENS = _cases(
    'She asked, "Are we there yet?"| Her father sighed.',
    "The label said ‘Fragile!’| We were careful.",
    "I left early.| (The rest stayed late.)| Nobody noticed.",
    "(Solo llovió un día.)| El resto fue sol.",
    "He said, 'Ana wrote \"done.\"'| We checked.",
    "Dijo: “Ana escribió ‘listo.’”| Lo revisamos.",
    'She asked "are we there yet?" and sighed.',
    '"Stop." she said.',
    "He read the note ('Call me!') and left.",
    "«¡Vamos!», gritó el entrenador.",
)

# 4. Inline enumerations opening after a finished sentence.
ENUMERATIONS = _cases(
    "Choose one.| a) tea| b) coffee",
    "Choose one.| a.) tea| b.) coffee",
    "Choose one.| (a) tea| (b) coffee| (c) water.",
    "Two risks remain.| i) cost| ii) delay",
    "Do this first.| 1. Back up| 2. Upgrade| 3. Test.",
    "Haz esto.| 1) Copia| 2) Actualiza",
    "i. Load\n|ii. Save it.| Then stop.",
    "The index went from 1. to 2. in a day.",
    "Grade it a) if good.",
    "Add 1 to 2 and then 3 to 4.",
    "Options a) and b) are equal.",
)

# 5. A stop with no space before the next sentence, against names with dots.
GLUED_STOPS = _cases(
    "It arrived late.|Then it broke.",
    "Llegó tarde.|Luego se rompió.",
    "Run `make`.|Then read the log.",
    "Open example.com, install Node.js and pin v1.2.3 now.",
    "Subclass models.Model and edit settings.py or README.md first.",
    "Load lodash.Debounce first.",
    "Read it, e.g.Twice a day.",
    "Pi is 3.14 and the URL is https://Example.org/A.Html today.",
    "Call System.Out.Println to print.",
    "...Then the line went on.",
)

# 6. Full-width and CJK stops; Spanish inverted marks.
WIDE_AND_INVERTED = _cases(
    "ロボットです。|はい。",
    "好吗？|好！|走吧。",
    "結果です．|次へ",
    "¡Hola!|¿Qué tal?",
    "Así es.|¡Bravo!",
    "Hola.| ¿seguimos mañana?| Vale.",
    "Me pregunto… ¿será verdad?| No lo sé... ¿y tú?",
    "１２．５キロです。",
    "Si puedes, ¿me llamas luego?",
    "Bueno ¡qué sorpresa! dijo.",
)

# 7. Numbers at a boundary, ordinals and decimals.
NUMBERS = _cases(
    "The answer is 7.| 7 is odd.",
    "El total es 3.| 3 más 3 es 6.",
    "They met in 2015.| 4 years later they married.",
    "She ranked 1st.| 2nd went to Leo.",
    "Terminó en el puesto 3.º| Después se retiró.",
    "Look at chapter 4. 5 examples follow.",
    "He is ranked no. 1 again.",
    "Vive en el 2.º piso y trabaja en el n.º 7.",
    "Está en el 1.er puesto con 4.5 puntos.",
    "La Sra. D.ª Luisa abrió el 2.º Congreso.",
    "He is 5 ft. 3 in. tall and the pup weighs 9 lb. 4 oz. now.",
    "The bakery, est. 1921, is closed; see Eq. 4 and Tab. 2.",
)

# 8. One-word sentences and a dash after a stop.
ONE_WORD_AND_DASHES = _cases(
    "Claim.| The sum is even.",
    "Lema.| Todo número par es divisible por dos.",
    "Nice post!| — Tom",
    "No.| I won't go.",
    "Any news?| - Sent from a phone",
    "It ran for 3 - 4 hours.",
    "Is it fast? - not really, he said.",
)

# 9. A capital initial against a sentence ending in a letter.
INITIALS = _cases(
    "Vote for option C.| It is cheaper.",
    "Vivió hacia el 300 a. C.| El resto es leyenda.",
    "Lo firmaron en EE. UU.| Luego lo ratificaron.",
    "We chose route B.| Then it snowed.",
    "Elegimos la ruta B.| Luego nevó.",
    "John F. Kennedy spoke.",
    "The memo was signed by K. Tanaka.",
    "Ana M. García firmó el acta.",
    "A. B. Cole and P. Q. Ruiz wrote it.",
    "Nació en el 50 a. C. Tarraco ya existía.",
    "Trabaja en RR. HH. Desde enero.",
    "Adm. Kato met Maj. Bell and Messrs. Hill.",
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        *CITATIONS,
        *TIMES_AND_DOTTED,
        *QUOTES_AND_PARENS,
        *ENUMERATIONS,
        *GLUED_STOPS,
        *WIDE_AND_INVERTED,
        *NUMBERS,
        *ONE_WORD_AND_DASHES,
        *INITIALS,
    ],
)
def test_prose_families(text: str, expected: list[str]) -> None:
    assert split_sentences(text) == expected


def test_enumeration_inside_a_list_item_stays_whole() -> None:
    text = "- Do this first. 1. Back up 2. Upgrade\n- Next item"
    assert split_sentences(text) == ["- Do this first. 1. Back up 2. Upgrade", "- Next item"]


def test_documentation_text_keeps_code_names_whole() -> None:
    text = (
        "Call `app.include_router` first.Then pin v1.2.3 in config.py, see "
        "https://example.com/Guide.Html. 2 flags matter: `--host` and `--port`.\n\n"
        "**Default:** `None`. Set it to a dict.\n\n| `a.B` | x.Then |\n|---|---|"
    )
    assert split_sentences(text) == [
        "Call `app.include_router` first.",
        "Then pin v1.2.3 in config.py, see https://example.com/Guide.Html.",
        "2 flags matter: `--host` and `--port`.",
        "**Default:** `None`.",
        "Set it to a dict.",
        "| `a.B` | x.Then |",
        "|---|---|",
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            'Tag the release with `git tag -m "Beta. Not final"` first. Then push the tag.',
            ['Tag the release with `git tag -m "Beta. Not final"` first.', "Then push the tag."],
        ),
        (
            "Read [Part 3. Setting the port](#part-3) before. It explains the flags.",
            ["Read [Part 3. Setting the port](#part-3) before.", "It explains the flags."],
        ),
        (
            "La opción ``--modo. Rápido`` no existe. Usa la otra.",
            ["La opción ``--modo. Rápido`` no existe.", "Usa la otra."],
        ),
        ("Write <code>a. B</code> in the box. Save it.", ["Write <code>a. B</code> in the box.", "Save it."]),
        (
            "See [the guide]. It is short. A stray ` mark. Then the end.",
            ["See [the guide].", "It is short.", "A stray ` mark.", "Then the end."],
        ),
    ],
)
def test_no_unit_ends_inside_inline_code_or_a_links_text(text: str, expected: list[str]) -> None:
    """Cutting there would leave a unit with an unclosed backtick or bracket, which trimming then shows."""
    assert split_sentences(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            '!!! warning "Before you upgrade"\n    Back up the database. The migration is one-way.',
            ['!!! warning "Before you upgrade"', "Back up the database.", "The migration is one-way."],
        ),
        ("??? note\n    Collapsed by default.", ["??? note", "Collapsed by default."]),
        ("???+ tip Abierto\n    Se ve al cargar.", ["???+ tip Abierto", "Se ve al cargar."]),
        (
            "/// details | Más detalles\nEl caché dura una hora. Luego se renueva.\n///",
            ["/// details | Más detalles", "El caché dura una hora.", "Luego se renueva.", "///"],
        ),
        (
            "::: danger Do not. Ever\nRun this as root.\n:::",
            ["::: danger Do not. Ever", "Run this as root.", ":::"],
        ),
        (
            "::::tip\nNested fences use four colons.\n::::",
            ["::::tip", "Nested fences use four colons.", "::::"],
        ),
    ],
)
def test_an_admonition_line_is_a_unit_of_its_own(text: str, expected: list[str]) -> None:
    """The text of an admonition follows its opening line in the same paragraph; glued to its first sentence, the
    opener is scored and kept as part of it, and a closing line glued to the last one outlives its opener."""
    assert split_sentences(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            '!!! note "Cache"\n\n    Entries live an hour. Then they are fetched again.',
            ['!!! note "Cache"', "Entries live an hour.", "Then they are fetched again."],
        ),
        (
            '=== "pip"\n\n    Install it with pip. Then import it.\n\n    ```bash\n    pip install app. Done.\n    ```\n'
            "\n    A second paragraph. Still the tab's.\n\nBack outside. The end.",
            [
                '=== "pip"',
                "Install it with pip.",
                "Then import it.",
                "```bash\n    pip install app. Done.\n    ```",
                "A second paragraph.",
                "Still the tab's.",
                "Back outside.",
                "The end.",
            ],
        ),
        (
            '===+ "npm"\n    Lo instalas con npm. Funciona sin red.',
            ['===+ "npm"', "Lo instalas con npm.", "Funciona sin red."],
        ),
    ],
)
def test_an_admonition_or_content_tab_body_indented_after_a_blank_line_is_text_not_code(
    text: str, expected: list[str]
) -> None:
    """MkDocs indents a container's body by four spaces; CommonMark alone reads it, after a blank line, as one
    indented code block, which trimming could only keep or cut whole."""
    assert split_sentences(text) == expected


def test_an_indented_code_block_after_a_paragraph_stays_whole() -> None:
    text = "Run this:\n\n    make run. make test.\n\n    still code. yes."
    assert split_sentences(text) == ["Run this:", "make run. make test.\n\n    still code. yes."]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Paths like a///b are folded. Fine.", ["Paths like a///b are folded.", "Fine."]),
        ("The ratio 3:::4 stays.\nOdd, but so.", ["The ratio 3:::4 stays.", "Odd, but so."]),
        ("Dijo:\n::: 3 veces, no más.", ["Dijo:\n::: 3 veces, no más."]),
    ],
)
def test_the_same_marks_open_no_admonition_inside_a_line_or_before_a_number(
    text: str, expected: list[str]
) -> None:
    assert split_sentences(text) == expected
