"""Where a captured turn came from, and what follows from it.

Invariants:
- Every episode and note has an origin; a caller may declare one, but never a more
  trusted one than its role allows (only a `user` turn can be the user's own words).
- The origin is decided once, at capture, from what the caller declared and what the
  hook knows (role, source, speaker, the tool's URL or path in the metadata); a note
  takes its episode's origin, and a knowledge note the least trusted of its sources.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from memory.errors import InvalidInputError

TRUST_ORDER = {"low": 0, "medium": 1, "high": 2}
# Origins a caller may declare for each role (the first is the default for the role).
DECLARABLE: dict[str, tuple[str, ...]] = {
    "user": ("user", "participant", "agent"),
    "assistant": ("assistant",),
    "tool": ("tool", "web", "file"),
    "system": ("system",),
}
# Origins set by the service itself for a capture path, whatever the role.
SOURCE_ORIGINS = {"explicit": "agent", "import": "import", "sync": "sync"}
WEB_TOOLS = frozenset({"web_fetch", "fetch", "browser", "web_search", "browse", "http"})
FILE_TOOLS = frozenset({"read", "read_file", "file_read", "cat", "open_file"})
URL_KEYS = ("url", "source_url", "href")
PATH_KEYS = ("file_path", "path", "filename")
MAX_REF_CHARS = 512


@dataclass(frozen=True)
class EpisodeOrigin:
    kind: str
    ref: str | None = None


def _meta(metadata: Mapping[str, Any], keys: tuple[str, ...]) -> str | None:
    for key in keys:
        value = metadata.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()[:MAX_REF_CHARS]
    return None


def _tool_origin(speaker: str | None, metadata: Mapping[str, Any]) -> EpisodeOrigin:
    url, path = _meta(metadata, URL_KEYS), _meta(metadata, PATH_KEYS)
    tool = (speaker or _meta(metadata, ("tool",)) or "").strip()
    if url or tool.casefold() in WEB_TOOLS:
        return EpisodeOrigin("web", url or tool or None)
    if path or tool.casefold() in FILE_TOOLS:
        return EpisodeOrigin("file", path or tool or None)
    return EpisodeOrigin("tool", tool or None)


def derive_origin(
    *,
    role: str,
    source: str,
    speaker: str | None,
    metadata: Mapping[str, Any],
    declared: EpisodeOrigin | None = None,
) -> EpisodeOrigin:
    """The turn's origin (see the module invariants); a declaration the role does not
    allow raises InvalidInputError naming `origin.kind`."""
    if declared is not None:
        allowed = DECLARABLE.get(role, ())
        if source == "explicit":
            allowed = ("agent", "participant")
        if declared.kind not in allowed:
            raise InvalidInputError(
                f"origin.kind {declared.kind!r} is not allowed for role {role!r} "
                f"(one of: {', '.join(allowed)})",
                field="origin.kind",
            )
        ref = declared.ref or (speaker if declared.kind == "participant" else None)
        return EpisodeOrigin(declared.kind, ref[:MAX_REF_CHARS] if ref else None)
    if source in SOURCE_ORIGINS:
        return EpisodeOrigin(SOURCE_ORIGINS[source], speaker)
    if role == "tool":
        return _tool_origin(speaker, metadata)
    if role in ("assistant", "system"):
        return EpisodeOrigin(role, speaker)
    return EpisodeOrigin("user", None)


def least_trusted(levels: list[str]) -> str:
    """The lowest of `levels` ("low" when there are none: nothing vouches for it)."""
    return min(levels, key=TRUST_ORDER.__getitem__, default="low")


def declared_origin(value: Any) -> EpisodeOrigin | None:
    """An API body's `origin` ({kind, ref}) as an EpisodeOrigin; None when not given."""
    if value is None:
        return None
    return EpisodeOrigin(str(value.kind), value.ref)


def provenance(note: Any) -> dict[str, Any]:
    """Where a note came from, as every answer that shows a note gives it."""
    return {
        "origin": note.origin,
        "origin_ref": note.origin_ref,
        "trust": note.trust,
        "instruction_like": note.instruction_like,
        "candidate": note.review == "candidate",
    }
