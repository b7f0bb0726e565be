"""A MatMul / Gemm whose B is not a constant reads B in place instead of packing it.

gemm_ops.reads_b_in_place decides it (rows split between threads, N whole panels, B at most
1 MiB, AVX-512 targets); the kernel then addresses B's rows N floats apart and walks a
chunk of row blocks panel by panel. The k order of every sum is the packed path's, so the
outputs must be the packed path's bits, at one and two threads, for a symbolic M, for
several k-blocks, with Gemm's alpha and C.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import onnxc
from onnxc.dialects import graph
from onnxc.frontend import import_onnx
from onnxc.lowering.graph_to_loops import gemm_ops
from onnxc.target import parse_target

RNG = np.random.default_rng(7)


def _matmul(a_shape, b_shape) -> onnx.ModelProto:
    g = helper.make_graph(
        [helper.make_node("MatMul", ["a", "b"], ["y"])], "g",
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, a_shape),
         helper.make_tensor_value_info("b", TensorProto.FLOAT, b_shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def _gemm(m, k, n, alpha, beta, trans_b=0) -> onnx.ModelProto:
    b_shape = [n, k] if trans_b else [k, n]
    g = helper.make_graph(
        [helper.make_node("Gemm", ["a", "b", "c"], ["y"], alpha=alpha, beta=beta,
                          transB=trans_b)], "g",
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, [m, k]),
         helper.make_tensor_value_info("b", TensorProto.FLOAT, b_shape),
         helper.make_tensor_value_info("c", TensorProto.FLOAT, [n])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def _product_op(model: onnx.ModelProto):
    module = import_onnx(model)
    return next(o for o in module.walk() if isinstance(o, (graph.MatMulOp, graph.GemmOp)))


AVX512 = parse_target("x86-64-v4")


@pytest.mark.parametrize("model,target,expected", [
    (_matmul([512, 512], [512, 512]), "x86-64-v4", True),
    (_matmul([384, 1024], [1024, 256]), "x86-64-v4", True),
    (_matmul(["rows", 256], [256, 512]), "x86-64-v4", True),  # a run-time M
    (_matmul([512, 512], [512, 512]), "x86-64-v3", False),  # AVX2: 512 KiB L2 CPUs
    (_matmul([1024, 1024], [1024, 512]), "x86-64-v4", False),  # B of 2 MiB
    (_matmul([512, 512], [512, 520]), "x86-64-v4", False),  # a tail panel
    (_matmul([128, 768], [768, 512]), "x86-64-v4", False),  # few rows: columns split
    (_gemm(512, 256, 256, 1.0, 1.0, trans_b=1), "x86-64-v4", False),  # B transposed
])
def test_reads_b_in_place_decision(model, target, expected):
    op = _product_op(model)
    assert gemm_ops.reads_b_in_place(op, parse_target(target)) is expected
    # no packing scratch exactly when B is read in place
    assert (gemm_ops.scratch_b(op, parse_target(target)) == []) is expected


def test_constant_b_is_packed_at_compile_time():
    b = helper.make_tensor("b", TensorProto.FLOAT, [512, 512],
                           RNG.standard_normal((512, 512)).astype(np.float32).ravel())
    model = _matmul([512, 512], [512, 512])
    model.graph.input.pop()
    model.graph.initializer.append(b)
    assert not gemm_ops.reads_b_in_place(_product_op(model), AVX512)


CASES = {  # each A past PACKED_SPLIT_A_BYTES or of run-time rows: the rows split
    "square_512": (_matmul([512, 512], [512, 512]), {"a": (512, 512), "b": (512, 512)}),
    "two_k_blocks": (_matmul([256, 2048], [2048, 64]), {"a": (256, 2048), "b": (2048, 64)}),
    "rows_remainder": (_matmul([389, 384], [384, 96]), {"a": (389, 384), "b": (384, 96)}),
    "symbolic_rows": (_matmul(["rows", 128], [128, 256]), {"a": (203, 128), "b": (128, 256)}),
    "gemm_alpha_c": (_gemm(700, 192, 128, 0.5, 2.0), {"a": (700, 192), "b": (192, 128),
                                                      "c": (128,)}),
}


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("name", sorted(CASES))
def test_in_place_equals_packed(name, threads, monkeypatch):
    """The same bits as the packed path, and numpy's product within f32 rounding."""
    model, shapes = CASES[name]
    feeds = {k: RNG.standard_normal(s).astype(np.float32) for k, s in shapes.items()}
    target = parse_target("host")
    if target.vector_bits == 512:
        assert gemm_ops.reads_b_in_place(_product_op(model), target)
    got = onnxc.compile(model, cache_dir=False, num_threads=threads).run(None, feeds)[0]
    monkeypatch.setattr(gemm_ops, "reads_b_in_place", lambda op, target: False)
    packed = onnxc.compile(model, cache_dir=False, num_threads=threads).run(None, feeds)[0]
    np.testing.assert_array_equal(got, packed)
    a, b = feeds["a"].astype(np.float64), feeds["b"].astype(np.float64)
    want = a @ b
    if "c" in feeds:
        want = 0.5 * want + 2.0 * feeds["c"].astype(np.float64)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())


def test_in_place_from_the_cache(tmp_path):
    """A second compile is a cache hit with the same outputs."""
    model, shapes = CASES["square_512"]
    feeds = {k: RNG.standard_normal(s).astype(np.float32) for k, s in shapes.items()}
    cold = onnxc.compile(model, cache_dir=tmp_path, num_threads=2)
    warm = onnxc.compile(model, cache_dir=tmp_path, num_threads=2)
    assert warm.from_cache and not cold.from_cache
    np.testing.assert_array_equal(cold.run(None, feeds)[0], warm.run(None, feeds)[0])
