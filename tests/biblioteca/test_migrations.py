"""The full-text migration indexes chunks stored before it without embedding anything again.

It runs inside the test's transaction (PostgreSQL rolls DDL back too), so the schema is whole afterwards.
"""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from biblioteca.embeddings import get_embedder

pytestmark = pytest.mark.django_db

BEFORE = [("biblioteca", "0001_initial")]
AFTER = [("biblioteca", "0002_lexical_search")]


def migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


def migrate_without_embedding(targets):
    """`migrate(targets)` after the rows written so far are checked (so the ALTER TABLEs can run), asserting
    that the migration embedded nothing."""
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
    calls = get_embedder().calls
    apps = migrate(targets)
    assert get_embedder().calls == calls
    return apps


def test_existing_chunks_get_a_language_and_a_search_vector_and_keep_their_vectors():
    old = migrate(BEFORE)
    Document, Chunk = old.get_model("biblioteca", "Document"), old.get_model("biblioteca", "Chunk")
    spanish = Document.objects.create(
        app="t-migration", source_path="ajustes.md", title="Ajustes", content_hash="0" * 16
    )
    text = (
        "La configuración del servidor se guarda en un archivo que el programa lee al arrancar; cambia "
        "`max_connections` para admitir más clientes a la vez."
    )
    vector = [0.0] * 383 + [1.0]
    Chunk.objects.create(
        document=spanish,
        chunk_index=0,
        heading_path=["# Ajustes"],
        text=text,
        start_offset=0,
        end_offset=len(text),
        token_count=30,
        embedding=vector,
        embedding_model="some-model",
    )

    new = migrate_without_embedding(AFTER)

    document = new.get_model("biblioteca", "Document").objects.get(pk=spanish.pk)
    assert (document.language, document.search_config) == ("es", "spanish")
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT search_vector::text, search_length, embedding::text FROM biblioteca_chunk "
            "WHERE document_id = %s",
            [spanish.pk],
        )
        indexed, length, embedding = cursor.fetchone()
    assert "'configuracion'" in indexed or "'configur'" in indexed  # accents folded, then stemmed
    assert "'maxconnections'" in indexed and "'connections'" in indexed  # the identifier, whole and in parts
    assert length > 10
    assert embedding.endswith(",1]")


def test_sentence_vectors_become_half_precision_in_place():
    old = migrate([("biblioteca", "0002_lexical_search")])
    Document, Chunk = old.get_model("biblioteca", "Document"), old.get_model("biblioteca", "Chunk")
    Sentence = old.get_model("biblioteca", "Sentence")
    document = Document.objects.create(app="t-halfvec", source_path="a.md", title="A", content_hash="0" * 16)
    chunk = Chunk.objects.create(
        document=document,
        chunk_index=0,
        heading_path=[],
        text="One. Two.",
        start_offset=0,
        end_offset=9,
        token_count=4,
        embedding=[0.05] * 384,
        embedding_model="some-model",
    )
    vector = [((i % 7) - 3) / 10 for i in range(384)]
    Sentence.objects.create(
        chunk=chunk, position=0, start_offset=0, end_offset=4, text="One.", embedding=vector
    )

    migrate_without_embedding([("biblioteca", "0003_sentence_halfvec")])

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_typeof(embedding)::text, embedding::text FROM biblioteca_sentence WHERE chunk_id = %s",
            [chunk.pk],
        )
        kind, stored = cursor.fetchone()
    assert kind == "halfvec"
    values = [float(x) for x in stored.strip("[]").split(",")]
    assert max(abs(a - b) for a, b in zip(values, vector)) < 1e-3


def test_existing_chunks_take_their_documents_scope_without_being_embedded_again():
    old = migrate([("biblioteca", "0003_sentence_halfvec")])
    Document, Chunk = old.get_model("biblioteca", "Document"), old.get_model("biblioteca", "Chunk")
    documents = [
        Document.objects.create(
            app=app, source_path="a.md", source_type=source_type, title="A", content_hash="0" * 16
        )
        for app, source_type in (("t-scope-a", "docs"), ("t-scope-b", "faq"))
    ]
    for document in documents:
        for index in range(2):
            Chunk.objects.create(
                document=document,
                chunk_index=index,
                heading_path=[],
                text="Some text.",
                start_offset=0,
                end_offset=10,
                token_count=3,
                embedding=[0.0] * 383 + [1.0],
                embedding_model="some-model",
            )

    migrate_without_embedding([("biblioteca", "0004_chunk_scope")])

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT document_id, app, source_type, embedding::text FROM biblioteca_chunk WHERE document_id = ANY(%s)",
            [[d.pk for d in documents]],
        )
        rows = cursor.fetchall()
        cursor.execute("SELECT indexdef FROM pg_indexes WHERE indexname = 'chunk_app_type_idx'")
        (definition,) = cursor.fetchone()
    by_document = {d.pk: (d.app, d.source_type) for d in documents}
    assert len(rows) == 4 and all((app, source_type) == by_document[pk] for pk, app, source_type, _ in rows)
    assert all(embedding.endswith(",1]") for *_, embedding in rows)
    assert "(app, source_type)" in definition


def _pending_pages() -> int:
    """Moves the full-text index's pending entries into it, and says how many pages they filled."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT gin_clean_pending_list('chunk_search_vector_gin'::regclass)")
        return cursor.fetchone()[0]


def _stored_chunk(Chunk, document, *, index: int, text: str, heading_path=()):
    return Chunk.objects.create(
        document=document,
        chunk_index=index,
        heading_path=list(heading_path),
        text=text,
        start_offset=0,
        end_offset=len(text),
        token_count=12,
        embedding=[0.0] * 383 + [1.0],
        embedding_model="some-model",
    )


def _add_chunks(Document, Chunk, *, app: str, count: int) -> None:
    document = Document.objects.create(app=app, source_path="a.md", title="A", content_hash="0" * 16)
    for index in range(count):
        text = f"Rotate the signing key {index} before the certificate number {index * 7} expires."
        _stored_chunk(Chunk, document, index=index, text=text)
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE biblioteca_chunk SET search_vector = to_tsvector('english', text) WHERE document_id = %s",
            [document.pk],
        )


def test_the_full_text_index_stops_keeping_a_pending_list_and_empties_the_one_it_had():
    old = migrate([("biblioteca", "0006_chunk_scope_trigger")])
    Document, Chunk = old.get_model("biblioteca", "Document"), old.get_model("biblioteca", "Chunk")
    _add_chunks(Document, Chunk, app="t-gin-before", count=40)
    assert _pending_pages() > 0  # before, writes wait in the pending list that every search reads
    _add_chunks(Document, Chunk, app="t-gin-pending", count=40)
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")

    new = migrate([("biblioteca", "0007_search_index_without_pending_list")])

    assert _pending_pages() == 0
    _add_chunks(
        new.get_model("biblioteca", "Document"),
        new.get_model("biblioteca", "Chunk"),
        app="t-gin-after",
        count=40,
    )
    assert _pending_pages() == 0
    with connection.cursor() as cursor:
        cursor.execute("SELECT reloptions FROM pg_class WHERE relname = 'chunk_search_vector_gin'")
        assert cursor.fetchone()[0] == ["fastupdate=off"]
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute(
            "SELECT count(*) FROM biblioteca_chunk WHERE search_vector @@ to_tsquery('english', 'certificate') "
            "AND text LIKE 'Rotate the signing key %%'"
        )
        assert cursor.fetchone()[0] == 120


def test_chunks_holding_a_flag_are_indexed_again_with_its_own_word_and_the_others_left_alone():
    old = migrate([("biblioteca", "0007_search_index_without_pending_list")])
    Document, Chunk = old.get_model("biblioteca", "Document"), old.get_model("biblioteca", "Chunk")
    document = Document.objects.create(
        app="t-flags", source_path="cli.md", title="CLI", content_hash="0" * 16, search_config="english"
    )
    texts = {
        "flag": "Start the server with `--host` to listen on every address.",
        "heading": "Listens on every address.",
        "plain": "The host name comes from the operating system.",
    }
    headings = {"flag": ["# CLI"], "heading": ["# CLI", "## `--open`"], "plain": ["# CLI"]}
    ids = {
        name: _stored_chunk(Chunk, document, index=index, text=text, heading_path=headings[name]).pk
        for index, (name, text) in enumerate(texts.items())
    }
    with connection.cursor() as cursor:  # as indexed before flags had a word of their own
        cursor.execute(
            "UPDATE biblioteca_chunk SET search_vector = to_tsvector('english', text) WHERE document_id = %s",
            [document.pk],
        )

    migrate_without_embedding([("biblioteca", "0008_flag_words")])

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT id, search_vector::text, embedding::text FROM biblioteca_chunk WHERE document_id = %s",
            [document.pk],
        )
        rows = {pk: (vector, embedding) for pk, vector, embedding in cursor.fetchall()}
    assert "'flaghost'" in rows[ids["flag"]][0] and "'host'" in rows[ids["flag"]][0]
    assert "'flagopen'" in rows[ids["heading"]][0] and "'cli'" in rows[ids["heading"]][0]
    assert rows[ids["plain"]][0] == "'come':4 'host':2 'name':3 'oper':7 'system':8"  # untouched
    assert all(embedding.endswith(",1]") for _, embedding in rows.values())


def test_existing_sentences_get_their_stems_without_being_embedded_or_chunked_again():
    from biblioteca.text.lexical import unit_terms

    old = migrate([("biblioteca", "0009_document_processed_with")])
    Document, Chunk = old.get_model("biblioteca", "Document"), old.get_model("biblioteca", "Chunk")
    Sentence = old.get_model("biblioteca", "Sentence")
    text = "La configuración se guarda al arrancar. Cambia `max_connections` para admitir más clientes."
    sentences = {}
    for processed_with in ("text 2, chunks 500/50", "text 1, chunks 500/50"):
        document = Document.objects.create(
            app="t-terms",
            source_path=f"{processed_with[:6]}.md",
            title="Ajustes",
            content_hash="0" * 16,
            language="es",
            search_config="spanish",
            processed_with=processed_with,
        )
        chunk = _stored_chunk(Chunk, document, index=0, text=text)
        for position, (start, end) in enumerate(((0, 39), (40, len(text)))):
            Sentence.objects.create(
                chunk=chunk,
                position=position,
                start_offset=start,
                end_offset=end,
                text=text[start:end],
                embedding=[0.5] * 384,
            )
        sentences[processed_with] = document.pk

    migrate_without_embedding([("biblioteca", "0010_sentence_terms")])

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT d.processed_with, s.text, s.terms, s.embedding::text, s.identifier_keys FROM biblioteca_sentence s "
            "JOIN biblioteca_chunk c ON c.id = s.chunk_id JOIN biblioteca_document d ON d.id = c.document_id "
            "WHERE d.app = 't-terms' ORDER BY d.id, s.position"
        )
        rows = cursor.fetchall()
    current = [r for r in rows if r[0] == "text 2, terms 1, chunks 500/50"]
    older = [r for r in rows if r[0] == "text 1, chunks 500/50"]
    assert len(current) == len(older) == 2
    assert [set(r[2].split(" ")) for r in current] == [unit_terms(r[1], "es") for r in current]
    assert {"configur", "maxconnections"} <= set(current[0][2].split(" ")) | set(
        current[1][2].split(" ")
    )  # folded, stemmed
    assert "maxconnections" in current[1][4].split(" ")  # the identifier's keys
    assert all(
        r[2] is None and r[4] is None for r in older
    )  # stemmed at its next ingest, which processes it again anyway
    assert all(r[3].startswith("[0.5,") for r in rows)

    # The release before writes sentences without stems while this one is rolled out: they have none.
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO biblioteca_sentence (chunk_id, position, start_offset, end_offset, text, embedding) "
            "SELECT chunk_id, 2, 0, 2, 'La', embedding FROM biblioteca_sentence WHERE text = %s LIMIT 1 "
            "RETURNING terms",
            [text[:39]],
        )
        assert cursor.fetchone() == (None,)

    migrate([("biblioteca", "0009_document_processed_with")])
    with connection.cursor() as cursor:
        cursor.execute("SELECT processed_with FROM biblioteca_document WHERE app = 't-terms' ORDER BY id")
        assert cursor.fetchall() == [("text 2, chunks 500/50",), ("text 1, chunks 500/50",)]


def test_existing_chunks_keep_everything_and_get_no_heading_vector_until_their_next_ingest():
    old = migrate([("biblioteca", "0010_sentence_terms")])
    Document, Chunk = old.get_model("biblioteca", "Document"), old.get_model("biblioteca", "Chunk")
    document = Document.objects.create(app="t-heads", source_path="a.md", title="A", content_hash="0" * 16)
    _stored_chunk(
        Chunk, document, index=0, text="Bills appear after the first payment.", heading_path=["## Bills"]
    )

    migrate_without_embedding([("biblioteca", "0011_chunk_heading_embedding")])

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.heading_embedding IS NULL, c.embedding::text, c.text FROM biblioteca_chunk c "
            "JOIN biblioteca_document d ON d.id = c.document_id WHERE d.app = 't-heads'"
        )
        assert cursor.fetchall() == [(True, "[" + "0," * 383 + "1]", "Bills appear after the first payment.")]
    migrate([("biblioteca", "0010_sentence_terms")])
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM biblioteca_chunk c JOIN biblioteca_document d ON d.id = c.document_id "
            "WHERE d.app = 't-heads'"
        )
        assert cursor.fetchone() == (1,)


def test_the_migrations_hold_every_change_to_the_models():
    from django.core.management import call_command

    call_command("makemigrations", "--check", "--dry-run", verbosity=0)  # exits non-zero when one is missing
