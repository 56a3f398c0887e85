"""Sizing the embedded PostgreSQL's shared_buffers."""

import pytest
from pydantic import ValidationError

from memory.config import Settings
from memory.errors import ConfigError
from memory.runtime.pg_memory import shared_buffers_mb

GB = 2**30


@pytest.mark.parametrize(
    ("total", "expected"),
    [(24 * GB, 4096), (8 * GB, 2048), (2 * GB, 512), (256 * 2**20, 128)],
)
def test_auto_is_a_quarter_of_memory_within_bounds(total: int, expected: int) -> None:
    assert shared_buffers_mb("auto", total) == expected


def test_explicit_sizes() -> None:
    assert shared_buffers_mb("512MB", 24 * GB) == 512
    assert shared_buffers_mb("2gb", 24 * GB) == 2048
    assert shared_buffers_mb("16MB", 24 * GB) == 128  # below PostgreSQL's own default


def test_a_bad_size_names_the_setting() -> None:
    with pytest.raises(ConfigError, match="embedded_shared_buffers"):
        shared_buffers_mb("lots", 24 * GB)
    with pytest.raises(ValidationError, match="embedded_shared_buffers"):
        Settings(embedded_shared_buffers="lots")
