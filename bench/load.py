"""Closed-loop load against a running server: N clients, each sending its next request as soon as the last one
is answered, for a bounded time. Prints req/s, latency percentiles, status counts and transport errors.

Loopback only (127.0.0.1, ::1, localhost), at most 100 clients and 300 seconds: it measures this machine's
server, never someone else's. Staff and API-token callers are not rate-limited, so use a token (a widget key
would meet the per-IP limit after a few requests, which is the point of that limit):

    .venv/bin/python manage.py drf_create_token admin
    DEBUG=false SECRET_KEY=... ALLOWED_HOSTS=127.0.0.1 SECURE_SSL_REDIRECT=false NUM_PROXIES=0 \\
        .venv/bin/gunicorn config.wsgi -w 2 -b 127.0.0.1:8001
    .venv/bin/python bench/load.py --url http://127.0.0.1:8001 --token TOKEN --app guide --clients 50 --duration 60

The "new" questions are the same in every run (client n's request i), so restart the server between runs: a warm
one has the last run's new questions in its caches, and answers them as repeats.
"""

from __future__ import annotations

import argparse
import json
import math
import selectors
import socket
import statistics
import sys
import time
from collections import Counter
from urllib.parse import urlsplit

LOOPBACK = {"127.0.0.1", "::1", "localhost"}
MAX_CLIENTS, MAX_SECONDS = 100, 300
REQUEST_TIMEOUT = 60.0
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


def build_request(*, host: str, port: int, path: str, headers: dict, body: bytes) -> bytes:
    """One HTTP/1.1 POST, as bytes: built once per question, sent whole with one sendall."""
    authority = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    lines = [f"POST {path} HTTP/1.1", f"Host: {authority}", f"Content-Length: {len(body)}"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


def parse_response(buffer: bytes | bytearray) -> tuple[int, int | None, bool] | None:
    """(status, bytes the response takes, whether the connection stays open) once `buffer` holds a whole response,
    else None. A body with neither a Content-Length nor chunks ends when the server closes: its length is None."""
    end = buffer.find(b"\r\n\r\n")
    if end < 0:
        return None
    status_line, *header_lines = bytes(buffer[:end]).decode("latin-1").split("\r\n")
    status = int(status_line.split(" ", 2)[1])
    fields = {}
    for line in header_lines:
        name, _, value = line.partition(":")
        fields[name.strip().lower()] = value.strip().lower()
    keep_alive = fields.get("connection") != "close" and not status_line.startswith("HTTP/1.0")
    start = end + 4
    if "content-length" in fields:
        total = start + int(fields["content-length"])
        return (status, total, keep_alive) if len(buffer) >= total else None
    if "chunked" not in fields.get("transfer-encoding", ""):
        return status, None, False
    position = start
    while True:
        line_end = buffer.find(b"\r\n", position)
        if line_end < 0:
            return None
        size = int(bytes(buffer[position:line_end]).split(b";")[0], 16)
        if size == 0:
            trailer_end = buffer.find(b"\r\n\r\n", line_end)
            return None if trailer_end < 0 else (status, trailer_end + 4, keep_alive)
        position = line_end + 2 + size + 2
        if position > len(buffer):
            return None


class Client:
    """One closed-loop client: a keep-alive connection, the next question sent as soon as the last is answered."""

    def __init__(self, n: int, *, address: tuple[str, int], request_for, repeat_share: float = 1.0):
        self.n, self.address, self.request_for, self.repeat_share = n, address, request_for, repeat_share
        self.i = n
        self.sock: socket.socket | None = None
        self.buffer = bytearray()
        self.started = 0.0
        self.latencies: list[float] = []
        self.statuses: Counter = Counter()
        self.errors: Counter = Counter()

    def send_next(self, selector: selectors.BaseSelector) -> None:
        request = self.request_for(question_for(client=self.n, i=self.i, repeat_share=self.repeat_share))
        self.i += 1
        if self.sock is None:
            self.sock = socket.create_connection(self.address, timeout=REQUEST_TIMEOUT)
            self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            selector.register(self.sock, selectors.EVENT_READ, self)
        self.buffer.clear()
        self.started = time.perf_counter()
        self.sock.sendall(request)

    def close(self, selector: selectors.BaseSelector) -> None:
        if self.sock is not None:
            selector.unregister(self.sock)
            self.sock.close()
            self.sock = None

    def receive(self, selector: selectors.BaseSelector) -> bool:
        """Read what arrived; True once the response is whole (recorded, the connection closed if it ends)."""
        data = self.sock.recv(262144)
        self.buffer += data
        parsed = parse_response(self.buffer)
        if data and (parsed is None or parsed[1] is None):
            return False
        if not data and (parsed is None or parsed[1] is not None):
            raise ConnectionResetError("the server closed the connection before the response ended")
        status, _, keep_alive = parsed
        self.latencies.append((time.perf_counter() - self.started) * 1000)
        self.statuses[status] += 1
        if not keep_alive:
            self.close(selector)
        return True


def run_clients(clients: list[Client], *, until: float) -> None:
    """Every client in one thread and one selector: the generator's own CPU stays far below the server's (50
    threads with http.client cost half a millisecond per request, a fortieth of the server's CPU budget)."""
    selector = selectors.DefaultSelector()
    waiting: list[Client] = []

    def next_request(client: Client) -> None:
        if time.monotonic() >= until:
            client.close(selector)
            return
        try:
            client.send_next(selector)
        except OSError as exc:
            client.errors[type(exc).__name__] += 1
            client.close(selector)
            waiting.append(client)
        else:
            in_flight.add(client)

    in_flight: set[Client] = set()
    for client in clients:
        next_request(client)
    while in_flight or waiting:
        retry, waiting[:] = list(waiting), []
        for client in retry:
            next_request(client)
        for key, _ in selector.select(timeout=0.05 if waiting else 1.0):
            client = key.data
            try:
                done = client.receive(selector)
            except (OSError, ValueError, IndexError) as exc:
                client.errors[type(exc).__name__] += 1
                client.close(selector)
                done = True
            if done:
                in_flight.discard(client)
                next_request(client)
        now = time.perf_counter()
        for client in [c for c in in_flight if now - c.started > REQUEST_TIMEOUT]:
            client.errors["TimeoutError"] += 1
            client.close(selector)
            in_flight.discard(client)
            next_request(client)
    selector.close()


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
    host, port = target.hostname, target.port or 80
    key = "query" if args.path.endswith("/search") else "question"
    app = {"app": args.app} if args.token and args.app else {}

    def request_for(question: str) -> bytes:
        body = json.dumps({key: question, **app}).encode()
        return build_request(host=host, port=port, path=args.path, headers=headers, body=body)

    clients = [
        Client(n, address=(host, port), request_for=request_for, repeat_share=args.repeat_share)
        for n in range(args.clients)
    ]
    run_clients(clients, until=until)
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
