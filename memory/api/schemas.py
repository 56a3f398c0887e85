"""Request and response models of the HTTP API; validation names the offending field."""

from __future__ import annotations

import json
import math
import unicodedata
import uuid
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

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


# Integers JSON consumers read exactly (JavaScript's safe range).
MAX_JSON_INT = 2**53 - 1


class HugeInteger:
    """An integer of more digits than any field takes, kept as its digits by the JSON
    reader (memory.api.routes.episodes.read_json) for validation to refuse by name: it is
    neither an int nor a str, so no typed field takes it either."""

    DIGITS = 30

    def __init__(self, digits: str) -> None:
        self.digits = digits


def _check_metadata(value: dict[str, Any]) -> dict[str, Any]:
    """Free-form metadata, but small and plain enough to store, serialise (Redis, JSONB)
    and echo on every hit: at most api.max_metadata_bytes as JSON, nested at most
    METADATA_MAX_DEPTH levels, integers within ±MAX_JSON_INT, finite numbers."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > METADATA_MAX_DEPTH:
            raise ValueError(f"must not be nested more than {METADATA_MAX_DEPTH} levels deep")
        if isinstance(item, dict):
            stack.extend((child, depth + 1) for child in item.values())
        elif isinstance(item, list):
            stack.extend((child, depth + 1) for child in item)
        elif isinstance(item, HugeInteger) or (
            isinstance(item, int) and not isinstance(item, bool) and abs(item) > MAX_JSON_INT
        ):
            raise ValueError(f"integers must be within ±{MAX_JSON_INT}")
        elif isinstance(item, float) and not math.isfinite(item):
            raise ValueError("numbers must be finite")
    limit = get_settings().api.max_metadata_bytes
    if len(json.dumps(value, ensure_ascii=False).encode("utf-8")) > limit:
        raise ValueError(f"is larger than maxMetadataBytes ({limit} bytes as JSON)")
    return value


Metadata = Annotated[dict[str, Any], AfterValidator(_check_metadata)]


def aware(value: datetime | None) -> datetime | None:
    """A time without a zone is UTC; a time that cannot be told in UTC (year 9999 at
    -14:00 is year 10000 there) is refused, since nothing downstream could store it."""
    if value is None:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    try:
        value.astimezone(UTC)
    except OverflowError as exc:
        raise ValueError("must be between years 1 and 9999 in UTC") from exc
    return value


StorableTime = Annotated[datetime, AfterValidator(aware)]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class OriginIn(Strict):
    """Who put the text into the conversation, where the hook knows better than the
    role: `participant` (another person in a group chat), `web` or `file` for a tool."""

    kind: Literal["user", "assistant", "agent", "tool", "web", "file", "participant", "system"]
    ref: Annotated[str, Field(min_length=1, max_length=512)] | None = None


class EpisodeIn(Strict):
    user_id: Identifier
    agent_id: Identifier
    session_id: Identifier
    role: Role
    content: Content
    speaker: Annotated[str, Field(min_length=1, max_length=128)] | None = None
    occurred_at: StorableTime | None = None
    metadata: Metadata = Field(default_factory=dict)
    idempotency_key: Annotated[str, Field(min_length=1, max_length=256)] | None = None
    origin: OriginIn | None = None


MAX_BATCH = 500


class EpisodeBatch(Strict):
    episodes: list[EpisodeIn] = Field(min_length=1, max_length=MAX_BATCH)


class RejectedEpisode(BaseModel):
    """An item of a batch that was not stored, and why (as a 422 would say it)."""

    index: int
    detail: str
    fields: list[dict[str, str]]


class EpisodeIds(BaseModel):
    # In request order; null where the item was rejected (listed in `rejected`).
    episode_ids: list[uuid.UUID | None]
    rejected: list[RejectedEpisode] = Field(default_factory=list)


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
    # An agent writing on someone else's behalf says so: {"kind": "participant", "ref": name}.
    origin: OriginIn | None = None


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


class ForgetOut(BaseModel):
    """What forgetting a memory removed (counts and ids only: nothing of its content)."""

    id: uuid.UUID
    forgotten: bool = True
    versions: int
    knowledge_notes: int
    episodes_erased: int
    episodes_redacted: int
    notes_changed: int
    working_items: int
    files: int


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
    # Where it came from (README "Where a memory came from").
    origin: str
    origin_ref: str | None
    trust: str
    instruction_like: bool
    candidate: bool
    sources: list[SourceOut] = Field(default_factory=list)
    links: list[dict[str, Any]] = Field(default_factory=list)
