"""First-person resolution: "I love my dog" by Melanie -> "Melanie loves Melanie's dog".

Invariants:
- Only unambiguous first-person forms are rewritten (I, me, my, mine, myself and the
  contractions I'm, I've, I'll, I'd); "we/us/our" and "you" are left alone.
- Quoted speech is left alone: an "I" inside quotes is someone else; so is code (fenced
  blocks and inline `code`).
- Verb agreement uses a closed list of present-tense verbs (_PRESENT_VERBS), so past
  tenses and ambiguous forms ("read", "put") stay untouched.
- Everything but the rewritten words (spacing, punctuation, line breaks) is kept as is.
"""

from __future__ import annotations

import re

from memory.retrieval.text import word_set

# Present-tense verbs that take third-person agreement after a resolved "I".
_PRESENT_VERBS = word_set(
    """
    love like hate want need think feel know believe hope wish enjoy prefer live work play
    go do have say mean guess remember miss plan try make take get see find use keep write
    run cook paint dance sing watch listen study teach agree understand appreciate admire
    adore support volunteer own collect train practice visit spend wonder worry care mind
    look sound seem tend dream struggle fear trust owe walk drive ride swim hike
    bake draw learn sit cross eat drink sleep wake stay start finish call text ask tell
    talk meet help show bring buy pay sell send check follow choose decide forget imagine
    realize recommend suggest expect grow build create design sing travel relax pray
    cherish value consider remind rely focus hang feel deal carry
    """
)
_IRREGULAR = dict(am="is", have="has", do="does", go="goes")
_IRREGULAR |= {"don't": "doesn't", "haven't": "hasn't", "aren't": "isn't"}
_ADVERBS = word_set(
    "really just also still always never totally absolutely actually definitely usually "
    "often sometimes recently finally truly honestly kinda sort even already"
)
_INVERTED = dict(am="is", Am="Is", do="does", Do="Does", have="has", Have="Has")
_INVERTED |= {"don't": "doesn't", "Don't": "Doesn't"}
_AUXILIARIES = word_set(
    "can could should would will shall may might must did does was were let to "
    "can't couldn't shouldn't wouldn't won't didn't wasn't"
)
_CONTRACTED = {"i'm": "is", "i've": "has", "i'll": "will"}
_PIECE_RE = re.compile(r"[\w]+(?:'[\w]+)?|[^\w]+")
# Left as written: quoted speech (someone else's "I"), fenced code blocks (to the next
# fence or the end) and inline code, where `i` is a loop variable.
_PROTECTED_RE = re.compile(
    r"(\"[^\"]*\"|\u201c[^\u201d]*\u201d|```.*?(?:```|$)|`[^`\n]*`)", re.DOTALL
)


def _third_person(verb: str) -> str:
    low = verb.casefold()
    if low in _IRREGULAR:
        return _IRREGULAR[low]
    if low not in _PRESENT_VERBS:
        return verb
    if re.search(r"[^aeiou]y$", low):
        return verb[:-1] + "ies"
    if re.search(r"(s|sh|ch|x|z|o)$", low):
        return verb + "es"
    return verb + "s"


def _resolve_span(span: str, name: str) -> str:
    """Rewrite first-person forms in one unquoted span (see _PRESENT_VERBS)."""
    pieces = _PIECE_RE.findall(span)
    words = [i for i, p in enumerate(pieces) if p[0].isalnum() or p[0] == "_"]
    for pos, i in enumerate(words):
        word, low = pieces[i], pieces[i].casefold()
        prev = pieces[words[pos - 1]] if pos else ""
        nxt = words[pos + 1 :]
        if word in ("I", "i"):
            pieces[i] = name
            if prev in _INVERTED:  # "Do I …?" -> "Does Melanie …?"
                pieces[words[pos - 1]] = _INVERTED[prev]
            elif prev.casefold() not in _AUXILIARIES | {"and", "or", "nor"}:
                _agree(pieces, nxt)
        elif low in _CONTRACTED:
            pieces[i] = f"{name} {_CONTRACTED[low]}"
        elif low == "i'd":
            follower = pieces[nxt[0]].casefold() if nxt else ""
            pieces[i] = f"{name} {'had' if follower in ('been', 'better') else 'would'}"
        elif low == "me":
            pieces[i] = name
        elif low in ("my", "mine"):
            pieces[i] = f"{name}'s"
        elif low == "myself":
            pieces[i] = "themself"
    return "".join(pieces)


def _agree(pieces: list[str], following: list[int]) -> None:
    """Make the verb after a resolved "I" third person, skipping adverbs ("really")."""
    for i in following:
        if pieces[i].casefold() not in _ADVERBS:
            pieces[i] = _third_person(pieces[i])
            return


def resolve_first_person(text: str, speaker: str) -> str:
    """Replace I/me/my/mine/myself (and I'm, I've, I'll, I'd) by the speaker's name with
    verb agreement, outside quotes: "I love my dog" -> "Melanie loves Melanie's dog".

    "we/us/our" and "you" are left alone: their referents are not known here.
    """
    parts = _PROTECTED_RE.split(text)
    return "".join(p if i % 2 else _resolve_span(p, speaker) for i, p in enumerate(parts))
