"""A small OpenAI-compatible chat server on 127.0.0.1, so tests drive the real `openai` client over HTTP.

Modes: "ok" answers citing [1] and echoing passage [1]'s first line (proof the context was sent), "slow"
sleeps past the client's timeout, "error" answers HTTP 500, "empty" answers with no content, "endless" ignores
max_tokens and answers a megabyte, "leaky" refuses with a 401 that echoes the key it was sent. Every request
is recorded.

A request with `"stream": true` is answered as the OpenAI API streams (server-sent events, chunked): in "ok" mode
the answer in pieces; "cut" sends two pieces and then drops the connection in the middle of a chunk; "gated"
sends the first piece and waits for `gate` to be set before the rest. The other modes answer as without stream.
"""

from __future__ import annotations

import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODEL = "fake-chat-1"
PASSAGE_ONE = re.compile(r"^\[1\] (\[Doc: [^\n]*\])\n([^\n]*)", re.MULTILINE)


class FakeLLM:
    def __init__(self, *, slow_seconds: float = 5.0) -> None:
        self.mode = "ok"
        self.slow_seconds = slow_seconds
        self.requests: list[dict] = []
        self.on_request = None  # called (once, then cleared) when a chat request arrives, before answering
        self.gate = threading.Event()
        self._stop = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def start(self) -> FakeLLM:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._server.shutdown()
        self._server.server_close()

    def reset(self, mode: str = "ok") -> None:
        self.mode = mode
        self.on_request = None
        self.gate.clear()
        self.requests.clear()

    @staticmethod
    def pieces(text: str, n: int = 4) -> list[str]:
        size = max(1, -(-len(text) // n))
        return [text[i : i + size] for i in range(0, len(text), size)]

    @staticmethod
    def answer_for(messages: list[dict]) -> str:
        """A rewrite request gets the last question of the conversation joined to the follow-up, in brackets
        so tests can tell it from the joining Oráculo does without an LLM."""
        system = next((m["content"] for m in messages if m["role"] == "system"), "")
        if "standalone search query" in system:
            user = messages[-1]["content"]
            last = [line[3:] for line in user.splitlines() if line.startswith("Q: ")][-1]
            return f"{last} [{user.rsplit('Follow-up question: ', 1)[1]}]"
        match = PASSAGE_ONE.search(system)
        if not match:
            return "The documentation does not cover this."
        return f"According to {match.group(1)} [1]: {match.group(2)[:200]}"

    def _handler(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                headers = {name.lower(): value for name, value in self.headers.items()}
                fake.requests.append({"path": self.path, "headers": headers, "body": body})
                if self.path.rstrip("/") != "/v1/chat/completions":
                    return self._send(
                        404, {"error": {"message": "not found", "type": "invalid_request_error"}}
                    )
                hook, fake.on_request = fake.on_request, None
                if hook is not None:
                    hook()
                if fake.mode == "slow":
                    fake._stop.wait(fake.slow_seconds)
                    return self._send(200, self._completion(body, "too late"))
                if fake.mode == "error":
                    return self._send(
                        500, {"error": {"message": "the model crashed", "type": "server_error"}}
                    )
                if fake.mode == "leaky":
                    key = headers.get("authorization", "").removeprefix("Bearer ")
                    return self._send(
                        401,
                        {
                            "error": {
                                "message": f"Incorrect API key provided: {key}",
                                "type": "invalid_request_error",
                            }
                        },
                    )
                if body.get("stream") and fake.mode in ("ok", "cut", "gated"):
                    return self._stream(body, fake.answer_for(body.get("messages", [])))
                if fake.mode == "endless":
                    return self._send(200, self._completion(body, "All work and no play. [1] " * 40_000))
                content = "" if fake.mode == "empty" else fake.answer_for(body.get("messages", []))
                return self._send(200, self._completion(body, content))

            def _completion(self, body: dict, content: str) -> dict:
                return {
                    "id": "chatcmpl-fake",
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": MODEL,
                    "choices": [
                        {
                            "index": 0,
                            "finish_reason": "stop",
                            "message": {"role": "assistant", "content": content},
                        }
                    ],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20},
                }

            def _stream(self, body: dict, content: str) -> None:
                """Chunked server-sent events, written by hand so that "cut" can break a chunk in half."""
                self.close_connection = True
                try:
                    self.wfile.write(
                        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                        b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
                    )
                    for i, piece in enumerate(fake.pieces(content)):
                        if fake.mode == "cut" and i == 2:
                            self.wfile.write(b'100\r\ndata: {"id')  # promises 256 bytes, sends 9, hangs up
                            self.wfile.flush()
                            return
                        if fake.mode == "gated" and i == 1:
                            fake.gate.wait(30)
                        self._chunk(
                            self._event(
                                {
                                    "id": "chatcmpl-fake",
                                    "object": "chat.completion.chunk",
                                    "created": int(time.time()),
                                    "model": MODEL,
                                    "choices": [
                                        {"index": 0, "delta": {"content": piece}, "finish_reason": None}
                                    ],
                                }
                            )
                        )
                    self._chunk(b"data: [DONE]\n\n")
                    self.wfile.write(b"0\r\n\r\n")
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    pass

            @staticmethod
            def _event(payload: dict) -> bytes:
                return b"data: " + json.dumps(payload).encode() + b"\n\n"

            def _chunk(self, data: bytes) -> None:
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                self.wfile.flush()

            def _send(self, status: int, payload: dict) -> None:
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        return Handler
