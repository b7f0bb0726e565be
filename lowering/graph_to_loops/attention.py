"""Kernel of graph.attention: softmax(scale * Q K^T + mask) V without the score matrix.

FlashAttention's recurrence, one query row at a time: the keys are visited in blocks of
KEY_BLOCK; a block's scores go to a KEY_BLOCK-element stack buffer (the only scratch memory,
allocated once per kernel), the running maximum m and normaliser l are carried in registers,
and the output row, which lives in the result buffer, is rescaled by exp(m_old - m_new) once
per block before the block's probabilities accumulate V rows into it. No Sq x Sk (not even
an Sk-long) buffer exists; K and V are streamed once per query row.
"""

from __future__ import annotations

import math as pymath

from xdsl.dialects import math, memref
from xdsl.dialects.builtin import MemRefType
from xdsl.rewriter import InsertPoint, Rewriter

from onnxc.dialects import graph
from onnxc.dialects.graph import float_of, shape_of
from onnxc.lowering.graph_to_loops.fused import require_float
from onnxc.lowering.graph_to_loops.loops import Index, KernelBuilder, broadcast_indices

KEY_BLOCK = 16


def attention_kernel(op: graph.AttentionOp, kb: KernelBuilder, ins, outs):
    require_float(op, outs[0])
    q_shape, k_shape, v_shape = shape_of(op.query), shape_of(op.key), shape_of(op.value)
    batch = list(q_shape[:-2])
    sq, d = q_shape[-2:]
    sk, dv = k_shape[-2], v_shape[-1]
    if pymath.prod(batch) * sq * dv == 0:
        return
    q, k, v, y = ins[0], ins[1], ins[2], outs[0]
    mask = ins[3] if op.mask is not None else None
    mask_shape = shape_of(op.mask) if op.mask is not None else ()
    element = y.type.get_element_type()
    zero = kb.constant(0.0, element)
    lowest = kb.constant(-pymath.inf, element)
    scale = kb.constant(float_of(op.scale), element)
    block = max(1, min(KEY_BLOCK, sk))
    scores = memref.AllocaOp.get(element, shape=[block])
    Rewriter.insert_op(scores, InsertPoint.at_start(kb.entry))
    buf = scores.memref
    assert isinstance(buf.type, MemRefType)

    def per_query(ivs: list[Index]) -> None:
        bi, i = ivs[:-1], ivs[-1]
        kb.for_(0, dv, lambda c: kb.store(zero, y, [*bi, i, c]))

        def per_block(j0: Index, running_max, running_sum):
            hi = kb.imin(kb.iadd(j0, block), sk)

            def score(j: Index, block_max):
                (dot,) = kb.reduce(0, d, [zero], lambda c, acc: [
                    kb.muladd(kb.load(q, [*bi, i, c]), kb.load(k, [*bi, j, c]), acc)
                ])
                s = kb.mul(dot, scale)
                if mask is not None:
                    s = kb.add(s, kb.load(mask, broadcast_indices([*bi, i, j], mask_shape)))
                kb.store(s, buf, [kb.isub(j, j0)])
                return [kb.max(block_max, s)]

            (block_max,) = kb.for_(j0, hi, score, iter_args=[lowest])
            new_max = kb.max(running_max, block_max)
            correction = kb.insert(math.ExpOp(kb.sub(running_max, new_max)))
            kb.for_(0, dv, lambda c: kb.store(
                kb.mul(kb.load(y, [*bi, i, c]), correction), y, [*bi, i, c]))

            def accumulate(j: Index, total):
                weight = kb.insert(math.ExpOp(kb.sub(kb.load(buf, [kb.isub(j, j0)]), new_max)))
                kb.for_(0, dv, lambda c: kb.store(
                    kb.muladd(weight, kb.load(v, [*bi, j, c]), kb.load(y, [*bi, i, c])),
                    y, [*bi, i, c]))
                return [kb.add(total, weight)]

            (block_sum,) = kb.for_(j0, hi, accumulate, iter_args=[zero])
            return [new_max, kb.muladd(running_sum, correction, block_sum)]

        _, total = kb.for_(0, sk, per_block, step=block, iter_args=[lowest, zero])
        inverse = kb.div(kb.constant(1.0, element), total)
        kb.for_(0, dv, lambda c: kb.store(kb.mul(kb.load(y, [*bi, i, c]), inverse), y, [*bi, i, c]))

    kb.nest([*batch, sq], per_query)


KERNELS = {graph.AttentionOp: attention_kernel}
