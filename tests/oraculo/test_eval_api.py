"""The staff API door: POST /api/v1/eval-runs queues a run (202), GET /api/v1/eval-runs/{id} follows it."""
from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from oraculo.models import EvalRun, OraculoQuery
from tests.oraculo.test_evaluation import SEED_SUMMARY_KEYS
from tests.oraculo.test_eval_worker import run_worker

CREATE = "/api/v1/eval-runs"


@pytest.fixture
def staff(db) -> APIClient:
    client = APIClient()
    client.force_authenticate(User.objects.create_user("staff", is_staff=True))
    return client


@pytest.mark.django_db
def test_post_queues_a_run_and_get_follows_it_to_the_end(staff, library, monkeypatch):
    response = staff.post(CREATE, {"questions": ["How do I reset my password?",
                                                 {"question": "How long is a reset link valid?",
                                                  "expected_answer": "30 minutes"}],
                                   "app": library, "top_k": 4, "trim_threshold": 0.85}, format="json")
    assert response.status_code == 202, response.json()
    body = response.json()
    run = EvalRun.objects.get()
    assert body["id"] == run.pk and body["status"] == "queued" and body["total"] == 2
    assert body["url"].endswith(f"/api/v1/eval-runs/{run.pk}") and response["Location"] == body["url"]
    assert run.created_by.username == "staff"

    pending = staff.get(f"{CREATE}/{run.pk}").json()
    assert (pending["status"], pending["progress"], pending["total"], pending["summary"]) == ("queued", 0, 2, {})
    assert [r["variants"] for r in pending["results"]] == [{}, {}]

    run_worker(monkeypatch)
    done = staff.get(f"{CREATE}/{run.pk}").json()
    assert done["status"] == "done" and done["progress"] == 2 and done["error"] == ""
    assert list(done["summary"])[:8] == SEED_SUMMARY_KEYS
    assert done["summary"]["top_k"] == 4 and done["summary"]["trim_threshold"] == 0.85
    assert done["params"]["app"] == library
    first, second = done["results"]
    assert first["question"] == "How do I reset my password?" and "expected_answer" not in first
    assert second["expected_answer"] == "30 minutes"
    assert len(first["variants"]["baseline"]["chunk_ids"]) == 4
    assert isinstance(second["variants"]["trim"]["answer_in_context"], bool)
    assert done["started_at"] and done["finished_at"]


@pytest.mark.django_db
def test_without_questions_the_last_asked_ones_are_used(staff, library):
    for q in ["one", "two", "three"]:
        OraculoQuery.objects.create(question=q, app=library)
    response = staff.post(CREATE, {"app": library, "last": 2, "sweep": ["threshold=0.8,0.9", "window=0,1"]},
                          format="json")
    assert response.status_code == 202, response.json()
    run = EvalRun.objects.get()
    assert [r.question for r in run.results.order_by("position")] == ["three", "two"]
    assert run.params["sweep"]["thresholds"] == [0.8, 0.9]


@pytest.mark.django_db
@pytest.mark.parametrize("body, field, message", [
    ({"questions": ["Q"], "top_k": 50}, "top_k", "less than or equal to 20"),
    ({"questions": ["Q"], "variants": ["both"]}, "variants", "not a valid choice"),
    ({"questions": [{"question": "Q", "answer": "A"}]}, "questions", "A question is a string or an object"),
    ({"questions": ["  "]}, "questions", "cannot be blank"),
    ({"questions": ["Q"], "sweep": ["threshold=1:0:0.1"]}, "non_field_errors", "is after the stop"),
    ({"questions": ["Q"], "min_overlap": 90}, "non_field_errors", "give a sweep"),
    ({"questions": ["Q"], "sweep": ["window=0,1"], "min_retention": 99}, "min_retention", "labelled"),
    ({"questions": ["Q"], "last": 3}, "last", "Only without"),
    ({"questions": ["Q"], "speed": "fast"}, "speed", "Unknown field"),
    ({"app": "nobody-asked"}, "questions", "No questions found"),
])
def test_bad_requests_are_400_naming_the_field(staff, body, field, message):
    response = staff.post(CREATE, body, format="json")
    assert response.status_code == 400
    assert message in str(response.json()[field])
    assert not EvalRun.objects.exists()


@pytest.mark.django_db
def test_only_staff_may_use_it(library):
    anonymous = APIClient()
    assert anonymous.post(CREATE, {"questions": ["Q"]}, format="json").status_code in (401, 403)
    user = APIClient()
    user.force_authenticate(User.objects.create_user("someone"))
    assert user.post(CREATE, {"questions": ["Q"]}, format="json").status_code == 403
    assert user.get(f"{CREATE}/1").status_code == 403
    assert not EvalRun.objects.exists()


@pytest.mark.django_db
def test_a_staff_token_works_and_unknown_runs_are_404(library):
    token = Token.objects.create(user=User.objects.create_user("robot", is_staff=True))
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    response = client.post(CREATE, {"questions": ["Q"], "app": library}, format="json")
    assert response.status_code == 202
    assert client.get(f"{CREATE}/{response.json()['id']}").status_code == 200
    assert client.get(f"{CREATE}/999999").status_code == 404


def test_the_schema_documents_both_endpoints(admin_client):
    schema = admin_client.get("/api/schema/", {"format": "json"}).json()
    assert set(schema["paths"]["/api/v1/eval-runs"]) == {"post"}
    assert set(schema["paths"]["/api/v1/eval-runs/{run_id}"]) == {"get"}
    assert "202" in schema["paths"]["/api/v1/eval-runs"]["post"]["responses"]
