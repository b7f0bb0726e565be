"""Importer error handling: broken files, bad graphs, unsupported ops and types."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from xdsl.dialects.func import FuncOp

from onnxc.dialects.entry_abi import input_defaults
from onnxc.errors import ModelLoadError, OnnxcError, ShapeInferenceError, UnsupportedOpError
from onnxc.frontend import import_onnx, import_onnx_text
from tests.single_op import graph_model

LIGHT = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"


def model(nodes, inputs, outputs, initializers=(), opset=13, domains=()):
    """`inputs` / `outputs` value infos, `initializers` tensors, `domains` at version 1."""
    return graph_model(nodes, {i.name: i for i in inputs}, {o.name: o for o in outputs},
                       initializers=list(initializers),
                       opset={"": opset, **{d: 1 for d in domains}})


def vi(name, shape, elem=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem, shape)


def relu_model(**kw):
    return model([helper.make_node("Relu", ["x"], ["y"], name="r")], [vi("x", [2])],
                 [vi("y", [2])], **kw)


def main(module) -> FuncOp:
    (func,) = [op for op in module.ops if isinstance(op, FuncOp)]
    return func


def test_truncated_file_is_a_model_load_error():
    data = (LIGHT / "light_squeezenet.onnx").read_bytes()
    for cut in (7, len(data) // 3, len(data) - 5):
        with pytest.raises(ModelLoadError):
            import_onnx(data[:cut])


def test_garbage_bytes_and_missing_file(tmp_path):
    with pytest.raises(ModelLoadError, match="cannot parse"):
        import_onnx(b"\xff\xff\xff\xff not a model")
    with pytest.raises(ModelLoadError, match="cannot read"):
        import_onnx(tmp_path / "missing.onnx")
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x0a\xff\xff")
    with pytest.raises(ModelLoadError):
        import_onnx(bad)


def test_undefined_input_names_the_node():
    m = model([helper.make_node("Add", ["x", "w"], ["y"], name="adder")], [vi("x", [2])],
              [vi("y", [2])])
    with pytest.raises(ModelLoadError, match="'adder'.*'w'"):
        import_onnx(m)


def test_cycle_is_reported():
    nodes = [helper.make_node("Relu", ["b"], ["a"], name="n1"),
             helper.make_node("Relu", ["a"], ["b"], name="n2"),
             helper.make_node("Add", ["x", "b"], ["y"], name="n3")]
    with pytest.raises(ModelLoadError, match="cycle.*'n1'"):
        import_onnx(model(nodes, [vi("x", [2])], [vi("y", [2])]))


def test_value_defined_twice():
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="n1"),
             helper.make_node("Neg", ["x"], ["y"], name="n2")]
    with pytest.raises(ModelLoadError, match="defined twice.*'n2'"):
        import_onnx(model(nodes, [vi("x", [2])], [vi("y", [2])]))


def test_undefined_graph_output():
    with pytest.raises(ModelLoadError, match="'z' is never defined"):
        import_onnx(model([], [vi("x", [2])], [vi("z", [2])]))


def test_unsorted_nodes_are_imported_in_topological_order():
    nodes = [helper.make_node("Neg", ["a"], ["y"], name="second"),
             helper.make_node("Relu", ["x"], ["a"], name="first")]
    module = import_onnx(model(nodes, [vi("x", [2])], [vi("y", [2])]))
    module.verify()
    assert [op.name for op in main(module).body.block.ops] == ["graph.relu", "graph.neg",
                                                               "func.return"]


def test_unsupported_op_lists_all_of_them():
    nodes = [helper.make_node("ImageDecoder", ["x"], ["a"], name="e"),
             helper.make_node("Relu", ["a"], ["b"]),
             helper.make_node("NoSuchOp", ["b"], ["y"], name="f")]
    with pytest.raises(UnsupportedOpError) as info:
        import_onnx(model(nodes, [vi("x", [2])], [vi("y", [2])], opset=20))
    err = info.value
    assert (err.op_type, err.node_name, err.opset) == ("ImageDecoder", "e", 20)
    assert "NoSuchOp" in err.detail


def test_unnamed_node_gets_a_stable_label():
    nodes = [helper.make_node("Relu", ["x"], ["a"]),
             helper.make_node("ImageDecoder", ["a"], ["y"])]
    with pytest.raises(UnsupportedOpError, match="'ImageDecoder_1'"):
        import_onnx(model(nodes, [vi("x", [2])], [vi("y", [2])]))


def test_custom_domain_ops():
    node = helper.make_node("Fancy", ["x"], ["y"], name="fancy", domain="com.example")
    with pytest.raises(UnsupportedOpError, match="com.example"):
        import_onnx(model([node], [vi("x", [2])], [vi("y", [2])], domains=["com.example"]))
    with pytest.raises(ModelLoadError, match="'fancy'.*does not import"):
        import_onnx(model([node], [vi("x", [2])], [vi("y", [2])]))


def test_model_local_functions_are_inlined():
    fn = helper.make_function(
        "local", "DoubleRelu", ["a"], ["b"],
        [helper.make_node("Relu", ["a"], ["t"]), helper.make_node("Relu", ["t"], ["b"])],
        [helper.make_opsetid("", 13)],
    )
    m = model([helper.make_node("DoubleRelu", ["x"], ["y"], domain="local")],
              [vi("x", [2])], [vi("y", [2])], domains=["local"])
    m.functions.append(fn)
    ops = [op.name for op in main(import_onnx(m)).body.block.ops]
    assert ops == ["graph.relu", "graph.relu", "func.return"]


def test_symbolic_input_dimension_is_imported_symbolically():
    """A dim_param is a symbolic dimension (tests/unit/test_symbolic_import.py has more)."""
    m = model([helper.make_node("Relu", ["images"], ["y"])], [vi("images", ["N", 3])],
              [vi("y", ["N", 3])])
    (arg,) = main(import_onnx(m)).body.block.args
    assert str(arg.type) == 'tensor<?x3xf32, #graph.dims<["N"]>>'


def test_input_dimension_without_value_or_name_is_a_size_of_its_own():
    m = model([helper.make_node("Relu", ["images"], ["y"])], [vi("images", [None, 3])],
              [vi("y", [None, 3])])
    assert "images_dim0" in str(import_onnx(m))


def test_input_without_shape():
    m = model([helper.make_node("Relu", ["x"], ["y"])], [vi("x", None)], [vi("y", None)])
    with pytest.raises(ShapeInferenceError, match="'x' has an unknown rank"):
        import_onnx(m)


def test_unsupported_input_element_type():
    """(FLOAT16 is no longer one: ops without a half kernel compute in f32.)"""
    m = model([helper.make_node("Softmax", ["x"], ["y"])],
              [vi("x", [2], TensorProto.FLOAT8E4M3FN)], [vi("y", [2], TensorProto.FLOAT8E4M3FN)])
    with pytest.raises(UnsupportedOpError, match="Softmax of FLOAT8E4M3FN"):
        import_onnx(m)


def test_unsupported_initializer_element_type():
    w = helper.make_tensor("w", TensorProto.COMPLEX64, [2], [1.0, 1.0])
    m = model([helper.make_node("Add", ["x", "w"], ["y"])], [vi("x", [2], TensorProto.COMPLEX64)],
              [vi("y", [2])], initializers=[w])
    with pytest.raises(UnsupportedOpError, match="'w'.*COMPLEX64"):
        import_onnx(m)


def _add_with_initializer_also_an_input(ir_version: int) -> onnx.ModelProto:
    w = numpy_helper.from_array(np.ones(2, np.float32), "w")
    m = model([helper.make_node("Add", ["x", "w"], ["y"])], [vi("x", [2]), vi("w", [2])],
              [vi("y", [2])], initializers=[w], opset=9)
    m.ir_version = ir_version
    return m


def test_initializers_listed_as_inputs_before_ir4_are_constants():
    """Before IR version 4 every initializer was also listed as an input: a constant."""
    func = main(import_onnx(_add_with_initializer_also_an_input(3)))
    assert [a.type.get_shape() for a in func.body.block.args] == [(2,)]
    assert [s.data for s in func.attributes["onnxc.input_names"]] == ["x"]


def test_initializers_listed_as_inputs_from_ir4_are_overridable_arguments():
    """From IR version 4 such an input is a run-time argument whose initializer is only the
    default (onnxruntime's overridable initializers)."""
    func = main(import_onnx(_add_with_initializer_also_an_input(8)))
    assert [a.type.get_shape() for a in func.body.block.args] == [(2,), (2,)]
    assert [s.data for s in func.attributes["onnxc.input_names"]] == ["x", "w"]
    assert list(input_defaults(func)) == ["w"]


def test_missing_required_attribute():
    m = model([helper.make_node("MaxPool", ["x"], ["y"], name="pool")], [vi("x", [1, 1, 4, 4])],
              [vi("y", None)])
    with pytest.raises(ModelLoadError, match="'pool'.*kernel_shape"):
        import_onnx(m)


def test_text_syntax_error():
    with pytest.raises(ModelLoadError, match="cannot parse the ONNX text"):
        import_onnx_text("<ir_version: 8> this is not a graph")


def test_missing_external_data(tmp_path):
    w = numpy_helper.from_array(np.ones((64, 64), np.float32), "w")
    m = model([helper.make_node("MatMul", ["x", "w"], ["y"])], [vi("x", [1, 64])],
              [vi("y", [1, 64])], initializers=[w])
    path = tmp_path / "m.onnx"
    onnx.save(m, path, save_as_external_data=True, location="w.bin", size_threshold=0)
    assert import_onnx(path) is not None  # the file next to the model is found
    (tmp_path / "w.bin").unlink()
    with pytest.raises(ModelLoadError):
        import_onnx(path)


def test_all_errors_are_onnxc_errors():
    assert issubclass(ModelLoadError, OnnxcError) and issubclass(UnsupportedOpError, OnnxcError)


def test_name_hints_are_sanitized():
    nodes = [helper.make_node("Relu", ["gpu_0/data_0"], ["3"])]
    m = model(nodes, [vi("gpu_0/data_0", [2])], [vi("3", [2])])
    text = str(import_onnx(m))
    assert "%gpu_0_data: tensor<2xf32>" in text
    assert "%v3 = graph.relu(%gpu_0_data)" in text
    assert 'onnxc.input_names = ["gpu_0/data_0"]' in text


def test_large_initializer_imports_quickly():
    import time

    w = np.random.default_rng(0).random((2048, 2048), dtype=np.float32)  # 16 MB
    m = model([helper.make_node("MatMul", ["x", "w"], ["y"])], [vi("x", [1, 2048])],
              [vi("y", [1, 2048])], initializers=[numpy_helper.from_array(w, "w")])
    data = m.SerializeToString()
    start = time.perf_counter()
    module = import_onnx(data)
    assert time.perf_counter() - start < 2.0
    (const,) = [op for op in main(module).body.block.ops if op.name == "graph.constant"]
    assert const.value.data.data == w.tobytes()


def test_constant_inputs_bind_graph_inputs():
    text = ('<ir_version: 10, opset_import: ["" : 13]>\n'
            "g (float[6] x, int64[2] s) => (y) { y = Reshape(x, s) }")
    m = onnx.parser.parse_model(text)
    module = import_onnx(m, {"s": np.array([2, 3], np.int64)})
    module.verify()
    func = main(module)
    assert [s.data for s in func.attributes["onnxc.input_names"]] == ["x"]
    assert str(func.function_type) == "(tensor<6xf32>) -> tensor<2x3xf32>"


@pytest.mark.parametrize(
    ("bind", "message"),
    [({"z": np.zeros(2, np.int64)}, "'z' is not a graph input"),
     ({"s": np.zeros(2, np.int32)}, "declares INT64"),
     ({"s": np.zeros(3, np.int64)}, "shape \\[3\\]"),
     ({"s": np.zeros(2, np.float16)}, "dtype float16")],
)
def test_constant_inputs_are_checked(bind, message):
    from onnxc.errors import InvalidInputError

    m = onnx.parser.parse_model('<ir_version: 10, opset_import: ["" : 13]>\n'
                                "g (float[6] x, int64[2] s) => (y) { y = Reshape(x, s) }")
    with pytest.raises(InvalidInputError, match=message):
        import_onnx(m, bind)


def test_corrupted_models_raise_only_onnxc_errors():
    import random

    data = (LIGHT / "light_squeezenet.onnx").read_bytes()
    rng = random.Random(0)
    for i in range(60):
        mutated = bytearray(data)
        if i % 2:
            mutated = mutated[: rng.randrange(len(mutated))]
        else:
            for _ in range(rng.randrange(1, 4)):
                mutated[rng.randrange(len(mutated))] = rng.randrange(256)
        try:
            import_onnx(bytes(mutated)).verify()
        except OnnxcError:
            pass


def test_attribute_of_the_wrong_kind_is_a_model_load_error():
    node = helper.make_node("Concat", ["x", "x"], ["y"], name="cat", axis="zero")
    with pytest.raises(ModelLoadError, match="'cat'"):
        import_onnx(model([node], [vi("x", [2])], [vi("y", [4])]))
