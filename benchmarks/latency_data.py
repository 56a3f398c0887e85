"""Synthetic users for the latency benchmark: note texts, terms and vectors, fast.

Texts come from topic vocabularies, sentence templates, per-user people, places and ids
(INC-1234, PR-512 ...) plus a Zipf-distributed long tail of English words (the MiniLM
vocabulary, which is roughly frequency-ordered), so term statistics look like chat
memories. Vectors: the real embedder embeds a few thousand phrases once ("topic: word",
names, places, template frames); a note's vector is the normalised mix of the phrases its
text was built from plus Gaussian noise, and its window vector mixes in its session
neighbours, so neighbourhoods follow topics, words and people like real embeddings do.
Sparse vectors likewise: the real SPLADE-tiny encoder encodes the same phrases once, and a
note's sparse vector is the term-wise maximum of its phrases' (SPLADE pools by maximum),
74 non-zero terms on average (48-99 for a 10k user) against about 95 for a LoCoMo turn.
Everything is deterministic for a given seed and user.
"""

from __future__ import annotations

import json
import random
import zlib
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import lru_cache

import numpy as np

from memory.clients.embedder import default_tokenizer_path
from memory.retrieval.text import STOPWORDS

TOPICS: dict[str, tuple[str, str]] = {
    # name: (domain, words)
    "hiking": ("travel", "trail summit boots backpack tent camping ridge waterfall map compass"),
    "cooking": ("general", "recipe pasta oven garlic sauce dough spices curry bread soup"),
    "running": ("health", "marathon pace shoes intervals knee race stretching miles tempo"),
    "kubernetes": ("tech", "cluster pod deployment helm ingress node namespace kubectl"),
    "database": ("tech", "postgres index query migration replica schema vacuum backup"),
    "frontend": ("tech", "react component css layout browser bundle typescript button"),
    "mortgage": ("finance", "loan rate bank payment refinance house deposit lender"),
    "budget": ("finance", "spending savings groceries rent subscriptions expenses invoice"),
    "investing": ("finance", "stocks portfolio dividends index fund pension bonds crypto"),
    "kids": ("personal", "school homework daughter son teacher soccer birthday bedtime"),
    "wedding": ("personal", "venue dress guests cake photographer invitations ceremony"),
    "parents": ("personal", "mother father visit hospital phone call retirement garden"),
    "doctor": ("health", "appointment blood test prescription allergy dentist checkup"),
    "therapy": ("health", "therapist anxiety sleep stress journaling meditation session"),
    "gym": ("health", "weights squat bench protein trainer routine cardio membership"),
    "travel": ("travel", "flight hotel passport itinerary visa airport luggage train"),
    "car": ("general", "engine tires mechanic insurance oil service battery brakes"),
    "garden": ("general", "tomatoes roses soil compost seeds watering shed lawn"),
    "music": ("general", "guitar concert album piano band lyrics vinyl festival"),
    "books": ("general", "novel author chapter library poetry kindle fantasy series"),
    "movies": ("general", "film director cinema trailer actor netflix documentary"),
    "pets": ("personal", "dog cat vet walk leash puppy food adoption shelter"),
    "meetings": ("work", "standup agenda manager roadmap sprint retro stakeholder"),
    "hiring": ("work", "interview candidate offer recruiter resume onboarding salary"),
    "incidents": ("work", "outage pager alert postmortem latency rollback incident"),
    "sales": ("work", "client contract proposal pricing demo quarter pipeline deal"),
    "design": ("work", "mockup figma prototype feedback wireframe branding logo"),
    "learning": ("general", "course spanish lessons exam certificate tutor vocabulary"),
    "home": ("general", "kitchen renovation plumber paint furniture sofa apartment"),
    "food": ("general", "restaurant sushi brunch coffee bakery vegan dinner pizza"),
    "volunteering": ("personal", "charity shelter donation community fundraiser event"),
    "photography": ("general", "camera lens portrait sunset editing lightroom tripod"),
    "gaming": ("general", "console multiplayer quest level controller steam stream"),
    "security": ("tech", "password vulnerability patch firewall token encryption audit"),
    "ml": ("tech", "model training dataset embeddings gpu evaluation accuracy"),
    "climbing": ("health", "bouldering gym rope harness chalk route belay crag"),
}
TOPIC_KIND = {
    "meetings": "decision",
    "sales": "decision",
    "ml": "knowledge",
    "database": "knowledge",
    "security": "knowledge",
    "food": "preference",
    "music": "preference",
    "movies": "preference",
    "home": "stable",
    "kids": "stable",
}


def _split(words: str) -> list[str]:
    return words.split()


NAMES = _split(
    "Maria Jon Priya Ahmed Lena Tom Sofia Kenji Aisha Lucas Emma Omar Chloe Diego Nina Raj "
    "Hannah Felix Zoe Ivan Mei Samuel Laura Yusuf Clara Pedro Anya Ben Fatima Leo Grace "
    "Marco Ines Hugo Olga Ravi Elena Tariq Julia Arjun Sara Noah Lily Mateo Eva Karim Rosa"
)
PLACES = _split(
    "Lisbon Berlin Denver Kyoto Toronto Madrid Austin Oslo Dublin Seattle Prague Nairobi "
    "Lyon Boston Porto Vienna Melbourne Chicago Bergen Sevilla Zurich Krakow Tucson Bristol"
)
DAYS = _split("Monday Tuesday Wednesday Thursday Friday Saturday Sunday weekend")
ID_PREFIXES = ("INC", "PR", "TKT", "ORD", "JIRA", "CASE")
TEMPLATES: tuple[tuple[str, str], ...] = (
    ("episodic", "{who} talked with {friend} about the {w1} and the {w2}."),
    ("decision", "{who} decided to go with the {w1} for the {w2} plan after talking to {friend}."),
    ("preference", "{who} prefers {w1} over {w2}, especially when {friend} is around."),
    ("episodic", "{who} spent {num} hours on the {w1} in {place} last {day}."),
    ("episodic", "{friend} recommended a {w1} and a {w2} to {who}."),
    ("episodic", "{who} has to fix {id} before the {w1} review on {day}."),
    ("episodic", "{who} is worried that the {w1} will affect the {w2}."),
    ("episodic", "{who} bought a new {w1} for {num} dollars in {place}."),
    ("episodic", "{who} and {friend} moved the {w1} and {w2} plans to {day}."),
    ("episodic", "The {w1} in {place} reminded {who} of {friend}'s {w2}."),
    ("stable", "{who} lives in {place} and keeps a {w1} for the {w2}."),
    ("knowledge", "{who} learned that the {w1} needs a regular {w2} check, see {id}."),
    ("episodic", "{who} asked {friend} whether the {w1} could wait until {day}."),
    ("ephemeral", "Reminder for {who}: bring the {w1} to {place} on {day}."),
)
TAILS = (
    " It felt {t1} and a bit {t2}.",
    " {who} also mentioned the {t1} and {t2} {t3}.",
    " Later the {t1} came up again.",
    "",
)
QUESTIONS = (
    "What did {friend} say about the {w1}?",
    "When did {who} go to {place} for the {w1}?",
    "What does {who} think about the {w1} and the {w2}?",
    "What is the status of {id}?",
    "What did we decide about the {w1} {topic} plan?",
    "Tell me about {who}'s {topic} plans with {friend}",
    "Has {who} mentioned the {w2} recently?",
    "Why was {who} worried about the {w1}?",
)
PROMPTS = (
    "Can you help me prepare for the {topic} chat with {friend} about the {w1}?",
    "Remind me what happened with {id} and the {w1}",
    "I want to plan something around {topic} in {place} this {day}, any ideas?",
    "Draft a message to {friend} about the {w2}",
)


@lru_cache(maxsize=1)
def tail_vocabulary() -> tuple[str, ...]:
    """Alphabetic whole words of the MiniLM vocabulary, roughly most frequent first."""
    with open(default_tokenizer_path()) as handle:
        vocab = json.load(handle)["model"]["vocab"]
    return tuple(
        k for k in vocab if k.isascii() and k.isalpha() and len(k) >= 4 and k not in STOPWORDS
    )


@dataclass
class Profile:
    """One synthetic user: who they are, whom they talk about, what, where."""

    user_id: str
    size: int
    seed: int
    speaker: str
    friends: list[str]
    places: list[str]
    topic_weights: np.ndarray
    ids: list[str] = field(default_factory=list)


def make_profile(user_id: str, size: int, seed: int) -> Profile:
    rng = random.Random(f"{seed}:{user_id}")
    speaker, *friends = rng.sample(NAMES, 13)
    weights = np.random.default_rng(rng.randrange(2**32)).dirichlet([0.4] * len(TOPICS))
    ids = [f"{rng.choice(ID_PREFIXES)}-{rng.randrange(100, 99999)}" for _ in range(size // 40 + 5)]
    return Profile(user_id, size, seed, speaker, friends, rng.sample(PLACES, 8), weights, ids)


@dataclass
class Draft:
    """The generated parts of one note, before terms and vectors."""

    content: str
    speaker: str
    kind: str
    domain: str
    topic: int
    words: tuple[int, int]
    friend: int
    template: int
    occurred_at: datetime
    session: int


def _words(topic: str) -> list[str]:
    return TOPICS[topic][1].split()


def _fill(rng: random.Random, profile: Profile, topic: str, pattern: str) -> tuple[str, dict]:
    words = _words(topic)
    w1, w2 = rng.sample(words, 2)
    tail = tail_vocabulary()
    slots = {
        "who": profile.speaker,
        "friend": rng.choice(profile.friends),
        "place": rng.choice(profile.places),
        "day": rng.choice(DAYS),
        "topic": topic,
        "w1": w1,
        "w2": w2,
        "num": rng.randrange(2, 400),
        "id": rng.choice(profile.ids),
        "t1": _zipf(rng, tail),
        "t2": _zipf(rng, tail),
        "t3": _zipf(rng, tail, 0.6),
    }
    return pattern.format(**slots), slots


def _zipf(rng: random.Random, words: tuple[str, ...], alpha: float = 0.9) -> str:
    """A long-tail word: rank ~ Pareto(alpha), so a few words are common, most are rare."""
    return words[min(int((rng.paretovariate(alpha) - 1) * 40), len(words) - 1)]


def user_drafts(profile: Profile, *, end: datetime, span_days: int = 730) -> list[Draft]:
    """The user's notes in time order, grouped in sessions of 5-30 notes."""
    rng = random.Random(f"drafts:{profile.seed}:{profile.user_id}")
    names = list(TOPICS)
    start = end - timedelta(days=span_days)
    step = timedelta(days=span_days) / max(profile.size, 1)
    drafts: list[Draft] = []
    session, left, topic = 0, 0, names[0]
    for index in range(profile.size):
        if left == 0:
            session, left = session + 1, rng.randrange(5, 31)
            topic = rng.choices(names, weights=profile.topic_weights)[0]
        left -= 1
        if rng.random() < 0.15:  # a digression inside the session
            topic = rng.choices(names, weights=profile.topic_weights)[0]
        t_index = rng.randrange(len(TEMPLATES))
        kind, pattern = TEMPLATES[t_index]
        text, slots = _fill(rng, profile, topic, pattern + rng.choice(TAILS))
        kind = TOPIC_KIND.get(topic, kind) if kind == "episodic" and rng.random() < 0.3 else kind
        words = _words(topic)
        speaker = profile.speaker if rng.random() < 0.8 else "assistant"
        drafts.append(
            Draft(
                content=text,
                speaker=speaker,
                kind=kind,
                domain=TOPICS[topic][0],
                topic=names.index(topic),
                words=(words.index(slots["w1"]), words.index(slots["w2"])),
                friend=profile.friends.index(slots["friend"]),
                template=t_index,
                occurred_at=start + step * index + timedelta(seconds=rng.randrange(60)),
                session=session,
            )
        )
    return drafts


def questions(profile: Profile, count: int, *, prompts: bool, salt: str) -> list[str]:
    """`count` distinct questions (or /v1/context prompts) about this user's memories."""
    rng = random.Random(f"q:{salt}:{profile.seed}:{profile.user_id}")
    names = list(TOPICS)
    patterns = PROMPTS if prompts else QUESTIONS
    out: dict[str, None] = {}
    while len(out) < count:
        topic = rng.choices(names, weights=profile.topic_weights)[0]
        out[_fill(rng, profile, topic, rng.choice(patterns))[0]] = None
    return list(out)


# ------------------------------------------------------------------------- vectors


@dataclass
class PhraseSpace:
    """Real embeddings of the phrases notes are built from."""

    words: np.ndarray  # (topics, max words, dim): "topic: word"
    names: dict[str, np.ndarray]
    templates: np.ndarray  # (templates, dim)
    # The same phrases' sparse vectors (term → weight), when an encoder was given.
    sparse_words: list[list[dict[int, float]]] = field(default_factory=list)
    sparse_names: dict[str, dict[int, float]] = field(default_factory=dict)
    sparse_templates: list[dict[int, float]] = field(default_factory=list)


def build_phrase_space(embed: object, encode_sparse: object = None) -> PhraseSpace:
    """Embed every "topic: word", every name and place and every template frame once (and
    encode each as a sparse vector with `encode_sparse`, when given)."""
    names = list(TOPICS)
    width = max(len(_words(t)) for t in names)
    texts = [f"{t}: {w}" for t in names for w in _words(t)]
    people = list(NAMES) + list(PLACES)
    frames = [
        p.format(
            who="someone",
            friend="a friend",
            place="town",
            day="day",
            w1="thing",
            w2="other thing",
            num=3,
            id="ticket",
            topic="topic",
        )
        for _, p in TEMPLATES
    ]
    vectors = embed(texts + people + frames)  # type: ignore[operator]
    words = np.zeros((len(names), width, vectors.shape[1]), dtype=np.float32)
    row = 0
    for i, t in enumerate(names):
        n = len(_words(t))
        words[i, :n] = vectors[row : row + n]
        row += n
    named = {p: vectors[row + j] for j, p in enumerate(people)}
    space = PhraseSpace(words, named, vectors[row + len(people) :])
    if encode_sparse is not None:
        sparse = [encode_sparse(text) for text in texts + people + frames]  # type: ignore[operator]
        row = 0
        for t in names:
            n = len(_words(t))
            space.sparse_words.append(sparse[row : row + n])
            row += n
        space.sparse_names = {p: sparse[row + j] for j, p in enumerate(people)}
        space.sparse_templates = sparse[row + len(people) :]
    return space


def note_sparse_vectors(
    drafts: list[Draft], profile: Profile, space: PhraseSpace
) -> list[dict[int, float]]:
    """Each draft's sparse vector: the term-wise maximum of its two words', its friend's
    and its template's; empty without the space's sparse vectors."""
    if not space.sparse_words:
        return [{} for _ in drafts]
    out = []
    for d in drafts:
        parts = (
            space.sparse_words[d.topic][d.words[0]],
            space.sparse_words[d.topic][d.words[1]],
            space.sparse_names[profile.friends[d.friend]],
            space.sparse_templates[d.template],
        )
        pooled: dict[int, float] = {}
        for part in parts:
            for term, weight in part.items():
                if weight > pooled.get(term, 0.0):
                    pooled[term] = weight
        out.append(pooled)
    return out


def note_vectors(
    drafts: list[Draft], profile: Profile, space: PhraseSpace, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """(embedding, window_embedding) rows for the drafts, unit length, float32."""
    rng = np.random.default_rng(zlib.crc32(f"{seed}:{profile.user_id}".encode()))
    topic = np.array([d.topic for d in drafts])
    w1 = np.array([d.words[0] for d in drafts])
    w2 = np.array([d.words[1] for d in drafts])
    friends = np.stack([space.names[f] for f in profile.friends])
    mix = 0.5 * (space.words[topic, w1] + space.words[topic, w2])
    mix += 0.35 * friends[[d.friend for d in drafts]]
    mix += 0.25 * space.templates[[d.template for d in drafts]]
    dim = mix.shape[1]
    mix += rng.standard_normal(mix.shape).astype(np.float32) * (0.55 / np.sqrt(dim))
    own = _unit(mix)
    session = np.array([d.session for d in drafts])
    prev = np.vstack([own[:1], own[:-1]])
    nxt = np.vstack([own[1:], own[-1:]])
    same_prev = (np.r_[-1, session[:-1]] == session)[:, None]
    same_next = (np.r_[session[1:], -1] == session)[:, None]
    window = own + 0.5 * prev * same_prev + 0.5 * nxt * same_next
    return own, _unit(window)


def _unit(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return np.ascontiguousarray(matrix / np.maximum(norms, 1e-12), dtype=np.float32)
