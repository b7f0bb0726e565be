"""Constant-folding rows compute what the unfolded graph computes, and still run natively."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.parser import Parser

from onnxc.dialects import graph
from onnxc.pipeline import make_context
from onnxc.passes.verify_numerics import check_pass_equivalence

FOLDABLE = """
func.func @main(%x: tensor<2x3xf32>, %i: tensor<3xi64>) -> (tensor<2x3xf32>, tensor<3xi64>, tensor<3x2xf32>) {
  %a = graph.constant {value = dense<[1.0, -2.0, 3.0]> : tensor<3xf32>} : tensor<3xf32>
  %z = graph.constant_of_shape {value = dense<0.5> : tensor<1xf32>} : tensor<3xf32>
  %s = graph.add(%a, %z) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %u = graph.unsqueeze(%s) {axes = array<i64: 0>} : (tensor<3xf32>) -> tensor<1x3xf32>
  %y = graph.mul(%x, %u) : (tensor<2x3xf32>, tensor<1x3xf32>) -> tensor<2x3xf32>
  %two = graph.constant {value = dense<2.0> : tensor<1xf32>} : tensor<1xf32>
  %d = graph.div(%y, %two) : (tensor<2x3xf32>, tensor<1xf32>) -> tensor<2x3xf32>
  %p = graph.pow(%d, %two) : (tensor<2x3xf32>, tensor<1xf32>) -> tensor<2x3xf32>
  %e = graph.sub(%p, %two) : (tensor<2x3xf32>, tensor<1xf32>) -> tensor<2x3xf32>
  %k = graph.constant {value = dense<-3> : tensor<i64>} : tensor<i64>
  %q = graph.div(%i, %k) : (tensor<3xi64>, tensor<i64>) -> tensor<3xi64>
  %m = graph.mul(%k, %q) : (tensor<i64>, tensor<3xi64>) -> tensor<3xi64>
  %w = graph.constant {value = dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>} : tensor<2x3xf32>
  %t = graph.transpose(%w) {perm = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %c = graph.cast(%t) : (tensor<3x2xf32>) -> tensor<3x2xi32>
  %f = graph.cast(%c) : (tensor<3x2xi32>) -> tensor<3x2xf32>
  func.return %e, %m, %f : tensor<2x3xf32>, tensor<3xi64>, tensor<3x2xf32>
}
"""


def parse(text: str):
    return Parser(make_context(), text).parse_module()


def count(module, op_type) -> int:
    return sum(isinstance(op, op_type) for op in module.walk())


@pytest.mark.parametrize("row, gone, seen", [
    ("fold-constant-ops", graph.ConstantOfShapeOp, graph.ConstantOp),
    ("fold-unsqueeze-const", graph.TransposeOp, graph.ConstantOp),
    ("fold-scalar-binary", graph.DivOp, graph.DivScalarOp),
])
def test_row_is_numerically_equivalent(row, gone, seen):
    module = parse(FOLDABLE)
    after = check_pass_equivalence(module, row)
    assert count(after, gone) < count(module, gone)
    assert count(after, seen) > 0


def test_rows_together_leave_only_runtime_work():
    after = check_pass_equivalence(parse(FOLDABLE),
                                   "fold-constant-ops,fold-scalar-binary,cse")
    kinds = {op.name for op in after.walk() if op.name.startswith("graph.")}
    assert kinds == {"graph.constant", "graph.mul", "graph.div_scalar", "graph.pow_scalar",
                     "graph.sub_scalar", "graph.mul_scalar"}


def _splat_module(shape: tuple[int, ...], value: float, perm: tuple[int, ...]) -> str:
    dims = "x".join(map(str, shape))
    tdims = "x".join(str(shape[p]) for p in perm)
    perm_text = ", ".join(map(str, perm))
    return f"""
    func.func @main(%x: tensor<{tdims}xf32>) -> tensor<{tdims}xf32> {{
      %z = graph.constant_of_shape {{value = dense<{value!r}> : tensor<1xf32>}} : tensor<{dims}xf32>
      %t = graph.transpose(%z) {{perm = array<i64: {perm_text}>}} : (tensor<{dims}xf32>) -> tensor<{tdims}xf32>
      %y = graph.add(%x, %t) : (tensor<{tdims}xf32>, tensor<{tdims}xf32>) -> tensor<{tdims}xf32>
      func.return %y : tensor<{tdims}xf32>
    }}"""


@settings(max_examples=15, deadline=None)
@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=4),
       value=st.floats(-8, 8, width=32), data=st.data())
def test_folding_splats_of_any_shape(shape, value, data):
    perm = tuple(data.draw(st.permutations(range(len(shape)))))
    module = parse(_splat_module(tuple(shape), float(value), perm))
    after = check_pass_equivalence(module, "fold-constant-ops")
    assert count(after, graph.TransposeOp) == 0 and count(after, graph.ConstantOfShapeOp) == 0


def test_huge_results_are_not_folded(monkeypatch):
    from onnxc.passes import constant_folding

    monkeypatch.setattr(constant_folding, "FOLD_BYTES_LIMIT", 8)
    after = check_pass_equivalence(parse(FOLDABLE), "fold-constant-ops")
    assert count(after, graph.ConstantOfShapeOp) == 1


def test_scalar_ops_run_natively():
    """The scalar forms lower to loops and compute what ONNX's Mul/Sub/Div/Pow compute."""
    import onnxc

    text = """<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3] x, int64[4] i) => (float[2,3] y, int64[4] j)
      <float[1] c = {0.5}, float two = {2.0}, int64 k = {-3}> {
        a = Mul(x, c)  b = Sub(a, two)  d = Div(b, two)  y = Pow(d, two)
        q = Div(i, k)  j = Add(k, q)
    }"""
    model = onnx.parser.parse_model(text)
    compiled = onnxc.compile(model, pass_pipeline="fold-scalar-binary")
    module = onnxc.optimize(model, pass_pipeline="fold-scalar-binary")
    assert count(module, graph.ScalarBinaryOp) == 6
    x = np.random.default_rng(0).uniform(-1, 1, (2, 3)).astype(np.float32)
    i = np.array([7, -7, 2, 0], np.int64)
    y, j = compiled(x, i)
    np.testing.assert_allclose(y, ((x * 0.5 - 2) / 2) ** 2, rtol=1e-6)
    np.testing.assert_array_equal(j, [-3 - 2, -3 + 2, -3 + 0, -3])


COMPUTED_AXES = """<ir_version: 8, opset_import: ["" : 13]>
g (float[2,3] x) => (float[3,2] y, float[1,2,1,3] z, float[2,3] w)
  <float[2] f = {3.0, 2.0}, float one = {1.0}, float[2] b = {0.0, 2.0}, float zero = {0.0},
   float[3,2] r, float[1,2,1,3] z, float[2,3] w> {
    m = Mul(f, one)  s = Cast<to = 7>(m)  r = Reshape(x, s)  y = Relu(r)
    bf = Add(b, zero)  ai = Cast<to = 7>(bf)  z = Unsqueeze(x, ai)
    w = Squeeze(z, ai)
}"""


def test_computed_axes_inputs_become_properties():
    """Float arithmetic on the shape/axes is left to the graph by the importer; folding makes
    it constant and fold-axes-inputs moves it into the property; the model still runs."""
    import onnxc
    from onnxc.frontend import import_onnx_text

    module = import_onnx_text(COMPUTED_AXES)
    reshapes = [op for op in module.walk() if isinstance(op, graph.ReshapeLikeOp)]
    assert [len(op.operands) for op in reshapes] == [2, 2, 2]
    after = check_pass_equivalence(module, "fold-constant-ops,fold-axes-inputs")
    reshapes = [op for op in after.walk() if isinstance(op, graph.ReshapeLikeOp)]
    assert [len(op.operands) for op in reshapes] == [1, 1, 1]
    assert count(after, graph.CastOp) == 0
    model = onnx.parser.parse_model(COMPUTED_AXES)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    for level in (0, 1):
        y, z, w = onnxc.compile(model, opt_level=level)(x)
        np.testing.assert_array_equal(y, np.maximum(x.reshape(3, 2), 0))
        np.testing.assert_array_equal(z, x.reshape(1, 2, 1, 3))
        np.testing.assert_array_equal(w, x)
