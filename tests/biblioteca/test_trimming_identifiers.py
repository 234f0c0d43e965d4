"""Trimming keeps what a question names (hand-made vectors, so each cosine is known): a passage holding the
question's identifier is not dropped and keeps the unit holding it (a table row, with the header row), and a
heading naming it keeps the first sentence under it."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from biblioteca.text.identifiers import question_identifiers
from biblioteca.trimming import ROW_ELISION, TrimInput, TrimParams, trim_chunks
from biblioteca.trimming_identifiers import identifier_units

QUERY = np.array([1.0, 0.0], dtype=np.float32)
# Today's defaults where they matter here: a far threshold, a cosine drop margin, companions, markup trimmed.
PARAMS = TrimParams(
    threshold=0.95,
    window=1,
    relative_margin=0.2,
    drop_margin=0.025,
    passage_margin=0.09,
    passage_spread=0.9,
    window_spread=0.6,
    companions=True,
    trim_markup=True,
)


def passage(units: list[str], scores: list[float], *, heading: str = "", language: str = "en") -> TrimInput:
    """Units joined by new lines; a heading unit has no vector of its own (its score is 0, as stored)."""
    text = "\n".join(units)
    spans, cursor = [], 0
    for unit in units:
        start = text.index(unit, cursor)
        spans.append((start, start + len(unit)))
        cursor = start + len(unit)
    vectors = [[s, float(np.sqrt(max(0.0, 1 - s * s)))] for s in scores]
    return TrimInput(text, spans, np.asarray(vectors, dtype=np.float32), language=language, heading=heading)


def trim(chunks: list[TrimInput], question: str, params: TrimParams = PARAMS):
    return trim_chunks(chunks, QUERY, params, identifiers=question_identifiers(question))


BEST_EN = passage(
    ["Assets under the limit are inlined as base64.", "Larger ones are emitted as files.", "See the guide."],
    [0.90, 0.88, 0.70],
)
CLI_EN = passage(
    [
        "#### Options",
        "| Option | Description |",
        "|---|---|",
        "| `--outDir <dir>` | Output directory (default: `dist`) |",
        "| `--assetsInlineLimit <number>` | Inline threshold in bytes (default: `4096`) |",
        "| `-w, --watch` | Rebuild when files change |",
        "| `--base <path>` | Public base path (default: `/`) |",
    ],
    [0.0, 0.80, 0.80, 0.81, 0.84, 0.80, 0.81],
)
BEST_ES = passage(
    ["Los recursos bajo el límite se incrustan en base64.", "Los mayores se emiten como archivos."],
    [0.90, 0.88],
    language="es",
)
CLI_ES = passage(
    [
        "| Opción | Descripción |",
        "|---|---|",
        "| `--outDir <dir>` | Carpeta de salida (por defecto: `dist`) |",
        "| `--limiteEnLinea <número>` | Umbral de incrustación en bytes (por defecto: `4096`) |",
        "| `--base <ruta>` | Ruta base pública (por defecto: `/`) |",
    ],
    [0.80, 0.80, 0.81, 0.84, 0.81],
    language="es",
)
PLACEHOLDERS_ES = passage(
    [
        "| Marcador | Valor |",
        "|---|---|",
        "| %1 | Fecha del documento |",
        "| %5 | Importe pendiente del recordatorio |",
        "| %6 | Tipo de interés aplicado |",
    ],
    [0.80, 0.80, 0.81, 0.84, 0.81],
    language="es",
)


@pytest.mark.parametrize(
    ("best", "table", "question", "row", "header"),
    [
        (
            BEST_EN,
            CLI_EN,
            "What's the default for the --assetsInlineLimit flag of vite build?",
            "| `--assetsInlineLimit <number>` | Inline threshold in bytes (default: `4096`) |",
            "| Option | Description |",
        ),
        (
            BEST_ES,
            CLI_ES,
            "¿Qué valor tiene por defecto la opción --limiteEnLinea al compilar?",
            "| `--limiteEnLinea <número>` | Umbral de incrustación en bytes (por defecto: `4096`) |",
            "| Opción | Descripción |",
        ),
        (
            BEST_ES,
            PLACEHOLDERS_ES,
            "¿Qué valor pone el marcador %5 en el texto del recordatorio?",
            "| %5 | Importe pendiente del recordatorio |",
            "| Marcador | Valor |",
        ),
    ],
)
def test_a_passage_holding_the_questions_flag_keeps_its_row_and_header_instead_of_being_dropped(
    best, table, question, row, header
):
    assert trim([best, table], "What is the default inline threshold?")[1].dropped, "dropped on cosines alone"
    first, second = trim([best, table], question)
    assert first.text == trim([best, table], "What is the default inline threshold?")[0].text
    assert not second.dropped
    assert second.text == header + "\n|---|---|" + ROW_ELISION + row, "the rule stays under its header"


HMR_EN = passage(
    [
        "## `hot.accept(cb)`",
        "A module accepts its own updates with this callback.",
        "```js\nimport.meta.hot.accept(() => {})\n```",
        "## `hot.prune(cb)`",
        "Register a callback that runs when the module is no longer imported on the page.",
        "Compared to `hot.dispose`, it suits code that cleans up its own side effects.",
        "```js\nimport.meta.hot.prune(() => cleanUp())\n```",
        "## `hot.data`",
        "The data object persists across instances of a module.",
    ],
    [0.0, 0.84, 0.86, 0.0, 0.79, 0.82, 0.88, 0.0, 0.85],
    heading="# HMR API",
)
HMR_ES = passage(
    [
        "## `hot.accept(cb)`",
        "Un módulo acepta sus propias actualizaciones con este callback.",
        "## `hot.prune(cb)`",
        "Registra un callback que se ejecuta cuando la página deja de importar el módulo.",
        "Frente a `hot.dispose`, sirve al código que limpia sus propios efectos.",
        "```js\nimport.meta.hot.prune(() => limpiar())\n```",
        "## `hot.data`",
        "El objeto de datos persiste entre instancias de un módulo.",
    ],
    [0.0, 0.84, 0.0, 0.78, 0.82, 0.88, 0.0, 0.85],
    heading="# API de HMR",
    language="es",
)


@pytest.mark.parametrize(
    ("chunk", "question", "heading", "sentence"),
    [
        (
            HMR_EN,
            "What is import.meta.hot.prune used for?",
            "## `hot.prune(cb)`",
            "Register a callback that runs when the module is no longer imported on the page.",
        ),
        (
            HMR_ES,
            "¿Para qué sirve import.meta.hot.prune?",
            "## `hot.prune(cb)`",
            "Registra un callback que se ejecuta cuando la página deja de importar el módulo.",
        ),
    ],
)
def test_a_heading_naming_the_identifier_keeps_the_first_sentence_under_it(
    chunk, question, heading, sentence
):
    params = replace(PARAMS, relative_margin=0.05)
    (plain,) = trim_chunks([chunk], QUERY, params)
    assert sentence not in plain.text, "without the rule the heading's sentence is cut"
    (out,) = trim([chunk], question, params)
    assert f"{heading}\n{sentence}" in out.text
    assert set(plain.kept) < set(out.kept), "the rule only adds to what the scores keep"


def test_a_passage_under_a_heading_naming_the_identifier_keeps_its_first_sentence():
    chunk = passage(
        ["Register a callback run when the module is no longer imported.", "Other words.", "More words."],
        [0.70, 0.90, 0.80],
        heading="# HMR API ## `hot.prune(cb)`",
    )
    params = replace(PARAMS, window=0, relative_margin=0.05)
    assert trim_chunks([chunk], QUERY, params)[0].text == "Other words."
    assert trim([chunk], "What does import.meta.hot.prune do?", params)[0].text == (
        "Register a callback run when the module is no longer imported.\nOther words."
    )


def test_a_comment_marker_under_the_heading_is_not_the_first_sentence():
    """Kubernetes opens sections with `<!-- overview -->`: the sentence after it says what the option is."""
    chunk = passage(
        [
            "## `ttlSecondsAfterFinished`",
            "<!-- overview -->",
            "Deletes a finished Job after that many seconds.",
            "Other.",
        ],
        [0.0, 0.80, 0.70, 0.90],
    )
    params = replace(PARAMS, window=0, relative_margin=0.05)
    assert trim_chunks([chunk], QUERY, params)[0].text == "Other."
    (out,) = trim([chunk], "What does `spec.ttlSecondsAfterFinished` do?", params)
    assert "Deletes a finished Job after that many seconds." in out.text
    assert not out.text.startswith("<!--")


# npm's reference heads each option with its name alone in code (`which`); a question says `--which`.
NPM_REFERENCE = [
    "#### `workspace`",
    "Run the command in the context of a workspace.",
    "#### `which`",
    "* Default: null",
    "* Type: null or Number",
    "If there are several funding sources, the 1-indexed one to open.",
]
NPM_SCORES = [0.0, 0.83, 0.0, 0.79, 0.79, 0.85]


@pytest.mark.parametrize(
    ("units", "scores", "question", "expected"),
    [
        (
            [
                "## server.warmCache",
                "- **Experimental:** yes",
                "- **Type:** `boolean`",
                "- **Default:** `true`",
                "When enabled, the first requests wait until the cache is filled.",
                "This avoids a second reload.",
            ],
            [0.0, 0.80, 0.78, 0.79, 0.82, 0.78],
            "What is server.warmCache for?",
            "## server.warmCache\n- **Experimental:** yes\n- **Type:** `boolean`\n- **Default:** `true`\n"
            "When enabled, the first requests wait until the cache is filled.",
        ),
        (
            NPM_REFERENCE,
            NPM_SCORES,
            "What does the `--which` option of `npm fund` do?",
            "#### `which`\n* Default: null\n* Type: null or Number\n"
            "If there are several funding sources, the 1-indexed one to open.",
        ),
    ],
)
def test_an_option_heading_keeps_the_sentence_after_its_field_lines(units, scores, question, expected):
    best = passage(["Caching speeds up cold starts.", "It is on by default."], [0.93, 0.90])
    option = passage(units, scores)
    assert trim_chunks([best, option], QUERY, PARAMS)[1].dropped
    assert trim([best, option], question)[1].text == expected


# A reference written as a list: each entry's name alone in a bold item, its type nested under it, then what it is.
ROUTE_OBJECT = [
    "- **$route.hash**",
    "  - type: `string`",
    "    The hash of the current route, if it has one.",
    "- **$route.fullPath**",
    "  - type: `string`",
    "    The full resolved URL including query and hash.",
    "- **$route.matched**",
    "  - type: `Array<RouteRecord>`",
]


def test_a_list_item_naming_the_identifier_alone_keeps_the_sentence_after_its_fields():
    best = passage(["Routes are matched in order.", "The first match wins."], [0.93, 0.90])
    entries = passage(ROUTE_OBJECT, [0.80, 0.79, 0.80, 0.80, 0.79, 0.78, 0.80, 0.79])
    kept = trim([best, entries], "what's in $route.fullPath")[1]
    assert "The full resolved URL including query and hash." in kept.text
    # an item saying more than a name is not an entry's head: its next line is not its description
    prose = passage(["- Read **$route.fullPath** for the whole URL", "    Unrelated note."], [0.80, 0.70])
    assert "Unrelated note." not in trim([best, prose], "what's in $route.fullPath")[1].text


def test_a_name_item_followed_by_another_name_item_keeps_no_neighbour():
    best = passage(["Routes are matched in order.", "The first match wins."], [0.93, 0.90])
    names = passage(["- `$route.fullPath`", "- `$route.hash`", "Both are strings."], [0.80, 0.80, 0.70])
    kept = trim([best, names], "what's in $route.fullPath", replace(PARAMS, companions=False))[1]
    assert "$route.hash" not in kept.text


def test_an_option_heading_with_only_field_lines_keeps_them():
    best = passage(["Caching speeds up cold starts.", "It is on by default."], [0.93, 0.90])
    option = passage(
        ["## server.warmCache", "- **Type:** `boolean`", "- **Default:** `true`"], [0.0, 0.80, 0.79]
    )
    kept = trim([best, option], "What is server.warmCache for?")[1]
    assert kept.text == "## server.warmCache\n- **Type:** `boolean`\n- **Default:** `true`"
    bare = trim([best, option], "What is server.warmCache for?", replace(PARAMS, companions=False))[1]
    assert bare.text == "## server.warmCache\n- **Type:** `boolean`"


def test_an_identifier_held_by_many_units_is_not_rare_and_changes_nothing():
    lines = [f"Use `import.meta.env` for setting {i}." for i in range(8)]
    best = passage(["The answer sits here.", *lines], [0.90] + [0.70] * 8)
    later = passage(["`import.meta.env` again.", "Filler."], [0.70, 0.60])
    question = "What does import.meta.env hold?"
    plain = trim_chunks([best, later], QUERY, PARAMS)
    assert [o.text for o in trim([best, later], question)] == [o.text for o in plain]
    assert (
        trim([best, later], question, replace(PARAMS, identifier_units=20))[1].text
        == "`import.meta.env` again."
    )


def test_no_identifier_no_change_and_zero_turns_the_rule_off():
    question = "What's the default for the --assetsInlineLimit flag?"
    assert trim([BEST_EN, CLI_EN], question, replace(PARAMS, identifier_units=0))[1].dropped
    assert identifier_units([BEST_EN, CLI_EN], (), limit=6, companions=True) == [set(), set()]


def test_identifier_units_reports_holders_with_their_companions():
    (keys,) = question_identifiers("--assetsInlineLimit?")
    assert identifier_units([BEST_EN, CLI_EN], (keys,), limit=6, companions=True) == [set(), {1, 2, 4}]
    assert identifier_units([BEST_EN, CLI_EN], (keys,), limit=6, companions=False) == [set(), {4}]


def test_identifier_keys_stored_at_ingest_find_the_units_that_keys_worked_out_anew_find():
    """A passage met for the first time reads its units' keys as ingest stored them, packed; the rule keeps the
    same units, and a key held by no unit whole (a part of a longer key) finds none."""
    from biblioteca.text.identifiers import identifier_keys
    from biblioteca.text.lexical import pack_terms

    def stored(chunk: TrimInput) -> TrimInput:
        # The same units under other text, so that the passage is met for the first time.
        moved = replace(chunk, text=" " + chunk.text, spans=[(a + 1, b + 1) for a, b in chunk.spans])
        return replace(moved, stored_keys=lambda: [pack_terms(identifier_keys(u)) for u in chunk.units])

    for question in ("--assetsInlineLimit?", "What does `build.assetsInlineLimit` default to?", "--inline"):
        identifiers = question_identifiers(question)
        anew = identifier_units([BEST_EN, CLI_EN], identifiers, limit=6, companions=True)
        packed = [stored(BEST_EN), stored(CLI_EN)]
        assert identifier_units(packed, identifiers, limit=6, companions=True) == anew
        assert packed[1].identifier_keys == CLI_EN.identifier_keys
    assert CLI_EN.units_keyed("inlinelimit") == stored(CLI_EN).units_keyed("inlinelimit") == ()
    assert (
        stored(CLI_EN).units_keyed("--assetsinlinelimit") == CLI_EN.units_keyed("--assetsinlinelimit") != ()
    )


def test_identifier_units_must_not_be_negative():
    with pytest.raises(ValueError, match="identifier_units"):
        TrimParams(threshold=0.5, identifier_units=-1)


def test_a_flag_finds_only_the_section_headed_with_its_own_name():
    best = passage(["Fund opens the funding page of a package.", "It lists every source."], [0.93, 0.90])
    reference = passage(NPM_REFERENCE, NPM_SCORES)
    assert not trim([best, reference], "What does the `--which` option do?")[1].dropped
    assert trim([best, reference], "What does the `--workspaces` option do?")[1].dropped
