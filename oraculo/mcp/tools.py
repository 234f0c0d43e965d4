"""The tools: thin doors that check their arguments with the REST API's serializers and call the same services
as the API, the admin and the commands (retrieve, Oráculo's ask, the evaluation services).

Just over 300 lines because each tool's description, annotations and schemas sit beside its body, so an agent's
view of a tool and what it does read together."""

from __future__ import annotations

from collections.abc import Sequence

from django.conf import settings
from django.http import HttpRequest
from rest_framework import serializers

from biblioteca.api.serializers import SearchRequestSerializer
from biblioteca.embeddings import configured_model_name
from biblioteca.retrieval import RetrievalOptions, retrieve
from biblioteca.search import RetrievedChunk
from biblioteca.selectors import library_scopes
from oraculo.answering import ask
from oraculo.evaluation.api.serializers import EvalRunCreateSerializer
from oraculo.mcp import evaluation
from oraculo.mcp.schemas import (
    EVAL_OUTPUT_SCHEMA,
    Answer,
    AppInfo,
    AppsResult,
    AskArgs,
    AskResult,
    EvalArgs,
    Passage,
    RunArgs,
    ScopeInfo,
    input_schema,
)
from oraculo.mcp.server import door, server
from oraculo.models import Channel

EVAL_PERMISSION = "oraculo.add_evalrun"


class AskArgsSerializer(SearchRequestSerializer):
    answer = serializers.BooleanField(default=False)


class EvalArgsSerializer(EvalRunCreateSerializer):
    """The staff API's evaluation request without the calibration sweep (one run's parameters), plus channels."""

    sweep = None
    min_retention = None
    min_overlap = None
    channels = serializers.ListField(child=serializers.ChoiceField(choices=Channel.values), required=False)


class RunArgsSerializer(serializers.Serializer):
    id = serializers.IntegerField(min_value=1)


def _valid(serializer_class: type[serializers.Serializer], arguments: dict) -> dict:
    """The arguments checked; a null is the argument left out, as the tools' input schemas declare (every
    optional argument defaults to null there, and clients may send the defaults)."""
    arguments = {name: value for name, value in arguments.items() if value is not None}
    serializer = serializer_class(data=arguments)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data


def _passage(chunk: RetrievedChunk) -> Passage:
    return Passage(
        id=chunk.id,
        chunk_id=chunk.chunk_id,
        document_id=chunk.document_id,
        document=chunk.chunk_id.rpartition("#")[0],
        title=chunk.shown_title,
        heading_path=chunk.shown_heading_path,
        url=chunk.url,
        score=round(chunk.score, 4),
        content=chunk.content,
    )


def _passages_text(passages: Sequence[Passage]) -> str:
    if not passages:
        return "No passage matched."
    return "\n\n".join(
        f"[{n}] id {p.id}, score {p.score:.3f}{', ' + p.url if p.url else ''}\n{p.content}"
        for n, p in enumerate(passages, start=1)
    )


def ask_text(result: AskResult) -> str:
    lines = []
    if result.answer is not None:
        lines += [f"Answer ({result.answer.mode}):", result.answer.text, "", "Sources:"]
    lines.append(_passages_text(result.passages))
    lines.append(
        f"\n{result.tokens_in_context} tokens in context"
        + (f" (trimmed from {result.tokens_before})" if result.trimmed else "")
    )
    return "\n".join(lines)


@server.tool(
    name="bib_ask",
    title="Ask the library",
    description=(
        "Search the team's documentation: the best passages for a query (id, document, title, heading path, url, "
        "score, content) with their token count. `trim` keeps only the sentences that matter (absent: the "
        "server's setting); `app` and `source_type` filter (see bib_apps). Costs one embedding; with `answer: "
        "true` also Oráculo's answer (an LLM call when one is configured, else the best passages cited), and the "
        "question is logged like a widget question, channel mcp."
    ),
    input_schema=input_schema(AskArgs),
    output_schema=AskResult,
    read_only=False,
    destructive=False,
    idempotent=False,
    open_world=False,
)
@door(readable=ask_text)
def bib_ask(request: HttpRequest, arguments: dict) -> AskResult:
    data = _valid(AskArgsSerializer, arguments)
    options = RetrievalOptions.from_data(data)
    app, source_type = data["app"] or None, data["source_type"] or None
    if data["answer"]:
        asked = ask(
            data["query"],
            app=app,
            source_type=source_type,
            user=request.user,
            options=options,
            channel=Channel.MCP,
        )
        return AskResult(
            passages=[_passage(c) for c in asked.sources],
            tokens_in_context=asked.tokens_in_context,
            tokens_before=asked.tokens_before,
            trimmed=asked.trimmed,
            answer=Answer(
                text=asked.answer,
                mode=asked.answer_mode,
                query_id=asked.query_id,
                llm_model=asked.llm_model,
                llm_error=asked.llm_error,
            ),
        )
    found = retrieve(data["query"], filters={"app": app, "source_type": source_type}, **options.as_kwargs())
    return AskResult(
        passages=[_passage(c) for c in found.chunks],
        tokens_in_context=found.tokens_in_context,
        tokens_before=found.tokens_before,
        trimmed=found.trimmed,
    )


def apps_text(result: AppsResult) -> str:
    if not result.apps:
        return "The library is empty: nothing has been ingested yet."
    lines = [f"Embedding model: {result.embedding_model} ({result.embedding_dimensions} dimensions)"]
    for app in result.apps:
        lines.append(f"app {app.app}: {app.documents} documents, {app.chunks} chunks")
        lines += [
            f"  source_type {s.source_type}: {s.documents} documents, {s.chunks} chunks"
            + (f" ({', '.join(s.languages)})" if s.languages else "")
            for s in app.source_types
        ]
    return "\n".join(lines)


@server.tool(
    name="bib_apps",
    title="What the library holds",
    description=(
        "The apps and source types in the library, with document and chunk counts and languages, and the "
        "embedding model: what bib_ask can filter on. A database read; cheap."
    ),
    output_schema=AppsResult,
    read_only=True,
    destructive=False,
    idempotent=True,
    open_world=False,
)
@door(readable=apps_text)
def bib_apps(request: HttpRequest) -> AppsResult:
    by_app: dict[str, list[ScopeInfo]] = {}
    for scope in library_scopes():
        by_app.setdefault(scope.app, []).append(
            ScopeInfo(
                source_type=scope.source_type,
                documents=scope.documents,
                chunks=scope.chunks,
                languages=list(scope.languages),
            )
        )
    return AppsResult(
        apps=[
            AppInfo(
                app=app,
                documents=sum(s.documents for s in scopes),
                chunks=sum(s.chunks for s in scopes),
                source_types=scopes,
            )
            for app, scopes in by_app.items()
        ],
        embedding_model=configured_model_name(),
        embedding_dimensions=settings.EMBEDDING_DIMENSIONS,
    )


def _absolute(request: HttpRequest, report: dict) -> dict:
    if "admin_url" in report:
        path = report["admin_url"]
        if getattr(request, "mcp_local_user", None) is not None:
            report["admin_url"] = f"{settings.PUBLIC_URL}{path}"
        else:
            report["admin_url"] = request.build_absolute_uri(path)
    return report


def eval_text(report: dict) -> str:
    lines = []
    if "status" in report:
        lines.append(
            f"Evaluation run #{report['id']}: {report['status']}, {report['progress']}/{report['total']} "
            f"questions. {report['admin_url']}"
        )
        if report.get("error"):
            lines.append(f"Error: {report['error']}")
        if "summary" not in report:
            lines.append("Call bib_eval_run with this id to follow it.")
    if summary := report.get("summary"):
        line = (
            f"{summary.get('questions')} questions, top_k {summary.get('top_k')}, trim_threshold "
            f"{summary.get('trim_threshold')}, trim_window {summary.get('trim_window')}: avg tokens baseline "
            f"{summary.get('avg_tokens_baseline')}"
        )
        if summary.get("avg_tokens_trim") is not None:
            line += (
                f", trim {summary['avg_tokens_trim']} (reduction {summary.get('token_reduction_pct')}%), avg "
                f"overlap vs baseline {summary.get('avg_overlap_vs_baseline')}"
            )
        lines.append(line + ".")
        for n, result in enumerate(report.get("results", []), start=1):
            variants = result.get("variants", {})
            parts = [
                f"{name} {v.get('tokens')} tokens"
                + (
                    f", overlap {v['overlap_vs_baseline']}"
                    if v.get("overlap_vs_baseline") is not None
                    else ""
                )
                for name, v in variants.items()
            ]
            lines.append(f"[{n}] {result.get('question')}: {'; '.join(parts)}")
    return "\n".join(lines)


@server.tool(
    name="bib_eval_retrieval",
    title="A/B evaluation of trimming",
    description=(
        "Compare retrieval without (baseline) and with sentence trimming on questions (absent: the last 15 real "
        "ones), as `manage.py eval_retrieval --format json` does: summary + per-question results. Up to "
        "MCP_EVAL_INLINE_MAX questions it runs now (a few seconds, one embedding per question); beyond that it "
        "queues a run for a worker and returns its id and admin URL (follow it with bib_eval_run). `synthesize` "
        "also answers with the LLM per question and variant: slow and billed."
    ),
    input_schema=input_schema(EvalArgs),
    output_schema=EVAL_OUTPUT_SCHEMA,
    read_only=False,
    destructive=False,
    idempotent=False,
    open_world=False,
    permission=EVAL_PERMISSION,
)
@door(readable=eval_text)
def bib_eval_retrieval(request: HttpRequest, arguments: dict) -> dict:
    data = _valid(EvalArgsSerializer, arguments)
    report = evaluation.evaluation_request(
        user=request.user,
        questions=data.get("questions"),
        last=data.get("last"),
        channels=data.get("channels"),
        params={
            "variants": data.get("variants"),
            "top_k": data.get("top_k"),
            "trim_threshold": data.get("trim_threshold"),
            "trim_window": data.get("trim_window"),
            "synthesize": data["synthesize"],
            "app": data.get("app"),
            "source_type": data.get("source_type"),
        },
    )
    return _absolute(request, report)


@server.tool(
    name="bib_eval_run",
    title="An evaluation run",
    description=(
        "The status of an evaluation run that bib_eval_retrieval queued and, once done, its report (the same "
        "summary + results). A database read; cheap."
    ),
    input_schema=input_schema(RunArgs),
    output_schema=EVAL_OUTPUT_SCHEMA,
    read_only=True,
    destructive=False,
    idempotent=True,
    open_world=False,
    permission=EVAL_PERMISSION,
)
@door(readable=eval_text)
def bib_eval_run(request: HttpRequest, arguments: dict) -> dict:
    data = _valid(RunArgsSerializer, arguments)
    return _absolute(request, evaluation.evaluation_run_read(user=request.user, run_id=data["id"]))
