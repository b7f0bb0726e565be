"""Graph-op building for importers that decompose one ONNX node into several graph ops.

Operands are SSA values or numpy arrays; an op whose operands are all arrays is computed
in numpy at import (the masks and position tables of Attention / RotaryEmbedding are mostly
compile-time data), otherwise the arrays become constants and the op is emitted with its
result type inferred by the op's own shape rule.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from xdsl.dialects.builtin import IntegerType, i1
from xdsl.ir import Attribute, SSAValue

from onnxc.dialects import graph
from onnxc.dialects.dense_data import element_dtype
from onnxc.dialects.symbolic_dims import Dim, SymbolicDimError, SymDim
from onnxc.frontend import onnx_types as types
from onnxc.frontend.onnx_context import NodeContext, Tensor

Value = SSAValue | np.ndarray


def shape(v: Value) -> tuple[Dim, ...]:
    return tuple(v.shape) if isinstance(v, np.ndarray) else graph.shape_of(v)


def is_bool(el: Attribute) -> bool:
    return isinstance(el, IntegerType) and el.width.data == 1


class GraphBuilder:
    """Emits graph ops for one node (`ctx`); `el` is the node's float element type."""

    def __init__(self, ctx: NodeContext, el: Attribute):
        self.ctx = ctx
        self.el = el
        self.dtype = element_dtype(el)

    # ------------------------------------------------------------------ values

    def value(self, v: Value | Tensor) -> SSAValue:
        if isinstance(v, Tensor):
            return self.ctx.materialize(v)
        if isinstance(v, np.ndarray):
            return self.ctx.materialize(Tensor.of_array(v))
        return v

    def input(self, i: int) -> Value:
        """Input `i` as its constant data when known, its SSA value otherwise."""
        t = self.ctx.tensor(i)
        return t.array if t.array is not None else self.ctx.materialize(t)

    def floats(self, array) -> np.ndarray:
        return np.asarray(array).astype(self.dtype)

    def emit(self, op_class, operands: Sequence[Value], el: Attribute | None = None,
             **props) -> SSAValue:
        """`op_class(operands)` with properties `props` and element type `el` (default: the
        first operand's), its shape inferred by the op."""
        ssa = [self.value(v) for v in operands]
        if el is None:
            el = ssa[0].type.get_element_type()
        if op_class is graph.ConcatOp:
            ssa = [ssa]  # one variadic operand
        probe = op_class(operands=ssa, result_types=[types.tensor_type((), el)],
                         properties=props)
        try:
            out = tuple(probe.infer_shapes()[0])
        except SymbolicDimError as err:
            raise self.ctx.symbolic(err) from err
        except (ValueError, IndexError) as err:
            raise self.ctx.invalid(str(err)) from err
        finally:
            probe.erase()  # it registered itself as a use of the operands
        return self.ctx.emit1(op_class(operands=ssa, result_types=[types.tensor_type(out, el)],
                                       properties=props))

    def _fold_or_emit(self, fold: Callable[..., np.ndarray], op_class,
                      operands: Sequence[Value], el: Attribute | None = None,
                      **props) -> Value:
        if all(isinstance(v, np.ndarray) for v in operands):
            return fold(*operands)
        return self.emit(op_class, operands, el, **props)

    # ------------------------------------------------------------------ arithmetic

    def add(self, a: Value, b: Value) -> Value:
        return self._fold_or_emit(lambda x, y: (x + y).astype(x.dtype), graph.AddOp, [a, b])

    def sub(self, a: Value, b: Value) -> Value:
        return self._fold_or_emit(lambda x, y: (x - y).astype(x.dtype), graph.SubOp, [a, b])

    def mul(self, a: Value, b: Value) -> Value:
        return self._fold_or_emit(lambda x, y: (x * y).astype(x.dtype), graph.MulOp, [a, b])

    def div(self, a: Value, b: Value) -> Value:
        return self._fold_or_emit(lambda x, y: (x / y).astype(x.dtype), graph.DivOp, [a, b])

    def tanh(self, a: Value) -> Value:
        return self._fold_or_emit(lambda x: np.tanh(x).astype(x.dtype), graph.TanhOp, [a])

    def matmul(self, a: Value, b: Value) -> SSAValue:
        return self.emit(graph.MatMulOp, [a, b])

    def softmax_last(self, a: Value) -> SSAValue:
        return self.emit(graph.SoftmaxOp, [a], axis=types.i64_attr(-1))

    # ------------------------------------------------------------------ logic

    def less_equal(self, a: Value, b: Value) -> Value:
        return self._fold_or_emit(np.less_equal, graph.LessOrEqualOp, [a, b], i1)

    def less(self, a: Value, b: Value) -> Value:
        return self._fold_or_emit(np.less, graph.LessOp, [a, b], i1)

    def and_(self, a: Value, b: Value) -> Value:
        return self._fold_or_emit(np.logical_and, graph.AndOp, [a, b], i1)

    def where(self, cond: Value, a: Value, b: Value) -> Value:
        def fold(c, x, y):
            return np.where(c, x, y).astype(np.result_type(x, y))

        if all(isinstance(v, np.ndarray) for v in (cond, a, b)):
            return fold(cond, a, b)
        el = next(v.type.get_element_type() for v in (a, b) if isinstance(v, SSAValue)) \
            if any(isinstance(v, SSAValue) for v in (a, b)) else self.el
        return self.emit(graph.WhereOp, [cond, a, b], el)

    def all_neg_inf_rows(self, bias: Value) -> Value:
        """[..., q, 1] True where a row of `bias` is -inf everywhere (no attendable key)."""
        if isinstance(bias, np.ndarray):
            return np.isneginf(bias.max(axis=-1, keepdims=True))
        top = self.emit(graph.ReduceMaxOp, [bias], axes=types.i64_array([-1]),
                        keepdims=types.i64_attr(1))
        return self.emit(graph.IsInfOp, [top], i1, detect_positive=types.i64_attr(0),
                         detect_negative=types.i64_attr(1))

    # ------------------------------------------------------------------ movement

    def reshape(self, a: Value, new_shape: Sequence[Dim]) -> Value:
        new_shape = tuple(d if isinstance(d, SymDim) else int(d) for d in new_shape)
        if isinstance(a, np.ndarray):
            return a.reshape(new_shape)
        if shape(a) == new_shape:
            return a
        out = types.tensor_type(new_shape, a.type.get_element_type())
        return self.ctx.emit1(graph.ReshapeOp(operands=[a], result_types=[out]))

    def transpose(self, a: Value, perm: Sequence[int]) -> Value:
        if list(perm) == list(range(len(perm))):
            return a
        if isinstance(a, np.ndarray):
            return np.ascontiguousarray(a.transpose(perm))
        return self.emit(graph.TransposeOp, [a], perm=types.i64_array(perm))

    def concat(self, parts: Sequence[Value], axis: int) -> Value:
        if len(parts) == 1:
            return parts[0]
        return self._fold_or_emit(lambda *xs: np.concatenate(xs, axis=axis), graph.ConcatOp,
                                  parts, axis=types.i64_attr(axis))

    def slice_last(self, a: Value, start: int, end: int, step: int = 1) -> Value:
        if isinstance(a, np.ndarray):
            return np.ascontiguousarray(a[..., start:end:step])
        rank = len(shape(a))
        return self.emit(graph.SliceOp, [a], starts=types.i64_array([start]),
                         ends=types.i64_array([end]), axes=types.i64_array([rank - 1]),
                         steps=types.i64_array([step]))

    def gather0(self, data: Value, indices: Value) -> Value:
        if isinstance(data, np.ndarray) and isinstance(indices, np.ndarray):
            n = data.shape[0]
            if np.any((indices < -n) | (indices >= n)):
                raise self.ctx.invalid(f"position ids out of range [0, {n})")
            return data[indices]
        return self.emit(graph.GatherOp, [data, indices], axis=types.i64_attr(0))
