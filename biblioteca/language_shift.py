"""Questions asked in another language than the docs: told apart (the search and the trimmer then count their
words for less, RETRIEVAL_HYBRID_ and RETRIEVAL_TRIM_CROSS_LANGUAGE_LEXICAL_SHARE), and the question's vector
moved towards the docs' language.

multilingual-e5 places a question in Spanish further from the English passage that answers it than the same
question in English (0.80 against 0.83 for npm's `name` limit), and far enough that the passage falls out of
the 40 the vector side ranks. Much of that distance is the language itself, the same for every question: the
mean vector of a set of help questions in one language minus the mean of the same questions in another.
Adding that difference to a question's vector moves it into the docs' language. The questions are ours, in
`biblioteca/data/questions_<lang>.txt`, line for line the same in each language. Their means for the default
model ship in `language_means.npz` (`manage.py language_means` writes it); for another model, or questions
changed since, they are computed the first time a question needs them, once per process (320 questions: seven
seconds on two cores with the local model).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path

import numpy as np
from django.conf import settings

from biblioteca.embeddings import EmbeddingError, get_embedder, normalise
from biblioteca.selectors import scope_document_languages
from biblioteca.text.lexical import detect_language

QUESTION_SETS = Path(__file__).parent / "data"
SHIPPED_MEANS = QUESTION_SETS / "language_means.npz"


@lru_cache(maxsize=1)
def reference_questions() -> Mapping[str, list[str]]:
    """Each language's reference questions (ISO 639-1 code -> lines), as `biblioteca/data` holds them."""
    sets = {
        path.stem.removeprefix("questions_"): [line.strip() for line in path.read_text("utf-8").splitlines()]
        for path in sorted(QUESTION_SETS.glob("questions_*.txt"))
    }
    return {language: [q for q in questions if q] for language, questions in sets.items()}


def questions_digest() -> str:
    """What the reference questions say, so means computed from other questions are not used."""
    digest = hashlib.sha256()
    for language, questions in sorted(reference_questions().items()):
        digest.update(language.encode())
        digest.update("\n".join(questions).encode())
    return digest.hexdigest()[:16]


def computed_means() -> dict[str, np.ndarray]:
    """Each language's mean, embedded now with the configured embedder."""
    embedder = get_embedder()
    return {
        language: embedder.embed_queries(questions).mean(axis=0)
        for language, questions in reference_questions().items()
    }


def shipped_means(identity: str) -> dict[str, np.ndarray] | None:
    """The means `language_means.npz` holds, when written by this model from these questions."""
    if not SHIPPED_MEANS.exists():
        return None
    with np.load(SHIPPED_MEANS, allow_pickle=False) as shipped:
        if str(shipped["identity"]) != identity or str(shipped["questions"]) != questions_digest():
            return None
        return {language: shipped[language] for language in reference_questions()}


def write_shipped_means() -> Path:
    """Write the configured model's means to `language_means.npz`, for every process to read."""
    identity = get_embedder().query_identity()
    np.savez(SHIPPED_MEANS, identity=identity, questions=questions_digest(), **computed_means())
    _language_means.cache_clear()
    return SHIPPED_MEANS


@lru_cache(maxsize=4)
def _language_means(identity: str) -> Mapping[str, np.ndarray]:
    return shipped_means(identity) or computed_means()


def language_means() -> Mapping[str, np.ndarray]:
    """The mean query vector of each language's reference questions, for the configured embedder."""
    return _language_means(get_embedder().query_identity())


def languages_apart(
    *, question: str, filters: Mapping[str, str | None] | None = None
) -> tuple[str, str] | None:
    """(the question's language, the docs'), when the docs in scope are all in one language and the question is
    told to be in another; None otherwise (same language, docs in several, a question too short to tell)."""
    asked_in = detect_language(question)
    if not asked_in:
        return None
    filters = filters or {}
    written_in = scope_document_languages(app=filters.get("app"), source_type=filters.get("source_type"))
    if len(written_in) != 1:
        return None
    (docs,) = written_in
    return None if docs == asked_in else (asked_in, docs)


def docs_language_vector(vector: np.ndarray, *, languages: tuple[str, str] | None) -> np.ndarray:
    """`vector` (the question's) moved by RETRIEVAL_LANGUAGE_SHIFT times the difference between the docs'
    language and the question's, `languages` as `languages_apart` tells them; `vector` itself when they are
    None or a language has no reference questions."""
    strength = settings.RETRIEVAL_LANGUAGE_SHIFT
    if not strength or languages is None:
        return vector
    asked_in, docs = languages
    if asked_in not in reference_questions() or docs not in reference_questions():
        return vector
    try:
        means = language_means()
    except EmbeddingError:
        return vector  # the model is down: search as the question was asked, and compute them next time
    return normalise(vector + strength * (means[docs] - means[asked_in]))
