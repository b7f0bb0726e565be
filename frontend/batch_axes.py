"""Dynamic batch: compile a model once for one sample, run it on any number of samples.

A model whose inputs share one symbolic leading dimension (`dim_param`, e.g. "N" or
"batch_size") is *batch-separable* when running it on N stacked samples equals stacking its
runs on each sample. Then onnxc compiles it with N = 1, and the runtime runs the native code
once per sample on consecutive slices of the inputs and outputs: one compilation serves every
batch size. (Per-sample execution is how a static-shape code generator stays exact; a kernel
generic in N would need symbolic shapes through every pass and kernel.)

Separability is proven per node, not assumed: the model is shape-inferred at two batch sizes,
a value is *batched* when its leading dimension is k*N for a fixed k (so each sample owns
one contiguous block of it, as after a [N, S, H] -> [N*S, H] reshape), and each op must keep
samples apart given which of its inputs are batched (the converters registered
`sample_wise` and the axis rules in `_mixes_samples`). Anything else (an op reducing, concatenating or transposing along the batch
axis, a symbolic non-leading dimension, ops the table does not know) is a
ShapeInferenceError naming the node; such models compile with fixed shapes instead
(`onnxc.compile(model, input_shapes={...})`).
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
import onnx
import onnx.numpy_helper
import onnx.shape_inference

from onnxc.errors import InvalidArgumentError, ShapeInferenceError
from onnxc.frontend.input_symbols import split_symbols
from onnxc.frontend.onnx_model import DEFAULT_DOMAINS
from onnxc.resource_limits import NO_BOUND

_C = TypeVar("_C")


def sample_wise(converter: _C, rows: bool = False) -> _C:
    """Register an ONNX op as sample-wise, in its family's CONVERTERS (`"Gelu":
    sample_wise(convert_gelu)`): the op never combines elements of different samples when
    every batched operand has the output's rank (checked in `_mixes_samples`): elementwise
    ops (operands of the output's rank; lower-rank operands broadcast per sample), and
    per-sample windows and statistics over non-batch axes (convolutions, pools, normalizations
    over a sample, DepthToSpace). `rows`: each row (leading index) of every operand and
    result is its own, whatever their ranks (ai.onnx.ml's models: [N, C] features to [N]
    labels and [N, K] scores)."""
    converter.sample_wise = "rows" if rows else True  # type: ignore[attr-defined]
    return converter


def is_sample_wise(op_type: str, domain: str = "") -> bool | str:
    """Whether the converter of `op_type` in `domain` is registered `sample_wise` ("rows"
    when by rows)."""
    from onnxc.frontend.onnx_converters import converter_for  # which imports this module

    return getattr(converter_for(domain, op_type), "sample_wise", False)


_AXIS_OPS = {
    # op: (attribute, default) of the one axis the op works along; axis 0 mixes samples
    "Softmax": ("axis", -1), "LogSoftmax": ("axis", -1), "Hardmax": ("axis", -1),
    "LayerNormalization": ("axis", -1), "RMSNormalization": ("axis", -1),
    "Concat": ("axis", None), "Split": ("axis", 0),
    "Gather": ("axis", 0), "GatherElements": ("axis", 0), "CumSum": ("axis", None),
    "ArgMax": ("axis", 0), "ArgMin": ("axis", 0), "TopK": ("axis", -1),
    "Flatten": ("axis", 1), "LpNormalization": ("axis", -1),
}


@dataclass(frozen=True)
class BatchAxis:
    """The symbolic leading dimension that `onnxc.compile` compiled at 1."""

    symbol: str
    inputs: Mapping[str, int]
    """input name -> rows per sample (k in k*N)"""
    outputs: Mapping[str, int]


def _is_dim(value: object) -> bool:
    return (isinstance(value, numbers.Integral) and not isinstance(value, bool)
            and 0 <= int(value) <= NO_BOUND)


def check_input_shapes(input_shapes: object) -> None:
    """None or {input name: sequence of dims}, each dim an int in [0, 2**63 - 1]."""
    if input_shapes is None:
        return
    if not isinstance(input_shapes, Mapping):
        raise InvalidArgumentError.expected("input_shapes", "a mapping of input names to shapes",
                                            input_shapes)
    for name, shape in input_shapes.items():
        if not isinstance(name, str):
            raise InvalidArgumentError.expected("an input_shapes key", "an input name (str)", name)
        where = f"input_shapes[{name!r}]"
        if not isinstance(shape, Sequence) or isinstance(shape, str | bytes):
            raise InvalidArgumentError.expected(where, "a sequence of dimensions", shape)
        for i, dim in enumerate(shape):
            if not _is_dim(dim):
                raise InvalidArgumentError.expected(f"{where}[{i}]", "an int from 0 to 2**63 - 1",
                                                    dim)


def symbolic_batch(model: onnx.ModelProto) -> str | None:
    """The one symbolic leading dimension shared by the model's inputs, None if all static.

    ShapeInferenceError for any other kind of dynamic shape (a symbolic non-leading
    dimension, two different symbols, an unknown dimension).
    """
    initializers = {i.name for i in model.graph.initializer}
    symbols = set()
    for vi in model.graph.input:
        if vi.name in initializers or not vi.type.HasField("tensor_type"):
            continue
        dims = vi.type.tensor_type.shape.dim
        for axis, d in enumerate(dims):
            if d.HasField("dim_value"):
                continue
            if axis != 0 or not d.dim_param:
                raise ShapeInferenceError(
                    f"graph input '{vi.name}': dimension {axis} is "
                    f"{d.dim_param or 'unknown'}; onnxc compiles one symbolic leading (batch) "
                    f"dimension, other dynamic dimensions need fixed sizes "
                    f"(onnxc.compile(model, input_shapes={{...}}))")
            symbols.add(d.dim_param)
    if len(symbols) > 1:
        raise ShapeInferenceError(
            f"graph inputs have different symbolic batch dimensions {sorted(symbols)}; "
            f"give fixed sizes with onnxc.compile(model, input_shapes={{...}})")
    return symbols.pop() if symbols else None


def with_batch(model: onnx.ModelProto, symbol: str, size: int) -> onnx.ModelProto:
    """A copy of `model` whose inputs and outputs have `size` for the symbolic dimension."""
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    for vi in [*copy.graph.input, *copy.graph.output]:
        for d in vi.type.tensor_type.shape.dim:
            if d.dim_param == symbol:
                d.Clear()
                d.dim_value = size
    del copy.graph.value_info[:]
    return copy


def with_fixed_shapes(model: onnx.ModelProto,
                      shapes: Mapping[str, tuple[int, ...]]) -> onnx.ModelProto:
    """A copy of `model` whose named inputs have the given static shapes."""
    check_fixed_shapes(model.graph, shapes)
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    for vi in copy.graph.input:
        if vi.name in shapes:
            shape = vi.type.tensor_type.shape
            del shape.dim[:]
            for size in shapes[vi.name]:
                shape.dim.add().dim_value = int(size)
    for vi in copy.graph.output:  # re-inferred from the inputs
        if vi.type.tensor_type.HasField("shape"):
            vi.type.tensor_type.ClearField("shape")
    del copy.graph.value_info[:]
    return copy


def check_fixed_shapes(graph: onnx.GraphProto, shapes: Mapping[str, tuple[int, ...]]) -> None:
    """InvalidArgumentError for an `input_shapes` entry the model contradicts: a name that is
    not a graph input, another rank than the declared one, a dim the model declares static
    with another size, or one symbolic dim given two sizes (a dim_param that names
    independent sizes on inputs no path reads together, input_symbols.py, may take two)."""
    declared = {vi.name: vi for vi in graph.input}
    renamed = split_symbols(graph, graph.input)
    symbols: dict[tuple[str, str], tuple[int, str]] = {}
    for name, shape in shapes.items():
        if name not in declared:
            raise InvalidArgumentError(
                f"input_shapes names '{name}', which is not a graph input "
                f"(inputs: {', '.join(repr(n) for n in declared) or 'none'})")
        tt = declared[name].type.tensor_type
        if not tt.HasField("shape"):
            continue
        dims = tt.shape.dim
        if len(dims) != len(shape):
            raise InvalidArgumentError(
                f"input_shapes['{name}'] = {list(shape)} has rank {len(shape)}, but the model "
                f"declares input '{name}' with rank {len(dims)}")
        for axis, (dim, size) in enumerate(zip(dims, shape)):
            where = f"input_shapes['{name}'][{axis}]"
            if dim.HasField("dim_value") and dim.dim_value != size:
                raise InvalidArgumentError(
                    f"{where} is {size}, but the model declares that dimension "
                    f"static, of size {dim.dim_value}")
            if dim.HasField("dim_param") and dim.dim_param:
                key = ("split", renamed[name][dim.dim_param]) \
                    if dim.dim_param in renamed.get(name, {}) else ("param", dim.dim_param)
                seen = symbols.setdefault(key, (size, where))
                if seen[0] != size:
                    raise InvalidArgumentError(
                        f"{where} is {size}, but {seen[1]} is {seen[0]} and the model "
                        f"names both '{dim.dim_param}'")


def _shapes(model: onnx.ModelProto) -> dict[str, tuple[int, ...] | None]:
    try:
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True, data_prop=True)
    except Exception as err:  # onnx raises InferenceError and assorted others
        raise ShapeInferenceError(f"dynamic batch: shape inference failed: {err}") from err
    g = inferred.graph
    shapes: dict[str, tuple[int, ...] | None] = {}
    for vi in [*g.input, *g.value_info, *g.output]:
        tt = vi.type.tensor_type
        dims = tt.shape.dim if tt.HasField("shape") else None
        if dims is None or any(not d.HasField("dim_value") for d in dims):
            shapes[vi.name] = None
        else:
            shapes[vi.name] = tuple(d.dim_value for d in dims)
    for init in g.initializer:
        shapes[init.name] = tuple(init.dims)
    return shapes


def batch_axis(model: onnx.ModelProto) -> BatchAxis | None:
    """The batch plan of `model`, None when its inputs are static; raises when the model has
    a symbolic batch but is not batch-separable (the error names the node)."""
    symbol = symbolic_batch(model)
    if symbol is None:
        return None
    at2, at3 = _shapes(with_batch(model, symbol, 2)), _shapes(with_batch(model, symbol, 3))
    constants = {i.name: onnx.numpy_helper.to_array(i) for i in model.graph.initializer
                 if len(i.dims) <= 1 and i.data_type == onnx.TensorProto.INT64}
    batched: dict[str, int] = {}
    misplaced: set[str] = set()
    """values whose shape depends on the batch other than by a proportional leading dim"""
    for name, s2 in at2.items():
        s3 = at3.get(name)
        if s2 is None or s3 is None or s2 == s3:
            continue
        k = s2[0] // 2 if s2 else 0
        if k and len(s2) == len(s3) and s2[1:] == s3[1:] and s2[0] == 2 * k and s3[0] == 3 * k:
            batched[name] = k
        else:
            misplaced.add(name)
    for index, node in enumerate(model.graph.node):
        ins = [n for n in node.input if n in batched]
        if any(o in misplaced for o in node.output):
            raise ShapeInferenceError(
                f"dynamic batch: node '{node.name or index}' ({node.op_type}) makes the batch "
                f"something other than a leading dimension; compile with fixed input shapes "
                f"(onnxc.compile(model, input_shapes={{...}}))")
        if not ins:
            continue
        outs = list(node.output)
        if any(at2.get(o) is None for o in outs if o):
            raise ShapeInferenceError(
                f"dynamic batch: node '{node.name or index}' ({node.op_type}): output shapes "
                f"could not be inferred symbolically")
        reason = _mixes_samples(node, ins, batched, at2, constants)
        if reason:
            raise ShapeInferenceError(
                f"dynamic batch: node '{node.name or index}' ({node.op_type}) {reason}; "
                f"compile with fixed input shapes (onnxc.compile(model, input_shapes={{...}}))")
    names = [vi.name for vi in model.graph.input]
    inputs = {n: batched[n] for n in names if n in batched}
    outputs = {o.name: batched[o.name] for o in model.graph.output if o.name in batched}
    if len(outputs) != len(model.graph.output):
        unbatched = [o.name for o in model.graph.output if o.name not in batched]
        raise ShapeInferenceError(
            f"dynamic batch: outputs {unbatched} do not scale with the batch")
    return BatchAxis(symbol, inputs, outputs)


def _attr(node: onnx.NodeProto, name: str, default):
    for a in node.attribute:
        if a.name == name:
            return onnx.helper.get_attribute_value(a)
    return default


def _mixes_samples(node: onnx.NodeProto, ins: list[str], batched: Mapping[str, int],
                   shapes: Mapping[str, tuple[int, ...] | None],
                   constants: Mapping[str, np.ndarray]) -> str | None:
    """Why `node` would combine elements of different samples, None when it cannot."""
    op = node.op_type
    out = node.output[0]
    out_shape = shapes[out]
    assert out_shape is not None
    if any(o and o not in batched for o in node.output) and op not in ("Shape", "Size"):
        return "has an output that does not scale with the batch"
    rank = len(out_shape)
    if node.domain not in DEFAULT_DOMAINS and not is_sample_wise(op, node.domain):
        # the rules below are the default domain's ops'; another domain's op of the same
        # name (com.microsoft.Attention) is not one of them
        return f"is a {node.domain} op"
    if is_sample_wise(op, node.domain):
        if is_sample_wise(op, node.domain) != "rows" and any(
                len(shapes[i] or ()) != rank for i in ins):
            return "broadcasts a batched operand along another axis"
        return None
    if op in ("MatMul", "Gemm", "MatMulInteger", "QLinearMatMul"):
        a, b = node.input[0], node.input[3 if op == "QLinearMatMul" else 1]
        if op == "Gemm" and a in batched and _attr(node, "transA", 0):
            return "contracts over the batch axis (transA)"
        if b in batched and (op == "Gemm" or len(shapes[b] or ()) < 3
                             or len(shapes[a] or ()) != len(shapes[b] or ())):
            return "contracts over the batch axis of its second operand"
        return None
    if op in ("Reshape", "Squeeze", "Unsqueeze", "Expand", "Tile", "Pad", "Slice",
              "Transpose", "Resize", "Upsample"):
        return _keeps_leading_rows(node, ins, batched, shapes)
    if op in _AXIS_OPS:
        name, default = _AXIS_OPS[op]
        axis = _attr(node, name, default)
        data_rank = len(shapes[node.input[0]] or ())
        if op == "Flatten":
            return "flattens the batch axis into rows" if axis == 0 else None
        if op in ("Gather", "GatherElements") and node.input[0] not in batched:
            return None if op == "Gather" or axis != 0 else "gathers along the batch axis"
        if axis is None or axis % max(data_rank, 1) == 0:
            return f"works along the batch axis ({name}={axis})"
        return None
    if op.startswith("Reduce") or op == "MeanVarianceNormalization":
        axes = _statistic_axes(node, constants, len(shapes[node.input[0]] or (1,)))
        if axes is None:
            return "reduces over axes given at run time"
        return "reduces over the batch axis" if 0 in axes else None
    if op in ("Shape", "Size"):
        return None  # shape arithmetic: folded at N = 1, consumers are checked themselves
    if op in ("LSTM", "GRU", "RNN"):  # batch-first: each row its own recurrence
        weights = [i for n, i in enumerate(node.input) if n in (1, 2, 3, 7)]
        if not _attr(node, "layout", 0) or any(w in batched for w in weights):
            return "runs its recurrence across the batch axis (layout 0) or batched weights"
        return None
    return "is not known to keep samples apart"


def _statistic_axes(node: onnx.NodeProto, constants: Mapping[str, np.ndarray],
                    rank: int) -> set[int] | None:
    """The axes a Reduce* or MeanVarianceNormalization node reduces over (normalized), from
    its attribute or constant input; None when they are only known at run time."""
    axes = _attr(node, "axes", None)
    if axes is None and len(node.input) > 1 and node.input[1]:
        if node.input[1] not in constants:
            return None
        axes = [int(a) for a in constants[node.input[1]].reshape(-1)]
    if axes is None or (not len(axes) and node.op_type.startswith("Reduce")):
        # no axes: all of them (MeanVarianceNormalization's default is [0, 2, 3]), unless
        # noop_with_empty_axes makes the reduction an identity
        if node.op_type == "MeanVarianceNormalization":
            axes = [0, 2, 3]
        elif _attr(node, "noop_with_empty_axes", 0):
            axes = []
        else:
            axes = list(range(rank))
    return {a % rank for a in axes}


def _keeps_leading_rows(node, ins, batched, shapes) -> str | None:
    """Data-movement ops keep samples apart when input and output are batched with the same
    rows per sample block (each sample's data stays one contiguous block in the same order)."""
    x = node.input[0]
    if x not in batched:
        return None
    if node.op_type == "Transpose":
        perm = _attr(node, "perm", None)
        return None if perm is not None and perm[0] == 0 else "moves the batch axis"
    if node.op_type in ("Reshape", "Squeeze", "Unsqueeze"):
        return None  # row-major order kept; the output is batched (checked by the caller)
    in_shape, out_shape = shapes[x], shapes[node.output[0]]
    if in_shape is None or out_shape is None or in_shape[0] != out_shape[0]:
        return "changes the batch axis's extent"
    return None
