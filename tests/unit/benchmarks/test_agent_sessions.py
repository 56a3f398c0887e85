"""The agent-session benchmarks' own pieces: chatter, its share of a block, the public
user-assistant set and its episodes."""

from __future__ import annotations

import random

import pytest

from benchmarks.locomo_agent import chatter_share, session_episodes
from benchmarks.locomo_agent_chatter import chatter_between, echo_of
from benchmarks.locomo_data import DEFAULT_DATA, load
from benchmarks.longmemeval import episodes, recall_table
from benchmarks.longmemeval import load as load_lme
from memory.api.schemas import EpisodeBatch


def test_chatter_is_the_same_for_the_same_seed_and_labelled_by_kind() -> None:
    said = [
        chatter_between(random.Random(7), i, "user" if i % 2 else "assistant") for i in range(60)
    ]
    again = [
        chatter_between(random.Random(7), i, "user" if i % 2 else "assistant") for i in range(60)
    ]
    assert said == again
    assert said[0][0].kind == "command" and said[0][0].text.startswith("/")
    kinds = {c.kind for turn in said for c in turn}
    assert kinds <= {"command", "ack", "tool"}


def test_an_echo_pastes_the_blocks_lines_or_says_a_memory_back() -> None:
    line = "- [8 May 2023, Caroline] Caroline paints."
    block = f"<relevant-memories>\nframe\n{line}\n</relevant-memories>"
    texts = {
        echo_of(random.Random(seed), block, ["Caroline paints."])[0].text for seed in range(20)
    }
    assert any("- [8 May 2023, Caroline] Caroline paints." in t for t in texts)
    assert any(t.endswith("Caroline paints.") and "- [" not in t for t in texts)


def test_chatter_share_counts_memories_made_only_of_chatter() -> None:
    block = [[{"dia_id": "D1:1"}], [{"chatter": "ack"}], [{"chatter": "tool"}, {"dia_id": "D1:2"}]]
    share, kinds = chatter_share([block, []])
    assert share == 1 / 3 and dict(kinds) == {"ack": 1}


def test_the_agent_session_episodes_are_valid_captures_with_chatter_between() -> None:
    if not DEFAULT_DATA.exists():
        pytest.skip("LoCoMo is not beside this checkout")
    turns, _ = load(DEFAULT_DATA)
    session = [t for t in turns if (t.conversation, t.session) == (turns[0].conversation, 1)]
    clean = session_episodes(session, "clean-x", session[0].speaker, None)
    noisy = session_episodes(session, "agent-x", session[0].speaker, random.Random(1))
    assert len(clean) == len(session) < len(noisy)
    assert {e["role"] for e in clean} == {"user", "assistant"}
    EpisodeBatch.model_validate({"episodes": noisy[:500]})


def test_the_user_assistant_set_loads_and_every_turn_is_a_valid_capture() -> None:
    sessions, questions = load_lme()
    assert (len(questions), len(sessions)) == (41, 85)
    assert sum(len(s["turns"]) for s in sessions) == 999
    ids = {s["id"] for s in sessions}
    assert all(q["evidence_sessions"] and set(q["evidence_sessions"]) <= ids for q in questions)
    items = episodes(sessions)
    for start in range(0, len(items), 500):
        EpisodeBatch.model_validate({"episodes": items[start : start + 500]})
    perfect = [[{s} for s in q["evidence_sessions"]] for q in questions]
    assert recall_table(questions, perfect)["overall"]["R@20"] == 1.0
