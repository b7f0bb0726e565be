"""The runtime layer: input checks before native code runs, outputs, the entry ABI, errors.

Every bad call must raise a typed `OnnxcError` naming what was expected and what came; none
may reach native code (a wrong shape would read or write out of bounds).
"""

import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnxc
from onnxc.errors import InvalidInputError, ModelLoadError, UnsupportedOpError
from tests.single_op import graph_model


def _model() -> onnx.ModelProto:
    """y = relu(x @ w + b), z = x * 2: two outputs, a weight and a bias as initializers."""
    consts = {"w": np.arange(12, dtype=np.float32).reshape(4, 3) / 10,
              "b": np.array([0.5, -1.0, 0.0], np.float32), "two": np.array(2.0, np.float32)}
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["xw"], name="mm"),
        helper.make_node("Add", ["xw", "b"], ["pre"], name="add"),
        helper.make_node("Relu", ["pre"], ["y"], name="relu"),
        helper.make_node("Mul", ["x", "two"], ["z"], name="mul"),
    ]
    return graph_model(nodes, {"x": (np.float32, [2, 4])},
                       {"y": (np.float32, [2, 3]), "z": (np.float32, [2, 4])},
                       initializers=consts, opset=17, ir_version=8)


@pytest.fixture(scope="module")
def compiled():
    return onnxc.compile(_model())


def _expected(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    w = np.arange(12, dtype=np.float32).reshape(4, 3) / 10
    return np.maximum(x @ w + np.array([0.5, -1.0, 0.0], np.float32), 0), x * 2


def test_signature(compiled):
    assert compiled.input_names == ["x"]
    assert compiled.output_names == ["y", "z"]
    assert compiled.inputs[0].shape == (2, 4) and compiled.inputs[0].dtype == np.float32


def test_run_all_some_and_positional(compiled):
    x = np.random.default_rng(0).standard_normal((2, 4)).astype(np.float32)
    y, z = _expected(x)
    got_y, got_z = compiled.run(None, {"x": x})
    np.testing.assert_allclose(got_y, y, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(got_z, z, rtol=1e-6)
    (only_z,) = compiled.run(["z"], {"x": x})
    np.testing.assert_allclose(only_z, z, rtol=1e-6)
    pos_y, _ = compiled(x)
    np.testing.assert_allclose(pos_y, y, rtol=1e-6, atol=1e-6)


def test_outputs_are_fresh_arrays(compiled):
    x = np.ones((2, 4), np.float32)
    first = compiled.run(None, {"x": x})[1]
    second = compiled.run(None, {"x": 2 * x})[1]
    assert first[0, 0] == 2.0 and second[0, 0] == 4.0


def test_non_contiguous_and_misaligned_inputs_are_copied(compiled):
    base = np.random.default_rng(1).standard_normal((4, 8)).astype(np.float32)
    strided = base[::2, ::2]
    assert not strided.flags.c_contiguous
    np.testing.assert_allclose(compiled(strided)[1], strided * 2)
    raw = np.zeros(2 * 4 * 4 + 1, np.uint8)
    misaligned = raw[1:].view(np.float32).reshape(2, 4)
    misaligned[...] = 3.0
    np.testing.assert_allclose(compiled(misaligned)[1], np.full((2, 4), 6.0))


@pytest.mark.parametrize(
    "feeds, message",
    [
        ({"x": np.zeros((2, 5), np.float32)}, "shape [2, 5], expected [2, 4]"),
        ({"x": np.zeros((2, 4), np.float64)}, "dtype float64, expected float32"),
        ({"x": np.zeros((8,), np.float32)}, "shape [8], expected [2, 4]"),
        ({}, "missing input 'x'"),
        ({"x": np.zeros((2, 4), np.float32), "q": np.zeros(1)}, "unknown input name"),
        ({"x": [[0.0] * 4] * 2}, "must be a numpy array"),
    ],
)
def test_bad_inputs_raise_invalid_input_error(compiled, feeds, message):
    with pytest.raises(InvalidInputError, match=message.replace("[", r"\[").replace("]", r"\]")):
        compiled.run(None, feeds)


def test_bad_call_shapes(compiled):
    with pytest.raises(InvalidInputError, match="expected 1 input"):
        compiled()
    with pytest.raises(InvalidInputError, match="unknown output name 'nope'"):
        compiled.run(["nope"], {"x": np.zeros((2, 4), np.float32)})
    with pytest.raises(InvalidInputError, match="mapping"):
        compiled.run(None, [np.zeros((2, 4), np.float32)])


def test_unknown_op_is_reported_before_lowering():
    node = helper.make_node("ImageDecoder", ["x"], ["y"], name="the_node")
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
    with pytest.raises(UnsupportedOpError) as info:
        onnxc.compile(model)
    assert info.value.op_type == "ImageDecoder" and info.value.node_name == "the_node"
    assert info.value.opset == 20
    assert "ImageDecoder" in str(info.value) and "the_node" in str(info.value)


def test_truncated_file_is_a_clear_error(tmp_path):
    data = _model().SerializeToString()
    path = tmp_path / "cut.onnx"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(ModelLoadError):
        onnxc.compile(str(path))
    with pytest.raises(ModelLoadError):
        onnxc.compile(b"\x08\x07garbage\xff\xff")


def test_bad_input_never_crashes_the_process(tmp_path):
    """The same errors from a fresh interpreter: a typed exception and exit code 0."""
    path = tmp_path / "m.onnx"
    onnx.save(_model(), path)
    script = f"""
import numpy as np, onnxc
m = onnxc.compile({str(path)!r})
for bad in (np.zeros((3, 4), np.float32), np.zeros((2, 4), np.int64)):
    try:
        m(bad)
    except onnxc.InvalidInputError as e:
        print("ok:", e)
"""
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("ok:") == 2


def _overridable(ir_version: int) -> onnx.ModelProto:
    """y = x + b where b is an initializer that is also listed as a graph input."""
    spec = (np.float32, [3])
    return graph_model([helper.make_node("Add", ["x", "b"], ["y"])], {"x": spec, "b": spec},
                       {"y": spec}, initializers={"b": np.array([1, 2, 3], np.float32)},
                       opset=17, ir_version=ir_version)


@pytest.mark.parametrize("opt_level", [0, 3])
def test_an_initializer_that_is_a_graph_input_can_be_overridden(opt_level):
    """From IR version 4 the initializer is only the input's default, as onnxruntime treats
    it (get_inputs lists x, get_overridable_initializers b): never folded into the code."""
    import onnxruntime as ort

    model = _overridable(8)
    compiled = onnxc.compile(model, opt_level=opt_level, cache_dir=False)
    session = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    assert compiled.input_names == [i.name for i in session.get_inputs()] == ["x"]
    assert [s.name for s in compiled.overridable_inputs] == ["b"]
    x, b = np.zeros(3, np.float32), np.full(3, 10, np.float32)
    for feeds in ({"x": x}, {"x": x, "b": b}):
        np.testing.assert_array_equal(compiled.run(None, feeds)[0], session.run(None, feeds)[0])
    np.testing.assert_array_equal(compiled(x)[0], [1, 2, 3])
    np.testing.assert_array_equal(compiled(x, b)[0], [10, 10, 10])
    with pytest.raises(InvalidInputError, match="input 'b' has shape"):
        compiled.run(None, {"x": x, "b": np.ones(4, np.float32)})


def test_input_defaults_keep_the_inputs_order():
    """The defaults attribute lists the overridable inputs in the model's order, so that
    the same model imports to the same IR text whatever Python's hash seed (it followed a
    set's order)."""
    from onnxc.dialects.entry_abi import INPUT_DEFAULTS_ATTR
    from onnxc.frontend import import_onnx

    names = [f"b{i}" for i in (7, 3, 9, 1, 5, 8, 2, 6)]
    inits = [numpy_helper.from_array(np.full(3, i, np.float32), n) for i, n in enumerate(names)]
    nodes, last = [], "x"
    for n in names:
        nodes.append(helper.make_node("Add", [last, n], [f"{n}_sum"]))
        last = f"{n}_sum"
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info(n, TensorProto.FLOAT, [3])
                     for n in ["x", *names]],
        [helper.make_tensor_value_info(last, TensorProto.FLOAT, [3])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    (main,) = import_onnx(model).ops
    assert list(main.attributes[INPUT_DEFAULTS_ATTR].data) == names


def test_before_ir_version_4_an_initializer_listed_as_input_is_a_constant():
    """ONNX then listed every initializer among the inputs: they are weights, and feeding
    one is an unknown input, as in onnxruntime."""
    compiled = onnxc.compile(_overridable(3), cache_dir=False)
    assert compiled.input_names == ["x"] and compiled.overridable_inputs == []
    with pytest.raises(InvalidInputError, match="unknown input name"):
        compiled.run(None, {"x": np.zeros(3, np.float32), "b": np.ones(3, np.float32)})


def test_a_model_file_is_parsed_once_per_compile(tmp_path, monkeypatch):
    """The compile parses a static model file once: the batch check's parse goes to the
    importer (BERT-base's 56 MB took 40-80 ms per parse), and the outputs are right."""
    path = tmp_path / "m.onnx"
    onnx.save(_model(), path)
    calls = []
    real_load = onnx.load

    def counting_load(*args, **kwargs):
        calls.append(args[0])
        return real_load(*args, **kwargs)

    monkeypatch.setattr(onnx, "load", counting_load)
    model = onnxc.compile(str(path), cache_dir=False)
    assert len(calls) == 1
    x = np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4)
    y, _ = model.run(None, {"x": x})
    np.testing.assert_allclose(y, _expected(x)[0], rtol=1e-6)


def test_a_model_with_external_weights_reads_them(tmp_path):
    """A model whose weights lie in another file is not taken from the batch check's
    parse (made without its external data): the importer reads them."""
    path = tmp_path / "m.onnx"
    onnx.save(_model(), path, save_as_external_data=True, location="w.bin", size_threshold=0)
    model = onnxc.compile(str(path), cache_dir=False)
    x = np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4)
    for got, want in zip(model.run(None, {"x": x}), _expected(x)):
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_parsed_once_gives_its_proto_once_then_parses_the_source():
    """The importer's replay (a re-import when a pass leaves invalid IR) parses the source
    again instead of reusing a proto the first import may have changed."""
    from onnxc.frontend.onnx_model import ParsedOnce, load_model

    data = _model().SerializeToString()
    first = onnx.load_from_string(data)
    source = ParsedOnce(data, first)
    assert load_model(source) is first and not source.reread
    again = load_model(source)
    assert again is not first and again == _model()
    assert source.reread  # the compile cache checks the file again before it stores
