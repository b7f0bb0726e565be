"""convert-graph-to-loops as a whole: the loops-level contract, kernel deduplication,
constant data, errors, and small multi-op models run end to end (xDSL's interpreter
always; natively through onnxc.compile when the JIT is available).
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator
from xdsl.context import Context
from xdsl.dialects import arith, func, math, memref
from xdsl.dialects.builtin import MemRefType, ModuleOp, NoneAttr
from xdsl.irdl import irdl_op_definition
from xdsl.parser import Parser

from onnxc.dialects import graph
from onnxc.errors import LoweringError
from onnxc.lowering.graph_to_loops.convert_graph_to_loops import ConvertGraphToLoopsPass
from onnxc.lowering.graph_to_loops.interpreter import interpret
from onnxc.pipeline import make_context
from tests.single_op import graph_model

RTOL, ATOL = 1e-5, 1e-6

NET = """
func.func @main(%x: tensor<1x2x6x6xf32>) -> (tensor<1x5xf32>, tensor<2xi64>)
    attributes {onnxc.input_names = ["x"], onnxc.output_names = ["prob", "shape"]} {
  %w = graph.constant {value = dense<[[[[0.1, -0.2, 0.3], [0.0, 0.5, -0.1], [0.2, 0.2, 0.2]],
       [[-0.3, 0.1, 0.0], [0.4, -0.5, 0.1], [0.0, 0.1, -0.2]]],
       [[[0.3, 0.3, -0.1], [0.1, 0.0, 0.2], [-0.4, 0.2, 0.1]],
       [[0.2, -0.1, 0.1], [0.0, 0.3, 0.0], [0.1, -0.2, 0.4]]]]> : tensor<2x2x3x3xf32>}
      : tensor<2x2x3x3xf32>
  %b = graph.constant {value = dense<[0.1, -0.1]> : tensor<2xf32>} : tensor<2xf32>
  %c = graph.conv(%x, %w, %b) {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>,
      dilations = array<i64: 1, 1>, group = 1 : i64}
      : (tensor<1x2x6x6xf32>, tensor<2x2x3x3xf32>, tensor<2xf32>) -> tensor<1x2x6x6xf32>
  %r = graph.relu(%c) : (tensor<1x2x6x6xf32>) -> tensor<1x2x6x6xf32>
  %p = graph.max_pool(%r) {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>,
      pads = array<i64: 0, 0, 0, 0>, ceil_mode = 0 : i64, dilations = array<i64: 1, 1>}
      : (tensor<1x2x6x6xf32>) -> tensor<1x2x3x3xf32>
  %f = graph.flatten(%p) {axis = 1 : i64} : (tensor<1x2x3x3xf32>) -> tensor<1x18xf32>
  %fw = graph.constant {value = dense<0.05> : tensor<5x18xf32>} : tensor<5x18xf32>
  %g = graph.gemm(%f, %fw) {alpha = 1.0 : f32, beta = 1.0 : f32, transA = 0 : i64,
      transB = 1 : i64} : (tensor<1x18xf32>, tensor<5x18xf32>) -> tensor<1x5xf32>
  %s = graph.softmax(%g) {axis = -1 : i64} : (tensor<1x5xf32>) -> tensor<1x5xf32>
  %shape = graph.shape(%p) {start = 2 : i64, end = 4 : i64} : (tensor<1x2x3x3xf32>) -> tensor<2xi64>
  func.return %s, %shape : tensor<1x5xf32>, tensor<2xi64>
}
"""

ALLOWED = {
    "func.func", "func.call", "func.return", "scf.for", "scf.yield", "scf.if",
    "memref.load", "memref.store", "memref.alloc", "memref.get_global", "memref.global",
    "memref.reinterpret_cast", "math.exp", "math.log", "math.sqrt", "math.tanh", "math.erf",
    "math.powf", "math.absf", "math.floor", "math.ceil", "math.fma",
    # the packed GEMM micro-kernel (gemm_microkernel.py): 1-D vectors and a tile buffer
    "vector.load", "vector.store", "vector.broadcast", "vector.fma", "memref.alloca",
}


def lower(text: str) -> ModuleOp:
    module = Parser(make_context(), text).parse_module()
    ConvertGraphToLoopsPass().apply(Context(), module)
    module.verify()
    return module


def test_output_follows_the_loops_contract():
    module = lower(NET)
    names = {op.name for op in module.walk()} - {"builtin.module"}
    assert {n for n in names if not n.startswith("arith.")} <= ALLOWED
    assert "scf.if" not in names  # no conditionals at all, let alone in inner loops
    for op in module.walk():
        for t in [*op.operand_types, *op.result_types]:
            if isinstance(t, MemRefType):
                assert isinstance(t.layout, NoneAttr) and -1 not in t.get_shape()
    functions = [op for op in module.ops if isinstance(op, func.FuncOp)]
    entries = [f for f in functions if "onnxc.entry" in f.attributes]
    assert [f.sym_name.data for f in entries] == ["main"]
    main = entries[0]
    assert [str(t) for t in main.function_type.inputs] == [
        "memref<1x2x6x6xf32>", "memref<1x5xf32>", "memref<2xi64>"]
    assert not main.function_type.outputs
    assert {"onnxc.input_names", "onnxc.output_names"} <= set(main.attributes)
    for kernel in functions:
        if kernel is not main:
            assert kernel.sym_visibility.data == "private"
            assert kernel.attributes["onnxc.kernel"].data.startswith("graph.")
            assert not kernel.function_type.outputs
    # Kernels only write their result arguments (every op of NET has one result).
    for kernel in functions:
        if kernel is main:
            continue
        operands = set(kernel.body.block.args[:-1])
        for op in kernel.walk():
            if isinstance(op, memref.StoreOp):
                assert _base(op.memref) not in operands, kernel.sym_name.data


def _base(value):
    while isinstance(value.owner, memref.ReinterpretCastOp):
        value = value.owner.source
    return value


def test_constant_bytes_are_shared_not_copied():
    module = Parser(make_context(), NET).parse_module()
    values = [op.value for op in module.walk() if isinstance(op, graph.ConstantOp)]
    ConvertGraphToLoopsPass().apply(Context(), module)
    globals_ = [op for op in module.ops if isinstance(op, memref.GlobalOp)]
    assert all(g.constant is not None and g.sym_visibility.data == "private" for g in globals_)
    for value in values:
        assert any(g.initial_value.data.data is value.data.data for g in globals_)


def test_net_matches_reference_in_the_interpreter():
    module = lower(NET)
    x = np.random.default_rng(3).uniform(-1, 1, (1, 2, 6, 6)).astype(np.float32)
    prob, shape = interpret(module, [x])
    np.testing.assert_array_equal(shape, [3, 3])
    np.testing.assert_allclose(prob, _net_reference(x), rtol=RTOL, atol=ATOL)


def _net_reference(x):
    module = Parser(make_context(), NET).parse_module()
    w, b, fw = (op.value for op in module.walk() if isinstance(op, graph.ConstantOp))
    init = [numpy_helper.from_array(np.array(v.get_values(), np.float32).reshape(
        v.get_shape()), name) for v, name in ((w, "w"), (b, "b"), (fw, "fw"))]
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Flatten", ["p"], ["f"], axis=1),
        helper.make_node("Gemm", ["f", "fw"], ["g"], transB=1),
        helper.make_node("Softmax", ["g"], ["s"], axis=-1),
    ]
    g = helper.make_graph(nodes, "net", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, x.shape)], [helper.make_tensor_value_info(
            "s", TensorProto.FLOAT, None)], init)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    return ReferenceEvaluator(model).run(None, {"x": x})[0]


def test_kernels_are_keyed_by_properties_and_types():
    text = """
    func.func @main(%x: tensor<1x1x5x5xf32>, %w: tensor<1x1x3x3xf32>)
        -> (tensor<1x1x5x5xf32>, tensor<1x1x3x3xf32>, tensor<1x1x5x5xf32>) {
      %a = graph.conv(%x, %w) {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>,
          dilations = array<i64: 1, 1>, group = 1 : i64}
          : (tensor<1x1x5x5xf32>, tensor<1x1x3x3xf32>) -> tensor<1x1x5x5xf32>
      %b = graph.conv(%x, %w) {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>,
          dilations = array<i64: 1, 1>, group = 1 : i64}
          : (tensor<1x1x5x5xf32>, tensor<1x1x3x3xf32>) -> tensor<1x1x3x3xf32>
      %c = graph.conv(%a, %w) {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>,
          dilations = array<i64: 1, 1>, group = 1 : i64}
          : (tensor<1x1x5x5xf32>, tensor<1x1x3x3xf32>) -> tensor<1x1x5x5xf32>
      func.return %a, %b, %c : tensor<1x1x5x5xf32>, tensor<1x1x3x3xf32>, tensor<1x1x5x5xf32>
    }
    """
    module = lower(text)
    kernels = [op.sym_name.data for op in module.ops
               if isinstance(op, func.FuncOp) and "onnxc.kernel" in op.attributes]
    calls = [op.callee.root_reference.data for op in module.walk()
             if isinstance(op, func.CallOp)]
    assert kernels == ["conv_0", "conv_1"]
    assert calls == ["conv_0", "conv_1", "conv_0"]


@irdl_op_definition
class _FancyOp(graph.UnaryElementwiseOp):
    name = "graph.fancy"


def test_op_without_rule_raises_lowering_error():
    text = """
    func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
      %y = "graph.fancy"(%x) : (tensor<2xf32>) -> tensor<2xf32>
      func.return %y : tensor<2xf32>
    }
    """
    ctx = make_context()
    ctx.get_dialect("graph")  # load it, then add the op the lowering does not know
    ctx.load_op(_FancyOp)
    module = Parser(ctx, text).parse_module()
    with pytest.raises(LoweringError, match="graph.fancy"):
        ConvertGraphToLoopsPass().apply(Context(), module)


def test_scalar_tensors_and_unused_results():
    text = """
    func.func @main(%x: tensor<f32>, %y: tensor<3xf32>) -> tensor<3xf32> {
      %e = graph.exp(%x) : (tensor<f32>) -> tensor<f32>
      %unused = graph.neg(%y) : (tensor<3xf32>) -> tensor<3xf32>
      %s = graph.mul(%y, %e) : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
      func.return %s : tensor<3xf32>
    }
    """
    x, y = np.array(0.5, np.float32), np.array([1.0, -2.0, 3.0], np.float32)
    (s,) = interpret(lower(text), [x, y])
    np.testing.assert_allclose(s, y * np.exp(x), rtol=RTOL, atol=ATOL)


def test_arith_and_math_ops_used_are_in_the_contract():
    """The loops->LLVM conversion must know every op we emit; list them for review."""
    module = lower(NET)
    used = {op.name for op in module.walk() if op.dialect_name() in ("arith", "math")}
    assert used <= {op.name for op in (*arith.Arith.operations, *math.Math.operations)}


# --------------------------------------------------------------------------- native


def _model(nodes, inputs, outputs, initializers=()):
    return graph_model(nodes, inputs, outputs, initializers=list(initializers), opset=17,
                       ir_version=9)


def test_small_network_natively_when_the_jit_exists():
    onnxc = pytest.importorskip("onnxc")
    pytest.importorskip("onnxc.runtime.jit")
    rng = np.random.default_rng(4)
    w = rng.uniform(-0.5, 0.5, (4, 3, 3, 3)).astype(np.float32)
    fw = rng.uniform(-0.5, 0.5, (4 * 2 * 2, 6)).astype(np.float32)
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("AveragePool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2],
                         ceil_mode=1),
        helper.make_node("Flatten", ["p"], ["f"]),
        helper.make_node("MatMul", ["f", "fw"], ["m"]),
        helper.make_node("Softmax", ["m"], ["y"]),
    ]
    model = _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 7, 7])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                   [numpy_helper.from_array(w, "w"), numpy_helper.from_array(fw, "fw")])
    x = rng.uniform(-1, 1, (2, 3, 7, 7)).astype(np.float32)
    import onnxruntime

    expected = onnxruntime.InferenceSession(
        model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    (actual,) = onnxc.compile(model).run(None, {"x": x})
    np.testing.assert_allclose(actual, expected, rtol=RTOL, atol=ATOL)
