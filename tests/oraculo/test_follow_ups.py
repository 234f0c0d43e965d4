"""Follow-up questions: /ask with the previous query's id and feedback token. Retrieval searches the question
rewritten with its context (by the LLM, or joined to the previous question without one), the LLM sees the
earlier turns (bounded), the log links each turn to its thread, and only the asker can continue it."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from oraculo.evaluation.selectors import recent_questions
from oraculo.models import OraculoQuery, WidgetKey

pytestmark = pytest.mark.django_db

ASK = "/api/v1/ask"
FIRST, FOLLOW = "When are invoices sent?", "Who gets them?"


@pytest.fixture
def key(library) -> WidgetKey:
    return WidgetKey.objects.create(name="help", app=library, allowed_origins=[], rate_limit="100/min")


def ask(key, question, previous=None, *, client=None, **extra):
    body = {"question": question, "source_type": "en", **extra}
    if previous is not None:
        body |= {
            "previous_query_id": previous["query_id"],
            "previous_feedback_token": previous["feedback_token"],
        }
    headers = {"HTTP_X_WIDGET_KEY": key.key} if key is not None else {}
    return (client or APIClient()).post(ASK, json.dumps(body), content_type="application/json", **headers)


def top_file(body) -> str:
    return body["sources"][0]["content"]


def test_a_follow_up_finds_what_the_bare_question_would_not(key):
    first = ask(key, FIRST).json()
    bare = ask(key, FOLLOW).json()
    follow = ask(key, FOLLOW, first)
    assert follow.status_code == 200, follow.content
    follow = follow.json()
    assert "billing contact" not in bare["sources"][0]["content"]
    assert "billing contact" in follow["sources"][0]["content"] and "Billing" in top_file(follow)
    row = OraculoQuery.objects.get(pk=follow["query_id"])
    assert row.question == FOLLOW and row.retrieval_question == f"{FIRST} {FOLLOW}"
    assert row.previous_id == row.thread_id == first["query_id"]
    assert OraculoQuery.objects.get(pk=first["query_id"]).thread_id is None


def test_each_turn_links_to_the_first_question_of_its_thread(key):
    first = ask(key, FIRST).json()
    second = ask(key, FOLLOW, first).json()
    third = ask(key, "Can I download old ones?", second).json()
    row = OraculoQuery.objects.get(pk=third["query_id"])
    assert row.previous_id == second["query_id"] and row.thread_id == first["query_id"]
    assert row.retrieval_question == f"{FOLLOW} Can I download old ones?"  # the previous question, joined


def test_with_an_llm_the_question_is_rewritten_and_earlier_turns_are_seen_bounded(key, fake_llm, settings):
    settings.THREAD_MAX_TURNS = 2
    turns = [ask(key, FIRST).json()]
    for question in (FOLLOW, "Can I download old ones?", "As PDF?"):
        turns.append(ask(key, question, turns[-1]).json())
    rows = {r.pk: r for r in OraculoQuery.objects.all()}
    assert rows[turns[1]["query_id"]].retrieval_question == f"{FIRST} [{FOLLOW}]"  # the fake LLM's rewrite
    assert "billing contact" in turns[1]["sources"][0]["content"]
    answering = [
        r["body"]["messages"]
        for r in fake_llm.requests
        if "standalone search query" not in r["body"]["messages"][0]["content"]
    ]
    last = answering[-1]
    assert [m["role"] for m in last] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert [m["content"] for m in last if m["role"] == "user"] == [
        FOLLOW,
        "Can I download old ones?",
        "As PDF?",
    ]
    assert last[2]["content"] == turns[1]["answer"]
    assert all(r.answer_mode == "llm" for r in rows.values())


def test_a_failing_rewrite_falls_back_to_joining(key, fake_llm):
    first = ask(key, FIRST).json()
    fake_llm.reset("error")
    row = OraculoQuery.objects.get(pk=ask(key, FOLLOW, first).json()["query_id"])
    assert row.retrieval_question == f"{FIRST} {FOLLOW}" and row.answer_mode == "extractive"


def test_a_follow_up_streams_too(key):
    first = ask(key, FIRST).json()
    body = {
        "question": FOLLOW,
        "source_type": "en",
        "previous_query_id": first["query_id"],
        "previous_feedback_token": first["feedback_token"],
    }
    response = APIClient().post(
        ASK,
        json.dumps(body),
        content_type="application/json",
        HTTP_ACCEPT="text/event-stream",
        HTTP_X_WIDGET_KEY=key.key,
    )
    raw = b"".join(response.streaming_content).decode()
    done = json.loads(raw.rsplit("event: done\ndata: ", 1)[1])
    assert OraculoQuery.objects.get(pk=done["query_id"]).previous_id == first["query_id"]


# --- only the asker continues its thread ---------------------------------------------------------------------


def test_another_key_or_a_wrong_token_cannot_continue_the_thread(key, library):
    first = ask(key, FIRST).json()
    other = WidgetKey.objects.create(name="other", app=library, allowed_origins=[])
    for caller, previous in (
        (other, first),
        (key, {**first, "feedback_token": "0" * 64}),
        (key, {**first, "query_id": first["query_id"] + 1000}),
    ):
        response = ask(caller, FOLLOW, previous)
        assert response.status_code == 404, response.content
        assert response.json() == {"detail": "No previous query with this id and feedback token."}
    assert OraculoQuery.objects.count() == 1


def test_staff_cannot_continue_a_widget_visitors_thread_but_their_own(key, library):
    first = ask(key, FIRST).json()
    client = APIClient()
    staff = get_user_model().objects.create_user("staff", password="pw-long-enough", is_staff=True)
    client.force_login(staff)
    assert ask(None, FOLLOW, first, client=client, app=library).status_code == 404
    own = ask(None, FIRST, client=client, app=library).json()
    assert ask(None, FOLLOW, own, client=client, app=library).status_code == 200


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        ({"previous_query_id": 1}, "previous_feedback_token"),
        ({"previous_feedback_token": "abc"}, "previous_feedback_token"),
        ({"previous_query_id": "one", "previous_feedback_token": "abc"}, "previous_query_id"),
        ({"previous_query_id": 0, "previous_feedback_token": "abc"}, "previous_query_id"),
        ({"previous_query_id": 2**70, "previous_feedback_token": "abc"}, "previous_query_id"),
        ({"previous_query_id": 1, "previous_feedback_token": 5}, "previous_feedback_token"),
    ],
)
def test_bad_thread_fields_are_a_400(key, extra, field):
    response = ask(key, FOLLOW, **extra)
    assert response.status_code == 400 and field in response.json()


def test_the_harness_replays_a_follow_up_as_it_was_searched(key):
    first = ask(key, FIRST).json()
    ask(key, FOLLOW, first)
    assert [q.question for q in recent_questions(last=2)] == [f"{FIRST} {FOLLOW}", FIRST]


def test_a_follow_up_that_names_no_scope_stays_in_its_conversations(library):
    client = APIClient()
    client.force_authenticate(get_user_model().objects.create_user("agent", is_staff=True))
    first = ask(None, FIRST, client=client, app=library).json()
    body = {
        "question": FOLLOW,
        "previous_query_id": first["query_id"],
        "previous_feedback_token": first["feedback_token"],
    }
    follow = client.post(ASK, json.dumps(body), content_type="application/json")
    assert follow.status_code == 200, follow.content
    row = OraculoQuery.objects.get(pk=follow.json()["query_id"])
    assert (row.app, row.source_type) == (library, "en")
    other = ask(None, FOLLOW, first, client=client, app=library, source_type="es").json()
    assert OraculoQuery.objects.get(pk=other["query_id"]).source_type == "es", "a scope named still wins"
