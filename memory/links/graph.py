"""A note's link neighbourhood, breadth first, for the dashboard's graph view.

Invariants: the centre must be visible to the viewer (the caller checks); every other
node passes `visible_clause` in SQL, so an edge to an invisible note is never returned,
not even as a dangling id; the result is bounded by `max_nodes`; pending notes are
never nodes.
"""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import and_, or_, select
from sqlalchemy.orm import Session

from memory.access.policy import Viewer, visible_clause
from memory.links.models import Link
from memory.notes.browse import display_status
from memory.notes.models import Note

MAX_DEPTH = 3
MAX_NODES = 80


def _node(note: Note, depth: int) -> dict[str, Any]:
    return {
        "id": str(note.id),
        "content": note.content[:280],
        "kind": note.kind,
        "domain": note.domain,
        "visibility": note.visibility,
        "agent_id": note.agent_id,
        "status": display_status(note),
        "depth": depth,
    }


def _edge(link: Link) -> dict[str, Any]:
    return {
        "id": str(link.id),
        "source": str(link.source_id),
        "target": str(link.target_id),
        "kind": link.kind,
        "weight": round(link.weight, 4),
        "created_by": link.created_by,
    }


def _step(session: Session, viewer: Viewer, frontier: set[uuid.UUID]) -> list[tuple[Link, Note]]:
    """Links touching the frontier, with the visible note at their other end."""
    other_end = or_(
        and_(Link.source_id.in_(frontier), Note.id == Link.target_id),
        and_(Link.target_id.in_(frontier), Note.id == Link.source_id),
    )
    rows = session.execute(
        select(Link, Note)
        .join(Note, other_end)
        .where(visible_clause(viewer), Note.status != "pending")
        .order_by(Link.weight.desc(), Link.id)
    )
    return [(link, note) for link, note in rows]


def neighbourhood(
    *, session: Session, viewer: Viewer, centre: Note, depth: int = 1, max_nodes: int = MAX_NODES
) -> dict[str, Any]:
    """{"centre", "nodes", "edges", "truncated"} within `depth` hops of the centre."""
    depth = max(1, min(depth, MAX_DEPTH))
    nodes: dict[uuid.UUID, dict[str, Any]] = {centre.id: _node(centre, 0)}
    edges: dict[uuid.UUID, dict[str, Any]] = {}
    frontier = {centre.id}
    truncated = False
    for level in range(1, depth + 1):
        found: set[uuid.UUID] = set()
        for link, note in _step(session, viewer, frontier):
            if note.id not in nodes:
                if len(nodes) >= max_nodes:
                    truncated = True
                    continue
                nodes[note.id] = _node(note, level)
                found.add(note.id)
            edges.setdefault(link.id, _edge(link))
        frontier = found
        if not frontier:
            break
    return {
        "centre": str(centre.id),
        "depth": depth,
        "nodes": list(nodes.values()),
        "edges": list(edges.values()),
        "truncated": truncated,
    }
