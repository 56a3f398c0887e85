"""The shared lexical analyser: one definition of "term" for write time and query time.

Invariants:
- `tokenize` is deterministic, lowercase (casefolded) and unicode-aware; the same text
  always yields the same tokens, so index terms and query terms agree.
- `analyse(text)` == stemmed `tokenize(text)` minus `STOPWORDS`, in text order, with
  duplicates kept (BM25 needs term frequencies). Tokens holding digits or joiners
  (ids, emails, decimals) are never stemmed.
- Scripts without spaces between words (Chinese, Japanese, Thai, Lao, Khmer, Myanmar)
  yield overlapping character bigrams of each run ("我喜欢喝茶" → 我喜 喜欢 欢喝 喝茶);
  only ASCII words are stemmed (English Snowball), other languages' words stay whole.
- Identifiers survive whole: "INC-4471" yields "inc-4471" and also its parts "inc" and
  "4471", so both the exact id and a partial mention match. Plain hyphenated words
  ("self-care") yield only their parts, so "self care" and "self-care" agree.
"""

from __future__ import annotations

import re
import unicodedata
from datetime import datetime
from functools import lru_cache

import snowballstemmer

from memory.language import word_set

# English function words plus chat contractions and question words. Month names, "may",
# numbers and negation-bearing content verbs are deliberately absent: "When ... in May?"
# must still match a note dated May.
STOPWORDS: frozenset[str] = word_set(
    """
    a about above after again against all also am an and any are aren't as at be because
    been before being below between both but by can can't cannot could couldn't did didn't
    do does doesn't doing don't down during each either else ever few for from further get
    gets got had hadn't has hasn't have haven't having he he'd he'll he's her here here's
    hers herself him himself his how how's however i i'd i'll i'm i've if in into is isn't
    it it'd it'll it's its itself just let's me might mightn't mine more most must mustn't
    my myself neither no nor not now of off on once only or other ought our ours ourselves
    out over own same shall shan't she she'd she'll she's should shouldn't so some such
    than that that'll that's the their theirs them themself themselves then there there's these
    they they'd they'll they're they've this those through to too under until up upon us
    very was wasn't we we'd we'll we're we've were weren't what what's whatever when
    when's whenever where where's whereas wherever whether which while who who's whoever
    whom whose why why's will with won't would wouldn't you you'd you'll you're you've
    your yours yourself yourselves
    s t d ll m o re ve y don won didn doesn isn wasn aren weren hasn haven hadn couldn
    wouldn shouldn ain im ive id dont didnt doesnt isnt wasnt cant wont thats whats youre
    yeah yep yes oh ok okay um uh hmm lol haha hey hi hello thanks thank please really
    gonna wanna gotta kinda sorta etc
    """
)

_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'", "\uff07": "'"})
_DASHES = str.maketrans({"\u2010": "-", "\u2011": "-", "\u2012": "-", "\u2013": "-"})

_EMAIL = r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+"
_URL = r"(?:https?://|www\.)[^\s<>\"']+"
# Scripts written without spaces between words: Thai, Lao, Myanmar, Khmer, kana, CJK
# ideographs (with the iteration mark 々). A run of them is indexed as overlapping
# character bigrams, as CJK search engines without a dictionary do.
UNSPACED_CHARS = (
    "\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u3005\u3040-\u30ff\u31f0-\u31ff"
    "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
)
_UNSPACED = f"[{UNSPACED_CHARS}]+"
# A word: letters/digits/underscores of spaced scripts, optionally joined by - . / : , + #
# or an apostrophe, each joiner followed by more word characters (so a trailing period is
# never kept).
_W = f"[^\\W{UNSPACED_CHARS}]"
_WORD = f"{_W}+(?:(?:['\\-./:,+#]|_){_W}+)*"
_TOKEN_RE = re.compile(f"({_URL})|({_EMAIL})|({_UNSPACED})|({_WORD})", re.UNICODE)
_JOINERS_RE = re.compile(r"[\-./:,+#_]")
_THOUSANDS_RE = re.compile(r"^\d{1,3}(?:,\d{3})+(?:\.\d+)?$")
_NUMBER_RE = re.compile(r"^\d+(?:[.:]\d+)*$")
_POSSESSIVE_RE = re.compile(r"'s$|'$")

_stemmer = snowballstemmer.stemmer("english")
# Forms Snowball leaves apart from their base but which first-person resolution creates
# ("I go" -> "Melanie goes"): mapped so resolved notes still match "go" in queries.
_STEM_EXCEPTIONS = {"goes": "go"}


def normalise(text: str) -> str:
    """NFKC, typographic apostrophes and dashes folded to ASCII; casing kept."""
    return unicodedata.normalize("NFKC", text).translate(_APOSTROPHES).translate(_DASHES)


def _split_compound(word: str) -> list[str]:
    """Tokens for one matched word (already casefolded), per the module invariants."""
    if _THOUSANDS_RE.match(word):
        return [word.replace(",", "")]
    if _NUMBER_RE.match(word):
        return [word]  # decimals and clock times stay whole: "3.5", "1:56"
    if not _JOINERS_RE.search(word):
        return [word]
    parts = [p for p in _JOINERS_RE.split(word) if p]
    if any(ch.isdigit() for ch in word) or "_" in word:
        return [word, *parts]  # an identifier: keep it whole as well as its parts
    return parts


def _raw_matches(text: str) -> list[tuple[str, str]]:
    """(kind, surface) pairs in order; kind is "url", "email" or "word"."""
    out: list[tuple[str, str]] = []
    for match in _TOKEN_RE.finditer(normalise(text)):
        url, email, unspaced, word = match.groups()
        if url:
            out.append(("url", url.rstrip(".,;:!?)")))
        elif email:
            out.append(("email", email))
        elif unspaced:
            out.append(("unspaced", unspaced))
        else:
            out.append(("word", word))
    return out


def _bigrams(run: str) -> list[str]:
    """Overlapping character pairs of a run of an unspaced script; one character alone."""
    return [run] if len(run) < 3 else [run[i : i + 2] for i in range(len(run) - 1)]


# A "word" longer than this (a base64 blob, a run of one character in a pasted log) is no
# term anyone searches for, and PostgreSQL refuses tsvector words over 2,046 bytes.
MAX_TOKEN_CHARS = 200


def tokenize(text: str) -> list[str]:
    """Lowercase unicode word tokens; ids, emails and decimals kept whole (see module doc).

    URLs contribute their host and path words (not the whole URL); emails are kept whole
    and also split into their local part and domain words. Tokens longer than
    MAX_TOKEN_CHARS are left out.
    """
    return [t for t in _tokens(text) if len(t) <= MAX_TOKEN_CHARS]


def _tokens(text: str) -> list[str]:
    tokens: list[str] = []
    for kind, surface in _raw_matches(text):
        low = surface.casefold()
        if kind == "email":
            tokens.append(low)
            tokens.extend(p for p in re.split(r"[@.+\-_]", low) if p)
        elif kind == "url":
            tokens.extend(p for p in re.split(r"[^\w]+", low) if p and p not in ("http", "https"))
        elif kind == "unspaced":
            tokens.extend(_bigrams(low))
        else:
            tokens.extend(t.strip("_") for t in _split_compound(low) if t.strip("_"))
    return tokens


@lru_cache(maxsize=65536)
def stem(token: str) -> str:
    """Snowball English stem of one lowercase token, possessive 's stripped first.

    Tokens with digits or joiners (ids, emails, numbers) are returned unchanged, and so are
    words with letters outside ASCII ("niños", "hände", "книги"): English suffix rules
    would cut other languages' words wrongly.
    """
    token = _POSSESSIVE_RE.sub("", token) or token
    if not token.isalpha() or not token.isascii():
        return token
    return _STEM_EXCEPTIONS.get(token) or _stemmer.stemWord(token)


def is_stopword(token: str) -> bool:
    return token in STOPWORDS or _POSSESSIVE_RE.sub("", token) in STOPWORDS


def analyse(text: str) -> list[str]:
    """Index/query terms: tokens minus stopwords, stemmed; numbers kept; order kept."""
    return [stem(t) for t in tokenize(text) if not is_stopword(t)]


def content_tokens(text: str) -> list[str]:
    """Unstemmed tokens minus stopwords (what counts as a "content word")."""
    return [t for t in tokenize(text) if not is_stopword(t)]


def _looks_verbatim(kind: str, surface: str) -> bool:
    if kind == "email":
        return True
    if kind in ("url", "unspaced"):
        return False
    has_digit = any(ch.isdigit() for ch in surface)
    has_alpha = any(ch.isalpha() for ch in surface)
    if has_digit and has_alpha:
        return True  # a1b2c3, INC-4471, v2.3, 3D
    if has_digit:
        return len(re.sub(r"\D", "", surface)) >= 3 and not _THOUSANDS_RE.match(surface)
    if "_" in surface.strip("_"):
        return True  # snake_case identifiers
    letters = [ch for ch in surface if ch.isalpha()]
    if len(letters) >= 2 and all(ch.isupper() for ch in letters):
        return surface.casefold() not in STOPWORDS  # codes: LGBTQ, AWS, SKU-AB
    # camelCase / internal capitals: iPhone, OpenClaw, pgVector
    return any(ch.isupper() for ch in surface[1:]) and any(ch.islower() for ch in surface)


def verbatim_tokens(text: str) -> list[str]:
    """Id-like tokens in their original casing, deduplicated case-insensitively.

    Covers emails, letter+digit mixes, numbers of 3+ digits, snake_case, ALL-CAPS codes
    and camelCase names: what an exact or trigram route should match verbatim.
    """
    seen: set[str] = set()
    out: list[str] = []
    for kind, surface in _raw_matches(text):
        if _looks_verbatim(kind, surface) and surface.casefold() not in seen:
            seen.add(surface.casefold())
            out.append(surface)
    return out


def date_terms(dt: datetime) -> str:
    """Date words appended to indexed text so "When…"/month/year questions match.

    Example: 2023-05-08 -> "8 May 2023 May 2023 Monday". Uses English names regardless
    of locale (strftime %B would follow the process locale).
    """
    month = _MONTHS[dt.month - 1]
    weekday = _WEEKDAYS[dt.weekday()]
    return f"{dt.day} {month} {dt.year} {month} {dt.year} {weekday}"


_MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


# Abbreviations whose trailing period does not end a sentence (lowercase, without the
# final period). "etc" is handled separately: it ends a sentence before a capital.
_ABBREVIATIONS = word_set(
    """
    mr mrs ms dr prof sr jr st mt ft vs approx dept est inc ltd co corp jan feb mar apr
    jun jul aug sep sept oct nov dec mon tue wed thu fri sat sun no nos vol fig e.g i.e
    a.m p.m u.s u.k cf al gen col lt sgt capt rev hon
    """
)
_BOUNDARY_RE = re.compile(r"([.!?\u2026]+)([\"'\u201d)\]]*)(\s+)")
_EMOJI_BOUNDARY_RE = re.compile(
    "([\u2600-\u27bf\U0001f300-\U0001faff\U0001f000-\U0001f2ff]+\ufe0f?)(\\s+)(?=[A-Z])"
)
_PROTECTED_RE = re.compile(f"{_URL}|{_EMAIL}")


def _word_before(text: str, end: int) -> str:
    start = end
    while start > 0 and not text[start - 1].isspace():
        start -= 1
    return text[start:end].lstrip("(\"'").casefold()


def _is_boundary(text: str, match: re.Match[str], protected: list[tuple[int, int]]) -> bool:
    punct, start, after = match.group(1), match.start(1), match.end()
    if any(a <= start < b for a, b in protected):
        return False
    next_upper = after < len(text) and (text[after].isupper() or text[after].isdigit())
    if punct in ("...", "\u2026") or (len(punct) > 1 and set(punct) == {"."}):
        return next_upper  # "I was thinking... maybe not" stays one sentence
    if punct != ".":
        return True
    word = _word_before(text, start)
    if word == "etc":
        return next_upper
    # "Dr. Smith", "e.g. this" and initials "J. Doe" do not end a sentence
    return not (word in _ABBREVIATIONS or (len(word) == 1 and word.isalpha()))


def _trimmed_span(match: re.Match[str]) -> tuple[int, int]:
    """Span of a URL/email without trailing punctuation (which may end the sentence)."""
    return match.start(), match.start() + len(match.group().rstrip(".,;:!?)\"'"))


def split_sentences(text: str) -> list[str]:
    """Sentences of chat or prose text, stripped, never empty, in order.

    Line breaks always separate; "." after abbreviations, initials, inside URLs, emails
    and decimals does not; ellipses and emoji separate only before a capital letter.
    Concatenating the result with spaces loses no word of the input.
    """
    out: list[str] = []
    for line in normalise(text).splitlines():
        protected = [_trimmed_span(m) for m in _PROTECTED_RE.finditer(line)]
        cuts = [m.end(2) for m in _BOUNDARY_RE.finditer(line) if _is_boundary(line, m, protected)]
        cuts += [m.end(1) for m in _EMOJI_BOUNDARY_RE.finditer(line)]
        start = 0
        for cut in sorted(set(cuts)):
            out.append(line[start:cut])
            start = cut
        out.append(line[start:])
    return [s.strip() for s in out if s.strip()]
