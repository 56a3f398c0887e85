"""Who said it, as a context block line shows it: "user", "Caroline", "assistant",
"tool exec", "web example.com/notes, untrusted", "participant Bob, untrusted,
unconfirmed"."""

from __future__ import annotations

from typing import Any

MAX_REF_CHARS = 60
# Origins shown with their reference (the tool, page, file or person).
WITH_REF = {"agent", "tool", "web", "file", "participant"}
NAMES = {"consolidation": "summary", "agent": "saved by agent"}


def _short(ref: str) -> str:
    ref = " ".join(ref.split())
    for scheme in ("https://", "http://"):
        ref = ref.removeprefix(scheme)
    return ref if len(ref) <= MAX_REF_CHARS else f"{ref[: MAX_REF_CHARS - 1]}…"


def who_said(note: Any) -> str:
    """The note's provenance label (see the module docstring)."""
    origin = note.origin
    if origin == "user":
        label = " ".join((note.speaker or "").split()) or "user"
    else:
        label = NAMES.get(origin, origin)
        ref = note.origin_ref or (note.agent_id if origin == "agent" else None)
        if origin in WITH_REF and ref:
            label = f"{label} {_short(ref)}"
    if note.trust == "low":
        label += ", untrusted"
    if note.review == "candidate":
        label += ", unconfirmed"
    return label


def working_who(role: str, speaker: str | None) -> str:
    """A working item's label: its role, with the tool's or speaker's name."""
    name = " ".join((speaker or "").split())
    if role == "tool":
        return f"tool {name}" if name else "tool"
    if role == "user":
        return name or "user"
    return role
