"""Ingestion: markdown files in, chunks and sentences with vectors out, each document replaced atomically.

Everything slow (the embedding model) happens before the transaction that swaps a document's chunks, so a
failure half-way leaves the previous version intact and searchable.

Longer than ~300 lines on purpose: walking, reading, chunking, embedding and the per-document swap are the steps of
one transaction's story, and the report that names every file's outcome is built along them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
from django.conf import settings
from django.db import connection, transaction
from django.db.models import BooleanField, ExpressionWrapper, Q
from django.utils import timezone

from biblioteca.embeddings import Embedder, get_embedder
from biblioteca.errors import ApplicationError
from biblioteca.models import Chunk, Document, Sentence
from biblioteca.text.chunking import (
    chunk_markdown,
    content_hash,
    document_title,
    heading_words,
    passage_header,
    section_openers,
)
from biblioteca.text.identifiers import identifier_keys
from biblioteca.text.lexical import detect_language, lexical_text, pack_terms, search_config, unit_terms
from biblioteca.text.sentences import split_sentence_spans
from biblioteca.text.tokens import count_tokens

MARKDOWN_SUFFIXES = (".md", ".markdown", ".mdx")
TITLE_MAX_LENGTH = Document._meta.get_field("title").max_length


class IngestError(ApplicationError):
    """A file that cannot be ingested; the message says why."""


@dataclass
class DocumentResult:
    source_path: str
    status: str  # added | updated | unchanged | skipped | outside | too_large | duplicate | failed
    chunks: int = 0
    sentences: int = 0
    embedded_texts: int = 0
    embed_seconds: float = 0.0
    error: str = ""
    # updated with its content unchanged: another text version or chunk settings had chunked it
    rechunked: bool = False


@dataclass
class IngestReport:
    results: list[DocumentResult] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def count(self, status: str) -> int:
        return sum(1 for r in self.results if r.status == status)

    @property
    def failed(self) -> list[DocumentResult]:
        return [r for r in self.results if r.status == "failed"]

    @property
    def rechunked(self) -> int:
        return sum(1 for r in self.results if r.rechunked)

    @property
    def chunks(self) -> int:
        return sum(r.chunks for r in self.results if r.status in ("added", "updated"))

    @property
    def embed_seconds(self) -> float:
        return sum(r.embed_seconds for r in self.results)

    @property
    def embedded_texts(self) -> int:
        return sum(r.embedded_texts for r in self.results)


@dataclass(frozen=True)
class _PreparedChunk:
    index: int
    heading_path: list[str]
    text: str
    start: int
    end: int
    sentence_spans: list[tuple[int, int]]


@dataclass(frozen=True)
class _Vectors:
    """What one embedding pass gives a document's chunks: each chunk's vector, its sentences' vectors, and the
    vector of the heading it opens its section under (None for one that opens none)."""

    chunks: np.ndarray
    sentences: list[np.ndarray]
    headings: list[np.ndarray | None]
    embedded: int


def _opened_headings(heading_paths: Sequence[Sequence[str]]) -> list[str | None]:
    """Per chunk of a document (by its heading path, in order), the words of the heading it opens its section
    under, None for one that continues its section or has no heading."""
    opens = section_openers(heading_paths)
    return [(heading_words(path[-1]) if o else "") or None for path, o in zip(heading_paths, opens)]


def _prepare(*, source_path: str, content: str) -> tuple[str, list[_PreparedChunk]]:
    title = document_title(filename=source_path, content=content)
    chunks = chunk_markdown(
        filename=source_path,
        content=content,
        title=title,
        chunk_size=settings.CHUNK_SIZE,
        chunk_overlap=settings.CHUNK_OVERLAP,
    )
    prepared = [
        _PreparedChunk(
            index=c.chunk_index,
            heading_path=list(c.heading_path),
            text=c.text,
            start=c.start,
            end=c.end,
            sentence_spans=split_sentence_spans(c.text),
        )
        for c in chunks
    ]
    return title, prepared


def _embedded_text(*, title: str, chunk_text: str, heading_path: Sequence[str]) -> str:
    """A chunk is embedded under its passage header (title and headings), so a section whose text never names
    its topic is still found by it."""
    return f"{passage_header(title=title, heading_path=heading_path)}\n{chunk_text}"


def _embed_chunks(
    embedder: Embedder,
    chunks: Sequence[_PreparedChunk],
    *,
    title: str,
    known: Mapping[str, np.ndarray] | None = None,
) -> _Vectors:
    """One batch pass over every chunk, every sentence and every heading a chunk opens its section under.

    Sentences and headings are embedded bare, to score them against each other. A text that occurs twice
    (sentences in the overlap between chunks, repeated code) is embedded once, and one in `known` (the
    document's stored vectors, by the exact text embedded) not at all.
    """
    known = known or {}
    texts = [_embedded_text(title=title, chunk_text=c.text, heading_path=c.heading_path) for c in chunks]
    for c in chunks:
        texts.extend(c.text[s:e] for s, e in c.sentence_spans)
    headings = _opened_headings([c.heading_path for c in chunks])
    sentences_end = len(texts)
    texts.extend(h for h in headings if h)
    unique = list(dict.fromkeys(texts))
    missing = [text for text in unique if text not in known]
    embedded = dict(zip(missing, embedder.embed_documents(missing)))
    vectors = np.array([embedded[t] if t in embedded else known[t] for t in texts], dtype=np.float32).reshape(
        len(texts), embedder.dimensions
    )
    per_chunk, cursor = [], len(chunks)
    for c in chunks:
        per_chunk.append(vectors[cursor : cursor + len(c.sentence_spans)])
        cursor += len(c.sentence_spans)
    heading_rows = iter(range(sentences_end, len(texts)))
    heading_vectors = [vectors[next(heading_rows)] if h else None for h in headings]
    return _Vectors(vectors[: len(chunks)], per_chunk, heading_vectors, len(missing))


def _stored_vectors(document: Document) -> dict[str, np.ndarray]:
    """The vectors a document's stored texts were embedded to, by the exact text embedded: an edit re-embeds
    only the texts it changed, and a document processed again only its new ones."""
    known = {
        text: np.asarray(vector, dtype=np.float32)
        for text, vector in Sentence.objects.filter(chunk__document=document).values_list("text", "embedding")
    }
    title_whole = len(document.title) < TITLE_MAX_LENGTH  # a cut title no longer gives the header embedded
    for heading_path, text, vector, heading_vector in document.chunks.values_list(
        "heading_path", "text", "embedding", "heading_embedding"
    ):
        if title_whole:
            header_and_text = _embedded_text(title=document.title, chunk_text=text, heading_path=heading_path)
            known[header_and_text] = np.asarray(vector, dtype=np.float32)
        if heading_vector is not None and heading_path:
            known[heading_words(heading_path[-1])] = np.asarray(heading_vector, dtype=np.float32)
    return known


def _chunk_rows(
    document: Document, chunks: Sequence[_PreparedChunk], vectors: _Vectors, model_name: str
) -> list[Chunk]:
    return [
        Chunk(
            document=document,
            chunk_index=c.index,
            heading_path=c.heading_path,
            text=c.text,
            start_offset=c.start,
            end_offset=c.end,
            token_count=count_tokens(c.text, encoding=settings.TOKEN_ENCODING),
            embedding=vector,
            heading_embedding=heading_vector,
            embedding_model=model_name,
            app=document.app,
            source_type=document.source_type,
        )
        for c, vector, heading_vector in zip(chunks, vectors.chunks, vectors.headings)
    ]


def _store_sentences(
    chunks: Sequence[Chunk],
    prepared: Sequence[_PreparedChunk],
    sentence_vectors: Sequence[np.ndarray],
    *,
    language: str,
) -> None:
    """Each chunk's sentences with their vectors, their stems in the document's `language` and their identifiers'
    keys."""
    Sentence.objects.bulk_create(
        [
            _sentence(chunk, position=i, start=s, end=e, vector=v, language=language)
            for chunk, c, vectors in zip(chunks, prepared, sentence_vectors)
            for i, ((s, e), v) in enumerate(zip(c.sentence_spans, vectors))
        ],
        batch_size=2000,
    )


def _sentence(
    chunk: Chunk, *, position: int, start: int, end: int, vector: np.ndarray, language: str
) -> Sentence:
    text = chunk.text[start:end]
    return Sentence(
        chunk=chunk,
        position=position,
        start_offset=start,
        end_offset=end,
        text=text,
        embedding=vector,
        terms=pack_terms(unit_terms(text, language)),
        identifier_keys=pack_terms(identifier_keys(text)),
    )


def document_language(*, app: str, content: str) -> str:
    """The app's language from DOCUMENT_LANGUAGE_BY_APP, otherwise the one detected in `content`."""
    return settings.DOCUMENT_LANGUAGE_BY_APP.get(app) or detect_language(content)


def _store_search_vectors(document: Document, chunks: Sequence[Chunk]) -> None:
    """Index each chunk's header and text for full-text search with the document's configuration."""
    bodies = [lexical_text(document.title, *c.heading_path, c.text) for c in chunks]
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {Chunk._meta.db_table} AS c SET search_vector = t.vector, "
            "search_length = (SELECT coalesce(sum(cardinality(u.positions)), 0) FROM unnest(t.vector) AS u) "
            "FROM (SELECT v.id, to_tsvector(%s::regconfig, v.body) AS vector "
            "FROM unnest(%s::bigint[], %s::text[]) AS v(id, body)) AS t WHERE c.id = t.id",
            [document.search_config, [c.pk for c in chunks], bodies],
        )


def _reindex_if_language_changed(document: Document, language: str) -> None:
    """Re-index an unchanged document whose language (and so its configuration and its sentences' stems) is no
    longer the stored one."""
    if document.language == language:
        return
    document.language, document.search_config = language, search_config(language)
    sentences = list(Sentence.objects.filter(chunk__document=document).only("id", "text"))
    for sentence in sentences:
        sentence.terms = pack_terms(unit_terms(sentence.text, language))
    with transaction.atomic():
        document.save(update_fields=["language", "search_config"])
        _store_search_vectors(document, list(document.chunks.all()))
        Sentence.objects.bulk_update(sentences, ["terms"], batch_size=2000)


def document_ingest(
    *,
    source_path: str,
    content: str,
    app: str = "default",
    source_type: str = "docs",
    url: str = "",
    force: bool = False,
    dry_run: bool = False,
    embedder: Embedder | None = None,
) -> DocumentResult:
    """Ingest one markdown document; unchanged content (same hash, same model) costs no embedding call, but for
    the headings of chunks stored before their vectors were."""
    if not content.strip():
        return DocumentResult(source_path, "skipped", error="empty file")
    digest = content_hash(content)
    embedder = embedder or get_embedder()
    existing = Document.objects.filter(app=app, source_path=source_path).first()
    language = document_language(app=app, content=content)
    reusable = bool(existing) and not force and not _needs_reembedding(existing, embedder)
    # same content, vectors reusable: skipped, unless another text version or chunk settings chunked it
    rechunked = reusable and existing.content_hash == digest
    if rechunked and existing.processed_with == Document.current_processing():
        if not dry_run:
            if existing.url != url or existing.source_type != source_type:
                Document.objects.filter(pk=existing.pk).update(url=url, source_type=source_type)
            _reindex_if_language_changed(existing, language)
            started = time.perf_counter()
            count, embedded = _fill_heading_vectors(existing, embedder)
            seconds = time.perf_counter() - started if embedded else 0.0
        else:
            count, embedded, seconds = existing.chunks.count(), 0, 0.0
        return DocumentResult(
            source_path, "unchanged", chunks=count, embedded_texts=embedded, embed_seconds=seconds
        )

    title, prepared = _prepare(source_path=source_path, content=content)
    status = "updated" if existing else "added"
    sentence_count = sum(len(c.sentence_spans) for c in prepared)
    if dry_run:
        return DocumentResult(
            source_path, status, chunks=len(prepared), sentences=sentence_count, rechunked=rechunked
        )

    started = time.perf_counter()
    known = _stored_vectors(existing) if reusable else None
    vectors = _embed_chunks(embedder, prepared, title=title, known=known)
    embed_seconds = time.perf_counter() - started

    with transaction.atomic():
        document, _ = Document.objects.select_for_update().update_or_create(
            app=app,
            source_path=source_path,
            defaults={
                "title": title[:TITLE_MAX_LENGTH],
                "source_type": source_type,
                "url": url,
                "content_hash": digest,
                "language": language,
                "search_config": search_config(language),
                "ingested_at": timezone.now(),
                "processed_with": Document.current_processing(),
            },
        )
        document.chunks.all().delete()
        chunks = Chunk.objects.bulk_create(_chunk_rows(document, prepared, vectors, embedder.model_name))
        _store_sentences(chunks, prepared, vectors.sentences, language=language)
        _store_search_vectors(document, chunks)
    return DocumentResult(
        source_path,
        status,
        chunks=len(prepared),
        sentences=sentence_count,
        embedded_texts=vectors.embedded,
        embed_seconds=embed_seconds,
        rechunked=rechunked,
    )


def _fill_heading_vectors(document: Document, embedder: Embedder) -> tuple[int, int]:
    """Store the vectors of the headings a document's chunks open their sections under, for chunks stored before
    they were (`Chunk.heading_embedding`): its headings alone are embedded, its chunks and sentences stay as they
    are. Returns how many chunks the document has (read here anyway) and how many texts were embedded."""
    rows = list(
        document.chunks.order_by("chunk_index")
        .annotate(lacks=ExpressionWrapper(Q(heading_embedding__isnull=True), output_field=BooleanField()))
        .values_list("pk", "heading_path", "lacks")
    )
    headings = _opened_headings([path for _, path, _ in rows])
    wanted = {pk: words for (pk, _, lacks), words in zip(rows, headings) if words and lacks}
    if not wanted:
        return len(rows), 0
    unique = list(dict.fromkeys(wanted.values()))
    vectors = dict(zip(unique, embedder.embed_documents(unique)))
    chunks = [Chunk(pk=pk, heading_embedding=vectors[words]) for pk, words in wanted.items()]
    Chunk.objects.bulk_update(chunks, ["heading_embedding"], batch_size=2000)
    return len(rows), len(unique)


def _needs_reembedding(document: Document, embedder: Embedder) -> bool:
    """Vectors from another model, or chunks stored before sentences were, are not reusable as they are."""
    chunks = document.chunks.all()
    if chunks.exclude(embedding_model=embedder.model_name).exists():
        return True
    return chunks.filter(sentences__isnull=True).exists()


@dataclass(frozen=True)
class SourceFile:
    path: Path
    source_path: str
    # "outside": a link out of its folder; "too_large": over INGEST_MAX_FILE_BYTES; "duplicate": a link to a file
    # read under another path
    refused: str = ""
    reason: str = ""


def _refusal(path: Path, root: Path | None) -> tuple[str, str]:
    """Why a found file must not be read: a link that leads out of the folder being ingested (`faq/x.md ->
    ../../.env` would make the target quotable by the public widget), or a file over the size cap."""
    target = path.resolve()
    if root is not None and not target.is_relative_to(root.resolve()):
        return "outside", f"a link to {target}, outside {root}; not read"
    size, cap = target.stat().st_size, settings.INGEST_MAX_FILE_BYTES
    if size > cap:
        return "too_large", f"{size:,} bytes, over INGEST_MAX_FILE_BYTES ({cap:,}); not read"
    return "", ""


def find_markdown_files(paths: Iterable[str | Path]) -> list[SourceFile]:
    """Markdown files under the given files and folders, with their source path relative to each root.

    Two different files with the same source path (`a/index.md` and `b/index.md` given as roots `a` and `b`)
    would overwrite each other, so that is an error naming both.
    """
    found: dict[str, SourceFile] = {}

    def add(path: Path, rel: str, root: Path | None = None) -> None:
        other = found.get(rel)
        if other and other.path.resolve() != path.resolve():
            raise IngestError(
                f"{path} and {other.path} would both be stored as {rel!r}: ingest their common "
                "parent folder instead, or each with its own --app"
            )
        found.setdefault(rel, SourceFile(path, rel, *_refusal(path, root)))

    for raw in paths:
        root = Path(raw)
        if not root.exists():
            raise IngestError(f"{root}: no such file or directory")
        if root.is_file():
            if root.suffix.lower() not in MARKDOWN_SUFFIXES:
                raise IngestError(f"{root}: not a markdown file (.md, .markdown or .mdx)")
            add(root, root.name)
            continue
        for path in sorted(root.rglob("*")):
            if (
                path.is_file()
                and path.suffix.lower() in MARKDOWN_SUFFIXES
                and not any(part.startswith(".") for part in path.relative_to(root).parts)
            ):
                add(path, path.relative_to(root).as_posix(), root)
    return _read_once(list(found.values()))


def _read_once(files: list[SourceFile]) -> list[SourceFile]:
    """Files that are one file through links (`faq/latest.md -> ../v2.md`) are read once: under the path that is
    no link when the walk found it, else the first. The others are refused as duplicates: the same page stored
    twice takes two of a search's places with one text."""
    targets = {f.source_path: f.path.resolve() for f in files if not f.refused}
    kept: dict[Path, SourceFile] = {}
    for f in files:
        if f.source_path in targets:
            other = kept.setdefault(targets[f.source_path], f)
            if other.path.is_symlink() and not f.path.is_symlink():
                kept[targets[f.source_path]] = f
    out = []
    for f in files:
        first = kept.get(targets.get(f.source_path))
        if first is not None and first is not f:
            f = replace(
                f, refused="duplicate", reason=f"the same file as {first.source_path}; read once, there"
            )
        out.append(f)
    return out


def read_markdown(path: Path) -> str:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise IngestError(f"{path}: cannot be read ({exc.strerror or exc})") from exc
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise IngestError(
            f"{path}: not UTF-8 text (invalid byte at offset {exc.start}); convert it to UTF-8"
        ) from exc


def document_url(*, url_prefix: str, source_path: str) -> str:
    if not url_prefix:
        return ""
    stem = source_path.rsplit(".", 1)[0]
    return f"{url_prefix.rstrip('/')}/{stem}"


def ingest_scope_check(*, app: str, source_type: str, url_prefix: str = "") -> None:
    """Refuse, before any file is read, a scope the library cannot store or a search could never pick out."""
    limits = (
        ("app", app, Document._meta.get_field("app").max_length),
        ("source type", source_type, Document._meta.get_field("source_type").max_length),
    )
    for name, value, limit in limits:
        if not value.strip():
            raise IngestError(f"The {name} cannot be blank: a search could never pick these documents out.")
        if len(value) > limit:
            raise IngestError(f"The {name} is {len(value)} characters long: at most {limit}.")
    longest = Document._meta.get_field("url").max_length - 2  # room for "/" and a page's name
    if len(url_prefix) > longest:
        raise IngestError(f"The URL prefix is {len(url_prefix)} characters long: at most {longest}.")


def directory_ingest(
    *,
    paths: Sequence[str | Path],
    app: str = "default",
    source_type: str = "docs",
    url_prefix: str = "",
    prune: bool = False,
    dry_run: bool = False,
    force: bool = False,
    embedder: Embedder | None = None,
    on_result: Callable[[DocumentResult], None] | None = None,
    on_start: Callable[[int], None] | None = None,
) -> IngestReport:
    """Ingest every markdown file under `paths`; one bad file is reported and skipped, never fatal."""
    ingest_scope_check(app=app, source_type=source_type, url_prefix=url_prefix)
    started = time.perf_counter()
    files = find_markdown_files(paths)
    if on_start:
        on_start(len(files))
    report = IngestReport()
    for source in files:
        if source.refused:
            report.results.append(
                result := DocumentResult(source.source_path, source.refused, error=source.reason)
            )
            if on_result:
                on_result(result)
            continue
        try:
            content = read_markdown(source.path)
            result = document_ingest(
                source_path=source.source_path,
                content=content,
                app=app,
                source_type=source_type,
                url=document_url(url_prefix=url_prefix, source_path=source.source_path),
                force=force,
                dry_run=dry_run,
                embedder=embedder,
            )
        except Exception as exc:  # one bad document must not stop the others; the report names it
            result = DocumentResult(source.source_path, "failed", error=str(exc) or type(exc).__name__)
        report.results.append(result)
        if on_result:
            on_result(result)
    if prune:
        emptied = {r.source_path for r in report.results if r.status == "skipped"}
        report.removed = documents_prune(
            app=app, source_type=source_type, files=files, emptied=emptied, dry_run=dry_run
        )
    report.seconds = time.perf_counter() - started
    return report


def documents_prune(
    *,
    app: str,
    source_type: str,
    files: Sequence[SourceFile],
    emptied: Collection[str] = (),
    dry_run: bool = False,
) -> list[str]:
    """Delete the app's documents of this source type that none of `files` (a walk of the folder) still holds,
    and name them. A refused file does not count as holding its document, nor does one `emptied` (its source
    paths): emptying a page takes it down as deleting it does."""
    seen = {f.source_path for f in files if not f.refused} - set(emptied)
    gone = Document.objects.filter(app=app, source_type=source_type).exclude(source_path__in=seen)
    removed = sorted(gone.values_list("source_path", flat=True))
    if not dry_run:
        gone.delete()
    return removed


def chunks_reembed(
    *,
    app: str | None = None,
    everything: bool = False,
    embedder: Embedder | None = None,
    on_document: Callable[[Document], None] | None = None,
) -> int:
    """Embed again the documents whose vectors came from another model or that lack sentence vectors.

    Overlapping chunks cannot rebuild the source, so the stored chunks keep their text and get new vectors,
    with their sentences, one document per transaction.
    """
    if app is not None and not Document.objects.filter(app=app).exists():
        raise IngestError(
            f"No documents in app {app!r}: nothing to re-embed (leave the app out for every app)."
        )
    embedder = embedder or get_embedder()
    documents = Document.objects.all() if app is None else Document.objects.filter(app=app)
    count = 0
    for document in documents.order_by("pk"):
        if not everything and not _needs_reembedding(document, embedder):
            continue
        chunks = list(document.chunks.order_by("chunk_index"))
        prepared = [
            _PreparedChunk(
                index=c.chunk_index,
                heading_path=c.heading_path,
                text=c.text,
                start=c.start_offset,
                end=c.end_offset,
                sentence_spans=split_sentence_spans(c.text),
            )
            for c in chunks
        ]
        vectors = _embed_chunks(embedder, prepared, title=document.title)
        with transaction.atomic():
            for chunk, vector, heading_vector in zip(chunks, vectors.chunks, vectors.headings):
                chunk.embedding = vector
                chunk.heading_embedding = heading_vector
                chunk.embedding_model = embedder.model_name
            Chunk.objects.bulk_update(chunks, ["embedding", "heading_embedding", "embedding_model"])
            Sentence.objects.filter(chunk__document=document).delete()
            _store_sentences(chunks, prepared, vectors.sentences, language=document.language)
        count += 1
        if on_document:
            on_document(document)
    return count
