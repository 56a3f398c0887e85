"""The API freezes its start-up heap: a full collection would otherwise walk every
object of its modules and model session (~160 ms with the GIL held, measured), and a
/v1/context that ran into one overran its time budget."""

from __future__ import annotations

import gc

import pytest
from fastapi.testclient import TestClient

from memory.api.app import create_app

pytestmark = pytest.mark.integration


def test_start_up_moves_the_live_heap_out_of_the_collectors_reach(database_url: str) -> None:
    gc.unfreeze()
    assert gc.get_freeze_count() == 0
    with TestClient(create_app()):  # runs the start-up (lifespan)
        frozen = gc.get_freeze_count()
    assert frozen > 0.9 * (frozen + len(gc.get_objects()))  # nearly all of it at start-up
