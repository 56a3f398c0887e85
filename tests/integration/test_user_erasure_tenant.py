"""Erasing a whole tenant through the API: only with the tenant named in `confirm`, by an
admin token bound to no user; every row, key and file of the tenant goes (its users'
data, agents, tokens, earlier erasures), another tenant is untouched byte for byte, and
nothing is captured for any user of the tenant while it runs."""

from __future__ import annotations

import uuid

import pytest
from fastapi.testclient import TestClient

from memory.access.models import Agent
from memory.clients.redis import get_redis
from memory.db import session_scope
from memory.episodes.service import EpisodeInput, capture_episodes
from memory.erasure.guard import BeingErasedError
from memory.erasure.runner import run_erasure
from memory.erasure.users import get_erasure, start_erasure
from tests.conftest import make_token
from tests.integration.test_user_erasure_support import (
    bulk_user,
    counts,
    marker,
    redis_text,
    scan_database,
    scan_redis,
    snapshot,
)
from tests.support.helpers import bearer, seed_user, wait_until

pytestmark = pytest.mark.integration


def _tenant(word: str) -> tuple[str, list[str]]:
    """A tenant with two seeded users, a bulk one, an agent, and one user erased already."""
    tenant_id = f"t-{uuid.uuid4().hex[:10]}"
    users = [f"u-{uuid.uuid4().hex[:6]}" for _ in range(4)]
    for user in users[:2]:
        seed_user(tenant_id, user, word)
    bulk_user(tenant_id, users[2], 40, word)
    bulk_user(tenant_id, users[3], 3, word)
    with session_scope() as session:
        session.add(Agent(tenant_id=tenant_id, agent_id="main", domains=["family"]))
        erasure, _ = start_erasure(
            session=session, tenant_id=tenant_id, user_id=users[3], requested_by="test"
        )
        erased = erasure.id
    assert run_erasure(erased).status == "done"
    return tenant_id, users


def _working_memory(tenant_id: str) -> dict[str, str]:
    client = get_redis()
    return {k: redis_text(client, k) for k in client.scan_iter(match=f"muma:wm:{tenant_id}:*")}


def test_a_tenant_is_erased_whole_and_another_is_untouched(
    api_client: TestClient, celery_worker: str
) -> None:
    doomed_word, kept_word = marker("dm"), marker("kp")
    doomed, _ = _tenant(doomed_word)
    kept, _ = _tenant(kept_word)
    kept_rows, kept_keys = snapshot(kept, None), _working_memory(kept)
    assert kept_rows["agents"] and kept_rows["erasures"] and kept_keys
    admin = make_token("admin", doomed)
    bound = make_token("admin", doomed, "someone")

    def erase(token: str, body: dict[str, str]) -> tuple[int, dict[str, str]]:
        answer = api_client.post("/v1/tenant/erase", json=body, headers=bearer(token))
        return answer.status_code, answer.json()

    assert erase(bound, {"confirm": doomed})[0] == 403
    status, body = erase(admin, {"confirm": kept})
    assert status == 422 and "confirm" in body["detail"]
    assert erase(admin, {})[0] == 422
    assert counts(doomed, None)["notes"] > 0  # nothing was erased by the refused calls

    status, body = erase(admin, {"confirm": doomed, "reason": "contract ended"})
    assert status == 202, body
    erasure_id = uuid.UUID(body["erasure_id"])
    assert api_client.get("/v1/agents", headers=bearer(admin)).status_code == 401

    def done() -> bool:
        with session_scope() as session:
            return get_erasure(session=session, erasure_id=erasure_id).status == "done"

    wait_until(done, timeout=120, interval=0.2)
    with session_scope() as session:
        report = get_erasure(session=session, erasure_id=erasure_id).report
    assert report is not None and not any(report["remaining"].values())
    assert report["removed"]["agents"] == 1 and report["removed"]["erasures"] == 1
    assert report["tokens_revoked"] == 4  # two seeded viewer tokens, admin and bound
    left = counts(doomed, None)
    assert left.pop("erasures") == 1 and not any(left.values())  # only its own record
    assert scan_database([doomed_word]) == {}
    assert scan_database([doomed]) == {("erasures", "tenant_id"): 1}  # its own record
    assert scan_redis(get_redis(), [doomed_word, f"muma:wm:{doomed}"]) == []
    assert snapshot(kept, None) == kept_rows
    assert _working_memory(kept) == kept_keys


def test_nothing_is_captured_for_any_user_of_a_tenant_being_erased(database_url: str) -> None:
    tenant_id = f"t-{uuid.uuid4().hex[:10]}"
    bulk_user(tenant_id, "someone", 2, marker("cp"))
    with session_scope() as session:
        erasure, _ = start_erasure(
            session=session, tenant_id=tenant_id, user_id=None, requested_by="test"
        )
        erasure_id = erasure.id
    with pytest.raises(BeingErasedError, match="tenant"), session_scope() as session:
        capture_episodes(
            session=session,
            tenant_id=tenant_id,
            episodes=[EpisodeInput("newcomer", "main", "s", "user", "hello")],
        )
    # A user erasure in a tenant being erased is refused too (409 naming the tenant).
    with pytest.raises(BeingErasedError), session_scope() as session:
        start_erasure(session=session, tenant_id=tenant_id, user_id="someone", requested_by="t")
    assert run_erasure(erasure_id).status == "done"
    assert counts(tenant_id, "newcomer")["episodes"] == 0
