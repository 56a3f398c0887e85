"""SPLADE-tiny's BERT layers as one onnxruntime graph, built from the model's own weights.

Written op by op in numpy, the forward pass of a 19-token query took about 1.2 ms of CPU,
most of it numpy's per-call overhead on small arrays, all of it holding the interpreter
lock beside the request's other threads; as one graph it took about 0.3 ms, and
onnxruntime releases the lock while it runs (commit f6fd4f9).

Invariants: `hidden(embedded)` is BERT's post-LayerNorm encoder (exact GELU, softmax
attention over all tokens) followed by the masked-language head's transform, on the
summed word, position and token-type embeddings, in float32, for any number of tokens;
the output projection onto the terms is not part of it (`SparseEncoder`); one intra-op
thread, as the other models of the process run.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from memory.clients.onnx_graphs import one_thread_session

OPSET = 17  # LayerNormalization
HEAD = "cls.predictions.transform."


class BertGraph:
    """The encoder layers and the head's transform of a BERT checkpoint, on onnxruntime."""

    def __init__(self, weights: dict[str, np.ndarray], config: dict[str, Any]) -> None:
        from onnx import TensorProto, helper

        build = _GraphBuilder(weights, config)
        hidden = build.forward("embedded")
        width = build.width
        graph = helper.make_graph(
            build.nodes,
            "splade_encoder",
            [helper.make_tensor_value_info("embedded", TensorProto.FLOAT, [None, width])],
            [helper.make_tensor_value_info(hidden, TensorProto.FLOAT, [None, width])],
            build.constants,
        )
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
        self._session = one_thread_session(model)

    def hidden(self, embedded: np.ndarray) -> np.ndarray:
        """tokens x width hidden states of the head's transform, for the summed embeddings."""
        feed = {"embedded": np.ascontiguousarray(embedded, dtype=np.float32)}
        return self._session.run(None, feed)[0]


class _GraphBuilder:
    """Appends nodes and constants; each method returns the name of the value it made."""

    def __init__(self, weights: dict[str, np.ndarray], config: dict[str, Any]) -> None:
        self.weights = weights
        self.layers = int(config["num_hidden_layers"])
        self.heads = int(config["num_attention_heads"])
        self.width = int(weights["bert.embeddings.LayerNorm.gamma"].shape[0])
        self.eps = float(config.get("layer_norm_eps", 1e-12))
        self.nodes: list[Any] = []
        self.constants: list[Any] = []
        self._count = 0

    def forward(self, embedded: str) -> str:
        hidden = self.norm(embedded, "bert.embeddings.LayerNorm")
        for layer in range(self.layers):
            hidden = self.layer(hidden, f"bert.encoder.layer.{layer}.")
        return self.norm(self.gelu(self.linear(hidden, HEAD + "dense")), HEAD + "LayerNorm")

    def layer(self, hidden: str, prefix: str) -> str:
        size = self.width // self.heads
        split_shape = self.constant(np.array([0, self.heads, size], np.int64))

        def split(name: str, perm: list[int]) -> str:
            projected = self.linear(hidden, prefix + "attention.self." + name)
            return self.op("Transpose", self.op("Reshape", projected, split_shape), perm=perm)

        query, key = split("query", [1, 0, 2]), split("key", [1, 2, 0])
        value = split("value", [1, 0, 2])
        scale = self.constant(np.array(1.0 / np.sqrt(size), np.float32))
        scores = self.op("Mul", self.op("MatMul", query, key), scale)
        weights = self.op("Softmax", scores, axis=-1)
        context = self.op("Transpose", self.op("MatMul", weights, value), perm=[1, 0, 2])
        joined = self.op("Reshape", context, self.constant(np.array([0, self.width], np.int64)))
        attended = self.op("Add", self.linear(joined, prefix + "attention.output.dense"), hidden)
        hidden = self.norm(attended, prefix + "attention.output.LayerNorm")
        inner = self.gelu(self.linear(hidden, prefix + "intermediate.dense"))
        output = self.op("Add", self.linear(inner, prefix + "output.dense"), hidden)
        return self.norm(output, prefix + "output.LayerNorm")

    def linear(self, x: str, name: str) -> str:
        weight = self.constant(self.weights[name + ".weight"].T)
        bias = self.constant(self.weights[name + ".bias"])
        return self.op("Add", self.op("MatMul", x, weight), bias)

    def norm(self, x: str, name: str) -> str:
        gamma = self.constant(self.weights[name + ".gamma"])
        beta = self.constant(self.weights[name + ".beta"])
        return self.op("LayerNormalization", x, gamma, beta, axis=-1, epsilon=self.eps)

    def gelu(self, x: str) -> str:
        """BERT's exact GELU, x · Φ(x) = 0.5 · x · (1 + erf(x / √2))."""
        root_two = self.constant(np.array(np.sqrt(2.0), np.float32))
        erf = self.op("Erf", self.op("Div", x, root_two))
        one, half = self.constant(np.float32(1.0)), self.constant(np.float32(0.5))
        return self.op("Mul", self.op("Mul", x, half), self.op("Add", erf, one))

    def op(self, kind: str, *inputs: str, **attributes: Any) -> str:
        from onnx import helper

        name = self._name(kind)
        self.nodes.append(helper.make_node(kind, list(inputs), [name], **attributes))
        return name

    def constant(self, value: Any) -> str:
        from onnx import numpy_helper

        name = self._name("const")
        array = np.ascontiguousarray(np.asarray(value))
        if array.dtype == np.float64:
            array = array.astype(np.float32)
        self.constants.append(numpy_helper.from_array(array, name))
        return name

    def _name(self, kind: str) -> str:
        self._count += 1
        return f"{kind.lower()}_{self._count}"
