"""An op's facts are declared on the op (issue 33): the traits of dialects/graph_traits.py.

The tables the passes decided by (widen-half-precision's F16_KERNELS / MOVE_KERNELS /
LEFT_ALONE, assign-layout's LAYOUT_AGNOSTIC / BROADCASTING / NHWC_KERNELS / SYMBOLIC_NHWC,
compilation's STATIC_KERNEL_OPS) are now the ops with a trait; the first tests pin what the
former tables said. Then each trait is tied to the lowering that makes it true:

- every op with a trait has a kernel rule (graph_to_loops/kernels.py), and an NHWC or
  elementwise trait that promises symbolic sizes a symbolic rule;
- HalfKernel and QuantizationKernel: the op of tests/lit/dialects/graph/ops.mlir, retyped
  to f16, compiled as one op (widen-half-precision leaves it in f16, so its kernel computes
  on f16) against the numpy evaluator on the f32 op;
- AnyElementKernel: the same in bf16 (and f16), exactly.
"""

from __future__ import annotations

import functools
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from xdsl.dialects import func
from xdsl.dialects.builtin import FunctionType, IntegerType, ModuleOp, Signedness, TensorType
from xdsl.ir import Block, Region

from onnxc.dialects.graph import Graph
from onnxc.dialects.graph_base import is_symbolic
from onnxc.dialects.graph_traits import (
    AnyElementKernel,
    BroadcastingElementwise,
    ElementwiseMap,
    HalfKernel,
    NHWCKernel,
    QuantizationKernel,
    StaticSizesKernel,
)
from tests.ir_helpers import compile_graph, parse_graph, split_lit_cases

OPS_MLIR = Path(__file__).parents[1] / "lit" / "dialects" / "graph" / "ops.mlir"

TRAITS = (HalfKernel, AnyElementKernel, QuantizationKernel, ElementwiseMap,
          BroadcastingElementwise, NHWCKernel, StaticSizesKernel)


def _with(trait) -> set[str]:
    return {op.name for op in Graph.operations if op.has_trait(trait)}


# --------------------------------------------------------------------------- the former tables


def test_half_precision_traits_say_what_the_tables_said():
    assert _with(HalfKernel) == {
        "graph.abs", "graph.add", "graph.add_scalar", "graph.ceil", "graph.clip", "graph.cos",
        "graph.div", "graph.div_scalar", "graph.equal", "graph.exp", "graph.floor",
        "graph.fused_elementwise", "graph.greater", "graph.greater_or_equal", "graph.is_inf",
        "graph.is_nan", "graph.leaky_relu", "graph.less", "graph.less_or_equal", "graph.log",
        "graph.max", "graph.min", "graph.mod", "graph.mul", "graph.mul_scalar", "graph.neg",
        "graph.pow", "graph.pow_scalar", "graph.reciprocal", "graph.relu", "graph.round",
        "graph.sigmoid", "graph.sign", "graph.sin", "graph.sqrt", "graph.sub",
        "graph.sub_scalar", "graph.sum", "graph.tanh", "graph.where"}
    assert _with(AnyElementKernel) == {
        "graph.as_strided", "graph.bit_cast", "graph.cast", "graph.concat", "graph.constant", "graph.dropout",
        "graph.flatten", "graph.gather", "graph.identity", "graph.reshape", "graph.slice",
        "graph.split", "graph.squeeze", "graph.transpose", "graph.unsqueeze"}
    assert _with(QuantizationKernel) == {
        "graph.dequantize_linear", "graph.qlinear_conv", "graph.qlinear_conv_add",
        "graph.qlinear_matmul",
        "graph.quantize_linear"}


def test_layout_traits_say_what_the_tables_said():
    elementwise = {"graph.abs", "graph.add_scalar", "graph.cast", "graph.clip",
                   "graph.div_scalar", "graph.exp", "graph.leaky_relu", "graph.log",
                   "graph.mul_scalar", "graph.neg", "graph.pow_scalar", "graph.reciprocal",
                   "graph.relu", "graph.sigmoid", "graph.sqrt", "graph.sub_scalar", "graph.tanh"}
    broadcasting = {"graph.add", "graph.div", "graph.fused_elementwise", "graph.max",
                    "graph.min", "graph.mul", "graph.pow", "graph.sub", "graph.sum"}
    assert _with(ElementwiseMap) == elementwise
    assert _with(BroadcastingElementwise) == broadcasting
    nhwc = {op.name: op.get_trait(NHWCKernel).symbolic for op in Graph.operations
            if op.has_trait(NHWCKernel)}
    assert nhwc == {  # the former NHWC_KERNELS; symbolic: the former SYMBOLIC_NHWC
        "graph.average_pool": True, "graph.global_average_pool": True,
        "graph.global_max_pool": True, "graph.max_pool": True, "graph.concat": True,
        "graph.split": False, "graph.channel_shuffle": False, "graph.slice": False,
        # convs start NHWC (assign-layout's CONVS), the int8 ones by _quantized_nhwc
        "graph.conv": True, "graph.conv_add": True, "graph.qlinear_conv": True,
        "graph.qlinear_conv_add": True,
        "graph.quantize_linear": True, "graph.dequantize_linear": True}


def test_static_kernel_ops_are_the_ops_with_the_trait():
    """compilation.STATIC_KERNEL_OPS, by graph op class: the ops the former ONNX names
    (Conv, ConvTranspose, ConvInteger, QLinearConv, DeformConv, the pools, RoiAlign,
    MaxUnpool, Resize/Upsample, GridSample, Col2Im, LRN, LSTM/GRU/RNN) import to."""
    from onnxc.compilation import STATIC_KERNEL_OPS

    assert {op.name for op in STATIC_KERNEL_OPS} == _with(StaticSizesKernel) == {
        "graph.average_pool", "graph.col2im", "graph.conv", "graph.conv_add",
        "graph.conv_transpose", "graph.deform_columns", "graph.global_average_pool",
        "graph.global_max_pool", "graph.grid_sample", "graph.gru_recurrence", "graph.lrn",
        "graph.lstm_recurrence", "graph.max_pool", "graph.max_pool_indices",
        "graph.max_unpool", "graph.qlinear_conv", "graph.qlinear_conv_add",
        "graph.resize", "graph.rnn_recurrence",
        "graph.roi_align"}


# --------------------------------------------------------------------------- tied to kernels


def test_every_op_with_a_trait_has_a_kernel_rule():
    from onnxc.lowering.graph_to_loops import kernels

    for trait in TRAITS:
        missing = {op.name for op in Graph.operations if op.has_trait(trait)
                   and op not in kernels.RULES and op.name != "graph.constant"}
        assert missing == set(), trait.__name__  # a constant becomes a global, no kernel


def test_symbolic_nhwc_and_elementwise_traits_have_symbolic_kernels():
    """An NHWC kernel that takes symbolic sizes, and an elementwise op (any layout, any
    sizes), read their sizes at run time: their rules say symbolic."""
    from onnxc.lowering.graph_to_loops import kernels

    for op in Graph.operations:
        nhwc = op.get_trait(NHWCKernel)
        if (nhwc is not None and nhwc.symbolic) or op.has_trait(ElementwiseMap) \
                or op.has_trait(BroadcastingElementwise):
            assert op in kernels.SYMBOLIC_KERNELS, op.name


@functools.cache
def _instances() -> dict[str, tuple[str, tuple]]:
    """Graph op name -> (a one-op function of its first f32 instance in ops.mlir, as text;
    its operand types)."""
    found: dict[str, tuple[str, tuple]] = {}
    for chunk in split_lit_cases(OPS_MLIR):
        module = parse_graph(chunk)
        for op in module.walk():
            if not op.name.startswith("graph.") or op.name in found or op.name == "graph.yield":
                continue
            types = [*op.operand_types, *op.result_types]
            if any(is_symbolic(t) for t in types) or "f32" not in str(op):
                continue
            found[op.name] = (_one_op_text(op), tuple(op.operand_types))
    return found


def _one_op_text(op) -> str:
    block = Block(arg_types=list(op.operand_types))
    clone = op.clone(value_mapper=dict(zip(op.operands, block.args, strict=True)))
    block.add_ops([clone, func.ReturnOp(*clone.results)])
    function = func.FuncOp("main", FunctionType.from_lists(list(op.operand_types),
                                                           list(op.result_types)),
                           Region(block))
    return str(ModuleOp([function]))


def _feeds(types, dtype, seed: int) -> list[np.ndarray]:
    """Positive floats (Log, Sqrt, Pow and Reciprocal stay real), random booleans, zero
    integers (a valid index, and no integer divisor is read: the instances are float)."""
    rng = np.random.default_rng(seed)
    out = []
    for t in types:
        assert isinstance(t, TensorType)
        shape = tuple(t.get_shape())
        element = t.get_element_type()
        if isinstance(element, IntegerType) and element.width.data == 1:
            out.append(rng.integers(0, 2, shape).astype(bool))
        elif isinstance(element, IntegerType):
            kind = "u" if element.signedness.data == Signedness.UNSIGNED else "i"
            out.append(np.zeros(shape, np.dtype(f"{kind}{max(element.width.data, 8) // 8}")))
        else:
            out.append(rng.uniform(0.5, 2.0, shape).astype(dtype))
    return out


def _compare(name: str, half: str, dtype, rtol: float, atol: float) -> None:
    from onnxc.passes.evaluator import evaluate

    text, operand_types = _instances()[name]
    feeds = _feeds(operand_types, dtype, seed=len(name))
    reference = evaluate(parse_graph(text), [f.astype(np.float32) if f.dtype == dtype else f
                                             for f in feeds])
    retyped = text.replace("f32", half)
    if name == "graph.bit_cast":  # to an integer of the half's width: the half's bits
        retyped = retyped.replace("i32", "i16")
        reference = [feeds[0].view(np.int16)]
    compiled = compile_graph(retyped)
    got = compiled.run(None, {spec.name: f for spec, f in zip(compiled.inputs, feeds)})
    assert len(got) == len(reference)
    for g, r in zip(got, reference, strict=True):
        g, r = np.asarray(g), np.asarray(r)
        assert g.dtype == (dtype if r.dtype == np.float32 else r.dtype), name
        np.testing.assert_allclose(g.astype(np.float64), r.astype(np.float64), rtol=rtol,
                                   atol=atol, err_msg=name)


def _names(*traits) -> list[str]:
    return sorted(n for trait in traits for n in _with(trait))


@pytest.mark.parametrize("name", _names(HalfKernel, QuantizationKernel))
def test_half_kernel_computes_on_f16(name):
    if name not in _instances():
        pytest.skip(f"ops.mlir has no f32 instance of {name}")
    integer_out = name in ("graph.quantize_linear", "graph.qlinear_conv", "graph.qlinear_conv_add",
                          "graph.qlinear_matmul")
    _compare(name, "f16", np.float16, rtol=2e-3, atol=1.0 if integer_out else 2e-3)


@pytest.mark.parametrize("name", _names(AnyElementKernel))
@pytest.mark.parametrize("half", ["bf16", "f16"])
def test_any_element_kernel_moves_half_exactly(name, half):
    if name not in _instances():
        pytest.skip(f"ops.mlir has no f32 instance of {name}")
    dtype = ml_dtypes.bfloat16 if half == "bf16" else np.float16
    _compare(name, half, np.dtype(dtype), rtol=0, atol=0)


def test_a_separable_model_with_a_static_kernel_op_compiles_per_sample():
    """The batch strategy reads the graph ops (STATIC_KERNEL_OPS): the import of the
    symbolic form stops at the first op of static kernels, and the import for one sample
    takes the initializers it read (the same module as a plain import)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    import onnxc
    from onnxc.compilation import _has_static_kernel
    from onnxc.frontend.onnx_importer import ImportStopped, import_onnx, import_onnx_unless

    w = numpy_helper.from_array(np.full((4, 3, 3, 3), 0.25, np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["r"]),
         helper.make_node("Conv", ["r", "w"], ["y"], pads=[1, 1, 1, 1])],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 5, 5])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4, 5, 5])], [w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 9
    with pytest.raises(ImportStopped) as stopped:
        import_onnx_unless(model, _has_static_kernel)
    assert set(stopped.value.initializers) == {"w"}
    one = onnx.ModelProto()
    one.CopyFrom(model)
    for vi in (*one.graph.input, *one.graph.output):
        vi.type.tensor_type.shape.dim[0].dim_value = 1
    assert str(import_onnx(one, initializers=stopped.value.initializers)) == str(import_onnx(one))
    compiled = onnxc.compile(model, cache_dir=False)
    assert compiled.symbolic is None  # once per sample
    x = np.random.default_rng(0).standard_normal((3, 3, 5, 5)).astype(np.float32)
    (y,) = compiled.run(None, {"x": x})
    assert y.shape == (3, 4, 5, 5)


def test_sample_wise_ops_are_registered_with_their_converters():
    """frontend/batch_axes.py's former _SAMPLE_WISE: the ONNX ops whose converter is
    registered `sample_wise` in its family's CONVERTERS."""
    from onnxc.frontend.batch_axes import is_sample_wise
    from onnxc.frontend.onnx_converters import CONVERTERS

    assert {t for t in CONVERTERS if is_sample_wise(t)} == {
        "Abs", "Acos", "Acosh", "Add", "And", "Asin", "Asinh", "Atan", "Atanh", "BitShift",
        "BitwiseAnd", "BitwiseNot", "BitwiseOr", "BitwiseXor", "Cast", "CastLike", "Ceil",
        "Celu", "Clip", "Cos", "Cosh", "Div", "Dropout", "Elu", "Equal", "Erf", "Exp", "Floor",
        "Gelu", "Greater", "GreaterOrEqual", "HardSigmoid", "HardSwish", "Identity", "IsInf",
        "IsNaN", "LeakyRelu", "Less", "LessOrEqual", "Log", "Max", "Mean", "Min", "Mish", "Mod",
        "Mul", "Neg", "Not", "Or", "PRelu", "Pow", "Reciprocal", "Relu", "Round", "Selu",
        "Shrink", "Sigmoid", "Sign", "Sin", "Sinh", "Softplus", "Softsign", "Sqrt", "Sub",
        "Sum", "Swish", "Tan", "Tanh", "ThresholdedRelu", "Where", "Xor", "QuantizeLinear",
        "DequantizeLinear",
        "Conv", "ConvTranspose", "MaxPool", "AveragePool", "LpPool", "GlobalAveragePool",
        "GlobalMaxPool", "GlobalLpPool", "BatchNormalization", "InstanceNormalization",
        "GroupNormalization", "LRN", "DepthToSpace", "SpaceToDepth", "QLinearConv",
        "ConvInteger"}
