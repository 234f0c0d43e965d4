"""Request and response shapes of the Oráculo API; the response serializers also type the OpenAPI schema."""

from __future__ import annotations

from django.conf import settings
from rest_framework import serializers

from config.api import StrictInputSerializer, TextField
from oraculo.models import AnswerMode


class RoundedFloatField(serializers.FloatField):
    def to_representation(self, value):
        return None if value is None else round(float(value), 4)


PAGE_URL_MAX_LENGTH = 2000


class PageUrlField(TextField):
    """Where the question was asked: metadata for the log, so it never refuses a question a real page sends.
    Any http(s) address is taken (an intranet host without a dot too) and kept to its first 2,000 characters."""

    default_error_messages = {"not_http": "Must be an http:// or https:// address."}

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        if value and not value.lower().startswith(("http://", "https://")):
            self.fail("not_http")
        return value[:PAGE_URL_MAX_LENGTH]


class AskSerializer(StrictInputSerializer):
    question = TextField()
    app = TextField(
        required=False,
        allow_blank=True,
        max_length=100,
        help_text="Only for staff and API tokens: a widget key always asks about its own app.",
    )
    source_type = TextField(
        required=False,
        allow_blank=True,
        max_length=50,
        help_text="Limit the search to one source type (e.g. a language or `faq`).",
    )
    page_url = PageUrlField(
        required=False,
        allow_blank=True,
        help_text="The page the question was asked from (http or https; the log keeps its first 2,000 characters).",
    )
    previous_query_id = serializers.IntegerField(
        required=False,
        min_value=1,
        max_value=2**63 - 1,
        help_text="A follow-up: the query_id of the previous answer in this conversation.",
    )
    previous_feedback_token = TextField(
        required=False,
        max_length=128,
        help_text="With previous_query_id: its feedback_token, which only whoever asked it has.",
    )

    def validate(self, attrs):
        if ("previous_query_id" in attrs) != bool(attrs.get("previous_feedback_token")):
            raise serializers.ValidationError(
                {"previous_feedback_token": ["previous_query_id and previous_feedback_token go together."]}
            )
        return attrs

    def get_fields(self):
        """The length limit is read per request, so QUERY_MAX_LENGTH can change without a restart."""
        fields = super().get_fields()
        fields["question"] = TextField(
            max_length=settings.QUERY_MAX_LENGTH,
            error_messages={
                "blank": "The question may not be empty.",
                "required": "A question is required.",
                "null": "The question may not be null.",
                "max_length": "The question is too long: at most {max_length} characters.",
            },
        )
        return fields


class SourceSerializer(serializers.Serializer):
    id = serializers.IntegerField(help_text="The chunk's id; citation [n] refers to the n-th source.")
    title = serializers.CharField()
    heading_path = serializers.ListField(child=serializers.CharField())
    url = serializers.CharField()
    score = RoundedFloatField(help_text="Cosine similarity to the question.")
    content = serializers.CharField(help_text="A `[Doc: ...]` line, then the (possibly trimmed) passage.")
    html = serializers.CharField(
        default="", help_text="The passage rendered from markdown and sanitised: safe to insert."
    )


class LatencySerializer(serializers.Serializer):
    embedding = RoundedFloatField()
    search = RoundedFloatField()
    trim = RoundedFloatField(allow_null=True, help_text="Null when trimming is off.")
    llm = RoundedFloatField(allow_null=True, help_text="Null when no LLM was called.")
    total = RoundedFloatField()


class AskResponseSerializer(serializers.Serializer):
    query_id = serializers.IntegerField(
        help_text="Send feedback on this answer to /queries/{query_id}/feedback."
    )
    feedback_token = serializers.CharField(help_text="Send it with the feedback: only whoever asked has it.")
    answer = serializers.CharField(help_text="Markdown, citing sources as [1], [2]...")
    answer_html = serializers.CharField(
        help_text="The answer rendered and sanitised (allow-listed tags, http(s) "
        "and mailto links only, no images): safe to insert."
    )
    answer_mode = serializers.ChoiceField(
        choices=AnswerMode.choices, help_text="`extractive` when no LLM is configured or it failed."
    )
    sources = SourceSerializer(many=True)
    trimmed = serializers.BooleanField()
    tokens_in_context = serializers.IntegerField()
    tokens_before = serializers.IntegerField(help_text="Tokens of the context before trimming.")
    latency_ms = LatencySerializer()

    def to_representation(self, instance):
        """Each source's `html` comes beside it from the result (rendering is the service's job)."""
        data = super().to_representation(instance)
        for source, html in zip(data["sources"], getattr(instance, "sources_html", None) or [], strict=False):
            source["html"] = html
        return data


LATENCY_KEYS = tuple(LatencySerializer().fields)


def _rounded(value) -> float | None:
    return None if value is None else round(float(value), 4)


def ask_response_data(result) -> dict:
    """What AskResponseSerializer makes of an AskResult, built directly: DRF's per-field machinery (fields
    deep-copied per instance, then one call per field and source) took 0.35 ms of CPU per answer, 25 times this,
    in a repeated ask of about 4.5 ms. The serializer still types the schema; tests/oraculo/test_api_ask.py pins
    the two equal."""
    htmls = list(getattr(result, "sources_html", None) or [])
    latency = result.latency_ms
    return {
        "query_id": int(result.query_id),
        "feedback_token": str(result.feedback_token),
        "answer": str(result.answer),
        "answer_html": str(result.answer_html),
        "answer_mode": str(result.answer_mode),
        "sources": [
            {
                "id": int(chunk.id),
                "title": str(chunk.shown_title),
                "heading_path": [str(h) for h in chunk.shown_heading_path],
                "url": str(chunk.url),
                "score": _rounded(chunk.score),
                "content": str(chunk.content),
                "html": htmls[n] if n < len(htmls) else "",
            }
            for n, chunk in enumerate(result.sources)
        ],
        "trimmed": bool(result.trimmed),
        "tokens_in_context": int(result.tokens_in_context),
        "tokens_before": int(result.tokens_before),
        "latency_ms": {key: _rounded(latency.get(key)) for key in LATENCY_KEYS},
    }


class FeedbackSerializer(StrictInputSerializer):
    feedback_token = TextField(
        required=False,
        allow_blank=True,
        max_length=128,
        help_text="The feedback_token that /ask returned with this query_id.",
    )
    helpful = serializers.BooleanField()
    comment = TextField(required=False, allow_blank=True, max_length=2000)


class FeedbackRecordedSerializer(serializers.Serializer):
    query_id = serializers.IntegerField(source="pk")
    helpful = serializers.BooleanField()
    comment = serializers.CharField(source="feedback_comment")
    feedback_at = serializers.DateTimeField()


class HealthDatabaseSerializer(serializers.Serializer):
    ok = serializers.BooleanField()


class HealthPgvectorSerializer(serializers.Serializer):
    ok = serializers.BooleanField()
    version = serializers.CharField(help_text="Installed pgvector version; empty when missing.")


class HealthEmbedderSerializer(serializers.Serializer):
    backend = serializers.CharField()
    model = serializers.CharField()
    dimensions = serializers.IntegerField()


class HealthLLMSerializer(serializers.Serializer):
    configured = serializers.BooleanField()
    model = serializers.CharField()


class HealthSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=["ok", "unavailable"])
    database = HealthDatabaseSerializer(required=False, help_text="Staff only.")
    pgvector = HealthPgvectorSerializer(required=False, help_text="Staff only.")
    embedder = HealthEmbedderSerializer(required=False, help_text="Staff only.")
    llm = HealthLLMSerializer(required=False, help_text="Staff only.")


class OraculoErrorSerializer(serializers.Serializer):
    detail = serializers.CharField()


VALIDATION_ERROR_SCHEMA = {
    "type": "object",
    "description": "Field name (or `non_field_errors`) -> messages.",
    "additionalProperties": {"type": "array", "items": {"type": "string"}},
}
