"""The importer's output computes what the ONNX model computes.

The numpy evaluator of the graph dialect (onnxc.passes.evaluator, written from the op docs,
independently of the importer) runs imported modules; its results are compared with
onnxruntime on small models that exercise the importer's normalisations (auto_pad, opset-specific rules,
decompositions), and, under `-m slow`, with the expected outputs of ONNX's node suite.
"""

from __future__ import annotations

import itertools
import warnings

import ml_dtypes
import numpy as np
import onnx
import pytest

from onnxc.errors import UnsupportedOpError
from onnxc.frontend import import_onnx, import_onnx_text
from onnxc.passes.evaluator import evaluate

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
        from onnx.backend.test.case import node

        return node.collect_testcases(None)


@pytest.mark.slow
def test_node_conformance_suite():
    """Every node test that imports must compute the expected outputs."""
    checked, failures = 0, []
    for case in _node_cases():
        for inputs, outputs in case.data_sets:
            if any(not isinstance(a, np.ndarray) for a in [*inputs, *outputs]):
                break  # sequences and optionals: not graph-dialect values
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
                    # two units in the last place of a half-precision result
                    ulps = 2 * float(ml_dtypes.finfo(e.dtype).eps) if e.dtype.kind == "V" or \
                        e.dtype == np.float16 else 0.0
                    np.testing.assert_allclose(a, e, rtol=max(case.rtol, 1e-4, ulps),
                                               atol=max(case.atol, 1e-5))
            except (AssertionError, UnsupportedOpError) as err:
                failures.append(f"{case.name}: {str(err)[:300]}")
            checked += 1
    print(f"{checked} node tests checked")
    assert checked > 300
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("rank", [3, 4, 5])
def test_prelu_6_applies_a_channel_slope_per_channel(rank):
    """PRelu before opset 7 broadcasts a [C] slope along axis 1 (PyTorch's old exports)."""
    shape = [2, 3, 4, 5, 2][:rank]
    slope = np.array([0.1, -0.5, 2.0], np.float32)
    node = onnx.helper.make_node("PRelu", ["x", "s"], ["y"])
    graph = onnx.helper.make_graph(
        [node], "g", [onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, shape)],
        [onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, shape)],
        [onnx.numpy_helper.from_array(slope, "s")])
    model = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 6)])
    x = np.random.default_rng(rank).standard_normal(shape).astype(np.float32)
    (y,) = evaluate(import_onnx(model), [x])
    per_channel = slope.reshape(3, *([1] * (rank - 2)))
    np.testing.assert_allclose(y, np.where(x < 0, x * per_channel, x), rtol=1e-6)
