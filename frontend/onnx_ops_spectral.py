"""Spectral ops: DFT (17: axis an attribute; 20: an input) and STFT.

A transform of compile-time length is a matrix product: the signal's axis (with its real /
imaginary pair, ONNX's last axis of size 1 or 2) is flattened and multiplied by one
constant [n * parts, bins * parts] matrix of cos / sin terms, computed in float64 and rounded
once to the element type. It is O(n^2) per transform but runs on the GEMM kernel, which for
the lengths models use (windows of 64..1024) beats an unvectorized FFT. The matrix also does
what the DFT's options ask: zero padding or truncation to dft_length (rows past the signal or
past the length are zero), the one-sided half of the bins, the inverse's 1/n, the inverse
of a one-sided spectrum to a real signal (irfft: the bins' conjugate halves counted twice)
and STFT's window (multiplied into the rows when it is constant). Every other axis may be
symbolic (STFT's signal length too); the transformed axis must be static.
"""

from __future__ import annotations

import numpy as np
from xdsl.ir import SSAValue

from onnxc.dialects import graph
from onnxc.dialects import graph_shapes as shapes
from onnxc.dialects.dense_data import element_dtype
from onnxc.dialects.size_facts import require_at_least
from onnxc.dialects.symbolic_dims import Dim, floordiv
from onnxc.frontend import onnx_types as types
from onnxc.frontend.onnx_context import NodeContext, Result, Tensor
from onnxc.frontend.onnx_ops_math import Converter
from onnxc.frontend.onnx_ops_movement import Emitter

MAX_LENGTH = 8192
"""Longest transform imported as a matrix (its matrix of 4 n^2 entries is 1 GiB in f32 past
this; such lengths want an FFT kernel onnxc does not have)."""


def _scalar(ctx: NodeContext, i: int, what: str) -> int:
    array = np.asarray(ctx.constant(i, what))
    if array.size != 1 or array.dtype.kind not in "iu":
        raise ctx.invalid(f"{what} must be an integer scalar, got {array.dtype} {array.shape}")
    return int(array.reshape(()))


def dft_matrix(rows: int, parts: int, length: int, bins: int, inverse: bool,
               window: np.ndarray | None = None) -> np.ndarray:
    """[rows * parts, bins * 2] float64: row (n, part) of the input times it gives the bins
    k < `bins` of the length-`length` transform (columns (k, re/im)); rows n >= length are
    zero (truncation), rows missing past `rows` are the zero padding. The inverse has e^+
    and 1/length."""
    n = np.arange(min(rows, length), dtype=np.float64)[:, None]
    k = np.arange(bins, dtype=np.float64)[None, :]
    angle = 2 * np.pi * ((n * k) % length) / length  # reduced: exact angles for long n * k
    cos, sin = np.cos(angle), np.sin(angle) * (1.0 if inverse else -1.0)
    if inverse:
        cos, sin = cos / length, sin / length
    if window is not None:
        cos, sin = cos * window[:len(n), None], sin * window[:len(n), None]
    out = np.zeros((rows, parts, bins, 2))
    used = len(n)
    out[:used, 0, :, 0], out[:used, 0, :, 1] = cos, sin  # re * (cos + i sin)
    if parts == 2:
        out[:used, 1, :, 0], out[:used, 1, :, 1] = -sin, cos  # i im * (cos + i sin)
    return out.reshape(rows * parts, bins * 2)


def irfft_matrix(rows: int, parts: int, length: int) -> np.ndarray:
    """[rows * parts, length]: the real signal of length `length` whose one-sided spectrum
    is the input's first length // 2 + 1 bins (numpy's irfft): bin 0 and, for an even
    length, bin length / 2 once, the others twice (their conjugates), imaginary parts of
    those two ignored (their sines are 0)."""
    used = min(rows, length // 2 + 1)
    k = np.arange(used, dtype=np.float64)[:, None]
    n = np.arange(length, dtype=np.float64)[None, :]
    angle = 2 * np.pi * ((k * n) % length) / length
    twice = np.where((k == 0) | (2 * k == length), 1.0, 2.0) / length
    out = np.zeros((rows, parts, length))
    out[:used, 0] = twice * np.cos(angle)
    if parts == 2:
        out[:used, 1] = -twice * np.sin(angle)
    return out.reshape(rows * parts, length)


def _parts(ctx: NodeContext, shape) -> int:
    if len(shape) < 2 or shape[-1] not in (1, 2):
        raise ctx.invalid(f"input shape {shape}: the last axis must be 1 (real) or 2 "
                          "(real, imaginary)")
    if not types.is_float(ctx.element_type(0)):
        raise ctx.unsupported(f"element type {ctx.element_type(0)} (float tensors only)")
    return shape[-1]


def _times(ctx: NodeContext, x: SSAValue, matrix: np.ndarray) -> SSAValue:
    """x [..., rows] @ matrix, the matrix a constant of x's element type."""
    w = ctx.materialize(Tensor.of_array(matrix.astype(element_dtype(ctx.element_type(0)))))
    out = ctx.infer(shapes.matmul_output_shape, graph.shape_of(x), graph.shape_of(w))
    return ctx.emit1(graph.MatMulOp(operands=[x, w],
                                    result_types=[types.tensor_type(out, ctx.element_type(0))]))


FOUR_STEP_FROM = 512
"""From this length on a transform whose length has two factors of at least 8 is computed
in Cooley-Tukey's four steps (`_four_step`): O(n (n1 + n2)) multiply-adds and two small
matrices instead of O(n^2) and one [2n, 2n] matrix (8 MiB of f32 at 1024, 128 MiB at 4096)."""


def _factors(length: int) -> tuple[int, int] | None:
    """(n1, n2) with n1 * n2 = length, n1 the largest divisor <= sqrt(length), when the
    length is at least FOUR_STEP_FROM and both are at least 8; else None (one matrix)."""
    if length < FOUR_STEP_FROM:
        return None
    n1 = max(d for d in range(1, int(length**0.5) + 1) if length % d == 0)
    return (n1, length // n1) if n1 >= 8 else None


def _four_step(ctx: NodeContext, e: Emitter, v: SSAValue, split: tuple[int, int],
               bins: int, inverse: bool) -> SSAValue:
    """The length-n transform of v [*prefix, size, parts] (zero padded or truncated to n =
    n1 * n2), its first `bins` bins as [*prefix, bins * 2]: with n = n2 * a + b and
    k = c + n1 * d, X[c + n1 d] = sum_b w_n2^(b d) * (w_n^(b c) * sum_a x[n2 a + b] w_n1^(a c)):
    a length-n1 transform per b (a matmul), the twiddle factors (an elementwise complex
    product), a length-n2 transform per c (a matmul), then the bins back in k order."""
    from onnxc.frontend.onnx_ops_microsoft import onnx_node  # which imports onnx_ops_*

    n1, n2 = split
    length = n1 * n2
    *prefix, size, parts = graph.shape_of(v)
    r = len(prefix)
    dtype = element_dtype(ctx.element_type(0))
    if size > length:
        v = onnx_node(ctx, "Slice", [v, np.array([0]), np.array([length]), np.array([r])])[0]
    elif size < length:
        pads = np.zeros(2 * (r + 2), np.int64)
        pads[r + 2 + r] = length - size
        v = onnx_node(ctx, "Pad", [v, pads])[0]
    v = e.transpose(e.reshape(v, (*prefix, n1, n2, parts)), (*range(r), r + 1, r, r + 2))
    a = _times(ctx, e.reshape(v, (*prefix, n2, n1 * parts)),
               dft_matrix(n1, parts, n1, n1, inverse))
    a = e.reshape(a, (*prefix, n2, n1, 2))
    angle = 2 * np.pi * ((np.arange(n2)[:, None] * np.arange(n1)[None, :]) % length) / length
    cos, sin = np.cos(angle), np.sin(angle) * (1.0 if inverse else -1.0)
    same = np.stack([cos, cos], axis=-1).astype(dtype)
    crossed = np.stack([-sin, sin], axis=-1).astype(dtype)
    swapped = onnx_node(ctx, "Gather", [a, np.array([1, 0], np.int64)], {"axis": r + 2})[0]
    a = onnx_node(ctx, "Add", [onnx_node(ctx, "Mul", [a, same])[0],
                               onnx_node(ctx, "Mul", [swapped, crossed])[0]])[0]
    a = e.transpose(a, (*range(r), r + 1, r, r + 2))
    y = _times(ctx, e.reshape(a, (*prefix, n1, n2 * 2)), dft_matrix(n2, 2, n2, n2, inverse))
    y = e.transpose(e.reshape(y, (*prefix, n1, n2, 2)), (*range(r), r + 1, r, r + 2))
    y = e.reshape(y, (*prefix, length, 2))
    if bins < length:
        y = onnx_node(ctx, "Slice", [y, np.array([0]), np.array([bins]), np.array([r])])[0]
    return e.reshape(y, (*prefix, bins * 2))


def convert_dft(ctx: NodeContext) -> list[Result]:
    x = ctx.shape(0)
    rank, parts = len(x), _parts(ctx, ctx.shape(0))
    if ctx.opset >= 20:
        axis = _scalar(ctx, 2, "axis") if ctx.has_input(2) else -2
    else:
        axis = ctx.attr("axis", 1)
    if not (-rank <= axis <= -2 or 0 <= axis <= rank - 2):
        raise ctx.invalid(f"axis {axis} out of range for rank {rank} (the last is the "
                          "real/imaginary axis)")
    axis %= rank
    inverse, onesided = bool(ctx.attr("inverse", 0)), bool(ctx.attr("onesided", 0))
    size = x[axis]
    if not isinstance(size, int):
        raise ctx.unsupported(f"a symbolic length {size} along axis {axis} (the transform's "
                              "matrix is built at compile time)")
    if ctx.has_input(1):
        length = _scalar(ctx, 1, "dft_length")
    else:
        length = 2 * (size - 1) if inverse and onesided else size
    if not 1 <= length <= MAX_LENGTH:
        raise (ctx.invalid if length < 1 else ctx.unsupported)(
            f"dft_length {length} (1..{MAX_LENGTH} taken)")
    e = Emitter(ctx)
    others = [d for d in range(rank - 1) if d != axis]
    moved = e.transpose(ctx.operand(0), (*others, axis, rank - 1)) \
        if axis != rank - 2 else ctx.operand(0)
    prefix = tuple(x[d] for d in others) or (1,)
    split = None if inverse and onesided else _factors(length)
    if inverse and onesided:  # a one-sided spectrum back to its real signal
        bins, out_parts = length, 1
        matrix = irfft_matrix(size, parts, length)
    else:
        bins, out_parts = (length // 2 + 1 if onesided else length), 2
        matrix = None if split else dft_matrix(size, parts, length, bins, inverse)
    if matrix is None:
        y = _four_step(ctx, e, e.reshape(moved, (*prefix, size, parts)), split, bins, inverse)
    else:
        ctx.check_size(matrix.shape, 8, "its transform matrix")
        y = _times(ctx, e.reshape(moved, (*prefix, size * parts)), matrix)
    y = e.reshape(y, (*(x[d] for d in others), bins, out_parts))
    if axis == rank - 2:
        return [y]
    order = (*others, axis, rank - 1)
    return [e.transpose(y, [order.index(d) for d in range(rank)])]


def _frame_indices(ctx: NodeContext, frames: Dim, step: int, frame: int) -> SSAValue:
    """[frames, frame] int64: sample f * step + j of frame f. A constant for a static
    frame count; else a graph.range of the run's frame count plus the constant offsets."""
    offsets = np.arange(frame, dtype=np.int64)[None, :]
    if isinstance(frames, int):
        indices = np.arange(frames, dtype=np.int64)[:, None] * step + offsets
        return ctx.materialize(Tensor.of_array(indices))
    i64 = types.element_type(types.TP.INT64)
    starts = ctx.emit1(graph.RangeOp(
        operands=[ctx.materialize(Tensor.of_array(np.array(0, np.int64))),
                  ctx.materialize(Tensor.of_array(np.array(step, np.int64)))],
        result_types=[types.tensor_type((frames,), i64)]))
    column = Emitter(ctx).reshape(starts, (frames, 1))
    return ctx.emit1(graph.AddOp(operands=[column, ctx.materialize(Tensor.of_array(offsets))],
                                 result_types=[types.tensor_type((frames, frame), i64)]))


def convert_stft(ctx: NodeContext) -> list[Result]:
    """Frames of the signal [batch, length, parts] taken by a Gather (frame f is samples
    f * step ..; the length may be symbolic), each transformed by the windowed DFT matrix:
    [batch, frames, bins, 2], frames = (length - frame_length) // step + 1."""
    x = ctx.shape(0)
    parts = _parts(ctx, x)
    if len(x) != 3:
        raise ctx.invalid(f"signal shape {x}: [batch, length, 1 or 2] expected")
    step = _scalar(ctx, 1, "frame_step")
    window = ctx.has_input(2)
    if ctx.has_input(3):
        frame = _scalar(ctx, 3, "frame_length")
    elif window:
        frame = ctx.shape(2)[0] if len(ctx.shape(2)) == 1 else -1
    else:
        raise ctx.invalid("one of window and frame_length must be given")
    if window and ctx.shape(2) != (frame,):
        raise ctx.invalid(f"window shape {ctx.shape(2)} does not fit frame_length {frame}")
    signal = x[1]
    if step < 1 or not 1 <= frame <= (signal if isinstance(signal, int) else MAX_LENGTH) \
            or frame > MAX_LENGTH:
        raise ctx.invalid(f"frame_step {step} / frame_length {frame} for a signal of "
                          f"{signal} samples")
    onesided = bool(ctx.attr("onesided", 1))
    bins = frame // 2 + 1 if onesided else frame
    if isinstance(signal, int):
        frames: Dim = (signal - frame) // step + 1
    else:  # frames of a run-time length: a signal shorter than a frame is refused then
        require_at_least(signal, frame, "STFT's signal is shorter than its frame_length")
        frames = floordiv(signal - frame, step) + 1
    known = ctx.known(2) if window else None
    matrix = dft_matrix(frame, parts, frame, bins, False,
                        None if known is None else np.asarray(known, np.float64))
    ctx.check_size(matrix.shape, 8, "its transform matrix")
    e = Emitter(ctx)
    gathered = ctx.emit1(graph.GatherOp(
        operands=[ctx.operand(0), _frame_indices(ctx, frames, step, frame)],
        result_types=[types.tensor_type((x[0], frames, frame, parts), ctx.element_type(0))],
        properties={"axis": types.i64_attr(1)}))
    if window and known is None:  # a run-time window: applied to the frames
        gathered = e.binary(graph.MulOp, gathered, e.reshape(ctx.operand(2), (frame, 1)))
    y = _times(ctx, e.reshape(gathered, (x[0], frames, frame * parts)), matrix)
    return [e.reshape(y, (x[0], frames, bins, 2))]


CONVERTERS: dict[str, Converter] = {
    "DFT": convert_dft,
    "STFT": convert_stft,
}
