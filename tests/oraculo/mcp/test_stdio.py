"""`manage.py mcp_stdio` in a real subprocess on the suite's database, driven by the official SDK's stdio client
in both eras: the tool definitions, checks and errors are those of /mcp."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import Permission, User
from django.db import connection
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError

from oraculo.models import Channel, OraculoQuery
from tests.oraculo.mcp.conftest import MODES, run
from tests.oraculo.test_faults import db_proxy, process_env  # noqa: F401 (the fixture)

pytestmark = pytest.mark.django_db(transaction=True)

ROOT = Path(__file__).resolve().parents[3]
QUESTION = "How do I reset my password?"


def stdio_client(url: str, username: str, mode: str) -> Client:
    params = StdioServerParameters(
        command=sys.executable,
        args=["manage.py", "mcp_stdio", "--user", username],
        env=process_env(url, EMBEDDING_THREADS="1"),
        cwd=ROOT,
    )
    return Client(params, mode=mode, read_timeout_seconds=120)


@pytest.mark.parametrize("protocol", list(MODES))
def test_stdio_serves_the_same_tools_checks_and_log(db_proxy, ingested, protocol):  # noqa: F811
    _, url = db_proxy
    user = User.objects.create_user("local-agent", is_staff=True)

    async def session(client: Client):
        listed = await client.list_tools()
        trimmed = await client.call_tool(
            "bib_ask", {"query": QUESTION, "top_k": 2, "trim": True, "app": ingested, "source_type": "en"}
        )
        answered = await client.call_tool("bib_ask", {"query": QUESTION, "answer": True, "app": ingested})
        bad = await client.call_tool("bib_ask", {"query": "", "top_k": 99, "colour": "red"})
        try:
            await client.call_tool("bib_eval_retrieval", {"questions": [QUESTION]})
        except MCPError as exc:
            hidden = exc
        else:
            hidden = None
        return listed, trimmed, answered, bad, hidden

    listed, trimmed, answered, bad, hidden = run(stdio_client(url, user.username, MODES[protocol]), session)

    assert sorted(t.name for t in listed.tools) == ["bib_apps", "bib_ask"]  # no permission to add runs
    assert not trimmed.is_error
    assert trimmed.structured_content["trimmed"] is True
    assert 1 <= len(trimmed.structured_content["passages"]) <= 2
    assert trimmed.structured_content["tokens_in_context"] < trimmed.structured_content["tokens_before"]
    assert answered.structured_content["answer"]["mode"] == "extractive"
    logged = OraculoQuery.objects.get(pk=answered.structured_content["answer"]["query_id"])
    assert (logged.channel, logged.user_id, logged.question) == (Channel.MCP, user.pk, QUESTION)
    assert bad.is_error
    message = bad.content[0].text
    assert "- query: This field may not be blank." in message
    assert "- top_k: Ensure this value is less than or equal to 20." in message
    assert "- colour: Unknown field." in message
    assert hidden is not None and "Unknown tool" in str(hidden)


def test_stdio_refuses_a_user_who_is_not_staff(db_proxy):  # noqa: F811
    _, url = db_proxy
    User.objects.create_user("visitor")
    done = subprocess.run(
        [sys.executable, "manage.py", "mcp_stdio", "--user", "visitor"],
        cwd=ROOT,
        env=process_env(url),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    assert "'visitor' is not a staff user" in done.stderr
    assert not done.stdout  # nothing on the protocol's channel


def test_stdio_with_the_permission_lists_the_evaluation_tools_until_the_user_is_no_longer_staff(
    db_proxy,  # noqa: F811
):
    _, url = db_proxy
    user = User.objects.create_user("evaluator", is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="add_evalrun"))

    @sync_to_async
    def demote() -> None:
        User.objects.filter(pk=user.pk).update(is_staff=False)
        connection.close()  # this thread's own connection, or the test database could not be dropped

    async def session(client: Client):
        listed = await client.list_tools()
        before = await client.call_tool("bib_apps")
        await demote()
        try:
            await client.call_tool("bib_apps")
        except MCPError as exc:
            return listed, before, exc
        return listed, before, None

    listed, before, refused = run(stdio_client(url, user.username, "auto"), session)
    assert sorted(t.name for t in listed.tools) == [
        "bib_apps",
        "bib_ask",
        "bib_eval_retrieval",
        "bib_eval_run",
    ]
    assert not before.is_error
    assert refused is not None and str(refused) == "'evaluator' is not a staff user; MCP tools are for staff."
