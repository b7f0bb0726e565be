"""Sequence-generating ops: Range, EyeLike, the Hann/Hamming/Blackman windows and
MelWeightMatrix.

Their outputs' shapes come from constant inputs (a length, a size) or the input's static
shape, and with those known the values are too: each becomes a constant, computed in f64 and
rounded once to the output type. Range is the exception when it is long (more than
FOLD_LIMIT elements) or its bounds are run-time values and the model declares its length:
then it is a graph.range kernel.
"""

from __future__ import annotations

import numpy as np

from onnxc.dialects import graph
from onnxc.dialects.dense_data import element_dtype
from onnxc.dialects.symbolic_dims import SymbolicDimError, ceildiv, sym_max
from onnxc.frontend import onnx_types as types
from onnxc.frontend.onnx_context import FOLD_LIMIT, NodeContext, Result, Tensor
from onnxc.frontend.onnx_ops_math import Converter
from onnxc.frontend.onnx_ops_reduce import check_element, emit, reshape
from onnxc.frontend.onnx_shape_data import dims_of, shape_array


def _scalar_constant(ctx: NodeContext, i: int, what: str) -> np.ndarray:
    array = ctx.constant(i, what)
    if array.size != 1:
        raise ctx.invalid(f"{what} must be a scalar, got shape {array.shape}")
    return array.reshape(())


RANGE_COUNT_LIMIT = 2**63
"""Range lengths from here on do not fit an int64 dimension (onnxruntime refuses them too)."""


def range_count(start: np.ndarray, limit: np.ndarray, delta: np.ndarray) -> int:
    """max(ceil((limit - start) / delta), 0), exactly: in Python integers for integer types
    (limit - start overflows int64 for Range(-2**63, 2**63 - 1, 2**62), which has 4
    elements), in float64 for float types as onnxruntime and numpy compute it. ValueError
    for a zero delta, a count that is not finite or one past RANGE_COUNT_LIMIT."""
    if start.dtype.kind in "iu":
        first, last, step = int(start), int(limit), int(delta)
        if step == 0:
            raise ValueError("delta is zero")
        count = -((first - last) // step)  # ceil((last - first) / step)
    else:
        step = float(delta)
        if step == 0.0:
            raise ValueError("delta is zero")
        quotient = (float(limit) - float(start)) / step
        if not np.isfinite(quotient):
            raise ValueError(f"the element count (limit - start) / delta = {quotient} is "
                             "not finite")
        count = int(np.ceil(quotient))
    if count >= RANGE_COUNT_LIMIT:
        raise ValueError(f"{count} elements do not fit an int64 dimension")
    return max(count, 0)


def range_values(start: np.ndarray, delta: np.ndarray, count: int) -> np.ndarray:
    """start + i * delta for i < count, in the inputs' type: integers wrap (every value is in
    [start, limit), so the wrapped sum is exact), floats are computed in float64 and rounded
    once (what the kernel's fused multiply-add does)."""
    steps = np.arange(count, dtype=np.int64)
    if start.dtype.kind in "iu":
        wide = steps * np.int64(delta) + np.int64(start)  # numpy arrays wrap, never raise
    else:
        wide = steps * np.float64(delta) + np.float64(start)
    return wide.astype(start.dtype)


def _symbolic_range(ctx: NodeContext, el) -> list[Result]:
    """Range whose bounds are shape data with symbolic sizes (Range(0, seq, 1) of position
    ids, Range(past, past+seq, 1) of a decoder's): its length is
    max(ceil((limit - start) / delta), 0) for a constant delta. A constant length gives
    shape data (the values); a symbolic one a graph.range of that length, whose start is
    computed from the sizes at run time when it is symbolic."""
    start, limit, delta = (dims_of(_scalar_constant(ctx, i, w))[0]
                           for i, w in enumerate(("start", "limit", "delta")))
    if not isinstance(delta, int):
        raise SymbolicDimError(f"a symbolic delta {delta}")
    if delta == 0:
        raise ctx.invalid("delta is zero")
    count = sym_max(ceildiv(limit - start, delta), 0)
    if isinstance(count, int):
        if count > FOLD_LIMIT:
            raise SymbolicDimError(f"Range of {count} elements from symbolic bounds")
        values = shape_array([start + i * delta for i in range(count)],
                             element_dtype(el))
        return [Tensor.of_array(values, element=el)]
    start_value, delta_value = (reshape(ctx, ctx.operand(i), ()) for i in (0, 2))
    return [emit(ctx, graph.RangeOp, [start_value, delta_value], (count,), el)]


def convert_range(ctx: NodeContext) -> list[Result]:
    """Range decides its output's length: with constant start, limit and delta it is known
    here (a constant when onnx_fold took it, else a graph.range kernel, so a long range costs
    no import-time array); with run-time ones only when the model declares it (value_info).
    Bounds from symbolic sizes: `_symbolic_range`."""
    known = [ctx.tensor(i).array for i in range(3)]
    el = check_element(ctx, 0)
    if all(a is not None for a in known) and any(ctx.tensor(i).symbolic_data for i in range(3)):
        return _symbolic_range(ctx, el)
    if all(a is not None for a in known):
        start, limit, delta = (_scalar_constant(ctx, i, w)
                               for i, w in enumerate(("start", "limit", "delta")))
        try:
            count = range_count(start, limit, delta)
        except ValueError as err:
            raise ctx.invalid(str(err)) from None
        if count <= FOLD_LIMIT:
            return [range_values(start, delta, count)]
        declared: tuple[int, ...] | None = (count,)
    else:
        declared = ctx.inferred_shape(0)
        if declared is None or len(declared) != 1:
            missing = next(i for i, a in enumerate(known) if a is None)
            ctx.constant(missing, ("start", "limit", "delta")[missing])  # raises: names it
    if any(ctx.shape(i) not in ((), (1,)) for i in range(3)):
        raise ctx.invalid("start, limit and delta must be scalars")
    start_value, delta_value = (reshape(ctx, ctx.operand(i), ()) for i in (0, 2))
    return [emit(ctx, graph.RangeOp, [start_value, delta_value], declared, el)]


def convert_eye_like(ctx: NodeContext) -> list[Result]:
    """Only the input's shape matters: a constant for a static shape; over symbolic sizes
    Cast(Range(k, k + rows)[:, None] == Range(0, cols)[None, :])."""
    shape = ctx.shape(0)
    if len(shape) != 2:
        raise ctx.invalid(f"EyeLike needs a rank-2 input, got shape {shape}")
    dtype_code = ctx.attr("dtype", None)
    if dtype_code is None:
        el = ctx.element_type(0)
    elif types.is_supported(dtype_code):
        el = types.element_type(dtype_code)
    else:
        raise ctx.unsupported(f"dtype {types.type_name(dtype_code)}")
    k = int(ctx.attr("k", 0))
    if all(isinstance(d, int) for d in shape):
        return [np.eye(shape[0], shape[1], k=k, dtype=element_dtype(el))]
    i64 = types.element_type(types.TP.INT64)

    def scalar(value: int) -> Result:
        return ctx.materialize(Tensor.of_array(np.array(value, np.int64)))

    rows = emit(ctx, graph.RangeOp, [scalar(k), scalar(1)], (shape[0],), i64)
    cols = emit(ctx, graph.RangeOp, [scalar(0), scalar(1)], (shape[1],), i64)
    diagonal = emit(ctx, graph.EqualOp, [reshape(ctx, rows, (shape[0], 1)), cols], shape,
                    types.element_type(types.TP.BOOL))
    return [emit(ctx, graph.CastOp, [diagonal], shape, el)]


def _window(terms: tuple[float, ...]) -> Converter:
    """Hann/Hamming/Blackman windows: sum_j terms[j] * cos(2 pi j n / N) for n < size, with
    N = size (periodic) or size - 1 (symmetric). Only the constant size decides the values,
    so the window is a constant (computed in f64, then rounded once)."""

    def convert(ctx: NodeContext) -> list[Result]:
        size = int(_scalar_constant(ctx, 0, "size"))
        if size < 0:
            raise ctx.invalid(f"negative size {size}")
        code = ctx.attr("output_datatype", types.TP.FLOAT)
        if not types.is_supported(code):
            raise ctx.unsupported(f"output_datatype {types.type_name(code)}")
        period = size if ctx.attr("periodic", 1) else size - 1
        ctx.check_size((size,), 8, "its window")  # computed in float64 here
        n = np.arange(size, dtype=np.float64)
        window = sum(c * np.cos(2 * np.pi * j * n / period) for j, c in enumerate(terms))
        return [np.asarray(window).astype(types.numpy_dtype(code))]

    return convert


def _hz_to_mel(hz: float) -> float:
    return 2595 * np.log10(1 + hz / 700)


def convert_mel_weight_matrix(ctx: NodeContext) -> list[Result]:
    """Triangular filters [dft_length // 2 + 1, num_mel_bins] on the mel scale, with the
    operator's spec algorithm: num_mel_bins + 2 edges spaced (high - low) / (num_mel_bins
    + 2) apart in mel, mapped to FFT bins by floor((dft_length + 1) * hz / sample_rate)."""
    bins, dft_length, sample_rate = (int(_scalar_constant(ctx, i, what)) for i, what in
                                     enumerate(("num_mel_bins", "dft_length", "sample_rate")))
    low, high = (float(_scalar_constant(ctx, i, what)) for i, what in
                 ((3, "lower_edge_hertz"), (4, "upper_edge_hertz")))
    if bins <= 0 or dft_length <= 0 or sample_rate <= 0:
        raise ctx.invalid("num_mel_bins, dft_length and sample_rate must be positive")
    code = ctx.attr("output_datatype", types.TP.FLOAT)
    if not types.is_supported(code):
        raise ctx.unsupported(f"output_datatype {types.type_name(code)}")
    ctx.check_size((dft_length // 2 + 1, bins), 8, "its matrix")  # float64 here
    low_mel, high_mel = _hz_to_mel(low), _hz_to_mel(high)
    mels = np.arange(bins + 2) * ((high_mel - low_mel) / (bins + 2)) + low_mel
    hz = 700 * (10 ** (mels / 2595) - 1)
    edges = ((dft_length + 1) * hz // sample_rate).astype(np.int64)
    out = np.zeros((dft_length // 2 + 1, bins))
    for i in range(bins):
        left, center, right = (int(e) for e in edges[i:i + 3])
        if center == left:
            out[center, i] = 1
        else:
            j = np.arange(left, center + 1)
            out[j, i] = (j - left) / (center - left)
        if right > center:
            j = np.arange(center, right)
            out[j, i] = (right - j) / (right - center)
    return [out.astype(types.numpy_dtype(code))]


CONVERTERS: dict[str, Converter] = {
    "Range": convert_range,
    "EyeLike": convert_eye_like,
    "HannWindow": _window((0.5, -0.5)),  # sin^2(pi n / N)
    "HammingWindow": _window((25 / 46, -21 / 46)),
    "BlackmanWindow": _window((0.42, -0.5, 0.08)),
    "MelWeightMatrix": convert_mel_weight_matrix,
}
