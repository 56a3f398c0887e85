"""The int8 rewrite of dequantized-weight products, on small synthetic ONNX graphs."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from memory.clients.onnx_int8 import quantize_weight_products
from memory.errors import ConfigError

RNG = np.random.default_rng(7)


def _dequantized_matmul_model(rows: int = 16, cols: int = 8) -> tuple[bytes, np.ndarray]:
    """y = x @ (Cast(w_int8) * scale[cols]) then Relu, as the MiniLM file stores weights."""
    weight = RNG.integers(-127, 128, size=(rows, cols)).astype(np.int8)
    scale = (RNG.random((1, cols)) * 0.02 + 0.001).astype(np.float32)
    nodes = [
        helper.make_node("Cast", ["w_q"], ["w_f"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["w_f", "w_scale"], ["w"]),
        helper.make_node("MatMul", ["x", "w"], ["h"], name="dense"),
        helper.make_node("Relu", ["h"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, rows])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, cols])],
        [numpy_helper.from_array(weight, "w_q"), numpy_helper.from_array(scale, "w_scale")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    return model.SerializeToString(), weight.astype(np.float32) * scale


def _run(model: bytes, x: np.ndarray) -> np.ndarray:
    session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    return session.run(None, {"x": x})[0]


def test_rewritten_product_matches_the_float_product_within_quantization_error() -> None:
    source, dense = _dequantized_matmul_model()
    rewritten = quantize_weight_products(source)
    x = RNG.normal(size=(5, 16)).astype(np.float32)
    expected = np.maximum(x @ dense, 0.0)
    np.testing.assert_allclose(_run(source, x), expected, rtol=1e-5, atol=1e-5)
    got = _run(rewritten, x)
    # activations quantized to 8 bits: error well under 2 % of the output's scale
    assert np.abs(got - expected).max() < 0.02 * np.abs(expected).max()
    assert not np.array_equal(got, expected)  # it really ran in int8


def test_rewrite_replaces_the_cast_and_mul_and_keeps_other_nodes() -> None:
    source, _ = _dequantized_matmul_model()
    model = onnx.load_from_string(quantize_weight_products(source))
    assert [n.op_type for n in model.graph.node] == ["DynamicQuantizeMatMul", "Relu"]
    fused = model.graph.node[0]
    assert fused.domain == "com.microsoft" and fused.input[:2] == ["x", "w_q"]
    names = {i.name for i in model.graph.initializer}
    assert "w_scale" not in names and "w_q" in names  # unused initializers dropped


def test_a_model_without_int8_weight_products_is_refused() -> None:
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 4])],
        [numpy_helper.from_array(np.eye(4, dtype=np.float32), "w")],
    )
    plain = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(ConfigError, match=r"embedding\.compute"):
        quantize_weight_products(plain.SerializeToString())
