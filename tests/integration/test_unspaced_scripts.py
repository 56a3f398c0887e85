# ruff: noqa: RUF001  (Chinese punctuation is part of the text under test)
"""Scripts written without spaces (Chinese, Japanese, Thai) are searchable by their words:
their runs are indexed as character bigrams, through the whole write path; a store
indexed by the earlier analyser (a whole run one term) is moved to the new terms by the
derived-data rebuild, its BM25 statistics with it."""

from __future__ import annotations

import uuid
from collections import Counter

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select, update

from memory.db import session_scope
from memory.notes.lexicon import apply_terms, index_note_terms, stored_lexemes
from memory.notes.models import LexiconTerm, Note
from memory.notes.rederive import rebuild_derived_batch
from memory.retrieval.text import analyse, normalise
from tests.support.helpers import bearer, new_note, wait_for_episodes

pytestmark = pytest.mark.integration

FACTS = [
    "我妹妹住在杭州，她是一名牙医。",
    "我每天早上喝一杯乌龙茶。",
    "我的车是一辆蓝色的自行车。",
    "私の猫の名前はモチです。",
    "毎週土曜日にテニスをします。",
    "ผมชอบกินข้าวผัดกุ้งทุกวันศุกร์",
]
QUERIES = {
    "我妹妹住在哪里？": 0,
    "乌龙茶": 1,
    "猫の名前は何ですか": 3,
    "テニスはいつ": 4,
    "ข้าวผัดกุ้ง": 5,
}


def test_chinese_japanese_and_thai_memories_are_found_by_their_words(
    api_client: TestClient, tokens: dict[str, str], user_id: str, celery_worker: str
) -> None:
    agent = bearer(tokens["agent"])
    episodes = [
        {"user_id": user_id, "agent_id": "main", "session_id": f"s{i}", "role": "user",
         "content": fact}
        for i, fact in enumerate(FACTS)
    ]  # fmt: skip
    captured = api_client.post("/v1/episodes", json={"episodes": episodes}, headers=agent)
    assert captured.status_code == 202, captured.text
    wait_for_episodes(captured.json()["episode_ids"])
    for query, fact in QUERIES.items():
        body = {"user_id": user_id, "agent_id": "main", "query": query, "top_k": 3}
        results = api_client.post("/v1/search", json=body, headers=agent).json()["results"]
        assert results, query
        best = results[0]
        # Compared as the analyser sees them: extraction stores NFKC text.
        found = normalise(best["content"])
        assert found == normalise(FACTS[fact]), (query, [r["content"] for r in results])
        assert "bm25" in best["explanation"]["routes"], (query, best["explanation"])


def _old_terms(text: str) -> list[str]:
    """What the earlier analyser stored: a run of an unspaced script as one term."""
    return [t for t in text.replace("，", " ").replace("。", " ").split() if t]


def _lexicon(tenant_id: str, user_id: str) -> Counter[tuple[str, str]]:
    with session_scope() as session:
        rows = session.scalars(
            select(LexiconTerm).where(
                LexiconTerm.tenant_id == tenant_id, LexiconTerm.user_id == user_id
            )
        )
        return Counter({(r.field, r.term): r.doc_count for r in rows if r.doc_count})


def _from_stored(tenant_id: str, user_id: str) -> Counter[tuple[str, str]]:
    """The statistics the stored terms of the user's counted notes imply."""
    expected: Counter[tuple[str, str]] = Counter()
    with session_scope() as session:
        notes = session.scalars(
            select(Note).where(
                Note.tenant_id == tenant_id,
                Note.user_id == user_id,
                Note.status == "active",
                Note.valid_to.is_(None),
            )
        )
        for note in notes:
            for term in stored_lexemes(note.index_terms):
                expected[("own", term)] += 1
            for term in stored_lexemes(note.window_terms):
                expected[("window", term)] += 1
    return expected


def test_the_rebuild_moves_notes_indexed_by_the_earlier_analyser_to_bigrams(
    database_url: str, tenant_id: str, user_id: str
) -> None:
    texts = ["我每天早上喝一杯乌龙茶。", "I drink oolong tea every morning."]
    with session_scope() as session:
        notes = [new_note(tenant_id, user_id, t) for t in texts]
        for note in notes:
            note.status = "active"
            apply_terms(note, {"own": _old_terms(note.content), "window": []})
        session.add_all(notes)
        session.flush()
        index_note_terms(session=session, notes=notes)
        ids = [n.id for n in notes]
    assert ("own", "我每天早上喝一杯乌龙茶") in _lexicon(tenant_id, user_id)

    with session_scope() as session:  # as migration 0016 marks them
        session.execute(update(Note).where(Note.id.in_(ids)).values(derived_version=1))
    with session_scope() as session:
        rebuild_derived_batch(session=session, tenant_id=tenant_id)

    with session_scope() as session:
        chinese = session.get(Note, ids[0])
        assert chinese is not None and chinese.derived_version > 1
        assert stored_lexemes(chinese.index_terms) == set(analyse(texts[0]))
        assert "乌龙" in stored_lexemes(chinese.index_terms)
    lexicon = _lexicon(tenant_id, user_id)
    assert ("own", "我每天早上喝一杯乌龙茶") not in lexicon
    assert lexicon == _from_stored(tenant_id, user_id)
    assert lexicon[("own", "乌龙")] == 1


def test_unindexing_counts_what_the_note_stores_not_a_fresh_analysis(
    database_url: str, tenant_id: str, user_id: str
) -> None:
    """A note indexed under another analysis leaves no count behind when it is closed."""
    from memory.notes.lexicon import unindex_note_terms

    with session_scope() as session:
        note = new_note(tenant_id, user_id, "我喜欢喝茶")
        note.status = "active"
        apply_terms(note, {"own": ["我喜欢喝茶", uuid.uuid4().hex], "window": ["我喜欢喝茶"]})
        session.add(note)
        session.flush()
        index_note_terms(session=session, notes=[note])
        note_id = note.id
    assert len(_lexicon(tenant_id, user_id)) == 3
    with session_scope() as session:
        stored = session.get(Note, note_id)
        unindex_note_terms(session=session, notes=[stored])
        stored.status = "archived"
    assert _lexicon(tenant_id, user_id) == Counter()


def test_a_bounded_rebuild_leaves_the_rest_to_the_workers(
    database_url: str, tenant_id: str, user_id: str
) -> None:
    """`muma up` rebuilds for a minute at most, then starts; what is left stays marked."""
    from memory.ops.migrations import derived_left, rebuild_derived

    with session_scope() as session:
        note = new_note(tenant_id, user_id, "我每天早上喝一杯乌龙茶。", derived_version=1)
        session.add(note)
    lines: list[str] = []
    assert rebuild_derived(lines.append, max_seconds=0) == 0
    assert derived_left() >= 1 and "the workers rebuild the rest" in lines[-1]
    rebuild_derived(lines.append)
    assert derived_left() == 0
