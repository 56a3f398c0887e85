"""The write path's batched stages: one nearest-neighbour query per decide or link batch,
decisions within a batch as if each note were searched on its own, evolution merges."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import numpy as np
import pytest
from sqlalchemy import event, select, text
from sqlalchemy.orm import Session

from memory.access.audience import Audience
from memory.clients.embedder import get_embedder
from memory.config import get_settings
from memory.db import session_scope
from memory.episodes.pipeline import extract_episode
from memory.episodes.service import EpisodeInput, capture_episodes
from memory.links.evolution import evolve_by_keywords
from memory.links.models import Link
from memory.links.pipeline import link_notes
from memory.notes.decide import Candidate
from memory.notes.embed import EMBEDDED_COLUMNS, embed_pending_notes
from memory.notes.models import Note, NoteSource
from memory.notes.pipeline import Outcome, decide_notes
from memory.notes.similar import similar_notes
from memory.notes.window import window_vector
from memory.notes.writes import note_update

pytestmark = pytest.mark.integration


def _pending_batch(
    tenant_id: str, user_id: str, texts: Sequence[str], *, session_id: str | None = None
) -> list[uuid.UUID]:
    """Capture turns (each its own session, or all of `session_id` in order), extract and
    embed them: one pending batch."""
    inputs = [
        EpisodeInput(
            user_id=user_id,
            agent_id="assistant-1",
            session_id=session_id or f"s-{uuid.uuid4().hex[:6]}",
            role="user",
            content=content,
            speaker="Alice",
        )
        for content in texts
    ]
    with session_scope() as session:
        results = capture_episodes(session=session, tenant_id=tenant_id, episodes=inputs)
    with session_scope() as session:
        for episode_id, _ in results:
            extract_episode(
                session=session, episode_id=episode_id, settings=get_settings(), llm=None
            )
    with session_scope() as session:
        batch = embed_pending_notes(session=session, embedder=get_embedder(), limit=500)
    assert len(batch.embedded) == len(texts)
    return batch.embedded


def _decide(note_ids: list[uuid.UUID]) -> list[Outcome]:
    with session_scope() as session:
        return decide_notes(session=session, note_ids=note_ids, settings=get_settings(), llm=None)


@contextmanager
def _statements(session: Session) -> Iterator[list[str]]:
    """The SQL statements `session` sends while the block runs."""
    seen: list[str] = []
    engine = session.get_bind()

    def record(conn, cursor, statement, parameters, context, executemany) -> None:  # type: ignore[no-untyped-def]
        seen.append(statement)

    event.listen(engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        event.remove(engine, "before_cursor_execute", record)


def test_a_near_duplicate_within_one_batch_reinforces_the_batchs_earlier_note(
    database_url: str, tenant_id: str, user_id: str
) -> None:
    texts = ["My favourite colour is blue.", "My favourite colour is blue."]
    ids = _pending_batch(tenant_id, user_id, texts)
    outcomes = _decide(ids)
    assert [o.decision.action for o in outcomes] == ["ADD", "NOOP"]
    first, second = outcomes
    assert second.decision.target_id == first.note_id == second.active_id
    with session_scope() as session:
        active = session.scalars(
            select(Note).where(Note.user_id == user_id, Note.status == "active")
        ).all()
        assert [n.id for n in active] == [first.note_id]
        assert active[0].access_count == 2  # reinforced by the duplicate
        sources = session.scalars(
            select(NoteSource.episode_id).where(NoteSource.note_id == first.note_id)
        ).all()
        assert len(sources) == 2  # the duplicate's episode is its provenance too


def _window_reads(statements: list[str]) -> int:
    return sum("vector_send(notes.window_embedding)" in sql for sql in statements)


def test_windows_are_read_again_only_when_a_decision_removed_a_neighbour(
    database_url: str, tenant_id: str, user_id: str
) -> None:
    turns = ["I adopted a beagle called Biscuit.", "My favourite colour is blue."]
    ids = _pending_batch(tenant_id, user_id, turns, session_id="talk")
    with session_scope() as session, _statements(session) as seen:
        outcomes = decide_notes(session=session, note_ids=ids, settings=get_settings(), llm=None)
    assert [o.decision.action for o in outcomes] == ["ADD", "ADD"]
    assert _window_reads(seen) == 1  # ADDs alone: the first computation stands
    # A duplicate turn joins the session after them and is merged away:
    # the windows around it are computed again without it.
    ids = _pending_batch(tenant_id, user_id, ["My favourite colour is blue."], session_id="talk")
    with session_scope() as session, _statements(session) as seen:
        outcomes = decide_notes(session=session, note_ids=ids, settings=get_settings(), llm=None)
    assert [o.decision.action for o in outcomes] == ["NOOP"]
    assert _window_reads(seen) == 2
    with session_scope() as session:
        notes = session.scalars(
            select(Note)
            .where(Note.user_id == user_id, Note.session_id == "talk", Note.status == "active")
            .order_by(Note.turn_seq)
        ).all()
        assert len(notes) == 2
        for note, other in ((notes[0], notes[1]), (notes[1], notes[0])):
            before, after = ([], [other.embedding]) if note is notes[0] else ([other.embedding], [])
            np.testing.assert_allclose(
                np.asarray(note.window_embedding),
                window_vector(np.asarray(note.embedding), before, after),
                atol=1e-5,
            )


def test_a_new_value_within_one_batch_updates_the_batchs_earlier_note(
    database_url: str, tenant_id: str, user_id: str
) -> None:
    texts = ["My favourite colour is blue.", "My favourite colour is green."]
    outcomes = _decide(_pending_batch(tenant_id, user_id, texts))
    assert [o.decision.action for o in outcomes] == ["ADD", "UPDATE"]
    assert outcomes[1].decision.target_id == outcomes[0].note_id
    with session_scope() as session:
        old = session.get(Note, outcomes[0].note_id)
        assert old is not None and old.valid_to is not None
        assert old.superseded_by == outcomes[1].note_id


def test_a_note_closed_earlier_in_the_batch_is_no_longer_a_candidate(
    database_url: str, tenant_id: str, user_id: str
) -> None:
    stored = _decide(_pending_batch(tenant_id, user_id, ["My favourite colour is navy blue."]))
    # The batch's first note replaces the stored one; the second is closer to the stored
    # (now closed) note than to the first, and must update the first.
    texts = ["My favourite colour is green.", "My favourite colour is dark navy blue."]
    outcomes = _decide(_pending_batch(tenant_id, user_id, texts))
    assert [o.decision.action for o in outcomes] == ["UPDATE", "UPDATE"]
    assert outcomes[0].decision.target_id == stored[0].note_id
    assert outcomes[1].decision.target_id == outcomes[0].note_id
    with session_scope() as session:
        current = session.scalars(
            select(Note.content).where(
                Note.user_id == user_id, Note.status == "active", Note.valid_to.is_(None)
            )
        ).all()
    assert current == ["Alice's favourite colour is dark navy blue."]  # first person resolved


def _per_note_reference(session: Session, note: Note, limit: int) -> list[Candidate]:
    """The search as it was made before batching: one query per note, its vector bound."""
    distance = Note.embedding.cosine_distance(note.embedding)
    rows = session.execute(
        select(
            Note.id,
            Note.content,
            Note.speaker,
            (1 - distance).label("similarity"),
            Note.visibility,
            Note.domain,
            Note.agent_id,
            Note.trust,
            Note.review,
        )
        .where(
            Note.tenant_id == note.tenant_id,
            Note.user_id == note.user_id,
            Note.status == "active",
            Note.valid_to.is_(None),
            Note.id != note.id,
        )
        .order_by(distance)
        .limit(limit)
    ).all()
    return [
        Candidate(
            r.id, r.content, r.speaker, float(r.similarity), Audience.of(r), (r.trust, r.review)
        )
        for r in rows
    ]


def test_batched_search_returns_each_notes_own_search(
    database_url: str, tenant_id: str, user_id: str
) -> None:
    texts = [
        "I adopted a beagle called Biscuit last spring.",
        "Biscuit the beagle loves long walks on the beach.",
        "My sister works as a nurse in Porto.",
        "The quarterly tax return is due on 30 April.",
        "We repainted the kitchen a pale shade of green.",
        "Our team won the five-a-side football final on Saturday.",
        "I am training for a marathon in the autumn.",
    ]
    _decide(_pending_batch(tenant_id, user_id, texts))
    other_user = _pending_batch(tenant_id, f"{user_id}-other", texts[:3])
    _decide(other_user)
    pending = _pending_batch(tenant_id, user_id, ["My beagle Biscuit chewed my running shoes."])
    with session_scope() as session:
        notes = session.scalars(
            select(Note).where(Note.user_id == user_id, Note.embedding.is_not(None))
        ).all()
        found = similar_notes(session, [n.id for n in notes], limit=3)
        assert set(found) == {n.id for n in notes}  # pending notes search too
        for note in notes:
            expected = _per_note_reference(session, note, 3)
            expected.sort(key=lambda c: c.similarity, reverse=True)
            got = found[note.id]
            assert [c.note_id for c in got] == [c.note_id for c in expected], note.content
            for a, b in zip(got, expected, strict=True):
                assert a.similarity == pytest.approx(b.similarity, abs=1e-6)
            assert pending[0] not in {c.note_id for c in got}  # pending: not a candidate
        only_active = similar_notes(session, [n.id for n in notes], limit=3, status="active")
        assert set(only_active) == {n.id for n in notes} - set(pending)


HIKES = [
    "We hiked to the glacier lake on Monday.",
    "On Tuesday we hiked up to the mountain hut.",
    "The hike on Wednesday took us across the windy ridge.",
    "Thursday's hike ended at a waterfall in the valley.",
    "We hiked through the pine forest on Friday.",
    "On Saturday our hike followed the river to the village.",
]


def test_a_batch_costs_one_search_whatever_its_size(
    database_url: str, tenant_id: str, user_id: str
) -> None:
    """Decide and link search once per batch; link + evolve make a bounded number of
    statements (it was several per note)."""
    for texts in (HIKES[:2], HIKES[2:]):
        ids = _pending_batch(tenant_id, user_id, texts)
        with session_scope() as session, _statements(session) as seen:
            outcomes = decide_notes(
                session=session, note_ids=ids, settings=get_settings(), llm=None
            )
            assert sum("<=>" in statement for statement in seen) == 1
        assert [o.decision.action for o in outcomes] == ["ADD"] * len(texts)
        with session_scope() as session, _statements(session) as seen:
            linked = link_notes(session=session, note_ids=ids, settings=get_settings())
            evolve_by_keywords(session=session, linked=linked)
            assert sum("<=>" in statement for statement in seen) == 1
            # scope, search, links, lock and read terms, their origins, write, contributions
            assert len(seen) <= 8, seen
        assert list(linked) == ids and any(linked.values())


def _note(session: Session, tenant_id: str, user_id: str, keywords: list[str]) -> Note:
    vector = np.random.default_rng(len(keywords)).normal(size=384).astype(np.float32)
    note_id = uuid.uuid4()
    note = Note(
        id=note_id,
        lineage_id=note_id,
        tenant_id=tenant_id,
        user_id=user_id,
        agent_id="assistant-1",
        content=" ".join(keywords),
        keywords=keywords,
        tags=[keywords[0]],
        status="active",
        embedding=vector / np.linalg.norm(vector),
    )
    session.add(note)
    session.flush()
    return note


def _row_version(session: Session, note_id: uuid.UUID) -> str:
    return str(session.scalar(text("SELECT xmin::text FROM notes WHERE id = :id"), {"id": note_id}))


def test_evolution_merges_in_order_and_writes_only_changed_neighbours(
    database_url: str, tenant_id: str, user_id: str
) -> None:
    with session_scope() as session:
        first = _note(session, tenant_id, user_id, ["hiking", "alps"])
        second = _note(session, tenant_id, user_id, ["boots", "alps", "summer"])
        shared = _note(session, tenant_id, user_id, ["trip"])
        covered = _note(session, tenant_id, user_id, ["alps", "hiking", "boots", "summer"])
        ids = first.id, second.id, shared.id, covered.id
    with session_scope() as session:
        before = _row_version(session, ids[3])
    with session_scope() as session:
        # `second` is also a neighbour of `first`: it merges what it gained from `first`.
        linked = {ids[0]: [ids[2], ids[1]], ids[1]: [ids[2], ids[3]]}
        assert evolve_by_keywords(session=session, linked=linked) == 4
    with session_scope() as session:
        notes = {n.id: n for n in session.scalars(select(Note).where(Note.id.in_(ids)))}
        assert notes[ids[1]].keywords == ["boots", "alps", "summer", "hiking"]
        assert notes[ids[2]].keywords == ["trip", "hiking", "alps", "boots", "summer"]
        assert notes[ids[2]].tags == ["trip", "hiking", "boots"]
        assert notes[ids[3]].keywords == ["alps", "hiking", "boots", "summer"]
        assert notes[ids[3]].tags == ["alps", "boots", "hiking"]
        assert notes[ids[0]].keywords == ["hiking", "alps"]  # a source only
        assert _row_version(session, ids[3]) != before  # changed in its tags only
        links = session.scalars(select(Link).where(Link.user_id == user_id)).all()
        assert links == []  # evolution writes notes, never links


def test_an_unchanged_neighbour_is_not_rewritten(
    database_url: str, tenant_id: str, user_id: str
) -> None:
    with session_scope() as session:
        new = _note(session, tenant_id, user_id, ["alps", "hiking"])
        old = _note(session, tenant_id, user_id, ["hiking", "alps", "boots"])
        old.tags = ["alps", "hiking"]
        ids = new.id, old.id
    with session_scope() as session:
        before = _row_version(session, ids[1])
    with session_scope() as session:
        assert evolve_by_keywords(session=session, linked={ids[0]: [ids[1]]}) == 0
        assert _row_version(session, ids[1]) == before


def test_embedded_notes_left_undecided_are_handed_over_again_once_stale(
    database_url: str, tenant_id: str, user_id: str
) -> None:
    ids = _pending_batch(tenant_id, user_id, ["I adopted a beagle called Biscuit."])
    with session_scope() as session:
        fresh = embed_pending_notes(
            session=session, embedder=get_embedder(), limit=500, stale_after_seconds=3600
        )
        stale = embed_pending_notes(
            session=session, embedder=get_embedder(), limit=500, stale_after_seconds=-1
        )
        note = session.get(Note, ids[0])
        assert note is not None and note.status == "pending"
        assert note.embedding_model == get_embedder().model_id
        assert note.term_count == 0 and note.index_terms is None  # set when it is activated
    assert ids[0] not in fresh.note_ids and fresh.embedded == []
    assert ids[0] in stale.stale and stale.embedded == []


def test_the_embeddings_update_changes_no_indexed_column() -> None:
    """So PostgreSQL can update the row in place (HOT) without new index entries; the
    terms, which a GIN index covers (the window terms' is on the mirror note_terms), are
    written with the activation instead."""
    notes = Note.__table__
    indexed: set[str] = set()
    for index in notes.indexes:
        text_of_index = " ".join(
            [str(e) for e in index.expressions]
            + [str(index.dialect_options["postgresql"].get("where", ""))]
        )
        indexed |= {c.name for c in notes.columns if re.search(rf"\b{c.name}\b", text_of_index)}
    assert {"index_terms", "status", "content"} <= indexed
    assert "embedding" not in indexed
    set_clause = re.search(r"SET (.*) WHERE", note_update(EMBEDDED_COLUMNS).sql, re.S)
    assert set_clause is not None
    updated = set(re.findall(r"(\w+)=", set_clause.group(1)))
    assert updated == {"embedding", "embedding_model", "sparse_embedding", "updated_at"}
    assert not updated & indexed
