"""Kernel of `graph.layout_convert`: a transpose by the conversion's permutation.

The shape is collapsed like the transpose kernel's (dims that stay adjacent are merged), so
NCHW -> NHWC runs as a 3-deep nest [N, H*W, C] with a contiguous store.
"""

from __future__ import annotations

from onnxc.dialects import graph
from onnxc.dialects.graph import shape_of
from onnxc.lowering.graph_to_loops.data_movement import collapse_transpose
from onnxc.lowering.graph_to_loops.loops import Index, KernelBuilder


def layout_convert_kernel(op: graph.LayoutConvertOp, kb: KernelBuilder, ins, outs):
    in_shape, perm = collapse_transpose(shape_of(op.input), op.permutation())
    out_shape = [in_shape[p] for p in perm]
    src, dst = kb.view(ins[0], in_shape), kb.view(outs[0], out_shape)

    def body(ivs: list[Index]) -> None:
        index: list[Index] = [0] * len(perm)
        for j, p in enumerate(perm):
            index[p] = ivs[j]
        kb.store(kb.load(src, index), dst, ivs)

    kb.nest(out_shape, body)


KERNELS = {graph.LayoutConvertOp: layout_convert_kernel}
