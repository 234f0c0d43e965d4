"""POST /api/v1/search: retrieval (optionally trimmed) for staff and API tokens."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from biblioteca.api.serializers import SearchRequestSerializer, SearchResponseSerializer
from biblioteca.retrieval import RetrievalOptions, retrieve
from config.api import IsStaffOrToken


class SearchView(APIView):
    permission_classes = [IsStaffOrToken]

    @extend_schema(
        request=SearchRequestSerializer,
        responses={
            200: SearchResponseSerializer,
            400: OpenApiResponse(description="Invalid body: messages per field."),
            401: OpenApiResponse(description="No token or session, or an unknown or inactive token."),
            403: OpenApiResponse(description="Signed in, but neither staff nor an API token's user."),
            503: OpenApiResponse(description="Database or embedding model unavailable."),
        },
        summary="Search the library",
        tags=["biblioteca"],
    )
    def post(self, request):
        params = SearchRequestSerializer(data=request.data)
        params.is_valid(raise_exception=True)
        data = params.validated_data
        result = retrieve(
            data["query"],
            filters={"app": data["app"] or None, "source_type": data["source_type"] or None},
            **RetrievalOptions.from_data(data).as_kwargs(),
        )
        return Response(
            SearchResponseSerializer(
                {
                    "chunks": [c.as_dict() for c in result.chunks],
                    "tokens_in_context": result.tokens_in_context,
                    "tokens_before": result.tokens_before,
                    "trimmed": result.trimmed,
                    "timings_ms": result.timings_ms,
                }
            ).data
        )
