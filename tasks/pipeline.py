"""Write-path tasks (filled in by the pipeline work)."""

from __future__ import annotations

import uuid
from collections.abc import Iterable


def enqueue_episodes(episode_ids: Iterable[uuid.UUID]) -> None:
    return None
