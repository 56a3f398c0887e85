"""Whether a prompt asks for anything a memory could answer, and which found memories
have evidence of relevance to it (/v1/context).

Fusion normalises each route's scores per query, so the best candidates of any prompt
pass the retrieval threshold: "thanks!", "lol" or "ok" each put about 1,000 tokens of a
LoCoMo user's notes into /v1/context's block
(`benchmarks/results/locomo-prompts-s21-nogate.json`). An absolute similarity floor does
not tell them apart: with all-MiniLM-L6-v2, chit-chat came within 0.44 of LoCoMo's chatty
notes, while "What music do I like?" reached only 0.24 of "Alice's favourite band is
Radiohead". The write path already knows which sentences carry no information
(`is_filler`: greetings, thanks, reactions, addressee names, function words); a prompt
made only of such sentences has nothing to look up either, and /v1/context answers it
with an empty block. None of LoCoMo's 1,536 questions is one.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from memory.clients.embedder import E5_NAMES, MINILM_MODEL_IDS
from memory.config import Settings
from memory.episodes.extraction import is_filler
from memory.retrieval.hits import SearchHit
from memory.retrieval.text import normalise, split_sentences, word_set

# A shorter speaker name ("Al", "Jo") is too often a word of its own to count as named.
MIN_NAME_CHARS = 3

# Said to an agent, these steer the task at hand rather than ask about the user: "Thank
# you so much!", "perfect", "continue", "next", "great, go ahead", "try again". The write
# path keeps them, since in a captured turn they may be part of what was said.
PROMPT_FILLER_WORDS = word_set(
    """
    much perfect excellent brilliant superb continue next proceed ahead resume try retry
    again carry more
    """
)


def asks_anything(prompt: str) -> bool:
    """False when every sentence of `prompt` is filler, the write path's or one of
    PROMPT_FILLER_WORDS (an empty prompt asks nothing)."""
    return any(
        not is_filler(sentence, also=PROMPT_FILLER_WORDS)
        for line in normalise(prompt).splitlines()
        for sentence in split_sentences(line)
    )


@dataclass(frozen=True)
class EvidenceFloors:
    """Cosines (query to note) below which a prompt, or one memory, has no evidence."""

    prompt: float = 0.0
    hit: float = 0.0


# Chosen on LoCoMo's 1,536 questions and 30 off-topic prompts ("How do I center a div in
# CSS?", "Write a haiku about autumn leaves.") asked of each of its 10 users: the best
# cosine was under 0.30 for 256 of the 300 off-topic asks (230 with an agent session's
# chatter stored too) and for 1 question. LoCoMo's questions name their speakers; a
# user's first-person ask of a note in the third person comes lower ("What is the name of
# my dog?" to "Alice adopted a beagle called Biscuit in 2021.": 0.32), hence no higher
# floor. 1 of the 1,790 evidence memories in the questions' top 20 was under 0.20.
MINILM_FLOORS = EvidenceFloors(prompt=0.30, hit=0.20)
# A prompt whose "I" the dense route read as the user's name (memory.retrieval.first_person)
# comes near every note holding that name: over 5 LoCoMo users' notes in an agent session,
# the 30 off-topic prompts that have a first person rose from a median best cosine of 0.19
# to 0.43 (95th percentile 0.48), while 412 of their questions put in the first person
# rose to at least 0.58 for 95 % of them. Both floors rise by this much for such a prompt.
MINILM_RESOLVED_RAISE = 0.20
# multilingual-e5-small centred per language (memory.clients.e5_embedder), on the same
# LoCoMo asks with "Speaker: text" turns: at 0.30 the best cosine was under the floor for
# 206 of the 300 off-topic asks and for 2 of the 1,540 questions (0.28: 177 and 1; 0.32:
# 229 and 3); of 1,219 evidence turns in the dense top 20 of their questions, none was
# under 0.22 and 1 under 0.25.
E5_FLOORS = EvidenceFloors(prompt=0.30, hit=0.20)
# Not measured for e5 apart: MiniLM's, whose cosines spread alike once e5's are centred.
E5_RESOLVED_RAISE = MINILM_RESOLVED_RAISE
# Speakers' names that are roles, not people: a prompt saying "the assistant" names nobody.
_ROLE_NAMES = frozenset({"user", "assistant", "tool", "system", "agent", "main"})


def evidence_floors(settings: Settings, *, resolved: bool = False) -> EvidenceFloors:
    """The configured floors; where unset, the embedder's own (none for an embedder whose
    cosines have not been measured against off-topic prompts). `resolved`: the prompt's
    first person was read as the user's name, and each floor that is on is raised."""
    embedding, retrieval = settings.embedding, settings.retrieval
    own, raise_by = EvidenceFloors(), 0.0
    local = embedding.provider in ("onnx", "sentence-transformers")
    if local and embedding.model in MINILM_MODEL_IDS:
        own, raise_by = MINILM_FLOORS, MINILM_RESOLVED_RAISE
    elif embedding.provider == "e5" and embedding.model in E5_NAMES:
        own, raise_by = E5_FLOORS, E5_RESOLVED_RAISE
    prompt, hit = retrieval.context_min_similarity, retrieval.context_min_hit_similarity
    prompt = own.prompt if prompt is None else prompt
    hit = own.hit if hit is None else hit
    if resolved:
        prompt, hit = (min(1.0, f + raise_by) if f > 0 else 0.0 for f in (prompt, hit))
    return EvidenceFloors(prompt=prompt, hit=hit)


def names_a_speaker(prompt: str, hits: Sequence[SearchHit]) -> bool:
    """Whether the prompt names, as a whole word, a person who said one of the hits."""
    speakers = {h.note.speaker for h in hits if h.note.speaker}
    return any(
        len(name) >= MIN_NAME_CHARS
        and name.casefold() not in _ROLE_NAMES
        and re.search(rf"(?<!\w){re.escape(name)}(?!\w)", prompt, re.IGNORECASE)
        for name in speakers
    )


def evidenced(hits: Sequence[SearchHit], prompt: str, floors: EvidenceFloors) -> list[SearchHit]:
    """The hits with evidence of relevance to `prompt`, in their order: none when the best
    known cosine is under `floors.prompt` and the prompt names none of their speakers;
    else those whose cosine is unknown (found by words or by their neighbours) or at least
    `floors.hit`. Without any known cosine (the dense route did not run) all are kept."""
    known = [h.similarity for h in hits if h.similarity is not None]
    if not known:
        return list(hits)
    if max(known) < floors.prompt and not names_a_speaker(prompt, hits):
        return []
    return [h for h in hits if h.similarity is None or h.similarity >= floors.hit]
