"""The query vector's text form sent by the read path's compiled statements."""

from __future__ import annotations

import numpy as np
from pgvector.sqlalchemy import Vector

from memory.notes.vectors import vector_text


def test_vector_text_is_what_the_vector_type_would_bind() -> None:
    vector = np.random.default_rng(3).standard_normal(384).astype(np.float32)
    bind = Vector(384).bind_processor(None)
    assert bind is not None
    assert vector_text(vector) == bind(vector)
    assert np.allclose(np.array(vector_text(vector)[1:-1].split(","), dtype=np.float32), vector)
