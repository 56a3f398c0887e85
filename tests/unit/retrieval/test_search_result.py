"""A search result as the API sends it: always valid JSON, whatever the activation says."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from types import SimpleNamespace

from memory.activation.model import NO_ACCESS_BASE_LEVEL, ActivationBreakdown
from memory.retrieval.read import result_json
from memory.retrieval.service import SearchHit


def _hit(total: float) -> SearchHit:
    when = datetime(2026, 1, 2, tzinfo=UTC)
    note = SimpleNamespace(
        id=uuid.uuid4(),
        content="a note never accessed",
        kind="episodic",
        domain="general",
        visibility="open",
        speaker=None,
        agent_id="main",
        occurred_at=when,
        origin="user",
        origin_ref=None,
        trust="high",
        instruction_like=False,
        review=None,
    )
    breakdown = ActivationBreakdown(NO_ACCESS_BASE_LEVEL, 5.5, 0.0, total, 0.0, False)
    return SearchHit(note, total, 0.5, breakdown, {"bm25": 3})  # type: ignore[arg-type]


def test_a_note_without_access_has_a_null_score_and_base_level() -> None:
    # Encoded as the endpoints encode (no NaN or Infinity): a filtered search fills its
    # answer below the threshold, where such a note (B = -inf) can be listed.
    result = result_json(_hit(float("-inf")), [])
    body = json.loads(json.dumps(result, allow_nan=False))
    assert body["score"] is None and body["explanation"]["base_level"] is None
    assert body["explanation"]["threshold_passed"] is False


def test_a_finite_score_is_rounded() -> None:
    assert result_json(_hit(1.234567), [])["score"] == 1.2346
