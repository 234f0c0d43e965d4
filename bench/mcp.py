"""What the MCP door costs: p50 of bib_ask over /mcp against POST /api/v1/search for the same queries, on one
gunicorn worker that this script starts on 127.0.0.1 (the same server for both doors), in both protocol eras.

The baseline is POST /api/v1/search with an API token; the target is an MCP overhead of at most 5 ms at p50.
Requests are the ones the official SDK sends (headers and `_meta` of 2026-07-28, or a 2025-11-25 session opened
with initialize), timed on the wire with keep-alive, and interleaved query by query so drift hits both sides.
The official SDK client's own end-to-end p50 is printed as well (client-side validation included).

It uses this checkout's database (var/pgdata, or EMBEDDED_PGDATA / DATABASE_URL): the `guide` app is ingested
from docs/ when missing, and a staff user `bench-mcp` gets an API token and an MCP token (revoked at the end).

    DEBUG=true .venv/bin/python bench/mcp.py --rounds 20
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

from _django import ROOT, ingest, setup

# This file is named like the SDK's package: the SDK must be what `import mcp` finds.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

QUERIES = [
    "How do I ingest my docs?",
    "How do I configure the LLM?",
    "What does trimming do?",
    "How do I run the A/B evaluation?",
    "¿Cómo configuro el LLM?",
    "How long are questions kept?",
    "What does make run do?",
    "How do I calibrate the trim threshold?",
]
MODERN, LEGACY = "2026-07-28", "2025-11-25"
MAX_ROUNDS = 200


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port: int, process: subprocess.Popen, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"gunicorn exited with {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.2)
    raise SystemExit("gunicorn did not start")


def prepare(app: str) -> tuple[str, str, int]:
    """The bench user's API token and a fresh MCP token (value and id); the app ingested if it is missing."""
    from django.contrib.auth.models import User
    from rest_framework.authtoken.models import Token

    from biblioteca.models import Document
    from oraculo.mcp.tokens import token_create

    if not Document.objects.filter(app=app).exists():
        print(f"ingesting docs/ as app {app!r} ...", file=sys.stderr)
        ingest(paths=[ROOT / "docs"], app=app, source_type="guide")
    user, _ = User.objects.get_or_create(username="bench-mcp", defaults={"is_staff": True})
    if not user.is_staff:
        user.is_staff = True
        user.save(update_fields=["is_staff"])
    api_token, _ = Token.objects.get_or_create(user=user)
    mcp_token, value = token_create(user=user, name="bench/mcp.py")
    return api_token.key, value, mcp_token.pk


class Wire:
    """One keep-alive connection; `post` returns the parsed JSON body and the seconds the exchange took."""

    def __init__(self, port: int, headers: dict[str, str]) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        self.headers = {"Content-Type": "application/json", **headers}

    def post(self, path: str, body: dict, headers: dict[str, str] | None = None) -> tuple[dict, float]:
        data = json.dumps(body).encode()
        started = time.perf_counter()
        self.conn.request("POST", path, body=data, headers={**self.headers, **(headers or {})})
        response = self.conn.getresponse()
        raw = response.read()
        elapsed = time.perf_counter() - started
        if response.status != 200:
            raise SystemExit(f"{path}: HTTP {response.status}: {raw[:300]!r}")
        return json.loads(raw), elapsed


def mcp_call(wire: Wire, protocol: str, n: int, query: str, app: str) -> tuple[dict, float]:
    params: dict = {"name": "bib_ask", "arguments": {"query": query, "app": app}}
    headers = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": protocol}
    if protocol == MODERN:
        params["_meta"] = {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": {},
        }
        headers |= {"Mcp-Method": "tools/call", "Mcp-Name": "bib_ask"}
    body, elapsed = wire.post(
        "/mcp", {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": params}, headers
    )
    result = body.get("result") or {}
    if result.get("isError") or "structuredContent" not in result:
        raise SystemExit(f"bib_ask failed: {json.dumps(body)[:300]}")
    return result["structuredContent"], elapsed


def legacy_initialize(wire: Wire) -> None:
    wire.post(
        "/mcp",
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": LEGACY,
                "capabilities": {},
                "clientInfo": {"name": "bench", "version": "1"},
            },
        },
        {"Accept": "application/json, text/event-stream"},
    )


def sdk_p50(port: int, token: str, app: str, rounds: int) -> tuple[float, str]:
    """The official SDK client's end-to-end p50 for bib_ask (one session; its own validation included)."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    requests: list[str] = []
    sent: dict[int, float] = {}
    on_wire: list[float] = []

    async def count(request) -> None:
        requests.append(request.headers.get("Mcp-Method", "?"))
        sent[id(request)] = time.perf_counter()

    async def answered(response) -> None:
        await response.aread()
        if response.request.headers.get("Mcp-Method") == "tools/call":
            on_wire.append(time.perf_counter() - sent[id(response.request)])

    async def session() -> tuple[list[float], str]:
        http = httpx2.AsyncClient(
            headers={"Authorization": f"Bearer {token}"},
            timeout=120,
            event_hooks={"request": [count], "response": [answered]},
        )
        times: list[float] = []
        try:
            async with Client(
                streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http)
            ) as client:
                version = client.protocol_version
                for _ in range(rounds):
                    for query in QUERIES:
                        started = time.perf_counter()
                        result = await client.call_tool("bib_ask", {"query": query, "app": app})
                        times.append(time.perf_counter() - started)
                        assert not result.is_error, result.content
        finally:
            await http.aclose()
        return times, str(version)

    times, version = asyncio.run(session())
    calls = requests.count("tools/call")
    detail = (
        f"{version}, {len(requests) - calls} other requests for {calls} calls; HTTP exchange p50 "
        f"{statistics.median(on_wire) * 1000:.2f} ms, the rest is the client's own work"
    )
    return statistics.median(times) * 1000, detail


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--app", default="guide")
    parser.add_argument("--rounds", type=int, default=20, help=f"Passes over the {len(QUERIES)} queries.")
    parser.add_argument("--warmup", type=int, default=2, help="Untimed passes first.")
    args = parser.parse_args(argv)
    if not 1 <= args.rounds <= MAX_ROUNDS:
        parser.error(f"--rounds 1..{MAX_ROUNDS}")

    setup()
    from django.conf import settings

    from oraculo.mcp.tokens import token_revoke

    api_token, mcp_token, mcp_token_id = prepare(args.app)
    port = free_port()
    env = os.environ | {
        "DEBUG": "false",
        "SECRET_KEY": os.environ.get("SECRET_KEY", "bench-mcp-" + "x" * 40),
        "ALLOWED_HOSTS": "127.0.0.1",
        "SECURE_SSL_REDIRECT": "false",
        "NUM_PROXIES": "0",
        "THROTTLE_MCP_TOKEN": "100000/min",
        "LLM_BASE_URL": "",
    }
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "config.wsgi",
            "-w",
            "1",
            "-b",
            f"127.0.0.1:{port}",
            "--timeout",
            "120",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port, server)
        search = Wire(port, {"Authorization": f"Token {api_token}"})
        modern = Wire(port, {"Authorization": f"Bearer {mcp_token}"})
        legacy = Wire(port, {"Authorization": f"Bearer {mcp_token}"})
        legacy_initialize(legacy)
        times: dict[str, list[float]] = {"search": [], MODERN: [], LEGACY: []}
        n = 0
        for rnd in range(args.warmup + args.rounds):
            for query in QUERIES:
                n += 1
                found, t_search = search.post("/api/v1/search", {"query": query, "app": args.app})
                ours, t_modern = mcp_call(modern, MODERN, n, query, args.app)
                _, t_legacy = mcp_call(legacy, LEGACY, n, query, args.app)
                if [c["id"] for c in found["chunks"]] != [p["id"] for p in ours["passages"]]:
                    raise SystemExit(f"different passages for {query!r}: the doors must call the same search")
                if rnd >= args.warmup:
                    times["search"].append(t_search)
                    times[MODERN].append(t_modern)
                    times[LEGACY].append(t_legacy)
        sdk, sdk_version = sdk_p50(port, mcp_token, args.app, max(1, args.rounds // 4))
    finally:
        server.terminate()
        server.wait(30)
        token_revoke(token_id=mcp_token_id)

    def ms(values: list[float], q: float = 0.5) -> float:
        ordered = sorted(values)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000

    base = ms(times["search"])
    print(
        f"bib_ask over MCP vs POST /api/v1/search (baseline), app {args.app!r}, {len(QUERIES)} queries x "
        f"{args.rounds} rounds, 1 gunicorn sync worker, query-vector cache "
        f"{'on' if settings.QUERY_VECTOR_CACHE else 'off'}, hybrid {'on' if settings.RETRIEVAL_HYBRID else 'off'}"
    )
    print(f"{'door':<34}{'p50 ms':>9}{'p90 ms':>9}{'overhead p50':>15}{'ratio':>8}")
    print(f"{'POST /api/v1/search':<34}{base:9.2f}{ms(times['search'], 0.9):9.2f}{'-':>15}{'1.00':>8}")
    worst = 0.0
    for protocol in (MODERN, LEGACY):
        p50 = ms(times[protocol])
        paired = statistics.median(m - s for m, s in zip(times[protocol], times["search"])) * 1000
        worst = max(worst, p50 - base)
        print(
            f"{'MCP bib_ask, ' + protocol:<34}{p50:9.2f}{ms(times[protocol], 0.9):9.2f}"
            f"{p50 - base:+12.2f} ms{p50 / base:8.2f}   (paired median {paired:+.2f} ms)"
        )
    print(
        f"{'MCP bib_ask, official SDK client':<34}{sdk:9.2f}{'':>9}{sdk - base:+12.2f} ms{sdk / base:8.2f}   "
        f"({sdk_version})"
    )
    verdict = "met" if worst <= 5 else "NOT met"
    print(f"target: MCP overhead <= 5 ms at p50 (wire, both eras): {verdict} (worst {worst:+.2f} ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
