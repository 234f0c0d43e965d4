"""The admin door: the changelist action and button open the form, the form queues an EvalRun, a worker
completes it, and its page shows progress, summary, table, charts and downloads."""

from __future__ import annotations

import csv
import io
import json
from urllib.parse import parse_qs, urlparse

import pytest
from django.contrib.auth.models import Permission, User
from django.urls import reverse

from oraculo.models import EvalRun, OraculoQuery
from tests.oraculo.evaluation.test_harness import SEED_SUMMARY_KEYS, SEED_VARIANT_KEYS
from tests.oraculo.evaluation.test_worker import run_worker

CHANGELIST = "admin:oraculo_oraculoquery_changelist"
EVALUATE = "admin:oraculo_oraculoquery_evaluate"
XSS = "<script>alert('x')</script> How do I reset my password?"
CHART = '<svg xmlns="http://www.w3.org/2000/svg" viewBox'  # ours; the admin's own icons are SVG too


def form_data(library: str, **extra) -> dict:
    return {
        "top_k": 5,
        "trim_threshold": 0.85,
        "trim_window": 1,
        "variants": ["baseline", "trim"],
        "app": library,
        "source_type": "",
        "sweep_thresholds": "",
        "sweep_windows": "",
        **extra,
    }


def last_15_url(library: str) -> str:
    return reverse(EVALUATE) + f"?last=15&app={library}"


def evaluate_last_15(admin_client, library: str, **form):
    """The form behind the "Evaluate the last 15" button, submitted with `form`'s fields."""
    return admin_client.post(
        last_15_url(library), {**form_data(library, **form), "last": "15", "qapp": library}
    )


@pytest.fixture
def asked(library):
    queries = [
        OraculoQuery.objects.create(question=q, app=library)
        for q in ["When are invoices sent?", XSS, "¿Cómo elimino mi cuenta?", XSS]
    ]
    OraculoQuery.objects.create(question="Other app", app="other")
    return queries


@pytest.mark.django_db
def test_the_changelist_has_the_button_and_the_action(admin_client, asked, library):
    page = admin_client.get(reverse(CHANGELIST), {"app": library})
    html = page.content.decode()
    assert "Evaluate the last 15" in html
    button = reverse(EVALUATE) + f"?last=15&amp;app={library}"
    assert button in html
    assert 'value="evaluate_selected"' in html and "Evaluate selected questions (A/B)" in html


@pytest.mark.django_db
def test_the_action_opens_the_form_with_the_selected_distinct_questions(admin_client, asked):
    picked = [asked[0].pk, asked[1].pk, asked[3].pk]
    response = admin_client.post(
        reverse(CHANGELIST), {"action": "evaluate_selected", "_selected_action": picked}
    )
    assert response.status_code == 302
    url = urlparse(response["Location"])
    assert url.path == reverse(EVALUATE)
    assert sorted(map(int, parse_qs(url.query)["ids"][0].split(","))) == sorted(picked)

    page = admin_client.get(response["Location"])
    html = page.content.decode()
    assert "2 questions (the selected questions)" in html
    assert "When are invoices sent?" in html
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in html and "<script>alert" not in html
    assert 'name="sweep_thresholds"' in html and 'name="synthesize"' in html


@pytest.mark.django_db
def test_the_form_queues_a_run_that_the_worker_completes_and_the_page_charts(
    admin_client, asked, library, monkeypatch
):
    ids = ",".join(str(q.pk) for q in asked)
    response = admin_client.post(reverse(EVALUATE) + f"?ids={ids}", {**form_data(library), "ids": ids})
    run = EvalRun.objects.get()
    assert response.status_code == 302
    assert response["Location"] == reverse("admin:oraculo_evalrun_change", args=[run.pk])
    assert run.status == EvalRun.Status.QUEUED and run.total == 3
    assert run.params["trim_threshold"] == 0.85 and run.params["app"] == library
    assert run.created_by.is_superuser

    queued = admin_client.get(response["Location"]).content.decode()
    assert '<meta http-equiv="refresh" content="3">' in queued
    assert "Queued" in queued and "0 / 3 questions" in queued and "pending" in queued

    run_worker(monkeypatch)
    run.refresh_from_db()
    assert run.status == EvalRun.Status.DONE, run.error

    html = admin_client.get(response["Location"]).content.decode()
    assert 'http-equiv="refresh"' not in html
    assert "3 / 3 questions" in html and "token_reduction_pct" in html
    assert (
        "Tokens per question" in html and html.count('<svg xmlns="http://www.w3.org/2000/svg" viewBox') == 1
    )
    assert "Context tokens per question: baseline vs trim" in html
    assert "<script>alert" not in html and "&lt;script&gt;alert" in html
    for row in run.results.all():
        assert ", ".join(map(str, row.variants["baseline"]["chunk_ids"])) in html

    listing = admin_client.get(reverse("admin:oraculo_evalrun_changelist")).content.decode()
    assert f"Evaluation #{run.pk} (done)" in listing and "3/3" in listing


@pytest.mark.django_db
def test_the_button_evaluates_the_last_questions_and_a_sweep_gets_its_curve(
    admin_client, asked, library, monkeypatch, settings
):
    # no chunk dropped: the 95% overlap floor is reachable
    settings.RETRIEVAL_TRIM_DROP_MARGIN = settings.RETRIEVAL_TRIM_DROP_SCORE_MARGIN = None
    page = admin_client.get(last_15_url(library)).content.decode()
    assert "3 questions (the last 15 distinct questions of app fixture-guide)" in page
    response = evaluate_last_15(
        admin_client, library, sweep_thresholds="0.80:0.90:0.05", sweep_windows="0,1", min_overlap="95"
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    run = EvalRun.objects.get()
    assert run.params["sweep"] == {
        "thresholds": [0.8, 0.85, 0.9],
        "windows": [0, 1],
        "drop_margins": [],
        "min_retention": None,
        "min_overlap": 95.0,
    }
    assert [r.question for r in run.results.order_by("position")] == [
        XSS,
        "¿Cómo elimino mi cuenta?",
        "When are invoices sent?",
    ]

    run_worker(monkeypatch)
    html = admin_client.get(response["Location"]).content.decode()
    assert "Calibration sweep" in html and html.count('<svg xmlns="http://www.w3.org/2000/svg" viewBox') == 2
    assert "Token reduction vs overlap with baseline %" in html
    run.refresh_from_db()
    rec = run.sweep["recommended"]
    assert f"recommended: threshold {rec['threshold']:g}, window {rec['window']}" in html
    assert f"RETRIEVAL_TRIM_THRESHOLD={rec['threshold']:g}" in html
    assert "drop margin" not in html  # not swept: no column for it


@pytest.mark.django_db
def test_a_sweep_over_drop_margins_from_the_admin_shows_them(admin_client, asked, library, monkeypatch):
    response = evaluate_last_15(
        admin_client, library, sweep_windows="1", sweep_drop_margins="0.02, 0.5", min_overlap="0"
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    run = EvalRun.objects.get()
    assert run.params["sweep"]["drop_margins"] == [0.02, 0.5]
    run_worker(monkeypatch)
    html = admin_client.get(response["Location"]).content.decode()
    run.refresh_from_db()
    rec = run.sweep["recommended"]
    assert [row["drop_margin"] for row in run.sweep["rows"]] == [0.02, 0.5]
    assert "<th>drop margin</th>" in html
    assert html.count('<tr class="recommended">') == 1
    assert f"drop margin {rec['drop_margin']:g}" in html
    assert f"RETRIEVAL_TRIM_DROP_MARGIN={rec['drop_margin']!r}" in html

    page = evaluate_last_15(admin_client, library, sweep_drop_margins="-1")
    assert page.status_code == 200
    assert "sweep drop_margin: -1 is outside [0, 2]" in page.content.decode()


@pytest.mark.django_db
def test_a_labelled_file_can_be_uploaded_in_the_form(admin_client, library):
    from django.core.files.uploadedfile import SimpleUploadedFile

    upload = SimpleUploadedFile(
        "gold.jsonl", b'{"question": "How long is a reset link valid?", "expected_answer": "30 minutes"}\n'
    )
    response = admin_client.post(reverse(EVALUATE), {**form_data(library), "questions_file": upload})
    assert response.status_code == 302
    row = EvalRun.objects.get().results.get()
    assert (row.question, row.expected_answer) == ("How long is a reset link valid?", "30 minutes")

    bad = SimpleUploadedFile("gold.jsonl", b'{"question": "Q1"}\n{"question": 3}\n')
    page = admin_client.post(reverse(EVALUATE), {**form_data(library), "questions_file": bad})
    assert page.status_code == 200
    assert "gold.jsonl, line 2: &quot;question&quot; must be a non-empty string" in page.content.decode()
    assert EvalRun.objects.count() == 1


@pytest.mark.django_db
def test_bad_parameters_redisplay_the_form_and_queue_nothing(admin_client, asked, library):
    url = reverse(EVALUATE) + "?last=15"
    page = admin_client.post(url, {**form_data(library, sweep_thresholds="0.9:0.7:0.1"), "last": "15"})
    assert page.status_code == 200
    assert "sweep threshold: the start (0.9) is after the stop (0.7)." in page.content.decode()
    page = admin_client.post(url, {**form_data(library, top_k=99), "last": "15"})
    assert "Ensure this value is less than or equal to 20." in page.content.decode()
    assert not EvalRun.objects.exists()


@pytest.mark.django_db
def test_no_questions_is_said_in_the_form(admin_client, library):
    page = admin_client.post(reverse(EVALUATE) + "?last=15", {**form_data(library), "last": "15"})
    assert "No questions to evaluate" in page.content.decode()
    assert not EvalRun.objects.exists()


@pytest.mark.django_db
def test_downloads_give_the_json_and_the_csv(admin_client, asked, library, monkeypatch):
    admin_client.post(reverse(EVALUATE) + "?last=15", {**form_data(library), "last": "15", "qapp": library})
    run_worker(monkeypatch)
    run = EvalRun.objects.get()
    response = admin_client.get(reverse("admin:oraculo_evalrun_json", args=[run.pk]))
    assert response["Content-Disposition"] == f'attachment; filename="evaluation-{run.pk}.json"'
    body = json.loads(response.content)
    assert list(body) == ["run", "summary", "results"]
    assert body["summary"] == run.summary and len(body["results"]) == 3
    assert list(body["summary"])[:8] == SEED_SUMMARY_KEYS, "the seed's key order survives jsonb"
    assert list(body["results"][0]["variants"]["trim"])[:5] == [*SEED_VARIANT_KEYS, "overlap_vs_baseline"]
    assert body["results"][0]["question"] == XSS

    response = admin_client.get(reverse("admin:oraculo_evalrun_csv", args=[run.pk]))
    assert response["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert [r["question"] for r in rows] == [r["question"] for r in body["results"]]
    assert rows[0]["trim_tokens"] == str(body["results"][0]["variants"]["trim"]["tokens"])


@pytest.mark.django_db
def test_staff_without_the_permission_cannot_evaluate(client, asked):
    user = User.objects.create_user("viewer", password="pw", is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="view_oraculoquery"))
    client.force_login(user)
    html = client.get(reverse(CHANGELIST)).content.decode()
    assert "Evaluate the last 15" not in html and "evaluate_selected" not in html
    assert client.get(reverse(EVALUATE)).status_code == 403


@pytest.mark.django_db
def test_the_queue_again_action_requeues_a_failed_run_and_explains_a_refusal(admin_client, library):
    from oraculo.evaluation.params import eval_params_build
    from oraculo.evaluation.questions import LabelledQuestion
    from oraculo.evaluation.services import eval_run_create

    failed, done = (
        eval_run_create(questions=[LabelledQuestion("Q")], params=eval_params_build(app=library))
        for _ in range(2)
    )
    EvalRun.objects.filter(pk=failed.pk).update(status=EvalRun.Status.FAILED, error="boom")
    EvalRun.objects.filter(pk=done.pk).update(status=EvalRun.Status.DONE)
    response = admin_client.post(
        reverse("admin:oraculo_evalrun_changelist"),
        {"action": "queue_again", "_selected_action": [failed.pk, done.pk]},
        follow=True,
    )
    html = response.content.decode()
    assert "1 run(s) queued again" in html and "is done; only failed runs" in html
    assert EvalRun.objects.get(pk=failed.pk).status == EvalRun.Status.QUEUED
    assert EvalRun.objects.get(pk=done.pk).status == EvalRun.Status.DONE


@pytest.mark.django_db
def test_the_evaluate_page_needs_the_permission_to_view_queries(client, asked):
    user = User.objects.create_user("runner", password="pw", is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="add_evalrun"))
    client.force_login(user)
    assert client.get(reverse(EVALUATE)).status_code == 403
    user.user_permissions.add(Permission.objects.get(codename="view_oraculoquery"))
    client.force_login(User.objects.get(pk=user.pk))
    assert client.get(reverse(EVALUATE)).status_code == 200


@pytest.mark.django_db
def test_queue_again_needs_the_change_permission(client, library):
    from oraculo.evaluation.params import eval_params_build
    from oraculo.evaluation.questions import LabelledQuestion
    from oraculo.evaluation.services import eval_run_create

    run = eval_run_create(questions=[LabelledQuestion("Q")], params=eval_params_build(app=library))
    EvalRun.objects.filter(pk=run.pk).update(status=EvalRun.Status.FAILED, error="boom")
    user = User.objects.create_user("viewer", password="pw", is_staff=True)
    user.user_permissions.set(Permission.objects.filter(codename__in=["view_evalrun", "view_oraculoquery"]))
    client.force_login(user)
    changelist = reverse("admin:oraculo_evalrun_changelist")
    assert "queue_again" not in client.get(changelist).content.decode()
    client.post(changelist, {"action": "queue_again", "_selected_action": [run.pk]})
    assert EvalRun.objects.get(pk=run.pk).status == EvalRun.Status.FAILED
    user.user_permissions.add(Permission.objects.get(codename="change_evalrun"))
    client.force_login(User.objects.get(pk=user.pk))
    assert "queue_again" in client.get(changelist).content.decode()
    client.post(changelist, {"action": "queue_again", "_selected_action": [run.pk]})
    assert EvalRun.objects.get(pk=run.pk).status == EvalRun.Status.QUEUED


@pytest.mark.django_db
def test_other_peoples_runs_need_the_permission_to_view_queries(client, library):
    from oraculo.evaluation.params import eval_params_build
    from oraculo.evaluation.questions import LabelledQuestion
    from oraculo.evaluation.services import eval_run_create

    owner = User.objects.create_user("owner", is_staff=True)
    run = eval_run_create(
        questions=[LabelledQuestion("a real user's question")],
        params=eval_params_build(app=library),
        created_by=owner,
    )
    user = User.objects.create_user("viewer", password="pw", is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="view_evalrun"))
    client.force_login(user)
    page = reverse("admin:oraculo_evalrun_change", args=[run.pk])
    assert client.get(page).status_code == 403
    assert client.get(reverse("admin:oraculo_evalrun_csv", args=[run.pk])).status_code == 403
    user.user_permissions.add(Permission.objects.get(codename="view_oraculoquery"))
    client.force_login(User.objects.get(pk=user.pk))
    assert client.get(page).status_code == 200


# --- query counts: an N+1 fails here ---------------------------------------------------------------------

RUN_PAGE_QUERIES = 6
RUNS_CHANGELIST_QUERIES = 5


def _finished_run(user, questions: int) -> EvalRun:
    variant = {"chunk_ids": [1, 2], "top_score": 0.9, "tokens": 100, "tokens_before": 100, "latency_ms": 5.0}
    trim = variant | {"tokens": 60, "overlap_vs_baseline": 1.0, "trim_embedding_calls": 0}
    run = EvalRun.objects.create(
        params={"variants": ["baseline", "trim"], "top_k": 5},
        status=EvalRun.Status.DONE,
        total=questions,
        progress=questions,
        summary={"questions": questions, "token_reduction_pct": 40},
        created_by=user,
    )
    run.results.bulk_create(
        run.results.model(run=run, position=i, question=f"Q{i}", variants={"baseline": variant, "trim": trim})
        for i in range(1, questions + 1)
    )
    return run


@pytest.mark.django_db
def test_the_run_page_takes_as_many_queries_for_many_questions_as_for_few(
    admin_client, admin_user, django_assert_num_queries
):
    few, many = _finished_run(admin_user, 2), _finished_run(admin_user, 30)
    for run in (few, many):
        with django_assert_num_queries(RUN_PAGE_QUERIES):
            page = admin_client.get(reverse("admin:oraculo_evalrun_change", args=[run.pk]))
        assert page.status_code == 200 and "Q2" in page.content.decode()


@pytest.mark.django_db
def test_the_runs_changelist_takes_a_fixed_number_of_queries(
    admin_client, admin_user, django_assert_num_queries
):
    _finished_run(admin_user, 1)
    with django_assert_num_queries(RUNS_CHANGELIST_QUERIES):
        assert admin_client.get(reverse("admin:oraculo_evalrun_changelist")).status_code == 200
    for i in range(6):
        _finished_run(User.objects.create_user(f"analyst{i}", is_staff=True), 3)
    with django_assert_num_queries(RUNS_CHANGELIST_QUERIES):
        assert admin_client.get(reverse("admin:oraculo_evalrun_changelist")).status_code == 200


@pytest.mark.django_db
def test_a_retention_floor_on_unlabelled_questions_is_refused_in_the_form(admin_client, asked, library):
    url = reverse(EVALUATE) + "?last=15"
    data = form_data(library, sweep_thresholds="0.8,0.9", sweep_windows="1", min_retention=99)
    page = admin_client.post(url, {**data, "last": "15", "qapp": library})
    assert page.status_code == 200
    assert "min_retention needs labelled questions" in page.content.decode()
    assert not EvalRun.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("variant", "answer_cells"), [("baseline", ["yes / -", "no / -"]), ("trim", ["- / yes", "- / no"])]
)
def test_the_page_of_a_one_variant_run_shows_what_was_measured_and_dashes_for_the_rest(
    admin_client, library, monkeypatch, variant, answer_cells
):
    from oraculo.evaluation.params import eval_params_build
    from oraculo.evaluation.services import evaluation_start

    questions = [
        {"question": "How long is a password reset link valid?", "expected_answer": "30 minutes"},
        {"question": "How long is a password reset link valid?", "expected_answer": "a phrase no page holds"},
    ]
    run = evaluation_start(
        questions=questions, params=eval_params_build(app=library, variants=[variant]), created_by=None
    )
    run_worker(monkeypatch)
    response = admin_client.get(reverse("admin:oraculo_evalrun_change", args=[run.pk]))
    assert response.status_code == 200
    html = response.content.decode()
    for cell in answer_cells:
        assert f"<td>{cell}</td>" in html


@pytest.mark.django_db
def test_the_forms_app_picks_the_last_questions_and_a_floor_without_a_sweep_is_refused(
    admin_client, asked, library
):
    page = admin_client.post(reverse(EVALUATE), {**form_data(library, min_retention="99"), "last": "15"})
    assert page.status_code == 200
    assert "give a sweep as well" in page.content.decode()
    assert not EvalRun.objects.exists()
    response = admin_client.post(reverse(EVALUATE), {**form_data(library), "last": "15"})
    assert response.status_code == 302, response.content.decode()[:2000]
    questions = set(EvalRun.objects.get().results.values_list("question", flat=True))
    assert questions == {XSS, "¿Cómo elimino mi cuenta?", "When are invoices sent?"}, "not another app's"
