"""The Oráculo API: ask, give feedback on an answer, and health. Thin doors onto answering/actions/selectors."""

from __future__ import annotations

from django.http import StreamingHttpResponse
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.authentication import SessionAuthentication
from rest_framework.exceptions import NotAuthenticated, Throttled
from rest_framework.permissions import AllowAny
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.views import APIView

from config.doors import JSONParser, TokenAuthentication
from oraculo import actions
from oraculo.answering import ask_answer, ask_prepare
from oraculo.api.authentication import WidgetKeyAuthentication, widget_key_of
from oraculo.api.permissions import IsWidgetKeyStaffOrToken, WidgetKeyOriginAllowed
from oraculo.api.serializers import (
    VALIDATION_ERROR_SCHEMA,
    AskResponseSerializer,
    AskSerializer,
    FeedbackRecordedSerializer,
    FeedbackSerializer,
    HealthSerializer,
    OraculoErrorSerializer,
    SourceSerializer,
    ask_response_data,
)
from oraculo.api.streaming import EventStreamRenderer, ask_event_stream
from oraculo.api.throttling import ClientIPRateThrottle, WidgetKeyDailyQuota, WidgetKeyRateThrottle
from oraculo.models import Channel
from oraculo.selectors import health_check

TAGS = ["oraculo"]
ERROR = OraculoErrorSerializer
ERROR_RESPONSES = {
    400: OpenApiResponse(VALIDATION_ERROR_SCHEMA, description="Invalid body: messages per field."),
    401: OpenApiResponse(ERROR, description="No credential, or an unknown or inactive widget key."),
    403: OpenApiResponse(ERROR, description="Origin not allowed for the key, or not allowed to do this."),
    429: OpenApiResponse(
        ERROR,
        description="Rate limit of the client IP or of the key, or the key's daily quota; see Retry-After.",
    ),
}
CALLER_AUTHENTICATION = [WidgetKeyAuthentication, SessionAuthentication, TokenAuthentication]


class CallerAPIView(APIView):
    """The widget's endpoints: a widget key (from an allowed origin, throttled), a staff session or a token.

    Says how to authenticate when no credential came, instead of DRF's generic message.
    """

    authentication_classes = CALLER_AUTHENTICATION
    permission_classes = [IsWidgetKeyStaffOrToken, WidgetKeyOriginAllowed]
    throttle_classes = [ClientIPRateThrottle, WidgetKeyRateThrottle, WidgetKeyDailyQuota]
    parser_classes = [JSONParser]

    def check_throttles(self, request: Request) -> None:
        """In order, stopping at the first refusal: DRF runs every throttle, so a request that the per-IP limit
        refuses would still use up the key's rate and quota for every other visitor."""
        for throttle in self.get_throttles():
            if not throttle.allow_request(request, self):
                raise Throttled(throttle.wait(), detail=getattr(throttle, "detail", None))

    def permission_denied(self, request: Request, message=None, code=None):
        if request.authenticators and not request.successful_authenticator:
            raise NotAuthenticated(IsWidgetKeyStaffOrToken.message)
        super().permission_denied(request, message=message, code=code)


class AskView(CallerAPIView):
    renderer_classes = [*api_settings.DEFAULT_RENDERER_CLASSES, EventStreamRenderer]

    def finalize_response(self, request: Request, response, *args, **kwargs):
        """Errors are JSON even for a caller that asked for a stream: nothing has been streamed yet."""
        if isinstance(response, Response) and isinstance(
            getattr(request, "accepted_renderer", None), EventStreamRenderer
        ):
            request.accepted_renderer, request.accepted_media_type = JSONRenderer(), "application/json"
        return super().finalize_response(request, response, *args, **kwargs)

    @extend_schema(
        operation_id="ask",
        tags=TAGS,
        request=AskSerializer,
        summary="Answer a question from the documentation",
        description="Retrieves the best passages (scoped to the widget key's app), answers with the LLM citing "
        "them as [1], [2]..., or extractively when no LLM is configured or it fails.\n\n"
        "With `Accept: text/event-stream` the answer streams as server-sent events: `sources` "
        "(`{sources, trimmed}`), then `delta` events (`{text}`) as the answer is written, then `done` "
        "with the whole response below (its `answer` and `answer_html` replace what was streamed: if "
        "the LLM fails mid-stream it is the extractive answer), or `error` (`{detail}`) if the "
        "answer could not be completed. Errors before the stream starts are JSON, as without it.",
        responses={
            200: AskResponseSerializer,
            **ERROR_RESPONSES,
            404: OpenApiResponse(
                ERROR,
                description="No previous query with this id and feedback token "
                "(missing, wrong, or another caller's: all the same).",
            ),
            503: OpenApiResponse(ERROR, description="Database or embedding model unavailable."),
        },
        examples=[
            OpenApiExample(
                "question",
                request_only=True,
                value={
                    "question": "How do I reset my password?",
                    "page_url": "https://help.example.com/account",
                },
            )
        ],
    )
    def post(self, request: Request) -> Response:
        serializer = AskSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        widget_key = widget_key_of(request)
        prepared = ask_prepare(
            data["question"],
            app=data.get("app") or None,
            source_type=data.get("source_type") or None,
            widget_key=widget_key,
            user=request.user,
            page_url=data.get("page_url", ""),
            previous_query_id=data.get("previous_query_id"),
            previous_token=data.get("previous_feedback_token", ""),
            channel=Channel.API if widget_key is None else Channel.WIDGET,
        )
        if isinstance(request.accepted_renderer, EventStreamRenderer):
            sources = SourceSerializer(prepared.chunks, many=True).data
            for source, html in zip(sources, prepared.sources_html, strict=True):
                source["html"] = html
            stream = ask_event_stream(prepared=prepared, sources=sources, done=ask_response_data)
            response = StreamingHttpResponse(stream, content_type="text/event-stream; charset=utf-8")
            response["Cache-Control"] = "no-cache"
            response["X-Accel-Buffering"] = "no"  # nginx: pass each event on as it comes
            return response
        return Response(ask_response_data(ask_answer(prepared=prepared)))


class QueryFeedbackView(CallerAPIView):
    @extend_schema(
        operation_id="query_feedback",
        tags=TAGS,
        request=FeedbackSerializer,
        summary="Say whether an answer helped",
        description="Accepted once per query, with the `feedback_token` that /ask returned, from the widget key "
        "or user that asked it.",
        responses={
            200: FeedbackRecordedSerializer,
            **ERROR_RESPONSES,
            404: OpenApiResponse(
                ERROR,
                description="No query with this id and feedback token (missing, "
                "wrong, or another caller's: all the same).",
            ),
            409: OpenApiResponse(ERROR, description="Feedback on this query was already recorded."),
        },
    )
    def post(self, request: Request, query_id: int) -> Response:
        serializer = FeedbackSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        query = actions.query_feedback_record(
            query_id=query_id,
            token=data.get("feedback_token", ""),
            helpful=data["helpful"],
            comment=data.get("comment", ""),
            widget_key=widget_key_of(request),
            user=request.user,
        )
        return Response(FeedbackRecordedSerializer(query).data)


class HealthView(APIView):
    """Public and unauthenticated, so load balancers can probe it; it never embeds nor calls the LLM. Anonymous
    callers learn only ok/unavailable: versions and model names help an attacker more than a load balancer."""

    authentication_classes = [SessionAuthentication, TokenAuthentication]
    permission_classes = [AllowAny]
    throttle_classes: list = []

    @extend_schema(
        operation_id="health",
        tags=TAGS,
        summary="Is the service able to answer?",
        description="Anyone gets `status`; staff also get the database, pgvector, embedder and LLM details.",
        responses={
            200: HealthSerializer,
            503: OpenApiResponse(HealthSerializer, description="The database or pgvector is unavailable."),
        },
    )
    def get(self, request: Request) -> Response:
        health = health_check()
        body = {"status": "ok" if health.ok else "unavailable"}
        if request.user and request.user.is_staff:
            body |= {
                "database": {"ok": health.database},
                "pgvector": {"ok": bool(health.pgvector_version), "version": health.pgvector_version},
                "embedder": {
                    "backend": health.embedder_backend,
                    "model": health.embedder_model,
                    "dimensions": health.embedder_dimensions,
                },
                "llm": {"configured": health.llm_configured, "model": health.llm_model},
            }
        return Response(
            HealthSerializer(body).data,
            status=status.HTTP_200_OK if health.ok else status.HTTP_503_SERVICE_UNAVAILABLE,
        )
