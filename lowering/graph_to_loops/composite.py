"""Kernels of the ops the fusion and replacement passes create (dialects/graph_composite).

`graph.fused_elementwise` clones its body of scalar arith/math ops into one broadcast loop
nest (`map_elementwise`), block arguments mapped to the loaded elements; LLVM vectorizes
that loop as it does the single-op kernels'. Its kernel key (KERNEL_KEYS) is the body's
structure, so fused ops computing the same share one kernel. `graph.channel_shuffle`
copies whole channel planes: out[n, j * g + i] = in[n, i * k + j] (in NHWC, per pixel).
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.ir import SSAValue

from onnxc.dialects import graph
from onnxc.dialects.graph import int_of
from onnxc.dialects.graph_fused_elementwise import body_key, inline_body
from onnxc.dialects.layout import layout_of
from onnxc.errors import LoweringError
from onnxc.lowering.graph_to_loops.elementwise import map_elementwise, require_physical_broadcast
from onnxc.lowering.graph_to_loops.loops import Index, KernelBuilder, parallel_nest
from onnxc.lowering.graph_to_loops.normalization import sizes
from onnxc.lowering.graph_to_loops.rules import KernelRule


def fused_elementwise_kernel(op: graph.FusedElementwiseOp, kb: KernelBuilder, ins, outs):
    require_physical_broadcast(op)
    def element(kb: KernelBuilder, args: Sequence[SSAValue]) -> SSAValue:
        """The body cloned on this element's loaded values (constants hoisted, shared)."""
        return inline_body(op, args, kb.constant, kb.insert)

    map_elementwise(kb, ins, outs[0], element)


def channel_shuffle_kernel(op: graph.ChannelShuffleOp, kb: KernelBuilder, ins, outs):
    shape = sizes(kb, op.input)
    n, c, plane = shape[0], shape[1], kb.product(shape[2:])
    g = int_of(op.group)
    k = kb.idiv(c, g)  # c // g, also of a symbolic channel count
    layouts = {layout_of(op.input.type), layout_of(op.output.type)}
    if layouts == {"NHWC"}:
        _channel_shuffle_nhwc(kb, ins[0], outs[0], kb.imul(n, plane), g, k)
        return
    if layouts != {None}:
        raise LoweringError(f"{op.name}: no kernel for layouts {sorted(map(str, layouts))}")
    x = kb.view(ins[0], [n, g, k, plane])
    y = kb.view(outs[0], [n, k, g, plane])

    def copy(ivs: list[Index]) -> None:
        b, i, j, p = ivs
        kb.store(kb.load(x, [b, i, j, p]), y, [b, j, i, p])

    parallel_nest(kb, [n, g, k, plane], copy)


def _channel_shuffle_nhwc(kb: KernelBuilder, src, dst, pixels: int, g: int, k: int) -> None:
    """NHWC: each pixel's channels are a [g, k] matrix transposed to [k, g]."""
    x = kb.view(src, [pixels, g, k])
    y = kb.view(dst, [pixels, k, g])

    def pixel(p: Index) -> None:
        kb.nest([k, g], lambda ji: kb.store(kb.load(x, [p, ji[1], ji[0]]), y, [p, *ji]))

    kb.parallel_for(0, pixels, pixel)


RULES = (
    KernelRule(graph.FusedElementwiseOp, fused_elementwise_kernel,
               key=lambda op, target: ("body", body_key(op)), symbolic=True),
    KernelRule(graph.ChannelShuffleOp, channel_shuffle_kernel, symbolic=True),
)
"""symbolic: the kernels read their sizes from the KernelBuilder (symbolic dims welcome)."""
