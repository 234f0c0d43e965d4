"""Request and response shapes of the staff evaluation API (they also type the OpenAPI schema)."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from biblioteca.search import MAX_TOP_K
from config.api import StrictInputSerializer
from oraculo.evaluation.params import MAX_TRIM_WINDOW, VARIANTS
from oraculo.evaluation.questions import DEFAULT_LAST, LabelledQuestion
from oraculo.models import EvalRun

MAX_API_QUESTIONS = 1000

QUESTION_ITEM_SCHEMA = {
    "oneOf": [
        {"type": "string", "example": "How do I reset my password?"},
        {
            "type": "object",
            "required": ["question"],
            "properties": {"question": {"type": "string"}, "expected_answer": {"type": "string"}},
        },
    ]
}


@extend_schema_field(QUESTION_ITEM_SCHEMA)
class QuestionItemField(serializers.Field):
    """A question as a string, or as {"question", "expected_answer"} for a labelled one."""

    default_error_messages = {
        "invalid": 'A question is a string or an object {{"question": "...", "expected_answer": "..."}}.',
        "blank": "A question cannot be blank.",
    }

    def to_internal_value(self, data) -> LabelledQuestion:
        if isinstance(data, str):
            question, expected = data, ""
        elif isinstance(data, dict) and set(data) <= {"question", "expected_answer"}:
            question, expected = data.get("question"), data.get("expected_answer") or ""
            if not isinstance(question, str) or not isinstance(expected, str):
                self.fail("invalid")
        else:
            self.fail("invalid")
        if not question.strip():
            self.fail("blank")
        return LabelledQuestion(question.strip(), expected.strip())

    def to_representation(self, value: LabelledQuestion) -> dict:
        return value.as_dict()


class EvalRunCreateSerializer(StrictInputSerializer):
    questions = serializers.ListField(
        child=QuestionItemField(),
        required=False,
        allow_empty=False,
        max_length=MAX_API_QUESTIONS,
        help_text=f"Explicit questions. Absent: the last `last` distinct asked questions (default {DEFAULT_LAST}).",
    )
    last = serializers.IntegerField(
        required=False,
        min_value=1,
        max_value=MAX_API_QUESTIONS,
        help_text="Without `questions`: how many recent distinct questions.",
    )
    variants = serializers.ListField(
        child=serializers.ChoiceField(choices=VARIANTS),
        required=False,
        allow_empty=False,
        help_text="Default: both.",
    )
    top_k = serializers.IntegerField(required=False, min_value=1, max_value=MAX_TOP_K, help_text="Default 5.")
    trim_threshold = serializers.FloatField(
        required=False, min_value=-1, max_value=1, help_text="Default: the RETRIEVAL_TRIM_THRESHOLD setting."
    )
    trim_window = serializers.IntegerField(
        required=False,
        min_value=0,
        max_value=MAX_TRIM_WINDOW,
        help_text="Default: the RETRIEVAL_TRIM_WINDOW setting.",
    )
    synthesize = serializers.BooleanField(
        required=False, default=False, help_text="Also answer with the LLM for each variant."
    )
    app = serializers.CharField(required=False, allow_blank=True, max_length=100)
    source_type = serializers.CharField(required=False, allow_blank=True, max_length=50)
    sweep = serializers.ListField(
        child=serializers.CharField(),
        required=False,
        allow_empty=False,
        help_text='Calibration sweep, e.g. ["threshold=0.70:0.90:0.02", "window=0,1,2"]; add '
        '"drop_margin=0.02,0.03,0.04" to sweep the drop margin too.',
    )
    min_retention = serializers.FloatField(
        required=False,
        min_value=0,
        max_value=100,
        help_text="Sweep floor: answer retention % (labelled questions).",
    )
    min_overlap = serializers.FloatField(
        required=False,
        min_value=0,
        max_value=100,
        help_text="Sweep floor: chunk overlap with the baseline, %.",
    )

    def validate(self, attrs):
        if attrs.get("questions") and "last" in attrs:
            raise serializers.ValidationError({"last": ["Only without `questions`."]})
        return attrs


class EvalRunCreatedSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    status = serializers.CharField(help_text="`queued`: a worker picks it up.")
    total = serializers.IntegerField(help_text="Questions to evaluate.")
    url = serializers.CharField(help_text="Where to follow the run.")


@extend_schema_field(OpenApiTypes.OBJECT)
class _Object(serializers.JSONField):
    """A free-form JSON object in the schema."""


class EvalResultSerializer(serializers.Serializer):
    question = serializers.CharField()
    expected_answer = serializers.CharField(required=False)
    variants = _Object(
        help_text="baseline / trim: chunk_ids, top_score, tokens, tokens_before, latency_ms "
        "(+ overlap_vs_baseline and trim_embedding_calls for trim, answer_in_context when "
        "labelled, answer and cites_source when synthesized). Empty while pending."
    )
    answer_similarity = serializers.FloatField(required=False)
    error = serializers.CharField(required=False)


class EvalRunSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    status = serializers.ChoiceField(choices=EvalRun.Status.choices)
    progress = serializers.IntegerField(help_text="Questions evaluated so far.")
    total = serializers.IntegerField()
    params = _Object()
    summary = _Object(
        help_text="questions, top_k, trim_threshold, trim_window, avg_tokens_baseline, avg_tokens_trim, "
        "token_reduction_pct, avg_overlap_vs_baseline, then latency, retention, similarity and citation "
        "measures as they apply. Empty until done."
    )
    sweep = _Object(required=False, help_text="For a sweep: rows, Pareto front, recommendation, env lines.")
    error = serializers.CharField(allow_blank=True)
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)
    results = EvalResultSerializer(many=True)
