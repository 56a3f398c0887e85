"""Which language a text is in, as far as cheap rules can tell.

`looks_english` serves the rules that only know English (first-person resolution): a
rule that does not know a text's language leaves it exactly as said. `text_language`
serves the multilingual embedder, which centres each vector on its language's mean.

Invariants: deterministic and cheap (word lists and Unicode scripts, no model); a text
with no Latin letters is not English; otherwise it is English unless the function words
of another listed language outnumber its English ones, so "así que nunca me sugieras
recetas" and "ne me propose jamais" are not English, while "I love Paris", informal chat
("It so fun! Wanna see my moves?") and a text without function words ("Biscuit!") are.
"""

from __future__ import annotations

import re
import unicodedata


def word_set(words: str) -> frozenset[str]:
    """A frozenset of the whitespace-separated words of a (multi-line) string literal."""
    return frozenset(words.split())


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


# Function words beyond `_OTHERS`' detection lists, for telling content words apart
# (keywords) in the languages `text_language` names; Russian has no detection list, since
# its script tells it.
_MORE_FUNCTION_WORDS = {
    "es": word_set("del al las unos unas pero como más muy ya yo te nos este esta eso fue"),
    "fr": word_set(
        "l d qu j c s n ce cette ces mon ma mes ton ta son sa ses nous vous ils "
        "elles sur dans pour avec par mais ou où on y été était"
    ),
    "de": word_set(
        "des im am ins zum zur auf für aus bei nach wie wir ihr mein meine dein "
        "sein seine ihre es war hat sind auch noch aber oder wenn"
    ),
    "ru": word_set(
        "и в во на не что я ты он она оно мы вы они мой моя моё мои твой твоя "
        "его её их это этот эта эти как с со к ко по за из у о об от до для но а "
        "же ли бы то так уже ещё был была было были есть мне меня тебе нас вас "
        "ему ей им при над под про чтобы когда где там тут вот"
    ),
}
FUNCTION_WORDS: dict[str, frozenset[str]] = {
    code: _OTHERS.get(code, frozenset()) | _MORE_FUNCTION_WORDS.get(code, frozenset())
    for code in (*_OTHERS, "ru")
}


def is_function_word(word: str, language: str | None) -> bool:
    """Whether `word` is a function word of `language` (a `text_language` code other than
    English; English has the lexical stopwords of `memory.retrieval.text`)."""
    return word.casefold() in FUNCTION_WORDS.get(language or "", frozenset())


def looks_english(text: str) -> bool:
    """True when `text` reads as English by its function words (module invariants)."""
    if not _LATIN_RE.search(text):
        return False
    words = [w.casefold() for w in _WORD_RE.findall(text)]
    english = sum(w in _ENGLISH for w in words)
    return all(sum(w in others for w in words) <= english for others in _OTHERS.values())


# A script counts when it holds this share of a text's letters ("Sam: 我喜欢茶 (May 2023)"
# is Chinese; a Latin name inside Russian text leaves it Russian).
SCRIPT_SHARE = 0.3


def text_language(text: str) -> str | None:
    """ "ja", "zh", "ru", "en" or one of _OTHERS' codes, or None when no rule knows it:
    kana makes Japanese, Han without kana Chinese, Cyrillic Russian (the language most
    written in it), Latin letters English or the listed language whose function words
    outnumber the others' (`looks_english`'s rule)."""
    scripts = _script_counts(text)
    letters = sum(scripts.values())
    if not letters:
        return None
    share = {script: count / letters for script, count in scripts.items()}
    if share.get("kana", 0.0) + share.get("han", 0.0) >= SCRIPT_SHARE:
        return "ja" if scripts.get("kana") else "zh"
    if share.get("cyrillic", 0.0) >= SCRIPT_SHARE:
        return "ru"
    if share.get("latin", 0.0) >= SCRIPT_SHARE:
        return _latin_language(text)
    return None


_SCRIPTS = (("HIRAGANA", "kana"), ("KATAKANA", "kana"), ("CJK", "han"))
_SCRIPTS += (("CYRILLIC", "cyrillic"), ("LATIN", "latin"))


def _script_counts(text: str) -> dict[str, int]:
    """Letters per script ("kana", "han", "cyrillic", "latin", "other"), by Unicode name."""
    counts: dict[str, int] = {}
    for char in text:
        if char.isalpha():
            name = unicodedata.name(char, "")
            script = next((s for prefix, s in _SCRIPTS if name.startswith(prefix)), "other")
            counts[script] = counts.get(script, 0) + 1
    return counts


def _latin_language(text: str) -> str:
    words = [w.casefold() for w in _WORD_RE.findall(text)]
    english = sum(w in _ENGLISH for w in words)
    best, most = "en", english
    for code, others in _OTHERS.items():
        count = sum(w in others for w in words)
        if count > most:
            best, most = code, count
    return best
