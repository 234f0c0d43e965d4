"""The tools' argument and result shapes, as msgspec structs: they give the JSON Schemas that clients see.

Arguments are checked again by the API's own serializers, so an MCP caller meets the same rules (and messages, one
per field) as a REST caller.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from django_mcpz.schemas import type_schema
from msgspec import Meta

from biblioteca.search import MAX_TOP_K

Channel = Literal["widget", "api", "mcp"]
Variant = Literal["baseline", "trim"]


class AskArgs(msgspec.Struct, kw_only=True):
    query: Annotated[str, Meta(min_length=1, description="The question or search text.")]
    top_k: Annotated[int, Meta(ge=1, le=MAX_TOP_K, description="Passages to return.")] = 5
    trim: Annotated[
        bool | None,
        Meta(description="Keep only the sentences that matter. Absent: the server's RETRIEVAL_TRIM setting."),
    ] = None
    trim_threshold: Annotated[float, Meta(ge=-1, le=1, description="Sentence cosine floor.")] | None = None
    trim_window: (
        Annotated[int, Meta(ge=0, le=10, description="Sentences kept around each kept one.")] | None
    ) = None
    trim_min_sentences: (
        Annotated[int, Meta(ge=1, le=50, description="Sentences kept per passage.")] | None
    ) = None
    hybrid: Annotated[
        bool | None, Meta(description="Fuse full-text with vector search. Absent: RETRIEVAL_HYBRID.")
    ] = None
    app: (
        Annotated[str, Meta(max_length=100, description="Only this app's documents (see bib_apps).")] | None
    ) = None
    source_type: Annotated[str, Meta(max_length=50, description="Only this source type.")] | None = None
    answer: Annotated[
        bool,
        Meta(
            description="Also answer with Oráculo (an LLM call when one is configured); the question is logged."
        ),
    ] = False


class Passage(msgspec.Struct):
    id: int
    chunk_id: str
    document_id: int
    document: str
    title: str
    heading_path: list[str]
    url: str
    score: float
    content: str


class Answer(msgspec.Struct):
    text: str
    mode: Literal["llm", "extractive"]
    query_id: int
    llm_model: str
    llm_error: str


class AskResult(msgspec.Struct, omit_defaults=True):
    passages: list[Passage]
    tokens_in_context: int
    tokens_before: int
    trimmed: bool
    answer: Answer | None = None


class ScopeInfo(msgspec.Struct):
    source_type: str
    documents: int
    chunks: int
    languages: list[str]


class AppInfo(msgspec.Struct):
    app: str
    documents: int
    chunks: int
    source_types: list[ScopeInfo]


class AppsResult(msgspec.Struct):
    apps: list[AppInfo]
    embedding_model: str
    embedding_dimensions: int


class QuestionItem(msgspec.Struct):
    question: str
    expected_answer: str = ""


class EvalArgs(msgspec.Struct, kw_only=True):
    questions: (
        Annotated[
            list[str | QuestionItem],
            Meta(
                min_length=1,
                description="Questions, or {question, expected_answer} for labelled ones. Absent: the last real "
                "ones.",
            ),
        ]
        | None
    ) = None
    last: Annotated[int, Meta(ge=1, description="Without questions: how many recent ones (15).")] | None = (
        None
    )
    channels: (
        Annotated[
            list[Channel],
            Meta(
                description="Without questions: only those asked through these channels (leave out mcp, say)."
            ),
        ]
        | None
    ) = None
    variants: list[Variant] | None = None
    top_k: Annotated[int, Meta(ge=1, le=MAX_TOP_K)] | None = None
    trim_threshold: Annotated[float, Meta(ge=-1, le=1)] | None = None
    trim_window: Annotated[int, Meta(ge=0, le=10)] | None = None
    synthesize: Annotated[bool, Meta(description="Answer with the LLM per variant: an LLM call each.")] = (
        False
    )
    app: str | None = None
    source_type: str | None = None


class RunArgs(msgspec.Struct):
    id: Annotated[int, Meta(ge=1, description="The evaluation run's id, as bib_eval_retrieval returned it.")]


def input_schema(struct: type[msgspec.Struct]) -> dict[str, Any]:
    """A struct's JSON Schema, refusing properties it does not name (the serializers name them back)."""
    return {**type_schema(struct), "additionalProperties": False}


EVAL_OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "Inline: the evaluation report (summary + per-question results). Queued or read back: the run's id, status and "
    "admin URL, with summary and results once it is done.",
    "properties": {
        "id": {"type": "integer"},
        "status": {"type": "string", "enum": ["queued", "running", "done", "failed"]},
        "progress": {"type": "integer"},
        "total": {"type": "integer"},
        "admin_url": {"type": "string"},
        "error": {"type": "string"},
        "summary": {"type": "object"},
        "results": {"type": "array", "items": {"type": "object"}},
    },
}
