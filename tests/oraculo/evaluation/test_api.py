"""The staff API door: POST /api/v1/eval-runs queues a run (202), GET /api/v1/eval-runs/{id} follows it."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission, User
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from oraculo.models import EvalRun, OraculoQuery
from tests.oraculo.evaluation.test_harness import SEED_SUMMARY_KEYS
from tests.oraculo.evaluation.test_worker import run_worker

CREATE = "/api/v1/eval-runs"


ALL_PERMISSIONS = ("add_evalrun", "view_evalrun", "view_oraculoquery")


def staff_user(name: str, *codenames: str) -> User:
    user = User.objects.create_user(name, is_staff=True)
    user.user_permissions.set(Permission.objects.filter(codename__in=codenames))
    return user


def client_for(user: User) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.fixture
def staff(db) -> APIClient:
    return client_for(staff_user("staff", *ALL_PERMISSIONS))


@pytest.mark.django_db
def test_post_queues_a_run_and_get_follows_it_to_the_end(staff, library, monkeypatch):
    response = staff.post(
        CREATE,
        {
            "questions": [
                "How do I reset my password?",
                {"question": "How long is a reset link valid?", "expected_answer": "30 minutes"},
            ],
            "app": library,
            "top_k": 4,
            "trim_threshold": 0.85,
        },
        format="json",
    )
    assert response.status_code == 202, response.json()
    body = response.json()
    run = EvalRun.objects.get()
    assert body["id"] == run.pk and body["status"] == "queued" and body["total"] == 2
    assert body["url"].endswith(f"/api/v1/eval-runs/{run.pk}") and response["Location"] == body["url"]
    assert run.created_by.username == "staff"

    pending = staff.get(f"{CREATE}/{run.pk}").json()
    assert (pending["status"], pending["progress"], pending["total"], pending["summary"]) == (
        "queued",
        0,
        2,
        {},
    )
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
    response = staff.post(
        CREATE, {"app": library, "last": 2, "sweep": ["threshold=0.8,0.9", "window=0,1"]}, format="json"
    )
    assert response.status_code == 202, response.json()
    run = EvalRun.objects.get()
    assert [r.question for r in run.results.order_by("position")] == ["three", "two"]
    assert run.params["sweep"]["thresholds"] == [0.8, 0.9]
    assert run.params["sweep"]["drop_margins"] == []

    response = staff.post(
        CREATE, {"app": library, "last": 2, "sweep": ["window=1", "drop_margin=0.02,0.04"]}, format="json"
    )
    assert response.status_code == 202, response.json()
    assert EvalRun.objects.latest("pk").params["sweep"]["drop_margins"] == [0.02, 0.04]


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("body", "field", "message"),
    [
        ({"questions": ["Q"], "top_k": 50}, "top_k", "less than or equal to 20"),
        ({"questions": ["Q"], "variants": ["both"]}, "variants", "not a valid choice"),
        (
            {"questions": [{"question": "Q", "answer": "A"}]},
            "questions",
            "A question is a string or an object",
        ),
        ({"questions": ["  "]}, "questions", "cannot be blank"),
        ({"questions": ["Q"], "sweep": ["threshold=1:0:0.1"]}, "non_field_errors", "is after the stop"),
        ({"questions": ["Q"], "sweep": ["drop_margin=3"]}, "non_field_errors", "3 is outside [0, 2]"),
        ({"questions": ["Q"], "min_overlap": 90}, "non_field_errors", "give a sweep"),
        ({"questions": ["Q"], "sweep": ["window=0,1"], "min_retention": 99}, "min_retention", "labelled"),
        ({"questions": ["Q"], "last": 3}, "last", "Only without"),
        ({"questions": ["Q"], "speed": "fast"}, "speed", "Unknown field"),
        ({"app": "nobody-asked"}, "questions", "No questions found"),
    ],
)
def test_bad_requests_are_400_naming_the_field(staff, body, field, message):
    response = staff.post(CREATE, body, format="json")
    assert response.status_code == 400
    assert message in str(response.json()[field])
    assert not EvalRun.objects.exists()


@pytest.mark.django_db
def test_only_staff_may_use_it(library):
    anonymous = APIClient()
    refused = anonymous.post(CREATE, {"questions": ["Q"]}, format="json")
    assert refused.status_code == 401 and refused["WWW-Authenticate"] == "Token"
    assert anonymous.get(f"{CREATE}/1").status_code == 401
    user = APIClient()
    user.force_authenticate(User.objects.create_user("someone"))
    assert user.post(CREATE, {"questions": ["Q"]}, format="json").status_code == 403
    assert user.get(f"{CREATE}/1").status_code == 403
    assert not EvalRun.objects.exists()


@pytest.mark.django_db
def test_a_staff_token_works_and_unknown_runs_are_404(library):
    token = Token.objects.create(user=staff_user("robot", *ALL_PERMISSIONS))
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    response = client.post(CREATE, {"questions": ["Q"], "app": library}, format="json")
    assert response.status_code == 202
    assert client.get(f"{CREATE}/{response.json()['id']}").status_code == 200
    assert client.get(f"{CREATE}/999999").status_code == 404


@pytest.mark.django_db
def test_is_staff_alone_is_not_enough(library):
    """Any staff token used to queue runs and read every run; now the admin's model permissions are needed."""
    bare = client_for(staff_user("bare"))
    assert bare.post(CREATE, {"questions": ["Q"], "app": library}, format="json").status_code == 403
    reader = client_for(staff_user("reader", "view_evalrun"))
    assert reader.post(CREATE, {"questions": ["Q"], "app": library}, format="json").status_code == 403
    run_id = (
        client_for(staff_user("writer", "add_evalrun", "view_evalrun"))
        .post(CREATE, {"questions": ["Q"], "app": library}, format="json")
        .json()["id"]
    )
    assert bare.get(f"{CREATE}/{run_id}").status_code == 403
    assert EvalRun.objects.count() == 1


@pytest.mark.django_db
def test_evaluating_the_question_log_needs_the_permission_to_view_queries(library):
    OraculoQuery.objects.create(question="a real user's question", app=library)
    client = client_for(staff_user("writer", "add_evalrun", "view_evalrun"))
    response = client.post(CREATE, {"app": library}, format="json")
    assert response.status_code == 403 and "view queries" in response.json()["detail"]
    assert client.post(CREATE, {"questions": ["Q"], "app": library}, format="json").status_code == 202
    assert (
        client_for(staff_user("analyst", *ALL_PERMISSIONS))
        .post(CREATE, {"app": library}, format="json")
        .status_code
        == 202
    )


@pytest.mark.django_db
def test_other_peoples_runs_need_the_permission_to_view_queries(staff, library):
    run_id = staff.post(CREATE, {"app": library, "questions": ["Q"]}, format="json").json()["id"]
    assert staff.get(f"{CREATE}/{run_id}").status_code == 200
    other = client_for(staff_user("other", "add_evalrun", "view_evalrun"))
    assert other.get(f"{CREATE}/{run_id}").json() == {"detail": "No such evaluation run."}
    assert (
        client_for(staff_user("analyst", "view_evalrun", "view_oraculoquery"))
        .get(f"{CREATE}/{run_id}")
        .status_code
        == 200
    )


@pytest.mark.django_db
def test_runs_queued_or_running_are_capped_per_person(staff, library, settings):
    settings.EVAL_MAX_ACTIVE_RUNS_PER_USER = 2
    body = {"questions": ["Q"], "app": library}
    first, second = (staff.post(CREATE, body, format="json").json()["id"] for _ in range(2))
    refused = staff.post(CREATE, body, format="json")
    assert refused.status_code == 429 and int(refused["Retry-After"]) > 0
    assert refused.json() == {
        "detail": "You already have 2 evaluation run(s) queued or running (at most 2); "
        "wait until one finishes."
    }
    assert (
        client_for(staff_user("colleague", *ALL_PERMISSIONS)).post(CREATE, body, format="json").status_code
        == 202
    )
    EvalRun.objects.filter(pk=first).update(status=EvalRun.Status.DONE)
    assert staff.post(CREATE, body, format="json").status_code == 202
    assert EvalRun.objects.count() == 4


@pytest.mark.django_db
def test_queueing_is_throttled_per_person(staff, library, settings):
    settings.EVAL_MAX_ACTIVE_RUNS_PER_USER = 100
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {
            **settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"],
            "eval_runs": "2/hour",
        },
    }
    body = {"questions": ["Q"], "app": library}
    refused = [staff.post(CREATE, {"questions": ["Q"], "sweep": ["bogus"]}, format="json") for _ in range(5)]
    assert {r.status_code for r in refused} == {400}, "a refused body queues nothing and uses up nothing"
    assert [staff.post(CREATE, body, format="json").status_code for _ in range(3)] == [202, 202, 429]
    assert (
        client_for(staff_user("colleague", *ALL_PERMISSIONS)).post(CREATE, body, format="json").status_code
        == 202
    )


def test_the_schema_documents_both_endpoints(admin_client):
    schema = admin_client.get("/api/schema/", {"format": "json"}).json()
    assert set(schema["paths"]["/api/v1/eval-runs"]) == {"post"}
    assert set(schema["paths"]["/api/v1/eval-runs/{run_id}"]) == {"get"}
    assert "202" in schema["paths"]["/api/v1/eval-runs"]["post"]["responses"]
