"""DFT (opsets 17 and 20) and STFT, imported as a matrix product with compile-time cos / sin
matrices (frontend/onnx_ops_spectral.py), against onnxruntime and onnx.reference.

Tolerance: atol 1e-4 * sqrt(n) * max|x| and rtol 1e-4 -- onnxc sums n float32 products in
the GEMM's order while the references run an FFT in float64 (onnx.reference) or float32
(onnxruntime) and round once; the error of an n-term float32 dot product grows like
sqrt(n) * eps * sum|x|.
"""

from __future__ import annotations

import numpy as np
import pytest

import onnxc
from onnxc.errors import InvalidInputError, ModelLoadError, UnsupportedOpError
from tests.single_op import reference_run, run_both, single_op_model

RNG = np.random.default_rng(23)
F32 = np.float32


def _tolerance(x: np.ndarray, n: int) -> dict:
    return {"rtol": 1e-4, "atol": 1e-4 * np.sqrt(n) * float(np.abs(x).max())}


def _dft_model(x_spec, attrs, opset, length=None, axis=None):
    inputs = {"x": x_spec}
    names, inits = ["x"], {}
    if length is not None:
        names.append("len")
        inits["len"] = np.array(length, np.int64)
    if axis is not None:
        if length is None:
            names.append("")
        names.append("axis")
        inits["axis"] = np.array(axis, np.int64)
    return single_op_model("DFT", inputs, {"y": None}, node_inputs=names,
                           initializers=inits, attrs=attrs, opset=opset, ir_version=10)


DFT_17 = [  # (shape, attrs, dft_length)
    ((2, 16, 1), {"axis": 1}, None),
    ((2, 16, 2), {"axis": 1}, None),
    ((3, 12, 5, 2), {"axis": 1}, None),  # the transformed axis not the last signal axis
    ((3, 5, 12, 1), {"axis": -2}, None),
    ((2, 20, 1), {"axis": 1, "onesided": 1}, None),
    ((2, 9, 1), {"axis": 1, "onesided": 1}, None),  # odd length
    ((2, 16, 2), {"axis": 1, "inverse": 1}, None),
    ((2, 16, 1), {"axis": 1}, 24),  # zero-padded
    ((2, 16, 2), {"axis": 1}, 10),  # truncated
    ((4, 8, 2), {"axis": 0}, None),  # the first axis
]


@pytest.mark.parametrize("shape,attrs,length", DFT_17, ids=[str(i) for i in range(len(DFT_17))])
def test_dft_opset17_against_onnxruntime(shape, attrs, length):
    x = RNG.standard_normal(shape).astype(F32)
    model = _dft_model(x, attrs, 17, length=length)
    run_both(model, {"x": x}, **_tolerance(x, length or shape[attrs["axis"]]))


@pytest.mark.parametrize("axis", [1, 2, -2, -3])
@pytest.mark.parametrize("inverse", [0, 1])
def test_dft_opset20_axis_input(axis, inverse):
    x = RNG.standard_normal((2, 6, 10, 2)).astype(F32)
    model = _dft_model(x, {"inverse": inverse}, 20, axis=axis)
    run_both(model, {"x": x}, reference="onnx", **_tolerance(x, 10))


@pytest.mark.parametrize("length", [None, 10, 11, 6])
@pytest.mark.parametrize("parts", [1, 2])
def test_inverse_of_a_one_sided_spectrum(length, parts):
    """irfft: 6 bins back to a real signal of dft_length (default 2 * (6 - 1)), as numpy."""
    x = RNG.standard_normal((3, 6, parts)).astype(F32)
    model = _dft_model(x, {"inverse": 1, "onesided": 1}, 20, length=length)
    got, _ = run_both(model, {"x": x}, reference="onnx", **_tolerance(x, 12))
    assert got[0].shape == (3, length or 10, 1)


def test_dft_of_a_symbolic_batch_runs_at_several_sizes():
    model = _dft_model((F32, ["b", 32, "c", 2]), {"axis": 1}, 17)
    compiled = onnxc.compile(model)
    for b, c in ((1, 3), (4, 1), (2, 7)):
        x = RNG.standard_normal((b, 32, c, 2)).astype(F32)
        (expected,) = reference_run(model, {"x": x})
        np.testing.assert_allclose(compiled.run(None, {"x": x})[0], expected,
                                   **_tolerance(x, 32))


def test_dft_in_double():
    x = RNG.standard_normal((2, 64, 2))
    model = _dft_model(x, {"axis": 1, "inverse": 1}, 17)
    run_both(model, {"x": x}, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("window,onesided,parts", [
    ("none", 1, 1), ("constant", 1, 1), ("input", 1, 1), ("constant", 0, 2), ("input", 0, 2)])
def test_stft(window, onesided, parts):
    signal = RNG.standard_normal((2, 100, parts)).astype(F32)
    frame, step = 16, 7
    hann = (0.5 - 0.5 * np.cos(2 * np.pi * np.arange(frame) / frame)).astype(F32)
    inputs = {"signal": signal}
    inits = {"step": np.array(step, np.int64), "length": np.array(frame, np.int64)}
    names = ["signal", "step", "", "length"]
    if window == "constant":
        inits["window"], names[2] = hann, "window"
    elif window == "input":
        inputs["window"], names[2] = hann, "window"
    model = single_op_model("STFT", inputs, {"y": None}, node_inputs=names,
                            initializers=inits, attrs={"onesided": onesided}, opset=17,
                            ir_version=10)
    feeds = {"signal": signal, **({"window": hann} if window == "input" else {})}
    got, _ = run_both(model, feeds, reference="onnx", **_tolerance(signal, frame))
    assert got[0].shape == (2, (100 - frame) // step + 1, frame // 2 + 1 if onesided else frame,
                            2)


def test_refusals_are_typed():
    with pytest.raises(UnsupportedOpError, match="symbolic length"):
        onnxc.compile(_dft_model((F32, [2, "n", 1]), {"axis": 1}, 17))
    with pytest.raises(ModelLoadError, match="axis 2 out of range"):
        onnxc.compile(_dft_model((F32, [2, 8, 1]), {"axis": 2}, 17))
    with pytest.raises(ModelLoadError, match="last axis must be 1"):
        onnxc.compile(_dft_model((F32, [2, 8, 3]), {"axis": 1}, 17))
    with pytest.raises(UnsupportedOpError, match="dft_length"):
        onnxc.compile(_dft_model((F32, [2, 8, 1]), {"axis": 1}, 17, length=1 << 20))
    with pytest.raises(ModelLoadError, match="frame_step 0"):
        onnxc.compile(_stft_model((F32, [1, 20, 1]), step=0, frame=8))


def _stft_model(signal_spec, step: int, frame: int, window: np.ndarray | None = None):
    inits = {"step": np.array(step, np.int64), "length": np.array(frame, np.int64)}
    names = ["signal", "step", "", "length"]
    if window is not None:
        inits["window"], names[2] = window, "window"
    return single_op_model("STFT", {"signal": signal_spec}, {"y": None}, node_inputs=names,
                           initializers=inits, opset=17, ir_version=10)


def test_stft_of_a_symbolic_signal_length():
    """Frames gathered by a run-time range: one compile at several lengths (and batch
    sizes); a signal shorter than a frame is refused in the run with a typed error."""
    hann = (0.5 - 0.5 * np.cos(2 * np.pi * np.arange(40) / 40)).astype(F32)
    model = _stft_model((F32, ["b", "n", 1]), step=16, frame=40, window=hann)
    compiled = onnxc.compile(model)
    for b, n in ((1, 40), (2, 100), (3, 517)):
        signal = RNG.standard_normal((b, n, 1)).astype(F32)
        (expected,) = reference_run(model, {"signal": signal}, "onnx")
        (got,) = compiled.run(None, {"signal": signal})
        assert got.shape == (b, (n - 40) // 16 + 1, 21, 2)
        np.testing.assert_allclose(got, expected, **_tolerance(signal, 40))
    with pytest.raises(InvalidInputError, match="shorter than its frame_length"):
        compiled.run(None, {"signal": np.zeros((1, 39, 1), F32)})


@pytest.mark.parametrize("size,length,attrs", [
    (1024, None, {}), (2048, None, {"onesided": 1}), (1000, None, {"inverse": 1}),
    (700, 1024, {}), (1500, 1024, {"onesided": 1}), (1031, None, {})])  # 1031: prime
@pytest.mark.parametrize("parts", [1, 2])
def test_long_transforms_in_four_steps(size, length, attrs, parts):
    """From 512 on a length with two factors >= 8 runs as two small transforms and the
    twiddle factors (Cooley-Tukey); a prime length keeps the one matrix. Symbolic batch."""
    model = _dft_model((F32, ["b", size, parts]), {"axis": 1, **attrs}, 17, length=length)
    compiled = onnxc.compile(model)
    for b in (1, 3):
        x = RNG.standard_normal((b, size, parts)).astype(F32)
        (expected,) = reference_run(model, {"x": x}, "onnx")
        np.testing.assert_allclose(compiled.run(None, {"x": x})[0], expected,
                                   **_tolerance(x, length or size))
