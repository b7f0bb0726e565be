"""Kernels of graph.conv_transpose and graph.col2im, in scatter form.

Input pixel i of channel c adds x[c, i] * w[c, m, k] to output pixel i * stride +
k * dilation - pad. Looping over (image, output channel) planes in parallel, each iteration
owns its output plane: it starts from the bias, then for every input channel of the group
and kernel offset adds the shifted, strided input plane. `window_range` (the forward
convolution's bound computation, with the roles of input and output swapped) gives the
input range whose target lies inside the output, so the inner loops carry no bound tests.

Batch and spatial sizes may be symbolic (a UNet decoder over any image size): the planes,
window ranges and loop bounds are then run-time values; static shapes fold as before.
"""

from __future__ import annotations

import math as pymath

from onnxc.dialects.graph import int_of, ints_of, shape_of
from onnxc.dialects.graph_vision import Col2ImOp, ConvTransposeOp, col2im_blocks
from onnxc.errors import LoweringError
from onnxc.lowering.graph_to_loops.element_types import is_float
from onnxc.lowering.graph_to_loops.loops import Index, KernelBuilder, window_range
from onnxc.lowering.graph_to_loops.rules import KernelRule


def conv_transpose_kernel(op: ConvTransposeOp, kb: KernelBuilder, ins, outs):
    element = outs[0].type.get_element_type()
    if not is_float(element):
        raise LoweringError(f"{op.name}: only float tensors are supported")
    x_shape, w_shape, y_shape = shape_of(op.input), shape_of(op.weight), shape_of(op.output)
    n, c = x_shape[:2]
    m = y_shape[1]
    group = int_of(op.group)
    cg, mg = c // group, m // group
    spatial = len(x_shape) - 2
    strides, pads, dilations = ints_of(op.strides), ints_of(op.pads), ints_of(op.dilations)
    x, w, y = ins[0], ins[1], outs[0]
    bias = ins[2] if op.bias is not None else None
    if 0 in y_shape:
        return
    plane = pymath.prod(y_shape[2:])
    y_flat = kb.view(y, [n, m, plane])
    zero = kb.constant(0.0, element)

    def per_plane(nm: Index) -> None:
        img, oc = kb.idiv(nm, m), kb.isub(nm, kb.imul(kb.idiv(nm, m), m))
        g = kb.idiv(oc, mg)
        ocg = kb.isub(oc, kb.imul(g, mg))
        start = kb.load(bias, [oc]) if bias is not None else zero
        kb.for_(0, plane, lambda p: kb.store(start, y_flat, [img, oc, p]))
        if 0 in x_shape:
            return

        def per_channel(ic: Index) -> None:
            channel = kb.iadd(kb.imul(g, cg), ic)

            def per_offset(ks: list[Index]) -> None:
                ranges = [window_range(kb, ks[d], dilations[d], pads[d], strides[d],
                                       y_shape[2 + d], x_shape[2 + d]) for d in range(spatial)]
                weight = kb.load(w, [channel, ocg, *ks])

                def accumulate(ivs: list[Index]) -> None:
                    target = [kb.iadd(kb.imul(i, strides[d]), ranges[d][2])
                              for d, i in enumerate(ivs)]
                    v = kb.load(x, [img, channel, *ivs])
                    old = kb.load(y, [img, oc, *target])
                    kb.store(kb.muladd(v, weight, old), y, [img, oc, *target])

                kb.nest([(lo, hi) for lo, hi, _ in ranges], accumulate)

            kb.nest(list(w_shape[2:]), per_offset)

        kb.for_(0, cg, per_channel)

    kb.parallel_for(0, n * m, per_plane)


def col2im_kernel(op: Col2ImOp, kb: KernelBuilder, ins, outs):
    """The same scatter without the channel sum: block offset k of block l adds to image
    pixel l * stride + k * dilation - pad; (image, channel) planes in parallel."""
    element = outs[0].type.get_element_type()
    if not is_float(element):
        raise LoweringError(f"{op.name}: only float tensors are supported")
    y_shape = shape_of(op.output)
    n, c = y_shape[:2]
    image = y_shape[2:]
    block = ints_of(op.block_shape)
    strides, pads, dilations = ints_of(op.strides), ints_of(op.pads), ints_of(op.dilations)
    blocks = col2im_blocks(image, block, strides, pads, dilations)
    if 0 in y_shape:
        return
    x = kb.view(ins[0], [n, c, *block, *blocks])
    y = outs[0]
    y_flat = kb.view(y, [n, c, pymath.prod(image)])
    zero = kb.constant(0.0, element)

    def per_plane(nc: Index) -> None:
        img = kb.idiv(nc, c)
        ch = kb.isub(nc, kb.imul(img, c))
        kb.for_(0, pymath.prod(image), lambda p: kb.store(zero, y_flat, [img, ch, p]))

        def per_offset(ks: list[Index]) -> None:
            ranges = [window_range(kb, ks[d], dilations[d], pads[d], strides[d], image[d],
                                   blocks[d]) for d in range(len(image))]

            def accumulate(ls: list[Index]) -> None:
                target = [kb.iadd(kb.imul(v, strides[d]), ranges[d][2]) for d, v in enumerate(ls)]
                old = kb.load(y, [img, ch, *target])
                kb.store(kb.add(old, kb.load(x, [img, ch, *ks, *ls])), y, [img, ch, *target])

            kb.nest([(lo, hi) for lo, hi, _ in ranges], accumulate)

        kb.nest(list(block), per_offset)

    kb.parallel_for(0, n * c, per_plane)


RULES = (
    KernelRule(ConvTransposeOp, conv_transpose_kernel, symbolic=True, weight=3),
    KernelRule(Col2ImOp, col2im_kernel, symbolic=True),
)
"""symbolic: the kernels read their sizes from the KernelBuilder (symbolic dims welcome);
a transposed convolution weighs as a convolution in the compile's forecast."""
