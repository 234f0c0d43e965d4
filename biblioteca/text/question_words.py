"""Words a help question is phrased with but documentation is not written in: left out of its full-text terms.

Pure Python, no Django. PostgreSQL's `english` and `spanish` configurations already drop function words (`the`,
`de`), but not the conversational ones a user wraps a question in: `I want`, `still`, `supposed to`, `quiero`,
`ninguno`, `todavía`. Documentation seldom uses them, so the lexical side weighs them as rare and ranks a chunk
that happens to hold one above the chunks the question is about. This is a general list for both languages,
folded and lower-cased like `lexical_text`'s output; it names no product's vocabulary. Only whole plain words are
left out: an identifier's parts (`keep` in `keep_alive`) and its whole stay.
"""

from __future__ import annotations

import re

from biblioteca.text.lexical import fold, lexical_words

_ENGLISH = """
    able actually already also anybody anyone anything anyway anyways apparently basically can cannot cant could
    couldn did didn does doesn don even every everybody everyone everything exactly fine guess happen happened
    happening happens hey hi instead isn just keep keeps kept know knew like likely maybe mean means might mine
    must need needed needs nobody nothing obviously ok okay perhaps please possible possibly probably
    quite rather really seem seemed seems shall should shouldn simply somebody somehow someone something
    somewhat still supposed sure tell thanks thing things think thought tried tries trying unless wanna want
    wanted wants wasn way whatever whenever wherever whether wonder wondering won would wouldn yet
"""

_SPANISH = """
    acaso actualmente ademas algo alguien algun alguna algunas alguno algunos anteriormente aqui asi aun bastante
    bien claramente claro consigo conseguir cosa cosas creo cual cualquier cualquiera debe deben deberia deberian
    debo duda dudas entonces exactamente favor gracias hacer hago hay hola igual intentar intento logro lograr
    manera mejor mucho nada nadie necesita necesitan necesito ningun ninguna ninguno normalmente ocurre
    ojala parece parecen pasa podria podrian posible pregunta probablemente pues puede pueden puedo
    queria quiere quieren quiero quisiera realmente seguro simplemente solo sucede supone
    supuestamente tambien tampoco tendria tengo tiene tienen todavia vale veo ver vez veces
"""

# PostgreSQL's `spanish` stop list spells these function words with their accents (`había`, `más`, `será`,
# `tendría`); questions are folded before they reach it, so their folded forms pass as rare words and outweigh
# the question's subject.
_SPANISH_FOLDED_STOP_WORDS = """
    eramos estabamos estais estan estara estaran estaras estare estareis estaria estariais estariamos estarian
    estarias esteis esten estes estuvieramos estuviesemos fueramos fuesemos habeis habia habiais habiamos habian
    habias habra habran habras habre habreis habria habriais habriamos habrian habrias hayais hubieramos
    hubiesemos mas mia mias mio mios seais sera seran seras sere sereis seria seriais seriamos serian serias si
    tendra tendran tendras tendre tendreis tendria tendriais tendriamos tendrian tendrias teneis tengais tenia
    teniais teniamos tenian tenias tuvieramos tuviesemos
"""

QUESTION_FILLER = frozenset((_ENGLISH + _SPANISH + _SPANISH_FOLDED_STOP_WORDS).split())


# A capitalised word inside a sentence is a name ("¿Qué es Hey API?", "does Keep sync?"), not the filler
# word it is spelled like; at the start of a sentence, capitals say nothing.
_NAME = re.compile(r"(?<![.!?¿¡:;\s])\s+([A-Z][a-z]+)\b")


def question_text(text: str) -> str:
    """`lexical_text(text)` for a question: the same terms, less the plain words in `QUESTION_FILLER` that it
    does not use as names."""
    names = {match.group(1).lower() for match in _NAME.finditer(fold(text))}
    return " ".join(
        word
        for word, plain in lexical_words(text)
        if not (plain and word.lower() in QUESTION_FILLER and word.lower() not in names)
    )


# Without their accents, "por qué" and "para qué" are "because" and "so that", which a how-to question uses too
# (`¿Cómo lo configuro para que arranque solo?`): unaccented, they ask why only where the question opens.
_REASON = re.compile(
    r"\b(?:why|how come|what for|(?:what is|what's) the (?:reason|point)|por qué|porqué|para qué|a qué se debe"
    r"|(?:cuál|qué) es (?:el motivo|la razón))\b",
    re.IGNORECASE,
)
_REASON_OPENING = re.compile(r"[\s¿¡]*(?:por|para) que\b", re.IGNORECASE)


def asks_reason(question: str) -> bool:
    """Whether the question asks why (or what for): its answer is a reason, which docs give after the fact."""
    return bool(_REASON.search(question) or _REASON_OPENING.match(question))


# "How many", "how long" and "how come" ask for a number or a reason, not a way; unaccented, "como" is also "as"
# (`como root`), so it asks how only where the question opens.
_HOW = re.compile(
    r"\bhow\b(?!\s+(?:many|much|long|often|big|large|old|far|come)\b)|\bcómo\b|\b(?:what|which) steps\b"
    r"|\b(?:qué|cuáles son los) pasos\b",
    re.IGNORECASE,
)
_HOW_OPENING = re.compile(r"[\s¿¡]*como\b", re.IGNORECASE)


def asks_how(question: str) -> bool:
    """Whether the question asks how to do something: its answer is often a procedure, after the line that
    names the task."""
    return bool(_HOW.search(question) or _HOW_OPENING.match(question))
