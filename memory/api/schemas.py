"""Request and response models of the HTTP API; validation names the offending field."""

from __future__ import annotations

import unicodedata
import uuid
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator

from memory.config import get_settings


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be blank")
    return value


def _no_control_characters(value: str) -> str:
    if any(unicodedata.category(ch) in ("Cc", "Cf", "Cs") for ch in value):
        raise ValueError("must not contain control characters")
    return _not_blank(value)


Identifier = Annotated[
    str, Field(min_length=1, max_length=128), AfterValidator(_no_control_characters)
]


# A search query or prompt of only whitespace has nothing to rank by (the dense route
# would return whichever notes lie nearest to an empty text): refused, naming the field.
NotBlank = AfterValidator(_not_blank)


Role = Literal["user", "assistant", "tool", "system"]
Kind = Literal["stable", "preference", "episodic", "ephemeral", "decision", "knowledge"]
Visibility = Literal["open", "scoped", "private", "user-only"]
Ttl = Literal["session", "short", "permanent"]


def _check_content(value: str) -> str:
    limit = get_settings().api.max_content_bytes
    if len(value.encode("utf-8")) > limit:
        raise ValueError(f"is longer than maxContentBytes ({limit} bytes)")
    if "\x00" in value:
        raise ValueError("must not contain NUL characters")
    if not value.strip():
        raise ValueError("must not be empty")
    return value


Content = Annotated[str, AfterValidator(_check_content)]
METADATA_MAX_DEPTH = 32


def _check_metadata(value: dict[str, Any]) -> dict[str, Any]:
    """Free-form metadata, but shallow enough to store and serialise (Redis, JSONB)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > METADATA_MAX_DEPTH:
            raise ValueError(f"must not be nested more than {METADATA_MAX_DEPTH} levels deep")
        if isinstance(item, dict):
            stack.extend((child, depth + 1) for child in item.values())
        elif isinstance(item, list):
            stack.extend((child, depth + 1) for child in item)
    return value


Metadata = Annotated[dict[str, Any], AfterValidator(_check_metadata)]


def aware(value: datetime | None) -> datetime | None:
    if value is not None and value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class EpisodeIn(Strict):
    user_id: Identifier
    agent_id: Identifier
    session_id: Identifier
    role: Role
    content: Content
    speaker: Annotated[str, Field(min_length=1, max_length=128)] | None = None
    occurred_at: datetime | None = None
    metadata: Metadata = Field(default_factory=dict)
    idempotency_key: Annotated[str, Field(min_length=1, max_length=256)] | None = None

    @field_validator("occurred_at")
    @classmethod
    def _timezone_aware(cls, value: datetime | None) -> datetime | None:
        return aware(value)


class EpisodeBatch(Strict):
    episodes: list[EpisodeIn] = Field(min_length=1, max_length=500)


class EpisodeIds(BaseModel):
    episode_ids: list[uuid.UUID]


class MemoryIn(Strict):
    user_id: Identifier
    agent_id: Identifier
    session_id: Identifier | None = None
    content: Content
    kind: Kind | None = None
    domain: Annotated[str, Field(min_length=1, max_length=64)] | None = None
    visibility: Visibility | None = None
    tags: list[Annotated[str, Field(min_length=1, max_length=64)]] = Field(
        default_factory=list, max_length=32
    )
    pinned: bool = False
    ttl: Ttl | None = None
    speaker: Annotated[str, Field(min_length=1, max_length=128)] | None = None
    metadata: Metadata = Field(default_factory=dict)


class MemoryAccepted(BaseModel):
    episode_id: uuid.UUID


class MemoryWritten(BaseModel):
    episode_id: uuid.UUID
    note_ids: list[uuid.UUID]
    decision: str


class SourceOut(BaseModel):
    episode_id: uuid.UUID
    occurred_at: datetime
    metadata: dict[str, Any]


class NoteOut(BaseModel):
    id: uuid.UUID
    lineage_id: uuid.UUID
    version: int
    user_id: str
    agent_id: str
    session_id: str | None
    content: str
    context: str | None
    keywords: list[str]
    tags: list[str]
    kind: str
    domain: str
    visibility: str
    pinned: bool
    status: str
    importance: float
    occurred_at: datetime
    created_at: datetime
    valid_from: datetime
    valid_to: datetime | None
    superseded_by: uuid.UUID | None
    expires_at: datetime | None
    access_count: int
    last_access_at: datetime
    half_life_hours: float
    sources: list[SourceOut] = Field(default_factory=list)
    links: list[dict[str, Any]] = Field(default_factory=list)
