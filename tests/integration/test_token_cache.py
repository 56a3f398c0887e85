"""Token authentication cache: a hit skips the database; a revocation applies at once in
every process (a counter in Redis), and within the TTL when that counter could not be told."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import event, select, update

from memory.access import tokens
from memory.access.models import ApiToken
from memory.access.tokens import Principal, TokenCache, authenticate, hash_token, revoke_token
from memory.db import get_engine, session_scope
from memory.errors import AuthenticationError
from memory.types import utcnow
from tests.conftest import make_token
from tests.support.helpers import bearer

pytestmark = pytest.mark.integration


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture()
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    """A fresh process cache whose time the test moves."""
    clock = Clock()
    monkeypatch.setattr(tokens, "TOKEN_CACHE", TokenCache(ttl=30, clock=clock))
    return clock


@pytest.fixture()
def statements(database_url: str) -> Iterator[list[str]]:
    """Every SQL statement the process sends while the test runs."""
    seen: list[str] = []

    def record(conn, cursor, statement, parameters, context, executemany) -> None:  # type: ignore[no-untyped-def]
        seen.append(statement)

    engine = get_engine()
    event.listen(engine, "before_cursor_execute", record)
    yield seen
    event.remove(engine, "before_cursor_execute", record)


def _token_id(secret: str) -> str:
    with session_scope() as session:
        token = session.scalar(select(ApiToken).where(ApiToken.token_hash == hash_token(secret)))
        assert token is not None
        return str(token.id)


def _authenticate(secret: str) -> Principal:
    with session_scope() as session:
        return authenticate(session=session, secret=secret)


def test_a_cache_hit_does_not_touch_the_database(
    clock: Clock, statements: list[str], tenant_id: str
) -> None:
    secret = make_token("agent", tenant_id)
    statements.clear()
    first = _authenticate(secret)
    assert any("api_tokens" in s for s in statements)
    statements.clear()
    assert _authenticate(secret) == first
    assert statements == []
    clock.now += 31  # past the TTL: looked up again
    assert _authenticate(secret) == first
    assert any("api_tokens" in s for s in statements)


def test_revoking_clears_the_local_cache_at_once(clock: Clock, tenant_id: str) -> None:
    secret = make_token("agent", tenant_id)
    _authenticate(secret)
    with session_scope() as session:
        revoke_token(session=session, token_ref=_token_id(secret))
    with pytest.raises(AuthenticationError):
        _authenticate(secret)


def test_a_revocation_made_elsewhere_applies_within_the_ttl(clock: Clock, tenant_id: str) -> None:
    secret = make_token("agent", tenant_id)
    _authenticate(secret)
    # Another process (the CLI, another API worker) revokes: this cache does not hear it.
    with session_scope() as session:
        session.execute(
            update(ApiToken)
            .where(ApiToken.token_hash == hash_token(secret))
            .values(revoked_at=utcnow())
        )
    assert _authenticate(secret).tenant_id == tenant_id
    clock.now += 30
    with pytest.raises(AuthenticationError):
        _authenticate(secret)


def test_unknown_tokens_are_not_cached(clock: Clock, statements: list[str]) -> None:
    for _ in range(2):
        statements.clear()
        with pytest.raises(AuthenticationError):
            _authenticate("muma_not-a-real-token")
        assert any("api_tokens" in s for s in statements)


def test_a_dropped_token_is_not_cached_again_within_the_ttl() -> None:
    """A request that read the row before the revocation committed cannot re-cache it."""
    clock = Clock()
    cache = TokenCache(ttl=30, clock=clock)
    principal = Principal(token_id=uuid.uuid4(), role="agent", tenant_id="t")
    cache.put("h", principal)
    cache.drop("h")
    cache.put("h", principal)
    assert cache.get("h") is None
    clock.now += 31
    cache.put("h", principal)
    assert cache.get("h") == principal


def test_the_cache_stays_bounded() -> None:
    cache = TokenCache(ttl=30, size=3, clock=Clock())
    principals = {
        f"h{i}": Principal(token_id=uuid.uuid4(), role="agent", tenant_id="t") for i in range(5)
    }
    for key, principal in principals.items():
        cache.put(key, principal)
    kept = [key for key in principals if cache.get(key) is not None]
    assert kept == ["h2", "h3", "h4"]


def test_revoked_through_the_api_is_401_at_once(
    api_client: TestClient, clock: Clock, tenant_id: str
) -> None:
    admin, secret = make_token("admin", tenant_id), make_token("agent", tenant_id)
    assert api_client.get("/v1/pipeline", headers=bearer(secret)).status_code == 200
    revoked = api_client.delete(f"/v1/tokens/{_token_id(secret)}", headers=bearer(admin))
    assert revoked.status_code == 200, revoked.text
    assert api_client.get("/v1/pipeline", headers=bearer(secret)).status_code == 401


def test_a_revocation_in_another_process_applies_at_once(
    clock: Clock, statements: list[str], tenant_id: str
) -> None:
    """`muma tokens revoke` in its own process: this process's cache hears of it through
    the revocation counter in Redis, without waiting for the TTL."""
    import subprocess
    import sys

    from tests.conftest import ROOT

    secret = make_token("agent", tenant_id)
    _authenticate(secret)
    statements.clear()
    _authenticate(secret)
    assert statements == []  # cached
    revoked = subprocess.run(
        [sys.executable, "-m", "memory.cli.main", "tokens", "revoke", _token_id(secret)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert revoked.returncode == 0, revoked.stderr
    with pytest.raises(AuthenticationError):
        _authenticate(secret)


def test_without_redis_the_cache_is_bypassed(
    clock: Clock, statements: list[str], tenant_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = make_token("agent", tenant_id)
    _authenticate(secret)
    monkeypatch.setattr(tokens, "_revocation_epoch", lambda: None)  # Redis unreachable
    statements.clear()
    assert _authenticate(secret).tenant_id == tenant_id
    assert any("api_tokens" in s for s in statements)
