"""Det and com.microsoft Inverse (graph.det / graph.inverse, an LU factorization with partial
pivoting in float64) beside onnxruntime 1.32 (Eigen, in the element type): sizes 1 to 7,
batch dimensions fixed and symbolic, float32 and float64, singular and permuted matrices;
and the refusals (onnxruntime has Det for float32 only: float64 against onnx.reference).
Tolerance: rtol 1e-4, atol 1e-5 for float32 (onnxruntime factorizes in
float32, onnxc in float64 and rounds once: the difference is onnxruntime's rounding, which
grows with the condition number; the matrices here are random normal, condition < 1e3),
rtol 1e-10 for float64."""

from __future__ import annotations

import numpy as np
import pytest

import onnxc
from onnxc.errors import ModelLoadError, UnsupportedOpError
from tests.single_op import run_both, single_op_model

TOL = {np.float32: dict(rtol=1e-4, atol=1e-5), np.float64: dict(rtol=1e-10, atol=1e-12)}


def model(op, shape, dtype, domain=""):
    opset = {"": 17, "com.microsoft": 1} if domain else 17
    return single_op_model(op, {"x": (dtype, list(shape))}, domain=domain, opset=opset,
                           ir_version=8, node_name="n")


@pytest.mark.parametrize("n", [1, 2, 3, 5, 7])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("op, domain", [("Det", ""), ("Inverse", "com.microsoft")])
def test_against_onnxruntime(n, dtype, op, domain):
    rng = np.random.default_rng(n)
    x = rng.standard_normal((2, 3, n, n)).astype(dtype)
    # onnxruntime's Det takes float32 only: float64 against onnx.reference (numpy)
    reference = "onnx" if op == "Det" and dtype == np.float64 else "onnxruntime"
    run_both(model(op, x.shape, dtype, domain), {"x": x}, reference=reference, **TOL[dtype])


def test_det_of_singular_and_permutation_matrices():
    x = np.array([[[1, 2, 3], [2, 4, 6], [0, 1, 1]],      # singular
                  [[0, 1, 0], [1, 0, 0], [0, 0, 1]],      # one swap: -1
                  [[0, 0, 2], [0, 3, 0], [5, 0, 0]]],     # -30
                 np.float32)
    got = onnxc.compile(model("Det", x.shape, np.float32)).run(None, {"x": x})[0]
    np.testing.assert_array_equal(got, np.array([0, -1, -30], np.float32))


def test_inverse_of_a_singular_matrix_is_not_finite():
    x = np.array([[1, 2], [2, 4]], np.float32)
    got = onnxc.compile(model("Inverse", x.shape, np.float32, "com.microsoft")).run(
        None, {"x": x})[0]
    assert not np.isfinite(got).all()


def test_symbolic_batch_from_one_compile():
    rng = np.random.default_rng(9)
    m = single_op_model("Det", {"x": (np.float32, ["batch", 4, 4])}, opset=17)
    compiled = onnxc.compile(m)
    for batch in (1, 5):
        x = rng.standard_normal((batch, 4, 4)).astype(np.float32)
        np.testing.assert_allclose(compiled.run(None, {"x": x})[0], np.linalg.det(x),
                                   **TOL[np.float32])


def test_refusals():
    with pytest.raises(ModelLoadError, match="square matrices"):
        onnxc.compile(model("Det", (3, 4), np.float32))
    with pytest.raises(UnsupportedOpError, match="float types only"):
        onnxc.compile(model("Det", (3, 3), np.int64))
