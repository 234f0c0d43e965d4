"""The tools over Streamable HTTP, driven by the official SDK's client against pytest-django's live server."""

from __future__ import annotations

import pytest

from tests.oraculo.mcp.conftest import MODES, connect, run, staff_token

pytestmark = pytest.mark.django_db(transaction=True)

EVAL = ("oraculo.add_evalrun",)
TOOLS = ["bib_apps", "bib_ask", "bib_eval_retrieval", "bib_eval_run"]


@pytest.mark.parametrize("protocol", list(MODES))
def test_tools_listed_with_schemas_and_annotations(mcp_url, protocol):
    _, token = staff_token("agent", *EVAL)
    listed = run(connect(mcp_url, token=token, mode=MODES[protocol]), lambda c: c.list_tools())
    by_name = {tool.name: tool for tool in listed.tools}
    assert sorted(by_name) == TOOLS
    assert by_name["bib_apps"].annotations.read_only_hint is True
    assert by_name["bib_ask"].input_schema["properties"]["top_k"]["maximum"] == 20
    assert "passages" in by_name["bib_ask"].output_schema["properties"]


def test_ask_smoke(mcp_url, ingested):
    _, token = staff_token("agent")
    result = run(
        connect(mcp_url, token=token),
        lambda c: c.call_tool("bib_ask", {"query": "How do I reset my password?"}),
    )
    print(result)
    assert not result.is_error
