"""The lexical side of search: accent folding, identifier-aware terms, stems and document languages.

Pure Python, no Django. PostgreSQL's full-text search does the indexing and ranking, but two things must
happen before it sees a text, on both the stored side and the question's side:
- accents are folded here, because the embedded server has no `unaccent` extension, so that
  `configuración` and `configuracion` meet;
- identifiers are spelled out, because PostgreSQL's parser reads `app.include_router` as the host name
  `app.include` plus `router`: each identifier gives its parts (`app`, `include`, `router`) and its whole,
  joined (`appincluderouter`, `includerouter`), so a question naming it whole or by a part finds it; a
  command-line flag also gives itself as one word (`--port` -> `port`, `flagport`), since the parser drops
  its dashes.
The trimmer uses the same terms, stemmed with the Snowball stemmers PostgreSQL itself uses.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from itertools import chain, repeat

import Stemmer

# ISO 639-1 code -> PostgreSQL text-search configuration (and Snowball stemmer of the same name).
SEARCH_CONFIGS = {
    "ca": "catalan",
    "da": "danish",
    "de": "german",
    "en": "english",
    "es": "spanish",
    "fi": "finnish",
    "fr": "french",
    "hu": "hungarian",
    "it": "italian",
    "nl": "dutch",
    "no": "norwegian",
    "pt": "portuguese",
    "ro": "romanian",
    "ru": "russian",
    "sv": "swedish",
    "tr": "turkish",
}
SEARCH_LANGUAGES = {config: code for code, config in SEARCH_CONFIGS.items()}
SIMPLE_CONFIG = "simple"
# A flag named by a common word (`--app`, `--host`, `--force`) would be found only by that word, which most pages
# hold; its own word is as rare as the flag. PostgreSQL's parser drops the dashes, so the flag is spelled out.
FLAG_PREFIX = "flag"

_WORDISH = re.compile(r"(?:(?<![\w-])--(?=\w))?\w+(?:(?:[.:/]|-{1,2})\w+)*")
# What clings to a word's edges (punctuation, quotes, markdown's emphasis and code marks) and no token starts or
# ends with: never a word character, nor a hyphen (`--port`).
_EDGES = "".join(c for c in "!\"#$%&'()*+,./:;<=>?@[\\]^`{|}~¿¡«»“”‘’„…–—·" if not re.fullmatch(r"[\w-]", c))
_SEPARATORS = re.compile(r"[._:/\-]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_WORD = re.compile(r"[^\W_]+")


class _Folded(dict):
    """A `str.translate` table from each character to its compatibility decomposition less its combining marks
    (`ó` -> `o`, `ﬁ` -> `fi`), filled as characters are met: folding is one pass in C over the text, then the
    recomposition. Decomposing character by character gives what decomposing the text does once its marks are
    gone, since canonical reordering moves only marks."""

    def __missing__(self, codepoint: int) -> int | str:
        char = chr(codepoint)
        kept = "".join(c for c in unicodedata.normalize("NFKD", char) if not unicodedata.combining(c))
        folded = codepoint if kept == char else kept
        self[codepoint] = folded
        return folded


_FOLDED = _Folded()


def fold(text: str) -> str:
    """`text` without diacritics (`configuración` -> `configuracion`, `ñ` -> `n`) and in compatibility form
    (`ﬁ` -> `fi`)."""
    if text.isascii():
        return text
    return unicodedata.normalize("NFC", text.translate(_FOLDED))


def identifier_parts(token: str) -> list[str]:
    """`token` split at its separators and camel-case joints, as spelled (`response_modelExclude` -> response,
    model, Exclude); a plain word comes back alone."""
    return [p for piece in _SEPARATORS.split(token) for p in _CAMEL.split(piece) if p]


def is_compound(token: str) -> bool:
    """Whether `token` has a separator or a camel-case joint, i.e. may split into parts."""
    return bool(_SEPARATORS.search(token) or _CAMEL.search(token))


def plain_word(token: str) -> bool:
    """A word `_spelled` would give back alone, with no identifier keys: letters and digits, no camel-case joint."""
    return token.isalnum() and (token.islower() or _CAMEL.search(token) is None)


def _spelled(token: str) -> list[str]:
    """An identifier's parts, then its whole and each dotted segment's whole, joined and lower-cased; a
    command-line flag's spelling, then the flag itself as one word (`--app` -> app, flagapp)."""
    if token.startswith("--"):
        body = token[2:]
        return [*_spelled(body), FLAG_PREFIX + "".join(identifier_parts(body)).lower()]
    parts = identifier_parts(token)
    if len(parts) < 2:
        return [token]
    out = [p.lower() for p in parts]
    wholes = ["".join(parts)]
    segments = [s for s in re.split(r"[.:/]+", token) if s]
    if len(segments) > 1:
        wholes.extend("".join(identifier_parts(s)) for s in segments if len(identifier_parts(s)) > 1)
    out.extend(dict.fromkeys(w.lower() for w in wholes))
    return out


def lexical_words(*parts: str) -> list[tuple[str, bool]]:
    """`lexical_text`'s words, each with whether it was a plain word (True) or came from an identifier."""
    words: list[tuple[str, bool]] = []
    for part in parts:
        for token in word_tokens(fold(part), _WORDISH):
            if plain_word(token):
                words.append((token, True))
                continue
            spelled = _spelled(token)
            words.extend((word, len(spelled) == 1 and word == token) for word in spelled)
    return words


def lexical_text(*parts: str) -> str:
    """The text PostgreSQL indexes for `parts` (a passage header, a chunk, a question): folded, identifiers
    spelled out, words in their order."""
    return " ".join(word for word, _ in lexical_words(*parts))


@lru_cache(maxsize=32)
def _stemmer(language: str) -> Stemmer.Stemmer | None:
    config = SEARCH_CONFIGS.get(language)
    return Stemmer.Stemmer(config) if config else None


def word_tokens(text: str, pattern: re.Pattern[str]) -> list[str]:
    """`pattern.findall(text)` in about half the time, for a token pattern (`_WORDISH`, `identifiers`' own) whose
    tokens never cross whitespace nor start or end on an `_EDGES` character, and whose only look back asks whether
    a word character or a hyphen comes before: each whitespace-separated word can be read alone, its edges
    stripped, and one that is then letters and digits is its own token without the pattern. Reading words is
    most of what trimming a passage met for the first time costs."""
    tokens: list[str] = []
    for word in text.split():
        core = word.strip(_EDGES)
        if core.isalnum():
            tokens.append(core)
        elif core:
            tokens.extend(pattern.findall(core))
    return tokens


def terms(text: str, *, language: str = "") -> list[str]:
    """`text`'s words, folded, lower-cased, identifiers spelled out, stemmed in `language` when it has a
    stemmer: the units the trimmer compares a question's terms with."""
    # A word's terms are worked out once.
    tokens = word_tokens(fold(text), _WORDISH)
    return list(chain.from_iterable(map(_token_terms, tokens, repeat(language, len(tokens)))))


@lru_cache(maxsize=32768)
def _token_terms(token: str, language: str) -> tuple[str, ...]:
    """One of `lexical_text`'s tokens as terms: each of its words split as `_WORD` splits their joined text (no
    word holds a space; a plain word is one `_WORD` already), lower-cased and stemmed."""
    if plain_word(token):
        words = [token.lower()]
    else:
        words = [w.lower() for word in _spelled(token) for w in _WORD.findall(word)]
    stemmer = _stemmer(language)
    return tuple(stemmer.stemWords(words) if stemmer else words)


# A markdown link's destination, and its title if any: hidden from the reader.
_LINK_DESTINATION = re.compile(r'\]\([^)\s]*(?:\s+"[^"]*")?\)')


def without_link_destinations(text: str) -> str:
    """`text` with each inline link's destination left out (`[the setup](guide/setup.md#pruebas)` -> `[the
    setup]`): a path or an anchor is not what the sentence says."""
    return _LINK_DESTINATION.sub("]", text) if "](" in text else text


@lru_cache(maxsize=50_000)
def unit_terms(text: str, language: str) -> frozenset[str]:
    """A sentence unit's stems, its links' destinations left out: a page translated from another keeps linking to
    anchors in the other language, whose words a question in that language then found in unrelated lines. Stored
    with each sentence at ingest (`TERMS_VERSION`), so a passage met for the first time reads rather than stems."""
    return frozenset(terms(without_link_destinations(text), language=language))


def pack_terms(terms: frozenset[str]) -> str:
    """A unit's stems as stored with its sentence: sorted, one space apart (no stem holds whitespace)."""
    return " ".join(sorted(terms))


def unpack_terms(packed: str) -> frozenset[str]:
    return frozenset(packed.split(" ")) if packed else frozenset()


def search_config(language: str) -> str:
    """The PostgreSQL text-search configuration for an ISO 639-1 code; `simple` (no stemming) otherwise."""
    return SEARCH_CONFIGS.get(language, SIMPLE_CONFIG)


_FENCE = re.compile(r"^( {0,3})(`{3,}|~{3,}).*?^\1\2[`~]*[ \t]*$", re.M | re.S)
_INLINE_CODE = re.compile(r"`[^`\n]*`")
_LINK_TARGET = re.compile(r"\]\([^)\s]*\)|https?://\S+")


@lru_cache(maxsize=1)
def _identifier():
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    identifier = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
    identifier.set_languages(sorted(SEARCH_CONFIGS))
    return identifier


def detect_language(text: str, *, minimum_confidence: float = 0.5) -> str:
    """The ISO 639-1 code of `text`'s prose (code and link targets left out), among the languages PostgreSQL
    can stem; "" when there is too little prose or the model is unsure."""
    prose = _LINK_TARGET.sub(" ", _INLINE_CODE.sub(" ", _FENCE.sub(" ", text)))
    if len(_WORD.findall(prose)) < 3:
        return ""
    language, confidence = _identifier().classify(prose[:20000])
    return language if confidence >= minimum_confidence else ""
