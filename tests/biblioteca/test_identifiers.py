"""Which identifiers a question names, and the keys by which a unit of a passage holds them."""

from __future__ import annotations

import pytest

from biblioteca.text.identifiers import identifier_keys, question_identifiers


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        (
            "What's the default of the --assetsInlineLimit flag?",
            [{"--assetsinlinelimit", "assetsinlinelimit"}],
        ),
        ("What is import.meta.hot.prune for?", [{"importmetahotprune", "metahotprune", "hotprune"}]),
        ("Does --watch rebuild on save?", [{"--watch"}]),
        ("Where is DATABASE_URL read?", [{"databaseurl"}]),
        ("What does optimizeDeps do?", [{"optimizedeps"}]),
        ("Which `HTTPException` fields exist?", [{"httpexception"}]),
        (
            "¿Para qué sirve server.hmr.overlay junto a response_model_exclude_unset?",
            [{"serverhmroverlay", "hmroverlay"}, {"responsemodelexcludeunset"}],
        ),
        (
            "¿Qué hace optimizeDeps.exclude con una dependencia?",
            [{"optimizedepsexclude"}],
        ),
        ("¿Cómo se configura `configuración.añoFiscal`?", [{"configuracionanofiscal", "anofiscal"}]),
        ("What does %5 stand for in the reminder text?", [{"%5"}]),
        ("¿Dónde queda %LOCALAPPDATA% y qué pone {1} en el aviso?", [{"%localappdata%"}, {"{1}"}]),
        ("Is `{0}` replaced before `app.run`?", [{"{0}"}, {"apprun"}]),
    ],
)
def test_a_question_names_its_identifiers_by_their_keys(question, expected):
    assert [set(keys) for keys in question_identifiers(question)] == expected


@pytest.mark.parametrize(
    "question",
    [
        "How does server-side rendering work in JavaScript?",
        "¿Funciona el renderizado del lado del servidor, p. ej. con TypeScript?",
        "Is this fixed in 4.2.0, e.g. for the build?",
        "What is the default port?",
        "Why does 100%5 of the build fail at 50 % 5?",
        "Can I set {count} or {123} in a message?",
    ],
)
def test_words_product_names_versions_and_abbreviations_are_not_identifiers(question):
    assert question_identifiers(question) == ()


@pytest.mark.parametrize(
    ("unit", "question"),
    [
        ("## `hot.prune(cb)`", "What is import.meta.hot.prune used for?"),
        ("| `--assetsInlineLimit <number>` | Inline threshold |", "What is build.assetsInlineLimit?"),
        ("## build.assetsInlineLimit", "Default of the --assetsInlineLimit flag?"),
        ("| `-w, --watch` | Rebuilds on change |", "Does --watch rebuild?"),
        ("Set `DATABASE_URL` before starting.", "¿Dónde se lee DATABASE_URL?"),
        ("Vite exposes `import.meta.hot.prune` too.", "¿Qué hace hot.prune?"),
        ("#### `which`", "What does the `--which` option of `npm fund` do?"),
        ("### Configuration #### `Force`", "Is --force safe here?"),
        ("`which`\n-------", "What does the `--which` option of `npm fund` do?"),
        ("|%5|The amount still owed.|", "¿Qué inserta %5?"),
        ("Logs go to `%LocalAppData%\\MyApp`.", "Where is %LOCALAPPDATA%?"),
        ('The message reads "Could not open {0}".', "What fills {0}?"),
    ],
)
def test_a_unit_holds_an_identifier_however_it_spells_it(unit, question):
    (keys,) = question_identifiers(question)
    assert not identifier_keys(unit).isdisjoint(keys)


@pytest.mark.parametrize(
    ("unit", "question"),
    [
        ("## `hot.data`", "What is import.meta.hot.prune used for?"),
        ("Vite exposes `import.meta.env` in modules.", "What is import.meta.hot.prune used for?"),
        ("Set the limit of inline assets here.", "Default of the --assetsInlineLimit flag?"),
        ("| `--port <port>` | Port |", "Does --watch rebuild?"),
        ("`optimizeDeps.include` lists packages.", "¿Qué hace optimizeDeps.exclude?"),
        ("Pick `which` source to open.", "What does the `--which` option do?"),
        ("#### `which-source`", "What does the `--which` option do?"),
        ("#### `--which-source`", "What does the `--which` option do?"),
        ("- `which`\n---", "What does the `--which` option do?"),
        ("|%51|The posting date.|", "¿Qué inserta %5?"),
        ("It rose by 20%5 times.", "¿Qué inserta %5?"),
        ("The message reads {01}.", "What fills {0}?"),
    ],
)
def test_a_unit_naming_another_identifier_or_only_its_words_does_not_hold_it(unit, question):
    (keys,) = question_identifiers(question)
    assert identifier_keys(unit).isdisjoint(keys)
