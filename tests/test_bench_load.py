"""bench/load.py measures this machine only, within bounds."""

from __future__ import annotations

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
import load


@pytest.mark.parametrize(
    "args",
    [
        ["--url", "http://example.com:8000", "--token", "t"],
        ["--url", "http://10.0.0.1:8000", "--token", "t"],
        ["--url", "https://127.0.0.1:8000", "--token", "t"],
        ["--clients", "500", "--token", "t"],
        ["--duration", "3600", "--token", "t"],
        ["--url", "http://127.0.0.1:8000"],
        ["--repeat-share", "1.5", "--token", "t"],
    ],
)
def test_refuses_anything_but_a_bounded_loopback_run(args, capsys):
    with pytest.raises(SystemExit) as exit_:
        load.main(args)
    assert exit_.value.code == 2


def test_percentiles():
    values = [float(v) for v in range(1, 101)]
    assert (load.percentile(values, 50), load.percentile(values, 95), load.percentile(values, 99)) == (
        50,
        95,
        99,
    )


def test_half_the_questions_repeat_and_the_others_are_new():
    asked = [load.question_for(client=c, i=i, repeat_share=0.5) for c in range(10) for i in range(200)]
    repeats = [q for q in asked if q in load.QUESTIONS]
    assert 0.45 < len(repeats) / len(asked) < 0.55
    fresh = [q for q in asked if q not in load.QUESTIONS]
    assert len(set(fresh)) == len(fresh), "a new question is never asked twice"
    assert all(load.question_for(client=1, i=i, repeat_share=1.0) in load.QUESTIONS for i in range(50))


class _Server(ThreadingHTTPServer):
    daemon_threads = True


def _answering(*, status: int = 200, framing: str = "length"):
    """A real HTTP server on 127.0.0.1 that answers every POST with the question it got, framed as asked."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0" if framing == "close" else "HTTP/1.1"

        def do_POST(self):
            asked = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            body = json.dumps({"asked": asked, "token": self.headers["Authorization"]}).encode()
            self.server.asked.append(asked)
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            if framing == "chunked":
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                for piece in (body[:7], body[7:]):
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                self.wfile.write(b"0\r\n\r\n")
                return
            if framing == "length":
                self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = _Server(("127.0.0.1", 0), Handler)
    server.asked = []
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.mark.parametrize("framing", ["length", "chunked", "close"])
def test_every_client_keeps_asking_and_every_answer_is_counted(framing, capsys):
    server = _answering(framing=framing)
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        code = load.main(["--url", url, "--token", "t0k", "--clients", "3", "--duration", "0.5"])
    finally:
        server.shutdown()
    out = capsys.readouterr().out
    done = int(out.split("requests ")[1].split()[0])
    assert code == 0 and "transport errors 0" in out
    assert done >= 6 and f"status 200: {done}" in out
    assert len(server.asked) == done
    assert all(set(q) == {"question", "app"} and q["app"] == "guide" for q in server.asked)
    assert {q["question"] for q in server.asked} <= set(load.QUESTIONS)


def test_server_errors_and_refused_connections_fail_the_run(capsys):
    server = _answering(status=500)
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        assert load.main(["--url", url, "--token", "t", "--clients", "2", "--duration", "0.3"]) == 1
    finally:
        server.shutdown()
        server.server_close()
    assert "status 500: " in capsys.readouterr().out
    assert load.main(["--url", url, "--token", "t", "--clients", "2", "--duration", "0.3"]) == 1
    assert "ConnectionRefusedError" in capsys.readouterr().out


def test_a_response_is_whole_only_when_its_body_is():
    head = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n"
    assert load.parse_response(head + b"abc") is None
    assert load.parse_response(head + b"abcde") == (200, len(head) + 5, True)
    chunked = b"HTTP/1.1 503 X\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n3\r\nabc\r\n"
    assert load.parse_response(chunked) is None
    assert load.parse_response(chunked + b"0\r\n\r\n") == (503, len(chunked) + 5, False)
    assert load.parse_response(b"HTTP/1.0 200 OK\r\n\r\nbody") == (200, None, False)
