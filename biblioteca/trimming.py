"""Trimming retrieved chunks to the sentences that matter for a question (the original design's trimChunksBySentence).

Pure numpy, no Django: the caller brings each chunk's sentence spans and their stored vectors, so no sentence
is embedded at query time. The original contract holds: keep sentences with cosine >= threshold, top up to
`min_sentences` with the best ones, add a +/-`window` of neighbours, keep the original order, join separate runs
with " [...] ", return a chunk unchanged when every sentence is kept or it has none.

Beyond it, query-level rules (all optional):
- `relative_margin`: a sentence scoring within this margin of the best sentence across all chunks is kept even
  under the threshold, so the best evidence survives when the whole query scores low;
- `drop_margin`: a chunk after the first whose best sentence, by cosine, is further than this below the best
  sentence across all chunks is dropped outright (never emptied), so hopeless chunks stop paying their
  one-sentence floor. The first chunk (the search's best) is never dropped: cosines alone do not overrule the
  fused ranking;
- `drop_neighbour_margin`: a chunk that continues the first on its page under another heading (`continues_first`:
  the stored chunks right before or after it) is dropped only when further than this below, instead of
  `drop_margin`. A page answers in its next section what its first matched section raises: a reference's usage
  after its signature, the force deletion after the plain one, a rejection after the approval steps. It is off
  when `drop_margin` is: the chunk meant to be spared more is never the only one cosines drop; and never
  narrower than `drop_margin`, for the same reason;
- `drop_score_margin`: a chunk after the first is also dropped when its best score (words counted) is further
  than this below the best score overall: it is neither close in meaning nor in words;
- `drop_search_margin`: a chunk whose own cosine, as the search ranked it (`search_scores`), is within this
  margin of the best chunk's is never dropped, only cut to its best unit (with its window, companions and
  follow-on). With hybrid search the first chunk is the fused ranking's best, and the vector side's best can
  hold its answer where no single sentence's cosine sees it: under a heading that restates the question (`My
  lazy component's state gets reset`), in a fix whose lines name only code;
- `drop_best_line_margin` and `drop_best_line_search_margin`: a chunk the drop rule would leave out keeps its
  best unit by cosine alone (no window) instead, when that unit is within the first margin of the best sentence
  overall and the chunk's own search score within the second of the best one's. Such a near miss is another
  page's or section's passage that the search ranked almost level with the best; its best line is often the
  answer, put in other words than the question's ("the connection is refused" for "a middleware rejects it").
  Only the closest near miss by cosine is kept: a question has one answer, and each line costs its passage's
  doc line too;
- `passage_margin`: in the chunks after the first, only sentences within this margin of that chunk's own best
  score (and their window and companions) are kept. Supporting passages give their best lines; the first keeps
  its context, where a question in other words than the docs finds its answer;
- `passage_spread`: that passage margin shrinks to this share of the passage's own spread (its best score minus
  the median of its scored units) when that is narrower. Documentation's cosines sit close together, so a fixed
  margin kept most of every supporting passage; measured against the passage's own spread, it keeps its top;
- `window_spread`: the window is given only to kept sentences within this share of their passage's spread of
  its best; the others (kept by the query-wide margin) stand alone. A window gives strong evidence its context;
  around weak evidence scattered through a passage it kept nearly every line;
- `lexical_weight`: a sentence's score also counts the question's terms it holds (or its heading holds), each
  weighed by its rarity in the library. Short units of documentation (`**Default:** None`, a list item, a table
  row) embed poorly but name the option the question names. A link's destination is not counted;
- `closest_line`: a kept chunk also keeps its unit closest in meaning (by cosine). When the question's words lift
  several lines of a passage, its bar rises with them past the line the embedding found closest, often the answer
  in other words than the question's;
- `heading_answer`: a kept chunk also keeps the first line of each section whose heading (`heading_cosines`) is
  at least as close in meaning to the question as the chunk's best line, with the heading. Help pages title a
  section with the question ("Why don't I see any bills?") and answer it in the section's first line, in words
  of its own;
- `spread_factor`: both margins shrink to this share of the spread of the scores (best minus median) when that is
  narrower. Cosines of documentation sit high and close together; a margin tuned on prose would keep them all;
- `companions`: units that belong together are kept together: a list item with the sentence that leads into its
  list (and a lead-in ending with a colon with its items, or over a heading with the first line of the
  subsection it announces), a table row with the table's header row, an option's heading and its
  `Type:`/`Default:` lines with each other and with every line of the option's section;
- `earlier_sections`: a passage grown to its neighbours brings the sections that lead up to its match. In the
  first passage, the sections before the match (the section holding its best score, or the earlier one where
  the chunk retrieval found begins) are trimmed like a supporting passage (`passage_margin`); the matching
  section and those after it keep the query-wide margin, since a question in other words than the docs finds
  its fix after the lines that describe its problem, and so does the lead of a section the match sits in (a
  page's opening lines over its `##` sections), which introduces it. Supporting passages are cut by their own
  bar throughout. Needs `passage_margin`;
- `trim_markup`: bare markup (an HTML tag line, an admonition fence, an include directive) is not kept at the
  edge of a kept run: a window should widen a run by words, not by `</div>`. A run that reaches an admonition's
  or content tab's opening line (`:::note`, `/// tip`, `!!! warning`, `=== "Python"`) from the text above it
  goes on to the box's first line instead, since the marker says nothing alone;
- `paragraph_follow`: a kept passage's best unit also keeps up to this many of the sentences after it in its
  paragraph: a paragraph develops its first claim (`It asks you questions and writes a package.json.` ... `Use
  -y to skip them.`), and the window stops one sentence short;
- `reason_follow`: for a question asking why (`asks_reason`), a kept passage's best unit also keeps this many
  units after it in its section: docs state a fact, then its reason, often in the next paragraph;
- `gap_words`: a lone unit (not a heading) of at most this many words between two kept units is kept too:
  eliding it saves a few tokens over the `[...]` that replaces it, and breaks the text where a question's answer
  often sits, right between two lines that matched. So is one between a kept unit and the heading that ends its
  section: a section's last short line states its exception ("You may not hold a conference under the name.");
- `paragraph_start`: a kept run that starts at most this many sentences into a prose paragraph starts at the
  paragraph's first sentence instead: "Set it to `false` to turn it off." kept without "The cache is on by
  default." names nothing;
- `next_steps`: a kept step of a numbered list keeps up to this many steps after it: a procedure read to the
  step that matched stops short of the one that finishes it ("Select the pallet", then "Select the query"). With
  it, a kept step also keeps a note right after it (`> [!NOTE]`, `:::caution`), the caveat of what it just did;
- `how_steps`: for a question asking how (`asks_how`), a kept passage's best unit also keeps up to this many steps
  of a numbered list that starts right after it in its section (within `_PROCEDURE_GAP` units): "you can be
  notified only for one vendor's items" is followed by the steps that set it up;
- `earlier_steps`: a kept step of a numbered list keeps up to this many steps before it, back to the list's first
  (over the commands and notes the steps hold, within the section): "3. Import the data" answers how to import
  only after "1. Install the plugin" and "2. Register it";
- `identifier_units`: the units holding an identifier the question names (`--assetsInlineLimit`,
  `import.meta.hot.prune`) are kept, and a passage holding one is not dropped, when at most this many units hold
  it across the passages (`biblioteca.trimming_identifiers`); 0 turns it off.

Over 300 lines because the rules act on one selection and must be read together; a third of it is this list.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from itertools import accumulate

import numpy as np

from biblioteca.text.chunking import unit_heading_level
from biblioteca.text.identifiers import identifier_keys
from biblioteca.text.lexical import pack_terms, unit_terms, unpack_terms
from biblioteca.text.list_markers import BULLET, LIST_MARKER, ORDERED
from biblioteca.trimming_identifiers import identifier_units

# A gap inside a line of text; one between blocks sits on a line of its own (a heading, list item or code fence
# after it must start its line to stay one), and one between two rows of a table is a row of its own.
ELISION = " [...] "
BLOCK_ELISION = "\n\n[...]\n\n"
ROW_ELISION = "\n| [...] |\n"


class TrimParamError(ValueError):
    """A trimming parameter out of its range; `field` names it, so a caller can name the setting behind it."""

    def __init__(self, field: str, rule: str) -> None:
        super().__init__(f"{field} {rule}")
        self.field, self.rule = field, rule

    def __reduce__(self):
        return type(self), (self.field, self.rule)


@dataclass(frozen=True)
class TrimParams:
    threshold: float
    window: int = 1
    min_sentences: int = 1
    relative_margin: float | None = None
    drop_margin: float | None = None
    drop_neighbour_margin: float | None = None
    drop_score_margin: float | None = None
    drop_search_margin: float | None = None
    drop_best_line_margin: float | None = None
    drop_best_line_search_margin: float | None = None
    passage_margin: float | None = None
    passage_spread: float | None = None
    window_spread: float | None = None
    lexical_weight: float | None = None
    heading_weight: float = 0.5
    spread_factor: float | None = None
    companions: bool = False
    closest_line: bool = False
    heading_answer: bool = False
    trim_markup: bool = False
    identifier_units: int = 6
    earlier_sections: bool = False
    paragraph_follow: int = 0
    reason_follow: int = 0
    gap_words: int = 0
    paragraph_start: int = 0
    next_steps: int = 0
    earlier_steps: int = 0
    how_steps: int = 0

    def __post_init__(self) -> None:
        if not -1.0 <= self.threshold <= 1.0:
            raise TrimParamError("threshold", "must be within [-1, 1]")
        if self.window < 0:
            raise TrimParamError("window", "must be >= 0")
        if self.min_sentences < 1:
            raise TrimParamError("min_sentences", "must be >= 1: a kept chunk is never empty")
        if self.lexical_weight is not None and self.lexical_weight < 0:
            raise TrimParamError("lexical_weight", "must be >= 0")
        if self.heading_weight < 0:
            raise TrimParamError("heading_weight", "must be >= 0")
        if self.spread_factor is not None and self.spread_factor <= 0:
            raise TrimParamError("spread_factor", "must be > 0")
        for name in (
            "identifier_units",
            "paragraph_follow",
            "reason_follow",
            "gap_words",
            "paragraph_start",
            "next_steps",
            "earlier_steps",
            "how_steps",
        ):
            if getattr(self, name) < 0:
                raise TrimParamError(name, "must be >= 0")
        for name in (
            "drop_neighbour_margin",
            "drop_score_margin",
            "drop_search_margin",
            "drop_best_line_margin",
            "drop_best_line_search_margin",
            "passage_margin",
            "passage_spread",
            "window_spread",
        ):
            if getattr(self, name) is not None and getattr(self, name) < 0:
                raise TrimParamError(name, "must be >= 0")


@dataclass(frozen=True)
class TrimInput:
    """A chunk's text, its sentence spans (offsets into text) and their unit vectors, shape (n, d), or their
    cosines with the question when the database already computed them, shape (n,); its language (to stem its
    words) and its heading path (the heading of the sentences before its first heading). In a passage grown to
    its neighbours, `hit_start` is where the chunk retrieval found begins in its text. `heading_level` is that
    heading's level (0: the page's top, before any heading; None: not known). `stored_terms` gives, per unit, the
    stems stored with its sentence at ingest, packed (`lexical.pack_terms`; None for a unit to stem anew, or
    altogether), asked only when the passage is met for the first time; `stored_keys` its identifier keys.
    `heading_cosines` gives, per heading whose vector was stored, its unit (-1: the heading the chunk starts under,
    when its first line opens that section) and its cosine with the question."""

    text: str
    spans: Sequence[tuple[int, int]]
    vectors: np.ndarray | None
    language: str = ""
    heading: str = ""
    cosines: np.ndarray | None = None
    heading_cosines: tuple[tuple[int, float], ...] = ()
    hit_start: int | None = None
    heading_level: int | None = None
    stored_terms: Callable[[], Sequence[str | None] | None] | None = field(
        default=None, compare=False, repr=False
    )
    stored_keys: Callable[[], Sequence[str | None] | None] | None = field(
        default=None, compare=False, repr=False
    )

    def __post_init__(self) -> None:
        if self.vectors is None and self.cosines is None:
            raise ValueError("a TrimInput needs its sentences' vectors or their cosines")

    @cached_property
    def _units(self) -> PassageUnits:
        spans = self.spans if isinstance(self.spans, tuple) else tuple(map(tuple, self.spans))
        units = passage_units(self.text, spans, self.language)
        if self.stored_terms is not None:
            units.offer_terms(self.stored_terms)
        if self.stored_keys is not None:
            units.offer_keys(self.stored_keys)
        return units

    @property
    def units(self) -> tuple[str, ...]:
        """The sentences' texts, sliced once for every rule that reads them."""
        return self._units.units

    @property
    def shapes(self) -> tuple[str, ...]:
        return self._units.shapes

    @property
    def unit_terms(self) -> tuple[frozenset[str], ...]:
        return self._units.stems.sets()

    def units_holding(self, term: str) -> tuple[int, ...]:
        """The units holding stem `term`, in order."""
        return self._units.stems.holding(term)

    @property
    def markup(self) -> tuple[bool, ...]:
        return self._units.markup

    @property
    def loose_markup(self) -> tuple[bool, ...]:
        return self._units.loose_markup

    @property
    def identifier_keys(self) -> tuple[frozenset[str], ...]:
        """Per unit, the keys of the identifiers it holds (`biblioteca.trimming_identifiers`)."""
        return self._units.keys.sets()

    def units_keyed(self, key: str) -> tuple[int, ...]:
        """The units holding identifier key `key`, in order."""
        return self._units.keys.holding(key)

    @property
    def companions(self) -> tuple[tuple[int, ...], ...]:
        return self._units.companions

    @property
    def sections(self) -> np.ndarray:
        return self._units.sections

    @property
    def opens_paragraph(self) -> tuple[bool, ...]:
        return self._units.opens_paragraph

    @property
    def numbered(self) -> tuple[bool, ...]:
        return self._units.numbered

    @property
    def first_step(self) -> tuple[bool, ...]:
        return self._units.first_step

    @property
    def opens_box(self) -> tuple[bool, ...]:
        return self._units.opens_box

    @property
    def is_heading(self) -> np.ndarray:
        return self._units.is_heading

    @property
    def heading_units(self) -> np.ndarray:
        return self._units.heading_units

    @property
    def section_levels(self) -> tuple[int | None, ...]:
        """Per section (`sections`), its heading's level: the first section's is `heading_level`."""
        return (self.heading_level, *self._units.heading_levels)

    @property
    def hit_unit(self) -> int | None:
        """The first unit of the chunk retrieval found, in a grown passage."""
        if self.hit_start is None or not len(self.spans):
            return None
        return min(bisect_left([a for a, _ in self.spans], self.hit_start), len(self.spans) - 1)

    def spread(self, scores: np.ndarray) -> float:
        """The passage's best score minus the median of its scored units (a put-back heading has no vector)."""
        scored = np.sort(scores[self._units.scored])  # np.median's own checks cost more than the sort
        n = len(scored)
        if not n:
            return 0.0
        median = scored[n // 2] if n % 2 else (scored[n // 2 - 1] + scored[n // 2]) / 2
        return float(scored[-1] - median)

    def scores(self, query_vector: np.ndarray) -> np.ndarray:
        if not len(self.spans):
            return np.zeros(0, dtype=np.float32)
        return self.cosines if self.cosines is not None else self.vectors @ query_vector


@dataclass(frozen=True)
class TrimOutput:
    text: str
    kept: tuple[int, ...]
    dropped: bool = False


def select_sentences(
    scores: np.ndarray,
    *,
    threshold: float,
    min_sentences: int,
    window: int,
    floor: float | np.ndarray | None = None,
    companions: Sequence[Sequence[int]] | None = None,
    window_floor: float | None = None,
) -> list[int]:
    """Indices to keep, ascending: above the threshold (or the floor, one for all or one per sentence), topped up
    to the minimum, widened by the window (around those at `window_floor` or above, when given) and by each kept
    sentence's companions."""
    n = len(scores)
    if n == 0:
        return []
    cut = threshold if floor is None else np.minimum(threshold, floor)
    core = set(np.flatnonzero(scores >= cut).tolist())
    if len(core) < min_sentences:
        for i in np.argsort(-scores, kind="stable").tolist():
            if len(core) >= min_sentences:
                break
            core.add(i)
    keep = set(core)
    if window > 0:
        centres = core if window_floor is None else [i for i in core if scores[i] >= window_floor]
        keep.update(j for i in centres for j in range(max(0, i - window), min(n, i + window + 1)))
    if companions:
        keep.update(j for i in core for j in companions[i])
    return sorted(keep)


_ITEM = re.compile(rf"{LIST_MARKER}[ \t]")
_NUMBERED_ITEM = re.compile(rf"\s*{ORDERED}[ \t]")
_FIRST_STEP = re.compile(r"\s*0*1[.)][ \t]")
# Units a step can hold before the next one: an image, a note, a command
_STEP_HOLDS = 3
# MDN's definition lists: a term's item, then its definition nested under it as an item opening with a colon
_DEFINITION = re.compile(rf"{BULLET}[ \t]+:[ \t]")
_TABLE_ROW = re.compile(r"\|")
_TABLE_RULE = re.compile(r"\|?[ \t]*:?-{3,}:?[ \t]*(?:\|[ \t]*:?-{3,}:?[ \t]*)*\|?[ \t]*$")
_FIELD = re.compile(rf"(?:{BULLET}[ \t]+)?(?:\*\*|__)?[^\W\d_][\w ()/-]{{0,30}}:(?:\*\*|__)?[ \t]*\S")
_FIELD_MAX = 160
_BLANK_LINE = re.compile(r"\n[ \t]*\n")
# MkDocs' admonitions always have a type (`!!! note`, `???+ tip`); a content tab's label (`=== "Python"`)
_MKDOCS_BOX = r"(?:!!!|\?{3}\+?)[ \t]*[A-Za-z][^\n]*"
_TAB_LABEL = r"={3}[+!]?[ \t]+\"[^\"\n]*\""
_MARKUP = re.compile(
    r"\s*(?:(?:(?:</?[A-Za-z][^>\n]*>|<!--[^\n]*?-->)\s*)+|/{3}[^\n]*|:{3}[^\n]*"
    r"|\[!(?i:include|code(?:-[\w+#-]+)?)[ \t]*\[[^\n]*\]|\{\{[ \t]*[A-Za-z][\w-]*(?:\([^\n]*\))?[ \t]*\}\}"
    rf"|{_MKDOCS_BOX}|\{{\*[^\n]*\*\}}"
    rf"|\{{\{{[<%][^\n]*[%>]\}}\}}|\{{%[^\n]*%\}}|\{{:[^\n]*\}}|{_TAB_LABEL}|\W*)\s*"
)
# A fence with a name opens an admonition (a closing `:::` or `///` has none); a GitHub or Obsidian alert's marker
_FENCE_OPENER = r"(?::{3,}|/{3})[ \t]*[A-Za-z][^\n]*"
_ALERT = r">[ \t]*\[![A-Za-z]+\]"
# The opening line of an admonition or content tab
_BOX_OPENER = re.compile(rf"\s*(?:{_FENCE_OPENER}|{_MKDOCS_BOX}|{_TAB_LABEL})\s*")
# A note's first line: an alert (`> [!NOTE]`), a quoted bold label (`> **Nota:**`), an admonition's opener or an
# MDX callout; `_BARE_ALERT`, an alert's marker alone on its line
_NOTE = re.compile(
    rf"\s*(?:{_ALERT}|>[ \t]*\*\*[^*\n]{{1,24}}\*\*|{_FENCE_OPENER}|{_MKDOCS_BOX}"
    r"|<(?:Aside|Callout|Admonition|Note|Tip|Warning)\b)"
)
_BARE_ALERT = re.compile(rf"\s*{_ALERT}[+-]?\s*")


@lru_cache(maxsize=50_000)
def _unit_shape(unit: str) -> str:
    return _shape(_content(unit))


@lru_cache(maxsize=50_000)
def _content(unit: str) -> str:
    """The unit from its first line that is not bare markup: MDX wraps a procedure in `<Steps>` with no blank
    line, so CommonMark reads `<Steps>` and the first step as one HTML block, and the step is still a step."""
    text = unit.lstrip()
    lines = text.split("\n")
    start = 0
    while start < len(lines) - 1 and is_markup(lines[start]) and not _TABLE_ROW.match(lines[start]):
        start += 1
    return "\n".join(lines[start:]).lstrip() if start else text


@lru_cache(maxsize=50_000)
def _shape(unit: str) -> str:
    if unit_heading_level(unit) is not None:
        return "heading"
    if _TABLE_ROW.match(unit):
        return "rule" if _TABLE_RULE.match(unit) else "row"
    if "\n" not in unit:
        if len(unit) <= _FIELD_MAX and _FIELD.match(unit):
            return "field"
    elif all(len(line) <= _FIELD_MAX and _FIELD.match(line.strip()) for line in unit.split("\n")):
        return "field"  # `Type:` and `Default:` on consecutive lines of one paragraph
    if _ITEM.match(unit):
        return "item"
    return "prose"


@lru_cache(maxsize=50_000)
def is_markup(unit: str) -> bool:
    """A unit with no words for a reader: HTML tags alone (`</div>`, `<Tabs>` over `<TabItem>`), a one-line HTML
    comment (Kubernetes' `<!-- overview -->`, `<!-- prettier-ignore -->`; one over several lines may hold notes,
    as Node.js's YAML histories do), an admonition fence (`///`, `:::`, `!!! note`) or content tab's label
    (`=== "Python"`), an include directive (`{* file *}`, DocFX's `[!INCLUDE[name](file.md)]` and its code samples,
    `[!code-csharp[Main](Sample.cs)]`), a template tag (Hugo's `{{< note >}}`, Liquid's `{% endhint %}`, MDN's
    `{{HTTPSidebar}}` and `{{Compat}}`), a kramdown attribute list (`{: .note }`), punctuation."""
    return bool(_MARKUP.fullmatch(unit))


def without_markup_edges(keep: Sequence[int], markup: Sequence[bool]) -> list[int]:
    """`keep` with the markup units at the ends of its runs left out (markup inside a run stays: cutting it
    would only add a gap); never empty when `keep` is not."""
    kept = set(keep)
    out = [i for i in keep if not markup[i] or _inside(i, kept, markup, -1) and _inside(i, kept, markup, 1)]
    return out or list(keep)


def without_closing_headings(keep: Sequence[int], shapes: Sequence[str]) -> list[int]:
    """`keep` without the headings that end a run: a heading whose section was cut names nothing kept. Never
    empty when `keep` is not."""
    kept = set(keep)
    out = [i for i in keep if shapes[i] != "heading" or i + 1 in kept]
    return out or list(keep)


def _inside(i: int, kept: set[int], markup: Sequence[bool], step: int) -> bool:
    """Whether a kept word unit lies in direction `step` from `i` without leaving the run."""
    j = i + step
    while j in kept:
        if not markup[j]:
            return True
        j += step
    return False


def unit_companions(units: Sequence[str], shapes: Sequence[str] | None = None) -> list[tuple[int, ...]]:
    """For each unit, the units kept with it: a table row's header row and rule (a header row's rule); a list
    item's lead-in (the unit just before its list); a definition's term and a term's definitions (`- term`
    over `  - : what it means`); a field line's heading and sibling fields; a heading's field lines; any other
    line of an option's section (a heading with field lines at its top) that heading and those fields, so a
    kept description or example names its option's type and default. `shapes` are the units' shapes when the
    caller has them."""
    if shapes is None:
        shapes = [_unit_shape(u) for u in units]
    out: list[set[int]] = [set() for _ in units]
    for i, shape in enumerate(shapes):
        if shape in _TABLE_SHAPES:
            out[i].update(_table_header(i, shapes))
        elif shape in ("item", "field") and i > 0:
            first = i
            while first > 0 and shapes[first - 1] in ("item", "field"):
                first -= 1
            if first > 0 and shapes[first - 1] in ("prose", "heading"):
                out[i].add(first - 1)
                if shape == "item" and _is_lead_in(units[first - 1]):
                    out[first - 1].add(i)
            if shape == "item" and _is_definition(units[i]):
                term = i - 1
                while term >= 0 and shapes[term] == "item" and _is_definition(units[term]):
                    term -= 1
                if term >= 0 and shapes[term] == "item":
                    out[i].add(term)
                    out[term].add(i)
        elif shape == "prose":
            out[i].update(_announced_section(i, units, shapes))
    for lo, hi in _field_runs(shapes):
        run = range(lo, hi + 1)
        for i in run:
            out[i].update(run)
        heading = _option_heading(shapes, lo)
        if heading is not None:
            end = next((j for j in range(hi + 1, len(shapes)) if shapes[j] == "heading"), len(shapes))
            for i in range(heading, end):
                out[i].update((heading, *run))
    for i, companions in enumerate(out):
        companions.discard(i)
    return [tuple(sorted(c)) for c in out]


def _is_lead_in(unit: str) -> bool:
    """A line ending with a colon announces what follows it: a list's items, or subsections."""
    return unit.rstrip().endswith(":")


def _announced_section(i: int, units: Sequence[str], shapes: Sequence[str]) -> tuple[int, ...]:
    """For a lead-in right over a heading ("There are several ways:" over `### Inline`), the headings below it
    and the first line under them: the first of the ways it announces; nothing for any other unit."""
    if i + 1 >= len(shapes) or shapes[i + 1] != "heading" or not _is_lead_in(units[i]):
        return ()
    j = i + 1
    while j < len(shapes) and shapes[j] == "heading":
        j += 1
    return tuple(range(i + 1, min(j + 1, len(shapes))))


def _is_definition(unit: str) -> bool:
    return bool(_DEFINITION.match(unit.lstrip()))


def _field_runs(shapes: Sequence[str]) -> list[tuple[int, int]]:
    """The first and last unit of each run of consecutive field lines."""
    runs: list[tuple[int, int]] = []
    for i, shape in enumerate(shapes):
        if shape != "field":
            continue
        if runs and runs[-1][1] == i - 1:
            runs[-1] = (runs[-1][0], i)
        else:
            runs.append((i, i))
    return runs


def _option_heading(shapes: Sequence[str], lo: int) -> int | None:
    """The heading of the option whose field lines start at `lo`: right above them, or above one line of
    description. Its section (up to the next heading) is the option's, the heading and fields its card."""
    if lo > 0 and shapes[lo - 1] == "heading":
        return lo - 1
    if lo > 1 and shapes[lo - 1] == "prose" and shapes[lo - 2] == "heading":
        return lo - 2
    return None


class PackedLines:
    """Per unit, its words (stems or identifier keys) packed as ingest stores them: sorted, one space apart. A
    passage reads its vocabulary off one split, and the units holding a word off one search for it between spaces
    in the lines laid end to end, once per word: the same passages come back question after question, a word the
    passage lacks is passed over at once, and building a set per unit cost about what storing them saved."""

    def __init__(self, lines: tuple[str, ...]) -> None:
        self.lines = lines
        self._found: dict[str, tuple[int, ...]] = {}

    @cached_property
    def vocabulary(self) -> frozenset[str]:
        return frozenset(" ".join(self.lines).split())

    def sets(self) -> tuple[frozenset[str], ...]:
        return tuple(unpack_terms(line) for line in self.lines)

    def holding(self, word: str) -> tuple[int, ...]:
        """The units holding `word`, in order; only the words the passage holds are remembered."""
        if word not in self.vocabulary:
            return ()
        found = self._found.get(word)
        if found is None:
            found = self._found[word] = self._search(word)
        return found

    def _search(self, word: str) -> tuple[int, ...]:
        text, starts = self._laid
        needle = f" {word} "
        found: list[int] = []
        at = text.find(needle)
        while at >= 0:
            found.append(bisect_right(starts, at) - 1)  # a line holds a word once
            at = text.find(needle, at + len(needle) - 1)
        return tuple(found)

    @cached_property
    def _laid(self) -> tuple[str, list[int]]:
        lines = [f" {line} " for line in self.lines]
        return "".join(lines), list(accumulate((len(line) for line in lines[:-1]), initial=0))


def _packed_lines(
    units: Sequence[str], anew: Callable[[str], frozenset[str]], known: Sequence[str | None] | None = None
) -> PackedLines:
    """Each unit's words packed: as `known` gives them (stored at ingest), or worked out by `anew`."""
    if known is None:
        known = [None] * len(units)
    return PackedLines(
        tuple(pack_terms(anew(u)) if k is None else k for u, k in zip(units, known, strict=True))
    )


class PassageUnits:
    """A passage's sentence texts and what the rules read off them (shape, stems, markup), worked out once
    per passage: the same passages come back question after question, and looking each unit up anew cost
    more than the rules themselves."""

    def __init__(self, text: str, spans: tuple[tuple[int, int], ...], language: str) -> None:
        self.units = tuple(text[a:b] for a, b in spans)
        self.language = language
        self._gaps = tuple(text[a[1] : b[0]] for a, b in zip(spans, spans[1:]))
        # A field line (`Default: None`) starts its line: "It should look like this: `{'posts': posts}`." in the
        # middle of a paragraph is a sentence of it.
        starts_line = (True, *("\n" in gap for gap in self._gaps))[: len(self.units)]
        self.shapes = tuple(
            "prose" if shape == "field" and not starts else shape
            for shape, starts in zip((_unit_shape(u) for u in self.units), starts_line, strict=True)
        )

    @cached_property
    def stems(self) -> PackedLines:
        return _packed_lines(self.units, lambda u: unit_terms(u, self.language))

    @cached_property
    def keys(self) -> PackedLines:
        """Per unit, the keys of the identifiers it holds (`biblioteca.trimming_identifiers`)."""
        return _packed_lines(self.units, identifier_keys)

    def offer_terms(self, stored: Callable[[], Sequence[str | None] | None]) -> None:
        """Take the units' stems as stored at ingest (`pack_terms` of `unit_terms` of the same sentence and
        language; None for a whole passage stored without), stemming only the units without: stemming is most of
        what a passage met for the first time costs. Asks nothing once the stems are known."""
        if "stems" not in self.__dict__:
            self._offer("stems", stored, lambda u: unit_terms(u, self.language))

    def offer_keys(self, stored: Callable[[], Sequence[str | None] | None]) -> None:
        """Take the units' identifier keys as stored at ingest, as `offer_terms` takes their stems."""
        if "keys" not in self.__dict__:
            self._offer("keys", stored, identifier_keys)

    def _offer(
        self,
        name: str,
        stored: Callable[[], Sequence[str | None] | None],
        anew: Callable[[str], frozenset[str]],
    ) -> None:
        known = stored()
        if known is not None:
            self.__dict__[name] = _packed_lines(self.units, anew, known)

    @cached_property
    def markup(self) -> tuple[bool, ...]:
        return tuple(is_markup(u) for u in self.units)

    @cached_property
    def loose_markup(self) -> tuple[bool, ...]:
        """The markup a run may end on without it: a table's rule stays under the header row kept with it."""
        return tuple(m and shape != "rule" for m, shape in zip(self.markup, self.shapes, strict=True))

    @cached_property
    def is_heading(self) -> np.ndarray:
        return np.array([shape == "heading" for shape in self.shapes], dtype=bool)

    @cached_property
    def heading_units(self) -> np.ndarray:
        return np.flatnonzero(self.is_heading)

    @cached_property
    def heading_levels(self) -> tuple[int, ...]:
        """Each heading unit's level."""
        return tuple(unit_heading_level(self.units[i].lstrip()) or 0 for i in self.heading_units)

    @cached_property
    def sections(self) -> np.ndarray:
        """Per unit, how many headings open at or before it: units with the same number share a section."""
        return np.cumsum(self.is_heading, dtype=np.intp)

    @cached_property
    def opens_paragraph(self) -> tuple[bool, ...]:
        """Per unit, whether a blank line (or the passage's start) comes before it."""
        return (True, *(bool(_BLANK_LINE.search(gap)) for gap in self._gaps))

    @cached_property
    def numbered(self) -> tuple[bool, ...]:
        """Per unit, whether it is a step of a numbered list."""
        return tuple(
            shape == "item" and _NUMBERED_ITEM.match(_content(unit)) is not None
            for unit, shape in zip(self.units, self.shapes, strict=True)
        )

    @cached_property
    def first_step(self) -> tuple[bool, ...]:
        """Per unit, whether it is the first step of a numbered list (`1.`). Microsoft Learn numbers every step
        `1.` (CommonMark counts on from the first item): a `1.` step within `_STEP_HOLDS` units after another, with
        no heading or lead-in ("Then:") between, continues that list."""
        out: list[bool] = []
        last_one: int | None = None
        for i, (unit, numbered, shape) in enumerate(zip(self.units, self.numbered, self.shapes)):
            if shape == "heading" or (shape == "prose" and _is_lead_in(unit)):
                last_one = None
            one = numbered and _FIRST_STEP.match(_content(unit)) is not None
            out.append(one and (last_one is None or i - last_one > _STEP_HOLDS + 1))
            if numbered:
                last_one = i if one else None
        return tuple(out)

    @cached_property
    def opens_box(self) -> tuple[bool, ...]:
        """Per unit, whether it is an admonition's or content tab's opening line, alone."""
        return tuple(m and _BOX_OPENER.fullmatch(u) is not None for u, m in zip(self.units, self.markup))

    @cached_property
    def scored(self) -> np.ndarray:
        """Indices of the units with a vector of their own: every one but the headings."""
        return np.array([i for i, shape in enumerate(self.shapes) if shape != "heading"], dtype=np.intp)

    @cached_property
    def companions(self) -> tuple[tuple[int, ...], ...]:
        return tuple(unit_companions(self.units, self.shapes))


@lru_cache(maxsize=2048)
def passage_units(text: str, spans: tuple[tuple[int, int], ...], language: str) -> PassageUnits:
    return PassageUnits(text, spans, language)


def lexical_evidence(
    chunk: TrimInput,
    query_terms: Mapping[str, float],
    *,
    heading_weight: float,
    shares: dict[tuple[str, ...], float] | None = None,
) -> np.ndarray:
    """Per sentence, the share of the question's term weight it holds, or (times `heading_weight`) its heading
    holds: 0 when nothing matches, 1 when every term does.

    Only the question's terms the passage holds are looked for, and each set of them a unit holds is summed once
    (`shares` keeps the sums across a question's passages): a share depends on nothing else, and is summed in
    the order the unit's own terms would give, so the values do not move by a bit."""
    total = sum(query_terms.values())
    n = len(chunk.spans)
    if total <= 0 or n == 0:
        return np.zeros(n, dtype=np.float32)

    def share(found: frozenset[str]) -> float:
        if found.isdisjoint(query_terms):
            return 0.0
        # The intersection walks `query_terms` in order and keeps what `found` holds: the same set, summed in
        # the same order, for any `found` holding the same terms of the question.
        return sum(query_terms[t] for t in found.intersection(query_terms)) / total

    found: dict[int, tuple[str, ...]] = {}
    for term in query_terms:
        for i in chunk.units_holding(term):
            found[i] = (*found.get(i, ()), term)
    own = np.zeros(n, dtype=np.float64)
    shares = {} if shares is None else shares
    for i, held in found.items():
        value = shares.get(held)
        if value is None:
            value = shares[held] = share(frozenset(held))
        own[i] = value
    heading_share = share(unit_terms(chunk.heading, chunk.language)) if chunk.heading else 0.0
    if not len(chunk.heading_units):
        under = heading_weight * heading_share
        return np.where(own >= under, own, under).astype(np.float32)
    # Each unit's heading: the last heading unit at or before it, or the chunk's heading path before the first.
    heading = np.concatenate(([heading_share], own[chunk.heading_units]))[chunk.sections]
    under = heading_weight * heading
    return np.where(chunk.is_heading | (own >= under), own, under).astype(np.float32)


def join_runs(
    text: str, spans: Sequence[tuple[int, int]], keep: Sequence[int], *, shapes: Sequence[str] | None = None
) -> str:
    """Kept sentences as verbatim runs of the original text, separate runs joined by an elision that keeps the
    markdown's blocks whole: ' [...] ' within a line, '[...]' on a line of its own between blocks, '| [...] |'
    between two rows of one table (only rows lie between them). `shapes` are the units' shapes when the caller
    has them."""
    runs: list[tuple[int, int]] = []
    for i in keep:
        if runs and i == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], i)
        else:
            runs.append((i, i))
    out = text[spans[runs[0][0]][0] : spans[runs[0][1]][1]] if runs else ""
    for (_, last), (first, end) in zip(runs, runs[1:]):
        gap = text[spans[last][1] : spans[first][0]]
        if "\n" not in gap:
            out += ELISION
        elif (
            (shapes[last] if shapes else _unit_shape(text[slice(*spans[last])])) in _TABLE_SHAPES
            and (shapes[first] if shapes else _unit_shape(text[slice(*spans[first])])) in _TABLE_SHAPES
            and all("|" in line for line in gap.split("\n")[1:-1])
        ):
            out += ROW_ELISION
        else:
            # The next run starts at its unit's first character: after a paragraph, an indentation of four
            # spaces (a nested item or an admonition's body, in MkDocs) would turn it into a code block.
            out += BLOCK_ELISION
        out += text[spans[first][0] : spans[end][1]]
    return out


_TABLE_SHAPES = ("row", "rule")


def with_table_headers(keep: Sequence[int], shapes: Sequence[str]) -> list[int]:
    """`keep` with each kept table row's header row and rule, and a kept header row's rule: without them, rows
    render as a paragraph of pipes."""
    return sorted({*keep, *(j for i in keep if shapes[i] in _TABLE_SHAPES for j in _table_header(i, shapes))})


def with_short_gaps(
    keep: Sequence[int], units: Sequence[str], shapes: Sequence[str], *, words: int
) -> list[int]:
    """`keep` with each lone unit between two kept ones, or between a kept one and the heading ending its section,
    added when it has at most `words` words and is not a heading (measured: filling headings too kept no more
    answers and cut less)."""
    kept = set(keep)
    gaps = [a + 1 for a, b in zip(keep, keep[1:]) if b - a == 2]
    gaps += [i + 1 for i in keep if i + 2 < len(shapes) and i + 1 not in kept and shapes[i + 2] == "heading"]
    return sorted({*keep, *(i for i in gaps if shapes[i] != "heading" and len(units[i].split()) <= words)})


def _table_header(i: int, shapes: Sequence[str]) -> tuple[int, ...]:
    """The header row and rule of the table that row or rule `i` is in, less `i` itself: a rule's row above it,
    a header row's rule, a body row's nearest rule above and the row over it (never an earlier table's)."""
    if shapes[i] == "rule":
        return (i - 1,) if i > 0 and shapes[i - 1] == "row" else ()
    if i + 1 < len(shapes) and shapes[i + 1] == "rule":
        return (i + 1,)
    j = i
    while j >= 0 and shapes[j] == "row":
        j -= 1
    return (j - 1, j) if j >= 1 and shapes[j] == "rule" and shapes[j - 1] == "row" else ()


def trim_chunks(
    chunks: Sequence[TrimInput],
    query_vector: np.ndarray,
    params: TrimParams,
    query_terms: Mapping[str, float] | None = None,
    *,
    identifiers: Sequence[frozenset[str]] = (),
    asks_reason: bool = False,
    asks_how: bool = False,
    search_scores: Sequence[float] = (),
    continues_first: Sequence[bool] = (),
) -> list[TrimOutput]:
    """Trim each chunk for the query; a dropped chunk is flagged, never returned empty.

    `query_terms` (stem -> rarity weight) feed the lexical evidence when `params.lexical_weight` is set;
    `identifiers` (`question_identifiers`) are the question's identifiers, each as its keys; `asks_reason`
    (`asks_reason`) says the question asks why and `asks_how` (`asks_how`) how; `search_scores` are the chunks'
    own cosines, as the search ranked them, for `params.drop_search_margin` and
    `params.drop_best_line_search_margin`; `continues_first` says, per chunk, whether it continues the first on
    its page under another heading, for `params.drop_neighbour_margin`.
    """
    named = identifier_units(chunks, identifiers, limit=params.identifier_units, companions=params.companions)
    cosines = [c.scores(query_vector) for c in chunks]
    scores = cosines
    if params.lexical_weight and query_terms:
        shares: dict[tuple[str, ...], float] = {}
        scores = [
            s
            + params.lexical_weight
            * lexical_evidence(c, query_terms, heading_weight=params.heading_weight, shares=shares)
            for c, s in zip(chunks, cosines)
        ]
    overall = max((float(s.max()) for s in scores if len(s)), default=None)
    # Whole chunks are judged on cosines alone: words lift a sentence inside a chunk, but a chunk that merely
    # shares a word with the question is no closer to the answer.
    best_cosine = [float(s.max()) if len(s) else None for s in cosines]
    overall_cosine = max((b for b in best_cosine if b is not None), default=None)
    relative_margin, drop_margin = params.relative_margin, params.drop_margin
    neighbour_margin = drop_margin
    if drop_margin is not None and params.drop_neighbour_margin is not None:
        neighbour_margin = max(params.drop_neighbour_margin, drop_margin)
    if params.spread_factor is not None and overall is not None:
        spread = params.spread_factor * (overall - float(np.median(np.concatenate(scores))))
        relative_margin = None if relative_margin is None else min(relative_margin, spread)
        drop_margin = None if drop_margin is None else min(drop_margin, spread)
        neighbour_margin = None if neighbour_margin is None else min(neighbour_margin, spread)
    floor = overall - relative_margin if overall is not None and relative_margin is not None else None
    search_best = max(search_scores, default=None)
    out: list[TrimOutput] = []
    near_misses: dict[int, float] = {}
    for rank, (chunk, chunk_scores, chunk_best) in enumerate(zip(chunks, scores, best_cosine)):
        n = len(chunk.spans)
        if n == 0:
            out.append(TrimOutput(chunk.text, ()))
            continue
        best = float(chunk_scores.max())
        continues = rank < len(continues_first) and continues_first[rank]
        hopeless = rank > 0 and _hopeless(
            chunk_best,
            best,
            overall_cosine=overall_cosine,
            overall=overall,
            drop_margin=neighbour_margin if continues else drop_margin,
            drop_score_margin=params.drop_score_margin,
            threshold=params.threshold,
        )
        if hopeless and not _search_favourite(rank, search_scores, search_best, params.drop_search_margin):
            if _near_miss(rank, chunk_best, overall_cosine, search_scores, search_best, params):
                near_misses[rank] = chunk_best
            out.append(_kept(chunk, named[rank], params) if named[rank] else TrimOutput("", (), dropped=True))
            continue
        chunk_floor = floor
        spreads = params.passage_spread is not None or params.window_spread is not None
        spread = chunk.spread(chunk_scores) if spreads else 0.0
        if hopeless:
            chunk_floor = best  # kept for its search score alone: its best line, not a supporting passage's
        elif params.passage_margin is not None and (rank > 0 or params.earlier_sections):
            margin = params.passage_margin
            if params.passage_spread is not None:
                margin = min(margin, params.passage_spread * spread)
            supporting = best - margin if chunk_floor is None else max(chunk_floor, best - margin)
            if rank > 0:
                chunk_floor = supporting
            else:
                chunk_floor = earlier_sections_floor(
                    chunk.sections,
                    chunk_scores,
                    later=floor,
                    earlier=supporting,
                    hit=chunk.hit_unit,
                    levels=chunk.section_levels,
                )
        keep = select_sentences(
            chunk_scores,
            threshold=params.threshold,
            min_sentences=params.min_sentences,
            window=params.window,
            floor=chunk_floor,
            companions=chunk.companions if params.companions else None,
            window_floor=None if params.window_spread is None else best - params.window_spread * spread,
        )
        best_unit = int(np.argmax(chunk_scores))
        follow = follow_on(
            best_unit,
            chunk,
            paragraph=params.paragraph_follow,
            reason=params.reason_follow if asks_reason else 0,
        )
        kept = named[rank].union(keep, follow)
        if params.closest_line:
            kept.add(int(np.argmax(cosines[rank])))
        if params.heading_answer and chunk_best is not None:
            kept |= headed_answers(chunk, chunk_best)
        if asks_how and params.how_steps:
            kept |= procedure_after(best_unit, chunk, reach=params.how_steps)
        if params.paragraph_start:
            kept |= paragraph_openings(kept, chunk, reach=params.paragraph_start)
        if params.next_steps:
            kept |= next_steps(kept, chunk, reach=params.next_steps)
        if params.earlier_steps:
            kept |= earlier_steps(kept, chunk, reach=params.earlier_steps)
        if params.next_steps:
            kept |= step_notes(kept, chunk)
        if params.trim_markup:
            kept |= into_boxes(kept, chunk)
        out.append(_kept(chunk, kept, params))
    if near_misses:
        rank = max(near_misses, key=near_misses.__getitem__)
        out[rank] = _kept(chunks[rank], {*named[rank], int(np.argmax(cosines[rank]))}, params)
    return out


def headed_answers(chunk: TrimInput, best_cosine: float) -> set[int]:
    """The first line (past bare markup) of each section whose heading is at least as close to the question as
    `best_cosine`, the chunk's best line, with that heading: read without it, the line answers nothing."""
    n, heading, markup = len(chunk.spans), chunk.is_heading, chunk.markup
    out: set[int] = set()
    for unit, cosine in chunk.heading_cosines:
        if cosine < best_cosine:
            continue
        line = unit + 1
        while line < n and markup[line] and not heading[line]:
            line += 1
        if line < n and not heading[line]:
            out.update(range(max(unit, 0), line + 1))
    return out


def paragraph_openings(kept: set[int], chunk: TrimInput, *, reach: int) -> set[int]:
    """For each kept run that starts at most `reach` sentences into a prose paragraph, the sentences before it
    back to the paragraph's first: a sentence read without its opening loses what its "it" and "this" name."""
    shapes, opens = chunk.shapes, chunk.opens_paragraph
    out: set[int] = set()
    for start in kept:
        if start - 1 in kept or opens[start] or shapes[start] != "prose":
            continue
        first = start
        while first > 0 and start - first < reach and not opens[first] and shapes[first - 1] == "prose":
            first -= 1
        if first < start and opens[first]:
            out.update(range(first, start))
    return out


def next_steps(kept: set[int], chunk: TrimInput, *, reach: int) -> set[int]:
    """For each kept step of a numbered list, up to `reach` steps after it in the same list."""
    numbered = chunk.numbered
    out: set[int] = set()
    for i in kept:
        if not numbered[i]:
            continue
        j = i + 1
        while j < len(numbered) and j - i <= reach and numbered[j]:
            out.add(j)
            j += 1
    return out


def step_notes(kept: set[int], chunk: TrimInput) -> set[int]:
    """For each kept step of a numbered list, the note right after it (with the note's first line when its
    opening line is a marker alone): "Any settings in your config folder will not transfer" after "Relaunch the
    app" is what the procedure costs."""
    numbered, units, markup = chunk.numbered, chunk.units, chunk.markup
    out: set[int] = set()
    for i in kept:
        note = i + 1
        if not numbered[i] or note >= len(units) or not _NOTE.match(units[note]):
            continue
        out.add(note)
        if note + 1 < len(units) and (markup[note] or _BARE_ALERT.fullmatch(units[note])):
            out.add(note + 1)
    return out


_PROCEDURE_GAP = 3  # units between a line and the procedure it leads to: its lead-in, a note


def procedure_after(best: int, chunk: TrimInput, *, reach: int) -> set[int]:
    """Up to `reach` steps of the numbered list that starts within `_PROCEDURE_GAP` units after `best`, in its
    section."""
    numbered, shapes = chunk.numbered, chunk.shapes
    n = len(shapes)
    j = best + 1
    while j < n and j - best <= _PROCEDURE_GAP and shapes[j] != "heading" and not numbered[j]:
        j += 1
    if j >= n or j - best > _PROCEDURE_GAP or not numbered[j]:
        return set()
    return _list_steps(j, chunk, direction=1, reach=reach)


def earlier_steps(kept: set[int], chunk: TrimInput, *, reach: int) -> set[int]:
    """For each kept step of a numbered list, up to `reach` steps before it, back to its list's first step."""
    numbered, first = chunk.numbered, chunk.first_step
    out: set[int] = set()
    for i in kept:
        if numbered[i] and not first[i]:
            out |= _list_steps(i - 1, chunk, direction=-1, reach=reach)
    return out


def _list_steps(start: int, chunk: TrimInput, *, direction: int, reach: int) -> set[int]:
    """Up to `reach` steps of one numbered list, walking from `start` by `direction` (1 or -1) over what the steps
    hold (MDX's `<Steps>` put each step's command and notes between the steps), up to a heading; never past the
    list's first step into another list."""
    numbered, first, shapes = chunk.numbered, chunk.first_step, chunk.shapes
    out: set[int] = set()
    j = start
    while 0 <= j < len(shapes) and len(out) < reach and shapes[j] != "heading":
        if numbered[j]:
            if direction > 0 and out and first[j]:
                break
            out.add(j)
            if direction < 0 and first[j]:
                break
        j += direction
    return out


def into_boxes(kept: set[int], chunk: TrimInput) -> set[int]:
    """For each kept run that reaches an admonition's or content tab's opening line from the text above it and
    stops there, the box's first unit: a window that reaches `:::note` meant the note, not its marker."""
    opens, markup = chunk.opens_box, chunk.markup
    n = len(opens)
    return {
        i + 1
        for i in kept
        if opens[i]
        and i + 1 < n
        and i + 1 not in kept
        and not markup[i + 1]
        and i - 1 in kept
        and not markup[i - 1]
    }


def follow_on(best: int, chunk: TrimInput, *, paragraph: int, reason: int) -> range:
    """The units after `best` that complete it: up to `paragraph` prose sentences of its own paragraph, or up to
    `reason` units of its section, whichever reach further."""
    shapes, opens = chunk.shapes, chunk.opens_paragraph
    n = len(shapes)
    end = best + 1
    while end < min(n, best + 1 + paragraph) and not opens[end] and shapes[end] == "prose":
        end += 1
    reason_end = best + 1
    while reason_end < min(n, best + 1 + reason) and shapes[reason_end] != "heading":
        reason_end += 1
    return range(best + 1, max(end, reason_end))


def earlier_sections_floor(
    sections: np.ndarray,
    scores: np.ndarray,
    *,
    later: float | None,
    earlier: float | None,
    hit: int | None = None,
    levels: Sequence[int | None] = (),
) -> float | np.ndarray | None:
    """Per sentence, the floor `later` from the matching section on, `earlier` in the sections before it (None:
    only the threshold). A passage grown to its neighbours brings sections that lead up to the match; the answer
    sits in the matching section or after it (a problem, then its fix). The match starts at the section holding
    the best score, or earlier at the one where the chunk retrieval found begins (unit `hit`): retrieval found
    that chunk for the question even when a neighbour's line scores best. With `levels` (each section's heading
    level), an earlier section whose heading the match sits under (`# Debug` over `## undici`: the lines saying
    what the flags below are for) introduces the match, and takes `later` too."""
    home = int(sections[int(np.argmax(scores))])
    if hit is not None:
        home = min(home, int(sections[hit]))
    if home == sections[0]:
        return later
    matched = sections >= home
    if len(levels) > home and levels[home] is not None:
        level = levels[home]
        for section in range(home - 1, int(sections[0]) - 1, -1):
            if levels[section] is not None and levels[section] < level:
                matched |= sections == section
                level = levels[section]
    return np.where(matched, np.inf if later is None else later, np.inf if earlier is None else earlier)


def _hopeless(
    best_cosine: float,
    best_score: float,
    *,
    overall_cosine: float,
    overall: float,
    drop_margin: float | None,
    drop_score_margin: float | None,
    threshold: float,
) -> bool:
    """A chunk with a sentence at the threshold is never hopeless; else it is when far below the best."""
    if best_cosine >= threshold:
        return False
    if drop_margin is not None and best_cosine < overall_cosine - drop_margin:
        return True
    return drop_score_margin is not None and best_score < overall - drop_score_margin


def _search_favourite(
    rank: int, search_scores: Sequence[float], best: float | None, margin: float | None
) -> bool:
    """The chunk's own cosine, as the vector search ranked it, is within `margin` of the best chunk's."""
    return (
        margin is not None
        and best is not None
        and rank < len(search_scores)
        and search_scores[rank] >= best - margin
    )


def _near_miss(
    rank: int,
    best_cosine: float,
    overall_cosine: float,
    search_scores: Sequence[float],
    search_best: float | None,
    params: TrimParams,
) -> bool:
    """A chunk to drop is a near miss when its best cosine and its own search score are both close to the best."""
    margin, search_margin = params.drop_best_line_margin, params.drop_best_line_search_margin
    return (
        margin is not None
        and search_margin is not None
        and best_cosine >= overall_cosine - margin
        and _search_favourite(rank, search_scores, search_best, search_margin)
    )


def _kept(chunk: TrimInput, keep: set[int], params: TrimParams) -> TrimOutput:
    """The chunk cut down to the units in `keep` (short gaps filled, bare markup left off the runs' edges), or
    whole when that is all of them. A passage the drop rule would leave out comes here with only the units naming
    the question's identifiers, and its best unit when it is a near miss (`_near_miss`)."""
    kept = with_table_headers(sorted(keep), chunk.shapes)
    if params.gap_words:
        kept = with_short_gaps(kept, chunk.units, chunk.shapes, words=params.gap_words)
    if params.trim_markup:
        kept = without_markup_edges(kept, chunk.loose_markup)
        kept = without_closing_headings(kept, chunk.shapes)
    if len(kept) >= len(chunk.spans):
        return TrimOutput(chunk.text, tuple(range(len(chunk.spans))))
    return TrimOutput(join_runs(chunk.text, chunk.spans, kept, shapes=chunk.shapes), tuple(kept))
