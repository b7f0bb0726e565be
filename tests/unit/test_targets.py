"""Compile targets (onnxc/target.py): parsing, what kernels derive from a target, and
`onnxc.compile(..., target=)` building code for a CPU other than the host's.

x86-64-v3 code (AVX2, no AVX-512) runs on any AVX2 host, so it is compiled and run here and
compared with onnxruntime (on the model's u8-weight twin for int8:
tests/exact_int8_reference.py); its object code must then hold no zmm register, and its int8
convolutions use the AVX2 forms of int8_gemm (vpmaddwd / vpmaddubsw) instead of VNNI.
"""

from __future__ import annotations

import subprocess

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from xdsl.dialects.builtin import ModuleOp

import onnxc
from onnxc.errors import InvalidArgumentError
from onnxc.lowering.graph_to_loops.gemm_tiles import tiling_for
from onnxc.target import (
    PRESETS,
    host_target,
    parse_target,
    set_module_target,
    target_of,
)
from tests.exact_int8_reference import ort_exact

HOST = host_target()
needs_avx2 = pytest.mark.skipif(not HOST.has_feature("avx2") or HOST.arch != "x86_64",
                                reason="x86-64-v3 code runs only on an AVX2 x86-64 host")


@pytest.mark.parametrize("spec,cpu,bits,registers", [
    ("x86-64-v2", "x86-64-v2", 128, 16),
    ("x86-64-v3", "x86-64-v3", 256, 16),
    ("x86-64-v4", "x86-64-v4", 512, 32),
    ("cortex-a76", "cortex-a76", 128, 32),
    ("x86_64-unknown-linux-gnu:haswell", "haswell", 256, 16),
    ("aarch64-unknown-linux-gnu:cortex-a76:+neon,+dotprod", "cortex-a76", 128, 32),
])
def test_parse_target(spec, cpu, bits, registers):
    target = parse_target(spec)
    assert (target.cpu, target.vector_bits, target.vector_registers) == (cpu, bits, registers)
    assert target.name == spec and target.data_layout


def test_preset_feature_suffixes():
    assert not parse_target("neoverse-v1-sve").has_feature("sve")
    assert parse_target("neoverse-v1").has_feature("sve")
    assert parse_target("aarch64+dotprod").has_feature("dotprod")
    assert not parse_target("aarch64").has_feature("dotprod")


@pytest.mark.parametrize("spec", ["", "x86-64-v9", "nonsense", "zz-unknown-none:cpu",
                                  "x86_64-unknown-linux-gnu:haswell:avx2", 42])
def test_bad_target_is_a_typed_error(spec):
    with pytest.raises(InvalidArgumentError):
        parse_target(spec)


def test_tiles_follow_the_register_file():
    assert (tiling_for(PRESETS["x86-64-v4"]).mr, tiling_for(PRESETS["x86-64-v4"]).nr) == (8, 32)
    assert (tiling_for(PRESETS["x86-64-v3"]).mr, tiling_for(PRESETS["x86-64-v3"]).nr) == (6, 16)
    assert (tiling_for(PRESETS["cortex-a76"]).mr, tiling_for(PRESETS["cortex-a76"]).nr) == (4, 16)


def test_a_module_builds_for_its_target_else_the_host():
    module = ModuleOp([])
    assert target_of(module) is HOST
    set_module_target(module, PRESETS["x86-64-v3"])
    assert target_of(module) == PRESETS["x86-64-v3"]


def _model(quantized: bool):
    rng = np.random.default_rng(3)
    if quantized:
        w = rng.integers(-100, 100, (32, 16, 3, 3)).astype(np.int8)
        nodes = [helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"],
                                  ["y"], pads=[1, 1, 1, 1])]
        inits = [numpy_helper.from_array(v, n) for n, v in {
            "xs": np.float32(0.02), "xz": np.uint8(120), "w": w,
            "ws": rng.uniform(0.001, 0.01, 32).astype(np.float32),
            "wz": np.zeros(32, np.int8), "ys": np.float32(0.05), "yz": np.uint8(128)}.items()]
        x_type, y_type = TensorProto.UINT8, TensorProto.UINT8
        x = rng.integers(0, 256, (1, 16, 10, 10)).astype(np.uint8)
    else:
        w = rng.standard_normal((32, 16, 3, 3)).astype(np.float32)
        nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
                 helper.make_node("Relu", ["c"], ["r"]),
                 helper.make_node("MatMul", ["r", "m"], ["y"])]
        inits = [numpy_helper.from_array(w, "w"),
                 numpy_helper.from_array(rng.standard_normal((10, 24)).astype(np.float32), "m")]
        x_type, y_type = TensorProto.FLOAT, TensorProto.FLOAT
        x = rng.standard_normal((1, 16, 10, 10)).astype(np.float32)
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", x_type, x.shape)],
                              [helper.make_tensor_value_info("y", y_type, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model, x


def _onnxruntime(model, x):
    return ort_exact(model, {"x": x})[0]


@needs_avx2
@pytest.mark.parametrize("quantized", [False, True])
def test_x86_64_v3_code_runs_here_without_avx512(quantized, tmp_path):
    model, x = _model(quantized)
    compiled = onnxc.compile(model, target="x86-64-v3", cache_dir=tmp_path)
    assert compiled.target == "x86-64-v3"
    expected = _onnxruntime(model, x)
    got = compiled(x)[0]
    if quantized:  # exact i32 sums, onnxruntime's requantization: at most 1 unit apart
        assert np.abs(got.astype(int) - expected.astype(int)).max() <= 1
    else:
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)
    assert b"zmm" not in _disassembly(compiled, tmp_path)
    warm = onnxc.compile(model, target="x86-64-v3", cache_dir=tmp_path)
    assert warm.from_cache and warm.target == "x86-64-v3"
    np.testing.assert_array_equal(warm(x)[0], got)
    # the host's code is another cache entry, not this one
    assert not onnxc.compile(model, cache_dir=tmp_path).from_cache


def _disassembly(compiled, tmp_path) -> bytes:
    path = tmp_path / "code.o"
    path.write_bytes(compiled._native.object_code())
    try:
        return subprocess.run(["objdump", "-d", str(path)], capture_output=True,
                              check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("objdump is not available")


@needs_avx2
def test_int8_kernels_take_the_avx2_form_for_x86_64_v3():
    from onnxc.dialects.graph_qlinear import QLinearConvOp
    from onnxc.lowering.graph_to_loops import int8_gemm

    model, _ = _model(True)
    module = onnxc.optimize(model)
    op = next(o for o in module.walk() if isinstance(o, QLinearConvOp))
    assert int8_gemm.tiling(op, PRESETS["x86-64-v3"]).form == "pairs"
    # AVX-512 without VNNI: the AVX2 forms too
    assert int8_gemm.tiling(op, PRESETS["x86-64-v4"]).form == "pairs"


def test_a_target_the_host_cannot_run_is_refused():
    with pytest.raises(InvalidArgumentError, match="cannot run in this process"):
        onnxc.compile(_model(False)[0], target="cortex-a76" if HOST.arch == "x86_64"
                      else "x86-64-v3", cache_dir=False)
