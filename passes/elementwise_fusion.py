"""`fuse-elementwise`: trees of float elementwise ops become one `graph.fused_elementwise`.

Per-tensor ui8/i8 Quantize/Dequantize join the trees too, so QDQ's DQ(a) + DQ(b) ->
Relu -> Q (a residual add) is one loop reading and writing 8-bit tensors.

Every fusable op has a scalar meaning (fusion_scalar.SCALAR_MEANINGS); the fused op's body
is those scalar ops, wired as the tree is (a fused op read by the tree is inlined). A producer
belongs in its consumer's fused op when the producer's result has no other user and the
consumer does not broadcast it to a larger shape (which would repeat the producer's work
per broadcast element). The tree of ops joined that way becomes one op whose kernel is a
single loop nest: one pass over memory instead of one per op.

The pattern builds each tree in one rewrite, at its root (the op that does not itself go
into a consumer): merging one producer at a time would re-clone the growing body at every
step, quadratic in the length of a chain (a 1,000-op chain took seconds).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.ir import Block, Operation, SSAValue
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)

from onnxc.dialects import graph
from onnxc.dialects.graph import shape_of
from onnxc.passes.base import GraphPatternPass
from onnxc.passes.constants import single_use
from onnxc.passes.fusion_scalar import BodyBuilder, Meaning, is_fusable, scalar_meaning


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


def fused_tree(root: Operation) -> graph.FusedElementwiseOp | None:
    """One graph.fused_elementwise for the whole tree ending at `root`, or None if no
    producer joins it.

    Iterative post-order walk (a chain can be far deeper than Python's recursion limit):
    each op's scalar ops follow those of the producers it reads; inputs (the block's
    arguments) are numbered in order of first use."""
    shape = shape_of(root.results[0])
    meanings: dict[Operation, Meaning] = {}
    joined: set[SSAValue] = set()
    order: list[Operation] = []
    stack: list[tuple[Operation, bool]] = [(root, False)]
    while stack:
        op, expanded = stack.pop()
        if expanded:
            order.append(op)
            continue
        meaning = scalar_meaning(op)
        assert meaning is not None
        meanings[op] = meaning
        stack.append((op, True))
        producers = [v for v in dict.fromkeys(meaning[0]) if joins_consumer(v, shape)]
        joined.update(producers)
        stack.extend((v.owner, False) for v in reversed(producers))
    if len(order) == 1:
        return None
    block = Block()
    builder = BodyBuilder(block)
    inputs: dict[SSAValue, SSAValue] = {}
    element: dict[Operation, SSAValue] = {}

    def argument(v: SSAValue) -> SSAValue:
        if v not in inputs:
            inputs[v] = block.insert_arg(v.type.get_element_type(), len(inputs))
        return inputs[v]

    for op in order:
        operands, emit = meanings[op]
        args = [element[v.owner] if v in joined else argument(v) for v in operands]
        element[op] = emit(builder, args)
    block.add_op(graph.YieldOp(element[root]))
    return graph.FusedElementwiseOp(list(inputs), root.results[0].type, block)


class FuseElementwiseChain(RewritePattern):
    """The root of a tree of elementwise ops -> one graph.fused_elementwise for the tree."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter):
        if not is_fusable(op) or not is_tree_root(op):
            return  # a consumer will take it in
        fused = fused_tree(op)
        if fused is not None:
            rewriter.replace(op, fused)


@dataclass(frozen=True)
class FuseElementwisePass(GraphPatternPass):
    """Fuse each tree of elementwise ops into one graph.fused_elementwise: one pass over memory."""

    name = "fuse-elementwise"
    patterns = (FuseElementwiseChain,)
