"""`bind-constants`: constants become entry-function arguments that the runtime binds.

Weights are data, not code: embedding 100 MB of them in LLVM IR would make compilation and the
object cache as large as the model. Instead every `memref.global` read by the entry function
becomes one more entry argument (listed in `onnxc.constants`), and the runtime passes a pointer
to the constant's bytes, which it takes from the same dense attribute (`constant_arrays`)
before this pass deletes the globals.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects import memref
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    MemRefType,
    ModuleOp,
)
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from onnxc.dialects.dense_data import element_dtype
from onnxc.errors import LoweringError
from onnxc.lowering.entry_abi import (
    CONSTANTS_ATTR,
    append_argument,
    entry_function,
    set_string_list,
    string_list,
)


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
        data = np.frombuffer(value.data.data, dtype=numpy_dtype(t.get_element_type()))
        arrays[op.sym_name.data] = data.reshape(t.get_shape())
    return arrays


@dataclass(frozen=True)
class BindConstantsPass(ModulePass):
    """Turn the entry function's `memref.get_global`s into trailing arguments."""

    name = "bind-constants"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        entry = entry_function(op)
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
