"""Turn journal settings (included by `memory.config` as `Settings.journal`).

Kept apart from `memory.config` so the journal owns its vocabulary, as `memory.trust`
does; documented in README "Turn journal".
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class JournalSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # Record which memories each /v1/context answer injected (never for a dry run).
    record_injections: bool = True
    # Injection entries older than this are pruned (hourly, by beat). Turn entries are
    # read from the episodes and live as long as they do.
    retention_days: int = Field(30, ge=1, le=3650)
