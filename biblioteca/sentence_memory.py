"""Each process remembers the stored sentences it has read, so trimming a passage met before reads nothing.

A help desk's questions fall again and again on the same pages. Having the database score every neighbour's
sentences with the search cost about a millisecond a trimmed question, and reading a passage's sentence vectors
more; remembered, their cosines cost a few microseconds in numpy. A chunk's spans and vectors are kept under the
library generation they were read at (`LibraryGeneration`, moved by triggers in the transaction of every write to
the app's documents, chunks or sentences) and used only by a search that read that same generation, so a chunk
re-embedded, re-split or ingested anew is read afresh. RETRIEVAL_SENTENCE_MEMORY_MB bounds each process's memory
(least recently used out first; 0 turns it off).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping

from django.conf import settings

from biblioteca.selectors import StoredSentences, sentences_for_chunks

# What remembering costs besides the vectors and the stems' and keys' text: a span (a tuple of two ints and its
# slot), and a chunk's entry (its record, its array's header, its strings' headers, its place in the dict).
_SPAN_BYTES = 128
_ENTRY_BYTES = 256


def _size(sentences: StoredSentences) -> int:
    lines = sum(len(packed) for packed in (sentences.terms, sentences.keys) if packed is not None)
    heading = 0 if sentences.heading_vector is None else sentences.heading_vector.nbytes
    return sentences.vectors.nbytes + heading + _SPAN_BYTES * len(sentences.spans) + lines + _ENTRY_BYTES


class SentenceMemory:
    """Stored sentences by chunk id, each under the generation it was read at, within the bound `put` is given."""

    def __init__(self) -> None:
        self._entries: OrderedDict[int, StoredSentences] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    @property
    def size_bytes(self) -> int:
        return self._bytes

    def __len__(self) -> int:
        return len(self._entries)

    def recall(self, generations: Mapping[int, int]) -> dict[int, StoredSentences]:
        """Those of the given chunks (chunk id -> generation) remembered at that generation."""
        out: dict[int, StoredSentences] = {}
        with self._lock:
            for chunk_id, generation in generations.items():
                found = self._entries.get(chunk_id)
                if found is not None and found.generation == generation:
                    self._entries.move_to_end(chunk_id)
                    out[chunk_id] = found
        return out

    def put(self, chunk_id: int, sentences: StoredSentences, *, max_bytes: int) -> None:
        """Remember `sentences` (read at their own generation), forgetting the least recently used past
        `max_bytes`; sentences larger than the whole memory are not kept."""
        size = _size(sentences)
        with self._lock:
            old = self._entries.pop(chunk_id, None)
            if old is not None:
                self._bytes -= _size(old)
            if size > max_bytes:
                return
            self._entries[chunk_id] = sentences
            self._bytes += size
            while self._bytes > max_bytes:
                _, gone = self._entries.popitem(last=False)
                self._bytes -= _size(gone)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._bytes = 0


memory = SentenceMemory()


def stored_sentences_at(generations: Mapping[int, int | None]) -> dict[int, StoredSentences]:
    """The stored sentences of the given chunks (chunk id -> the library generation the search read it at, None
    when unknown): those remembered at that generation from memory, the rest in one read, then remembered.
    Chunks without stored sentences are absent."""
    max_bytes = settings.RETRIEVAL_SENTENCE_MEMORY_MB * 2**20
    out = memory.recall({i: g for i, g in generations.items() if g is not None}) if max_bytes else {}
    missing = [chunk_id for chunk_id in generations if chunk_id not in out]
    if not missing:
        return out
    read = sentences_for_chunks(missing)
    if max_bytes:
        for chunk_id, sentences in read.items():
            if sentences.generation is not None:
                memory.put(chunk_id, sentences, max_bytes=max_bytes)
    out.update(read)
    return out
