"""Import the nine model-zoo networks shipped with onnx and check the resulting modules."""

from __future__ import annotations

import collections
import time
from pathlib import Path

import onnx
import pytest
from xdsl.dialects.func import FuncOp

from onnxc.frontend import import_onnx
from onnxc.frontend import onnx_types as types

LIGHT = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
MODELS = [
    "bvlc_alexnet", "densenet121", "inception_v1", "inception_v2", "resnet50",
    "shufflenet", "squeezenet", "vgg19", "zfnet512",
]


def _main(module) -> FuncOp:
    (func,) = [op for op in module.ops if isinstance(op, FuncOp)]
    return func


@pytest.mark.parametrize("name", MODELS)
def test_model_zoo_imports_and_verifies(name: str):
    path = LIGHT / f"light_{name}.onnx"
    proto = onnx.load(path)
    module = import_onnx(path)
    module.verify()
    func = _main(module)
    assert func.sym_name.data == "main"
    initializers = {i.name for i in proto.graph.initializer}
    inputs = [vi for vi in proto.graph.input if vi.name not in initializers]
    assert [s.data for s in func.attributes["onnxc.input_names"]] == [vi.name for vi in inputs]
    assert [s.data for s in func.attributes["onnxc.output_names"]] == [
        vi.name for vi in proto.graph.output
    ]
    for arg, vi in zip(func.body.block.args, inputs, strict=True):
        assert tuple(arg.type.get_shape()) == tuple(
            d.dim_value for d in vi.type.tensor_type.shape.dim
        )
    outputs = func.function_type.outputs.data
    assert len(outputs) == len(proto.graph.output)
    for out_type, vi in zip(outputs, proto.graph.output):
        tt = vi.type.tensor_type
        assert out_type.get_element_type() == types.element_type(tt.elem_type)
        assert tuple(out_type.get_shape()) == tuple(d.dim_value for d in tt.shape.dim)
    counts = collections.Counter(op.name for op in func.body.block.ops)
    onnx_counts = collections.Counter(n.op_type for n in proto.graph.node)
    # Every Conv, BatchNormalization and Gemm becomes exactly one graph op.
    assert counts["graph.conv"] == onnx_counts["Conv"]
    assert counts["graph.batch_normalization"] == onnx_counts["BatchNormalization"]
    assert counts["graph.gemm"] == onnx_counts["Gemm"]
    assert counts["graph.constant_of_shape"] == onnx_counts["ConstantOfShape"]


def test_model_zoo_import_is_fast():
    start = time.perf_counter()
    import_onnx(LIGHT / "light_densenet121.onnx")
    assert time.perf_counter() - start < 5.0


def test_import_from_bytes_and_proto_agree():
    path = LIGHT / "light_squeezenet.onnx"
    data = path.read_bytes()
    text = str(import_onnx(path))
    assert str(import_onnx(data)) == text
    assert str(import_onnx(onnx.load_from_string(data))) == text
