"""The MCP door: the library's tools for agents (bib_ask, bib_apps, bib_eval_retrieval, bib_eval_run), served over
Streamable HTTP at /mcp (django-mcpz) and over stdio (`manage.py mcp_stdio`, the official SDK)."""
