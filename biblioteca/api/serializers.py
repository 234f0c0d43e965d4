"""Request and response shapes of the search API."""

from __future__ import annotations

from django.conf import settings
from rest_framework import serializers

from biblioteca.search import MAX_TOP_K
from config.api import StrictInputSerializer, TextField


class SearchRequestSerializer(StrictInputSerializer):
    query = TextField(trim_whitespace=True)
    top_k = serializers.IntegerField(min_value=1, max_value=MAX_TOP_K, default=5)
    trim = serializers.BooleanField(required=False, allow_null=True, default=None)
    hybrid = serializers.BooleanField(
        required=False,
        allow_null=True,
        default=None,
        help_text="Fuse full-text search with the vector search; null follows RETRIEVAL_HYBRID.",
    )
    trim_threshold = serializers.FloatField(
        min_value=-1.0, max_value=1.0, required=False, allow_null=True, default=None
    )
    trim_window = serializers.IntegerField(
        min_value=0, max_value=10, required=False, allow_null=True, default=None
    )
    trim_min_sentences = serializers.IntegerField(
        min_value=1, max_value=50, required=False, allow_null=True, default=None
    )
    # null is the filter left out, as in the MCP tools' schemas
    app = TextField(required=False, allow_blank=True, allow_null=True, default="", max_length=100)
    source_type = TextField(required=False, allow_blank=True, allow_null=True, default="", max_length=50)

    def validate_query(self, value: str) -> str:
        if len(value) > settings.QUERY_MAX_LENGTH:
            raise serializers.ValidationError(
                f"Ensure this field has no more than {settings.QUERY_MAX_LENGTH} characters."
            )
        return value


class ChunkSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    chunk_id = serializers.CharField(
        help_text="`path#index` of the chunk the search found, as MCP's bib_ask names it."
    )
    document_id = serializers.IntegerField()
    title = serializers.CharField()
    heading_path = serializers.ListField(child=serializers.CharField())
    url = serializers.CharField(allow_blank=True)
    score = serializers.FloatField()
    content = serializers.CharField()


class SearchResponseSerializer(serializers.Serializer):
    chunks = ChunkSerializer(many=True)
    tokens_in_context = serializers.IntegerField()
    tokens_before = serializers.IntegerField()
    trimmed = serializers.BooleanField()
    timings_ms = serializers.DictField(child=serializers.FloatField())
