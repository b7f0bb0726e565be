"""The N-D convolution kernel (groups, depthwise, strides, explicit pads, dilations, bias).

Loop order: image n, group g, output channel m of the group; the output plane is set to
the bias, then for each input channel c of the group and each kernel offset, one weight
scales the valid part of the input plane into the output plane. The valid output range
of an offset is computed before its loops (`window_range`), so the innermost loop (the
last spatial dimension) is a branch-free, contiguous multiply-accumulate.
"""

from __future__ import annotations

from onnxc.dialects import graph
from onnxc.dialects.graph import int_of, ints_of, shape_of
from onnxc.lowering.graph_to_loops.loops import Index, KernelBuilder, window_range


def conv_kernel(op: graph.ConvOp, kb: KernelBuilder, ins, outs):
    x, w, y = ins[0], ins[1], outs[0]
    bias = ins[2] if op.bias is not None else None
    x_shape, w_shape, y_shape = shape_of(op.input), shape_of(op.weight), shape_of(op.output)
    spatial = len(x_shape) - 2
    groups = int_of(op.group, 1)
    c_per_group, m_per_group = w_shape[1], w_shape[0] // groups
    strides, dilations = ints_of(op.strides), ints_of(op.dilations)
    pads_begin = ints_of(op.pads)[:spatial]
    in_sizes, out_sizes, kernel = x_shape[2:], y_shape[2:], w_shape[2:]
    element = y.type.get_element_type()

    def per_output_channel(ivs: list[Index]) -> None:
        n, g, m = ivs
        oc = kb.iadd(kb.imul(g, m_per_group), m)
        init = kb.load(bias, [oc]) if bias is not None else kb.constant(0, element)
        kb.nest(out_sizes, lambda o: kb.store(init, y, [n, oc, *o]))

        def per_input_channel(c: Index) -> None:
            ic = kb.iadd(kb.imul(g, c_per_group), c)

            def per_offset(ks: list[Index]) -> None:
                weight = kb.load(w, [oc, c, *ks])
                ranges, offsets = [], []
                for d in range(spatial):
                    lo, hi, off = window_range(
                        kb, ks[d], dilations[d], pads_begin[d], strides[d],
                        in_sizes[d], out_sizes[d],
                    )
                    ranges.append((lo, hi))
                    offsets.append(off)

                def accumulate(os: list[Index]) -> None:
                    xi = [kb.iadd(kb.imul(o, s), off) for o, s, off in zip(os, strides, offsets)]
                    acc = kb.load(y, [n, oc, *os])
                    kb.store(kb.muladd(weight, kb.load(x, [n, ic, *xi]), acc), y, [n, oc, *os])

                kb.nest(ranges, accumulate)

            kb.nest(kernel, per_offset)

        kb.for_(0, c_per_group, per_input_channel)

    kb.nest([y_shape[0], groups, m_per_group], per_output_channel)


KERNELS = {graph.ConvOp: conv_kernel}
