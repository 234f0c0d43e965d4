"""answering.ask end to end: the real library in PostgreSQL+pgvector, the real embedder, the fake LLM server."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from biblioteca.ingest import document_ingest
from oraculo.answering import NOT_FOUND, AppNotAllowed, ask, extractive_answer, question_language
from oraculo.api.serializers import ask_response_data
from oraculo.models import AnswerMode, OraculoQuery, WidgetKey
from tests.oraculo.fake_llm import MODEL

pytestmark = pytest.mark.django_db

QUESTION = "How do I reset my password?"


@pytest.fixture
def widget_key(library):
    return WidgetKey.objects.create(
        name="help site", app=library, allowed_origins=["https://help.example.com"]
    )


def test_llm_answer_is_returned_and_logged(library, fake_llm):
    user = get_user_model().objects.create_user("ana", is_staff=True)
    result = ask(QUESTION, app=library, user=user, page_url="https://help.example.com/account")

    assert result.answer_mode == AnswerMode.LLM
    assert result.sources, "the fixture library answers this"
    assert f"According to {result.sources[0].doc_line} [1]" in result.answer
    sent = fake_llm.requests[0]["body"]["messages"][0]["content"]
    assert all(source.content in sent for source in result.sources)
    assert "password" in result.sources[0].text.lower()

    row = OraculoQuery.objects.get(pk=result.query_id)
    assert row.question == QUESTION and row.answer == result.answer and row.answer_mode == "llm"
    assert row.app == library and row.source_type == ""
    assert row.chunk_ids == [s.chunk_id for s in result.sources]
    assert row.chunk_scores == [round(s.score, 4) for s in result.sources]
    assert row.trimmed is False and row.trim_params == {}
    assert row.tokens_in_context == row.tokens_before == result.tokens_in_context > 0
    assert set(row.latency_ms) == {"embedding", "search", "trim", "llm", "total"}
    assert row.latency_ms["trim"] is None and row.latency_ms["llm"] > 0
    assert row.latency_ms["total"] >= row.latency_ms["llm"] + row.latency_ms["search"]
    assert row.llm_model == MODEL and row.llm_error == ""
    assert row.user == user and row.widget_key is None
    assert row.page_url == "https://help.example.com/account"
    assert row.helpful is None and row.feedback_at is None


def test_trimming_follows_the_settings_and_is_logged(library, settings):
    settings.RETRIEVAL_TRIM = True
    settings.RETRIEVAL_TRIM_THRESHOLD = 0.85
    result = ask(QUESTION, app=library)

    row = OraculoQuery.objects.get(pk=result.query_id)
    assert row.trimmed is True and result.trimmed is True
    assert row.trim_params["threshold"] == 0.85
    assert {"window", "min_sentences"} <= set(row.trim_params)
    assert row.latency_ms["trim"] is not None
    assert row.tokens_in_context == result.tokens_in_context <= row.tokens_before == result.tokens_before


@pytest.mark.parametrize(
    ("mode", "error"),
    [("slow", "did not answer within 1.0s"), ("error", "HTTP 500"), ("empty", "empty answer")],
)
def test_llm_failure_falls_back_to_an_extractive_answer(library, fake_llm, mode, error):
    fake_llm.reset(mode)
    result = ask(QUESTION, app=library)

    assert result.answer_mode == AnswerMode.EXTRACTIVE
    assert result.answer == extractive_answer(question=QUESTION, chunks=result.sources)
    row = OraculoQuery.objects.get(pk=result.query_id)
    assert row.answer_mode == "extractive" and error in row.llm_error
    assert row.llm_model == MODEL
    assert row.latency_ms["llm"] is not None
    if mode == "slow":
        assert row.latency_ms["llm"] >= 900


def test_without_an_llm_the_answer_is_extractive_with_cited_passages(library, fake_llm_server):
    fake_llm_server.reset()
    result = ask(QUESTION, app=library)

    assert fake_llm_server.requests == []
    assert result.answer_mode == "extractive" and result.llm_error == ""
    first, second = result.sources[:2]
    assert result.answer.startswith(f"[1] {first.title}")
    assert first.text.strip() in result.answer and f"\n\n[2] {second.title}" in result.answer
    assert "[4]" not in result.answer
    row = OraculoQuery.objects.get(pk=result.query_id)
    assert row.latency_ms["llm"] is None and row.llm_model == "" and row.llm_error == ""


def test_widget_key_scopes_the_app_and_is_logged(library, widget_key, fake_llm_server):
    result = ask(QUESTION, widget_key=widget_key)
    row = OraculoQuery.objects.get(pk=result.query_id)
    assert row.app == library and row.widget_key == widget_key and row.user is None
    assert all(s.url.startswith("https://docs.example.com/") for s in result.sources)

    assert ask(QUESTION, app=library, widget_key=widget_key).query_id
    with pytest.raises(AppNotAllowed, match=f"app '{library}' only, not 'billing-site'"):
        ask(QUESTION, app="billing-site", widget_key=widget_key)


def test_source_type_filters_the_passages(library):
    result = ask("¿Cómo restablezco mi contraseña?", app=library, source_type="es")
    assert result.sources and all("/es/" in s.url for s in result.sources)
    assert OraculoQuery.objects.get(pk=result.query_id).source_type == "es"


def test_nothing_found_answers_in_the_questions_language_without_calling_the_llm(library, fake_llm):
    result = ask("¿Cuánto cuesta el plan anual?", app="an-app-with-no-docs")
    assert result.sources == [] and result.answer == NOT_FOUND["es"]
    assert ask("How much is the yearly plan?", app="an-app-with-no-docs").answer == NOT_FOUND["en"]
    assert fake_llm.requests == []


@pytest.mark.parametrize(
    ("question", "language"),
    [
        ("How do I reset my password?", "en"),
        ("¿Cómo restablezco mi contraseña?", "es"),
        ("Where can I download my invoices?", "en"),
        ("Dónde están las facturas de la cuenta", "es"),
    ],
)
def test_question_language(question, language):
    assert question_language(question) == language


def test_readers_see_titles_and_headings_without_their_anchors():
    content = (
        "# Cuentas { #accounts }\n\nTodo sobre tu cuenta.\n\n"
        '## Restablecer la contraseña <span id="reset"></span>\n\n'
        "Pulsa «Olvidé mi contraseña» en la pantalla de entrada y sigue el enlace que llega por correo.\n"
    )
    document_ingest(source_path="cuentas.md", content=content, app="anclas")
    result = ask("¿Cómo restablezco la contraseña?", app="anclas")

    (source,) = result.sources  # the page's two chunks, grown into one passage
    # stored and searched whole: an anchor's words help find the page
    assert source.title == "Cuentas { #accounts }" and source.heading_path == ["# Cuentas { #accounts }"]
    assert source.shown_title == "Cuentas" and source.shown_heading_path == ["# Cuentas"]
    assert "\n\n## Restablecer la contraseña\n\nPulsa" in source.text
    assert result.answer.startswith("[1] Cuentas\n")
    shown = ask_response_data(result)["sources"][0]
    assert shown["title"] == "Cuentas" and shown["heading_path"] == ["# Cuentas"]
    assert shown["content"].startswith("[Doc: Cuentas]\n")
    assert source.as_dict()["title"] == "Cuentas"
    for text in (result.answer, shown["content"], shown["html"]):
        assert "{ #" not in text and "span" not in text
