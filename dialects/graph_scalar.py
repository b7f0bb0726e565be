"""Binary arithmetic with a scalar right operand held as a property (row fold-scalar-binary).

`graph.mul_scalar(%x) {scalar = 0.5 : f64}` is `graph.mul(%x, %c)` with `%c` a one-element
constant: the kernel reads the scalar as an immediate instead of loading (and broadcasting)
a tensor, and the constant disappears from the graph. The property is an f64 whatever the
tensor's element type (exact for f32 and for integers below 2**53); the kernel converts it.
"""

from __future__ import annotations

import abc

from xdsl.dialects.builtin import FloatAttr
from xdsl.irdl import irdl_op_definition, prop_def, traits_def

from onnxc.dialects.graph_base import GraphOp, UnaryFields, shape_of
from onnxc.dialects.graph_traits import ElementwiseMap, HalfKernel


class ScalarBinaryOp(GraphOp, UnaryFields, abc.ABC):
    """output = f(input, scalar) elementwise; same shape and element type as `input`."""

    traits = traits_def(HalfKernel(), ElementwiseMap())
    scalar = prop_def(FloatAttr)

    def infer_shapes(self):
        return [shape_of(self.input)]


@irdl_op_definition
class AddScalarOp(ScalarBinaryOp):
    """input + scalar: graph.add with a one-element constant right operand."""

    name = "graph.add_scalar"


@irdl_op_definition
class SubScalarOp(ScalarBinaryOp):
    """input - scalar: graph.sub with a one-element constant right operand."""

    name = "graph.sub_scalar"


@irdl_op_definition
class MulScalarOp(ScalarBinaryOp):
    """input * scalar: graph.mul with a one-element constant right operand."""

    name = "graph.mul_scalar"


@irdl_op_definition
class DivScalarOp(ScalarBinaryOp):
    """input / scalar: graph.div with a one-element constant right operand."""

    name = "graph.div_scalar"


@irdl_op_definition
class PowScalarOp(ScalarBinaryOp):
    """input ** scalar: graph.pow with a one-element constant exponent."""

    name = "graph.pow_scalar"
