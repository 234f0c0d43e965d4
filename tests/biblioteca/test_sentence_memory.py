"""The per-process memory of stored sentences: used only at the generation it was read at, and bounded."""

from __future__ import annotations

import numpy as np
import pytest
from django.db import connection
from django.db.models import F
from django.test.utils import CaptureQueriesContext

from biblioteca.models import Chunk, Sentence
from biblioteca.selectors import StoredSentences, library_generation
from biblioteca.sentence_memory import SentenceMemory, memory, stored_sentences_at


def _sentences(n: int, *, generation: int, dimensions: int = 4) -> StoredSentences:
    spans = tuple((i * 10, i * 10 + 9) for i in range(n))
    return StoredSentences(spans, np.ones((n, dimensions), dtype=np.float32), generation)


def test_remembered_sentences_serve_only_their_own_generation():
    remembered = SentenceMemory()
    sentences = _sentences(2, generation=7)
    remembered.put(1, sentences, max_bytes=10_000)
    assert remembered.recall({1: 7}).get(1) is sentences
    assert remembered.recall({1: 8}).get(1) is None
    assert remembered.recall({2: 7}).get(2) is None


def test_the_memory_forgets_the_least_recently_used_first_within_its_bound():
    remembered = SentenceMemory()
    one = _sentences(1, generation=1)  # 16 bytes of vectors, one span and the entry: 400 bytes
    for chunk_id in (1, 2, 3):
        remembered.put(chunk_id, one, max_bytes=3 * 400)
    assert remembered.recall({1: 1}).get(1) is one  # 1 is now the most recently used
    remembered.put(4, one, max_bytes=3 * 400)
    assert remembered.recall({2: 1}).get(2) is None
    assert [remembered.recall({i: 1}).get(i) is one for i in (1, 3, 4)] == [True, True, True]
    assert len(remembered) == 3 and remembered.size_bytes == 3 * 400


def test_sentences_replaced_or_too_large_are_counted_once_or_not_kept():
    remembered = SentenceMemory()
    remembered.put(1, _sentences(1, generation=1), max_bytes=1000)
    remembered.put(1, _sentences(2, generation=2), max_bytes=1000)
    assert len(remembered) == 1 and remembered.size_bytes == 2 * (16 + 128) + 256
    remembered.put(1, _sentences(10, generation=3), max_bytes=1000)
    assert len(remembered) == 0 and remembered.size_bytes == 0


def test_remembered_stems_and_keys_count_towards_the_bound():
    remembered = SentenceMemory()
    stemmed = StoredSentences(
        ((0, 9),), np.ones((1, 4), dtype=np.float32), 1, terms="port listen", keys="--port"
    )
    remembered.put(1, stemmed, max_bytes=1000)
    assert remembered.size_bytes == 16 + 128 + len("port listen") + len("--port") + 256


def test_a_remembered_heading_vector_counts_towards_the_bound():
    remembered = SentenceMemory()
    headed = StoredSentences(
        ((0, 9),), np.ones((1, 4), dtype=np.float32), 1, heading_vector=np.ones(4, np.float32)
    )
    remembered.put(1, headed, max_bytes=1000)
    assert remembered.size_bytes == 16 + 16 + 128 + 256


@pytest.mark.django_db
def test_a_write_to_the_app_makes_its_remembered_sentences_read_again(library):
    memory.clear()
    chunk_id = Chunk.objects.filter(app=library).order_by("id").values_list("id", flat=True)[0]
    before = int(library_generation(app=library))
    with CaptureQueriesContext(connection) as first:
        read = stored_sentences_at({chunk_id: before})[chunk_id]
    with CaptureQueriesContext(connection) as again:
        assert stored_sentences_at({chunk_id: before})[chunk_id] is read
    assert len(first) == 1 and len(again) == 0

    # A re-split sentence, as a re-embedding with a new splitter would store it: the triggers move the generation.
    Sentence.objects.filter(chunk_id=chunk_id, position=0).update(end_offset=F("end_offset") - 1)
    after = int(library_generation(app=library))
    assert after != before
    with CaptureQueriesContext(connection) as moved:
        fresh = stored_sentences_at({chunk_id: after})[chunk_id]
    assert len(moved) == 1
    assert fresh.spans[0] == (read.spans[0][0], read.spans[0][1] - 1) and fresh.generation == after


@pytest.mark.django_db
def test_sentences_are_read_every_time_when_the_generation_is_unknown_or_the_memory_off(library, settings):
    memory.clear()
    chunk_id = Chunk.objects.filter(app=library).order_by("id").values_list("id", flat=True)[0]
    generation = int(library_generation(app=library))
    for generations in ({chunk_id: None}, {chunk_id: None}):
        with CaptureQueriesContext(connection) as queries:
            assert chunk_id in stored_sentences_at(generations)
        assert len(queries) == 1
    settings.RETRIEVAL_SENTENCE_MEMORY_MB = 0
    for _ in range(2):
        with CaptureQueriesContext(connection) as queries:
            assert chunk_id in stored_sentences_at({chunk_id: generation})
        assert len(queries) == 1
    assert stored_sentences_at({}) == {}
