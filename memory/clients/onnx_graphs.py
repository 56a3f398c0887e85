"""Graphs built in code (from a model's weights) run on onnxruntime.

Invariant: every such session runs on one intra-op and one inter-op thread, as the
embedder does: a query's matrices are small, and more threads only compete with
PostgreSQL and the request for the machine's cores.
"""

from __future__ import annotations

from typing import Any


def one_thread_session(model: Any) -> Any:
    """An onnxruntime CPU session of `model` (an `onnx.ModelProto`) on one thread."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    return ort.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
