"""Einsum as existing graph ops: reduce_sum, transpose, reshape and (batched) matmul.

Operands are contracted left to right. Before each pairwise step, letters that no later
operand nor the output needs are summed away within one operand; the pair is then laid out
as [batch, free, contracted] x [batch, contracted, free], reshaped to a 3-D batched matmul
and reshaped back. That covers matrix products, batched attention products, inner and outer
products, sums along one operand's axes and transposes; a letter repeated inside one operand
(a diagonal, a trace) is first collapsed with an identity mask. Size-1 broadcasting between
operands is refused.
"""

from __future__ import annotations

import math

import numpy as np
from xdsl.ir import SSAValue

from onnxc.dialects import graph
from onnxc.dialects import graph_shapes as shapes
from onnxc.dialects.dense_data import element_dtype
from onnxc.frontend import onnx_types as types
from onnxc.frontend.onnx_context import NodeContext, Result, Tensor
from onnxc.frontend.onnx_ops_reduce import check_element, emit, reduce, reshape

_ELLIPSIS_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def parse_equation(ctx: NodeContext, equation: str, ranks: list[int]) -> tuple[list[str], str]:
    """Operand and output subscripts with any ellipsis spelled out as upper-case letters
    (right-aligned across operands, as broadcasting aligns them)."""
    equation = equation.replace(" ", "")
    lhs, arrow, rhs = equation.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ranks):
        raise ctx.invalid(f"equation '{equation}' has {len(terms)} operands, node has "
                          f"{len(ranks)}")
    widest = 0
    expanded = []
    for term, rank in zip(terms, ranks):
        if "..." in term:
            width = rank - (len(term) - 3)
            if width < 0:
                raise ctx.invalid(f"term '{term}' does not fit rank {rank}")
            widest = max(widest, width)
            term = term.replace("...", _ELLIPSIS_LETTERS[26 - width:] if width else "")
        if len(term) != rank or not all(c.isalpha() for c in term):
            raise ctx.invalid(f"term '{term}' does not match rank {rank}")
        expanded.append(term)
    broadcast = _ELLIPSIS_LETTERS[26 - widest:] if widest else ""
    if arrow:
        output = rhs.replace("...", broadcast)
    else:
        counts = "".join(expanded)
        output = broadcast + "".join(sorted(c for c in set(counts) if c.islower()
                                            and counts.count(c) == 1))
    if len(set(output)) != len(output) or any(c not in "".join(expanded) for c in output):
        raise ctx.invalid(f"bad output subscripts '{rhs}'")
    return expanded, output


def _transpose(ctx: NodeContext, x: SSAValue, letters: str, order: str) -> SSAValue:
    if letters == order:
        return x
    perm = [letters.index(c) for c in order]
    out = shapes.transpose_shape(graph.shape_of(x), perm)
    return emit(ctx, graph.TransposeOp, [x], out, x.type.get_element_type(),
                {"perm": types.i64_array(perm)})


def _sum_away(ctx: NodeContext, x: SSAValue, letters: str, keep: set[str]) -> tuple[SSAValue,
                                                                                    str]:
    axes = [i for i, c in enumerate(letters) if c not in keep]
    if not axes:
        return x, letters
    return (reduce(ctx, graph.ReduceSumOp, x, axes, False),
            "".join(c for c in letters if c in keep))


def _diagonal(ctx: NodeContext, x: SSAValue, letters: str) -> tuple[SSAValue, str]:
    """Collapse each repeated subscript of one operand to its diagonal: x times an identity
    mask over the two axes, summed over the second (exact: the other terms add zeros)."""
    while len(set(letters)) != len(letters):
        c = next(c for c in letters if letters.count(c) > 1)
        p = letters.index(c)
        q = letters.index(c, p + 1)
        shape = graph.shape_of(x)
        mask_shape = [1] * len(shape)
        mask_shape[p], mask_shape[q] = shape[p], shape[q]
        el = x.type.get_element_type()
        mask = np.eye(shape[p], dtype=element_dtype(el)).reshape(mask_shape)
        masked = emit(ctx, graph.MulOp, [x, ctx.materialize(Tensor.of_array(mask))], shape, el)
        x = reduce(ctx, graph.ReduceSumOp, masked, [q], False)
        letters = letters[:q] + letters[q + 1:]
    return x, letters


def _contract(ctx: NodeContext, a: SSAValue, la: str, b: SSAValue, lb: str, keep: set[str],
              size: dict[str, int], order: str) -> tuple[SSAValue, str]:
    """a x b as one matmul over [batch, free, contracted] x [batch, contracted, free]; the
    operands swap when that gives the letters in `order` (the output's) directly."""
    batch = "".join(c for c in la if c in lb and c in keep)
    inner = "".join(c for c in la if c in lb and c not in keep)
    a_free = "".join(c for c in la if c not in lb)
    b_free = "".join(c for c in lb if c not in la)
    if "".join(c for c in order if c in la + lb) == batch + b_free + a_free:
        a, la, b, lb, a_free, b_free = b, lb, a, la, b_free, a_free

    def extent(letters: str) -> int:
        return math.prod(size[c] for c in letters)

    lead = (extent(batch),) if batch else ()
    a3 = reshape(ctx, _transpose(ctx, a, la, batch + a_free + inner),
                 (*lead, extent(a_free), extent(inner)))
    b3 = reshape(ctx, _transpose(ctx, b, lb, batch + inner + b_free),
                 (*lead, extent(inner), extent(b_free)))
    out3 = (*lead, extent(a_free), extent(b_free))
    product = emit(ctx, graph.MatMulOp, [a3, b3], out3, a.type.get_element_type())
    letters = batch + a_free + b_free
    return reshape(ctx, product, tuple(size[c] for c in letters)), letters


def convert_einsum(ctx: NodeContext) -> list[Result]:
    check_element(ctx, 0, floats_only=True)
    operands = ctx.operands()
    terms, output = parse_equation(ctx, ctx.attr("equation"), [len(graph.shape_of(v))
                                                              for v in operands])
    size: dict[str, int] = {}
    for term, value in zip(terms, operands):
        for c, d in zip(term, graph.shape_of(value)):
            if size.setdefault(c, d) != d:
                raise ctx.unsupported(f"subscript '{c}' has sizes {size[c]} and {d} "
                                      f"(broadcasting)")
    for i, (value, term) in enumerate(zip(operands, terms)):
        operands[i], terms[i] = _diagonal(ctx, value, term)
    acc, letters = operands[0], terms[0]
    for i in range(1, len(operands) + 1):
        later = set(output).union(*terms[i:])
        acc, letters = _sum_away(ctx, acc, letters, later)
        if i == len(operands):
            break
        other, other_letters = _sum_away(ctx, operands[i], terms[i],
                                         set(output).union(*terms[i + 1:], letters))
        acc, letters = _contract(ctx, acc, letters, other, other_letters,
                                 set(output).union(*terms[i + 1:]), size, output)
    return [_transpose(ctx, acc, letters, output)]


CONVERTERS = {"Einsum": convert_einsum}
