"""Tests for biblioteca.text.chunking: seed behaviour first, then the fixes."""

from __future__ import annotations

import hashlib
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from biblioteca.text.chunking import (
    Chunk,
    chunk_markdown,
    content_hash,
    document_title,
    heading_words,
    parse_front_matter,
    passage_header,
    section_openers,
    shown_heading,
    unit_heading_level,
)


def words(n: int, prefix: str = "w") -> list[str]:
    return [f"{prefix}{i}" for i in range(n)]


def chunk(content: str, **kwargs: object) -> list[Chunk]:
    kwargs.setdefault("filename", "doc.md")
    return chunk_markdown(content=content, **kwargs)  # type: ignore[arg-type]


def assert_verbatim(content: str, chunks: list[Chunk]) -> None:
    for c in chunks:
        assert content[c.start : c.end] == c.text
        assert c.text == c.text.strip()


# --- seed behaviour -------------------------------------------------------


def test_heading_path_follows_the_heading_stack() -> None:
    content = "# A\na\n## B\nb\n### C\nc\n## D\nd\n"
    chunks = chunk(content)
    assert [c.heading_path for c in chunks] == [
        ("# A",),
        ("# A", "## B"),
        ("# A", "## B", "### C"),
        ("# A", "## D"),
    ]
    assert [c.text for c in chunks] == ["a", "b", "c", "d"]


def test_ids_use_a_global_index_across_sections() -> None:
    content = "# A\n" + " ".join(words(25)) + "\n# B\nlast words\n"
    chunks = chunk(content, filename="guide/setup.md", chunk_size=10, chunk_overlap=3)
    assert [c.chunk_index for c in chunks] == list(range(len(chunks)))
    assert [c.id for c in chunks] == [f"guide/setup.md#{i}" for i in range(len(chunks))]
    assert chunks[-1].heading_path == ("# B",)
    assert {c.filename for c in chunks} == {"guide/setup.md"}


def test_long_section_is_split_into_word_windows_like_the_seed() -> None:
    source = words(25)
    chunks = chunk(" ".join(source), chunk_size=10, chunk_overlap=3)
    got = [c.text.split() for c in chunks]
    # Seed loop: end = min(start + size, n); next start = end - overlap; stop at n.
    expected, start = [], 0
    while True:
        end = min(start + 10, len(source))
        expected.append(source[start:end])
        if end >= len(source):
            break
        start = end - 3
    assert got == expected
    assert [source.index(g[0]) for g in got] == [0, 7, 14, 21]
    assert got[-1][-1] == source[-1]


def test_section_within_chunk_size_is_a_single_chunk() -> None:
    content = "# A\n" + " ".join(words(10)) + "\n"
    chunks = chunk(content, chunk_size=10, chunk_overlap=3)
    assert len(chunks) == 1
    assert chunks[0].text.split() == words(10)


def test_document_without_headings_is_one_section_with_empty_path() -> None:
    chunks = chunk("Just some text.\n\nAnd another paragraph.\n")
    assert len(chunks) == 1
    assert chunks[0].heading_path == ()
    assert chunks[0].text == "Just some text.\n\nAnd another paragraph."


def test_sections_without_text_produce_no_chunk() -> None:
    chunks = chunk("# A\n## B\n\n   \nbody\n")
    assert [(c.heading_path, c.text) for c in chunks] == [(("# A", "## B"), "body")]


def test_document_of_only_headings_falls_back_to_whole_content_like_the_seed() -> None:
    chunks = chunk("# A\n## B\n")
    assert [(c.heading_path, c.text) for c in chunks] == [((), "# A\n## B")]


@pytest.mark.parametrize("content", ["", "   ", "\n\n\t\n", "\ufeff", "\r\n\r\n"])
def test_empty_or_blank_content_gives_no_chunks(content: str) -> None:
    assert chunk(content) == []


def test_content_hash_is_sha256_prefix() -> None:
    text = "héllo wörld\n"
    digest = content_hash(text)
    assert re.fullmatch(r"[0-9a-f]{16}", digest)
    assert digest == hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
    assert content_hash("a") != content_hash("b")


# --- validation and titles ------------------------------------------------


@pytest.mark.parametrize(("size", "overlap"), [(0, 0), (-1, 0), (10, 10), (10, 11), (10, -1)])
def test_invalid_sizes_raise_value_error(size: int, overlap: int) -> None:
    with pytest.raises(ValueError, match="chunk_"):
        chunk("text", chunk_size=size, chunk_overlap=overlap)


def test_title_precedence() -> None:
    with_front = "---\ntitle: From Front\n---\n# From Heading\ntext\n"
    assert chunk(with_front, title="Explicit")[0].title == "Explicit"
    assert chunk(with_front)[0].title == "From Front"
    assert document_title(filename="a.md", content=with_front) == "From Front"
    assert document_title(filename="a.md", content="## Sub\n# The *Guide* #\n") == "The *Guide*"
    assert document_title(filename="a.md", content="Setext Title\n===\n") == "Setext Title"
    assert document_title(filename="docs/install-notes.md", content="no heading") == ("install-notes")
    assert chunk("text", filename="docs/x.md")[0].title == "x"


# --- fix 1: verbatim slices -----------------------------------------------


def test_chunk_text_is_verbatim_and_keeps_layout() -> None:
    content = (
        "# Guide\n\n"
        "Intro   with  odd   spacing.\n\n"
        "- one\n"
        "  - nested\n"
        "- two\n\n"
        "| a | b |\n"
        "|---|---|\n"
        "| 1 | 2 |\n\n"
        "```python\n"
        "def f():\n"
        "    return 1\n"
        "```\n"
    )
    chunks = chunk(content)
    assert len(chunks) == 1
    assert_verbatim(content, chunks)
    assert chunks[0].text == content[len("# Guide\n\n") :].strip()
    assert "    return 1" in chunks[0].text
    assert "  - nested" in chunks[0].text


def test_split_chunks_are_verbatim_and_trimmed() -> None:
    content = "# A\n\n" + "  alpha  beta\n\n gamma\tdelta  \n" * 10
    chunks = chunk(content, chunk_size=5, chunk_overlap=2)
    assert len(chunks) > 1
    assert_verbatim(content, chunks)
    assert all(len(c.text.split()) <= 5 for c in chunks)


# --- fix 2: CommonMark headings -------------------------------------------


@pytest.mark.parametrize("fence", ["```", "~~~", "````", "~~~~~"])
def test_hash_lines_inside_fences_are_not_headings(fence: str) -> None:
    content = f"# Real\n\n{fence}sh\n# comment\n## also comment\n{fence}\n\nafter\n"
    chunks = chunk(content)
    assert [c.heading_path for c in chunks] == [("# Real",)]
    assert "# comment" in chunks[0].text
    assert chunks[0].text.endswith("after")


def test_setext_headings_are_rendered_with_hashes() -> None:
    content = "Top\n===\n\nintro\n\nSecond\npart\n------\n\nbody\n"
    chunks = chunk(content)
    assert [c.heading_path for c in chunks] == [("# Top",), ("# Top", "## Second part")]
    assert [c.text for c in chunks] == ["intro", "body"]


def test_atx_heading_path_drops_closing_hashes_and_extra_spaces_as_setext_paths_do() -> None:
    chunks = chunk("  ## Install ##  \ntext\n")
    assert chunks[0].heading_path == ("## Install",)
    content = "# User   Guide #\n\nIntro.\n\n## Install ##\n\nSteps.\n"
    [first, second] = chunk(content)
    assert second.heading_path == ("# User Guide", "## Install")
    assert (
        passage_header(title="User Guide", heading_path=second.heading_path) == "[Doc: User Guide > Install]"
    )
    assert chunk("## `retries` { #retries }\ntext\n")[0].heading_path == ("## `retries` { #retries }",)


def test_non_headings_by_commonmark_rules() -> None:
    content = "#hashtag not heading\n\n    # indented code\n\n> # quoted heading\n"
    chunks = chunk(content)
    assert len(chunks) == 1
    assert chunks[0].heading_path == ()
    assert_verbatim(content, chunks)


@pytest.mark.parametrize(
    ("unit", "level"),
    [
        ("## Install", 2),
        ("   ### Flags", 3),
        ("#", 1),
        ("Install\n-------", 2),
        ("User guide\n==", 1),
        ('Installing via Composer <span id="composer"></span>\n------------------------', 2),
        ("A heading that\nruns over two lines\n---", 2),
        ("2.0 release notes\n---", 2),
        ("**Bold** start\n===", 1),
        ("#hashtag over a line\n---", 2),
        ("Indented underline\n   ---  ", 2),
    ],
)
def test_a_sentence_unit_is_a_heading_in_either_syntax(unit: str, level: int) -> None:
    assert unit_heading_level(unit) == level


@pytest.mark.parametrize(
    "unit",
    [
        "#hashtag",
        "    # indented code",
        "Plain prose.",
        "---",
        "- a list item\n---",
        "1. a step\n---",
        "> quoted\n> ---",
        "| cell |\n---",
        "```\ncode\n---",
        "<div>\n---",
        "    code\n---",
        "\tcode\n---",
        "A paragraph\n\n---",
        "Spaced\n= = =",
        "Too deep\n    ---",
        "Mixed\n-=-",
    ],
)
def test_a_sentence_unit_that_is_no_heading(unit: str) -> None:
    assert unit_heading_level(unit) is None


@pytest.mark.parametrize(
    ("label", "shown"),
    [
        ("# Responses adicionales { #additional-responses }", "# Responses adicionales"),
        ("## Sub {#sub .tabbed}", "## Sub"),
        ("### Kramdown {: #kramdown }", "### Kramdown"),
        ('Installing via Composer <span id="composer"></span>', "Installing via Composer"),
        ('## <a name="intro"></a> Intro', "## Intro"),
        ("## <a id=intro/> Intro", "## Intro"),
        # braces that are text, and an anchor quoted in code, stay
        ("## Use {curly} braces", "## Use {curly} braces"),
        ("## `{#id}` syntax", "## `{#id}` syntax"),
        ("## `retries` { #retries }", "## `retries`"),
        ("## <span>styled</span> word", "## <span>styled</span> word"),
    ],
)
def test_a_heading_is_shown_without_its_anchors(label: str, shown: str) -> None:
    assert shown_heading(label) == shown


# --- fix 3: blocks are not cut --------------------------------------------


def block_is_intact(chunks: list[Chunk], block_start: int, block_end: int) -> bool:
    """Every chunk touching the block contains all of it."""
    touching = [c for c in chunks if c.start < block_end and c.end > block_start]
    return bool(touching) and all(c.start <= block_start and c.end >= block_end for c in touching)


@pytest.mark.parametrize(
    "block",
    [
        "```\n" + "\n".join(f"line {i} of code" for i in range(6)) + "\n```",
        "~~~~\n" + "\n".join(f"x = {i}" for i in range(8)) + "\n~~~~",
        "\n".join(f"    indented {i} code" for i in range(6)),
        "<table>\n" + "\n".join(f"<tr><td>{i} cell</td></tr>" for i in range(6)) + "\n</table>",
        "| h1 | h2 |\n|----|----|\n" + "\n".join(f"| a{i} | b{i} |" for i in range(3)),
    ],
)
def test_chunk_boundaries_never_cut_a_block(block: str) -> None:
    before = " ".join(words(17, "b"))
    after = " ".join(words(17, "a"))
    content = f"# S\n\n{before}\n\n{block}\n\n{after}\n"
    chunks = chunk(content, chunk_size=30, chunk_overlap=5)
    assert len(chunks) > 1
    assert_verbatim(content, chunks)
    start = content.index(block) + len(block) - len(block.lstrip())  # chunks open on a word
    assert block_is_intact(chunks, start, start + len(block.strip()))
    assert all(len(c.text.split()) <= 30 for c in chunks)


def test_block_inside_list_item_is_not_cut() -> None:
    block = "```\n" + "\n".join(f"  step {i} here" for i in range(5)) + "\n  ```"
    content = "- " + " ".join(words(12)) + "\n\n  " + block + "\n- tail " + " ".join(words(12, "t"))
    chunks = chunk(content, chunk_size=25, chunk_overlap=4)
    start = content.index(block)
    assert block_is_intact(chunks, start, start + len(block))


def test_oversized_block_is_split_at_line_boundaries() -> None:
    lines = [f"row {i} alpha beta" for i in range(20)]
    content = "```\n" + "\n".join(lines) + "\n```\n"
    chunks = chunk(content, chunk_size=10, chunk_overlap=2)
    assert len(chunks) > 1
    assert_verbatim(content, chunks)
    line_edges = {m.start() for m in re.finditer(r"^", content, re.M)} | {
        m.start() for m in re.finditer(r"$", content, re.M)
    }
    for c in chunks:
        assert c.start in line_edges and c.end in line_edges
        assert len(c.text.split()) <= 10


def test_overlap_is_whole_blocks_and_may_be_smaller() -> None:
    table = "| a | b |\n|---|---|\n| 1 | 2 |"  # 15 words, more than the overlap
    content = " ".join(words(20)) + "\n\n" + table + "\n\n" + " ".join(words(20, "z"))
    chunks = chunk(content, chunk_size=30, chunk_overlap=4)
    assert_verbatim(content, chunks)
    table_start = content.index(table)
    assert block_is_intact(chunks, table_start, table_start + len(table))
    assert all(len(c.text.split()) <= 30 for c in chunks)


def test_big_block_after_overlap_still_makes_progress() -> None:
    fence = "```\n" + " ".join(words(9, "c")) + "\n```"  # 11 words with the fences
    content = " ".join(words(10)) + "\n\n" + fence + "\n"
    chunks = chunk(content, chunk_size=12, chunk_overlap=5)
    assert len(chunks) == 2
    assert chunks[1].text.endswith(fence)
    assert len(chunks[1].text.split()) <= 12


# --- fix 3b: windows end and open on sentences ---------------------------


def sentences(n: int, size: int = 6, lead: str = "Step") -> list[str]:
    """``n`` distinct sentences of ``size`` words, each opening with a capital and closing with a stop."""
    return [
        " ".join([f"{lead}{i}", *(f"part{i}x{j}" for j in range(size - 2)), f"end{i}."]) for i in range(n)
    ]


def test_a_window_ends_after_the_last_whole_sentence_that_fits() -> None:
    said = sentences(12)  # 72 words: four windows of 20 cut at words would open inside sentences
    content = " ".join(said)
    chunks = chunk(content, chunk_size=20, chunk_overlap=8)
    assert_verbatim(content, chunks)
    assert len(chunks) > 1
    for c in chunks:
        assert c.text.split()[0].startswith("Step") and c.text.endswith(".")
        assert len(c.text.split()) <= 20
    assert chunks[-1].text.endswith(said[-1])


def test_the_overlap_is_the_whole_sentences_that_fit_in_it() -> None:
    content = " ".join(sentences(12))
    chunks = chunk(content, chunk_size=20, chunk_overlap=8)
    for before, after in zip(chunks, chunks[1:]):
        assert before.end > after.start, "a six-word sentence fits in an overlap of eight"
        assert content[after.start : before.end].count(".") == 1
        assert after.text.startswith(content[after.start : before.end])


def test_no_overlap_rather_than_one_opening_inside_a_sentence() -> None:
    content = " ".join(sentences(8, size=10))
    chunks = chunk(content, chunk_size=25, chunk_overlap=5)
    assert len(chunks) > 1
    for before, after in zip(chunks, chunks[1:]):
        assert after.start > before.end
        assert after.text.startswith("Step")


def test_a_window_gives_up_at_most_a_fifth_of_its_size_to_close_a_sentence() -> None:
    content = " ".join(sentences(1, size=30)) + " " + " ".join(sentences(3, size=30, lead="Next"))
    chunks = chunk(content, chunk_size=40, chunk_overlap=0)
    # A sentence end lies 10 words back from the first greedy end: more than 40 // 5, so the cut stays a word cut.
    assert len(chunks[0].text.split()) == 40
    assert not chunks[0].text.endswith(".")
    nearer = " ".join(sentences(1, size=33)) + " " + " ".join(sentences(3, size=30, lead="Next"))
    chunks = chunk(nearer, chunk_size=40, chunk_overlap=0)
    assert len(chunks[0].text.split()) == 33 and chunks[0].text.endswith("end0.")
    assert chunks[1].text.startswith("Next0")


def test_a_soft_line_break_is_no_sentence_end_but_a_list_item_end_is() -> None:
    wrapped = (
        "This sentence is wrapped\nby its author across\nseveral short lines of\nthe source before its end.\n"
    )
    items = "".join(f"- item {i} unstopped\n" for i in range(6))  # four words each; the sentence has 17
    content = wrapped * 2 + "\n" + items
    chunks = chunk(content, chunk_size=18, chunk_overlap=0)
    assert_verbatim(content, chunks)
    for c in chunks:
        assert c.text.startswith(("This", "- item")), c.text
        assert c.text.endswith(("end.", "unstopped")), c.text
    # 22 words end one past a line break inside the second sentence: no place to close within four words.
    first = chunk(content, chunk_size=22, chunk_overlap=0)[0]
    assert first.text.split()[-2:] == ["wrapped", "by"]


def test_spanish_sentences_open_windows_with_their_inverted_marks() -> None:
    said = [f"¿Cómo se configura la opción número {i} del servidor?" for i in range(6)]
    content = " ".join(said)
    chunks = chunk(content, chunk_size=20, chunk_overlap=0)
    assert [c.text for c in chunks] == [" ".join(said[i : i + 2]) for i in range(0, 6, 2)]


# --- fix 4: front matter --------------------------------------------------


def test_front_matter_gives_title_and_is_not_indexed() -> None:
    content = "---\ntitle: Deploying\ntags: [ops]\n---\n# Heading\n\nBody text.\n"
    parsed = parse_front_matter(content)
    assert parsed.title == "Deploying"
    assert parsed.front_matter == {"title": "Deploying", "tags": ["ops"]}
    assert content[parsed.body_start :].startswith("# Heading")
    chunks = chunk(content)
    assert [c.text for c in chunks] == ["Body text."]
    assert chunks[0].title == "Deploying"
    assert all(c.start >= parsed.body_start for c in chunks)
    assert_verbatim(content, chunks)


def test_malformed_front_matter_is_skipped_without_title() -> None:
    content = "---\ntitle: [unclosed\n: : :\n---\nBody only.\n"
    parsed = parse_front_matter(content)
    assert parsed.title is None
    assert parsed.front_matter == {}
    chunks = chunk(content, filename="notes/raw.md")
    assert [c.text for c in chunks] == ["Body only."]
    assert chunks[0].title == "raw"


def test_non_mapping_front_matter_and_unclosed_dashes() -> None:
    assert parse_front_matter("---\n- a\n- b\n---\nx").front_matter == {}
    unclosed = "---\ntext after a rule\n"
    assert parse_front_matter(unclosed).body_start == 0
    assert [c.text for c in chunk(unclosed)] == ["---\ntext after a rule"]


def test_toml_front_matter_gives_title_and_is_not_indexed() -> None:
    content = '+++\ntitle = "Rolling updates"\nweight = 20\n[params]\nhidden = false\n+++\nReplace pods a few at a time.\n'
    parsed = parse_front_matter(content)
    assert parsed.title == "Rolling updates"
    assert parsed.front_matter == {"title": "Rolling updates", "weight": 20, "params": {"hidden": False}}
    chunks = chunk(content, filename="_index.md")
    assert [(c.title, c.text) for c in chunks] == [("Rolling updates", "Replace pods a few at a time.")]
    assert_verbatim(content, chunks)


def test_broken_toml_front_matter_is_skipped_without_title() -> None:
    for block in ("title = \n", "a = " + "[" * 5000 + "]" * 5000 + "\n"):
        content = f"+++\n{block}+++\nBody."
        assert parse_front_matter(content).front_matter == {}
        assert [(c.title, c.text) for c in chunk(content, filename="notes/raw.md")] == [("raw", "Body.")]
    assert parse_front_matter("+++\ntitle = 'x'\n---\nBody.").body_start == 0


def test_front_matter_only_document() -> None:
    assert chunk("---\ntitle: Empty\n---\n") == []
    assert chunk("---\ntitle: Empty\n---") == []
    assert document_title(filename="e.md", content="---\ntitle: Empty\n---") == "Empty"


# --- fix 5: CRLF and BOM --------------------------------------------------


def test_crlf_and_bom() -> None:
    content = (
        "\ufeff---\r\ntitle: Win\r\n---\r\n# A\r\n\r\ntext one\r\n\r\n```\r\n# no\r\n```\r\n## B\r\nmore\r\n"
    )
    parsed = parse_front_matter(content)
    assert parsed.title == "Win"
    chunks = chunk(content)
    assert [c.heading_path for c in chunks] == [("# A",), ("# A", "## B")]
    assert chunks[0].text == "text one\r\n\r\n```\r\n# no\r\n```"
    assert chunks[1].text == "more"
    assert_verbatim(content, chunks)


def test_bom_without_front_matter() -> None:
    content = "\ufeff# Title\nbody\n"
    chunks = chunk(content)
    assert chunks[0].title == "Title"
    assert chunks[0].heading_path == ("# Title",)
    assert parse_front_matter(content).body_start == 1


# --- MDX ------------------------------------------------------------------

MDX_PAGE = """---
title: Deploy settings
---
import { Tabs, Tab } from '@site/components';
import {
  Callout,
  Badge,
} from '@site/components';

export const meta = { sidebar: 'ops' };

{/* Keep in step with the CLI reference. */}

The deploy command reads `deploy.toml` from the project root.

<Tabs>
  <Tab label="CLI">
  ```sh
  acme deploy --region eu
  ```
  </Tab>
</Tabs>

## Regions

  import is only a word when the paragraph is indented.

- export is a word inside a list, too.

```js
import { deploy } from 'acme'
export default deploy
```

Importing a region file works as well.
"""


def test_mdx_statements_and_comments_are_not_indexed() -> None:
    chunks = chunk(MDX_PAGE, filename="guides/deploy.mdx")
    assert_verbatim(MDX_PAGE, chunks)
    text = "\n".join(c.text for c in chunks)
    assert "@site/components" not in text
    assert "sidebar" not in text
    assert "Keep in step" not in text
    assert chunks[0].text.startswith("The deploy command reads")
    assert chunks[0].title == "Deploy settings"
    # A component's content is text a reader sees.
    assert "acme deploy --region eu" in chunks[0].text
    regions = chunks[1].text
    assert regions.startswith("import is only a word when the paragraph is indented.")
    assert "- export is a word inside a list, too." in regions
    assert "import { deploy } from 'acme'\nexport default deploy" in regions
    assert regions.endswith("Importing a region file works as well.")


def test_the_same_page_as_plain_markdown_keeps_every_line() -> None:
    chunks = chunk(MDX_PAGE, filename="guides/deploy.md")
    assert_verbatim(MDX_PAGE, chunks)
    assert chunks[0].text.startswith("import { Tabs, Tab } from '@site/components';")
    assert "Keep in step" in chunks[0].text


def test_mdx_keywords_need_a_space_and_the_file_suffix_any_case() -> None:
    content = "import('./lazy.js') loads on demand.\n\nexporting data is covered below.\n\nexport let x = 1\n"
    chunks = chunk(content, filename="API.MDX")
    assert [c.text for c in chunks] == [
        "import('./lazy.js') loads on demand.\n\nexporting data is covered below."
    ]


def test_an_mdx_page_of_statements_only_gives_no_chunk() -> None:
    assert chunk("import A from './a'\n\n{/* draft */}\n", filename="empty.mdx") == []


# --- properties and performance -------------------------------------------

_LINES = st.sampled_from(
    [
        "",
        "   ",
        "# Head",
        "## Sub head",
        "### Deep",
        "Setext",
        "===",
        "---",
        "```",
        "~~~",
        "````",
        "    indented code",
        "| a | b |",
        "|---|---|",
        "| 1 | 2 |",
        "- item one",
        "  - nested item",
        "1. ordered",
        "> quote line",
        "> # quoted",
        "<div>",
        "</div>",
        "<!-- comment -->",
        "[ref]: http://example.com",
        "plain words here",
        "#tag",
        "\tTabbed\ttext",
        "x",
        "***",
        "***bold***",
        "Ünïcode wörds ✓",
    ]
)
_WORDS = st.text(alphabet=st.characters(codec="utf-8", exclude_characters="\r\n"), max_size=30)


@st.composite
def markdownish(draw: st.DrawFn) -> str:
    lines = draw(st.lists(st.one_of(_LINES, _WORDS), max_size=40))
    newline = draw(st.sampled_from(["\n", "\r\n", "\r"]))
    prefix = draw(st.sampled_from(["", "\ufeff", "---\ntitle: T\n---\n", "---\n: [bad\n---\n", "---\n"]))
    return prefix + newline.join(lines) + draw(st.sampled_from(["", newline]))


def heading_line_ranges(content: str, body_start: int) -> list[tuple[int, int]]:
    """Offsets of top-level heading lines, found independently of the module."""
    starts = [body_start]
    for m in re.finditer(r"\r\n|\r|\n", content[body_start:]):
        starts.append(body_start + m.end())
    starts.append(len(content) + 1)
    tokens = MarkdownIt("commonmark").enable("table").parse(content[body_start:])
    return [
        (starts[t.map[0]], starts[t.map[1]])
        for t in tokens
        if t.type == "heading_open" and t.level == 0 and t.map
    ]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    content=markdownish(),
    size=st.integers(min_value=1, max_value=12),
    overlap_ratio=st.floats(min_value=0, max_value=0.99),
)
def test_chunks_are_ordered_verbatim_and_cover_the_body(
    content: str, size: int, overlap_ratio: float
) -> None:
    overlap = int(size * overlap_ratio)
    chunks = chunk(content, chunk_size=size, chunk_overlap=overlap)
    body_start = parse_front_matter(content).body_start

    assert_verbatim(content, chunks)
    assert all(c.text for c in chunks)
    assert all(len(c.text.split()) <= size for c in chunks)
    assert [c.chunk_index for c in chunks] == list(range(len(chunks)))
    assert all(a.start <= b.start and a.end <= b.end for a, b in zip(chunks, chunks[1:]))
    assert all(c.start >= body_start for c in chunks)

    covered = bytearray(len(content))
    for c in chunks:
        covered[c.start : c.end] = b"\x01" * (c.end - c.start)
    for heading_start, heading_end in heading_line_ranges(content, body_start):
        covered[heading_start:heading_end] = b"\x01" * len(covered[heading_start:heading_end])
    uncovered = [i for i in range(body_start, len(content)) if not covered[i] and not content[i].isspace()]
    assert uncovered == [], (content, [content[i] for i in uncovered])


def test_chunks_a_100kb_document_with_every_block_kind() -> None:
    section = (
        "## Section\n\n"
        + " ".join(words(120))
        + "\n\n"
        + "```python\n"
        + "\n".join(f"x{i} = {i}  # comment" for i in range(15))
        + "\n```\n\n"
        + "| a | b |\n|---|---|\n"
        + "\n".join(f"| {i} | {i * 2} |" for i in range(10))
        + "\n\n"
        + "- item\n" * 10
        + "\n"
    )
    content = "# Big\n\n" + section * (100_000 // len(section) + 1)
    assert len(content) >= 100_000
    chunks = chunk(content, chunk_size=100, chunk_overlap=10)
    assert chunks
    assert all(content[c.start : c.end] == c.text for c in chunks)
    assert all(len(c.text.split()) <= 100 for c in chunks)


def test_many_small_sections_give_one_chunk_each() -> None:
    content = "".join(f"## H{i}\ntext {i}\n```\ncode\n```\n" for i in range(3000))
    chunks = chunk(content)
    assert len(chunks) == 3000
    assert chunks[-1].heading_path == ("## H2999",)


def test_passage_header_names_title_and_headings_without_repeating_the_title() -> None:
    assert passage_header(title="Guide", heading_path=("# Guide", "## Install", "### On Linux")) == (
        "[Doc: Guide > Install > On Linux]"
    )
    assert passage_header(title="Guide", heading_path=()) == "[Doc: Guide]"


def test_a_heading_is_embedded_as_its_words_alone() -> None:
    assert heading_words("## Why don't I see any bills? { #no-bills }") == "Why don't I see any bills?"
    assert heading_words("### `retries`") == "`retries`"
    assert heading_words("#") == ""


def test_a_chunk_opens_its_section_unless_it_continues_the_chunk_before() -> None:
    content = "# Guide\n\nIntro line.\n\n## Long\n\n" + " ".join(
        f"Line {n} of the section." for n in range(30)
    )
    chunks = chunk_markdown(filename="g.md", content=content, title="Guide", chunk_size=40, chunk_overlap=0)
    paths = [c.heading_path for c in chunks]
    assert paths[0] == ("# Guide",) and paths.count(("# Guide", "## Long")) > 1
    assert section_openers(paths) == [True, True] + [False] * (len(paths) - 2)
    assert section_openers([(), ("# A",), ("# A",), ()]) == [False, True, False, False]


# --- runs without spaces ----------------------------------------------------

BLOB = "iVBORw0KGgo" + "AbCd0123+/" * 300  # 3,011 characters, as a pasted base64 image


def test_a_base64_image_is_left_out_and_the_text_around_it_kept():
    content = (
        f"# Diagram\n\nThe flow starts here. ![flow](data:image/png;base64,{BLOB}) The cache sits after it.\n"
    )
    chunks = chunk(content)
    assert_verbatim(content, chunks)
    assert all("AbCd0123" not in c.text for c in chunks)
    # The image is one run without a space, its alt text included; the sentences around it are two chunks.
    assert [c.text for c in chunks] == ["The flow starts here.", "The cache sits after it."]


def test_a_line_of_minified_code_in_a_fence_is_left_out_and_the_fence_split_at_lines():
    minified = "a=b(c);" * 20_000  # 140,000 characters on one line, no space
    content = f"# Bundle\n\n```js\n// header kept\n{minified}\n// footer kept\n```\n"
    chunks = chunk(content)
    assert_verbatim(content, chunks)
    assert max(len(c.text) for c in chunks) < 100
    assert [c.text for c in chunks] == ["```js\n// header kept", "// footer kept\n```"]


def test_a_file_that_is_only_a_blob_gives_no_chunk():
    assert chunk(f"![x](data:image/png;base64,{BLOB})\n") == []


def test_a_long_url_under_the_limit_stays_one_word_of_its_chunk():
    url = "https://example.com/" + "segment/" * 60  # 500 characters
    content = f"# Links\n\nSee [the guide]({url}) for more.\n"
    assert [c.text for c in chunk(content)] == [f"See [the guide]({url}) for more."]


def test_a_small_block_holding_a_long_run_stays_whole_and_weighs_its_length():
    run = "x" * 1_500  # three slices of 512: 192 words
    fence = f"```\n{run}\n```"
    content = f"# A\n\n{' '.join(words(250))}\n\n{fence}\n\n{' '.join(words(100, 'v'))}\n"
    chunks = chunk(content, chunk_size=400, chunk_overlap=0)
    assert_verbatim(content, chunks)
    assert any(fence in c.text for c in chunks)
    # 250 words + a fence weighing 192 exceed 400: the fence opens the second chunk.
    assert chunks[1].text.startswith("```")
