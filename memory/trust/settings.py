"""Trust settings: how much each origin is trusted, and which captures wait for review.

Kept apart from `memory.config` (which includes it as `Settings.trust`) so the trust
area owns its vocabulary; the defaults are documented in README "Where a memory came
from".
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

TrustLevel = Literal["high", "medium", "low"]
Origin = Literal[
    "user",
    "assistant",
    "agent",
    "tool",
    "web",
    "file",
    "participant",
    "import",
    "sync",
    "system",
    "consolidation",
]

# The bound user's own words are the only high-trust origin: everything an agent, a tool,
# a page, a file or another person put into the conversation may carry someone else's
# intent (persistent prompt injection: AgentPoison 2024, MINJA 2025).
DEFAULT_TRUST: dict[str, TrustLevel] = {
    "user": "high",
    "assistant": "medium",
    "agent": "medium",
    "import": "medium",
    "sync": "medium",
    "system": "medium",
    "consolidation": "medium",
    "tool": "low",
    "web": "low",
    "file": "low",
    "participant": "low",
}


class TrustSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # Trust per origin; an origin left out keeps its default.
    levels: dict[Origin, TrustLevel] = Field(default_factory=dict)
    # Store nothing from low-trust captures (the episode is kept, decided DROP).
    drop_low_trust: bool = False
    # How much a memory's score counts in /v1/context by its trust (default injection
    # prefers trusted memories; search results are not reweighted).
    injection_weight: dict[TrustLevel, float] = Field(
        default_factory=lambda: {"high": 1.0, "medium": 1.0, "low": 0.7}
    )

    def level(self, origin: str) -> TrustLevel:
        return self.levels.get(origin, DEFAULT_TRUST.get(origin, "low"))  # type: ignore[call-overload]


class CandidateSettings(BaseModel):
    """Which new memories wait as candidates for review by the user or an admin."""

    model_config = ConfigDict(extra="forbid")

    trust: list[TrustLevel] = Field(default_factory=lambda: ["low"])
    origins: list[Origin] = Field(default_factory=list)
    kinds: list[str] = Field(default_factory=list)
    agents: list[str] = Field(default_factory=list)
    # "never": candidates are found by search (marked) but never injected; "marked":
    # injected, each line marked as unconfirmed.
    inject: Literal["never", "marked"] = "never"
