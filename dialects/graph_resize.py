"""graph.resize (ONNX Resize and Upsample) and its sampling taps.

Resize is separable: along each axis, output position o reads `taps` input positions
idx[o, t] with weights w[o, t] (nearest: one tap of weight 1; linear: 2; cubic: 4; with
antialias, as many as the widened filter covers). Shapes are static, so the importer resolves
scales/sizes into `scales` (the per-axis scale the coordinate transform divides by) and the
result type, and `sampling_taps` turns them into the per-axis tables that both the kernel
(as constant tables) and the numpy evaluator use. The formulas follow the ONNX operator doc
(and onnx.reference's vectorized per-axis resize, which the conformance tests check against).
"""

from __future__ import annotations

import math

import numpy as np
from xdsl.dialects.builtin import DenseArrayBase, FloatAttr, IntegerAttr, StringAttr, TensorType
from xdsl.irdl import (
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
)

from onnxc.dialects.graph_base import (
    GraphOp,
    SizesAttr,
    dims_of_attr,
    float_of,
    int_of,
    shape_of,
)
from onnxc.dialects.graph_traits import StaticSizesKernel

MODES = ("nearest", "linear", "cubic")
COORDINATE_MODES = ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
                    "asymmetric", "tf_crop_and_resize")
NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")
ASPECT_POLICIES = ("not_larger", "not_smaller")


def floats_of(attr: DenseArrayBase) -> tuple[float, ...]:
    return tuple(float(v) for v in attr.get_values())


@irdl_op_definition
class ResizeOp(GraphOp):
    """Resize `input` to the result's shape. `scales` are per axis (0 where the size came
    from `sizes` and is symbolic: the scale is output / input in the run); `roi` is
    [begin..., end...] (read only by tf_crop_and_resize).

    `aspect_policy` with `aspect_sizes` (keep_aspect_ratio_policy over symbolic sizes): the
    axes whose requested size is >= 0 share one scale, the least (not_larger) or largest
    (not_smaller) of requested / input size, taken in the run; their scales are 0.

    `roi_input`: tf_crop_and_resize's region computed in the run ([begin..., end...] over
    `roi_axes`); the taps are then computed in the run and `roi` is unused."""

    name = "graph.resize"
    traits = traits_def(StaticSizesKernel())
    input = operand_def(TensorType)
    roi_input = opt_operand_def(TensorType)
    output = result_def(TensorType)
    mode = prop_def(StringAttr)
    coordinate_transformation_mode = prop_def(StringAttr)
    nearest_mode = prop_def(StringAttr)
    cubic_coeff_a = prop_def(FloatAttr)
    exclude_outside = prop_def(IntegerAttr)
    antialias = prop_def(IntegerAttr)
    extrapolation_value = prop_def(FloatAttr)
    scales = prop_def(DenseArrayBase)
    roi = prop_def(DenseArrayBase)
    aspect_policy = opt_prop_def(StringAttr)
    aspect_sizes = opt_prop_def(DenseArrayBase | SizesAttr)
    roi_axes = opt_prop_def(DenseArrayBase)

    def aspect(self) -> tuple[str, tuple] | None:
        """(policy, requested size per axis, -1 where an axis is not in it), or None."""
        if self.aspect_policy is None or self.aspect_sizes is None:
            return None
        return self.aspect_policy.data, dims_of_attr(self.aspect_sizes)

    def static_scale(self, axis: int) -> float | None:
        """The scale the coordinate transform divides by along `axis`, where the compile
        knows it (None: it is taken in the run)."""
        x, y = shape_of(self.input), shape_of(self.output)
        scale = floats_of(self.scales)[axis]
        if scale:
            return scale
        aspect = self.aspect()
        if aspect is not None and aspect[1][axis] != -1:
            policy, wanted = aspect
            pairs = [(w, x[j]) for j, w in enumerate(wanted) if w != -1]
            if not all(isinstance(v, int) for pair in pairs for v in pair):
                return None
            ratios = [w / n for w, n in pairs]
            return min(ratios) if policy == "not_larger" else max(ratios)
        if isinstance(x[axis], int) and isinstance(y[axis], int) and x[axis] > 0:
            return y[axis] / x[axis]
        return None

    def infer_shapes(self):
        x, y = shape_of(self.input), shape_of(self.output)
        if self.mode.data not in MODES:
            raise ValueError(f"unknown mode '{self.mode.data}'")
        if self.coordinate_transformation_mode.data not in COORDINATE_MODES:
            raise ValueError(f"unknown coordinate transformation "
                             f"'{self.coordinate_transformation_mode.data}'")
        if self.nearest_mode.data not in NEAREST_MODES:
            raise ValueError(f"unknown nearest mode '{self.nearest_mode.data}'")
        if len(floats_of(self.scales)) != len(x) or len(floats_of(self.roi)) != 2 * len(x):
            raise ValueError("scales/roi do not match the input rank")
        if len(y) != len(x):
            raise ValueError("result rank differs from the input rank")
        aspect = self.aspect()
        if aspect is not None and (aspect[0] not in ASPECT_POLICIES
                                   or len(aspect[1]) != len(x)):
            raise ValueError(f"keep_aspect_ratio_policy '{aspect[0]}' with sizes "
                             f"{list(aspect[1])} does not fit rank {len(x)}")
        return [y]

    def roi_slot(self, axis: int) -> int | None:
        """Where `axis`' begin lies in `roi_input` (its end `len(roi_axes)` later), or None
        where the region is the whole axis."""
        axes = [int(a) for a in self.roi_axes.get_values()] if self.roi_axes else []
        return axes.index(axis) if axis in axes else None

    def axis_taps(self, axis: int, roi_values: np.ndarray | None = None) -> AxisTaps | None:
        """The sampling taps along `axis`, or None where the axis is copied unchanged
        (`roi_values`: `roi_input`'s value, where the op has one)."""
        x, y = shape_of(self.input), shape_of(self.output)
        rank = len(x)
        scale = self.static_scale(axis)  # static shapes here (since specialized)
        assert scale is not None
        roi = floats_of(self.roi)
        ctm = self.coordinate_transformation_mode.data
        lo, hi = roi[axis], roi[axis + rank]
        slot = self.roi_slot(axis)
        if roi_values is not None:
            count = len(roi_values) // 2
            lo, hi = (0.0, 1.0) if slot is None else (float(roi_values[slot]),
                                                      float(roi_values[slot + count]))
        if math.isclose(scale, 1.0) and x[axis] == y[axis]:
            return None  # not resampled, whatever the roi (as onnxruntime does)
        return sampling_taps(
            self.mode.data, ctm, self.nearest_mode.data, float_of(self.cubic_coeff_a),
            bool(int_of(self.exclude_outside)), bool(int_of(self.antialias)),
            x[axis], y[axis], scale, (lo, hi),
        )


class AxisTaps:
    """idx[o, t] (clamped into the input), w[o, t], and `outside[o]` (tf_crop_and_resize
    positions whose value is the extrapolation value) or None."""

    def __init__(self, idx: np.ndarray, w: np.ndarray, outside: np.ndarray | None):
        self.idx, self.w, self.outside = idx, w, outside

    @property
    def taps(self) -> int:
        return self.idx.shape[1]

    def matrix(self, in_size: int) -> np.ndarray:
        """The [out, in] interpolation matrix (evaluator form)."""
        m = np.zeros((self.idx.shape[0], in_size))
        for t in range(self.taps):
            np.add.at(m, (np.arange(self.idx.shape[0]), self.idx[:, t]), self.w[:, t])
        return m


def _source_coordinates(ctm: str, out_size: int, in_size: int, scale: float,
                        roi: tuple[float, float]) -> tuple[np.ndarray, np.ndarray | None]:
    y = np.arange(out_size, dtype=np.float64)
    length = scale * in_size  # the output length before rounding to an integer
    outside = None
    if ctm == "align_corners":
        x = np.zeros(out_size) if length == 1 else y * (in_size - 1) / (length - 1)
    elif ctm == "asymmetric":
        x = y / scale
    elif ctm == "tf_crop_and_resize":  # over the output's length, as onnxruntime
        lo, hi = roi
        if out_size == 1:
            x = np.full(out_size, (hi - lo) * (in_size - 1) / 2)
        else:
            x = y * (hi - lo) * (in_size - 1) / (out_size - 1)
        x = x + lo * (in_size - 1)
        outside = (x < 0) | (x > in_size - 1)
    elif ctm == "pytorch_half_pixel":
        x = np.full(out_size, -0.5) if length == 1 else (y + 0.5) / scale - 0.5
    elif ctm == "half_pixel":
        x = (y + 0.5) / scale - 0.5
    else:  # half_pixel_symmetric
        offset = in_size / 2 * (1 - out_size / length)
        x = offset + (y + 0.5) / scale - 0.5
    return x, outside


def _coefficients(mode: str, nearest_mode: str, a: float, antialias: bool, ratio: float,
                  scale: float) -> list[float]:
    """Tap weights for a source coordinate `ratio` in (0, 1] past its left neighbour."""
    if mode == "nearest":
        if float(ratio).is_integer():
            return [0.0, 1.0]
        right = {"round_prefer_floor": ratio > 0.5, "round_prefer_ceil": ratio >= 0.5,
                 "floor": False, "ceil": True}[nearest_mode]
        return [0.0, 1.0] if right else [1.0, 0.0]
    if mode == "linear":
        if not antialias:
            return [1 - ratio, ratio]
        s = min(scale, 1.0)
        start = int(math.floor(-1 / s) + 1)
        args = (np.arange(start, 2 - start) - ratio) * s
        c = np.clip(1 - np.abs(args), 0, 1)
        return list(c / c.sum())
    if not antialias:
        r = ratio
        return [((a * (r + 1) - 5 * a) * (r + 1) + 8 * a) * (r + 1) - 4 * a,
                ((a + 2) * r - (a + 3)) * r * r + 1,
                ((a + 2) * (1 - r) - (a + 3)) * (1 - r) * (1 - r) + 1,
                ((a * (2 - r) - 5 * a) * (2 - r) + 8 * a) * (2 - r) - 4 * a]

    def cubic(v: float) -> float:
        v = abs(v)
        if v <= 1:
            return (a + 2) * v ** 3 - (a + 3) * v * v + 1
        return a * v ** 3 - 5 * a * v * v + 8 * a * v - 4 * a if v < 2 else 0.0

    s = min(scale, 1.0)
    start = int(math.floor(-2 / s) + 1)
    c = np.array([cubic(s * (i - ratio)) for i in range(start, 2 - start)])
    return list(c / c.sum())


def sampling_taps(mode: str, ctm: str, nearest_mode: str, cubic_a: float,
                  exclude_outside: bool, antialias: bool, in_size: int, out_size: int,
                  scale: float, roi: tuple[float, float]) -> AxisTaps:
    """Per output position, the input positions read and their weights (one axis)."""
    x, outside = _source_coordinates(ctm, out_size, in_size, scale, roi)
    floor = np.floor(x)
    ratios = np.where(x == floor, 1.0, x - floor)
    w = np.array([_coefficients(mode, nearest_mode, cubic_a, antialias, float(r), scale)
                  for r in ratios]).reshape(out_size, -1)
    n = w.shape[1]
    # the n neighbours nearest to x, ties to the smaller index, in edge-padded coordinates
    pad = (n + 1) // 2
    padded = x + pad
    p = np.floor(padded).astype(np.int64)
    frac = padded - p
    if n % 2 == 0:
        start = p + np.where(frac == 0, -(n // 2), -(n // 2) + 1)
    else:
        start = p + np.where(frac <= 0.5, -((n - 1) // 2), -((n - 1) // 2) + 1)
    idx = start[:, None] + np.arange(n)[None, :] - pad
    if exclude_outside:
        w = np.where((idx < 0) | (idx >= in_size), 0.0, w)
        total = w.sum(axis=1, keepdims=True)
        w = w / np.where(total == 0, 1.0, total)
    idx = np.clip(idx, 0, in_size - 1)
    if mode == "nearest":  # keep the one tap of weight 1
        pick = np.argmax(w, axis=1)
        rows = np.arange(out_size)
        idx, w = idx[rows, pick][:, None], np.ones((out_size, 1))
    if outside is not None and not outside.any():
        outside = None
    return AxisTaps(idx.astype(np.int64), w, outside)
