"""The native entry point's calling convention, shared by the loop-level passes and the runtime.

The entry function (marked `onnxc.entry`) takes, in order: one buffer per graph input
(`onnxc.input_names`), one per graph output (`onnxc.output_names`), one per constant
(`onnxc.constants`, added by `bind-constants`) and the arena (added by `plan-memory`, size in
`onnxc.arena_bytes`). A model with symbolic dimensions also takes the value of each size
symbol (`onnxc.symbols`, a buffer right after the outputs) and, last, a dynamic arena for its
buffers whose sizes depend on them (`onnxc.dynamic_arena`). `emit-entry-wrapper` then exposes it as `int32_t onnxc_entry(void **argv)`
so the runtime calls it with one pointer array, whatever the number of buffers.

The result is 0 after a complete run. Run-time checks of indices and divisors (see
lowering/insert_checks.py) are listed in `onnxc.check_sites`; when check k fails the entry
returns k + 1 at once, and the check's record (failed, position, value: three i64) is at byte
`onnxc.status_offset` of the arena.
"""

from __future__ import annotations

import re

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    ModuleOp,
    StringAttr,
    i64,
)
from xdsl.ir import Attribute, BlockArgument

from onnxc.dialects.dense_data import to_numpy

ENTRY_ATTR = "onnxc.entry"
INPUT_NAMES_ATTR = "onnxc.input_names"
INPUT_DEFAULTS_ATTR = "onnxc.input_defaults"
"""Name -> dense value of the inputs a run may leave out (initializers that are also graph
inputs, IR version >= 4: onnxruntime's overridable initializers)."""
OUTPUT_NAMES_ATTR = "onnxc.output_names"
CONSTANTS_ATTR = "onnxc.constants"
ARENA_BYTES_ATTR = "onnxc.arena_bytes"
INTERMEDIATE_BYTES_ATTR = "onnxc.intermediate_bytes"
INPLACE_BYTES_ATTR = "onnxc.inplace_bytes"
"""Bytes of results that `inplace` wrote over a dying input (counted as intermediates)."""
CHECK_SITES_ATTR = "onnxc.check_sites"
"""One dictionary per run-time check, in site order: kind, node, op_type, operand, ranges."""
CHECK_SITE_ATTR = "onnxc.check_site"
"""On a check kernel's call in the entry: its index in `onnxc.check_sites`."""
CHECK_FALLBACK_ATTR = "onnxc.check_fallback"
"""On the call of a kernel that checks its own indices (a fused check): the check kernel the
entry runs, only when that kernel flagged a bad index, to find the first one."""
NESTED_CHECKS_ATTR = "onnxc.nested_checks"
"""On the check call after a top-level control-flow op with checks inside: the site is not
fixed; the failed check recorded its site + 1 in the cell that is the call's operand 0
(lowering/graph_to_loops/control_flow.py)."""
CHECK_OPERANDS_ATTR = "onnxc.check_operands"
"""On such a call: [the checked operand's position, the status record's position]."""
STATUS_OFFSET_ATTR = "onnxc.status_offset"
SYMBOLS_ATTR = "onnxc.symbols"
"""The size symbols of a model with symbolic dimensions, in the order of the entry's `dims`
buffer (a `memref<Kxi64>` right after the outputs: the value of each symbol this run)."""
RUN_SYMBOLS_ATTR = "onnxc.run_symbols"
"""The symbols among those that the run defines (graph_dynamic.py; a top-level loop's count
when its scan outputs have run-time length). The caller puts the capacity it allocated
their buffers and outputs with in the symbol's `dims` entry; the entry writes the value
there once it is known, or stops at a "capacity" check site when it is larger, and the
caller runs again with enough room."""
RUN_BOUNDS_ATTR = "onnxc.run_bounds"
"""Per run symbol, its bound as a size in the symbols before it ("" for none): the caller
puts that bound's value in the symbol's `dims` entry as its capacity, or, without a bound,
a capacity it grows when a run reports more (graph_dynamic.py)."""
DIMS_ARGUMENT_ATTR = "onnxc.dims_argument"
"""The position of that `dims` buffer among the entry's arguments."""
ELEMENTS_ATTR = "onnxc.elements"
"""On a `memref.alloc` of a buffer with symbolic dimensions: its element count, a polynomial
in the symbols (symbolic_dims.py), which plan-memory sizes the dynamic arena with."""
DYNAMIC_ARENA_ATTR = "onnxc.dynamic_arena"
"""The byte sizes of the dynamic arena's slots, as polynomials: the runtime evaluates them
for a run's symbols to size the dynamic arena (the entry's last argument), and plan-memory
computes the same offsets in the entry from the `dims` buffer."""
WRAPPER_NAME = "onnxc_entry"

_NAME_HINT = re.compile(r"[A-Za-z_][A-Za-z0-9_$.]*")


def entry_function(module: ModuleOp) -> func.FuncOp:
    """The function marked `onnxc.entry`, else the only public function of the module."""
    funcs = [op for op in module.ops if isinstance(op, func.FuncOp)]
    marked = [f for f in funcs if ENTRY_ATTR in f.attributes]
    if marked:
        return marked[0]
    public = [f for f in funcs if f.sym_visibility is None or f.sym_visibility.data == "public"]
    if len(public) != 1:
        raise ValueError(f"cannot tell the entry function: mark it with `{ENTRY_ATTR}`")
    return public[0]


def append_argument(entry: func.FuncOp, arg_type: Attribute, name_hint: str) -> BlockArgument:
    """Add a trailing argument to the entry function and keep its type and arg_attrs in sync."""
    block = entry.body.block
    arg = block.insert_arg(arg_type, len(block.args))
    if _NAME_HINT.fullmatch(name_hint):
        arg.name_hint = name_hint
    entry.update_function_type()
    if entry.arg_attrs is not None:
        entry.arg_attrs = ArrayAttr([*entry.arg_attrs.data, DictionaryAttr({})])
    return arg


def string_list(entry: func.FuncOp, attr_name: str) -> list[str]:
    attr = entry.attributes.get(attr_name)
    if not isinstance(attr, ArrayAttr):
        return []
    return [a.data for a in attr.data if isinstance(a, StringAttr)]


def set_string_list(entry: func.FuncOp, attr_name: str, values: list[str]) -> None:
    entry.attributes[attr_name] = ArrayAttr([StringAttr(v) for v in values])


def input_defaults(entry: func.FuncOp) -> dict[str, np.ndarray]:
    """The default values of the entry's overridable inputs (copies: the IR may go away)."""
    attr = entry.attributes.get(INPUT_DEFAULTS_ATTR)
    if not isinstance(attr, DictionaryAttr):
        return {}
    return {name: to_numpy(value).copy() for name, value in attr.data.items()
            if isinstance(value, DenseIntOrFPElementsAttr)}


def site_attribute(site: dict[str, object]) -> DictionaryAttr:
    """A check site (strings, and `ranges` as [[low, high], ...]) as an attribute."""
    fields: dict[str, Attribute] = {}
    for key, value in site.items():
        if key == "ranges":
            fields[key] = DenseArrayBase.from_list(i64, [v for r in value for v in r])
        else:
            fields[key] = StringAttr(str(value))
    return DictionaryAttr(fields)


def check_sites(entry: func.FuncOp) -> list[dict[str, object]]:
    """The entry's check sites as plain data (what the runtime keeps)."""
    attr = entry.attributes.get(CHECK_SITES_ATTR)
    if not isinstance(attr, ArrayAttr):
        return []
    sites = []
    for site in attr.data:
        assert isinstance(site, DictionaryAttr)
        plain: dict[str, object] = {}
        for key, value in site.data.items():
            if isinstance(value, DenseArrayBase):
                flat = [int(v) for v in value.get_values()]
                plain[key] = [flat[i:i + 2] for i in range(0, len(flat), 2)]
            else:
                plain[key] = value.data  # type: ignore[attr-defined]
        sites.append(plain)
    return sites
