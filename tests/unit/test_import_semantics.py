"""The importer's output computes what the ONNX model computes.

A small numpy evaluator of the graph dialect (written from the op docs, independently of
the importer) runs imported modules; its results are compared with onnxruntime on small
models that exercise the importer's normalisations (auto_pad, opset-specific rules,
decompositions), and, under `-m slow`, with the expected outputs of ONNX's node suite.
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import onnx
import pytest
from xdsl.dialects.func import FuncOp, ReturnOp

from onnxc.dialects import graph, graph_shapes
from onnxc.dialects.graph import float_of, int_of, ints_of, shape_of
from onnxc.errors import UnsupportedOpError
from onnxc.frontend import import_onnx, import_onnx_text
from onnxc.frontend.onnx_types import numpy_dtype_of_element

# ----------------------------------------------------------------------------- evaluator


def _dtype(value) -> np.dtype:
    return numpy_dtype_of_element(value.type.get_element_type())


def _window_view(x: np.ndarray, kernel, strides, dilations, out) -> np.ndarray:
    """x[n, c, o*s + k*d] as an array [n, c, *out, *kernel]."""
    n = len(kernel)
    index = [np.arange(o)[:, None] * s + np.arange(k)[None, :] * d
             for o, k, s, d in zip(out, kernel, strides, dilations)]
    result = x
    for axis in range(n):
        idx = index[axis]
        result = np.take(result, idx.reshape(-1), axis=2 + axis)
        shape = result.shape[: 2 + axis] + idx.shape + result.shape[3 + axis :]
        result = result.reshape(shape)
        result = np.moveaxis(result, 3 + axis, -1)
    return result


def _conv(op, x, w, b):
    n = x.ndim - 2
    pads, strides, dil = ints_of(op.pads), ints_of(op.strides), ints_of(op.dilations)
    group = int_of(op.group)
    xp = np.pad(x, [(0, 0), (0, 0)] + [(pads[i], pads[i + n]) for i in range(n)])
    out = shape_of(op.output)[2:]
    patches = _window_view(xp, w.shape[2:], strides, dil, out)  # N C *out *k
    cin, cout = w.shape[1], w.shape[0]
    results = []
    for g in range(group):
        p = patches[:, g * cin : (g + 1) * cin]
        wg = w[g * (cout // group) : (g + 1) * (cout // group)]
        p = np.moveaxis(p, 1, 1 + n).reshape(p.shape[0], *out, -1)  # N *out (C*k)
        results.append(np.moveaxis(p @ wg.reshape(wg.shape[0], -1).T, -1, 1))
    y = np.concatenate(results, axis=1)
    return y + b.reshape(1, -1, *([1] * n)) if b is not None else y


def _pool(op, x):
    n = x.ndim - 2
    kernel, strides, pads = ints_of(op.kernel_shape), ints_of(op.strides), ints_of(op.pads)
    dil = ints_of(op.dilations) if isinstance(op, graph.MaxPoolOp) else (1,) * n
    out = shape_of(op.output)[2:]
    # pad far enough for the last (ceil-mode) window; mark real, pad and overflow cells
    extra = [max(0, (o - 1) * s + (k - 1) * d + 1 - (xs + pb + pe))
             for o, s, k, d, xs, pb, pe in zip(out, strides, kernel, dil, x.shape[2:],
                                               pads[:n], pads[n:])]
    widths = [(0, 0), (0, 0)] + [(pads[i], pads[i + n] + extra[i]) for i in range(n)]
    inside = np.pad(np.ones(x.shape[2:]), widths[2:])
    in_pads = np.pad(np.ones(x.shape[2:]), [(p, q) for p, q in widths[2:]], constant_values=1)
    for i in range(n):  # the ceil overflow is never counted
        sl = [slice(None)] * n
        sl[i] = slice(in_pads.shape[i] - extra[i], None)
        in_pads[tuple(sl)] = 0
    win = lambda a: _window_view(a[None, None], kernel, strides, dil, out)[0, 0]  # noqa: E731
    axes = tuple(range(-n, 0))
    if isinstance(op, graph.MaxPoolOp):
        xp = np.pad(x, widths, constant_values=-np.inf)
        return _window_view(xp, kernel, strides, dil, out).max(axis=axes)
    xp = np.pad(x, widths)
    total = _window_view(xp, kernel, strides, dil, out).sum(axis=axes)
    count = win(in_pads if int_of(op.count_include_pad) else inside).sum(axis=axes)
    return total / count


def _lrn(op, x):
    size, alpha, beta, bias = (int_of(op.size), float_of(op.alpha), float_of(op.beta),
                               float_of(op.bias))
    sq = np.pad(x * x, [(0, 0), ((size - 1) // 2, size // 2)] + [(0, 0)] * (x.ndim - 2))
    total = sum(sq[:, i : i + x.shape[1]] for i in range(size))
    return x / (bias + alpha / size * total) ** beta


def _softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _slice(op, x):
    index = [slice(None)] * x.ndim
    for start, end, axis, step in zip(ints_of(op.starts), ints_of(op.ends), ints_of(op.axes),
                                      ints_of(op.steps)):
        first, last = graph_shapes.normalized_slice_bounds(x.shape[axis], start, end, step)
        index[axis] = list(range(first, last, step))
        x = np.take(x, index[axis], axis=axis)
    return x


def _divide(a, b):
    if a.dtype.kind in "iu":
        q = np.abs(a) // np.abs(b)
        return np.where((a < 0) != (b < 0), -q, q).astype(a.dtype)
    return a / b


_ELEMENTWISE = {
    graph.ReluOp: lambda x: np.maximum(x, 0), graph.SigmoidOp: lambda x: 1 / (1 + np.exp(-x)),
    graph.TanhOp: np.tanh, graph.ExpOp: np.exp, graph.LogOp: np.log, graph.SqrtOp: np.sqrt,
    graph.NegOp: np.negative, graph.AbsOp: np.abs, graph.ReciprocalOp: lambda x: 1 / x,
    graph.IdentityOp: lambda x: x, graph.DropoutOp: lambda x: x,
    graph.AddOp: np.add, graph.SubOp: np.subtract, graph.MulOp: np.multiply,
    graph.DivOp: _divide, graph.PowOp: np.power,
    graph.SumOp: lambda *a: sum(a[1:], a[0]),
    graph.MaxOp: lambda *a: np.maximum.reduce(np.broadcast_arrays(*a)),
    graph.MinOp: lambda *a: np.minimum.reduce(np.broadcast_arrays(*a)),
    graph.MatMulOp: np.matmul,
}


def evaluate_op(op, args):  # noqa: C901 - one dispatch table, flat on purpose
    if type(op) in _ELEMENTWISE:
        return [_ELEMENTWISE[type(op)](*args)]
    x = args[0] if args else None
    match op:
        case graph.ConstantOp():
            return [np.frombuffer(op.value.data.data, _dtype(op.output)).reshape(
                shape_of(op.output))]
        case graph.ConstantOfShapeOp():
            value = np.frombuffer(op.value.data.data, _dtype(op.output))[0]
            return [np.full(shape_of(op.output), value)]
        case graph.LeakyReluOp():
            return [np.where(x < 0, x * float_of(op.alpha), x)]
        case graph.ClipOp():
            lo = -np.inf if op.min is None else float_of(op.min)
            hi = np.inf if op.max is None else float_of(op.max)
            return [np.minimum(np.maximum(x, lo), hi).astype(x.dtype)]
        case graph.CastOp():
            return [x.astype(_dtype(op.output))]
        case graph.GemmOp():
            a = x.T if int_of(op.trans_a) else x
            b = args[1].T if int_of(op.trans_b) else args[1]
            y = float_of(op.alpha) * (a @ b)
            return [y + float_of(op.beta) * args[2] if len(args) > 2 else y]
        case graph.ConvOp():
            return [_conv(op, x, args[1], args[2] if len(args) > 2 else None)]
        case graph.MaxPoolOp() | graph.AveragePoolOp():
            return [_pool(op, x)]
        case graph.GlobalAveragePoolOp() | graph.GlobalMaxPoolOp():
            reduce = np.mean if isinstance(op, graph.GlobalAveragePoolOp) else np.max
            return [reduce(x, axis=tuple(range(2, x.ndim)), keepdims=True)]
        case graph.BatchNormalizationOp():
            s, b, m, v = (a.reshape(1, -1, *([1] * (x.ndim - 2))) for a in args[1:])
            return [(x - m) / np.sqrt(v + float_of(op.epsilon)) * s + b]
        case graph.LRNOp():
            return [_lrn(op, x)]
        case graph.SoftmaxOp():
            return [_softmax(x, int_of(op.axis))]
        case graph.ReshapeOp() | graph.FlattenOp() | graph.SqueezeOp() | graph.UnsqueezeOp():
            return [x.reshape(shape_of(op.output))]
        case graph.TransposeOp():
            return [np.transpose(x, ints_of(op.perm))]
        case graph.ConcatOp():
            return [np.concatenate(args, axis=int_of(op.axis))]
        case graph.SplitOp():
            sizes = [shape_of(r)[int_of(op.axis)] for r in op.outputs]
            return np.split(x, np.cumsum(sizes)[:-1], axis=int_of(op.axis))
        case graph.SliceOp():
            return [_slice(op, x)]
        case graph.GatherOp():
            return [np.take(x, args[1], axis=int_of(op.axis))]
        case graph.PadOp():
            n = x.ndim
            pads = ints_of(op.pads)
            if any(p < 0 for p in pads):
                pytest.skip("negative pads are not modelled by this evaluator")
            widths = [(pads[i], pads[i + n]) for i in range(n)]
            if op.mode.data == "constant":
                return [np.pad(x, widths, constant_values=float_of(op.value))]
            return [np.pad(x, widths, mode="reflect" if op.mode.data == "reflect" else "edge")]
    raise NotImplementedError(op.name)


def evaluate(module, inputs: list[np.ndarray]) -> list[np.ndarray]:
    (func,) = [op for op in module.ops if isinstance(op, FuncOp)]
    env = dict(zip(func.body.block.args, inputs, strict=True))
    for op in func.body.block.ops:
        args = [env[v] for v in op.operands]
        if isinstance(op, ReturnOp):
            return args
        with np.errstate(all="ignore"):
            results = evaluate_op(op, args)
        for r, value in zip(op.results, results, strict=True):
            env[r] = np.asarray(value).astype(_dtype(r)).reshape(shape_of(r))
    raise AssertionError("no func.return")


# ----------------------------------------------------------------------------- against ORT

CASES = {
    "conv_same_lower": (12, "float[1,2,8,6] x, float[4,2,3,2] w, float[4] b",
                        'y = Conv<auto_pad = "SAME_LOWER", strides = [2, 2]>(x, w, b)'),
    "conv_group_dilation": (11, "float[1,4,9,9] x, float[6,2,3,3] w",
                            "y = Conv<group = 2, dilations = [2, 1], pads = [1, 0, 2, 1]>(x, w)"),
    "conv_1d": (13, "float[2,3,10] x, float[5,3,3] w", "y = Conv<strides = [3]>(x, w)"),
    "maxpool_ceil": (12, "float[1,2,7,7] x",
                     "y = MaxPool<kernel_shape = [3, 3], strides = [2, 2], ceil_mode = 1, "
                     "pads = [1, 1, 0, 0]>(x)"),
    "maxpool_same": (12, "float[1,1,8,9] x",
                     'y = MaxPool<kernel_shape = [2, 3], strides = [2, 2], '
                     'auto_pad = "SAME_LOWER">(x)'),
    "maxpool_dilations": (12, "float[1,1,8,9] x",
                          "y = MaxPool<kernel_shape = [2, 3], dilations = [2, 2], "
                          "pads = [1, 0, 1, 2]>(x)"),
    "avgpool_pad_count": (11, "float[1,2,6,5] x",
                          "y = AveragePool<kernel_shape = [3, 3], pads = [1, 1, 1, 1], "
                          "count_include_pad = 1, strides = [2, 2], ceil_mode = 1>(x)"),
    "avgpool_exclude": (11, "float[1,2,6,5] x",
                        'y = AveragePool<kernel_shape = [3, 2], auto_pad = "SAME_UPPER">(x)'),
    "softmax9_axis1": (9, "float[2,3,4] x", "y = Softmax(x)"),
    "logsoftmax11_axis0": (11, "float[2,3,4] x", "y = LogSoftmax<axis = 0>(x)"),
    "softmax13": (13, "float[2,3,4] x", "y = Softmax<axis = 1>(x)"),
    "legacy_broadcast": (6, "float[2,3,4] a, float[3] b",
                         "y = Sub<broadcast = 1, axis = 1>(a, b)", "",
                         lambda a, b: a - b[None, :, None]),  # no runtime implements Sub-6
    "batchnorm": (15, "float[2,3,4] x, float[3] s, float[3] b, float[3] m, float[3] v",
                  "y = BatchNormalization<epsilon = 0.01>(x, s, b, m, v)"),
    "lrn": (13, "float[1,6,3,3] x", "y = LRN<size = 3, alpha = 0.01, bias = 2.0>(x)"),
    "gemm": (13, "float[3,4] a, float[5,3] b, float[5] c",
             "y = Gemm<transA = 1, transB = 1, alpha = 0.5, beta = 2.0>(a, b, c)"),
    "pad_reflect": (13, "float[3,4] x",
                    'y = Pad<mode = "reflect">(x, p)', "int64[4] p = {1, 2, 1, 0}"),
    "slice_negative": (13, "float[5,6] x", "y = Slice(x, s, e, a, t)",
                       "int64[2] s = {-1, 4}, int64[2] e = {-100, 0}, int64[2] a = {1, 0}, "
                       "int64[2] t = {-2, -1}"),
    "gather_negative": (13, "float[4,3] x", "y = Gather<axis = 0>(x, i)",
                        "int64[2,2] i = {-1, 0, 2, -3}"),
    "split_concat": (13, "float[2,7] x", "a, b = Split<axis = 1>(x, s) y = Concat<axis = 1>(b, a)",
                     "int64[2] s = {3, 4}"),
    "clip_int": (13, "int32[6] x", "y = Clip(x, lo, hi)", "int32 lo = {-2}, int32 hi = {3}"),
    "cast_div_int": (13, "float[6] x", "i = Cast<to = 6>(x) y = Div(i, d)", "int32 d = {-2}"),
    "prelu": (16, "float[2,3,4] x, float[3,1] s", "y = PRelu(x, s)"),
    "elu_selu_celu": (13, "float[20] x",
                      "a = Elu<alpha = 0.5>(x) b = Selu(a) y = Celu<alpha = 2.0>(b)"),
    "hard_sigmoid_swish": (14, "float[20] x",
                           "a = HardSigmoid<alpha = 0.3>(x) b = HardSwish(x) y = Add(a, b)"),
    "softsign_mean": (13, "float[20] x, float[20] z", "a = Softsign(x) y = Mean(a, z, x)"),
    "gelu_tanh": (20, "float[20] x", 'y = Gelu<approximate = "tanh">(x)'),
    "expand": (13, "float[3,1] x", "y = Expand(x, s)", "int64[3] s = {2, 1, 4}"),
    "pow_int_exponent": (15, "float[4] x, int64[4] e", "y = Pow(x, e)"),
}


def _ort_model(opset: int, signature: str, body: str, initializers: str) -> str:
    init = f"<{initializers}>" if initializers else ""
    return (f'<ir_version: 8, opset_import: ["" : {opset}]>\n'
            f"g ({signature}) => (y) {init} {{ {body} }}")


def _random_inputs(model: onnx.ModelProto, rng) -> list[np.ndarray]:
    inits = {i.name for i in model.graph.initializer}
    arrays = []
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        tt = vi.type.tensor_type
        shape = [d.dim_value for d in tt.shape.dim]
        dtype = onnx.helper.tensor_dtype_to_np_dtype(tt.elem_type)
        values = rng.normal(0, 2, shape) if dtype.kind == "f" else rng.integers(-4, 5, shape)
        arrays.append(np.asarray(values).astype(dtype))
    return arrays


@pytest.mark.parametrize("name", sorted(CASES))
def test_imported_module_matches_onnxruntime(name: str):
    ort = pytest.importorskip("onnxruntime")
    opset, signature, body, *rest = CASES[name]
    text = _ort_model(opset, signature, body, rest[0] if rest else "")
    model = onnx.parser.parse_model(text)
    inputs = _random_inputs(model, np.random.default_rng(0))
    if len(rest) > 1:
        expected = rest[1](*inputs)
    else:
        session = ort.InferenceSession(model.SerializeToString(),
                                       providers=["CPUExecutionProvider"])
        feeds = {vi.name: a for vi, a in zip(session.get_inputs(), inputs)}
        (expected,) = session.run(None, feeds)
    module = import_onnx_text(text)
    module.verify()
    (actual,) = evaluate(module, inputs)
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    np.testing.assert_allclose(actual, expected, rtol=1e-4, atol=1e-5)


def test_evaluator_can_fail():
    """The comparison is meaningful: a wrong normalisation would be caught."""
    text = _ort_model(*CASES["conv_same_lower"][:3], "")
    module = import_onnx_text(text)
    wrong = import_onnx_text(text.replace("SAME_LOWER", "SAME_UPPER"))
    inputs = _random_inputs(onnx.parser.parse_model(text), np.random.default_rng(1))
    assert not np.allclose(evaluate(module, inputs)[0], evaluate(wrong, inputs)[0])


# ----------------------------------------------------------------------------- node suite


def _node_cases():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import onnx.backend.test.case.node as node

        return node.collect_testcases(None)


@pytest.mark.slow
def test_node_conformance_suite():
    """Every node test that imports must compute the expected outputs."""
    checked, failures = 0, []
    for case in _node_cases():
        for inputs, outputs in case.data_sets:
            if any(not isinstance(a, np.ndarray) for a in inputs):
                break
            names = [vi.name for vi in case.model.graph.input]
            try:
                module = import_onnx(case.model)
                feeds = list(inputs)
            except UnsupportedOpError as err:
                if "must be a constant" not in err.detail:
                    break
                # onnx-mlir's constant-input mode: shapes, axes, bounds given as data
                try:
                    module = import_onnx(case.model, dict(zip(names[1:], inputs[1:])))
                except UnsupportedOpError:
                    break
                feeds = list(inputs[:1])
            try:
                actual = evaluate(module, feeds)
                for a, e in itertools.zip_longest(actual, outputs):
                    np.testing.assert_allclose(a, e, rtol=max(case.rtol, 1e-4),
                                               atol=max(case.atol, 1e-5))
            except (AssertionError, NotImplementedError) as err:
                failures.append(f"{case.name}: {str(err)[:300]}")
            checked += 1
    print(f"{checked} node tests checked")
    assert checked > 300
    assert not failures, "\n".join(failures)
