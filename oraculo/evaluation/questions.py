"""Evaluation questions as given: explicit lists and question files (plain text or JSONL). The last questions
people asked are read by `oraculo.evaluation.selectors.recent_questions`.

A team measures quality on its own gold set, so a file may carry the expected answer with each question; a
malformed line is refused with its line number rather than silently skipped.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from biblioteca.errors import ApplicationError
from config.validation import text_problem

DEFAULT_LAST = 15


class QuestionFileError(ApplicationError):
    """A question file that cannot be read; the message names the file and line."""


@dataclass(frozen=True)
class LabelledQuestion:
    question: str
    expected_answer: str = ""

    def as_dict(self) -> dict:
        out = {"question": self.question}
        if self.expected_answer:
            out["expected_answer"] = self.expected_answer
        return out


def labelled(items: Iterable[str | dict | LabelledQuestion]) -> list[LabelledQuestion]:
    """Strings, {"question", "expected_answer"} dicts or LabelledQuestions, as LabelledQuestions (blanks out)."""
    out: list[LabelledQuestion] = []
    for item in items:
        if isinstance(item, LabelledQuestion):
            q = item
        elif isinstance(item, dict):
            q = LabelledQuestion(
                str(item.get("question") or "").strip(), str(item.get("expected_answer") or "").strip()
            )
        else:
            q = LabelledQuestion(str(item).strip())
        if q.question:
            out.append(q)
    return out


def _is_skipped(line: str) -> bool:
    stripped = line.strip()
    return not stripped or stripped.startswith("#")


def _looks_like_jsonl(text: str, name: str) -> bool:
    if name.lower().endswith((".jsonl", ".ndjson", ".json")):
        return True
    first = next((line.strip() for line in text.splitlines() if not _is_skipped(line)), "")
    return first.startswith("{")


def questions_parse(*, text: str, name: str = "questions") -> list[LabelledQuestion]:
    """Plain text (one question per line) or JSONL ({"question", "expected_answer"?} per line, `gold` accepted
    for `expected_answer`, other keys ignored); blank lines and `#` comments are ignored in both."""
    if problem := text_problem(text):
        raise QuestionFileError(f"{name}: {problem}")
    if not _looks_like_jsonl(text, name):
        return [LabelledQuestion(line.strip()) for line in text.splitlines() if not _is_skipped(line)]
    out: list[LabelledQuestion] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if _is_skipped(line):
            continue
        where = f"{name}, line {number}"
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise QuestionFileError(f"{where}: not valid JSON ({exc.msg}).") from exc
        except RecursionError as exc:
            raise QuestionFileError(f"{where}: nested too deeply to be a question.") from exc
        if not isinstance(row, dict):
            raise QuestionFileError(
                f'{where}: expected an object like {{"question": "...", "expected_answer": "..."}}.'
            )
        question = row.get("question")
        if not isinstance(question, str) or not question.strip():
            raise QuestionFileError(f'{where}: "question" must be a non-empty string.')
        expected = row.get("expected_answer", row.get("gold", ""))
        if expected is None:
            expected = ""
        if not isinstance(expected, str):
            raise QuestionFileError(f'{where}: "expected_answer" must be a string.')
        if problem := text_problem(question + expected):
            raise QuestionFileError(f"{where}: {problem}")
        out.append(LabelledQuestion(question.strip(), expected.strip()))
    return out


def questions_read(*, path: str | Path) -> list[LabelledQuestion]:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError as exc:
        raise QuestionFileError(f"{path}: no such file.") from exc
    except UnicodeDecodeError as exc:
        raise QuestionFileError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start}).") from exc
    except OSError as exc:
        raise QuestionFileError(f"{path}: cannot be read ({exc.strerror}).") from exc
    return questions_parse(text=text, name=str(path))
