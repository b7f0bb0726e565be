"""`fuse-weight-only-matmul`: a MatMul by a blocked DequantizeLinear of a constant 2-, 4- or
8-bit weight becomes graph.matmul_weight_quantized, the form com.microsoft MatMulNBits
imports as, so both run on the weight-only kernel (weight_quant_gemm.py) that unpacks the
weight in registers instead of a float weight in memory.

onnxruntime's `MatMulNBitsQuantizer(quant_format=QDQ)` writes this form:

    %w = graph.dequantize_linear(%q) {scale: [K / B, N], zero_point, axis = 0,
                                      block_size = B} : (tensor<KxNxui4>) -> tensor<KxNxf32>
    %y = graph.matmul(%a, %w)           ->   %y = graph.matmul_weight_quantized(%a, ...)

The DequantizeLinear computes (q - zp) * scale in f32 and the MatMul sums in f32; the new op
computes the same products (exactly the same weights) and sums them in f32 too, in another
order. Taken: a constant [K, N] q of ui2/i2/ui4/i4/ui8/i8 (signed values shifted to unsigned,
with their zero points: exact), blocks along axis 0 of a power of 2 >= 16 (MatMulNBits'
block sizes), f32 weights (an f16 DequantizeLinear rounds each weight to f16, which the
op does not), any lhs of rank >= 1. The DequantizeLinear stays when something else reads it.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import Float32Type, IntegerAttr, IntegerType, Signedness, f32, i64
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern

from onnxc.dialects import graph
from onnxc.dialects.graph import shape_of
from onnxc.dialects.graph_weight_quant import WEIGHT_BITS, pack_bits
from onnxc.passes.base import GraphPatternPass
from onnxc.passes.constants import constant_value, insert_constant

ui8 = IntegerType(8, Signedness.UNSIGNED)


def _weight_form(dq: graph.DequantizeLinearOp) -> tuple[int, int, bool] | None:
    """(bits, block_size, signed) of a DequantizeLinear the pattern takes, else None."""
    el = dq.quantized_type()
    if not isinstance(el, IntegerType) or el.width.data not in WEIGHT_BITS:
        return None
    if not isinstance(dq.output.type.get_element_type(), Float32Type):
        return None
    block = dq.block_size_of()
    if dq.axis_of() != 0 or block < 16 or block & (block - 1):
        return None
    return el.width.data, block, el.signedness.data != Signedness.UNSIGNED


class FuseWeightOnlyMatMul(RewritePattern):
    """matmul(a, dequantize_linear(constant q) blocked along K) -> matmul_weight_quantized."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.MatMulOp, rewriter: PatternRewriter):
        dq = op.rhs.owner
        if not isinstance(dq, graph.DequantizeLinearOp) or len(shape_of(op.rhs)) != 2:
            return
        form = _weight_form(dq)
        q = constant_value(dq.input)
        a_shape = shape_of(op.lhs)
        if form is None or q is None or not a_shape or not isinstance(a_shape[-1], int):
            return
        bits, block, signed = form
        offset = 1 << (bits - 1) if signed else 0
        unsigned = q.astype(np.int64) + offset
        scales = np.asarray(dq.scales(), np.float32).T  # [N, k_blocks]
        zero = (np.asarray(dq.zero_points(), np.int64) + offset).T.astype(np.float32)
        packed = pack_bits(unsigned.T, bits, block)
        operands = [op.lhs, insert_constant(rewriter, packed, ui8, op),
                    insert_constant(rewriter, scales, f32, op),
                    insert_constant(rewriter, zero, f32, op)]
        fused = graph.MatMulWeightQuantizedOp.create(
            operands=operands, result_types=[op.output.type],
            properties={"bits": IntegerAttr(bits, i64), "block_size": IntegerAttr(block, i64)})
        rewriter.replace(op, fused)


class FuseWeightOnlyMatMulPass(GraphPatternPass):
    """Constant blocked weight DequantizeLinear -> MatMul to graph.matmul_weight_quantized."""

    name = "fuse-weight-only-matmul"
    patterns = (FuseWeightOnlyMatMul,)
