"""Sizes for the evaluator: symbolic types made static by the values the feeds' shapes give
their symbols (`specialized`), and run symbols bound when the run computes them
(graph.bind_sizes, or the result shapes of an op that defines them, graph.nonzero: the ops
after it are specialized in place)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.dialects.func import FuncOp
from xdsl.ir import Operation

from onnxc.dialects import graph
from onnxc.dialects.graph import is_symbolic, shape_of
from onnxc.dialects.symbolic_dims import SymDim, evaluate_shape
from onnxc.errors import InvalidInputError
from onnxc.passes.size_specialization import specialize_ops


def has_symbolic_types(func: FuncOp) -> bool:
    """Whether any value of `func` has a type with symbolic dimensions."""
    return any(isinstance(a.type, TensorType) and is_symbolic(a.type) for a in func.args) or any(
        isinstance(r.type, TensorType) and is_symbolic(r.type)
        for op in func.walk() for r in op.results)


def _lone_symbol(d) -> str | None:
    """`seq` for the dimension `seq` (one symbol, coefficient 1), else None."""
    if isinstance(d, SymDim) and len(d.symbols()) == 1:
        name = next(iter(d.symbols()))
        if d == SymDim.symbol(name):
            return name
    return None


def bind_symbols(func: FuncOp, arrays: Sequence[np.ndarray]) -> dict[str, int]:
    """The size of every symbol of `func`'s argument types, read from the `arrays` fed to
    them (a dimension that is one symbol binds it; every dimension must then agree)."""
    values: dict[str, int] = {}
    args = [(a, np.shape(x)) for a, x in zip(func.args, arrays)]
    for arg, actual in args:
        shape = shape_of(arg) if isinstance(arg.type, TensorType) else ()
        for d, n in zip(shape, actual):
            name = _lone_symbol(d)
            if name is not None and values.setdefault(name, n) != n:
                raise InvalidInputError(f"symbol '{name}' is {values[name]} and {n} in the "
                                        f"shapes of the inputs")
    for arg, actual in args:
        if not isinstance(arg.type, TensorType):
            continue
        shape = shape_of(arg)
        unbound = {s for d in shape if isinstance(d, SymDim) for s in d.symbols()} - set(values)
        if unbound:
            raise InvalidInputError(f"no input dimension gives the size of "
                                    f"{', '.join(sorted(unbound))}")
        if len(shape) != len(actual) or evaluate_shape(shape, values) != tuple(actual):
            expected = ", ".join(map(str, shape))
            raise InvalidInputError(f"input shape {tuple(actual)} does not fit ({expected})")
    return values


def specialized(module_or_func: ModuleOp | FuncOp, values: Mapping[str, int]):
    """A copy of `module_or_func` whose symbolic types are the static types of the sizes
    `values` gives the symbols: the evaluator runs it as any static module."""
    copy = module_or_func.clone()
    specialize_ops(list(copy.walk()), values)
    return copy


def bind_result_sizes(op: graph.DefinesSizes, results: Sequence[np.ndarray],
                      values: dict[str, int]) -> None:
    """The run symbols `op` defines, read from its results' shapes where a dimension is
    one of them (NonZero's count), added to `values` and the later ops specialized."""
    defined = {name.data for name in op.defines.data}
    found: dict[str, int] = {}
    for r, array in zip(op.results, results, strict=True):
        for d, n in zip(shape_of(r), np.shape(array)):
            name = _lone_symbol(d)
            if name in defined:
                found[name] = int(n)
    if found:
        values.update(found)
        _specialize_after(op, values)


def bind_run_sizes(op: graph.BindSizesOp, array: np.ndarray, values: dict[str, int]) -> None:
    """The sizes `op` binds (the run computed `array`) added to `values`, and the ops after
    it in its block specialized with them (in place: the evaluator runs a copy)."""
    for name, size in zip(op.defines.data, np.asarray(array).reshape(-1), strict=True):
        values[name.data] = int(size)
    _specialize_after(op, values)


def _specialize_after(op: Operation, values: Mapping[str, int]) -> None:
    later: list[Operation] = []
    after = op.next_op
    while after is not None:
        later += list(after.walk())
        after = after.next_op
    specialize_ops(later, values)
