"""A small OpenAI-compatible chat server on 127.0.0.1, so tests drive the real `openai` client over HTTP.

Modes: "ok" answers citing [1] and echoing passage [1]'s first line (proof the context was sent), "slow"
sleeps past the client's timeout, "error" answers HTTP 500, "empty" answers with no content, "endless" ignores
max_tokens and answers a megabyte, "leaky" refuses with a 401 that echoes the key it was sent. Every request
is recorded.
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
        self.requests.clear()

    @staticmethod
    def answer_for(messages: list[dict]) -> str:
        system = next((m["content"] for m in messages if m["role"] == "system"), "")
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
                    return self._send(404, {"error": {"message": "not found", "type": "invalid_request_error"}})
                hook, fake.on_request = fake.on_request, None
                if hook is not None:
                    hook()
                if fake.mode == "slow":
                    fake._stop.wait(fake.slow_seconds)
                    return self._send(200, self._completion(body, "too late"))
                if fake.mode == "error":
                    return self._send(500, {"error": {"message": "the model crashed", "type": "server_error"}})
                if fake.mode == "leaky":
                    key = headers.get("authorization", "").removeprefix("Bearer ")
                    return self._send(401, {"error": {"message": f"Incorrect API key provided: {key}",
                                                      "type": "invalid_request_error"}})
                if fake.mode == "endless":
                    return self._send(200, self._completion(body, "All work and no play. [1] " * 40_000))
                content = "" if fake.mode == "empty" else fake.answer_for(body.get("messages", []))
                return self._send(200, self._completion(body, content))

            def _completion(self, body: dict, content: str) -> dict:
                return {
                    "id": "chatcmpl-fake", "object": "chat.completion", "created": int(time.time()),
                    "model": MODEL,
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": content}}],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20},
                }

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
