"""Note construction: rules, explicit overrides and the texts the read path indexes."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from memory.config import Settings, load_settings
from memory.episodes.extraction import ExtractedFact, clean_sentences, extract_facts
from memory.errors import InvalidInputError
from memory.notes.construct import (
    CONTEXT_CHARS,
    MAX_KEYWORDS,
    NoteDraft,
    construct_note,
    extract_keywords,
)
from memory.retrieval.text import analyse, content_tokens

WHEN = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
LOCOMO = Path(__file__).parents[3].parent / "shared" / "eval" / "locomo10.json"


@pytest.fixture(scope="module")
def plain() -> Settings:
    return load_settings(visibility={"default_visibility": "scoped", "domain_rules": {}})


def note(
    text: str,
    settings: Settings,
    *,
    role: str = "user",
    speaker: str | None = "Melanie",
    explicit: dict[str, Any] | None = None,
) -> NoteDraft:
    [fact] = extract_facts(text, role=role, speaker=speaker, occurred_at=WHEN, metadata={})
    return construct_note(
        fact,
        role=role,
        agent_id="agent-1",
        explicit=explicit or {},
        settings=settings,
    )


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("I love hiking in the mountains.", "preference"),
        ("My favorite band is Queen.", "preference"),
        ("We decided to use Postgres for the store.", "decision"),
        ("Let's go with the blue design.", "decision"),
        ("Our final decision is to rent.", "decision"),
        ("It's normal to be nervous with a big decision.", "episodic"),
        ("My name is Melanie and I live in Boston.", "stable"),
        ("I work as a nurse at the city hospital.", "stable"),
        ("I went to the beach with the kids yesterday.", "episodic"),
        ("Do you like hiking?", "episodic"),
    ],
)
def test_kind_rules(text: str, kind: str, plain: Settings) -> None:
    assert note(text, plain).kind == kind


def test_tool_results_are_ephemeral_unless_explicit(plain: Settings) -> None:
    assert note("Build 4471 passed.", plain, role="tool", speaker=None).kind == "ephemeral"
    explicit = {"kind": "knowledge"}
    assert note("Build 4471 passed.", plain, role="tool", explicit=explicit).kind == "knowledge"


@pytest.mark.parametrize(
    ("text", "domain"),
    [
        ("My doctor changed my medication after the diagnosis.", "health"),
        ("I moved my savings into an investment account at the bank.", "finance"),
        ("My boss moved the project deadline to Friday.", "work"),
        ("We booked the flight and the hotel for the trip.", "travel"),
        ("The sunset over the lake was pretty.", "general"),
    ],
)
def test_domain_rules(text: str, domain: str, plain: Settings) -> None:
    assert note(text, plain).domain == domain


def test_visibility_follows_domain_rules_then_default_then_explicit() -> None:
    settings = load_settings(
        visibility={"default_visibility": "open", "domain_rules": {"health": "user-only"}}
    )
    text = "My doctor changed my medication."
    assert note(text, settings).visibility == "user-only"
    assert note("The lake was pretty.", settings).visibility == "open"
    assert note(text, settings, explicit={"visibility": "private"}).visibility == "private"
    assert note(text, settings, explicit={"domain": "work"}).visibility == "open"


@pytest.mark.parametrize(
    "explicit",
    [{"kind": "gossip"}, {"visibility": "public"}, {"ttl": "forever"}, {"importance": 2},
     {"tags": "work"}],
)  # fmt: skip
def test_invalid_explicit_values_are_rejected(explicit: dict[str, Any], plain: Settings) -> None:
    with pytest.raises(InvalidInputError):
        note("I love hiking.", plain, explicit=explicit)


def test_ttl_is_relative_to_occurred_at(plain: Settings) -> None:
    assert note("x y z", plain, explicit={"ttl": "session"}).ttl_expires_at == WHEN + timedelta(1)
    assert note("x y z", plain, explicit={"ttl": "short"}).ttl_expires_at == WHEN + timedelta(14)
    assert note("x y z", plain, explicit={"ttl": "permanent"}).ttl_expires_at is None
    assert note("x y z", plain).ttl_expires_at is None


def test_tags_combine_explicit_and_topical_rules(plain: Settings) -> None:
    draft = note(
        "I love taking my kids and our dog to the beach.", plain, explicit={"tags": ["Summer"]}
    )
    assert draft.tags[0] == "Summer"
    assert {"preferences", "family", "pets"} <= set(draft.tags)
    assert len(draft.tags) == len({t.casefold() for t in draft.tags})


def test_importance_ranks_durable_facts_above_chit_chat(plain: Settings) -> None:
    durable = note("My name is Melanie and I live in Boston since 2019.", plain)
    chat = note("That is so nice to hear!", plain)
    question = note("What's new with you?", plain)
    assert 0 <= question.importance < chat.importance < durable.importance <= 1
    assert note("That is nice!", plain, explicit={"pinned": True}).importance >= 0.9
    assert note("Fine.", plain, explicit={"importance": 0.33}).importance == 0.33


def test_keywords_are_content_words_ids_first_speaker_excluded(plain: Settings) -> None:
    draft = note(
        "I fixed INC-4471 for Dave; the painting paintings were painted at the studio.", plain
    )
    assert draft.keywords[0] == "INC-4471"
    assert "Dave" in draft.keywords
    assert "Melanie" not in draft.keywords
    stems = [analyse(k)[0] for k in draft.keywords if analyse(k)]
    assert len(stems) == len(set(stems))
    assert len(extract_keywords(" ".join(f"word{i}x topic{i}" for i in range(30)))) == MAX_KEYWORDS


def test_context_is_one_short_line_with_the_speaker(plain: Settings) -> None:
    draft = note("Hey! " + "I walked along the beautiful river for hours and hours. " * 6, plain)
    assert draft.context.startswith("Melanie: Melanie walked")
    assert len(draft.context) <= CONTEXT_CHARS and "\n" not in draft.context


def test_indexed_texts_carry_speaker_and_date(plain: Settings) -> None:
    draft = note("I painted a sunrise over the lake.", plain)
    assert draft.content == "Melanie painted a sunrise over the lake."
    assert (
        draft.index_text
        == "Melanie: Melanie painted a sunrise over the lake. 8 May 2023 May 2023 Monday"
    )
    # Neighbours join the window in the decide stage, once their audience is known.
    assert draft.window_text == draft.index_text
    assert draft.embed_text == "Melanie: Melanie painted a sunrise over the lake. (8 May 2023)"


def test_role_names_stand_in_for_a_missing_speaker(plain: Settings) -> None:
    assert note("I like tea.", plain, speaker=None).index_text.startswith("User: I like tea.")
    tool = note("Disk usage 91%", plain, role="tool", speaker=None)
    assert tool.index_text.startswith("Tool: Disk usage 91%")


def test_embed_text_stays_short(plain: Settings) -> None:
    draft = note("word " * 2000, plain)
    assert len(draft.embed_text) < 1000


def test_construction_is_deterministic(plain: Settings) -> None:
    fact = ExtractedFact(
        text="Melanie loves hiking.", original="I love hiking.", speaker="Melanie", occurred_at=WHEN
    )
    args: dict[str, Any] = {
        "role": "user",
        "agent_id": "a",
        "explicit": {},
        "settings": plain,
    }
    assert construct_note(fact, **args) == construct_note(fact, **args)


def _locomo_turns() -> tuple[list[dict[str, Any]], dict[int, datetime]]:
    if not LOCOMO.is_file():
        pytest.skip(f"{LOCOMO} is absent")
    conversation = json.loads(LOCOMO.read_text(encoding="utf-8"))[0]["conversation"]
    turns: list[dict[str, Any]] = []
    dates: dict[int, datetime] = {}
    for key, value in conversation.items():
        match = re.fullmatch(r"session_(\d+)", key)
        if match and isinstance(value, list):
            session = int(match.group(1))
            stamp = conversation[f"{key}_date_time"].replace(",", "")
            dates[session] = datetime.strptime(stamp, "%I:%M %p on %d %B %Y").replace(tzinfo=UTC)
            turns.extend({**turn, "session": session} for turn in value)
    return turns, dates


def test_locomo_conversation_keeps_every_turn(plain: Settings) -> None:
    turns, dates = _locomo_turns()
    assert len(turns) > 300
    lost = []
    for turn in turns:
        speaker, text = turn["speaker"], turn["text"]
        found = extract_facts(
            text, role="user", speaker=speaker, occurred_at=dates[turn["session"]], metadata=turn
        )
        if not content_tokens(text) and "blip_caption" not in turn:
            continue  # "Thanks!": nothing to remember
        if not found:
            lost.append(turn["dia_id"])
            continue
        [fact] = found
        assert fact.speaker == speaker and fact.occurred_at == dates[turn["session"]]
        draft = construct_note(fact, role="user", agent_id="a", explicit={}, settings=plain)
        assert draft.index_text.startswith(f"{speaker}: ")
        assert speaker in draft.embed_text and speaker in draft.context
        kept_terms = set(analyse(" ".join(clean_sentences(text))))
        assert kept_terms <= set(analyse(draft.index_text)), turn["dia_id"]
        if "blip_caption" in turn:
            assert turn["blip_caption"] in fact.text
    assert lost == []


def test_keywords_of_unspaced_scripts_are_names_not_clauses() -> None:
    # Without a dictionary a Chinese clause cannot be split into words: no keyword, rather
    # than the whole clause as one; Japanese katakana runs are names and loanwords.
    assert extract_keywords("我的妹妹克拉拉在波尔图当护士。每天都很忙。") == []
    japanese = extract_keywords("妹のクララはポルトで看護師として働いています。")
    assert japanese == ["クララ", "ポルト"]
    mixed = extract_keywords("The Denver Broncosは3度目のSuper Bowlタイトルを獲得した。")
    assert {"Denver", "Broncos", "Bowl", "タイトル"} <= set(mixed)
    assert all(len(keyword) <= 8 for keyword in mixed)


def test_keywords_leave_out_the_function_words_of_the_texts_language() -> None:
    russian = extract_keywords("Моя сестра Клара живёт в Порту и работает медсестрой.")
    assert {"Клара", "Порту"} <= set(russian)
    assert not {"моя", "в", "и"} & {k.casefold() for k in russian}
    german = extract_keywords(
        "Meine Schwester Clara wohnt in Porto und sie arbeitet im Krankenhaus, das nicht weit ist."
    )
    assert {"Clara", "Porto"} <= set(german)
    assert not {"meine", "und", "sie", "im", "das"} & {k.casefold() for k in german}
    # English keeps its content words that are function words elsewhere ("die" in German).
    assert "die" in extract_keywords("The plants die without water in the heat.")
