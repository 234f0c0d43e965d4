"""Where trimming's kept tokens go, and why: for the first passage and for the passages after it, the tokens
retrieved, dropped whole, and kept, by reason (the sentence's own score, a companion of one, the window around
one, the follow-on after a passage's best, a paragraph's opening or a short gap filled) and by kind of unit
(prose, list item, field line, table, heading, code block, markup).

    .venv/bin/python bench/trim_why.py [--datasets fastapi] [--qa-file Q.jsonl --corpus "docs/{lang}"]
        [--set "RETRIEVAL_TRIM_WINDOW_SPREAD=off RETRIEVAL_TRIM_PASSAGE_SPREAD=off"] [-v] [--lost]

`-v` also lists each question's passages sentence by sentence: K kept, A holds the answer, its score (cosine
plus words), its kind and tokens. Reads the passages bench/calibrate_trim.py retrieved (kept in var/, retrieved
first when missing), so it shows the cases the calibration replays. Sentence tokens only (no doc lines, no
" [...] "), so the shares are of sentences, not the exact cut.

`--lost` lists, instead, each answer trimming loses and where its line stands among the lines left out: a line
the next few left out would bring back is a setting's to win; one that a score puts behind dozens is not.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _django
import numpy as np

_django.setup()

import calibrate_trim  # noqa: E402
import docs_qa  # noqa: E402
from django.test.utils import override_settings  # noqa: E402

from biblioteca.retrieval import resolve_trim_params  # noqa: E402
from biblioteca.trimming import TrimInput, TrimParams, lexical_evidence  # noqa: E402

KINDS = ("prose", "item", "field", "table", "heading", "code", "markup")
REASONS = ("own score", "companion", "window")


def unit_kind(chunk: TrimInput, i: int) -> str:
    if chunk.markup[i]:
        return "markup"
    if chunk.units[i].lstrip().startswith(("```", "~~~")):
        return "code"
    shape = chunk.shapes[i]
    return "table" if shape in ("row", "rule") else shape


def kept_sets(case: calibrate_trim.Case, params: TrimParams) -> tuple[list, list[set[int]], list[set[int]]]:
    """The trimmer's outputs, and per passage the sentences it keeps on their own score and with companions:
    the same trimming without the window, follow-ons, paragraph openings and gap filling (and without
    companions), so no rule is restated here."""
    full = calibrate_trim.trim_case(case, params)
    unwidened = replace(
        params,
        window=0,
        paragraph_follow=0,
        reason_follow=0,
        gap_words=0,
        paragraph_start=0,
        next_steps=0,
        earlier_steps=0,
        how_steps=0,
    )
    alone = calibrate_trim.trim_case(case, replace(unwidened, companions=False))
    paired = calibrate_trim.trim_case(case, unwidened)
    return full, [set(o.kept) for o in alone], [set(o.kept) for o in paired]


def tally(cases: list[calibrate_trim.Case], hit, params: TrimParams, verbose: bool) -> Counter:
    counts: Counter = Counter()
    for case in cases:
        full, alone, paired = kept_sets(case, params)
        if verbose:
            print(f"\n== {case.question} | answer: {case.answers[0][:80]!r} | retrieved: {case.baseline_hit}")
        for rank, (chunk, out) in enumerate(zip(case.inputs, full)):
            where = "first" if rank == 0 else "after"
            tokens = case.sentence_tokens[rank]
            counts[where, "retrieved"] += int(tokens.sum())
            if out.dropped:
                counts[where, "dropped"] += int(tokens.sum())
            for i in out.kept:
                reason = "own score" if i in alone[rank] else "companion" if i in paired[rank] else "window"
                counts[where, reason] += int(tokens[i])
                counts[where, unit_kind(chunk, i)] += int(tokens[i])
            if verbose:
                describe(case, rank, out.kept, out.dropped, params, hit)
    return counts


def trim_scores(case: calibrate_trim.Case, rank: int, params: TrimParams) -> np.ndarray:
    """A passage's sentence scores as the trimmer ranks them: cosine plus words."""
    chunk = case.inputs[rank]
    scores = chunk.scores(case.query_vector)
    if params.lexical_weight and case.query_terms:
        scores = scores + params.lexical_weight * lexical_evidence(
            chunk, case.query_terms, heading_weight=params.heading_weight
        )
    return scores


@dataclass(frozen=True)
class LostAnswer:
    """An answer retrieved but trimmed away, seen from its best line (the one scoring highest that holds it)."""

    question: str
    passage: int
    dropped: bool
    score: float
    below_passage: float
    below_question: float
    from_kept: int | None  # lines to the nearest kept line of its passage; None when none is kept
    place: int  # lines left out, in all the question's passages, that score higher
    left_out: int


def left_out(case: calibrate_trim.Case, rank: int, out, scores: np.ndarray) -> np.ndarray:
    """The scores of a passage's lines the trimmer left out; put-back headings, which have no vector, are no line."""
    scored = case.inputs[rank].scores(case.query_vector) != 0
    if not out.dropped:
        scored[list(out.kept)] = False
    return scores[scored]


def lost_answers(cases: list[calibrate_trim.Case], hit, params: TrimParams) -> tuple[list[LostAnswer], int]:
    """The answers retrieved whose trimmed passages no longer hold them, and how many hold it in no one line."""
    lost: list[LostAnswer] = []
    spanning = 0
    for case in cases:
        if not case.baseline_hit:
            continue
        outs = calibrate_trim.trim_case(case, params)
        if hit(case.answers, [o.text for o in outs if not o.dropped]):
            continue
        scores = [trim_scores(case, rank, params) for rank in range(len(case.inputs))]
        best_overall = max(float(s.max()) for s in scores if len(s))
        left = np.concatenate(
            [left_out(case, rank, out, s) for rank, (s, out) in enumerate(zip(scores, outs))]
        )
        holders = [
            (float(scores[rank][i]), rank, i)
            for rank, chunk in enumerate(case.inputs)
            for i, unit in enumerate(chunk.units)
            if hit(case.answers, [unit])
        ]
        if not holders:
            spanning += 1
            continue
        score, rank, i = max(holders)
        kept = () if outs[rank].dropped else outs[rank].kept
        lost.append(
            LostAnswer(
                question=case.question,
                passage=rank,
                dropped=outs[rank].dropped,
                score=score,
                below_passage=float(scores[rank].max()) - score,
                below_question=best_overall - score,
                from_kept=min((abs(i - k) for k in kept), default=None),
                place=int((left > score).sum()),
                left_out=len(left),
            )
        )
    return lost, spanning


def print_lost(name: str, lost: list[LostAnswer], spanning: int) -> None:
    count = len(lost) + spanning
    print(f"\n### {name}: {count} answer{'' if count == 1 else 's'} lost\n")
    if spanning:
        print(f"- {spanning} held by no one line (an answer across lines)")
    for a in lost:
        state = "dropped" if a.dropped else f"kept, {a.from_kept} lines from a kept line"
        print(
            f"- passage {a.passage} ({state}): its line {a.score:.3f}, {a.below_passage:.3f} under the passage's "
            f"best, {a.below_question:.3f} under the question's; {a.place} of {a.left_out} lines left out score "
            f"higher. {a.question[:90]}"
        )
    if lost:
        places = sorted(a.place for a in lost)
        within = ", ".join(f"{sum(p < n for p in places)} within {n}" for n in (1, 3, 5, 10))
        print(
            f"\nlines left out scoring higher than the answer's: median {places[len(places) // 2]}; {within}"
        )


def describe(case, rank: int, kept, dropped: bool, params: TrimParams, hit) -> None:
    chunk = case.inputs[rank]
    scores = trim_scores(case, rank, params)
    state = "dropped" if dropped else f"{len(kept)} of {len(chunk.spans)} kept"
    print(f"-- passage {rank}: {state}, best {scores.max():.3f}")
    for i, unit in enumerate(chunk.units):
        mark = ("K" if i in kept else " ") + ("A" if hit(case.answers, [unit]) else " ")
        print(
            f"  {mark} {i:3d} {scores[i]:.3f} {unit_kind(chunk, i):7s} {int(case.sentence_tokens[rank][i]):4d} "
            f"{unit[:100]!r}"
        )


def print_table(name: str, counts: Counter) -> None:
    def cell(where: str, key: str) -> str:
        retrieved = counts[where, "retrieved"] or 1
        return f"{counts[where, key]:,} ({100 * counts[where, key] / retrieved:.1f}%)"

    print(f"\n### {name} (sentence tokens; share of the tokens retrieved in that position)\n")
    print("| | first passage | passages after it |\n|---|---|---|")
    print(f"| retrieved | {counts['first', 'retrieved']:,} | {counts['after', 'retrieved']:,} |")
    print(f"| dropped whole | {cell('first', 'dropped')} | {cell('after', 'dropped')} |")
    for key in REASONS:
        print(f"| kept: {key} | {cell('first', key)} | {cell('after', key)} |")
    for key in KINDS:
        print(f"| kept: {key} | {cell('first', key)} | {cell('after', key)} |")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--datasets", nargs="*", default=["fastapi"], choices=sorted(docs_qa.DATASETS))
    parser.add_argument("--qa-file", type=Path, nargs="+", default=[], help="your own labelled questions")
    parser.add_argument(
        "--corpus", default=None, help="with --qa-file: the docs folder, {lang} for the language"
    )
    parser.add_argument("--langs", nargs="+", default=["en", "es"])
    parser.add_argument("--top-k", type=int, default=5)
    parser.add_argument("--set", default="", help="settings to trim with, as SETTING=value pairs")
    parser.add_argument("-v", "--verbose", action="store_true", help="every question, sentence by sentence")
    parser.add_argument(
        "--lost", action="store_true", help="the answers trimming loses, and where their lines stand"
    )
    args = parser.parse_args()
    if args.qa_file and not args.corpus:
        parser.error("--qa-file needs --corpus")

    sets = calibrate_trim.cached_cases(args.datasets, args.top_k, None, False, langs=tuple(args.langs))
    if args.qa_file:
        sets.update(
            calibrate_trim.custom_cases(
                args.qa_file, args.corpus, top_k=args.top_k, limit=None, fresh=False, langs=tuple(args.langs)
            )
        )
    with override_settings(**docs_qa.parse_config(args.set)):
        params = resolve_trim_params()
    print(f"trimming with {params}")
    if args.lost:
        everything: list[LostAnswer] = []
        spanning = 0
        for name, (cases, hit) in sets.items():
            lost, across = lost_answers(cases, hit, params)
            print_lost(name, lost, across)
            everything += lost
            spanning += across
        if len(sets) > 1:
            print_lost("all", everything, spanning)
        return
    total: Counter = Counter()
    for name, (cases, hit) in sets.items():
        counts = tally(cases, hit, params, args.verbose)
        print_table(name, counts)
        total.update(counts)
    if len(sets) > 1:
        print_table("all", total)


if __name__ == "__main__":
    main()
