"""Hybrid search: the vector ranking and PostgreSQL full-text search fused by reciprocal rank, in one statement.

Each test isolates one side by giving the search a question text and a question vector that disagree: the
vector of an unrelated sentence with the text that names a chunk, or the other way round.
"""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext, override_settings

from biblioteca.checks import hybrid_search_settings
from biblioteca.embeddings import get_embedder
from biblioteca.ingest import document_ingest
from biblioteca.models import Document
from biblioteca.retrieval import resolve_trim_params, retrieve, trim_terms
from biblioteca.selectors import HybridParams, chunk_search, query_term_weights, sentences_for_chunks

pytestmark = pytest.mark.django_db

APP = "t-hybrid"
DOCS = {
    "weather.md": "# Weather\n\nThe forecast says it will rain in the mountains tomorrow, with snow above "
    "two thousand metres and strong winds in the valleys.",
    "cooking.md": "# Cooking\n\nBoil the pasta in plenty of salted water for nine minutes, then drain it and "
    "toss it with the sauce while it is still hot.",
    "garden.md": "# Garden\n\nWater the tomatoes early in the morning, and cut back the side shoots so that the "
    "plant puts its strength into the fruit.",
    "routers.md": "# Bigger applications\n\nSplit the endpoints into modules, then connect each module to the "
    "main application with `app.include_router` so that its paths are served.",
    "exclude.md": "# Response model\n\nSet `response_model_exclude_unset` to leave out the fields that were "
    "never set, so the client only gets the values it sent.",
    "ajustes.md": "# Ajustes\n\nLa configuración del servidor se guarda en un archivo de texto que el programa "
    "lee al arrancar, y cada opción tiene un valor por omisión.",
    "sin-tildes.md": "# Notas\n\nEl catalogo de canciones se actualiza cada noche desde la base de datos "
    "principal, sin intervencion de nadie.",
}


@pytest.fixture
def hybrid_library():
    embedder = get_embedder()
    for name, content in DOCS.items():
        document_ingest(source_path=name, content=content, app=APP, embedder=embedder)
    document_ingest(
        source_path="elsewhere.md",
        app="t-hybrid-other",
        embedder=embedder,
        content="# Elsewhere\n\nAnother team also calls `app.include_router` in its docs.",
    )
    return APP


def vector_of(text: str):
    return get_embedder().embed_query(text)


LEXICAL_ONLY = HybridParams(vector_weight=0.0)


def paths(chunks) -> list[str]:
    return [c.document.source_path for c in chunks]


def words_only(app: str, question: str, *, top_k: int, hybrid: HybridParams = LEXICAL_ONLY) -> list:
    """The fused search with the vector of an unrelated question, so that only the words side ranks."""
    return chunk_search(
        query_vector=vector_of("Will it snow in the mountains tomorrow?"),
        top_k=top_k,
        app=app,
        query_text=question,
        hybrid=hybrid,
    )


def test_a_question_only_the_full_text_side_finds(hybrid_library):
    unrelated = vector_of("Will it snow in the mountains tomorrow?")
    vector_only = chunk_search(query_vector=unrelated, top_k=1, app=APP)
    assert paths(vector_only) == ["weather.md"]
    fused = chunk_search(
        query_vector=unrelated,
        top_k=1,
        app=APP,
        query_text="response_model_exclude_unset",
        hybrid=HybridParams(),
    )
    assert paths(fused) == ["exclude.md"]


def test_a_question_only_the_vector_side_finds(hybrid_library):
    vector = vector_of("How long should spaghetti cook?")
    fused = chunk_search(
        query_vector=vector, top_k=1, app=APP, query_text="xyzzy plugh", hybrid=HybridParams()
    )
    assert paths(fused) == ["cooking.md"]
    assert 0 < fused[0].score <= 1


def test_the_chunk_nearest_in_meaning_keeps_a_seat_in_the_top_k(hybrid_library):
    """Words weighed far above vectors fill the top 3 with the chunks holding the question's words; the chunk
    nearest by cosine still takes the last place asked for (`seat`, by default `top_k`), never the first."""
    loud = HybridParams(lexical_weight=10.0)
    vector = vector_of("How long should spaghetti cook?")

    def search(top_k: int, params: HybridParams, seat: int | None = None) -> list[str]:
        found = chunk_search(
            query_vector=vector,
            top_k=top_k,
            app=APP,
            query_text="fields modules tomatoes",
            hybrid=params,
            seat=seat,
        )
        return paths(found)

    without = search(3, replace(loud, vector_seat=False))
    assert sorted(without) == ["exclude.md", "garden.md", "routers.md"]
    assert search(3, loud) == [*without[:2], "cooking.md"]
    assert search(6, loud, seat=3)[:3] == [*without[:2], "cooking.md"]
    assert search(1, loud) == without[:1]
    # with the vectors weighed 0, they have no say at all
    assert "cooking.md" not in search(3, replace(loud, vector_weight=0.0))


COVERAGE_DOCS = {
    "airships.md": "# Airships\n\nThe zeppelin.",
    "port.md": "# Port\n\nAt night the harbour cranes lift the containers off the ships, while pilots steer other "
    "ships in and out of the port and the crews on the quay change shifts.",
    "docks.md": "# Docks\n\nThe harbour cranes stand still on Sundays, when the docks are closed and the ships wait "
    "offshore for the pilots and the tugboats to come back.",
    "bakery.md": "# Bakery\n\nThe bakers start before dawn, so that the bread is out of the oven when the shop "
    "opens its doors.",
}


def test_a_section_holding_more_of_the_questions_words_outranks_one_holding_a_single_rare_word():
    """Plain BM25 puts the short page with the question's rarest word first; weighed by the share of the
    question's words it holds, a page holding the two others comes first."""
    for name, content in COVERAGE_DOCS.items():
        document_ingest(source_path=name, content=content, app="t-coverage")

    def first(coverage: float) -> str:
        hybrid = replace(LEXICAL_ONLY, term_coverage=coverage)
        return paths(words_only("t-coverage", "zeppelin harbour cranes", top_k=1, hybrid=hybrid))[0]

    assert first(0.0) == "airships.md"
    assert first(0.5) == "port.md"


def test_fused_results_carry_cosine_scores_and_their_documents(hybrid_library):
    vector = vector_of("How do I mount the routers of my modules?")
    (best,) = chunk_search(
        query_vector=vector, top_k=1, app=APP, query_text="include_router", hybrid=HybridParams()
    )
    assert best.document.source_path == "routers.md"
    assert best.document.app == APP
    assert best.score == pytest.approx(float(best_vector_score(best.id, vector)), abs=1e-4)


def best_vector_score(chunk_id, vector):
    from pgvector.django import CosineDistance

    from biblioteca.models import Chunk

    distance = Chunk.objects.annotate(d=CosineDistance("embedding", vector)).get(pk=chunk_id).d
    return 1 - distance


def test_filters_hold_on_both_sides(hybrid_library):
    unrelated = vector_of("tomatoes")
    hits = chunk_search(
        query_vector=unrelated, top_k=10, app=APP, query_text="app.include_router", hybrid=HybridParams()
    )
    assert {c.document.app for c in hits} == {APP}
    other = chunk_search(
        query_vector=unrelated,
        top_k=10,
        app="t-hybrid-other",
        query_text="app.include_router",
        hybrid=HybridParams(),
    )
    assert paths(other) == ["elsewhere.md"]


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("configuracion", "ajustes.md"),
        ("configuración", "ajustes.md"),
        ("catálogo de canciones", "sin-tildes.md"),
        ("intervención", "sin-tildes.md"),
    ],
)
def test_accents_are_folded_on_both_sides(hybrid_library, question, expected):
    hits = chunk_search(
        query_vector=vector_of("weather forecast"), top_k=1, app=APP, query_text=question, hybrid=LEXICAL_ONLY
    )
    assert paths(hits) == [expected]


@pytest.mark.parametrize(
    "question", ["app.include_router", "include_router", "the include router function", "includeRouter"]
)
def test_identifiers_match_whole_and_by_their_parts(hybrid_library, question):
    hits = chunk_search(
        query_vector=vector_of("weather forecast"), top_k=1, app=APP, query_text=question, hybrid=LEXICAL_ONLY
    )
    assert paths(hits) == ["routers.md"]


def test_a_flag_named_by_a_common_word_is_found_by_the_flag(hybrid_library):
    pages = {
        "cli.md": "# Command line\n\n| Option | Description |\n|---|---|\n"
        "| `--open` | Opens the browser when the server starts |\n| `--strict` | Exits when the port is taken |",
        "editor.md": "# Editor\n\nOpen the file, open its settings and open the panel: open tabs stay open until "
        "you close them.",
        "tabs.md": "# Tabs\n\nEvery open tab keeps its place; an open tab that you pin stays open after a restart.",
    }
    for name, content in pages.items():
        document_ingest(source_path=name, content=content, app=APP)
    assert paths(words_only(APP, "What does the --open flag do?", top_k=1)) == ["cli.md"]
    assert paths(words_only(APP, "What does open do here?", top_k=1)) != ["cli.md"]


def test_a_whole_identifier_outweighs_its_parts(hybrid_library):
    document_ingest(
        source_path="models.md",
        app=APP,
        content="# Models\n\nA response model describes what the client gets back from an endpoint.",
    )
    weights = query_term_weights(text="response_model_exclude_unset", app=APP)
    assert weights["responsemodelexcludeunset"] > weights["model"]


def test_the_hybrid_search_is_one_statement(hybrid_library):
    vector = vector_of("How do I mount routers?")
    with CaptureQueriesContext(connection) as captured:
        chunk_search(query_vector=vector, top_k=5, query_text="include_router", hybrid=HybridParams())
    # RETRIEVAL_EF_SEARCH is set (locally) in the search's own transaction; the search is one statement.
    control = ("SAVEPOINT", "RELEASE SAVEPOINT", "BEGIN", "COMMIT", "SELECT set_config('hnsw.")
    statements = [q["sql"] for q in captured.captured_queries if not q["sql"].startswith(control)]
    assert len(statements) == 1


def test_retrieve_follows_the_setting_and_the_argument(hybrid_library):
    unrelated = vector_of("Will it snow in the mountains tomorrow?")
    with override_settings(RETRIEVAL_HYBRID=False):
        off = retrieve("response_model_exclude_unset", top_k=1, filters={"app": APP}, query_vector=unrelated)
        on = retrieve(
            "response_model_exclude_unset", top_k=1, filters={"app": APP}, query_vector=unrelated, hybrid=True
        )
    assert [c.chunk_id for c in off.chunks] == ["weather.md#0"]
    assert [c.chunk_id for c in on.chunks] == ["exclude.md#0"]


def test_documents_know_their_language(hybrid_library):
    languages = dict(Document.objects.filter(app=APP).values_list("source_path", "language"))
    assert languages["cooking.md"] == "en"
    assert languages["ajustes.md"] == "es"
    configs = dict(Document.objects.filter(app=APP).values_list("source_path", "search_config"))
    assert configs["cooking.md"] == "english" and configs["ajustes.md"] == "spanish"


def test_a_language_set_for_the_app_wins_over_detection_and_reindexes_unchanged_documents(hybrid_library):
    with override_settings(DOCUMENT_LANGUAGE_BY_APP={APP: "es"}):
        result = document_ingest(source_path="cooking.md", content=DOCS["cooking.md"], app=APP)
    assert result.status == "unchanged"
    document = Document.objects.get(app=APP, source_path="cooking.md")
    assert (document.language, document.search_config) == ("es", "spanish")
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT search_vector::text FROM biblioteca_chunk WHERE document_id = %s", [document.pk]
        )
        (indexed,) = cursor.fetchone()
    assert "'the'" in indexed  # an English stop word, but not a Spanish one


def test_an_apps_ranking_does_not_move_when_another_app_with_the_same_terms_arrives(hybrid_library):
    """Term statistics are counted within the app searched: another team's docs never reweigh its terms."""
    question = "will rain or snow reach the mountains and the valleys tomorrow? include_router"
    vector = vector_of("What does the application do with its modules?")

    def ranking():
        weights = query_term_weights(text=question, app=APP)
        lexical = chunk_search(
            query_vector=vector, top_k=7, app=APP, query_text=question, hybrid=LEXICAL_ONLY
        )
        fused = chunk_search(
            query_vector=vector, top_k=7, app=APP, query_text=question, hybrid=HybridParams()
        )
        return weights, [(c.id, c.fused) for c in lexical], [(c.id, c.fused) for c in fused]

    before = ranking()
    embedder = get_embedder()
    for i in range(12):
        document_ingest(
            source_path=f"storm-{i}.md",
            app="t-hybrid-crowd",
            embedder=embedder,
            content=f"# Storm {i}\n\nRain and snow in the mountains tomorrow; the valleys stay dry. Every "
            "module calls `app.include_router` once.",
        )

    assert before[0] and ranking() == before
    crowd = query_term_weights(text=question, app="t-hybrid-crowd")
    assert "rain" not in crowd  # in every chunk of that app: dropped there, weighed here
    assert query_term_weights(text=question, app=APP)["rain"] > 0


def test_the_source_type_filter_holds_on_both_sides_and_in_the_term_statistics(hybrid_library):
    document_ingest(
        source_path="faq.md",
        app=APP,
        source_type="faq",
        content="# Routers FAQ\n\nWhy is my `app.include_router` call ignored? Import the router first.",
    )
    for topic in ("billing", "accounts", "exports"):
        document_ingest(
            source_path=f"faq-{topic}.md",
            app=APP,
            source_type="faq",
            content=f"# {topic.title()} FAQ\n\nQuestions people often ask about {topic}, answered briefly.",
        )
    vector = vector_of("Why is my router ignored?")
    docs = chunk_search(
        query_vector=vector,
        top_k=10,
        app=APP,
        source_type="docs",
        query_text="include_router",
        hybrid=HybridParams(),
    )
    assert docs and "faq.md" not in paths(docs)
    faq = chunk_search(
        query_vector=vector,
        top_k=10,
        app=APP,
        source_type="faq",
        query_text="include_router",
        hybrid=HybridParams(),
    )
    assert paths(faq)[0] == "faq.md" and set(paths(faq)) <= {
        "faq.md",
        "faq-billing.md",
        "faq-accounts.md",
        "faq-exports.md",
    }
    assert "ignor" not in query_term_weights(text="ignored", app=APP, source_type="docs")
    assert "ignor" in query_term_weights(text="ignored", app=APP, source_type="faq")


def hybrid_statement(app: str, question: str, **params) -> str:
    """The search statement one hybrid search sends."""
    with CaptureQueriesContext(connection) as captured:
        chunk_search(
            query_vector=vector_of(question),
            top_k=5,
            app=app,
            query_text=question,
            hybrid=HybridParams(**params),
        )
    (sql,) = [q["sql"] for q in captured.captured_queries if "biblioteca_chunk" in q["sql"]]
    return sql


def test_the_full_text_side_reads_the_chunks_own_scope(hybrid_library):
    """Filtering and counting by the chunk's own app and source type: the documents table is read only for the
    configurations in scope, the candidates' language when the scope has several, and the `top_k` returned."""
    vector = vector_of("How do I mount routers?")
    with CaptureQueriesContext(connection) as captured:
        chunk_search(
            query_vector=vector,
            top_k=5,
            app=APP,
            source_type="docs",
            query_text="include_router",
            hybrid=HybridParams(other_language_weight=0.7),
        )
    (sql,) = [q["sql"] for q in captured.captured_queries if "biblioteca_chunk" in q["sql"]]
    assert sql.count("c.app = ") >= 3 and "d.app = " in sql  # vector side, df, scope size; configurations
    assert sql.count("JOIN biblioteca_document") == 2  # a candidate's language, and the final `top_k`
    assert (
        hybrid_statement(APP, "include_router", other_language_weight=1.0).count("JOIN biblioteca_document")
        == 1
    )


def test_a_scope_in_one_language_searches_without_the_language_votes_until_a_second_language_arrives():
    app = "t-hybrid-one-language"
    for name, content in BILINGUAL.items():
        if name.startswith("en/"):
            document_ingest(source_path=name, content=content, app=app)
    question = "How do I change the signing_key?"
    assert "language_votes" in hybrid_statement(app, question, other_language_weight=0.7)  # not counted yet
    assert "language_votes" not in hybrid_statement(app, question, other_language_weight=0.7)
    document_ingest(source_path="es/keys.md", content=BILINGUAL["es/keys.md"], app=app)

    # the first search after it counts two languages, and searches again with the votes: its answer is theirs
    def weighted() -> list[int]:
        hybrid = HybridParams(other_language_weight=0.7)
        hits = chunk_search(
            query_vector=vector_of(question), top_k=5, app=app, query_text=question, hybrid=hybrid
        )
        return [c.id for c in hits]

    with CaptureQueriesContext(connection) as captured:
        first = weighted()
    statements = [q["sql"] for q in captured.captured_queries if "biblioteca_chunk" in q["sql"]]
    assert ["language_votes" in sql for sql in statements] == [False, True]
    assert "language_votes" in hybrid_statement(app, question, other_language_weight=0.7)
    assert first == weighted()


def test_conversational_words_in_a_question_carry_no_weight_even_when_a_page_holds_them(hybrid_library):
    """`still` (cooking.md) and `nadie` (sin-tildes.md) are rare in the app, so they would outweigh the words the
    question is about; they are the user's phrasing, not the docs' vocabulary."""
    english = query_term_weights(text="Why is the sauce still hot?", app=APP)
    assert "still" not in english and english["sauc"] > 0
    spanish = query_term_weights(text="¿Nadie actualiza el catálogo?", app=APP)
    assert "nadi" not in spanish and "nadie" not in spanish and spanish["catalog"] > 0
    fused = words_only(APP, "I still want it, nadie", top_k=3)
    assert [c.lexical_rank for c in fused] == [None, None, None]


def test_a_word_one_language_of_the_app_drops_as_a_function_word_is_no_term_in_the_other():
    """Spanish keeps `how`, `do`, `i` and `the`, English keeps `como`: in an app with both, they matched only the
    pages quoting the other language and, rare there, outranked the page the question is about."""
    app = "t-hybrid-mixed"
    pages = {
        "preguntas.md": "# Preguntas frecuentes\n\nUn usuario escribió en inglés «How do I change the email?» y "
        "la guía le contestó en español que el correo se cambia desde el perfil, como el nombre.",
        "keys.md": "# Signing keys\n\nRotate the signing keys every ninety days from the security settings "
        "page; the old key keeps verifying tokens for one more day.",
        "billing.md": "# Billing\n\nInvoices are sent on the first day of each month to the billing address "
        "saved in the account.",
        "perfil.md": "# Perfil\n\nLa contraseña se cambia desde el perfil, en la sección de seguridad, y la "
        "nueva vale en cuanto se guarda.",
    }
    for name, content in pages.items():
        document_ingest(source_path=name, content=content, app=app)
    assert set(Document.objects.filter(app=app).values_list("language", flat=True)) == {"en", "es"}

    english = query_term_weights(text="How do I rotate the signing keys?", app=app)
    assert {"how", "do", "i", "the"}.isdisjoint(english) and english["rotat"] > 0
    spanish = query_term_weights(text="¿Cómo cambio la contraseña?", app=app)
    assert "como" not in spanish and spanish["contrasen"] > 0
    assert paths(words_only(app, "How do I rotate the signing keys?", top_k=1)) == ["keys.md"]


BILINGUAL = {
    "en/keys.md": "# Secrets\n\nRotate the `signing_key` every ninety days from the security settings page of "
    "the account; the old one keeps verifying the tokens it signed for one more day, so nobody is logged out.",
    "es/keys.md": "# Claves\n\nCambia la `signing_key` cada noventa días.",
    "en/billing.md": "# Billing\n\nInvoices are sent on the first day of each month to the billing address.",
    "es/billing.md": "# Facturación\n\nLas facturas se envían el primer día de cada mes a la dirección de cobro.",
}


@pytest.fixture
def bilingual_library():
    for name, content in BILINGUAL.items():
        document_ingest(source_path=name, content=content, app="t-hybrid-bilingual")
    return "t-hybrid-bilingual"


def first_paths(app: str, question: str, **params) -> list[str]:
    return paths(
        words_only(
            app, question, top_k=2, hybrid=HybridParams(vector_weight=0.0, sentence_weight=0.0, **params)
        )
    )


def test_in_an_app_with_two_languages_the_questions_language_comes_first(bilingual_library):
    """Both pages hold `signing_key`; the Spanish one is shorter, so the words alone put it first."""
    english = "How do I change the signing_key?"
    assert first_paths(bilingual_library, english, other_language_weight=1.0)[0] == "es/keys.md"
    assert first_paths(bilingual_library, english, other_language_weight=0.5)[0] == "en/keys.md"
    spanish = "¿Cómo cambio la signing_key?"
    assert first_paths(bilingual_library, spanish, other_language_weight=0.5)[0] == "es/keys.md"


def test_a_page_in_another_language_than_the_questions_has_no_seat(bilingual_library):
    vector = vector_of("¿Qué día del mes se envían las facturas?")
    (nearest,) = chunk_search(query_vector=vector, top_k=1, app=bilingual_library)
    assert nearest.document.source_path == "es/billing.md"

    def top_two(weight: float) -> list[str]:
        found = chunk_search(
            query_vector=vector,
            top_k=2,
            app=bilingual_library,
            query_text="How do I rotate the signing_key from the security settings?",
            hybrid=HybridParams(lexical_weight=10.0, other_language_weight=weight),
        )
        return paths(found)

    assert top_two(1.0)[1] == "es/billing.md"
    assert "es/billing.md" not in top_two(0.5)


def test_a_question_without_function_words_has_no_language_to_prefer(bilingual_library):
    bare = first_paths(bilingual_library, "signing_key", other_language_weight=1.0)
    assert first_paths(bilingual_library, "signing_key", other_language_weight=0.5) == bare


def test_an_app_in_one_language_ranks_the_same_whatever_the_questions_language():
    for name, content in BILINGUAL.items():
        if name.startswith("en/"):
            document_ingest(source_path=name, content=content, app="t-hybrid-english")
    for question in ("¿Cómo cambio la signing_key de las facturas?", "How do I change the signing_key?"):
        ranked = [
            chunk_search(
                query_vector=vector_of(question),
                top_k=2,
                app="t-hybrid-english",
                query_text=question,
                hybrid=HybridParams(other_language_weight=weight),
            )
            for weight in (1.0, 0.1)
        ]
        assert [(c.pk, c.fused) for c in ranked[0]] == [(c.pk, c.fused) for c in ranked[1]]


FOREIGN = {
    "menu.md": "# Menu\n\nThe set menu is served de facto on the train, the dishes come a la carte while the "
    "coach is en route, and each passenger pays for the meal with a token handed out at the door.",
    "tokens.md": "# Tokens\n\nRefresh the token before it expires, then send the new one with every request.",
    "hostname.md": "# Hostname\n\nThe os module returns the hostname of the machine the server runs on.",
    "billing.md": "# Billing\n\nInvoices are sent on the first day of each month to the billing address.",
}
SPANISH_QUESTION = "¿Cómo renuevo el token de la sesión en el cliente?"


@pytest.fixture
def english_library():
    for name, content in FOREIGN.items():
        document_ingest(source_path=name, content=content, app="t-hybrid-foreign")
    assert set(Document.objects.filter(app="t-hybrid-foreign").values_list("language", flat=True)) == {"en"}
    return "t-hybrid-foreign"


def test_a_question_in_another_language_than_the_docs_has_no_function_words_for_terms(english_library):
    """`english` keeps `de`, `la` and `en`; the docs hold them once (`de facto`), so in a Spanish question they
    were the rarest, heaviest terms, and put first the page that merely holds them."""
    asked_in_nothing = HybridParams(vector_weight=0.0, question_configs=())
    bare = query_term_weights(text=SPANISH_QUESTION, app=english_library, params=asked_in_nothing)
    assert {"de", "la", "en"} <= set(bare)
    assert paths(words_only(english_library, SPANISH_QUESTION, top_k=1, hybrid=asked_in_nothing)) == [
        "menu.md"
    ]

    terms = query_term_weights(text=SPANISH_QUESTION, app=english_library)
    assert {"de", "la", "en"}.isdisjoint(terms) and terms["token"] > 0
    assert paths(words_only(english_library, SPANISH_QUESTION, top_k=1)) == ["tokens.md"]


def test_a_question_in_the_docs_language_keeps_what_another_language_calls_a_function_word(english_library):
    """`os` is a Spanish function word; in an English question it is Node's module."""
    terms = query_term_weights(text="How do I read the hostname with the os module?", app=english_library)
    assert terms["os"] > 0 and terms["hostnam"] > 0
    # a question in no language (an identifier, a word both languages keep) loses nothing either
    assert set(query_term_weights(text="token", app=english_library)) == {"token"}


def test_the_terms_trimming_reads_follow_the_question_languages_setting(english_library, settings):
    """After a search by vectors alone, trimming asks for the question's terms itself, under the same setting."""
    trim = resolve_trim_params()
    assert {"de", "la", "en"}.isdisjoint(
        trim_terms(SPANISH_QUESTION, params=trim, filters={"app": english_library})
    )
    settings.RETRIEVAL_QUESTION_LANGUAGES = []
    assert {"de", "la", "en"} <= set(
        trim_terms(SPANISH_QUESTION, params=trim, filters={"app": english_library})
    )


def test_a_small_app_keeps_the_words_several_of_its_pages_share():
    for i, topic in enumerate(("monthly", "yearly", "refunded")):
        document_ingest(
            source_path=f"invoice-{i}.md",
            app="t-hybrid-small",
            content=f"# Invoices {i}\n\nEvery {topic} invoice is sent as a PDF to the account's billing address.",
        )
    weights = query_term_weights(text="Where is my invoice sent?", app="t-hybrid-small")
    assert weights["invoic"] > 0  # in all three pages: common there, yet the only word that tells them apart


def test_an_app_over_the_counting_cap_is_weighed_as_an_app_of_that_size(hybrid_library, monkeypatch):
    """Counting a large app's chunks on every question would cost more than the search: the count stops at
    SCOPE_SIZE_CAP, and the weights are those of an app that size, whatever the other apps hold."""
    from biblioteca import selectors

    monkeypatch.setattr(selectors, "SCOPE_SIZE_CAP", 4)
    weights = query_term_weights(text="tomatoes", app=APP)
    assert weights["tomato"] == pytest.approx(math.log(1 + (4 - 1 + 0.5) / (1 + 0.5)))  # df 1 of "4"
    document_ingest(source_path="more.md", app="t-hybrid-other", content="# More\n\nTomatoes, and tomatoes.")
    assert query_term_weights(text="tomatoes", app=APP) == weights


SENTENCES_ONLY = HybridParams(
    vector_weight=0.0, lexical_weight=0.0, sentence_weight=1.0, sentence_pool=40, keep_first=False
)
MIXED = (
    "# Travel notes\n\nThe night train leaves the capital at ten and reaches the coast before dawn. "
    "Sleeping cars must be booked a month ahead in summer. The dining car closes at midnight. "
    "Luggage goes on the racks above the seats. Boil the spaghetti for nine minutes before you leave."
)


def test_the_sentence_side_ranks_chunks_by_their_best_sentence(hybrid_library):
    """mixed.md is about trains but one sentence answers the question; its whole vector is diluted by the rest."""
    document_ingest(source_path="mixed.md", content=MIXED, app=APP)
    question = "How many minutes should spaghetti boil?"
    vector = vector_of(question)
    by_chunk = chunk_search(query_vector=vector, top_k=10, app=APP)
    hits = chunk_search(query_vector=vector, top_k=10, app=APP, query_text=question, hybrid=SENTENCES_ONLY)
    stored = sentences_for_chunks([c.id for c in hits])
    best = {c.id: float((stored[c.id].vectors @ vector).max()) for c in hits if c.id in stored}
    ranked = [c.id for c in hits if c.sentence_rank is not None]
    assert ranked == sorted(best, key=best.__getitem__, reverse=True)
    assert [c.sentence_rank for c in hits[: len(ranked)]] == list(range(1, len(ranked) + 1))
    assert paths(by_chunk).index("mixed.md") > paths(hits).index("mixed.md")


def test_a_sentence_weight_of_zero_leaves_the_sentence_side_out(hybrid_library):
    vector = vector_of("How long should spaghetti cook?")
    off = HybridParams(sentence_weight=0.0)
    hits = chunk_search(query_vector=vector, top_k=5, app=APP, query_text="spaghetti", hybrid=off)
    assert hits and all(c.sentence_rank is None for c in hits)
    on = chunk_search(query_vector=vector, top_k=5, app=APP, query_text="spaghetti", hybrid=HybridParams())
    assert on[0].sentence_rank is not None


def test_the_sentence_side_ranks_only_the_best_of_what_the_other_sides_brought(hybrid_library):
    """It reads the sentences of the `sentence_pool` chunks fused best so far, no others: its cost is bounded."""
    vector = vector_of("How long should spaghetti cook?")
    pool = HybridParams(sentence_pool=1)
    hits = chunk_search(query_vector=vector, top_k=10, app=APP, query_text="spaghetti", hybrid=pool)
    assert [c.sentence_rank for c in hits].count(1) == 1 and all(c.sentence_rank in (None, 1) for c in hits)


def test_the_sentence_side_never_takes_first_place_from_what_vectors_and_words_agree_on(hybrid_library):
    document_ingest(source_path="mixed.md", content=MIXED, app=APP)
    vector = vector_of("How many minutes should spaghetti boil?")
    question = "tomatoes"  # the words side points elsewhere: garden.md is first by vectors and words together
    two_sides = chunk_search(
        query_vector=vector, top_k=5, app=APP, query_text=question, hybrid=HybridParams(sentence_weight=0.0)
    )
    loud = HybridParams(sentence_weight=100.0)
    free = chunk_search(
        query_vector=vector, top_k=5, app=APP, query_text=question, hybrid=replace(loud, keep_first=False)
    )
    assert free[0].id != two_sides[0].id, "the fixture: the best sentence is not in the best chunk"
    kept = chunk_search(query_vector=vector, top_k=5, app=APP, query_text=question, hybrid=loud)
    assert kept[0].id == two_sides[0].id
    assert [c.id for c in kept[1:]] == [c.id for c in free if c.id != two_sides[0].id][:4]


def test_a_negative_term_coverage_is_a_configuration_error(settings):
    settings.RETRIEVAL_HYBRID_TERM_COVERAGE = -0.5
    assert [m.id for m in hybrid_search_settings()] == ["biblioteca.E007"]
    settings.RETRIEVAL_HYBRID_TERM_COVERAGE = 0.0
    assert hybrid_search_settings() == []


def test_a_question_language_postgresql_cannot_stem_is_a_configuration_error(settings):
    settings.RETRIEVAL_QUESTION_LANGUAGES = ["es", "xx"]
    (error,) = hybrid_search_settings()
    assert error.id == "biblioteca.E009" and "'xx'" in error.msg
    settings.RETRIEVAL_QUESTION_LANGUAGES = ["es", "de"]
    assert hybrid_search_settings() == []


@pytest.mark.parametrize("weight", [0.0, -0.5, 1.5])
def test_a_language_weight_outside_its_range_is_a_configuration_error(settings, weight):
    settings.RETRIEVAL_HYBRID_OTHER_LANGUAGE_WEIGHT = weight
    assert [m.id for m in hybrid_search_settings()] == ["biblioteca.E006"]
    settings.RETRIEVAL_HYBRID_OTHER_LANGUAGE_WEIGHT = 1.0
    assert hybrid_search_settings() == []


@pytest.mark.parametrize("share", [-0.25, 1.5])
def test_a_cross_language_words_share_outside_its_range_is_a_configuration_error(settings, share):
    settings.RETRIEVAL_HYBRID_CROSS_LANGUAGE_LEXICAL_SHARE = share
    assert [m.id for m in hybrid_search_settings()] == ["biblioteca.E018"]
    for good in (0.0, 1.0):
        settings.RETRIEVAL_HYBRID_CROSS_LANGUAGE_LEXICAL_SHARE = good
        assert hybrid_search_settings() == []


@pytest.mark.parametrize(
    "name", ["CANDIDATES", "RRF_K", "SENTENCE_POOL", "VECTOR_WEIGHT", "LEXICAL_WEIGHT", "SENTENCE_WEIGHT"]
)
def test_a_negative_count_weight_or_fusion_constant_is_a_configuration_error(settings, name):
    setattr(settings, f"RETRIEVAL_HYBRID_{name}", -1)
    (error,) = hybrid_search_settings()
    assert error.id == "biblioteca.E012" and f"RETRIEVAL_HYBRID_{name}" in error.msg
    setattr(settings, f"RETRIEVAL_HYBRID_{name}", 0)
    assert hybrid_search_settings() == []


def test_a_document_language_postgresql_cannot_stem_is_warned_of(settings):
    settings.DOCUMENT_LANGUAGE_BY_APP = {"guide": "english", "ayuda": "es"}
    (warning,) = hybrid_search_settings()
    assert warning.id == "biblioteca.W004" and "'guide' the language 'english'" in warning.msg
    assert "ayuda" not in warning.msg
    settings.DOCUMENT_LANGUAGE_BY_APP = {"guide": "en", "ayuda": "es"}
    assert hybrid_search_settings() == []
