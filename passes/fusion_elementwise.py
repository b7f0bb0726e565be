"""`fuse-elementwise`: trees of float elementwise ops become one `graph.fused_elementwise`.

Per-tensor ui8/i8 Quantize/Dequantize join the trees as steps, so QDQ's DQ(a) + DQ(b) ->
Relu -> Q (a residual add) is one loop reading and writing 8-bit tensors.

Every supported elementwise op is seen as a one-step fused op (`as_steps`). A producer
belongs in its consumer's fused op when the producer's result has no other user and the
consumer does not broadcast it to a larger shape (which would repeat the producer's work
per broadcast element). The tree of ops joined that way becomes one op whose kernel is a
single loop nest: one pass over memory instead of one per op.

The pattern builds each tree in one rewrite, at its root (the op that does not itself go
into a consumer): merging one producer at a time would re-read the growing program at every
step, quadratic in the length of a chain (a 1,000-op chain took seconds).
"""

from __future__ import annotations

from xdsl.dialects.builtin import ArrayAttr, Float32Type, StringAttr
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)

from onnxc.dialects import graph
from onnxc.dialects.graph import float_of, shape_of
from onnxc.dialects.graph_composite import Step
from onnxc.passes.constants import element_type, is_float_tensor, single_use
from onnxc.passes.quant_params import QuantOp, byte_range, is_byte, qparams, quantized_value

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
    if isinstance(op, QuantOp):
        step = quant_step(op)
        return None if step is None else ([op.input], [step])
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


def quant_step(op: graph.QuantizeLinearOp | graph.DequantizeLinearOp) -> Step | None:
    """The step of a per-tensor ui8/i8 <-> f32 Quantize or Dequantize (QDQ residual adds
    then run as one loop over the 8-bit tensors), else None."""
    p = qparams(op)
    real = op.input if isinstance(op, graph.QuantizeLinearOp) else op.output
    if p is None or not p.per_tensor or not is_byte(quantized_value(op)):
        return None
    if not isinstance(element_type(real), Float32Type):
        return None
    if isinstance(op, graph.DequantizeLinearOp):
        return Step("dequantize", (0,), (float(p.scale()), float(p.zero_point())))
    if not isinstance(op.division_type(), Float32Type):
        return None
    lo, hi = byte_range(op.output)
    return Step("quantize", (0,), (float(p.scale()), float(p.zero_point()), float(lo),
                                   float(hi)))


def is_fusable(op: Operation) -> bool:
    """Whether `as_steps(op)` is not None, without building the steps."""
    if isinstance(op, graph.FusedElementwiseOp):
        return True
    if isinstance(op, QuantOp):
        return quant_step(op) is not None
    if not op.results or not is_float_tensor(op.results[0]):
        return False
    if type(op) in VARIADIC_STEP_OPS:
        return len(op.operands) > 1
    return (type(op) in UNARY_STEP_OPS or type(op) in BINARY_STEP_OPS
            or isinstance(op, (graph.LeakyReluOp, graph.ClipOp, graph.ScalarBinaryOp,
                               graph.WeightedSumOp)))


def joins_consumer(value: SSAValue, consumer_shape: object) -> bool:
    """Whether `value`'s producer goes into the fused op of its only consumer, which has
    `consumer_shape`: it is fusable, read once, and not broadcast by the consumer."""
    producer = value.owner
    return (isinstance(producer, Operation) and single_use(value)
            and shape_of(value) == consumer_shape and is_fusable(producer))


def is_tree_root(op: Operation) -> bool:
    """Whether `op` is the last op of its fused tree (its result joins no consumer)."""
    result = op.results[0]
    use = result.get_unique_use()
    if use is None:
        return True
    consumer = use.operation
    return not (is_fusable(consumer) and consumer.results
                and joins_consumer(result, shape_of(consumer.results[0])))


def fused_tree(root: Operation) -> tuple[list[SSAValue], list[Step]] | None:
    """(inputs, steps) of the whole tree ending at `root`, or None if no producer joins it.

    Iterative post-order walk (a chain can be far deeper than Python's recursion limit):
    each op's steps follow those of the producers it reads; inputs are numbered in order of
    first use."""
    shape = shape_of(root.results[0])
    programs: dict[Operation, tuple[list[SSAValue], list[Step]]] = {}
    joined: set[SSAValue] = set()
    order: list[Operation] = []
    stack: list[tuple[Operation, bool]] = [(root, False)]
    while stack:
        op, expanded = stack.pop()
        if expanded:
            order.append(op)
            continue
        program = as_steps(op)
        assert program is not None
        programs[op] = program
        stack.append((op, True))
        producers = [v for v in dict.fromkeys(program[0]) if joins_consumer(v, shape)]
        joined.update(producers)
        stack.extend((v.owner, False) for v in reversed(producers))
    if len(order) == 1:
        return None
    # Refs >= 0 name inputs; refs < 0 name steps (-1 - j for step j) until renumbered.
    inputs: dict[SSAValue, int] = {}
    steps: list[Step] = []
    result_ref: dict[Operation, int] = {}
    for op in order:
        op_inputs, op_steps = programs[op]
        local = [result_ref[v.owner] if v in joined else inputs.setdefault(v, len(inputs))
                 for v in op_inputs]
        for step in op_steps:
            steps.append(Step(step.op, tuple(local[r] for r in step.refs), step.params))
            local.append(-len(steps))
        result_ref[op] = local[-1]
    n = len(inputs)
    return list(inputs), [
        Step(s.op, tuple(r if r >= 0 else n - 1 - r for r in s.refs), s.params) for s in steps
    ]


class FuseElementwiseChain(RewritePattern):
    """The root of a tree of elementwise ops -> one graph.fused_elementwise for the tree."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter):
        if not is_fusable(op) or not is_tree_root(op):
            return  # a consumer will take it in
        program = fused_tree(op)
        if program is None:
            return
        inputs, steps = program
        rewriter.replace(op, graph.FusedElementwiseOp(
            operands=[inputs], result_types=[op.results[0].type],
            properties={"steps": ArrayAttr([StringAttr(str(s)) for s in steps])}))
