"""Server-sent events for /ask: the renderer that lets a request ask for `text/event-stream`, and the event
stream itself (one `event:` and one JSON `data:` line per event)."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator

from rest_framework.renderers import BaseRenderer

from oraculo.answering import PreparedAsk, ask_stream

logger = logging.getLogger(__name__)


class EventStreamRenderer(BaseRenderer):
    """Only for content negotiation: a streamed answer is a StreamingHttpResponse, and error responses are
    rendered as JSON (see AskView.finalize_response)."""

    media_type = "text/event-stream"
    format = "sse"
    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None) -> bytes:
        return json.dumps(data).encode()


def sse(event: str, data: dict) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode()


def ask_event_stream(*, prepared: PreparedAsk, sources: list[dict], done) -> Iterator[bytes]:
    """`sources`, `delta`... then `done` (the whole /ask response). Once the first byte is out no status can
    change, so an unexpected failure (the database lost while logging, say) ends the stream with an `error`
    event rather than a cut connection."""
    try:
        for event in ask_stream(prepared=prepared):
            if event.kind == "sources":
                yield sse("sources", {"sources": sources, "trimmed": prepared.retrieval.trimmed})
            elif event.kind == "delta":
                yield sse("delta", {"text": event.text})
            else:
                yield sse("done", done(event.result))
    except Exception:
        logger.exception("the /ask stream failed")
        yield sse("error", {"detail": "The answer could not be completed. Try again shortly."})
