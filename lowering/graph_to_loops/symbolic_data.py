"""The kernel of `graph.symbolic_constant`: shape data whose values are size polynomials.

The op's result has a static shape; only its values depend on the symbols. The kernel takes
each symbol it names as a trailing index argument (module_kernels.symbols_of_op reads the op's
`size_symbols`), computes every polynomial with `KernelBuilder.dim` and stores it, so a
Loop's trip count `seq` or a shape cast to float reads the sizes of this run.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects import arith

from onnxc.dialects import graph
from onnxc.dialects.graph import shape_of
from onnxc.lowering.graph_to_loops.loops import KernelBuilder
from onnxc.lowering.graph_to_loops.rules import KernelRule


def symbolic_constant_kernel(op: graph.SymbolicConstantOp, kb: KernelBuilder, ins, outs):
    (out,) = outs
    element = out.type.get_element_type()
    shape = tuple(int(d) for d in shape_of(op.output))
    for k, d in enumerate(op.dims()):
        size = kb.dim(d)
        if isinstance(size, int):
            value = kb.constant(size, element)
        else:
            value = kb.insert(arith.IndexCastOp(size, element))
        kb.store(value, out, [int(i) for i in np.unravel_index(k, shape)] if shape else [])


RULES = (KernelRule(graph.SymbolicConstantOp, symbolic_constant_kernel, symbolic=True),)
"""symbolic: its values are symbolic, its type is not: the symbols come from
`size_symbols`."""
