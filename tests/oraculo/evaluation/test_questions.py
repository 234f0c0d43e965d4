"""Where evaluation questions come from: question files (text and JSONL, malformed ones refused by line) and
the default selection of the last distinct real questions."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from oraculo.evaluation.questions import LabelledQuestion, QuestionFileError, questions_parse, questions_read
from oraculo.evaluation.selectors import recent_questions
from oraculo.models import Channel, OraculoQuery


def test_plain_text_is_one_question_per_line_without_blanks_or_comments():
    text = "# our gold set\nHow do I reset my password?\n\n   \n  ¿Cómo borro mi cuenta?  \n# done\n"
    assert questions_parse(text=text, name="gold.txt") == [
        LabelledQuestion("How do I reset my password?"),
        LabelledQuestion("¿Cómo borro mi cuenta?"),
    ]


def test_jsonl_carries_optional_expected_answers():
    text = (
        '# labelled\n{"question": "How long is a reset link valid?", "expected_answer": "30 minutes"}\n\n'
        '{"question": "Where are invoices?", "id": 7}\n{"question": "Q3", "expected_answer": null}\n'
    )
    assert questions_parse(text=text, name="gold.jsonl") == [
        LabelledQuestion("How long is a reset link valid?", "30 minutes"),
        LabelledQuestion("Where are invoices?"),
        LabelledQuestion("Q3"),
    ]


def test_jsonl_is_recognised_by_content_whatever_the_file_name():
    parsed = questions_parse(text='{"question": "Q", "expected_answer": "A"}\n', name="gold.txt")
    assert parsed == [LabelledQuestion("Q", "A")]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"question": "Q2", ', "gold.jsonl, line 3: not valid JSON"),
        ('["Q2"]', "gold.jsonl, line 3: expected an object"),
        ('{"expected_answer": "A"}', 'gold.jsonl, line 3: "question" must be a non-empty string'),
        ('{"question": "   "}', 'gold.jsonl, line 3: "question" must be a non-empty string'),
        (
            '{"question": "Q2", "expected_answer": 42}',
            'gold.jsonl, line 3: "expected_answer" must be a string',
        ),
        (
            '{"question": "Q2", "expected_answer": ' + "[" * 5000 + "]" * 5000 + "}",
            "gold.jsonl, line 3: nested too deeply",
        ),
    ],
)
def test_a_malformed_jsonl_line_is_named(line, message):
    text = '{"question": "Q1"}\n\n' + line + "\n"
    with pytest.raises(QuestionFileError) as err:
        questions_parse(text=text, name="gold.jsonl")
    assert str(err.value).startswith(message)


def test_reading_files(tmp_path):
    (tmp_path / "gold.jsonl").write_text(
        '{"question": "¿Cuánto cuesta?", "expected_answer": "11 €"}\n', encoding="utf-8"
    )
    assert questions_read(path=tmp_path / "gold.jsonl") == [LabelledQuestion("¿Cuánto cuesta?", "11 €")]
    with pytest.raises(QuestionFileError, match="no such file"):
        questions_read(path=tmp_path / "missing.txt")
    (tmp_path / "latin1.txt").write_bytes("¿Cómo?".encode("latin-1"))
    with pytest.raises(QuestionFileError, match="not UTF-8"):
        questions_read(path=tmp_path / "latin1.txt")


def ask(question: str, *, app: str = "guide", minutes_ago: int) -> OraculoQuery:
    query = OraculoQuery.objects.create(question=question, app=app)
    OraculoQuery.objects.filter(pk=query.pk).update(
        created_at=timezone.now() - timedelta(minutes=minutes_ago)
    )
    return query


@pytest.mark.django_db
def test_default_selection_is_the_last_distinct_questions_newest_first():
    for i in range(20):
        ask(f"question {i}", minutes_ago=100 - i)
    ask("question 3", minutes_ago=1)
    ask("  question 3 ", minutes_ago=2)
    ask("   ", minutes_ago=0)
    picked = [q.question for q in recent_questions()]
    assert len(picked) == 15
    assert picked[0] == "question 3"
    assert picked[1:] == [f"question {i}" for i in range(19, 5, -1)]
    assert len(set(picked)) == 15
    assert [q.question for q in recent_questions(last=2)] == ["question 3", "question 19"]


@pytest.mark.django_db
def test_default_selection_can_be_limited_to_one_app():
    ask("billing one", app="billing", minutes_ago=5)
    ask("guide one", app="guide", minutes_ago=4)
    ask("billing two", app="billing", minutes_ago=3)
    assert [q.question for q in recent_questions(app="billing")] == ["billing two", "billing one"]
    assert [q.question for q in recent_questions(app="nothing")] == []
    assert len(recent_questions()) == 3


@pytest.mark.django_db
def test_default_selection_can_keep_only_some_channels():
    for minutes_ago, channel in enumerate([Channel.MCP, Channel.API, Channel.WIDGET]):
        query = ask(f"from {channel}", minutes_ago=minutes_ago)
        OraculoQuery.objects.filter(pk=query.pk).update(channel=channel)
    assert [q.question for q in recent_questions(channels=[Channel.WIDGET, Channel.API])] == [
        "from api",
        "from widget",
    ]
    assert [q.question for q in recent_questions(channels=["mcp"])] == ["from mcp"]
    assert len(recent_questions(channels=None)) == len(recent_questions(channels=[])) == 3


def test_gold_is_read_as_the_expected_answer_and_other_keys_are_ignored():
    from oraculo.evaluation.questions import questions_parse

    (question,) = questions_parse(
        text='{"id": "en-01", "lang": "en", "question": "Port?", "gold": "8000"}', name="set.jsonl"
    )
    assert (question.question, question.expected_answer) == ("Port?", "8000")
