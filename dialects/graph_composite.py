"""Graph ops that only optimization passes create: fused elementwise chains, channel shuffle.

`graph.fused_elementwise` is a tree of elementwise ops evaluated in one loop nest. Its
`steps` property is a tiny SSA program: step j is "<op> %a %b ... [params]", where %i names
input i for i < #inputs and step i - #inputs otherwise; the last step is the result, e.g.
    graph.fused_elementwise(%x, %b) {steps = ["add %0 %1", "clip %2 0.0 6.0"]}
is clip(x + b, 0, 6). Params: leaky_relu alpha; clip lo hi (-inf / inf for no bound);
add_scalar / sub_scalar / mul_scalar / div_scalar / pow_scalar s (x op s, as graph.<op>_scalar).
QDQ chains fuse too: "dequantize %a s z" is (a - z) * s, "quantize %a s z lo hi" is
clamp(round_half_even(a / s) + z, lo, hi) (still a float holding an integer), so an input
may be ui8/i8 when only dequantize steps read it, and the result ui8/i8 when the last step
is a quantize (the kernel converts that integral value to the result's type).

`graph.conv_add(%x, %w, %b?, %z)` is act(conv(x, w, b) + z) for a z of the result's shape:
a residual Add folded into the conv (fuse-conv-add), whose kernel starts each output plane
from z instead of zeros, so the Add costs no pass over memory; like graph.conv it takes an
activation epilogue (graph_epilogue), applied after the addition (ResNet's Relu(conv + x)).

`graph.channel_shuffle {group}` is ShuffleNet's channel shuffle: for C = group * k,
out[:, j * group + i] = in[:, i * k + j], what Reshape(N, g, k, ...) + Transpose(0, 2, 1, ...)
+ Reshape(N, C, ...) compute.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects.builtin import (
    AnyFloat,
    ArrayAttr,
    DenseArrayBase,
    IntegerAttr,
    IntegerType,
    StringAttr,
    TensorType,
)
from xdsl.irdl import (
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    prop_def,
    result_def,
    var_operand_def,
)
from xdsl.utils.exceptions import VerifyException

from onnxc.dialects import graph_shapes as shapes
from onnxc.dialects.graph_base import GraphOp, int_of, shape_of
from onnxc.dialects.graph_epilogue import EpilogueProps, verify_epilogue
from onnxc.dialects.graph_nn import conv_result_shape

UNARY_STEPS = ("relu", "sigmoid", "tanh", "exp", "log", "sqrt", "neg", "abs", "reciprocal")
BINARY_STEPS = ("add", "sub", "mul", "div", "pow", "max", "min")
PARAM_STEPS = {"leaky_relu": 1, "clip": 2, "add_scalar": 1, "sub_scalar": 1, "mul_scalar": 1,
               "div_scalar": 1, "pow_scalar": 1, "dequantize": 2, "quantize": 4}


@dataclass(frozen=True)
class Step:
    """One parsed step: op name, value references, numeric parameters."""

    op: str
    refs: tuple[int, ...]
    params: tuple[float, ...] = ()

    def __str__(self) -> str:
        return " ".join([self.op, *(f"%{r}" for r in self.refs), *(repr(p) for p in self.params)])


def arity(op: str) -> int:
    if op in UNARY_STEPS or op in PARAM_STEPS:
        return 1
    if op in BINARY_STEPS:
        return 2
    raise ValueError(f"unknown step op '{op}'")


def parse_step(text: str) -> Step:
    tokens = text.split()
    if not tokens:
        raise ValueError("empty step")
    op, rest = tokens[0], tokens[1:]
    n = arity(op)
    refs, params = rest[:n], rest[n:]
    if len(refs) != n or not all(r.startswith("%") for r in refs):
        raise ValueError(f"step '{text}': '{op}' takes {n} value reference(s)")
    if len(params) != PARAM_STEPS.get(op, 0):
        raise ValueError(f"step '{text}': '{op}' takes {PARAM_STEPS.get(op, 0)} parameter(s)")
    return Step(op, tuple(int(r[1:]) for r in refs), tuple(float(p) for p in params))


@irdl_op_definition
class FusedElementwiseOp(GraphOp):
    """A tree of float elementwise ops over broadcast inputs, run as one loop nest."""

    name = "graph.fused_elementwise"
    inputs = var_operand_def(TensorType)
    output = result_def(TensorType)
    steps = prop_def(ArrayAttr[StringAttr])

    def parsed_steps(self) -> list[Step]:
        return [parse_step(s.data) for s in self.steps.data]

    def infer_shapes(self):
        if not self.inputs:
            raise ValueError("needs at least one input")
        steps = self.parsed_steps()
        if not steps:
            raise ValueError("needs at least one step")
        n, used = len(self.inputs), set()
        for j, step in enumerate(steps):
            for r in step.refs:
                if not 0 <= r < n + j:
                    raise ValueError(f"step {j} refers to %{r}, not defined before it")
                used.add(r)
        if not set(range(n)) <= used:
            raise ValueError("every input must be used by a step")
        return [shapes.broadcast_shapes(*(shape_of(v) for v in self.inputs))]

    def verify_element_types(self) -> None:
        """The float operands and a float result share one type (ui8/i8 ones: verify_)."""
        floats = [v.type.get_element_type() for v in (*self.inputs, self.output)
                  if isinstance(v.type.get_element_type(), AnyFloat)]
        if any(t != floats[0] for t in floats[1:]):
            raise VerifyException(f"{self.name}: float operand and result types differ")

    def verify_(self) -> None:
        super().verify_()
        steps = self.parsed_steps()
        if not isinstance(self.output.type.get_element_type(), AnyFloat) and not (
                _is_byte(self.output) and steps[-1].op == "quantize"):
            raise VerifyException(f"{self.name}: element type must be a float (or ui8/i8 "
                                  "after a last quantize step)")
        for i, v in enumerate(self.inputs):
            if isinstance(v.type.get_element_type(), AnyFloat):
                continue
            if not _is_byte(v) or any(i in s.refs and s.op != "dequantize" for s in steps):
                raise VerifyException(f"{self.name}: input {i} is not a float: only "
                                      "dequantize steps may read ui8/i8 inputs")


def _is_byte(value) -> bool:
    el = value.type.get_element_type()
    return isinstance(el, IntegerType) and el.width.data == 8


@irdl_op_definition
class ConvAddOp(GraphOp, EpilogueProps):
    """act(conv(input, weight, bias) + addend): graph.conv's properties plus a residual."""

    name = "graph.conv_add"
    input = operand_def(TensorType)
    weight = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    addend = operand_def(TensorType)
    output = result_def(TensorType)
    strides = prop_def(DenseArrayBase)
    pads = prop_def(DenseArrayBase)
    dilations = prop_def(DenseArrayBase)
    group = prop_def(IntegerAttr)

    def infer_shapes(self):
        out = conv_result_shape(self)
        if shape_of(self.addend) != out:
            raise ValueError(f"addend shape {shape_of(self.addend)} is not the result's {out}")
        return [out]

    def verify_(self) -> None:
        super().verify_()
        verify_epilogue(self)


@irdl_op_definition
class ChannelShuffleOp(GraphOp):
    """ShuffleNet channel shuffle over axis 1 with `group` groups."""

    name = "graph.channel_shuffle"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    group = prop_def(IntegerAttr)

    def infer_shapes(self):
        x = shape_of(self.input)
        g = int_of(self.group)
        if len(x) < 2 or g < 1 or x[1] % g != 0:
            raise ValueError(f"{x[1] if len(x) > 1 else '?'} channels do not split into {g} groups")
        return [x]


def shuffle_source_channel(c: int, channels: int, group: int) -> int:
    """The input channel that output channel `c` of a channel shuffle reads."""
    k = channels // group
    return (c % group) * k + c // group


