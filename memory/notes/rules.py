"""Rule-based note annotation (no LLM): kind, domain, tags, keywords and importance.

Invariants:
- Deterministic and pure: the same text (and arguments) always give the same result.
- Lexicons are word stems (memory.retrieval.text.stem), so inflections match.
- `classify_kind` reads the unresolved first-person text (`ExtractedFact.original`);
  questions never decide a kind, since they are about the other party.
- `classify_domain` breaks ties towards the earlier, more sensitive domain of
  DOMAIN_LEXICON, so visibility rules err on the private side.
- `extract_keywords` returns at most MAX_KEYWORDS, `rule_tags` at most MAX_RULE_TAGS;
  `estimate_importance` is in [0, 1], rounded to 3 places.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from memory.episodes.extraction import ExtractedFact
from memory.language import is_function_word, text_language
from memory.retrieval.text import (
    UNSPACED_CHARS,
    content_tokens,
    normalise,
    split_sentences,
    stem,
    verbatim_tokens,
)

MAX_KEYWORDS = 8
MAX_RULE_TAGS = 4


def _stems(words: str) -> frozenset[str]:
    return frozenset(stem(w) for w in words.split())


def _lexicon(source: str) -> dict[str, frozenset[str]]:
    """Parse "name: word word …" lines (continuation lines start with spaces)."""
    entries = re.findall(r"^(\w[\w-]*):((?:.*\n?)(?:^ +.*\n?)*)", source, re.MULTILINE)
    return {name: _stems(words) for name, words in entries}


# Topical tags: a tag applies when any of its stems occurs in the content.
TAG_LEXICON = _lexicon(
    """
work: job work career office boss colleague coworker manager meeting project promotion
  client deadline company business startup interview salary
family: family mom mother dad father parent kid kids child children son daughter brother
  sister grandma grandmother grandpa husband wife baby
health: health doctor hospital sick ill illness injury injured pain therapy therapist
  medication medicine diagnosis surgery allergy allergic diet exercise workout fitness gym
  symptom mental anxiety depression knee
finance: money bank budget loan mortgage debt invest investment stock stocks savings salary
  rent tax taxes payment paid price cost expensive bill
travel: travel trip vacation holiday flight fly flew airport hotel abroad country city
  visit visited tour beach road passport camping roadtrip
food: food cook cooking recipe bake baking dinner lunch breakfast restaurant meal dish eat
  ate pizza coffee wine cake vegan vegetarian
hobby: hobby paint painting draw drawing music guitar piano sing dance dancing hike hiking
  game gaming read reading book books pottery garden gardening photography fishing
  knitting surf surfing sport sports
pets: pet pets dog dogs puppy pup cat cats kitten horse bird fish turtle
education: school college university class course study studying student degree exam
  teacher learn learning homework graduate graduation
relationships: friend friends friendship boyfriend girlfriend partner date dating married
  marriage wedding divorce breakup relationship
plans: plan plans planning tomorrow upcoming next soon schedule goal goals someday intend
tech: computer software code coding program programming app laptop phone server database
  api bug deploy python javascript website internet ai
"""
)
# Domains (drive visibility through settings): the one with most hits wins; ties go to
# the earlier (more sensitive) domain so privacy rules err on the safe side.
DOMAIN_LEXICON = _lexicon(
    """
health: health doctor hospital clinic sick illness injury therapy therapist medication
  medicine prescription diagnosis diagnosed surgery allergy allergic symptom symptoms
  disease cancer diabetes pregnant pregnancy
finance: money bank banking budget loan mortgage debt invest investment stocks savings
  salary tax taxes payment invoice credit account finance financial insurance pension
work: job career office boss colleague coworker manager meeting project promotion client
  deadline company employer interview team sprint
tech: computer software code coding programming laptop server database api bug deploy
  deployment python javascript github repository kubernetes
travel: travel trip vacation flight airport hotel abroad passport itinerary roadtrip visa
personal: family mom mother dad father parent kids children son daughter brother sister
  husband wife boyfriend girlfriend partner friend friends birthday home wedding
"""
)
# Words too generic to be keywords even though they are not stopwords.
_GENERIC = _stems(
    "thing things lot something anything everything nothing time times way day today "
    "good great awesome amazing cool nice glad happy sure feel felt make made get got go "
    "going went know think want like love see look say said tell told much many also "
    "really pretty super kind sort stuff photo photography picture image pic yeah wow "
    "one new take took keep come came let us well even still always never"
)

_DECISION_RE = re.compile(
    r"\b(we|i)\s+(have\s+|'ve\s+)?decided\b|\blet'?s\s+go\s+with\b|"
    r"\b(made|make|reached|our|my|final)\s+(a\s+|the\s+)?decision\b|\bdecision\s+is\b|"
    r"\b(we|i)('ll|\s+will)\s+go\s+with\b|\bwe\s+agreed\b|\bwe('re|\s+are)\s+going\s+with\b",
    re.IGNORECASE,
)
_STABLE_RE = re.compile(
    r"\bmy\s+name\s+is\b|\bi\s+live\s+in\b|\bi\s+work\s+(as|at|for)\b|\bi\s+was\s+born\b|"
    r"\bi\s+grew\s+up\b|\bi('m|\s+am)\s+allergic\b|\bmy\s+(birthday|email|phone|address|"
    r"job|wife|husband|partner|son|daughter|mom|mother|dad|father|brother|sister|age|"
    r"hometown|pronouns)\s+(is|are)\b",
    re.IGNORECASE,
)
_PREFERENCE_RE = re.compile(
    r"\b(i|we)\s+(really\s+|absolutely\s+|just\s+|also\s+|totally\s+)?"
    r"(prefer|like|love|hate|dislike|adore|enjoy|can't\s+stand|don't\s+like)\b|"
    r"\b(my|our)\s+(all-time\s+)?favou?rite\b",
    re.IGNORECASE,
)
_BASE_IMPORTANCE = dict(
    stable=0.7, preference=0.65, decision=0.75, knowledge=0.6, episodic=0.45, ephemeral=0.25
)
_DATE_WORDS = _stems(
    "january february march april may june july august september october november "
    "december monday tuesday wednesday thursday friday saturday sunday yesterday "
    "tomorrow week weekend month year"
)


def statement_sentences(text: str) -> list[str]:
    """Sentences that state something (questions are about the other party)."""
    return [s for s in split_sentences(text) if not s.rstrip().endswith("?")]


def classify_kind(fact: ExtractedFact, role: str) -> str:
    """Rule-based kind; rules read the unresolved first-person text."""
    if role == "tool":
        return "ephemeral"
    statements = " ".join(statement_sentences(fact.original))
    for kind, pattern in (
        ("decision", _DECISION_RE),
        ("stable", _STABLE_RE),
        ("preference", _PREFERENCE_RE),
    ):
        if pattern.search(statements):
            return kind
    return "episodic"


def classify_domain(stems: Sequence[str]) -> str:
    """The domain with the most lexicon hits; "general" when none hits."""
    counts = Counter(stems)
    best, best_hits = "general", 0
    for domain, lexicon in DOMAIN_LEXICON.items():
        hits = sum(counts[s] for s in lexicon)
        if hits > best_hits:
            best, best_hits = domain, hits
    return best


def rule_tags(stems: Sequence[str], kind: str) -> list[str]:
    """Up to MAX_RULE_TAGS topical tags by hit count (ties in lexicon order)."""
    counts = Counter(stems)
    scored = [(sum(counts[s] for s in lex), tag) for tag, lex in TAG_LEXICON.items()]
    tags = [tag for hits, tag in sorted(scored, key=lambda x: -x[0]) if hits > 0]
    if kind == "preference":
        tags.insert(0, "preferences")
    return tags[:MAX_RULE_TAGS]


_SURFACE_RE = re.compile(r"\w+(?:['\-.@+_/]\w+)*")
# A run of a script written without spaces is a clause, not a word ("我的妹妹克拉拉在波尔图
# 当护士"): with no dictionary to split it, only its katakana runs (names and loanwords,
# "クララ", "ポルト") are keywords, beside any spaced-script word inside it.
_UNSPACED_RE = re.compile(f"[{UNSPACED_CHARS}]+")
_KATAKANA_RE = re.compile("[\u30a1-\u30fa][\u30a1-\u30fc]+")


def extract_keywords(content: str, *, exclude: Sequence[str] = ()) -> list[str]:
    """Up to MAX_KEYWORDS content keywords, best first, one per stem.

    Ids and codes score highest and keep their casing, then capitalised names (not at a
    sentence start), then other content words; repeats and longer words rank higher.
    Stopwords, generic chat words and `exclude` (e.g. the speaker's name) never appear.
    """
    verbatim = {v.casefold() for v in verbatim_tokens(content)}
    excluded = {stem(e.casefold()) for e in exclude}
    language = text_language(content)
    scores: dict[str, float] = {}
    surface: dict[str, str] = {}
    first: dict[str, int] = {}
    position = 0
    for sentence in split_sentences(content):
        for index, word in enumerate(_surface_words(sentence)):
            low = word.casefold()
            key = stem(low)
            if not content_tokens(low) or key in _GENERIC or key in excluded:
                continue
            if is_function_word(low, language):
                continue  # "в", "моя", "der": the lexical stopwords are English only
            if low.isdigit() and low not in verbatim:
                continue  # small counts ("2 kids") carry no topic
            is_code = low in verbatim
            is_name = word[:1].isupper() and index > 0
            weight = 3.0 if is_code else 2.0 if is_name else 1.0
            if key not in scores:
                first[key] = position
                surface[key] = word if is_code or is_name else low
                scores[key] = weight + (0.3 if len(low) >= 6 else 0.0)
            else:
                scores[key] += 0.5
            position += 1
    ranked = sorted(scores, key=lambda k: (-scores[k], first[k]))
    return [surface[k] for k in ranked[:MAX_KEYWORDS]]


def _surface_words(sentence: str) -> list[str]:
    """The sentence's words, each unspaced-script run replaced by its katakana runs."""
    words: list[str] = []
    for word in _SURFACE_RE.findall(normalise(sentence)):
        if _UNSPACED_RE.search(word):
            words += _KATAKANA_RE.findall(word)
            words += [part for part in _UNSPACED_RE.split(word) if part.strip("'-.@+_/")]
        else:
            words.append(word)
    return words


def estimate_importance(content: str, kind: str, *, speaker: str | None) -> float:
    """0..1: kind sets the base; numbers, dates, names and ids raise it; short chit-chat
    and pure questions lower it."""
    score = _BASE_IMPORTANCE.get(kind, 0.45)
    tokens = content_tokens(content)
    stems = {stem(t) for t in tokens}
    if any(ch.isdigit() for ch in content) or stems & _DATE_WORDS:
        score += 0.05
    names = re.findall(r"(?<![.!?]\s)(?<!^)\b[A-Z][a-z]+", content)
    if any(n != speaker for n in names):
        score += 0.05
    if verbatim_tokens(content):
        score += 0.05
    if len(tokens) < 4:
        score -= 0.15
    if not statement_sentences(content):
        score -= 0.1
    return round(min(1.0, max(0.0, score)), 3)
