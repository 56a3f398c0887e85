"""Whether a text is English, for the rules that only know English (first-person
resolution): a rule that does not know a text's language leaves it exactly as said.

Invariants: deterministic and cheap (word lists, no model); a text with no Latin letters
is not English; otherwise it is English unless the function words of another listed
language outnumber its English ones, so "así que nunca me sugieras recetas" and "ne me
propose jamais" are not English, while "I love Paris", informal chat ("It so fun! Wanna
see my moves?") and a text without function words ("Biscuit!") are.
"""

from __future__ import annotations

import re

from memory.retrieval.text import word_set

_WORD_RE = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)?")
_LATIN_RE = re.compile(r"[A-Za-z\u00c0-\u024f]")
_ENGLISH = word_set(
    """
    i me my mine myself you your we our us he she it its they them their is are was were
    am be been being have has had do does did not no the a an and or but of to in on at
    for with from by about this that these those what who which when where why how will
    would can could should there here i'm i've i'll i'd don't it's
    """
)
# Function words of the other languages users most often write in with Latin letters;
# words they share with English ("me", "a", "in", "is") are in _ENGLISH's count too.
_OTHERS = {
    "es": word_set("el la los las un una que de y en por para con no es mi me tu su se lo le"),
    "fr": word_set("le la les un une des et est que qui je me tu il elle ne pas de du au en"),
    "de": word_set("der die das ein eine und ist ich du er sie nicht mit von zu den dem"),
    "it": word_set("il lo la gli le un una che di e è per non con mi ti si sono ho"),
    "pt": word_set("o a os as um uma que de e é não com por para eu meu minha se"),
    "nl": word_set("de het een en is ik je niet van op te met dat die zijn"),
}


def looks_english(text: str) -> bool:
    """True when `text` reads as English by its function words (module invariants)."""
    if not _LATIN_RE.search(text):
        return False
    words = [w.casefold() for w in _WORD_RE.findall(text)]
    english = sum(w in _ENGLISH for w in words)
    return all(sum(w in others for w in words) <= english for others in _OTHERS.values())
