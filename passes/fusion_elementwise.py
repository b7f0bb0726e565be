"""`fuse-elementwise`: trees of float elementwise ops become one `graph.fused_elementwise`.

Every supported elementwise op is seen as a one-step fused op (`as_steps`); the pattern
merges a producer into its consumer when the producer's result has no other user and the
consumer does not broadcast it to a larger shape (which would repeat the producer's work
per broadcast element). Repeated to a fixpoint, a chain or tree becomes one op whose kernel
is a single loop nest: one pass over memory instead of one per op.
"""

from __future__ import annotations

from xdsl.dialects.builtin import ArrayAttr, StringAttr
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)

from onnxc.dialects import graph
from onnxc.dialects.graph import float_of, shape_of
from onnxc.dialects.graph_composite import Step
from onnxc.passes.constants import is_float_tensor, single_use

UNARY_STEP_OPS: dict[type[Operation], str] = {
    graph.ReluOp: "relu", graph.SigmoidOp: "sigmoid", graph.TanhOp: "tanh",
    graph.ExpOp: "exp", graph.LogOp: "log", graph.SqrtOp: "sqrt", graph.NegOp: "neg",
    graph.AbsOp: "abs", graph.ReciprocalOp: "reciprocal",
}
BINARY_STEP_OPS: dict[type[Operation], str] = {
    graph.AddOp: "add", graph.SubOp: "sub", graph.MulOp: "mul", graph.DivOp: "div",
    graph.PowOp: "pow",
}
VARIADIC_STEP_OPS: dict[type[Operation], str] = {
    graph.SumOp: "add", graph.MaxOp: "max", graph.MinOp: "min",
}


def as_steps(op: Operation) -> tuple[list[SSAValue], list[Step]] | None:
    """(inputs, steps) computing `op`'s result, or None if `op` is not fusable."""
    if isinstance(op, graph.FusedElementwiseOp):
        return list(op.inputs), op.parsed_steps()
    if not op.results or not is_float_tensor(op.results[0]):
        return None
    if type(op) in UNARY_STEP_OPS:
        return [op.operands[0]], [Step(UNARY_STEP_OPS[type(op)], (0,))]
    if isinstance(op, graph.LeakyReluOp):
        return [op.input], [Step("leaky_relu", (0,), (float_of(op.alpha),))]
    if isinstance(op, graph.ClipOp):
        lo = float_of(op.min) if op.min is not None else float("-inf")
        hi = float_of(op.max) if op.max is not None else float("inf")
        return [op.input], [Step("clip", (0,), (lo, hi))]
    if isinstance(op, graph.ScalarBinaryOp):
        return [op.operands[0]], [Step(op.name.removeprefix("graph."), (0,),
                                       (float_of(op.scalar),))]
    if type(op) in BINARY_STEP_OPS:
        return [op.lhs, op.rhs], [Step(BINARY_STEP_OPS[type(op)], (0, 1))]
    if isinstance(op, graph.WeightedSumOp):
        return weighted_sum_steps(op)
    if type(op) in VARIADIC_STEP_OPS and op.operands:
        name, n = VARIADIC_STEP_OPS[type(op)], len(op.operands)
        if n == 1:
            return None  # a copy; drop-no-op's business
        steps = [Step(name, (0, 1))]
        steps += [Step(name, (n + j - 2, j)) for j in range(2, n)]
        return list(op.operands), steps
    return None


def weighted_sum_steps(op: graph.WeightedSumOp) -> tuple[list[SSAValue], list[Step]]:
    """sum_i c_i x_i as steps: `mul_scalar` per coefficient other than 1, then adds (the
    algebra passes turn `x * a + b` into a weighted sum, which must still fuse)."""
    inputs, n = list(op.inputs), len(op.inputs)
    steps: list[Step] = []
    terms: list[int] = []
    for i, c in enumerate(op.coefficient_values()):
        if c == 1.0:
            terms.append(i)
        else:
            steps.append(Step("mul_scalar", (i,), (c,)))
            terms.append(n + len(steps) - 1)
    if len(terms) == 1:
        if not steps:  # a single input with coefficient 1 is a copy
            steps.append(Step("mul_scalar", (terms[0],), (1.0,)))
        return inputs, steps
    acc = terms[0]
    for term in terms[1:]:
        steps.append(Step("add", (acc, term)))
        acc = n + len(steps) - 1
    return inputs, steps


def merge(
    producer: tuple[list[SSAValue], list[Step]],
    consumer: tuple[list[SSAValue], list[Step]],
    value: SSAValue,
) -> tuple[list[SSAValue], list[Step]]:
    """The program computing the consumer with `value` (the producer's result) inlined."""
    p_in, p_steps = producer
    c_in, c_steps = consumer
    inputs: list[SSAValue] = []
    for v in [*p_in, *(v for v in c_in if v is not value)]:
        if v not in inputs:
            inputs.append(v)
    n = len(inputs)
    p_map = [inputs.index(v) for v in p_in] + [n + j for j in range(len(p_steps))]
    produced = n + len(p_steps) - 1
    c_map = [produced if v is value else inputs.index(v) for v in c_in]
    c_map += [n + len(p_steps) + j for j in range(len(c_steps))]
    steps = [Step(s.op, tuple(p_map[r] for r in s.refs), s.params) for s in p_steps]
    steps += [Step(s.op, tuple(c_map[r] for r in s.refs), s.params) for s in c_steps]
    return inputs, steps


class FuseElementwiseChain(RewritePattern):
    """consumer(producer(...), ...) -> one graph.fused_elementwise, for elementwise ops."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter):
        consumer = as_steps(op)
        if consumer is None:
            return
        out_shape = shape_of(op.results[0])
        for value in dict.fromkeys(consumer[0]):
            producer_op = value.owner
            if not isinstance(producer_op, Operation) or not single_use(value):
                continue
            producer = as_steps(producer_op)
            if producer is None or shape_of(value) != out_shape:
                continue
            inputs, steps = merge(producer, consumer, value)
            rewriter.replace(op, graph.FusedElementwiseOp(
                operands=[inputs], result_types=[op.results[0].type],
                properties={"steps": ArrayAttr([StringAttr(str(s)) for s in steps])}))
            return
