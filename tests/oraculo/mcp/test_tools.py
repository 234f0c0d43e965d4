"""The tools over Streamable HTTP at /mcp, driven by the official SDK's client (mcp 2.x) against pytest-django's
live server, in the stateless revision 2026-07-28 and the 2025 stateless mode."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command
from mcp.shared.exceptions import MCPError

from biblioteca.models import Chunk
from oraculo.models import Channel, EvalRun, OraculoQuery
from tests.oraculo.fake_llm import MODEL
from tests.oraculo.mcp.conftest import MODES, connect, failure, run, staff_token

pytestmark = pytest.mark.django_db(transaction=True)

EVAL = ("oraculo.add_evalrun",)
QUESTION = "How do I reset my password?"
SEED_SUMMARY = [
    "questions",
    "top_k",
    "trim_threshold",
    "trim_window",
    "avg_tokens_baseline",
    "avg_tokens_trim",
    "token_reduction_pct",
    "avg_overlap_vs_baseline",
]
SEED_BASELINE = ["chunk_ids", "top_score", "tokens", "tokens_before"]
SEED_TRIM = [*SEED_BASELINE, "overlap_vs_baseline"]


@pytest.mark.parametrize("protocol", list(MODES))
def test_staff_with_the_permission_see_four_tools_with_schemas_and_annotations(mcp_url, protocol):
    _, token = staff_token("evaluator", *EVAL)
    listed = run(connect(mcp_url, token=token, mode=MODES[protocol]), lambda c: c.list_tools())
    tools = {tool.name: tool for tool in listed.tools}
    assert sorted(tools) == ["bib_apps", "bib_ask", "bib_eval_retrieval", "bib_eval_run"]
    assert tools["bib_ask"].input_schema["properties"]["top_k"] == {
        "description": "Passages to return.",
        "type": "integer",
        "minimum": 1,
        "maximum": 20,
        "default": 5,
    }
    assert {"passages", "tokens_in_context", "tokens_before", "trimmed", "answer"} <= set(
        tools["bib_ask"].output_schema["properties"]
    )
    assert tools["bib_apps"].annotations.read_only_hint is True
    assert tools["bib_eval_run"].annotations.read_only_hint is True
    assert tools["bib_ask"].annotations.read_only_hint is False  # answer: true writes the question log
    assert "LLM" in tools["bib_eval_retrieval"].description


@pytest.mark.parametrize("protocol", list(MODES))
def test_staff_without_the_permission_neither_see_nor_call_the_evaluation_tools(mcp_url, protocol):
    _, token = staff_token("reader")

    async def use(client):
        listed = await client.list_tools()
        return listed, await client.call_tool("bib_eval_retrieval", {"questions": [QUESTION]})

    error = failure(connect(mcp_url, token=token, mode=MODES[protocol]), use)
    assert isinstance(error, MCPError) and error.code == -32602
    assert error.message == "Unknown tool: 'bib_eval_retrieval'"
    assert not EvalRun.objects.exists()


@pytest.mark.parametrize("protocol", list(MODES))
def test_ask_with_and_without_trimming_and_with_filters(mcp_url, ingested, protocol):
    _, token = staff_token("agent")

    async def use(client):
        plain = await client.call_tool("bib_ask", {"query": QUESTION, "top_k": 3, "trim": False})
        trimmed = await client.call_tool("bib_ask", {"query": QUESTION, "top_k": 3, "trim": True})
        elsewhere = await client.call_tool("bib_ask", {"query": QUESTION, "app": "no-such-app"})
        spanish = await client.call_tool("bib_ask", {"query": QUESTION, "app": ingested, "source_type": "es"})
        english = await client.call_tool(
            "bib_ask", {"query": QUESTION, "app": ingested, "source_type": "en", "hybrid": False, "top_k": 1}
        )
        return plain, trimmed, elsewhere, spanish, english

    plain, trimmed, elsewhere, spanish, english = run(
        connect(mcp_url, token=token, mode=MODES[protocol]), use
    )
    assert not plain.is_error and not trimmed.is_error
    full = plain.structured_content
    assert full["trimmed"] is False and full["tokens_in_context"] == full["tokens_before"] > 0
    top = full["passages"][0]
    assert set(top) == {
        "id",
        "chunk_id",
        "document_id",
        "document",
        "title",
        "heading_path",
        "url",
        "score",
        "content",
    }
    assert (top["document"], top["title"], top["url"]) == (
        "account.md",
        "Managing your account",
        "https://docs.example.com/en/account",
    )
    assert "Forgot password" in top["content"]
    cut = trimmed.structured_content
    assert cut["trimmed"] is True and cut["tokens_before"] == full["tokens_before"]
    assert cut["tokens_in_context"] < full["tokens_in_context"]
    assert "expires after 30 minutes" in cut["passages"][0]["content"]
    assert plain.content[0].text.startswith("[1] id ")  # the readable block, not the JSON again
    assert elsewhere.structured_content["passages"] == [] and elsewhere.content[0].text.startswith(
        "No passage"
    )
    assert spanish.structured_content["passages"] == []  # only English documents were ingested
    assert [p["document"] for p in english.structured_content["passages"]] == ["account.md"]
    assert not OraculoQuery.objects.exists()  # searching is not asking


def test_trim_absent_follows_the_setting(mcp_url, ingested, settings):
    _, token = staff_token("agent")
    settings.RETRIEVAL_TRIM = True
    result = run(connect(mcp_url, token=token), lambda c: c.call_tool("bib_ask", {"query": QUESTION}))
    assert result.structured_content["trimmed"] is True


@pytest.mark.parametrize("protocol", list(MODES))
def test_answer_true_answers_with_the_llm_and_logs_the_question_as_mcp(mcp_url, ingested, fake_llm, protocol):
    user, token = staff_token("agent")

    async def use(client):
        return await client.call_tool(
            "bib_ask", {"query": QUESTION, "answer": True, "app": ingested, "top_k": 2}
        )

    result = run(connect(mcp_url, token=token, mode=MODES[protocol]), use)
    answer = result.structured_content["answer"]
    assert (
        answer["mode"] == "llm" and answer["llm_model"] == MODEL and answer["text"].startswith("According to")
    )
    assert len(result.structured_content["passages"]) == 2
    assert result.content[0].text.startswith("Answer (llm):\nAccording to")
    logged = OraculoQuery.objects.get(pk=answer["query_id"])
    assert (logged.channel, logged.user, logged.app, logged.question) == (
        Channel.MCP,
        user,
        ingested,
        QUESTION,
    )
    assert logged.answer == answer["text"] and len(logged.chunk_ids) == 2


def test_bib_apps_lists_apps_source_types_counts_and_the_model(mcp_url, ingested):
    _, token = staff_token("agent")
    result = run(connect(mcp_url, token=token), lambda c: c.call_tool("bib_apps"))
    data = result.structured_content
    stored = set(Chunk.objects.values_list("embedding_model", flat=True))
    assert stored == {data["embedding_model"]} and data["embedding_dimensions"] == 384
    [app] = data["apps"]
    [scope] = app["source_types"]
    assert (app["app"], scope["source_type"], scope["languages"]) == (ingested, "en", ["en"])
    assert app["documents"] == scope["documents"] == 3 and app["chunks"] == scope["chunks"] > 3
    assert f"app {ingested}: 3 documents" in result.content[0].text


def test_eval_inline_returns_the_seed_report_key_by_key_as_the_command_prints_it(mcp_url, ingested):
    _, token = staff_token("evaluator", *EVAL)
    args = {"questions": [QUESTION, "When are invoices sent?"], "app": ingested, "top_k": 3, "trim_window": 1}
    result = run(connect(mcp_url, token=token), lambda c: c.call_tool("bib_eval_retrieval", args))
    assert not result.is_error, result.content
    report = result.structured_content
    out = io.StringIO()
    call_command(
        "eval_retrieval", "--question", QUESTION, "--question", "When are invoices sent?", "--app", ingested,
        "--top-k", "3", "--trim-window", "1", "--format", "json", stdout=out, verbosity=0,
    )  # fmt: skip
    printed = json.loads(out.getvalue())
    assert list(report) == list(printed) == ["summary", "results"]
    assert list(report["summary"]) == list(printed["summary"])
    assert list(report["summary"])[: len(SEED_SUMMARY)] == SEED_SUMMARY
    assert report["summary"]["questions"] == 2 and report["summary"]["top_k"] == 3
    for ours, theirs in zip(report["results"], printed["results"]):
        assert list(ours) == list(theirs) and list(ours)[:2] == ["question", "variants"]
        assert list(ours["variants"]) == ["baseline", "trim"]
        for name, seed_keys in (("baseline", SEED_BASELINE), ("trim", SEED_TRIM)):
            assert list(ours["variants"][name]) == list(theirs["variants"][name])
            assert [k for k in ours["variants"][name] if k in seed_keys] == seed_keys
            for key in ("chunk_ids", "tokens", "tokens_before", "top_score"):
                assert ours["variants"][name][key] == theirs["variants"][name][key], (name, key)
    assert not EvalRun.objects.exists()  # inline: nothing queued


def test_eval_without_questions_takes_the_last_real_ones_and_can_leave_agents_out(mcp_url, ingested):
    from oraculo.answering import ask

    _, token = staff_token("evaluator", *EVAL, "oraculo.view_oraculoquery")
    ask("When are invoices sent?", app=ingested, channel=Channel.WIDGET)
    ask(QUESTION, app=ingested, channel=Channel.MCP)

    async def use(client):
        every = await client.call_tool("bib_eval_retrieval", {"app": ingested})
        people = await client.call_tool(
            "bib_eval_retrieval", {"app": ingested, "channels": ["widget", "api"]}
        )
        return every, people

    every, people = run(connect(mcp_url, token=token), use)
    assert [r["question"] for r in every.structured_content["results"]] == [
        QUESTION,
        "When are invoices sent?",
    ]
    assert [r["question"] for r in people.structured_content["results"]] == ["When are invoices sent?"]


def test_eval_of_the_log_needs_the_permission_to_view_queries(mcp_url, ingested):
    _, token = staff_token("evaluator", *EVAL)
    result = run(connect(mcp_url, token=token), lambda c: c.call_tool("bib_eval_retrieval", {}))
    assert result.is_error
    assert result.content[0].text.startswith(
        "Evaluating the question log needs the permission to view queries"
    )


def test_eval_beyond_the_inline_limit_is_queued_run_by_a_worker_and_read_back(mcp_url, ingested, settings):
    from django_tasks_db.management.commands import db_worker

    settings.MCP_EVAL_INLINE_MAX = 1
    _, token = staff_token("evaluator", *EVAL)
    questions = [
        QUESTION,
        {"question": "When are invoices sent?", "expected_answer": "first day of each month"},
    ]
    args = {"questions": questions, "app": ingested}
    queued = run(connect(mcp_url, token=token), lambda c: c.call_tool("bib_eval_retrieval", args))
    status = queued.structured_content
    run_id = status["id"]
    assert (status["status"], status["progress"], status["total"]) == ("queued", 0, 2)
    assert status["admin_url"] == f"{mcp_url.removesuffix('/mcp')}/admin/oraculo/evalrun/{run_id}/change/"
    assert "bib_eval_run" in queued.content[0].text

    call_command(db_worker.Command(), "--batch", "--no-startup-delay", "--interval", "0", verbosity=0)

    done = run(connect(mcp_url, token=token), lambda c: c.call_tool("bib_eval_run", {"id": run_id}))
    report = done.structured_content
    assert (report["status"], report["progress"]) == ("done", 2)
    assert list(report["summary"])[: len(SEED_SUMMARY)] == SEED_SUMMARY
    assert [r["question"] for r in report["results"]] == [QUESTION, "When are invoices sent?"]
    assert report["results"][1]["expected_answer"] == "first day of each month"
    assert report["summary"]["labelled"] == 1


def test_a_run_of_someone_else_is_not_found(mcp_url, ingested):
    from oraculo.evaluation.params import eval_params_build
    from oraculo.evaluation.questions import LabelledQuestion
    from oraculo.evaluation.services import eval_run_create

    owner, _ = staff_token("owner", *EVAL)
    _, token = staff_token("other", *EVAL)
    theirs = eval_run_create(
        questions=[LabelledQuestion(QUESTION)], params=eval_params_build(), created_by=owner
    )
    result = run(connect(mcp_url, token=token), lambda c: c.call_tool("bib_eval_run", {"id": theirs.pk}))
    assert result.is_error
    assert result.content[0].text == f"No evaluation run #{theirs.pk} that you may read.\n- id: no such run"


@pytest.mark.parametrize("protocol", list(MODES))
def test_bad_arguments_are_tool_errors_with_a_message_per_field(mcp_url, protocol):
    _, token = staff_token("evaluator", *EVAL)

    async def use(client):
        ask = await client.call_tool(
            "bib_ask", {"query": 42, "top_k": 0, "trim_threshold": 3, "answer": "maybe", "colour": "red"}
        )
        evaluation = await client.call_tool(
            "bib_eval_retrieval", {"questions": ["ok", {"question": " "}], "variants": ["both"], "top_k": 21}
        )
        missing = await client.call_tool("bib_eval_run", {})
        return ask, evaluation, missing

    ask, evaluation, missing = run(connect(mcp_url, token=token, mode=MODES[protocol]), use)
    assert ask.is_error and evaluation.is_error and missing.is_error
    assert ask.content[0].text.splitlines() == [
        "Invalid arguments:",
        "- query: Must be text (a JSON string), not a number.",
        "- top_k: Ensure this value is greater than or equal to 1.",
        "- trim_threshold: Ensure this value is less than or equal to 1.0.",
        "- answer: Must be a valid boolean.",
        "- colour: Unknown field. Accepted fields: query, top_k, trim, hybrid, trim_threshold, trim_window, "
        "trim_min_sentences, app, source_type, answer.",
    ]
    lines = evaluation.content[0].text.splitlines()
    assert lines[0] == "Invalid arguments:"
    assert "- questions[1]: A question cannot be blank." in lines
    assert '- variants[0]: "both" is not a valid choice.' in lines
    assert "- top_k: Ensure this value is less than or equal to 20." in lines
    assert missing.content[0].text == "Invalid arguments:\n- id: This field is required."


def test_an_argument_sent_as_its_schema_default_null_is_the_argument_left_out(mcp_url, ingested):
    """Clients may send every default the input schemas declare."""
    _, token = staff_token("evaluator", *EVAL)

    async def use(client):
        tools = {t.name: t for t in (await client.list_tools()).tools}

        def nulls(name: str) -> dict:
            properties = tools[name].input_schema["properties"]
            return {
                key: None for key, spec in properties.items() if "default" in spec and spec["default"] is None
            }

        ask_nulls, eval_nulls = nulls("bib_ask"), nulls("bib_eval_retrieval")
        assert {"app", "source_type", "trim"} <= set(ask_nulls) and {"last", "variants", "top_k"} <= set(
            eval_nulls
        )
        asked = await client.call_tool("bib_ask", {**ask_nulls, "query": QUESTION})
        plain = await client.call_tool("bib_ask", {"query": QUESTION})
        evaluated = await client.call_tool(
            "bib_eval_retrieval", {**eval_nulls, "questions": [QUESTION], "app": ingested}
        )
        baseline = await client.call_tool(
            "bib_eval_retrieval", {"questions": [QUESTION], "app": ingested, "variants": ["baseline"]}
        )
        return asked, plain, evaluated, baseline

    asked, plain, evaluated, baseline = run(connect(mcp_url, token=token), use)
    assert not asked.is_error and not evaluated.is_error, (asked.content, evaluated.content)
    assert asked.structured_content == plain.structured_content
    assert evaluated.structured_content["summary"]["questions"] == 1
    assert not baseline.is_error and "None" not in baseline.content[0].text
    assert "avg tokens baseline" in baseline.content[0].text


def test_evaluation_rules_broken_are_named_by_field(mcp_url, ingested):
    _, token = staff_token("evaluator", *EVAL, "oraculo.view_oraculoquery")

    async def use(client):
        both = await client.call_tool("bib_eval_retrieval", {"questions": [QUESTION], "channels": ["mcp"]})
        empty = await client.call_tool("bib_eval_retrieval", {"app": ingested, "channels": ["mcp"]})
        return both, empty

    both, empty = run(connect(mcp_url, token=token), use)
    assert both.is_error and empty.is_error
    assert both.content[0].text == (
        "Invalid arguments:\n- channels picks recent questions; it cannot be combined with explicit questions "
        "or a questions file."
    )
    assert empty.content[0].text.startswith(
        f"Invalid arguments:\n- questions: No questions found for app '{ingested}'"
    )
    assert not EvalRun.objects.exists()


@pytest.mark.parametrize("protocol", list(MODES))
def test_an_unknown_tool_is_a_json_rpc_error(mcp_url, protocol):
    _, token = staff_token("agent")
    error = failure(
        connect(mcp_url, token=token, mode=MODES[protocol]), lambda c: c.call_tool("bib_delete_all")
    )
    assert isinstance(error, MCPError) and (error.code, error.message) == (
        -32602,
        "Unknown tool: 'bib_delete_all'",
    )


@pytest.mark.parametrize("protocol", list(MODES))
def test_missing_wrong_and_revoked_tokens_are_refused_with_a_bearer_challenge(mcp_url, protocol):
    from oraculo.mcp.tokens import token_revoke

    _, token = staff_token("agent")
    from django_mcpz.bearer_tokens.models import Token

    token_revoke(token_id=Token.objects.get().pk)
    for sent, challenge in (
        (None, "Bearer"),
        ("mcp_not-a-token", 'Bearer error="invalid_token"'),
        (token, 'Bearer error="invalid_token"'),
    ):
        seen: list = []
        failure(connect(mcp_url, token=sent, mode=MODES[protocol], seen=seen), lambda c: c.list_tools())
        assert [(r.status_code, r.headers["WWW-Authenticate"]) for r in seen][:1] == [(401, challenge)]


def test_a_token_of_a_user_who_is_not_staff_is_refused(mcp_url):
    _, token = staff_token("visitor", is_staff=False)
    seen: list = []
    error = failure(connect(mcp_url, token=token, seen=seen), lambda c: c.list_tools())
    assert seen[0].status_code == 403
    assert str(error) == "MCP tools are for staff users; this token's user is not staff."


@pytest.mark.parametrize("protocol", list(MODES))
def test_a_browser_origin_that_is_not_allowed_is_refused_before_the_token_is_read(mcp_url, protocol):
    _, token = staff_token("agent")
    seen: list = []
    error = failure(
        connect(
            mcp_url, token=token, mode=MODES[protocol], headers={"Origin": "https://evil.example"}, seen=seen
        ),
        lambda c: c.list_tools(),
    )
    assert seen[0].status_code == 403 and str(error) == "Invalid Origin header"
    allowed = run(
        connect(mcp_url, token=token, mode=MODES[protocol], headers={"Origin": "http://localhost:8000"}),
        lambda c: c.list_tools(),
    )
    assert allowed.tools
    from django_mcpz.bearer_tokens.models import Token

    assert Token.objects.get().last_used_at is not None  # only the allowed origin's request got as far


def test_requests_are_throttled_per_token(mcp_url, settings):
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {**settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"], "mcp_token": "3/min"},
    }
    _, token = staff_token("busy")
    _, other = staff_token("calm")

    async def use(client):
        for _ in range(5):
            await client.call_tool("bib_apps")

    seen: list = []
    error = failure(connect(mcp_url, token=token, seen=seen), use)
    assert [r.status_code for r in seen] == [200, 200, 200, 429]
    assert 1 <= int(seen[-1].headers["Retry-After"]) <= 60
    assert "Too many requests with this token" in str(error)
    assert (
        run(connect(mcp_url, token=other), lambda c: c.call_tool("bib_apps")).structured_content is not None
    )


def test_an_embedding_model_that_is_down_is_a_tool_error_not_a_500(mcp_url, ingested, settings):
    from tests.conftest import free_port

    settings.EMBEDDING_BACKEND = "openai"
    settings.EMBEDDING_MODEL = "gone"
    settings.EMBEDDING_BASE_URL = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    settings.EMBEDDING_MAX_RETRIES = 0
    settings.QUERY_VECTOR_CACHE = False
    _, token = staff_token("agent")
    seen: list = []
    result = run(
        connect(mcp_url, token=token, seen=seen), lambda c: c.call_tool("bib_ask", {"query": "anything new"})
    )
    assert (
        result.is_error
        and result.content[0].text
        == "The embedding model is unavailable. Try again shortly.\nTry again in 30 s."
    )
    assert {r.status_code for r in seen} == {200}


def test_bib_ask_schema_names_every_option_of_the_search_api():
    """A retrieval option that the search API gains must show in bib_ask's schema too (the serializer, which
    bib_ask shares, accepts it already)."""
    from biblioteca.api.serializers import SearchRequestSerializer
    from oraculo.mcp.schemas import AskArgs, input_schema

    assert set(input_schema(AskArgs)["properties"]) == {*SearchRequestSerializer().fields, "answer"}


def test_a_body_nested_too_deeply_for_the_decoder_is_a_parse_error_not_a_500(client):
    _, token = staff_token("agent")
    nested = "[" * 100_000 + "]" * 100_000
    body = '{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "bib_apps", "arguments": '
    response = client.post(
        "/mcp",
        body + '{"app": ' + nested + "}}}",
        content_type="application/json",
        HTTP_ACCEPT="application/json, text/event-stream",
        HTTP_AUTHORIZATION=f"Bearer {token}",
        HTTP_MCP_PROTOCOL_VERSION="2025-11-25",
    )
    assert response.status_code == 400
    assert response.json()["error"] == {"code": -32700, "message": "Parse error: JSON nested too deeply."}
