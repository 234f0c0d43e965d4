"""The one exception handler of every API: an ApplicationError answers its own status, message, extra fields and
Retry-After; a component that is down is a 503 that names no internals."""

from __future__ import annotations

import pytest

from biblioteca.embeddings import EmbeddingError
from biblioteca.errors import (
    ApplicationError,
    ConflictError,
    NotAllowedError,
    NotFoundError,
    UnavailableError,
)
from config.api import exception_handler
from oraculo.actions import FeedbackAlreadyGiven, FeedbackQueryNotFound, InvalidOrigin
from oraculo.answering import AppNotAllowed, ThreadNotFound
from oraculo.evaluation.params import EvalParamsError
from oraculo.evaluation.questions import QuestionFileError
from oraculo.evaluation.services import TooManyActiveRuns
from oraculo.llm import LLMError


@pytest.mark.parametrize(
    ("error", "status"),
    [
        (ApplicationError("bad"), 400),
        (NotAllowedError("bad"), 403),
        (NotFoundError("bad"), 404),
        (ConflictError("bad"), 409),
        (QuestionFileError("bad"), 400),
        (InvalidOrigin("bad"), 400),
        (AppNotAllowed("bad"), 403),
        (ThreadNotFound("bad"), 404),
        (FeedbackQueryNotFound("bad"), 404),
        (FeedbackAlreadyGiven("bad"), 409),
        (TooManyActiveRuns("bad"), 429),
    ],
)
def test_an_application_error_answers_its_status_and_message(error, status):
    response = exception_handler(error, {})
    assert response.status_code == status
    assert response.data == {"detail": "bad"}


def test_extra_fields_join_the_detail_and_retry_after_is_a_header():
    response = exception_handler(ConflictError("busy", extra={"run_id": 7}), {})
    assert response.data == {"detail": "busy", "run_id": 7}
    assert "Retry-After" not in response
    throttled = exception_handler(TooManyActiveRuns("wait"), {})
    assert throttled["Retry-After"] == "60"


@pytest.mark.parametrize(
    ("error", "detail"),
    [
        (
            EmbeddingError("http://10.0.0.7:9000/v1 refused the connection"),
            "The embedding model is unavailable. Try again shortly.",
        ),
        (
            LLMError("the LLM request to http://10.0.0.8/v1 failed"),
            "The LLM is unavailable. Try again shortly.",
        ),
        (UnavailableError("The search index is rebuilding."), "The search index is rebuilding."),
    ],
)
def test_a_component_that_is_down_is_a_503_without_its_internal_message(error, detail):
    response = exception_handler(error, {})
    assert response.status_code == 503
    assert response.data == {"detail": detail}
    assert response["Retry-After"] == "30"


def test_a_bad_parameter_is_also_named_as_an_api_field_error():
    response = exception_handler(EvalParamsError("needs labels", field="min_retention"), {})
    assert response.status_code == 400
    assert response.data == {"detail": "needs labels", "min_retention": ["needs labels"]}


def test_other_exceptions_are_left_to_django():
    assert exception_handler(ValueError("a bug"), {}) is None
