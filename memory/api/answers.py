"""The documented shapes of the read path's answers (/v1/search, /v1/context).

The routes build their answers as plain dicts for speed (no model validation on the hot
path); these models are what the OpenAPI document says they hold, and the tests check
real answers against that document.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from pydantic import BaseModel


class Explanation(BaseModel):
    """How a memory was ranked (README "Using it from an agent")."""

    routes: dict[str, int]
    relevance: float
    base_level: float | None
    spreading: float | None
    noise: float
    retention: float | None
    threshold_passed: bool
    link_spread: float
    speaker_boost: float
    length_prior: float
    sparse: float
    similarity: float | None


class Source(BaseModel):
    episode_id: uuid.UUID
    occurred_at: datetime
    metadata: dict[str, Any]


class MemoryResult(BaseModel):
    id: uuid.UUID
    content: str
    kind: str
    domain: str
    visibility: str
    speaker: str | None
    agent_id: str
    origin: str
    origin_ref: str | None
    trust: str
    instruction_like: bool
    candidate: bool
    occurred_at: datetime
    score: float | None
    sources: list[Source]
    explanation: Explanation


class WorkingResult(BaseModel):
    """An item of the session's working memory that matches the query."""

    hash: str
    content: str
    activation: float
    agent_id: str
    role: str
    speaker: str | None
    metadata: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    score: float
    explanation: dict[str, Any]


class SearchAnswer(BaseModel):
    results: list[MemoryResult]
    working: list[WorkingResult]
    took_ms: float


class ContextAnswer(BaseModel):
    context: str
    memories: list[MemoryResult]
    working: list[WorkingResult]
    tokens: int
    took_ms: float
    timed_out: bool
