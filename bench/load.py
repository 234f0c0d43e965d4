"""Closed-loop load against a running server: N clients, each sending its next request as soon as the last one
is answered, for a bounded time. Prints req/s, latency percentiles, status counts and transport errors.

Loopback only (127.0.0.1, ::1, localhost), at most 100 clients and 300 seconds: it measures this machine's
server, never someone else's. Staff and API-token callers are not rate-limited, so use a token (a widget key
would meet the per-IP limit after a few requests, which is the point of that limit):

    .venv/bin/python manage.py drf_create_token admin
    DEBUG=false SECRET_KEY=... ALLOWED_HOSTS=127.0.0.1 SECURE_SSL_REDIRECT=false NUM_PROXIES=0 \\
        .venv/bin/gunicorn config.wsgi -w 2 -b 127.0.0.1:8001
    .venv/bin/python bench/load.py --url http://127.0.0.1:8001 --token TOKEN --app guide --clients 50 --duration 60
"""

from __future__ import annotations

import argparse
import http.client
import json
import math
import statistics
import sys
import threading
import time
from collections import Counter
from urllib.parse import urlsplit

LOOPBACK = {"127.0.0.1", "::1", "localhost"}
MAX_CLIENTS, MAX_SECONDS = 100, 300
QUESTIONS = [
    "How do I reset my password?",
    "When are invoices sent?",
    "How do I delete my account?",
    "¿Cómo cambio mi contraseña?",
    "How do I configure the LLM?",
    "¿Qué hace make run?",
]


def question_for(*, client: int, i: int, repeat_share: float) -> str:
    """One of the six usual questions (a repeat, answered from the query-vector cache once seen) or, for the
    other `1 - repeat_share` of requests, one never asked before (the same words with a ticket number), which
    must be embedded. Deterministic: request i of client n is a repeat when its slot falls in the share."""
    question = QUESTIONS[i % len(QUESTIONS)]
    if (i * 7919 + client * 104729) % 1000 < repeat_share * 1000:
        return question
    return f"{question} (ticket {client}-{i})"


def percentile(sorted_values: list[float], p: float) -> float:
    """Nearest rank."""
    if not sorted_values:
        return float("nan")
    k = max(0, min(len(sorted_values) - 1, math.ceil(p / 100 * len(sorted_values)) - 1))
    return sorted_values[k]


class Client(threading.Thread):
    def __init__(
        self,
        n: int,
        *,
        host: str,
        port: int,
        path: str,
        headers: dict,
        app: str,
        until: float,
        repeat_share: float = 1.0,
    ):
        super().__init__(daemon=True)
        self.n, self.host, self.port, self.path, self.headers = n, host, port, path, headers
        self.app, self.until, self.repeat_share = app, until, repeat_share
        self.latencies: list[float] = []
        self.statuses: Counter = Counter()
        self.errors: Counter = Counter()
        self.conn: http.client.HTTPConnection | None = None

    def request(self, body: bytes) -> int:
        if self.conn is None:
            self.conn = http.client.HTTPConnection(self.host, self.port, timeout=60)
        try:
            self.conn.request("POST", self.path, body=body, headers=self.headers)
            response = self.conn.getresponse()
            response.read()
            if response.getheader("Connection", "").lower() == "close":
                self.conn.close()
                self.conn = None
            return response.status
        except Exception:
            self.conn.close()
            self.conn = None
            raise

    def run(self) -> None:
        i = self.n
        while time.monotonic() < self.until:
            question = question_for(client=self.n, i=i, repeat_share=self.repeat_share)
            i += 1
            key = "query" if self.path.endswith("/search") else "question"
            body = json.dumps({key: question, **({"app": self.app} if self.app else {})}).encode()
            started = time.perf_counter()
            try:
                status = self.request(body)
            except Exception as exc:
                self.errors[type(exc).__name__] += 1
                continue
            self.latencies.append((time.perf_counter() - started) * 1000)
            self.statuses[status] += 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default="http://127.0.0.1:8000", help="The server, on a loopback address.")
    parser.add_argument("--path", default="/api/v1/ask", help="/api/v1/ask or /api/v1/search.")
    parser.add_argument("--token", default="", help="An API token (Authorization: Token ...).")
    parser.add_argument("--widget-key", default="", help="Or a widget key (rate-limited per IP and key).")
    parser.add_argument("--app", default="guide", help="The app to ask about (with a token).")
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--duration", type=float, default=60.0, help="Seconds.")
    parser.add_argument(
        "--repeat-share",
        type=float,
        default=1.0,
        help="Share of requests asking one of six usual questions; the rest are new questions (embedded).",
    )
    args = parser.parse_args(argv)

    target = urlsplit(args.url)
    if target.hostname not in LOOPBACK or target.scheme != "http":
        parser.error(f"--url must be http:// on a loopback address ({', '.join(sorted(LOOPBACK))})")
    if not 0 <= args.repeat_share <= 1:
        parser.error("--repeat-share is a share, 0 to 1")
    if not 1 <= args.clients <= MAX_CLIENTS or not 0 < args.duration <= MAX_SECONDS:
        parser.error(f"--clients 1..{MAX_CLIENTS}, --duration up to {MAX_SECONDS} s")
    headers = {"Content-Type": "application/json"}
    if args.token:
        headers["Authorization"] = f"Token {args.token}"
    elif args.widget_key:
        headers["X-Widget-Key"] = args.widget_key
    else:
        parser.error("give --token (not throttled) or --widget-key")

    started = time.monotonic()
    until = started + args.duration
    clients = [
        Client(
            n,
            host=target.hostname,
            port=target.port or 80,
            path=args.path,
            headers=headers,
            app=args.app if args.token else "",
            until=until,
            repeat_share=args.repeat_share,
        )
        for n in range(args.clients)
    ]
    for client in clients:
        client.start()
    for client in clients:
        client.join(args.duration + 120)
    elapsed = time.monotonic() - started

    latencies = sorted(x for c in clients for x in c.latencies)
    statuses = sum((c.statuses for c in clients), Counter())
    errors = sum((c.errors for c in clients), Counter())
    done = len(latencies)
    print(
        f"{args.clients} clients, {elapsed:.1f} s, {args.path} on {args.url}, "
        f"{args.repeat_share:.0%} of questions repeated"
    )
    print(f"requests {done}  ·  {done / elapsed:.1f} req/s")
    print(
        f"latency ms  p50 {percentile(latencies, 50):.1f}  p95 {percentile(latencies, 95):.1f}  "
        f"p99 {percentile(latencies, 99):.1f}  mean {statistics.fmean(latencies) if latencies else float('nan'):.1f}"
    )
    print("status " + ", ".join(f"{code}: {n}" for code, n in sorted(statuses.items())))
    print("transport errors " + (", ".join(f"{name}: {n}" for name, n in errors.most_common()) or "0"))
    server_errors = sum(n for code, n in statuses.items() if code >= 500)
    return 1 if server_errors or errors else 0


if __name__ == "__main__":
    sys.exit(main())
