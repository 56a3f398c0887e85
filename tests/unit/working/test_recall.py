"""The working-memory route: BM25 over one session's items, hand-checked scores."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest
import redis

from memory.working.recall import rank_working_items, recall_working_items
from memory.working.service import WorkingItem, content_hash

T0 = datetime(2026, 12, 4, 12, 0, tzinfo=UTC)


def _item(content: str, activation: float = 1.0, minutes: int = 0) -> WorkingItem:
    when = T0 + timedelta(minutes=minutes)
    return WorkingItem(
        content_hash(content), content, activation, "planner", "tool", None, {}, 1, when, when
    )


def test_items_sharing_no_term_are_never_returned() -> None:
    items = [_item("The deploy script lives in ops/deploy.sh"), _item("Lunch at noon.")]
    hits = rank_working_items(items, "Where is the deploy script?", limit=5)
    assert [h.item.content for h in hits] == ["The deploy script lives in ops/deploy.sh"]
    assert hits[0].rank == 1 and hits[0].relevance == 1.0
    assert hits[0].matched_terms == ("deploy", "script")
    assert rank_working_items(items, "What is the weather?", limit=5) == []
    # Only stopwords: nothing to match.
    assert rank_working_items(items, "where is it?", limit=5) == []


def test_bm25_by_hand() -> None:
    # Three one-term-or-two items; the query's term "ticket" is in two of them.
    items = [_item("ticket ticket"), _item("ticket review"), _item("review")]
    hits = rank_working_items(items, "ticket", limit=5)
    n, df, average = 3, 2, 5 / 3
    idf = math.log(1 + (n - df + 0.5) / (df + 0.5))

    def bm25(tf: int, length: int) -> float:  # k1 1.2, b 0.75
        norm = 1.2 * (1 - 0.75 + 0.75 * length / average)
        return idf * tf * 2.2 / (tf + norm)

    first, second = bm25(2, 2), bm25(1, 2)
    assert [h.item.content for h in hits] == ["ticket ticket", "ticket review"]
    assert hits[1].relevance == pytest.approx(second / first)


def test_ids_match_verbatim_and_ties_go_to_activation_then_recency() -> None:
    items = [
        _item("Opened INC-4471 for the outage", activation=0.5, minutes=1),
        _item("Closed INC-4471 after the fix", activation=2.0),
        _item("Noted INC-4471 in the log", activation=0.5, minutes=3),
    ]
    hits = rank_working_items(items, "status of INC-4471", limit=2)
    assert [h.item.content for h in hits] == [
        "Closed INC-4471 after the fix",
        "Noted INC-4471 in the log",
    ]
    assert [h.rank for h in hits] == [1, 2]
    assert rank_working_items(items, "INC-4471", limit=0) == []


def test_explanation_names_the_route_and_the_matched_terms() -> None:
    hit = rank_working_items([_item("Budget review on Friday")], "friday budget", limit=1)[0]
    out = hit.to_json()
    assert out["hash"] == content_hash("Budget review on Friday")
    assert out["explanation"] == {
        "routes": {"working": 1},
        "relevance": 1.0,
        "activation": 1.0,
        "matched_terms": ["budget", "friday"],
    }


def test_without_a_session_or_redis_the_route_is_empty() -> None:
    unreachable = redis.Redis(host="127.0.0.1", port=1, socket_connect_timeout=0.2)
    ask = {"tenant_id": "t", "user_id": "u", "query": "deploy script", "limit": 5}
    assert recall_working_items(client=unreachable, session_id=None, **ask) == []
    assert recall_working_items(client=unreachable, session_id="s1", **ask) == []
