"""Region ops of detectors that RoiAlign's converter (onnx_ops_vision) does not cover:
MaxRoiPool (Fast R-CNN's RoI max pooling, ai.onnx opset 1), as onnxruntime computes it.

The rois' first column is the batch index as a float; it is also handed to the graph op as
an integer operand (truncated as onnxruntime's static_cast<int>), so the run-time index
check refuses one outside [0, N) with a typed error naming the node, as for RoiAlign.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import f64

from onnxc.dialects import graph_vision
from onnxc.frontend import onnx_types as types
from onnxc.frontend.onnx_context import NodeContext, Result
from onnxc.frontend.onnx_ops_math import Converter
from onnxc.frontend.onnx_ops_microsoft import onnx_node
from onnxc.frontend.onnx_ops_movement import require_float, typed


def convert_max_roi_pool(ctx: NodeContext) -> list[Result]:
    require_float(ctx)
    x, rois = ctx.shape(0), ctx.shape(1)
    if len(x) != 4 or len(rois) != 2 or rois[1] != 5:
        raise ctx.invalid(f"input {x} / rois {rois}: [N, C, H, W] and [num_rois, 5] expected")
    pooled = ctx.ints("pooled_shape")
    if pooled is None or len(pooled) != 2 or min(pooled) < 1:
        raise ctx.invalid(f"pooled_shape {pooled} (two positive sizes, required)")
    scale = float(ctx.attr("spatial_scale", 1.0))
    if not scale > 0 or not np.isfinite(scale):
        raise ctx.invalid(f"spatial_scale {scale} (positive)")
    column = onnx_node(ctx, "Gather", [ctx.tensor(1), np.array(0, np.int64)], {"axis": 1})[0]
    batch = onnx_node(ctx, "Cast", [column], {"to": int(types.TP.INT64)})[0]
    op = graph_vision.MaxRoiPoolOp(
        operands=[ctx.operand(0), ctx.operand(1), batch],
        result_types=[typed(ctx, (rois[0], x[1], *pooled))],
        properties={"spatial_scale": types.float_attr(scale, f64)})
    return [ctx.emit1(op)]


CONVERTERS: dict[str, Converter] = {
    "MaxRoiPool": convert_max_roi_pool,
}
