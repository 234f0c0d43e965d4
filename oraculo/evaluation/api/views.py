"""Staff API for the A/B harness: queue an evaluation run (`evaluation_start`), then follow it. Thin doors: the
services' errors become responses in config.api's exception handler."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.reverse import reverse
from rest_framework.views import APIView

from config.doors import JSONParser
from oraculo.api.permissions import EvalRunPermission
from oraculo.api.throttling import EvalRunCreateThrottle
from oraculo.evaluation.api.serializers import (
    EvalRunCreatedSerializer,
    EvalRunCreateSerializer,
    EvalRunSerializer,
)
from oraculo.evaluation.params import eval_params_build
from oraculo.evaluation.selectors import run_report
from oraculo.evaluation.services import QuestionSource, eval_run_read, evaluation_start

TAGS = ["evaluation"]


class EvalRunCreateView(APIView):
    permission_classes = [EvalRunPermission]
    throttle_classes = [EvalRunCreateThrottle]
    parser_classes = [JSONParser]

    @extend_schema(
        operation_id="eval_run_create",
        tags=TAGS,
        request=EvalRunCreateSerializer,
        summary="Queue an A/B evaluation (or calibration sweep) of retrieval with and without trimming",
        description="Staff with the permission to add evaluation runs (and to view queries, to evaluate the "
        "question log). The run is executed by a worker (`manage.py db_worker`), never in the "
        "request; follow it at the returned URL.",
        responses={
            202: EvalRunCreatedSerializer,
            400: OpenApiResponse(description="Invalid parameters, or no questions to evaluate."),
            401: OpenApiResponse(description="No token or session, or an unknown or inactive token."),
            403: OpenApiResponse(description="Not staff, or without the permissions."),
            429: OpenApiResponse(
                description="Too many runs queued recently (THROTTLE_EVAL_RUNS) or "
                "queued or running now (EVAL_MAX_ACTIVE_RUNS_PER_USER)."
            ),
        },
        examples=[
            OpenApiExample("last 15, both variants", request_only=True, value={"top_k": 5}),
            OpenApiExample(
                "labelled sweep",
                request_only=True,
                value={
                    "questions": [
                        {"question": "How long does a reset link last?", "expected_answer": "30 minutes"}
                    ],
                    "sweep": ["threshold=0.70:0.90:0.02", "window=0,1,2"],
                    "min_retention": 99,
                },
            ),
        ],
    )
    def post(self, request: Request) -> Response:
        serializer = EvalRunCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        params = eval_params_build(
            variants=data.get("variants"),
            top_k=data.get("top_k"),
            trim_threshold=data.get("trim_threshold"),
            trim_window=data.get("trim_window"),
            synthesize=data["synthesize"],
            app=data.get("app"),
            source_type=data.get("source_type"),
            sweep=data.get("sweep"),
            min_retention=data.get("min_retention"),
            min_overlap=data.get("min_overlap"),
        )
        questions = QuestionSource(explicit=data.get("questions"), last=data.get("last"))
        run = evaluation_start(questions=questions, params=params, created_by=request.user)
        EvalRunCreateThrottle().count_run(request, self)
        url = reverse("eval-run-detail", args=[run.pk], request=request)
        body = EvalRunCreatedSerializer(
            {"id": run.pk, "status": run.status, "total": run.total, "url": url}
        ).data
        return Response(body, status=status.HTTP_202_ACCEPTED, headers={"Location": url})


class EvalRunDetailView(APIView):
    permission_classes = [EvalRunPermission]

    @extend_schema(
        operation_id="eval_run_retrieve",
        tags=TAGS,
        summary="An evaluation run: status, progress, summary and per-question results",
        description="Your own runs need the permission to view evaluation runs; other people's runs can hold "
        "real users' questions, so they also need the permission to view queries.",
        responses={
            200: EvalRunSerializer,
            401: OpenApiResponse(description="No token or session, or an unknown or inactive token."),
            403: OpenApiResponse(description="Not staff, or without the permission."),
            404: OpenApiResponse(description="No such run that you may read."),
        },
    )
    def get(self, request: Request, run_id: int) -> Response:
        run = eval_run_read(user=request.user, run_id=run_id)
        if run is None:
            raise NotFound("No such evaluation run.")
        report = run_report(run=run)
        body = {
            "id": run.pk,
            "status": run.status,
            "progress": run.progress,
            "total": run.total,
            "params": run.params,
            "summary": report["summary"],
            "error": run.error,
            "created_at": run.created_at,
            "started_at": run.started_at,
            "finished_at": run.finished_at,
            "results": report["results"],
        }
        if "sweep" in report:
            body["sweep"] = report["sweep"]
        return Response(EvalRunSerializer(body).data)
