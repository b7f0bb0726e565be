"""CNN, detection and segmentation ops that index or sample, as ONNX (graph_vision and
graph_resize's ops; the importer is frontend/onnx_ops_vision.py and onnx_ops_movement.py).

- graph.conv_transpose (the importer resolved auto_pad, output_shape and output_padding into
  explicit pads and the result type; it makes this op only where output_padding is a
  stride or more, which neither onnxruntime nor onnx.reference run): ConvTranspose with
  the end pads reduced by the rows the result has past the padded full size, and where
  those rows run past the full size itself (no tap reaches them), zeros padded at the end
  before the bias is added (a `ConvTransposeGrown` function).
- graph.col2im, grid_sample, roi_align: the ONNX op, the shapes the importer read from
  constant inputs (image_shape, block_shape) and attributes (output_height / width) taken
  from the types again.
- graph.max_pool_indices: MaxPool with its Indices output.
- graph.max_unpool: MaxUnpool of a window that implies the `unpooled` shape (stride 1:
  the indices are flat positions, so only that shape matters), then, when the result is
  larger, a Pad of zeros at the end (onnx.reference's placement; onnxruntime would
  re-index into the larger shape): a `MaxUnpoolPadded` function.
- graph.deform_columns (DeformConv's sampled columns, before the weight's MatMul): a
  `DeformColumns` function, a DeformConv with one group per input channel whose constant
  weight picks tap t of channel c into output channel c * taps + t (ones and zeros), then
  a Reshape to [N, C * taps, oh * ow]. Exact for finite samples; an infinite or NaN
  sample makes its channel's other taps NaN (0 * inf in the sum over taps).
- graph.resize: Resize with `sizes` when every axis' scale is its output / input size, else
  with float32 `scales` when they are exact and onnxruntime's floor(size * scale) gives the
  result's size, else (keep_aspect_ratio_policy, resolved on import) with the sizes and
  the policy `not_larger` over the axes sharing the scale, the axis that picked it asking
  for its size and the others for more; a roi computed in the run (`roi_input`) is spread
  over every axis by a Concat and a Gather.
"""

from __future__ import annotations

import math

import numpy as np
from onnx import TensorProto
from xdsl.ir import Operation

from onnxc.dialects import graph_resize, graph_vision
from onnxc.dialects.graph import float_of, int_of, ints_of, shape_of
from onnxc.dialects.graph_resize import floats_of
from onnxc.frontend.onnx_export import (
    FUNCTION_DOMAIN,
    Emitter,
    FunctionBody,
    OnnxWriter,
    numpy_dtype_of,
    unsupported,
)


def _present(w: OnnxWriter, *values) -> list[str]:
    """Names of the operands up to the last one present ("" for an absent one before it)."""
    names = w.names(values)
    while names and not names[-1]:
        names.pop()
    return names


def _window(op) -> dict[str, object]:
    return {"strides": list(ints_of(op.strides)), "pads": list(ints_of(op.pads)),
            "dilations": list(ints_of(op.dilations))}


def _conv_transpose(w: OnnxWriter, op: graph_vision.ConvTransposeOp) -> None:
    """Rows past the padded full size (what output_padding adds) first take back end pads;
    rows past the full size itself, which no tap reaches, are zeros padded after a
    ConvTranspose without bias, then the bias is added (a `ConvTransposeGrown` function:
    onnxruntime and onnx.reference refuse an output_padding of a stride or more)."""
    x, k, y = shape_of(op.input), shape_of(op.weight), shape_of(op.output)
    s, p, d = ints_of(op.strides), ints_of(op.pads), ints_of(op.dilations)
    n = len(x) - 2
    extra = [y[2 + i] - (s[i] * (x[2 + i] - 1) + (k[2 + i] - 1) * d[i] + 1 - p[i] - p[n + i])
             for i in range(n)]
    pads = [*p[:n], *(max(p[n + i] - extra[i], 0) for i in range(n))]
    grow = [max(extra[i] - p[n + i], 0) for i in range(n)]
    attrs = {"strides": list(s), "pads": pads, "dilations": list(d),
             "group": int_of(op.group)}
    if not any(grow):
        w.emit(op, "ConvTranspose", _present(w, op.input, op.weight, op.bias), **attrs)
        return
    biased = op.bias is not None
    formal = ["X", "W"] + (["B"] if biased else [])

    def build(body: FunctionBody) -> None:
        full = body.apply("ConvTranspose", ["X", "W"], "full", **attrs)
        padded = body.apply("Pad", [full, body.const(
            np.asarray([0] * (n + 2) + [0, 0, *grow], np.int64), "pads")], "padded")
        if biased:
            shape = body.const(np.asarray([-1] + [1] * n, np.int64), "shape")
            padded = body.apply("Add", [padded, body.apply("Reshape", ["B", shape], "bias")],
                                "biased")
        body.nodes[-1].output[0] = "Y"

    key = ("conv_transpose", tuple(x), tuple(k), tuple(y), tuple(sorted(
        (a, str(v)) for a, v in attrs.items())), biased, numpy_dtype_of(op.input).name)
    fn = w.function(key, "ConvTransposeGrown", formal, ["Y"], build)
    w.emit(op, fn, w.names([op.input, op.weight] + ([op.bias] if biased else [])),
           domain=FUNCTION_DOMAIN)


def _col2im(w: OnnxWriter, op: graph_vision.Col2ImOp) -> None:
    w.emit(op, "Col2Im", [w.name(op.input), w.ints(shape_of(op.output)[2:], "image_shape"),
                          w.ints(ints_of(op.block_shape), "block_shape")], **_window(op))


def _grid_sample(w: OnnxWriter, op: graph_vision.GridSampleOp) -> None:
    w.emit(op, "GridSample", w.names([op.input, op.grid]), mode=op.mode.data,
           padding_mode=op.padding_mode.data, align_corners=int_of(op.align_corners))


def _roi_align(w: OnnxWriter, op: graph_vision.RoiAlignOp) -> None:
    indices = w.name(op.batch_indices)
    if numpy_dtype_of(op.batch_indices) != np.int64:
        indices = w.apply("Cast", [indices], f"{indices}_i64", to=TensorProto.INT64)
    y = shape_of(op.output)
    w.emit(op, "RoiAlign", [w.name(op.input), w.name(op.rois), indices], mode=op.mode.data,
           output_height=y[2], output_width=y[3], sampling_ratio=int_of(op.sampling_ratio),
           spatial_scale=float_of(op.spatial_scale),
           coordinate_transformation_mode="half_pixel" if int_of(op.half_pixel)
           else "output_half_pixel")


def _max_roi_pool(w: OnnxWriter, op: graph_vision.MaxRoiPoolOp) -> None:
    """The rois keep their batch column: batch_indices is read from it."""
    y = shape_of(op.output)
    w.emit(op, "MaxRoiPool", [w.name(op.input), w.name(op.rois)], pooled_shape=list(y[2:]),
           spatial_scale=float_of(op.spatial_scale))


def _max_pool_indices(w: OnnxWriter, op: graph_vision.MaxPoolIndicesOp) -> None:
    w.emit(op, "MaxPool", [w.name(op.input)], kernel_shape=list(ints_of(op.kernel_shape)),
           **_window(op), ceil_mode=int_of(op.ceil_mode),
           storage_order=int_of(op.storage_order))


def _max_unpool(w: OnnxWriter, op: graph_vision.MaxUnpoolOp) -> None:
    x, y = shape_of(op.input), shape_of(op.output)
    unpooled = op.unpooled_shape()
    if not all(isinstance(u, int) for u in unpooled):
        raise unsupported(op, f"unpooled shape {list(map(str, unpooled))} is symbolic")
    n = len(x) - 2
    # stride 1: unpooled = x - 1 - pads + kernel along each spatial axis
    kernel = [max(u - d + 1, 1) for u, d in zip(unpooled[2:], x[2:])]
    pads = [0] * n + [max(d - u, 0) for u, d in zip(unpooled[2:], x[2:])]
    attrs = {"kernel_shape": kernel, "strides": [1] * n, "pads": pads}
    if tuple(unpooled) == tuple(y):
        w.emit(op, "MaxUnpool", [w.name(op.input), w.name(op.indices)], **attrs)
        return
    grow = [0] * len(y) + [b - a for a, b in zip(unpooled, y)]

    def build(body: FunctionBody) -> None:
        inner = body.apply("MaxUnpool", ["X", "I"], "unpooled", **attrs)
        body.node("Pad", [inner, body.const(np.asarray(grow, np.int64), "pads")], ["Y"])

    key = ("max_unpool", tuple(x), tuple(unpooled), tuple(y))
    fn = w.function(key, "MaxUnpoolPadded", ["X", "I"], ["Y"], build)
    w.emit(op, fn, [w.name(op.input), w.name(op.indices)], domain=FUNCTION_DOMAIN)


def _deform_columns(w: OnnxWriter, op: graph_vision.DeformColumnsOp) -> None:
    c = shape_of(op.input)[1]
    kernel = list(ints_of(op.kernel_shape))
    taps = math.prod(kernel)
    dtype = numpy_dtype_of(op.input)
    out = shape_of(op.output)
    masked = op.mask is not None
    formal = ["X", "offset"] + (["mask"] if masked else [])

    def build(body: FunctionBody) -> None:
        pick = np.zeros((c * taps, 1, *kernel), dtype)
        for t in range(taps):
            pick[t::taps, 0, t // kernel[1], t % kernel[1]] = 1
        sampled = body.apply("DeformConv", ["X", body.const(pick, "taps"), "offset",
                                            *(["", "mask"] if masked else [])], "sampled",
                             kernel_shape=kernel, **_window(op), group=c,
                             offset_group=int_of(op.offset_group))
        body.node("Reshape", [sampled, body.const(np.asarray(out, np.int64), "shape")], ["Y"])

    key = ("deform_columns", tuple(shape_of(op.input)), tuple(shape_of(op.offset)), masked,
           tuple(kernel), tuple(_window(op)["strides"]), tuple(_window(op)["pads"]),
           tuple(_window(op)["dilations"]), int_of(op.offset_group), dtype.name)
    fn = w.function(key, "DeformColumns", formal, ["Y"], build)
    w.emit(op, fn, w.names([op.input, op.offset] + ([op.mask] if masked else [])),
           domain=FUNCTION_DOMAIN)


# ------------------------------------------------------------------ resize


def _resize_request(op: graph_resize.ResizeOp) -> tuple[str, list, dict[str, object]]:
    """How Resize is asked for the op's geometry: ("sizes" | "scales", values, extra
    attributes). UnsupportedOpError where none of the forms gives it."""
    x, y = shape_of(op.input), shape_of(op.output)
    scales = [op.static_scale(a) for a in range(len(x))]
    if None in scales or not all(isinstance(d, int) for d in (*x, *y)):
        raise unsupported(op, "a scale taken in the run (symbolic sizes)")
    if all(x[a] and s == y[a] / x[a] for a, s in enumerate(scales)):
        return "sizes", list(y), {}
    f32 = [np.float32(s) for s in scales]
    if all(float(f) == s and int(np.float32(x[a]) * f) == y[a] for a, (f, s) in
           enumerate(zip(f32, scales))):
        return "scales", f32, {}
    shared = {s for a, s in enumerate(scales) if y[a] != x[a] or s != 1.0}
    if len(shared) == 1:  # keep_aspect_ratio_policy: one scale picked by one axis' size
        (s,) = shared
        axes = [a for a, t in enumerate(scales) if t == s]
        picking = [a for a in axes if x[a] and y[a] / x[a] == s]
        if picking and all(y[a] == int(s * x[a] + 0.5) for a in axes):
            wanted = [y[a] if a == picking[0] else x[a] * (max(y) + 1) for a in axes]
            return "sizes", wanted, {"axes": axes, "keep_aspect_ratio_policy": "not_larger"}
    raise unsupported(op, f"scales {scales} are neither the size ratios nor float32 scales "
                          f"giving the result's shape {list(y)}")


def _roi(w: OnnxWriter, op: graph_resize.ResizeOp) -> str:
    """The roi input: "" where Resize does not read it, the constant, or the run's roi
    spread over every axis ([0, 1] where it does not cover one)."""
    if op.coordinate_transformation_mode.data != "tf_crop_and_resize":
        return ""
    if op.roi_input is None:
        return w.const(np.asarray(floats_of(op.roi), np.float32), "roi")
    rank = len(shape_of(op.input))
    count = shape_of(op.roi_input)[0] // 2
    slots = [op.roi_slot(a) for a in range(rank)]
    index = ([count * 2 if s is None else s for s in slots]
             + [count * 2 + 1 if s is None else s + count for s in slots])
    whole = w.const(np.asarray([0.0, 1.0], numpy_dtype_of(op.roi_input)), "whole")
    joined = w.apply("Concat", [w.name(op.roi_input), whole], "roi_joined", axis=0)
    return w.apply("Gather", [joined, w.ints(index, "roi_index")], "roi", axis=0)


def _resize(w: OnnxWriter, op: graph_resize.ResizeOp) -> None:
    kind, values, extra = _resize_request(op)
    roi = _roi(w, op)
    if kind == "sizes":
        inputs = [w.name(op.input), roi, "", w.ints(values, "sizes")]
    else:
        inputs = [w.name(op.input), roi, w.const(np.asarray(values, np.float32), "scales")]
    w.emit(op, "Resize", inputs, mode=op.mode.data,
           coordinate_transformation_mode=op.coordinate_transformation_mode.data,
           nearest_mode=op.nearest_mode.data, cubic_coeff_a=float_of(op.cubic_coeff_a),
           exclude_outside=int_of(op.exclude_outside), antialias=int_of(op.antialias),
           extrapolation_value=float_of(op.extrapolation_value), **extra)


VISION_EMITTERS: dict[type[Operation], Emitter] = {
    graph_vision.ConvTransposeOp: _conv_transpose,
    graph_vision.Col2ImOp: _col2im,
    graph_vision.GridSampleOp: _grid_sample,
    graph_vision.RoiAlignOp: _roi_align,
    graph_vision.MaxRoiPoolOp: _max_roi_pool,
    graph_vision.MaxPoolIndicesOp: _max_pool_indices,
    graph_vision.MaxUnpoolOp: _max_unpool,
    graph_vision.DeformColumnsOp: _deform_columns,
    graph_resize.ResizeOp: _resize,
}
