"""Throughput of biblioteca.text.sentences against pySBD on markdown corpora (run by hand).

    .venv/bin/python bench/sentences.py [DIR ...] [--rounds N] [--runs N]

DIRs default to ../shared/corpus (the Vite docs, EN and ES) and ../shared/qa/xquad_dev; each is
measured on its own (every *.md below it). Both splitters get the same documents, one call per
file. The machine is shared and sometimes loaded, so rounds alternate the two splitters and the
best time of each is kept, both wall clock and CPU time of this process. The target is ours >= 50x
pySBD's chars/s on the Vite docs.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from biblioteca.text.sentences import split_sentences  # noqa: E402

DEFAULT_CORPORA = (ROOT.parent / "shared" / "corpus", ROOT.parent / "shared" / "qa" / "xquad_dev")


def best_times(fn: Callable[[str], object], docs: list[str], runs: int) -> tuple[float, float]:
    """Best wall-clock and best CPU seconds of `runs` passes over `docs`."""
    wall = cpu = float("inf")
    for _ in range(runs):
        w0, c0 = time.perf_counter(), time.process_time()
        for doc in docs:
            fn(doc)
        c1, w1 = time.process_time(), time.perf_counter()
        wall, cpu = min(wall, w1 - w0), min(cpu, c1 - c0)
    return wall, cpu


def bench(corpus: Path, rounds: int, runs: int, segment: Callable[[str], object]) -> None:
    files = sorted(corpus.rglob("*.md"))
    if not files:
        sys.exit(f"no *.md under {corpus}")
    docs = [f.read_text(encoding="utf-8") for f in files]
    chars = sum(len(d) for d in docs)
    units = sum(len(split_sentences(d)) for d in docs)
    parts = ", ".join(sorted({f.parent.name for f in files}))
    print(f"\n{corpus.name} ({parts}): {len(files)} files, {chars:,} chars, {units:,} units")

    ours = theirs = (float("inf"), float("inf"))
    for _ in range(rounds):
        w, c = best_times(split_sentences, docs, runs)
        ours = (min(ours[0], w), min(ours[1], c))
        w, c = best_times(segment, docs, 1)
        theirs = (min(theirs[0], w), min(theirs[1], c))
    for label, i in (("wall", 0), ("cpu ", 1)):
        print(
            f"  {label}  ours {chars / ours[i]:12,.0f} chars/s ({ours[i]:.3f} s)   "
            f"pySBD {chars / theirs[i]:10,.0f} chars/s ({theirs[i]:.3f} s)   "
            f"ratio {theirs[i] / ours[i]:6.1f}x"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpora", nargs="*", type=Path, default=list(DEFAULT_CORPORA))
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds of both")
    parser.add_argument("--runs", type=int, default=5, help="runs of ours per round")
    args = parser.parse_args()

    import pysbd

    segmenter = pysbd.Segmenter(language="en", clean=False)
    print(f"best of {args.rounds} rounds (pySBD) and {args.rounds * args.runs} runs (ours)")
    for corpus in args.corpora:
        bench(corpus, args.rounds, args.runs, segmenter.segment)


if __name__ == "__main__":
    main()
