"""Elementwise kernels on layout-encoded tensors: they index PHYSICAL buffers (memref_of
gives the physical shape), so when every operand of a broadcasting op has the same rank-4
NHWC encoding, a [1, C, 1, 1] operand (physically [1, 1, 1, C]) broadcasts per channel
against [N, C, H, W] (physically [N, H, W, C]). Checked in the loops interpreter against
numpy on the logical NCHW tensors."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import FunctionType, ModuleOp, TensorType, f32
from xdsl.ir import Block, Region

from onnxc.dialects import graph
from onnxc.dialects.layout import ConvertOp, with_layout
from onnxc.lowering.graph_to_loops.interpreter import interpret
from onnxc.lowering.graph_to_loops.convert_graph_to_loops import ConvertGraphToLoopsPass
from onnxc.passes.fusion_scalar import BodyBuilder

NHWC = "NHWC"
X_SHAPE, B_SHAPE = (2, 3, 4, 5), (1, 3, 1, 1)


def _nhwc(shape) -> TensorType:
    return with_layout(TensorType(f32, shape), NHWC)


def _lower(build) -> ModuleOp:
    """main(x, b) -> build(x, b), every value NHWC-encoded (converted back to the plain
    layout at the output, as assign-layout does at graph boundaries), lowered to loops."""
    types = [_nhwc(X_SHAPE), _nhwc(B_SHAPE)]
    plain = TensorType(f32, X_SHAPE)
    block = Block(arg_types=types)
    op = build(*block.args, _nhwc(X_SHAPE))
    back = ConvertOp(op.results[0], plain)
    block.add_ops([op, back, func.ReturnOp(back.output)])
    f = func.FuncOp("main", FunctionType.from_lists(types, [plain]), Region(block))
    module = ModuleOp([f])
    module.verify()
    ConvertGraphToLoopsPass().apply(Context(), module)
    return module


def _physical(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a.transpose(0, 2, 3, 1))


def _fused(x, b, t) -> graph.FusedElementwiseOp:
    """relu(x * b) + x as a fused op (its body built as fuse-elementwise builds one)."""
    block = Block(arg_types=[f32, f32])
    body = BodyBuilder(block)
    product = body.emit(arith.MulfOp(block.args[0], block.args[1]))
    relu = body.emit(arith.MaximumfOp(product, body.constant(0.0, f32)))
    block.add_op(graph.YieldOp(body.emit(arith.AddfOp(relu, block.args[0]))))
    return graph.FusedElementwiseOp([x, b], t, block)


CASES = {
    "add": (lambda x, b, t: graph.AddOp(operands=[x, b], result_types=[t]), lambda x, b: x + b),
    "mul": (lambda x, b, t: graph.MulOp(operands=[x, b], result_types=[t]), lambda x, b: x * b),
    "fused": (lambda x, b, t: _fused(x, b, t), lambda x, b: np.maximum(x * b, 0) + x),
}


@pytest.mark.parametrize("build, reference", CASES.values(), ids=CASES.keys())
def test_nhwc_channel_broadcast(build, reference):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(X_SHAPE).astype(np.float32)
    b = rng.standard_normal(B_SHAPE).astype(np.float32)
    module = _lower(build)
    kernel_types = [t for o in module.walk() if isinstance(o, func.FuncOp)
                    and o.sym_name.data != "main" for t in o.function_type.inputs]
    assert [tuple(t.get_shape()) for t in kernel_types[:2]] == [(2, 4, 5, 3), (1, 1, 1, 3)]
    (y,) = interpret(module, [_physical(x), _physical(b)], entry="main")
    np.testing.assert_allclose(y, reference(x, b), rtol=1e-6, atol=1e-6)


def test_mixed_layouts_are_refused():
    """NHWC [N, C, H, W] plus a plain [C, 1, 1] would broadcast along the wrong physical
    axes: the kernel refuses instead of computing garbage."""
    from onnxc.errors import LoweringError

    types = [_nhwc(X_SHAPE), TensorType(f32, (3, 1, 1))]
    block = Block(arg_types=types)
    op = graph.AddOp(operands=list(block.args), result_types=[_nhwc(X_SHAPE)])
    back = ConvertOp(op.results[0], TensorType(f32, X_SHAPE))
    block.add_ops([op, back, func.ReturnOp(back.output)])
    f = func.FuncOp("main", FunctionType.from_lists(types, [TensorType(f32, X_SHAPE)]),
                    Region(block))
    with pytest.raises(LoweringError, match="not in one layout"):
        ConvertGraphToLoopsPass().apply(Context(), ModuleOp([f]))
