"""Throughput of biblioteca.text.sentences against pySBD on a markdown corpus (run by hand).

    .venv/bin/python bench/sentences.py [DIR] [--rounds N] [--runs N]

DIR defaults to ../shared/corpus (every *.md below it). Both splitters get the same documents,
one call per file. Times are CPU time of this process (the machine is shared), rounds alternate
the two splitters, and the best time of each is kept. The target is ours >= 50x pySBD's chars/s.
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


def best_time(fn: Callable[[str], object], docs: list[str], runs: int) -> float:
    best = float("inf")
    for _ in range(runs):
        start = time.process_time()
        for doc in docs:
            fn(doc)
        best = min(best, time.process_time() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", nargs="?", default=str(ROOT.parent / "shared" / "corpus"))
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds of both")
    parser.add_argument("--runs", type=int, default=5, help="runs of ours per round")
    args = parser.parse_args()

    files = sorted(Path(args.corpus).rglob("*.md"))
    if not files:
        sys.exit(f"no *.md under {args.corpus}")
    docs = [f.read_text(encoding="utf-8") for f in files]
    chars = sum(len(d) for d in docs)
    print(f"{len(files)} files, {chars:,} chars from {args.corpus}")

    import pysbd

    segmenter = pysbd.Segmenter(language="en", clean=False)
    ours = theirs = float("inf")
    for _ in range(args.rounds):
        ours = min(ours, best_time(split_sentences, docs, args.runs))
        theirs = min(theirs, best_time(segmenter.segment, docs, 1))
    units = sum(len(split_sentences(d)) for d in docs)
    print(f"ours : {chars / ours:14,.0f} chars/s  (best {ours:.3f} s, {units:,} units)")
    print(f"pySBD: {chars / theirs:14,.0f} chars/s  (best {theirs:.3f} s)")
    print(f"ratio: {theirs / ours:.1f}x")

if __name__ == "__main__":
    main()
