"""The native entry point's calling convention, shared by the loop-level passes and the runtime.

The entry function (marked `onnxc.entry`) takes, in order: one buffer per graph input
(`onnxc.input_names`), one per graph output (`onnxc.output_names`), one per constant
(`onnxc.constants`, added by `bind-constants`) and the arena (added by `plan-memory`, size in
`onnxc.arena_bytes`). A model with symbolic dimensions also takes the value of each size
symbol (`onnxc.symbols`, a buffer right after the outputs) and, last, a dynamic arena for its
buffers whose sizes depend on them (`onnxc.dynamic_arena`). `emit-entry-wrapper` then
exposes it as `int32_t onnxc_entry(void **argv)` so the runtime calls it with one pointer
array, whatever the number of buffers. Every `onnxc.*` attribute is registered and verified
in dialects/onnxc_attributes.py.

The result is 0 after a complete run. Run-time checks of indices and divisors (see
passes/insert_checks.py) are listed in `onnxc.check_sites`; when check k fails the entry
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
from onnxc.dialects.onnxc_attributes import (  # noqa: F401 - the entry ABI's names
    ARENA_BYTES_ATTR,
    CHECK_FALLBACK_ATTR,
    CHECK_OPERANDS_ATTR,
    CHECK_SITE_ATTR,
    CHECK_SITES_ATTR,
    CONSTANTS_ATTR,
    DIMS_ARGUMENT_ATTR,
    DYNAMIC_ARENA_ATTR,
    ELEMENTS_ATTR,
    ENTRY_ATTR,
    INPLACE_BYTES_ATTR,
    INPUT_DEFAULTS_ATTR,
    INPUT_NAMES_ATTR,
    INTERMEDIATE_BYTES_ATTR,
    NESTED_CHECKS_ATTR,
    OUTPUT_NAMES_ATTR,
    PROFILE_OFFSET_ATTR,
    PROFILE_SITES_ATTR,
    RUN_BOUNDS_ATTR,
    RUN_SYMBOLS_ATTR,
    STATUS_OFFSET_ATTR,
    SYMBOLS_ATTR,
)

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


def profile_sites(entry: func.FuncOp) -> list[dict[str, str]]:
    """The entry's profiled call sites (`profile-kernel-calls`) as plain strings."""
    attr = entry.attributes.get(PROFILE_SITES_ATTR)
    if not isinstance(attr, ArrayAttr):
        return []
    return [{key: value.data for key, value in site.data.items()}  # type: ignore[attr-defined]
            for site in attr.data if isinstance(site, DictionaryAttr)]


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
