"""Stage 6b of the write path: evolve the notes a new note was linked to (A-MEM's memory
evolution), and withdraw what evolution copied when a source may no longer give it.

Without an LLM a new note's keywords and tags are merged into its neighbours (bounded);
with one, the model rewrites the neighbours' context line and tags in light of it.

Invariants:
- Nothing is copied from a note into another unless it may flow there
  (memory.access.audience.may_flow): a neighbour the new note may not flow into is left
  as it is, and the model is only ever shown notes that may all flow into each other.
- Every value a merge adds is recorded in `note_contributions` with the notes it came
  from: the note that held it as its own, not an intermediate note that had gained it
  (a merge sees the earlier merges of its batch), so withdrawing a source removes its
  words from every note they reached. A value the target already held is not recorded.
- `withdraw_contributions` removes a source's rows and, from each target, the values no
  other recorded source still gives; a rewritten context goes back to the note's own
  gist. Only changed notes are written, in id order.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import delete, or_, select, tuple_
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Session
from sqlalchemy.orm.attributes import set_committed_value

from memory.access.audience import Audience, may_flow
from memory.links.models import Contribution
from memory.notes.models import Note
from memory.notes.window_text import own_context
from memory.notes.writes import note_update
from memory.trust.policy import may_lend
from memory.types import utcnow

MAX_KEYWORDS = 12
MAX_TAGS = 10
FIELDS = {"keyword": "keywords", "tag": "tags"}
_ROWS_PER_INSERT = 5000


@dataclass
class _State:
    """Notes as evolution reads them, and where each of their copied values came from."""

    notes: dict[uuid.UUID, Any]
    values: dict[uuid.UUID, dict[str, list[str]]] = field(default_factory=dict)
    origins: dict[tuple[uuid.UUID, str, str], set[uuid.UUID]] = field(
        default_factory=lambda: defaultdict(set)
    )
    added: dict[tuple[uuid.UUID, str, str], set[uuid.UUID]] = field(
        default_factory=lambda: defaultdict(set)
    )

    def origin_of(self, note_id: uuid.UUID, kind: str, value: str) -> set[uuid.UUID]:
        """The notes a value of `note_id` came from: the recorded sources, else itself."""
        return self.origins.get((note_id, kind, value)) or {note_id}


def evolve_by_keywords(*, session: Session, linked: dict[uuid.UUID, list[uuid.UUID]]) -> int:
    """Merge each new note's keywords and tags into its neighbours that it may flow into
    (bounded), in the order of `linked`, each merge seeing the earlier ones. Returns how
    many merges changed a neighbour; only neighbours that end up changed are written."""
    pairs = {note_id: ids for note_id, ids in linked.items() if ids}
    if not pairs:
        return 0
    # Best effort: skip neighbours another worker is updating; lock the rest in id order
    # so concurrent link tasks cannot deadlock.
    neighbours = sorted({n for ids in pairs.values() for n in ids})
    locked = _read(session, neighbours, lock=True)
    state = _State({**_read(session, [n for n in pairs if n not in locked], lock=False), **locked})
    _load_origins(session, state)
    changed = 0
    for note_id, neighbour_ids in pairs.items():
        source = state.notes.get(note_id)
        if source is None:  # deleted since it was linked
            continue
        for neighbour_id in sorted(set(neighbour_ids) & locked.keys()):
            target = state.notes[neighbour_id]
            if may_flow(Audience.of(source), Audience.of(target)) and may_lend(source, target):
                changed += _merge_into(state, note_id, neighbour_id)
    _store(session, state, set(locked))
    return changed


def _read(session: Session, note_ids: list[uuid.UUID], *, lock: bool) -> dict[uuid.UUID, Any]:
    if not note_ids:
        return {}
    query = select(
        Note.id,
        Note.tenant_id,
        Note.user_id,
        Note.keywords,
        Note.tags,
        Note.visibility,
        Note.domain,
        Note.agent_id,
        Note.trust,
        Note.review,
    ).where(Note.id.in_(note_ids))
    if lock:
        query = query.order_by(Note.id).with_for_update(skip_locked=True)
    return {row.id: row for row in session.execute(query)}


def _load_origins(session: Session, state: _State) -> None:
    for note_id, row in state.notes.items():
        state.values[note_id] = {"keyword": list(row.keywords or []), "tag": list(row.tags or [])}
    rows = session.execute(
        select(
            Contribution.target_id, Contribution.field, Contribution.value, Contribution.source_id
        ).where(Contribution.target_id.in_(list(state.notes)), Contribution.field != "context")
    )
    for row in rows:
        state.origins[(row.target_id, row.field, row.value)].add(row.source_id)


def _merge_into(state: _State, source_id: uuid.UUID, target_id: uuid.UUID) -> int:
    """Merge the source's current values into the target's; 1 if the target changed."""
    changed = False
    for kind, limit in (("keyword", MAX_KEYWORDS), ("tag", MAX_TAGS)):
        current = state.values[target_id][kind]
        for value in state.values[source_id][kind]:
            if len(current) >= limit:
                break
            if value in current:
                continue
            current.append(value)
            origin = state.origin_of(source_id, kind, value)
            state.origins[(target_id, kind, value)] |= origin
            state.added[(target_id, kind, value)] |= origin
            changed = True
    return int(changed)


def _store(session: Session, state: _State, writable: set[uuid.UUID]) -> None:
    targets = sorted({key[0] for key in state.added} & writable)
    if not targets:
        return
    now = utcnow()
    values = [
        {
            "note_id": t,
            "keywords": state.values[t]["keyword"],
            "tags": state.values[t]["tag"],
            "updated_at": now,
        }
        for t in targets
    ]
    note_update(("keywords", "tags", "updated_at")).run_many(session, values)
    for value in values:
        _keep_loaded(session, value)
    record_contributions(
        session,
        [
            (target, kind, text, origin, state.notes[target])
            for (target, kind, text), origins in state.added.items()
            if target in writable
            for origin in origins
        ],
    )


def _keep_loaded(session: Session, values: dict[str, Any]) -> None:
    loaded = session.identity_map.get(session.identity_key(Note, values["note_id"]))  # type: ignore[arg-type]
    if loaded is not None:
        for column, value in values.items():
            if column != "note_id":
                set_committed_value(loaded, column, value)


def record_contributions(
    session: Session, rows: Sequence[tuple[uuid.UUID, str, str, uuid.UUID, Any]]
) -> None:
    """Record (target, field, value, source, target row with tenant_id and user_id);
    a row already recorded is kept."""
    now = utcnow()
    values = [
        {
            "target_id": target,
            "field": kind,
            "value": value,
            "source_id": source,
            "tenant_id": row.tenant_id,
            "user_id": row.user_id,
            "created_at": now,
        }
        for target, kind, value, source, row in sorted(rows, key=lambda r: r[:4])
    ]
    # PostgreSQL takes at most 65,535 parameters in one statement (7 a row here).
    for start in range(0, len(values), _ROWS_PER_INSERT):
        chunk = values[start : start + _ROWS_PER_INSERT]
        session.execute(insert(Contribution).values(chunk).on_conflict_do_nothing())


def withdraw_contributions(
    *,
    session: Session,
    source_ids: Iterable[uuid.UUID] = (),
    pairs: Iterable[tuple[uuid.UUID, uuid.UUID]] = (),
) -> int:
    """Withdraw every contribution of `source_ids`, and those of the (source, target)
    `pairs`; return how many notes changed."""
    sources, edges = sorted(set(source_ids)), sorted(set(pairs))
    clauses = []
    if sources:
        clauses.append(Contribution.source_id.in_(sources))
    if edges:
        clauses.append(tuple_(Contribution.source_id, Contribution.target_id).in_(edges))
    if not clauses:
        return 0
    gone = session.execute(
        delete(Contribution)
        .where(or_(*clauses))
        .returning(Contribution.target_id, Contribution.field, Contribution.value)
    ).all()
    return _remove_values(session, gone)


def _remove_values(session: Session, gone: Sequence[Any]) -> int:
    """Take out of each target the withdrawn values no remaining row still gives."""
    targets = sorted({row.target_id for row in gone})
    if not targets:
        return 0
    still = {
        (row.target_id, row.field, row.value)
        for row in session.execute(
            select(Contribution.target_id, Contribution.field, Contribution.value).where(
                Contribution.target_id.in_(targets)
            )
        )
    }
    removed: dict[uuid.UUID, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for row in gone:
        if row.field == "context" or (row.target_id, row.field, row.value) not in still:
            removed[row.target_id][row.field].add(row.value)
    notes = session.scalars(
        select(Note).where(Note.id.in_(sorted(removed))).order_by(Note.id).with_for_update()
    )
    changed = 0
    for note in notes:
        drop = removed[note.id]
        for kind, column in FIELDS.items():
            if drop.get(kind):
                setattr(
                    note, column, [v for v in getattr(note, column) or [] if v not in drop[kind]]
                )
        if "context" in drop:
            note.context = own_context(note)
            session.execute(
                delete(Contribution).where(
                    Contribution.target_id == note.id, Contribution.field == "context"
                )
            )
        note.updated_at = utcnow()
        changed += 1
    session.flush()
    return changed


def withdraw_disallowed(*, session: Session, note_ids: Sequence[uuid.UUID]) -> int:
    """After a change of audience of `note_ids`: withdraw every contribution to or from
    them whose source may no longer flow into its target."""
    rows = session.execute(
        select(Contribution.source_id, Contribution.target_id)
        .where(or_(Contribution.source_id.in_(note_ids), Contribution.target_id.in_(note_ids)))
        .distinct()
    ).all()
    if not rows:
        return 0
    ids = sorted({r.source_id for r in rows} | {r.target_id for r in rows})
    audiences = {
        n.id: Audience.of(n)
        for n in session.execute(
            select(Note.id, Note.visibility, Note.domain, Note.agent_id).where(Note.id.in_(ids))
        )
    }
    refused = [
        (r.source_id, r.target_id)
        for r in rows
        if not may_flow(audiences[r.source_id], audiences[r.target_id])
    ]
    return withdraw_contributions(session=session, pairs=refused)
