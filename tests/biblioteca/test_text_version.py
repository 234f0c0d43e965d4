"""The text pipeline's versions move with its output, so stored documents are processed again when it changes.

`ingest` stores each document with `TEXT_VERSION` and `TERMS_VERSION`; a document stored under other versions is
chunked, split and stemmed again at its next ingest, and its stored stems go unused until then. That only works
if a version is bumped whenever its output changes: this test fingerprints the pipeline's output over frozen
inputs and pins it to the version. The stems can change with the stemmer's release as well as with our code.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from biblioteca.text.chunking import chunk_markdown, document_title
from biblioteca.text.identifiers import identifier_keys
from biblioteca.text.lexical import unit_terms
from biblioteca.text.sentences import split_sentence_spans
from biblioteca.text.version import TERMS_VERSION, TEXT_VERSION

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
DATA = Path(__file__).resolve().parent / "data"

# TEXT_VERSION -> the fingerprint of its output. A change to the chunker or the splitter that fails here changes
# what is stored: bump TEXT_VERSION and pin the new fingerprint under it.
PINNED = {1: "66f697ce42e3fbdb", 2: "c4b226553660186a"}
# TERMS_VERSION -> the fingerprint of the sentences' stems and identifier keys, as PINNED.
PINNED_TERMS = {1: "4ad1f481612c134c", 2: "af069856acd9f3fe"}
# Units the stems' fingerprint reads besides the inputs' sentences (never edited either; from TERMS_VERSION 2):
# shapes the pages above lack.
TERMS_UNITS = (
    "| %3 | The due date of the invoice. |",
    "Logs go to `%LOCALAPPDATA%\\MyApp\\logs` on Windows.",
    'The message reads "Could not open {0}", with the file name in place of `{0}`.',
)


def inputs() -> list[tuple[str, str]]:
    """Frozen markdown (never edited: it is the measure), as (file name, content): this test's own page and the
    golden rules, not the fixture docs other tests may change."""
    sample = (FIXTURES / "text_version" / "sample.md").read_text(encoding="utf-8")
    files = [("sample.md", sample), ("sample.mdx", sample)]
    for lang in ("en", "es"):
        for n, line in enumerate(
            (DATA / f"golden_rules_{lang}.jsonl").read_text(encoding="utf-8").splitlines()
        ):
            files.append((f"rule-{lang}-{n}.md", json.loads(line)["text"]))
    return files


def fingerprint() -> str:
    output = []
    for name, content in inputs():
        title = document_title(filename=name, content=content)
        for size, overlap in ((500, 50), (40, 10)):
            for chunk in chunk_markdown(
                filename=name, content=content, title=title, chunk_size=size, chunk_overlap=overlap
            ):
                output.append(
                    [name, title, list(chunk.heading_path), chunk.text, chunk.start, chunk.end]
                    + [list(span) for span in split_sentence_spans(chunk.text)]
                )
    return hashlib.sha256(json.dumps(output, ensure_ascii=False).encode()).hexdigest()[:16]


def test_the_pipeline_output_is_the_one_its_version_pins():
    assert TEXT_VERSION in PINNED, f"pin TEXT_VERSION {TEXT_VERSION}'s fingerprint: {fingerprint()}"
    assert fingerprint() == PINNED[TEXT_VERSION], (
        "the chunker's or the splitter's output changed: bump TEXT_VERSION in biblioteca/text/version.py and "
        f"pin {fingerprint()!r} under it, so that stored documents are processed again"
    )


def test_the_inputs_exercise_chunking_and_splitting():
    """A fingerprint over inputs that make one chunk of one sentence each would catch nothing."""
    names = {name for name, _ in inputs()}
    assert {"sample.md", "sample.mdx"} <= names and len(names) > 50
    chunks = chunk_markdown(
        filename="sample.md", content=inputs()[0][1], title="t", chunk_size=40, chunk_overlap=10
    )
    assert len(chunks) > 10 and max(len(split_sentence_spans(c.text)) for c in chunks) > 3


def terms_fingerprint() -> str:
    output = []
    for _, content in inputs():
        for start, end in split_sentence_spans(content):
            unit = content[start:end]
            output.append([sorted(unit_terms(unit, language)) for language in ("en", "es", "")])
            output.append(sorted(identifier_keys(unit)))
    for unit in TERMS_UNITS:
        output.append([sorted(unit_terms(unit, language)) for language in ("en", "es", "")])
        output.append(sorted(identifier_keys(unit)))
    return hashlib.sha256(json.dumps(output, ensure_ascii=False).encode()).hexdigest()[:16]


def test_the_sentences_stems_are_the_ones_their_version_pins():
    assert TERMS_VERSION in PINNED_TERMS, (
        f"pin TERMS_VERSION {TERMS_VERSION}'s fingerprint: {terms_fingerprint()}"
    )
    assert terms_fingerprint() == PINNED_TERMS[TERMS_VERSION], (
        "the sentences' stems or identifier keys changed (our code or the stemmer's release): bump TERMS_VERSION in "
        f"biblioteca/text/version.py and pin {terms_fingerprint()!r} under it, so that stored stems are not used "
        "until documents are processed again"
    )
