"""`bind-constants`: constants become entry-function arguments that the runtime binds.

Weights are data, not code: embedding 100 MB of them in LLVM IR would make compilation and the
object cache as large as the model. Instead every `memref.global` read by the entry function
becomes one more entry argument (listed in `onnxc.constants`), and the runtime passes a pointer
to the constant's bytes, which it takes from the same dense attribute (`constant_arrays`)
before this pass deletes the globals.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func, memref
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseIntOrFPElementsAttr,
    FunctionType,
    MemRefType,
    ModuleOp,
)
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from onnxc.dialects.dense_data import element_dtype, flat_values
from onnxc.dialects.entry_abi import (
    CONSTANTS_ATTR,
    append_argument,
    entry_function,
    set_string_list,
    string_list,
)
from onnxc.errors import LoweringError
from onnxc.lowering.inplace import INPLACE_ATTR


def numpy_dtype(element_type) -> np.dtype:
    """The numpy dtype with the same bytes as an MLIR element type."""
    try:
        return element_dtype(element_type)
    except ValueError as err:
        raise LoweringError(str(err)) from None


def constant_arrays(module: ModuleOp) -> dict[str, np.ndarray]:
    """Zero-copy numpy views of every initialised `memref.global`, by symbol name."""
    arrays: dict[str, np.ndarray] = {}
    for op in module.ops:
        if not isinstance(op, memref.GlobalOp):
            continue
        value = op.initial_value
        if not isinstance(value, DenseIntOrFPElementsAttr):
            raise LoweringError(f"global @{op.sym_name.data} has no dense initial value")
        t = op.type
        assert isinstance(t, MemRefType)
        try:
            data = flat_values(value)
        except ValueError as err:
            raise LoweringError(str(err)) from None
        arrays[op.sym_name.data] = data.reshape(t.get_shape())
    return arrays


def drop_unread_constant_arguments(module: ModuleOp, entry: func.FuncOp) -> None:
    """A kernel argument its body never reads, passed a constant by every call, is removed
    from the kernel and its calls: a weight the kernel only takes in a compile-time re-laid
    form (the NHWC conv's packed copy) is then not bound, so it is not kept twice. Kernels
    whose calls carry operand positions (in-place marks) are left alone."""
    kernels = {o.sym_name.data: o for o in module.ops
               if isinstance(o, func.FuncOp) and o is not entry and o.body.blocks}
    calls: dict[str, list[func.CallOp]] = {}
    for call in entry.walk():
        if isinstance(call, func.CallOp):
            calls.setdefault(call.callee.root_reference.data, []).append(call)
    for name, sites in calls.items():
        kernel = kernels.get(name)
        if kernel is None or any(INPLACE_ATTR in c.attributes for c in sites):
            continue
        block = kernel.body.block
        unread = [
            i for i, arg in enumerate(block.args)
            if not arg.uses and all(
                isinstance(c.arguments[i].owner, memref.GetGlobalOp) for c in sites)
        ]
        if not unread:
            continue
        for call in sites:
            kept = [a for i, a in enumerate(call.arguments) if i not in unread]
            new = func.CallOp(call.callee, kept, list(call.res.types))
            new.attributes.update(call.attributes)
            new.location = call.location  # the ONNX node: errors and profiles name it
            Rewriter.replace_op(call, new)
        erase_arguments(kernel, unread)
    dropped = set()
    for get in [o for o in entry.walk() if isinstance(o, memref.GetGlobalOp)]:
        if not get.memref.uses:
            dropped.add(get.name_.root_reference.data)
            Rewriter.erase_op(get)
    still_read = {o.name_.root_reference.data for o in module.walk()
                  if isinstance(o, memref.GetGlobalOp)}
    for g in [o for o in module.ops if isinstance(o, memref.GlobalOp)]:
        if g.sym_name.data in dropped - still_read:
            Rewriter.erase_op(g)


def erase_arguments(kernel: func.FuncOp, positions: Sequence[int]) -> None:
    """Remove the (unused) arguments at `positions` from `kernel`: block, type, attributes."""
    block = kernel.body.block
    for i in sorted(positions, reverse=True):
        block.erase_arg(block.args[i])
    kernel.function_type = FunctionType.from_lists(
        [a.type for a in block.args], list(kernel.function_type.outputs.data))
    if kernel.arg_attrs is not None:
        kernel.arg_attrs = ArrayAttr(
            [a for i, a in enumerate(kernel.arg_attrs.data) if i not in positions])


@dataclass(frozen=True)
class BindConstantsPass(ModulePass):
    """Turn the entry function's `memref.get_global`s into trailing arguments."""

    name = "bind-constants"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        entry = entry_function(op)
        drop_unread_constant_arguments(op, entry)
        names = string_list(entry, CONSTANTS_ATTR)
        bound = {}
        for get in [o for o in entry.walk() if isinstance(o, memref.GetGlobalOp)]:
            symbol = get.name_.root_reference.data
            if symbol not in bound:
                bound[symbol] = append_argument(entry, get.memref.type, symbol)
                names.append(symbol)
            get.memref.replace_all_uses_with(bound[symbol])
            Rewriter.erase_op(get)
        set_string_list(entry, CONSTANTS_ATTR, names)
        for g in [o for o in op.ops if isinstance(o, memref.GlobalOp)]:
            if g.sym_name.data in bound:
                Rewriter.erase_op(g)
