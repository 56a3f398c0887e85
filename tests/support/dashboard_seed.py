"""A small, realistic memory for one user, written through a running API (real pipeline),
plus the few rows no API creates on demand (a dead letter, a detected conflict)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

import httpx

from memory.conflicts.models import Conflict
from memory.db import session_scope
from memory.ops.models import DeadLetter
from tests.conftest import make_token

AGENTS = {
    "travel-agent": {"display_name": "Travel planner", "domains": ["travel"]},
    "chef": {"display_name": "Kitchen helper", "domains": ["food"]},
    "coach": {"display_name": "Running coach", "domains": ["health"]},
    "banker": {"display_name": "Budget assistant", "domains": ["finance"],
               "can_see_private": True},
}  # fmt: skip
NOTES = [
    ("hike", "travel-agent", "Mira loves hiking in the Dolomites every September.",
     {"domain": "travel", "visibility": "scoped", "kind": "preference"}),
    ("seat", "travel-agent", "Mira prefers a window seat on long flights.",
     {"domain": "travel", "visibility": "scoped", "kind": "preference"}),
    ("lisbon", "travel-agent", "Mira is planning a trip to Lisbon in May 2026.",
     {"domain": "travel", "visibility": "open", "kind": "episodic"}),
    ("veg", "chef", "Mira is vegetarian and avoids mushrooms.",
     {"domain": "food", "visibility": "open", "kind": "stable"}),
    ("curry", "chef", "Mira's favourite dish is a spicy lentil curry.",
     {"domain": "food", "visibility": "open", "kind": "preference"}),
    ("savings", "banker", "Mira saves 500 euros a month for a flat in Lisbon.",
     {"domain": "finance", "visibility": "private", "kind": "stable"}),
    ("run", "coach", "Mira runs 10 km every Sunday morning.",
     {"domain": "health", "visibility": "scoped", "kind": "episodic"}),
    ("knee", "travel-agent", "Mira stopped running after her knee injury in March.",
     {"domain": "health", "visibility": "open", "kind": "episodic"}),
    ("doctor", "coach", "Mira's doctor prescribed vitamin D supplements.",
     {"domain": "health", "visibility": "user-only", "kind": "stable"}),
    ("desk", "assistant", "Mira decided to switch to a standing desk at work.",
     {"domain": "work", "visibility": "open", "kind": "decision"}),
]  # fmt: skip


@dataclass
class Seeded:
    tenant_id: str
    user_id: str
    tokens: dict[str, str]
    notes: dict[str, str] = field(default_factory=dict)


def _headers(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def _write(api: str, token: str, user_id: str, agent: str, content: str, **opts: str) -> str:
    body = {"user_id": user_id, "agent_id": agent, "content": content, "speaker": "Mira", **opts}
    response = httpx.post(f"{api}/v1/memories?wait=25", json=body, headers=_headers(token),
                          timeout=40)  # fmt: skip
    assert response.status_code == 201, response.text
    return str(response.json()["note_ids"][0])


def seed_memory(api: str) -> Seeded:
    tenant = f"t-{uuid.uuid4().hex[:8]}"
    seeded = Seeded(
        tenant,
        f"mira-{uuid.uuid4().hex[:4]}",
        {r: make_token(r, tenant) for r in ("agent", "viewer", "operator", "admin")},
    )
    admin = _headers(seeded.tokens["admin"])
    for agent, body in AGENTS.items():
        assert httpx.put(f"{api}/v1/agents/{agent}", json=body, headers=admin).status_code == 200
    for key, agent, content, opts in NOTES:
        seeded.notes[key] = _write(api, seeded.tokens["agent"], seeded.user_id, agent, content,
                                   **opts)  # fmt: skip
    _revise(api, seeded)
    _link(api, seeded)
    _use(api, seeded)
    _failures(seeded)
    return seeded


def _revise(api: str, seeded: Seeded) -> None:
    """A second version of the Lisbon plan (bi-temporal history)."""
    response = httpx.patch(
        f"{api}/v1/memories/{seeded.notes['lisbon']}",
        json={"user_id": seeded.user_id, "content": "Mira moved her Lisbon trip to June 2026."},
        headers=_headers(seeded.tokens["admin"]), timeout=30,
    )  # fmt: skip
    assert response.status_code == 200, response.text
    seeded.notes["lisbon"] = str(response.json()["id"])


def _link(api: str, seeded: Seeded) -> None:
    pairs = [("lisbon", "savings", "related"), ("hike", "knee", "related"),
             ("run", "knee", "contradicts"), ("veg", "curry", "related")]  # fmt: skip
    for source, target, kind in pairs:
        body = {"user_id": seeded.user_id, "source_id": seeded.notes[source],
                "target_id": seeded.notes[target], "kind": kind}  # fmt: skip
        response = httpx.post(f"{api}/v1/links", json=body,
                              headers=_headers(seeded.tokens["operator"]))  # fmt: skip
        assert response.status_code == 201, response.text


def _use(api: str, seeded: Seeded) -> None:
    """A few real searches, so activation histories have more than the creation."""
    for query in ("Where does Mira like to hike?", "What does Mira eat?", "Mira hiking trip"):
        body = {"user_id": seeded.user_id, "agent_id": "travel-agent", "query": query}
        response = httpx.post(f"{api}/v1/search", json=body,
                              headers=_headers(seeded.tokens["agent"]))  # fmt: skip
        assert response.status_code == 200, response.text


def _failures(seeded: Seeded) -> None:
    authors = {uuid.UUID(seeded.notes["run"]): "coach",
               uuid.UUID(seeded.notes["knee"]): "travel-agent"}  # fmt: skip
    a, b = sorted(authors)
    with session_scope() as session:
        session.add(DeadLetter(
            tenant_id=seeded.tenant_id, task_name="tasks.pipeline.evolve",
            args=[[seeded.notes["hike"]]], kwargs={}, attempts=5,
            error="TransientError: LLM endpoint timed out after 30 s"))  # fmt: skip
        session.add(Conflict(
            tenant_id=seeded.tenant_id, user_id=seeded.user_id, note_a_id=a, note_b_id=b,
            agent_a_id=authors[a], agent_b_id=authors[b], similarity=0.81,
            classification="contradictory",
            resolution={"detection": {"reason": "same subject (running), opposite claims"}},
        ))  # fmt: skip
