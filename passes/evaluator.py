"""A numpy reference semantics of the graph dialect, op by op.

Constant folding evaluates ops on their constant operands with it, and the numeric-equivalence
harness (`verify_numerics`) runs whole modules before and after a pass pipeline with it. It is a
verification and compile-time evaluation tool written from the ONNX operator docs, never an
inference path: it favours obvious code over speed.

`EVALUATORS` maps every graph op class to `fn(op, inputs) -> list[np.ndarray]`; ops added to the
dialect add their entry there.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar

import numpy as np
from xdsl.dialects.builtin import ArrayAttr, ModuleOp, StringAttr, TensorType
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Operation, SSAValue

from onnxc.dialects import graph, graph_shapes
from onnxc.dialects.activations import ACTIVATIONS, NUMPY_OPS, activation_of
from onnxc.dialects.dense_data import element_dtype, to_numpy
from onnxc.dialects.graph import float_of, int_of, ints_of, shape_of
from onnxc.dialects.graph_strings import StringType
from onnxc.dialects.layout import ConvertOp
from onnxc.dialects.symbolic_dims import SymDim
from onnxc.errors import InvalidInputError, UnsupportedOpError
from onnxc.pass_manager.verifier import origin_of
from onnxc.passes import (
    composite_reference,
    evaluator_linalg,
    evaluator_logic,
    evaluator_quant,
    evaluator_random,
    evaluator_reduce,
    evaluator_rnn,
    evaluator_strings,
    evaluator_tensor,
    evaluator_trees,
    fused_reference,
    quant_reference,
    weight_quant_reference,
)
from onnxc.passes.evaluator_sizes import (
    bind_result_sizes,
    bind_run_sizes,
    bind_symbols,
    has_symbolic_types,
    specialized,
)
from onnxc.passes.layout_fold import constant_value
from onnxc.resource_limits import check_tensor, element_bytes

Evaluator = Callable[[Operation, list[np.ndarray]], list[np.ndarray]]


def dtype_of(value: SSAValue) -> np.dtype:
    """The numpy dtype of a tensor-typed value (object for strings: arrays of str here)."""
    element = value.type.get_element_type()
    return np.dtype(object) if isinstance(element, StringType) else element_dtype(element)


# ----------------------------------------------------------------------------- nn kernels


def _window_view(x: np.ndarray, kernel, strides, dilations, out) -> np.ndarray:
    """x[n, c, o*s + k*d] as an array [n, c, *out, *kernel]."""
    result = x
    for axis, (o, k, s, d) in enumerate(zip(out, kernel, strides, dilations)):
        idx = np.arange(o)[:, None] * s + np.arange(k)[None, :] * d
        result = np.take(result, idx.reshape(-1), axis=2 + axis)
        result = result.reshape(result.shape[: 2 + axis] + idx.shape + result.shape[3 + axis :])
        result = np.moveaxis(result, 3 + axis, -1)
    return result


def _conv(op: graph.ConvOp, args: list[np.ndarray]) -> list[np.ndarray]:
    """im2col assembled from one strided view per kernel offset, then one batched matrix
    product over images and groups."""
    x, w = args[0], args[1]
    n = x.ndim - 2
    pads, strides, dil = ints_of(op.pads), ints_of(op.strides), ints_of(op.dilations)
    groups = int_of(op.group)
    out = shape_of(op.output)[2:]
    xp = np.pad(x, [(0, 0), (0, 0)] + [(pads[i], pads[i + n]) for i in range(n)])
    batch, cout, cin_g = x.shape[0], w.shape[0], w.shape[1]
    xg = xp.reshape(batch, groups, cin_g, *xp.shape[2:])
    wg = w.reshape(groups, cout // groups, cin_g, *w.shape[2:])
    positions = math.prod(out)
    views = []
    for offset in np.ndindex(*w.shape[2:]):
        window = tuple(slice(k * d, k * d + (o - 1) * s + 1, s)
                       for k, o, s, d in zip(offset, out, strides, dil))
        views.append(xg[(slice(None),) * 3 + window].reshape(batch, groups, cin_g, positions))
    # im2col from the strided views: one matrix product per image and group
    patches = views[0] if len(views) == 1 else np.stack(views, axis=3).reshape(
        batch, groups, -1, positions)
    y = wg.reshape(groups, cout // groups, -1) @ patches
    y = y.reshape(batch, cout, *out)
    if len(args) > 2:
        y = y + args[2].reshape(1, -1, *([1] * n))
    return [y]


def _pool(op: graph.PoolOp, args: list[np.ndarray]) -> list[np.ndarray]:
    x = args[0]
    n = x.ndim - 2
    kernel, strides, pads = ints_of(op.kernel_shape), ints_of(op.strides), ints_of(op.pads)
    is_max = isinstance(op, graph.MaxPoolOp)
    dil = op.window_dilations()
    out = shape_of(op.output)[2:]
    # pad far enough for the last (ceil-mode) window; that overflow is never counted
    extra = [max(0, (o - 1) * s + (k - 1) * d + 1 - (xs + pb + pe))
             for o, s, k, d, xs, pb, pe in zip(out, strides, kernel, dil, x.shape[2:],
                                               pads[:n], pads[n:])]
    widths = [(0, 0), (0, 0)] + [(pads[i], pads[i + n] + extra[i]) for i in range(n)]
    axes = tuple(range(-n, 0))
    if is_max:
        fill = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
        xp = np.pad(x, widths, constant_values=fill)
        return [_window_view(xp, kernel, strides, dil, out).max(axis=axes)]
    inside = np.pad(np.ones(x.shape[2:]), widths[2:])
    with_pads = np.pad(np.ones(x.shape[2:]), widths[2:], constant_values=1)
    for i in range(n):
        sl = [slice(None)] * n
        sl[i] = slice(with_pads.shape[i] - extra[i], None)
        with_pads[tuple(sl)] = 0
    counted = with_pads if int_of(op.count_include_pad) else inside
    count = _window_view(counted[None, None], kernel, strides, dil, out)[0, 0].sum(axis=axes)
    total = _window_view(np.pad(x, widths), kernel, strides, dil, out).sum(axis=axes)
    return [total / count]


def _global_pool(op: graph.GlobalPoolOp, args: list[np.ndarray]) -> list[np.ndarray]:
    x = args[0]
    reduce = np.mean if isinstance(op, graph.GlobalAveragePoolOp) else np.max
    return [reduce(x, axis=tuple(range(2, x.ndim)), keepdims=True)]


def _batch_norm(op: graph.BatchNormalizationOp, args: list[np.ndarray]) -> list[np.ndarray]:
    x = args[0]
    s, b, m, v = (a.reshape(1, -1, *([1] * (x.ndim - 2))) for a in args[1:])
    return [(x - m) / np.sqrt(v + float_of(op.epsilon)) * s + b]


def _lrn(op: graph.LRNOp, args: list[np.ndarray]) -> list[np.ndarray]:
    x = args[0]
    size, alpha, beta, bias = (int_of(op.size), float_of(op.alpha), float_of(op.beta),
                               float_of(op.bias))
    sq = np.pad(x * x, [(0, 0), ((size - 1) // 2, size // 2)] + [(0, 0)] * (x.ndim - 2))
    total = sum(sq[:, i : i + x.shape[1]] for i in range(size))
    return [x / (bias + alpha / size * total) ** beta]


def _softmax(op: graph.SoftmaxOp, args: list[np.ndarray]) -> list[np.ndarray]:
    x, axis = args[0], int_of(op.axis)
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return [e / e.sum(axis=axis, keepdims=True)]


# ----------------------------------------------------------------------------- math


def _divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """ONNX Div: integer division truncates toward zero (numpy floors)."""
    if a.dtype.kind in "iu":
        q = np.abs(a) // np.abs(b)
        return np.where((a < 0) != (b < 0), -q, q).astype(a.dtype)
    return a / b


def _power(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IEEE pow, computed in float64: numpy's float32 np.power takes sqrt for a broadcast
    exponent of 0.5, which gives -0.0 for -0.0 and NaN for -inf (pow gives +0.0, +inf)."""
    if a.dtype.kind in "iu":
        return np.power(a.astype(np.float64), b).astype(a.dtype)
    return np.float_power(a, b).astype(a.dtype)


def with_epilogue(op: Operation, values: list[np.ndarray]) -> list[np.ndarray]:
    """Apply a fused activation epilogue (fuse-activation) to the op's single result."""
    act = op.properties.get("activation")
    if act is None:
        return values
    alpha, beta = (op.properties.get(p) for p in ("activation_alpha", "activation_beta"))
    activation = ACTIVATIONS[act.data]
    return [activation.evaluate(values[0], None if alpha is None else alpha.value.data,
                                None if beta is None else beta.value.data)]


def _unary(fn: Callable[[np.ndarray], np.ndarray]) -> Evaluator:
    return lambda op, args: [fn(args[0])]


def _binary(fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Evaluator:
    def evaluate_binary(op: Operation, args: list[np.ndarray]) -> list[np.ndarray]:
        rhs = args[1] if len(args) > 1 else None
        scalar = getattr(op, "scalar", None)  # fold-scalar-binary's form: rhs as a property
        if scalar is not None:
            rhs = np.asarray(float_of(scalar)).astype(args[0].dtype)
        return [fn(args[0], rhs)]

    return evaluate_binary


def _variadic(reduce: Callable) -> Evaluator:
    return lambda op, args: [reduce(np.broadcast_arrays(*args))]


def _constant(op: graph.ConstantOp, args: list[np.ndarray]) -> list[np.ndarray]:
    return [constant_value(op.value)]  # a laid-out constant stores its data permuted


def _constant_of_shape(op: graph.ConstantOfShapeOp, args: list[np.ndarray]) -> list[np.ndarray]:
    value = to_numpy(op.value).reshape(-1)[0]
    return [np.full(shape_of(op.output), value, dtype=dtype_of(op.output))]


def _activation(op: Operation, args: list[np.ndarray]) -> list[np.ndarray]:
    """Relu, Sigmoid, Tanh, LeakyRelu, Clip: their formula (dialects/activations.py)."""
    found = activation_of(op)
    assert found is not None
    activation, alpha, beta = found
    return [activation.evaluate(args[0], alpha, beta)]


def _gemm(op: graph.GemmOp, args: list[np.ndarray]) -> list[np.ndarray]:
    a = args[0].T if int_of(op.trans_a) else args[0]
    b = args[1].T if int_of(op.trans_b) else args[1]
    y = float_of(op.alpha) * (a @ b)
    return [y + float_of(op.beta) * args[2] if len(args) > 2 else y]


# ----------------------------------------------------------------------------- tensors


def _reshape_like(op: graph.ReshapeLikeOp, args: list[np.ndarray]) -> list[np.ndarray]:
    """Reshape/Flatten/Squeeze/Unsqueeze: the result type carries the target shape (one
    size a kernel defined earlier in the run, NonZero's count, may still be a symbol: the
    data's size gives it)."""
    shape = shape_of(op.output)
    unknown = [i for i, d in enumerate(shape) if not isinstance(d, int)]
    if len(unknown) == 1:
        shape = [-1 if i == unknown[0] else d for i, d in enumerate(shape)]
    return [args[0].reshape(shape)]


def _split(op: graph.SplitOp, args: list[np.ndarray]) -> list[np.ndarray]:
    axis = int_of(op.axis)
    sizes = [shape_of(r)[axis] for r in op.outputs]
    return np.split(args[0], np.cumsum(sizes)[:-1], axis=axis)


def _slice(op: graph.SliceOp, args: list[np.ndarray]) -> list[np.ndarray]:
    x = args[0]
    for start, end, axis, step in zip(*op.bounds(), ints_of(op.axes), ints_of(op.steps)):
        first, last = graph_shapes.normalized_slice_bounds(x.shape[axis], start, end, step)
        x = np.take(x, list(range(first, last, step)), axis=axis)
    return [x]


def _pad(op: graph.PadOp, args: list[np.ndarray]) -> list[np.ndarray]:
    """Positive pads grow the tensor, negative pads crop it (ONNX allows both)."""
    x = args[0]
    n = x.ndim
    pads = op.pad_sizes()  # ints: specialized() gave sizes their values
    widths = [(max(pads[i], 0), max(pads[i + n], 0)) for i in range(n)]
    mode = op.mode.data
    if mode == "constant":
        y = np.pad(x, widths, constant_values=np.asarray(float_of(op.value)).astype(x.dtype))
    else:
        y = np.pad(x, widths, mode=mode)  # reflect, edge, wrap: numpy's modes of those names
    crop = tuple(slice(max(-pads[i], 0), y.shape[i] - max(-pads[i + n], 0)) for i in range(n))
    return [y[crop]]


def _gather(op: graph.GatherOp, args: list[np.ndarray]) -> list[np.ndarray]:
    if op.nonnegative is not None and (args[1] < 0).any():  # compiled code stops there too
        raise InvalidInputError(f"graph.gather: a run-time slice start is negative: {args[1]}")
    return [np.take(args[0], args[1], axis=int_of(op.axis))]


def _shape(op: graph.ShapeOp, args: list[np.ndarray]) -> list[np.ndarray]:
    rank = args[0].ndim
    start, end = (max(0, min(rank, v + rank if v < 0 else v))
                  for v in (int_of(op.start), int_of(op.end)))
    return [np.asarray(args[0].shape[start:end], dtype=np.int64)]


def _symbolic_constant(op: graph.SymbolicConstantOp, args: list[np.ndarray]) -> list[np.ndarray]:
    """Only values that are all numbers evaluate here; `evaluate` gives the symbols their
    sizes first (`specialized` makes the op a graph.constant)."""
    dims = op.dims()
    if not all(isinstance(d, int) for d in dims):
        raise UnsupportedOpError(op.name, None, None, "its values need the sizes of their "
                                 "symbols (evaluate() binds them from the inputs)")
    return [np.asarray(dims, dtype=np.int64)]


EVALUATORS: dict[type[Operation], Evaluator] = {
    graph.ConstantOp: _constant,
    graph.SymbolicConstantOp: _symbolic_constant,
    graph.ConstantOfShapeOp: _constant_of_shape,
    graph.ReluOp: _activation,
    graph.SigmoidOp: _activation,
    graph.TanhOp: _activation,
    graph.ExpOp: _unary(np.exp),
    graph.ErfOp: _unary(NUMPY_OPS.erf),
    graph.LogOp: _unary(np.log),
    graph.SqrtOp: _unary(np.sqrt),
    graph.NegOp: _unary(np.negative),
    graph.AbsOp: _unary(np.abs),
    graph.ReciprocalOp: _unary(lambda x: 1 / x),
    graph.IdentityOp: _unary(lambda x: x),
    graph.DropoutOp: _unary(lambda x: x),
    graph.LeakyReluOp: _activation,
    graph.ClipOp: _activation,
    graph.CastOp: lambda op, a: [a[0].astype(dtype_of(op.output))],
    graph.AddOp: _binary(np.add),
    graph.SubOp: _binary(np.subtract),
    graph.MulOp: _binary(np.multiply),
    graph.DivOp: _binary(_divide),
    graph.PowOp: _binary(_power),
    graph.AddScalarOp: _binary(np.add),
    graph.SubScalarOp: _binary(np.subtract),
    graph.MulScalarOp: _binary(np.multiply),
    graph.DivScalarOp: _binary(_divide),
    graph.PowScalarOp: _binary(_power),
    graph.SumOp: lambda op, a: [sum(a[1:], a[0])],
    graph.MaxOp: _variadic(np.maximum.reduce),
    graph.MinOp: _variadic(np.minimum.reduce),
    graph.MatMulOp: lambda op, a: [np.matmul(a[0], a[1])],
    graph.GemmOp: _gemm,
    graph.ConvOp: _conv,
    graph.MaxPoolOp: _pool,
    graph.AveragePoolOp: _pool,
    graph.GlobalAveragePoolOp: _global_pool,
    graph.GlobalMaxPoolOp: _global_pool,
    graph.BatchNormalizationOp: _batch_norm,
    graph.LRNOp: _lrn,
    graph.SoftmaxOp: _softmax,
    graph.ReshapeOp: _reshape_like,
    graph.FlattenOp: _reshape_like,
    graph.SqueezeOp: _reshape_like,
    graph.UnsqueezeOp: _reshape_like,
    graph.TransposeOp: lambda op, a: [np.transpose(a[0], ints_of(op.perm))],
    graph.ConcatOp: lambda op, a: [np.concatenate(a, axis=int_of(op.axis))],
    graph.SplitOp: _split,
    graph.SliceOp: _slice,
    graph.GatherOp: _gather,
    graph.PadOp: _pad,
    graph.ShapeOp: _shape,
    ConvertOp: lambda op, a: [a[0]],  # layout.convert: same logical tensor, new memory order
    **evaluator_quant.EVALUATORS,
    **quant_reference.EVALUATORS,
    **fused_reference.EVALUATORS,
    **composite_reference.EVALUATORS,
    **evaluator_reduce.EVALUATORS,
    **evaluator_logic.EVALUATORS,
    **evaluator_tensor.EVALUATORS,
    **evaluator_rnn.EVALUATORS,
    **evaluator_trees.EVALUATORS,
    **evaluator_strings.EVALUATORS,
    **evaluator_random.EVALUATORS,
    **evaluator_linalg.EVALUATORS,
    **weight_quant_reference.EVALUATORS,
}


# ----------------------------------------------------------------------------- driver


def _as_result(value, result: SSAValue) -> np.ndarray:
    """`value` in `result`'s element type and shape; a shape sized by a loop's run-length
    count (known only once the loop ran: see `specialized`) is the value's own."""
    array, shape = np.asarray(value).astype(dtype_of(result), copy=False), shape_of(result)
    return array if any(isinstance(d, SymDim) for d in shape) else array.reshape(shape)


def evaluate_op(op: Operation, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """The results of one graph op on concrete inputs, cast to the result types."""
    fn = EVALUATORS.get(type(op))
    if fn is None:
        raise UnsupportedOpError(op.name, None, None, "the numpy evaluator has no entry")
    _check_result_sizes(op)
    with np.errstate(all="ignore"):
        values = with_epilogue(op, fn(op, list(inputs)))
    return [_as_result(v, r)
            for r, v in zip(op.results, values, strict=True)]


def _check_result_sizes(op: Operation) -> None:
    """ResourceLimitError before numpy allocates a result larger than onnxc may allocate."""

    def what(t: TensorType) -> str:
        origin = origin_of(op)
        return (f"evaluating '{op.name}'{f' ({origin})' if origin else ''}: "
                f"its {t.get_element_type()} result")

    for r in op.results:
        if isinstance(t := r.type, TensorType):
            check_tensor(t.get_shape(), element_bytes(t.get_element_type()),
                         lambda t=t: what(t))


def entry_function(module_or_func: ModuleOp | FuncOp) -> FuncOp:
    """The function a model runs: the one named by the importer, else the only public one."""
    if isinstance(module_or_func, FuncOp):
        return module_or_func
    funcs = [op for op in module_or_func.ops if isinstance(op, FuncOp)]
    named = [f for f in funcs if "onnxc.input_names" in f.attributes]
    public = [f for f in funcs if f.sym_visibility is None or f.sym_visibility.data == "public"]
    candidates = named or public
    if len(candidates) != 1:
        raise InvalidInputError(f"expected one entry function, found {len(candidates)}")
    return candidates[0]


def input_names(func: FuncOp) -> list[str]:
    """The feed names of the entry function (importer names, else arg0, arg1, ...)."""
    names = func.attributes.get("onnxc.input_names")
    if isinstance(names, ArrayAttr):
        return [n.data for n in names.data if isinstance(n, StringAttr)]
    return [f"arg{i}" for i in range(len(func.body.block.args))]


_RUN_SIZES: ContextVar[dict[str, int]] = ContextVar("evaluator_run_sizes")
"""The sizes of the function `evaluate` runs: its input symbols', then its run symbols'."""


def evaluate(
    module_or_func: ModuleOp | FuncOp,
    feeds: Mapping[str, np.ndarray] | Sequence[np.ndarray],
) -> list[np.ndarray]:
    """Run the entry function op by op on `feeds` (by input name or in order); symbolic
    sizes take the values the feeds' shapes give them."""
    func = entry_function(module_or_func)
    args = func.body.block.args
    if isinstance(feeds, Mapping):
        names = input_names(func)
        missing = [n for n in names if n not in feeds]
        if missing:
            raise InvalidInputError(f"missing inputs: {', '.join(missing)}")
        feeds = [feeds[n] for n in names]
    if len(feeds) != len(args):
        raise InvalidInputError(f"expected {len(args)} inputs, got {len(feeds)}")
    sizes: dict[str, int] = {}
    if has_symbolic_types(func):
        sizes = bind_symbols(func, [np.asarray(f) for f in feeds])
        func = specialized(func, sizes)
        args = func.body.block.args
    env: dict[SSAValue, np.ndarray] = {}
    for arg, value in zip(args, feeds):
        array = np.asarray(value)
        if array.shape != shape_of(arg):
            raise InvalidInputError(f"input shape {array.shape} differs from {shape_of(arg)}")
        env[arg] = array.astype(dtype_of(arg), copy=False)
    token = _RUN_SIZES.set(sizes)
    try:
        values = _run_block(func.body.block, env)
    finally:
        _RUN_SIZES.reset(token)
    if values is None:
        raise InvalidInputError(f"function @{func.sym_name.data} has no func.return")
    return values


def _run_block(block: Block, env: dict[SSAValue, np.ndarray]) -> list[np.ndarray] | None:
    """Run a block's ops in `env` (which holds the values of enclosing scopes too); the
    values its terminator returns or yields."""
    for op in block.ops:
        operands = [env[v] for v in op.operands]
        if isinstance(op, ReturnOp | graph.YieldOp):
            return operands
        if isinstance(op, graph.IfOp | graph.LoopOp):
            values = evaluate_region_op(op, operands, env)
        elif isinstance(op, graph.BindSizesOp):
            values = []
            bind_run_sizes(op, operands[0], _RUN_SIZES.get())
        else:
            values = evaluate_op(op, operands)
            if isinstance(op, graph.DefinesSizes):
                bind_result_sizes(op, values, _RUN_SIZES.get())
        for r, value in zip(op.results, values, strict=True):
            env[r] = value
    return None


def evaluate_region_op(op: graph.IfOp | graph.LoopOp, operands: list[np.ndarray],
                       env: dict[SSAValue, np.ndarray]) -> list[np.ndarray]:
    """The results of a graph.if / graph.loop: its regions read outer values from `env`
    (not operands), so these are run by the driver, not from EVALUATORS."""
    _check_result_sizes(op)
    values = (_run_if if isinstance(op, graph.IfOp) else _run_loop)(op, operands, env)
    return [_as_result(v, r)
            for r, v in zip(op.results, values, strict=True)]


def _run_if(op: graph.IfOp, operands: list[np.ndarray],
            env: dict[SSAValue, np.ndarray]) -> list[np.ndarray]:
    taken = op.then_region if bool(operands[0].reshape(-1)[0]) else op.else_region
    return _run_block(taken.block, env) or []


def _run_loop(op: graph.LoopOp, operands: list[np.ndarray],
              env: dict[SSAValue, np.ndarray]) -> list[np.ndarray]:
    """ONNX Loop semantics: run while i < trip count and the condition holds. A body that
    defines run sizes (their own each iteration) runs a fresh copy each iteration, without
    the last iteration's values: binding them specializes the ops after them in place."""
    trips, cond = int(operands[0].reshape(-1)[0]), bool(operands[1].reshape(-1)[0])
    state = operands[2:]
    slices: list[list[np.ndarray]] = [[] for _ in op.scan_outputs]
    local = {n for o in op.body.walk() for n in graph.defined_sizes(o)}
    i = 0
    while i < trips and cond:
        for name in local:
            _RUN_SIZES.get().pop(name, None)
        body = op.body.clone().block if local else op.body.block
        args = body.args
        env[args[0]], env[args[1]] = np.array(i, np.int64), np.array(cond)
        env.update(zip(args[2:], state))
        out = _run_block(body, env) or []
        cond, state = bool(out[0].reshape(-1)[0]), out[1:1 + len(state)]
        for k, value in enumerate(out[1 + len(state):]):
            slices[k].append(value)
        i += 1
    stacked = [np.stack(s) if s else np.zeros(shape_of(r), dtype_of(r))
               for s, r in zip(slices, op.scan_outputs)]
    return [*state, *stacked]
