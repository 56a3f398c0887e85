"""What a note's origin decides at write time: its trust, its kind, whether it waits for
review, whether it is stored at all.

Invariants: a note from an origin below high trust is never a stable fact, preference or
decision of the user (it is kept as what it is: an episode, or for tool output an
ephemeral one), unless a medium-trust caller chose the kind explicitly; the trust written on a note
is the one its origin had when it was written.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from memory.trust.instructions import looks_like_instruction
from memory.trust.origin import TRUST_ORDER
from memory.trust.settings import CandidateSettings, TrustSettings

# Kinds that say what the user holds, wants or decided: only the user's own words.
USER_KINDS = frozenset({"stable", "preference", "decision"})


@dataclass(frozen=True)
class NoteTrust:
    origin: str
    origin_ref: str | None
    trust: str
    instruction_like: bool
    review: str | None

    def columns(self) -> dict[str, object]:
        return {
            "origin": self.origin,
            "origin_ref": self.origin_ref,
            "trust": self.trust,
            "instruction_like": self.instruction_like,
            "review": self.review,
        }


class Standing(Protocol):
    trust: str
    review: str | None


def may_lend(source: Standing, into: Standing) -> bool:
    """Whether words of `source` may be added to `into` (evolution): never from a less
    trusted note, nor from a candidate into a note that is not one."""
    if TRUST_ORDER[source.trust] < TRUST_ORDER[into.trust]:
        return False
    return source.review is None or into.review is not None


def drops_capture(trust: str, settings: TrustSettings) -> bool:
    """True when the settings keep nothing of a capture at this trust."""
    return settings.drop_low_trust and trust == "low"


def kind_for_trust(kind: str, trust: str, *, role: str, explicit_kind: bool) -> str:
    """The kind a note of this trust may have (see the module invariants)."""
    # An agent's explicit kind is its own claim (medium trust); low-trust text never
    # becomes the user's, whatever kind a caller (perhaps prompted by it) asked for.
    if trust == "high" or kind not in USER_KINDS or (explicit_kind and trust != "low"):
        return kind
    return "ephemeral" if role == "tool" else "episodic"


def is_candidate(
    *, origin: str, trust: str, kind: str, agent_id: str, settings: CandidateSettings
) -> bool:
    return (
        trust in settings.trust
        or origin in settings.origins
        or kind in settings.kinds
        or agent_id in settings.agents
    )


def assess_note(
    *,
    content: str,
    origin: str,
    origin_ref: str | None,
    kind: str,
    agent_id: str,
    trust_settings: TrustSettings,
    candidate_settings: CandidateSettings,
) -> NoteTrust:
    trust = trust_settings.level(origin)
    candidate = is_candidate(
        origin=origin, trust=trust, kind=kind, agent_id=agent_id, settings=candidate_settings
    )
    return NoteTrust(
        origin=origin,
        origin_ref=origin_ref,
        trust=trust,
        instruction_like=looks_like_instruction(content),
        review="candidate" if candidate else None,
    )
