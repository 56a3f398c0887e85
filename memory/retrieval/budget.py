"""A time budget for one read: later, optional steps are skipped once it has run out.

Invariant: the first candidate route always runs (an answer needs candidates); every
other route, neighbour smoothing and link expansion run only while the budget lasts, and
each skipped step is named in `skipped`, so the caller can say the answer is partial.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field


@dataclass
class Deadline:
    at: float  # time.monotonic() value
    skipped: list[str] = field(default_factory=list)

    @classmethod
    def after(cls, seconds: float) -> Deadline:
        return cls(time.monotonic() + seconds)

    def allows(self, step: str) -> bool:
        """Whether `step` may still start; a refused step is recorded as skipped."""
        if time.monotonic() < self.at:
            return True
        self.skipped.append(step)
        return False

    @property
    def partial(self) -> bool:
        return bool(self.skipped)
