"""Bad input never crashes: each case raises a typed onnxc.errors exception saying where.

Complements test_import_errors.py (importer-level parse, graph and type errors),
test_compiled_model.py (wrong input dtype/shape/count, non-contiguous and misaligned inputs)
and test_cli_opt.py (onnxc-opt parse and verifier diagnostics with line:col). Here: the same
cases through the user-facing entry points (`onnxc.compile`, `onnxc.backend`), plus the ones
those files do not cover. Decisions this file pins down:
- non-contiguous or misaligned arrays are accepted and copied (never rejected);
- NaN and Inf propagate as in onnxruntime, except in MaxPool, where onnxruntime's kernel
  drops NaN: there we propagate it, as onnx.reference does (whose AveragePool, in turn,
  drops NaN where onnxruntime and onnxc propagate it);
- zero-size dimensions compile and give the correct (empty or identity-valued) output.
"""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import onnxc
import onnxc.backend
from onnxc import resource_limits
from onnxc.errors import (
    InvalidArgumentError,
    InvalidInputError,
    ModelLoadError,
    OnnxcError,
    ResourceLimitError,
    ShapeInferenceError,
    UnsupportedOpError,
)
from onnxc.tools.opt import main as opt_main
from tests.single_op import graph_model

F = TensorProto.FLOAT


def vi(name, shape, elem=F):
    return helper.make_tensor_value_info(name, elem, shape)


def make(nodes, inputs, outputs, initializers=(), opset=17) -> onnx.ModelProto:
    """`inputs` / `outputs` value infos, `initializers` tensors; IR version 8 (onnxruntime
    1.31 reads IR <= 11)."""
    return graph_model(nodes, {i.name: i for i in inputs}, {o.name: o for o in outputs},
                       initializers=list(initializers), opset=opset,
                       ir_version=8)


def compile_(model):
    return onnxc.compile(model, cache_dir=False)


def relu_model(shape=(2, 4)):
    return make([helper.make_node("Relu", ["x"], ["y"], name="r")], [vi("x", list(shape))],
                [vi("y", list(shape))])


# ----------------------------------------------------------------------------- model errors


@pytest.mark.parametrize("cut", [1, 10, -3])
def test_truncated_protobuf_through_the_backend(cut):
    data = relu_model().SerializeToString()
    with pytest.raises(ModelLoadError):
        onnxc.backend.prepare(data[:cut])


def test_empty_bytes_are_not_a_model():
    with pytest.raises(ModelLoadError, match="no outputs"):
        compile_(b"")


def test_graph_input_declared_twice():
    model = relu_model()
    model.graph.input.append(vi("x", [2, 4]))
    with pytest.raises(ModelLoadError, match="graph input 'x' is declared twice"):
        compile_(model)


def test_missing_initializer_names_node_and_value():
    model = make([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")],
                 [vi("x", [2, 2])], [vi("y", [2, 2])])
    with pytest.raises(ModelLoadError, match="node 'mm'.*'w'"):
        compile_(model)


def test_cycle_is_a_model_load_error():
    nodes = [helper.make_node("Relu", ["x", "b"], ["a"], name="n1"),
             helper.make_node("Add", ["x", "a"], ["b"], name="n2")]
    model = make(nodes, [vi("x", [2])], [vi("b", [2])])
    with pytest.raises(ModelLoadError, match="cycle"):
        compile_(model)


def test_declared_type_mismatch_names_the_node():
    model = make([helper.make_node("Relu", ["x"], ["y"], name="r")], [vi("x", [2])],
                 [vi("y", [2], TensorProto.INT64)])
    with pytest.raises(ShapeInferenceError, match="node 'r'.*'y'.*INT64"):
        compile_(model)


def test_operand_type_mismatch_names_the_node():
    model = make([helper.make_node("Add", ["x", "i"], ["y"], name="add")],
                 [vi("x", [2]), vi("i", [2], TensorProto.INT64)], [vi("y", [2])])
    with pytest.raises(ModelLoadError, match="node 'add'.*operand types differ"):
        compile_(model)


def test_unsupported_op_names_op_node_and_opset():
    model = make([helper.make_node("ImageDecoder", ["x"], ["y"], name="decode")],
                 [vi("x", [2], TensorProto.UINT8)], [vi("y", [2], TensorProto.UINT8)], opset=20)
    with pytest.raises(UnsupportedOpError) as info:
        compile_(model)
    error = info.value
    assert (error.op_type, error.node_name, error.opset) == ("ImageDecoder", "decode", 20)
    assert "ImageDecoder" in str(error) and "'decode'" in str(error) and "opset 20" in str(error)


def test_unsupported_attribute_value_names_op_and_value():
    scales = numpy_helper.from_array(np.array([1, 1, 2], np.float32), "s")
    model = make([helper.make_node("Resize", ["x", "", "s"], ["y"], name="resize", mode="linear")],
                 [vi("x", [1, 1, 4], TensorProto.UINT8)], [vi("y", [1, 1, 8], TensorProto.UINT8)],
                 [scales], opset=19)
    with pytest.raises(UnsupportedOpError, match="'Resize' .*node 'resize', opset 19.*float"):
        compile_(model)


def test_unsupported_element_type_of_a_cast():
    model = make([helper.make_node("Cast", ["x"], ["y"], name="c", to=TensorProto.COMPLEX64)],
                 [vi("x", [2])], [vi("y", [2], TensorProto.COMPLEX64)])
    with pytest.raises(UnsupportedOpError, match="COMPLEX64"):
        compile_(model)


def test_invalid_attribute_value_is_a_load_error():
    w = numpy_helper.from_array(np.ones((1, 1, 2, 2), np.float32), "w")
    model = make([helper.make_node("Conv", ["x", "w"], ["y"], name="conv", auto_pad="BOGUS")],
                 [vi("x", [1, 1, 4, 4])], [vi("y", [1, 1, 3, 3])], [w])
    with pytest.raises(ModelLoadError, match="'conv'.*BOGUS"):
        compile_(model)


def test_opset_newer_than_onnx_knows():
    model = relu_model()
    model.opset_import[0].version = 99
    with pytest.raises(ModelLoadError, match="opset 99"):
        compile_(model)


@pytest.mark.parametrize("versions, message", [
    ([-5], "opset -5"), ([0], "opset 0"), ([13, 17], "more than once, with versions 13, 17"),
])
def test_opset_below_one_or_imported_twice(versions, message):
    model = relu_model()
    del model.opset_import[:]
    model.opset_import.extend(helper.make_opsetid("", v) for v in versions)
    with pytest.raises(ModelLoadError, match=message):
        compile_(model)


@pytest.mark.parametrize("ir_version, message", [
    (999, "IR version 999 is newer than"), (0, "no IR version"), (-3, "no IR version"),
])
def test_ir_version_missing_or_newer_than_onnx_knows(ir_version, message):
    model = relu_model()
    model.ir_version = ir_version
    with pytest.raises(ModelLoadError, match=message):
        compile_(model)
    with pytest.raises(ModelLoadError, match=message):
        onnxc.import_onnx(model)


def _add_of(*initializers, sparse=()) -> onnx.ModelProto:
    model = make([helper.make_node("Add", ["x", "w"], ["y"], name="a")], [vi("x", [2])],
                 [vi("y", [2])], initializers)
    model.graph.sparse_initializer.extend(sparse)
    return model


def test_duplicate_initializer_names_are_refused():
    """onnxruntime refuses them too; before, the last one silently won."""
    ones, zeros = (numpy_helper.from_array(np.full(2, v, np.float32), "w") for v in (1, 0))
    with pytest.raises(ModelLoadError, match="initializer 'w' gives a second value"):
        compile_(_add_of(ones, zeros))
    sparse = helper.make_sparse_tensor(numpy_helper.from_array(np.ones(1, np.float32), "w"),
                                       numpy_helper.from_array(np.zeros(1, np.int64), "i"),
                                       [2])
    with pytest.raises(ModelLoadError, match="sparse initializer 'w' gives a second value"):
        compile_(_add_of(ones, sparse=[sparse]))


# ----------------------------------------------------------------------------- resource limits


def _tile(repeats: int, name: str = "tile") -> onnx.ModelProto:
    reps = numpy_helper.from_array(np.array([repeats], np.int64), "reps")
    return make([helper.make_node("Tile", ["x", "reps"], ["y"], name=name)], [vi("x", [1024])],
                [vi("y", [1024 * repeats])], [reps])


def test_a_node_result_past_the_bound_names_node_and_size(monkeypatch):
    monkeypatch.setenv("ONNXC_MAX_ALLOC_MB", "1")
    with pytest.raises(ResourceLimitError) as caught:
        compile_(_tile(512))  # 2 MiB of float32
    message = str(caught.value)
    for fragment in ("node 'tile' (Tile)", "[524288]", "2.0 MiB (2097152 bytes)", "1.0 MiB",
                     "$ONNXC_MAX_ALLOC_MB"):
        assert fragment in message, message
    compile_(_tile(128))  # 512 KiB: fine


def test_an_arena_past_the_bound_names_its_largest_buffer(monkeypatch):
    """Each intermediate fits, but two of them are live at once."""
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="first"),
             helper.make_node("Neg", ["x"], ["b"], name="second"),
             helper.make_node("Mul", ["a", "b"], ["c"], name="product"),
             helper.make_node("ReduceSum", ["c"], ["y"], name="sum", keepdims=0)]
    model = make(nodes, [vi("x", [160, 1024])], [vi("y", [])])
    compiled = onnxc.compile(model, cache_dir=False, opt_level=0)
    assert compiled.arena_bytes > 2**20
    monkeypatch.setenv("ONNXC_MAX_ALLOC_MB", "1")  # each tensor 640 KiB; the arena more
    with pytest.raises(ResourceLimitError, match=r"the arena of intermediate tensors .*ONNX"):
        onnxc.compile(model, cache_dir=False, opt_level=0)
    with pytest.raises(ResourceLimitError, match="the arena"):
        compiled._check_allocations()  # what a cache hit meets with less memory free


def test_the_bound_defaults_to_the_memory_available(monkeypatch):
    monkeypatch.delenv("ONNXC_MAX_ALLOC_MB", raising=False)
    available = resource_limits.available_memory()
    assert available is None or 0 < available < 2**60
    assert 0 < resource_limits.max_alloc_bytes() <= resource_limits.NO_BOUND
    monkeypatch.setenv("ONNXC_MAX_ALLOC_MB", "3")
    assert resource_limits.max_alloc_bytes() == 3 * 2**20


def test_sizes_are_exact_python_integers():
    assert resource_limits.tensor_bytes([2**32, 2**32], 4) == 2**66
    with pytest.raises(ResourceLimitError, match="64.0 EiB"):
        resource_limits.check_tensor([2**32, 2**32], 4, "x")


def test_import_time_folding_never_broadcasts_past_its_limit():
    """Where over three broadcast constants of 1024 elements would be 2**30 elements."""
    c, a, b = (numpy_helper.from_array(np.ones(shape, dtype), name) for shape, dtype, name in
               [((1024, 1, 1), bool, "c"), ((1, 1024, 1), np.int64, "a"),
                ((1, 1, 1024), np.int64, "b")])
    model = make([helper.make_node("Where", ["c", "a", "b"], ["y"], name="w")], [],
                 [vi("y", [1024] * 3, TensorProto.INT64)], [c, a, b])
    module = onnxc.import_onnx(model)
    assert any(op.name == "graph.where" for op in module.walk())  # not folded


def test_evaluating_a_constant_checks_the_result_size_first(monkeypatch):
    from onnxc.passes.evaluator import evaluate_op

    module = onnxc.import_onnx(_tile(512, name="t"))
    monkeypatch.setenv("ONNXC_MAX_ALLOC_MB", "1")
    tile = next(op for op in module.walk() if op.name == "graph.tile")
    with pytest.raises(ResourceLimitError, match="evaluating 'graph.tile' \\(ONNX node 't'\\)"):
        evaluate_op(tile, [np.ones(1024, np.float32), np.array([512], np.int64)])


# ----------------------------------------------------------------------------- the backend


def test_backend_declares_unsupported_ops_incompatible():
    good = relu_model()
    bad = make([helper.make_node("ImageDecoder", ["x"], ["y"]),
                helper.make_node("NoSuchOp", ["y"], ["z"])],
               [vi("x", [2])], [vi("z", [2])])
    assert onnxc.backend.is_compatible(good)
    assert not onnxc.backend.is_compatible(bad)
    assert onnxc.backend.unsupported_op_types(bad) == ["ImageDecoder", "NoSuchOp"]
    assert onnxc.backend.unsupported_op_types(good) == []
    domains = make([helper.make_node("FastGelu", ["x"], ["y"], domain="com.microsoft"),
                    helper.make_node("NoSuchOp", ["y"], ["z"], domain="com.microsoft")],
                   [vi("x", [2])], [vi("z", [2])])
    assert onnxc.backend.unsupported_op_types(domains) == ["com.microsoft.NoSuchOp"]


def test_backend_unsupported_is_a_typed_error_and_a_test_skip():
    """`prepare` raises an UnsupportedOpError that unittest/pytest count as a skip."""
    import unittest

    scales = numpy_helper.from_array(np.array([1, 1, 2], np.float32), "s")
    model = make([helper.make_node("Resize", ["x", "", "s"], ["y"], name="resize", mode="linear")],
                 [vi("x", [1, 1, 4], TensorProto.UINT8)], [vi("y", [1, 1, 8], TensorProto.UINT8)],
                 [scales], opset=19)
    with pytest.raises(UnsupportedOpError) as info:
        onnxc.backend.prepare(model)
    assert isinstance(info.value, unittest.SkipTest)
    assert (info.value.op_type, info.value.node_name, info.value.opset) == ("Resize", "resize", 19)


def test_backend_specializes_shape_inputs_per_value():
    """Reshape's shape fed as a graph input: bound per value, one compile per distinct
    value; Slice's starts and ends fed as graph inputs are sizes the run computes (no
    compile per value); results as onnx.reference's."""
    model = make([helper.make_node("Reshape", ["x", "shape"], ["r"]),
                  helper.make_node("Slice", ["r", "starts", "ends"], ["y"])],
                 [vi("x", [2, 6]), vi("shape", [2], TensorProto.INT64),
                  vi("starts", [1], TensorProto.INT64), vi("ends", [1], TensorProto.INT64)],
                 [helper.make_tensor_value_info("y", F, None)])
    rep = onnxc.backend.prepare(model)
    x = np.arange(12, dtype=np.float32).reshape(2, 6)
    for shape, ends in [([3, 4], [2]), ([4, 3], [3]), ([3, 4], [2])]:
        feeds = [x, np.array(shape, np.int64), np.array([0], np.int64), np.array(ends, np.int64)]
        (got,) = rep.run(feeds)
        np.testing.assert_array_equal(got, x.reshape(shape)[: ends[0]])
    assert sorted(rep.bound) == ["shape"]
    assert len(rep.variants) == 2  # the repeated value set reuses its compile
    with pytest.raises(InvalidInputError, match="expected 4 input"):
        rep.run([x])


def test_backend_specializes_integer_inputs_a_shape_operand_is_computed_from():
    """Range's limit is Cast(n), not a graph input: the backend binds the integer input."""
    consts = [numpy_helper.from_array(np.float32(0), "start"),
              numpy_helper.from_array(np.float32(1), "delta")]
    model = make([helper.make_node("Cast", ["n"], ["limit"], to=F),
                  helper.make_node("Range", ["start", "limit", "delta"], ["r"]),
                  helper.make_node("Add", ["r", "x"], ["y"])],
                 [vi("n", [], TensorProto.INT64), vi("x", [])],
                 [helper.make_tensor_value_info("y", F, None)], consts)
    rep = onnxc.backend.prepare(model)
    (y,) = rep.run([np.array(4, np.int64), np.array(0.5, np.float32)])
    np.testing.assert_array_equal(y, np.arange(4, dtype=np.float32) + 0.5)
    assert rep.bound == ["n"]


def test_backend_wrong_input_count_and_scalar_inputs():
    add = make([helper.make_node("Add", ["a", "b"], ["c"])], [vi("a", []), vi("b", [])],
               [vi("c", [])])
    rep = onnxc.backend.prepare(add)
    with pytest.raises(InvalidInputError, match="expected 2 input"):
        rep.run([np.float32(1)])
    (out,) = rep.run([np.float32(1.5), np.array(2.0, np.float32)])  # numpy scalar and 0-d
    assert out.shape == () and out == 3.5


# ----------------------------------------------------------------------------- run-time inputs


@pytest.fixture(scope="module")
def relu():
    return compile_(relu_model())


def test_fortran_order_and_read_only_inputs_are_accepted(relu):
    x = np.asfortranarray(np.arange(-4, 4, dtype=np.float32).reshape(2, 4))
    assert not x.flags.c_contiguous
    np.testing.assert_array_equal(relu(x)[0], np.maximum(x, 0))
    x.flags.writeable = False
    np.testing.assert_array_equal(relu(x)[0], np.maximum(x, 0))


def test_misaligned_inputs_are_copied(relu):
    raw = np.zeros(8 * 4 + 2, np.uint8)
    x = raw[2:].view(np.float32).reshape(2, 4)  # 2-byte offset: not float-aligned
    assert x.ctypes.data % 4
    x[...] = np.arange(-4, 4, dtype=np.float32).reshape(2, 4)
    np.testing.assert_array_equal(relu(x)[0], np.maximum(x, 0))


@pytest.mark.parametrize("bad, message", [
    (np.zeros((2, 4), np.float64), "dtype float64, expected float32"),
    (np.zeros((2, 4), np.int32), "dtype int32, expected float32"),
    (np.zeros((4, 2), np.float32), r"shape \[4, 2\], expected \[2, 4\]"),
    (np.zeros((2, 4, 1), np.float32), r"shape \[2, 4, 1\]"),
    ("text", "must be a numpy array"),
    (None, "must be a numpy array"),
])
def test_wrong_inputs_are_rejected_and_the_model_still_works(relu, bad, message):
    with pytest.raises(InvalidInputError, match=message):
        relu(bad)
    x = np.ones((2, 4), np.float32)
    np.testing.assert_array_equal(relu(x)[0], x)
    assert relu.arena_count == 1  # a rejected run gives no arena away


# ----------------------------------------------------------------------------- NaN and Inf

SPECIAL = np.array([np.nan, np.inf, -np.inf, 1.0, -2.0, 0.0, np.nan, 3.0],
                   np.float32).reshape(1, 1, 2, 4)
_CONSTS = {
    "lo": np.float32(-1), "hi": np.float32(1), "axes": np.array([3], np.int64),
    "w": np.linspace(-1, 1, 8, dtype=np.float32).reshape(4, 2),
    "z": np.zeros((1, 1, 2, 4), np.float32),
}
NAN_CASES = {
    "Relu": (helper.make_node("Relu", ["x"], ["y"]), [1, 1, 2, 4]),
    "LeakyRelu": (helper.make_node("LeakyRelu", ["x"], ["y"]), [1, 1, 2, 4]),
    "Sigmoid": (helper.make_node("Sigmoid", ["x"], ["y"]), [1, 1, 2, 4]),
    "Tanh": (helper.make_node("Tanh", ["x"], ["y"]), [1, 1, 2, 4]),
    "Exp": (helper.make_node("Exp", ["x"], ["y"]), [1, 1, 2, 4]),
    "Sqrt": (helper.make_node("Sqrt", ["x"], ["y"]), [1, 1, 2, 4]),
    "Add": (helper.make_node("Add", ["x", "x"], ["y"]), [1, 1, 2, 4]),
    "Mul": (helper.make_node("Mul", ["x", "x"], ["y"]), [1, 1, 2, 4]),
    "Max": (helper.make_node("Max", ["x", "z"], ["y"]), [1, 1, 2, 4]),
    "Clip": (helper.make_node("Clip", ["x", "lo", "hi"], ["y"]), [1, 1, 2, 4]),
    "Softmax": (helper.make_node("Softmax", ["x"], ["y"], axis=-1), [1, 1, 2, 4]),
    "AveragePool": (helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[1, 2],
                                     strides=[1, 2]), [1, 1, 2, 2]),
    "MaxPool": (helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[1, 2],
                                 strides=[1, 2]), [1, 1, 2, 2]),
    "ReduceSum": (helper.make_node("ReduceSum", ["x", "axes"], ["y"]), [1, 1, 2, 1]),
    "MatMul": (helper.make_node("MatMul", ["x", "w"], ["y"]), [1, 1, 2, 2]),
}


def _same_specials(got: np.ndarray, want: np.ndarray) -> None:
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(np.isposinf(got), np.isposinf(want))
    np.testing.assert_array_equal(np.isneginf(got), np.isneginf(want))
    finite = np.isfinite(want)
    np.testing.assert_allclose(got[finite], want[finite], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("op", sorted(NAN_CASES))
def test_nan_and_inf_propagate(op):
    node, out_shape = NAN_CASES[op]
    inits = [numpy_helper.from_array(v, k) for k, v in _CONSTS.items() if k in node.input]
    model = make([node], [vi("x", [1, 1, 2, 4])], [vi("y", out_shape)], inits)
    got = compile_(model)(SPECIAL)[0]
    if op == "MaxPool":  # onnxruntime's MaxPool skips NaN; see the module docstring
        with np.errstate(all="ignore"):
            want = ReferenceEvaluator(model).run(None, {"x": SPECIAL})[0]
    else:
        session = ort.InferenceSession(model.SerializeToString(),
                                       providers=["CPUExecutionProvider"])
        want = session.run(None, {"x": SPECIAL})[0]
    _same_specials(got, want)


# ----------------------------------------------------------------------------- empty tensors


def test_zero_size_elementwise_gives_an_empty_output():
    model = compile_(relu_model((0, 4)))
    (y,) = model(np.zeros((0, 4), np.float32))
    assert y.shape == (0, 4) and y.dtype == np.float32


def test_zero_size_contraction_and_reduction_give_identity_values():
    mm = make([helper.make_node("MatMul", ["a", "b"], ["y"])], [vi("a", [3, 0]), vi("b", [0, 2])],
              [vi("y", [3, 2])])
    (y,) = compile_(mm)(np.zeros((3, 0), np.float32), np.zeros((0, 2), np.float32))
    np.testing.assert_array_equal(y, np.zeros((3, 2), np.float32))
    rs = make([helper.make_node("ReduceSum", ["x"], ["y"], keepdims=0)], [vi("x", [0, 4])],
              [vi("y", [])], opset=11)
    (s,) = compile_(rs)(np.zeros((0, 4), np.float32))
    assert s.shape == () and s == 0.0


# ----------------------------------------------------------------------------- onnxc-opt text


@pytest.mark.parametrize("text, line_col, message", [
    (("func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {\n"
      "  %0 = graph.bogus(%x) : (tensor<2xf32>) -> tensor<2xf32>\n"
      "  func.return %0 : tensor<2xf32>\n}\n"), "2:19", "not registered"),
    (("func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {\n"
      "  %0 = graph.relu(%x) : (tensor<2xf32>) -> tensor<2xf33>\n"
      "  func.return %0 : tensor<2xf32>\n}\n"), "2:", "error"),
])
def test_invalid_ir_text_is_one_located_diagnostic(tmp_path, capsys, text, line_col, message):
    path = tmp_path / "bad.mlir"
    path.write_text(text)
    assert opt_main([str(path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{path}:{line_col}") and message in err
    assert "Traceback" not in err and err.count("\n") == 1


@pytest.mark.parametrize("text, line_col", [
    ('"builtin.module"() ({\n' + '"scf.execute_region"() ({\n' * 3000
     + '}) : () -> ()\n' * 3001, "51:1"),
    ('"test.op"() {a = ' + "[" * 3000 + "]" * 3000 + "} : () -> ()\n", "1:67"),
    ('"test.op"() {a = dense<' + "[" * 3000 + "1" + "]" * 3000 + "> : tensor<" + "1x" * 3000
     + "i32>} : () -> ()\n", "1:"),
])
def test_deep_nesting_is_one_located_diagnostic(tmp_path, capsys, text, line_col):
    """Not a RecursionError: MAX_NESTING levels of ops, attributes or types, else wherever
    Python's recursion limit is reached."""
    path = tmp_path / "deep.mlir"
    path.write_text(text)
    assert opt_main([str(path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{path}:{line_col}") and ": error: nested " in err, err
    assert "internal error" not in err and err.count("\n") == 1


def test_every_case_above_is_an_onnxc_error():
    """The typed hierarchy: catching OnnxcError is enough for callers."""
    for cls in (InvalidInputError, ModelLoadError, ShapeInferenceError, UnsupportedOpError,
                InvalidArgumentError, ResourceLimitError):
        assert issubclass(cls, OnnxcError)
