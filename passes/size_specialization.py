"""Ops specialized for sizes given to some of their symbols: types, `#graph.sizes`
properties (back in their static form when the numbers allow), shape data, loop counts and
guards. One routine for the two places that learn sizes:

- fold-constant-ops, when a `graph.bind_sizes` turns out to bind a constant (torchvision's
  transform pads a fixed 320x320 image: its pads come out of a Shape of a Resize of static
  size): the function is specialized and the bind disappears; a guard the numbers break
  makes the model invalid (`fold_bound_sizes`);
- the numpy evaluator, for the sizes the feeds' shapes give and those the run binds
  (passes/evaluator_sizes.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    DictionaryAttr,
    IntegerAttr,
    StringAttr,
    TensorType,
    i64,
)
from xdsl.ir import Attribute, Operation
from xdsl.irdl import ConstraintContext
from xdsl.pattern_rewriter import PatternRewriter
from xdsl.rewriter import Rewriter
from xdsl.utils.exceptions import VerifyException

from onnxc.dialects import graph
from onnxc.dialects.dense_data import element_dtype, from_numpy
from onnxc.dialects.graph import is_symbolic, shape_of
from onnxc.dialects.graph_base import SizesAttr, SymbolicDimsAttr
from onnxc.dialects.graph_checks import GUARDS_ATTR
from onnxc.dialects.layout import layout_of, with_layout
from onnxc.dialects.size_facts import Guard
from onnxc.dialects.size_substitution import substituted
from onnxc.dialects.symbolic_dims import Dim, SymDim
from onnxc.errors import ModelLoadError


def fold_bound_sizes(op: graph.BindSizesOp, values: np.ndarray,
                     rewriter: PatternRewriter) -> None:
    """Specialize the function around `op` with the sizes `values` gives its symbols."""
    sizes: dict[str, Dim] = {name.data: int(v) for name, v in  # type: ignore[attr-defined]
                             zip(op.defines.data, values.reshape(-1), strict=True)}
    function = op.parent_op()
    while function is not None and not isinstance(function, func.FuncOp):
        function = function.parent_op()
    assert function is not None
    specialize_ops([inner for inner in function.walk() if inner is not op], sizes, rewriter)
    _specialize_guards(function, sizes)
    rewriter.erase_op(op)


def specialize_ops(ops: Sequence[Operation], sizes: Mapping[str, Dim],
                   rewriter: PatternRewriter | None = None) -> None:
    """`ops` (a walk, in order) with the symbols `sizes` names replaced by their sizes; then
    the types of the functions among them. A size that names other symbols too stays a size
    expression (a run symbol the evaluator learns only once its op has run)."""
    functions: list[func.FuncOp] = []
    for op in ops:
        _specialize(op, sizes, rewriter)
        if isinstance(op, func.FuncOp) and not op.is_declaration:
            functions.append(op)
    for f in functions:  # once their returns read the new types
        f.update_function_type()


def _retyped(t: Attribute, sizes: Mapping[str, Dim]) -> Attribute:
    if not isinstance(t, TensorType) or not is_symbolic(t):
        return t
    shape = [substituted(d, sizes) for d in shape_of(t)]
    return with_layout(graph.tensor_type(shape, t.get_element_type()), layout_of(t))


def _specialize(op: Operation, sizes: Mapping[str, Dim],
                rewriter: PatternRewriter | None) -> None:
    if isinstance(op, graph.CheckSizesOp):
        guard = op.parsed()
        op.properties["guard"] = StringAttr(f"{substituted(guard.size, sizes)} "
                                            f"{guard.relation} 0")
    for name, prop in list(op.properties.items()):
        if isinstance(prop, SizesAttr) and prop.symbols() & set(sizes):
            op.properties[name] = _sizes_property(op, name, [substituted(d, sizes)
                                                             for d in prop.values()])
        elif isinstance(prop, SymbolicDimsAttr) and isinstance(op, graph.LoopOp):
            count = substituted(op.iteration_count(), sizes)  # type: ignore[arg-type]
            op.properties[name] = IntegerAttr(count, i64) if isinstance(count, int) \
                else SymbolicDimsAttr([count])
    for region in op.regions:
        for block in region.blocks:
            for arg in list(block.args):
                if (new := _retyped(arg.type, sizes)) != arg.type:
                    Rewriter.replace_value_with_new_type(arg, new)
    for r in list(op.results):
        if (new := _retyped(r.type, sizes)) != r.type:
            Rewriter.replace_value_with_new_type(r, new)
    if isinstance(op, graph.SymbolicConstantOp):
        dims = [substituted(d, sizes) for d in op.dims()]
        if all(isinstance(d, int) for d in dims):
            dtype = element_dtype(op.output.type.get_element_type())
            constant = graph.ConstantOp(from_numpy(
                np.asarray(dims, dtype=dtype).reshape(shape_of(op.output))))
            if rewriter is None:
                Rewriter.replace_op(op, constant)
            else:
                rewriter.replace_op(op, constant)
        else:
            op.properties["values"] = ArrayAttr([StringAttr(str(d)) for d in dims])


def _sizes_property(op: Operation, name: str, values: list[Dim]) -> Attribute:
    """The property in its static form when the values are numbers and the op's property
    takes it (TopK's k: an integer; Slice's starts: an i64 array), else the sizes."""
    constraint = type(op).get_irdl_definition().properties[name].constr  # type: ignore[attr-defined]
    forms: list[Attribute] = [SizesAttr(values)]
    if all(isinstance(v, int) for v in values):
        forms[:0] = [DenseArrayBase.from_list(i64, [int(v) for v in values])]
        if len(values) == 1:
            forms[:0] = [IntegerAttr(int(values[0]), i64)]
    for form in forms:
        try:
            constraint.verify(form, ConstraintContext())
        except VerifyException:
            continue
        return form
    return forms[-1]


def _specialize_guards(function: func.FuncOp, sizes: dict[str, Dim]) -> None:
    """The function's guards with the sizes in: one the numbers decide is dropped, or
    makes the model invalid."""
    attr = function.attributes.get(GUARDS_ATTR)
    if not isinstance(attr, ArrayAttr):
        return
    kept = []
    for record in attr.data:
        assert isinstance(record, DictionaryAttr)
        guard = Guard.parse(record.data["guard"].data,  # type: ignore[attr-defined]
                            record.data["reason"].data)  # type: ignore[attr-defined]
        size = substituted(guard.size, sizes)
        if isinstance(size, SymDim):
            kept.append(DictionaryAttr({**record.data, "guard": StringAttr(
                Guard(size, guard.relation, guard.reason).text())}))
        elif not Guard(size, guard.relation, guard.reason).holds({}):
            raise ModelLoadError(f"node '{record.data['node'].data}' "  # type: ignore[attr-defined]
                                 f"({record.data['op_type'].data}): {guard.reason}")  # type: ignore[attr-defined]
    function.attributes[GUARDS_ATTR] = ArrayAttr(kept)


__all__ = ["fold_bound_sizes", "specialize_ops"]
