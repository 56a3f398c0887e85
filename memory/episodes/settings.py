"""What a captured turn must be to become a memory (included by `memory.config` as
`Settings.capture`; documented in README "What is remembered").

Each rule is a setting so an operator who wants a verbatim archive can turn it off; the
episode itself is always stored, whatever the rules decide.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class CaptureSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # A user's command to the agent host or to the memory itself: "/reset", "/model gpt-5",
    # "please pin memory 3f2a…" (words that act on a memory id, and nothing else).
    skip_commands: bool = True
    # A short turn that only steers the task: "ok (default)", "yes, go ahead", "2".
    skip_acknowledgements: bool = True
    # Text the service itself injected or returned, repeated back: a <relevant-memories>
    # block, memory_query's listing lines, or an assistant turn whose content words are
    # all in the memories injected into its session in the last echo_window_minutes.
    skip_echoes: bool = True
    echo_window_minutes: int = Field(120, ge=1, le=10080)
