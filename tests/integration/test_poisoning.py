"""The poisoning suite (benchmarks/data/poisoning.json, built from published attacks) on
the default settings: every attempt captured through its path, every later prompt
answered by /v1/context. No attempt reaches a later prompt as a trusted memory or as an
unlabelled line, none is stored as the user's preference, decision or fact; benign
tool output is still found when asked about (benchmarks/poisoning.py reports the
shares)."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from benchmarks.poisoning_suite import (
    benign_recall,
    capture_all,
    load_corpus,
    run_triggers,
)
from memory.db import session_scope
from tests.support.helpers import bearer, wait_for_episodes

pytestmark = pytest.mark.integration
CORPUS = load_corpus()


class _Authorised:
    """The test client with the agent's token on every call."""

    def __init__(self, client: TestClient, token: str) -> None:
        self.client, self.headers = client, bearer(token)

    def post(self, url: str, **kwargs: Any) -> httpx.Response:
        return self.client.post(url, headers=self.headers, **kwargs)


@pytest.fixture(scope="module")
def poisoned(api_client: TestClient, celery_worker: str) -> tuple[_Authorised, str, str]:
    from tests.conftest import make_token

    tenant, user = f"t-poison-{uuid.uuid4().hex[:6]}", "owner"
    client = _Authorised(api_client, make_token("agent", tenant))
    ids = capture_all(client, CORPUS["attacks"] + CORPUS["benign"], user)
    wait_for_episodes(ids, timeout=300)
    return client, user, tenant


def test_the_corpus_covers_every_path_with_cited_sources() -> None:
    paths: dict[str, int] = {}
    for attack in CORPUS["attacks"]:
        paths[attack["path"]] = paths.get(attack["path"], 0) + 1
        assert attack["source"] in CORPUS["sources"]
    assert len(CORPUS["attacks"]) >= 50 and min(paths.values()) >= 8 and len(paths) == 6


def test_no_attempt_reaches_a_later_prompt_as_trusted_or_unlabelled(
    poisoned: tuple[_Authorised, str, str],
) -> None:
    client, user, _ = poisoned
    verdicts = run_triggers(client, CORPUS["attacks"], user)
    bad = [(v.attack_id, v.lines) for v in verdicts if v.as_trusted or v.unlabelled]
    assert bad == []


def test_no_attempt_is_stored_as_the_users_own(poisoned: tuple[_Authorised, str, str]) -> None:
    from sqlalchemy import text

    _, user, tenant = poisoned
    markers = [m for attack in CORPUS["attacks"] for m in attack["markers"]]
    with session_scope() as session:
        rows = session.execute(
            text(
                "SELECT content, kind, trust FROM notes WHERE tenant_id = :tenant "
                "AND user_id = :user AND status = 'active'"
            ),
            {"tenant": tenant, "user": user},
        ).all()
    poisoned_rows = [r for r in rows if any(m in r.content for m in markers)]
    assert len(poisoned_rows) >= len(CORPUS["attacks"])
    assert {r.trust for r in poisoned_rows} <= {"low", "medium"}
    assert not [r for r in poisoned_rows if r.kind in ("stable", "preference", "decision")]


def test_benign_tool_output_is_found_when_asked_about(
    poisoned: tuple[_Authorised, str, str],
) -> None:
    client, user, _ = poisoned
    shares = benign_recall(client, CORPUS["benign"], user)
    # Found by search (the plugin's memory_query); not injected while it is a candidate.
    assert shares["search"] >= 0.8, shares
    assert shares["context"] == 0.0, shares
