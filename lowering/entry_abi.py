"""The native entry point's calling convention, shared by the loop-level passes and the runtime.

The entry function (marked `onnxc.entry`) takes, in order: one buffer per graph input
(`onnxc.input_names`), one per graph output (`onnxc.output_names`), one per constant
(`onnxc.constants`, added by `bind-constants`) and the arena (added by `plan-memory`, size in
`onnxc.arena_bytes`). `emit-entry-wrapper` then exposes it as `onnxc_entry(void **argv)` so
the runtime calls it with one pointer array, whatever the number of buffers.
"""

from __future__ import annotations

import re

from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, ModuleOp, StringAttr
from xdsl.ir import Attribute, BlockArgument

ENTRY_ATTR = "onnxc.entry"
INPUT_NAMES_ATTR = "onnxc.input_names"
OUTPUT_NAMES_ATTR = "onnxc.output_names"
CONSTANTS_ATTR = "onnxc.constants"
ARENA_BYTES_ATTR = "onnxc.arena_bytes"
INTERMEDIATE_BYTES_ATTR = "onnxc.intermediate_bytes"
INPLACE_BYTES_ATTR = "onnxc.inplace_bytes"
"""Bytes of results that `inplace` wrote over a dying input (counted as intermediates)."""
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
