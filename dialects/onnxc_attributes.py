"""The `onnxc` attribute dialect: every `onnxc.*` attribute the compiler puts on IR, verified.

MLIR lets a dialect own discardable attributes named after it and verify them
(`Dialect::verifyOperationAttribute`); xDSL has no such hook, so the pass manager calls
`verify_onnxc_attributes` wherever it verifies a module (pass_manager/verifier.py
`verify_module`). Each attribute is registered once here, with what it may hold and the ops
it may sit on; an unregistered `onnxc.*` name, a value of the wrong kind or one on the wrong
op is a VerifyException naming the op and the attribute, instead of being read back later
with a default of 0 (the entry ABI: dialects/entry_abi.py; the runtime reads it as a
ModelABI, runtime/model_abi.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    UnitAttr,
)
from xdsl.ir import Attribute, Dialect, Operation
from xdsl.utils.exceptions import VerifyException

from onnxc.target import TARGET_ATTR

PREFIX = "onnxc."

# the entry function's calling convention (dialects/entry_abi.py says how it is used)
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
PROFILE_SITES_ATTR = "onnxc.profile_sites"
"""One dictionary of strings per timed kernel call of the entry (`compile(profile=True)`,
lowering/profile_calls.py): kernel, op, node, inputs, outputs."""
PROFILE_OFFSET_ATTR = "onnxc.profile_offset"
"""Byte offset in the arena of the profile counters: two i64 (ticks, calls) per site, then
the entry's own."""
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

# on kernels, loops, buffers and graph ops
GUARDS_ATTR = "onnxc.size_guards"
"""On a graph function: the guards its import recorded, one dictionary each (`guard`,
`reason`, `node`, `op_type`), which insert-runtime-checks turns into graph.check_sizes."""
INPLACE_ATTR = "onnxc.inplace_operands"
"""On a kernel call: operand positions whose buffer the (single) result may overwrite."""
KERNEL_ATTR = "onnxc.kernel"
PARALLEL_ATTR = "onnxc.parallel"
"""Unit attribute on an `scf.for` whose iterations are independent (see parallel_for)."""
PRECISION_ATTR = "onnxc.precision"
"""Discardable attribute on a graph op: "bf16" when its products run in bf16."""
WIDENED_ATTR = "onnxc.widened"
"""Marks the casts this pass inserts (the only ones `f32-between-ops` may drop)."""


def _unit(a: Attribute) -> bool:
    return isinstance(a, UnitAttr)


def _int(a: Attribute) -> bool:
    return isinstance(a, IntegerAttr)


def _string(a: Attribute) -> bool:
    return isinstance(a, StringAttr)


def _array_of(check: Callable[[Attribute], bool]) -> Callable[[Attribute], bool]:
    return lambda a: isinstance(a, ArrayAttr) and all(check(x) for x in a.data)


def _dict(a: Attribute) -> bool:
    return isinstance(a, DictionaryAttr)


def _dense_dict(a: Attribute) -> bool:
    return isinstance(a, DictionaryAttr) and all(
        isinstance(v, DenseIntOrFPElementsAttr) for v in a.data.values())


@dataclass(frozen=True)
class OnnxcAttribute:
    """One registered `onnxc.*` attribute."""

    name: str
    holds: str
    """what its value is, in words (the error message says it)"""
    check: Callable[[Attribute], bool]
    on: tuple[str, ...] = ()
    """the op names it may sit on (empty: any op)"""


_FUNC = ("func.func", "llvm.func")  # func-to-llvm keeps a function's attributes
_MODULE, _CALL = ("builtin.module",), ("func.call", "llvm.call")
_REGISTERED = (
    # the entry function's calling convention (dialects/entry_abi.py)
    OnnxcAttribute(ENTRY_ATTR, "a unit attribute", _unit, _FUNC),
    OnnxcAttribute(INPUT_NAMES_ATTR, "an array of strings", _array_of(_string), _FUNC),
    OnnxcAttribute(OUTPUT_NAMES_ATTR, "an array of strings", _array_of(_string), _FUNC),
    OnnxcAttribute(INPUT_DEFAULTS_ATTR, "a dictionary of dense elements", _dense_dict,
                   _FUNC),
    OnnxcAttribute(CONSTANTS_ATTR, "an array of strings", _array_of(_string), _FUNC),
    OnnxcAttribute(ARENA_BYTES_ATTR, "an integer", _int, _FUNC),
    OnnxcAttribute(INTERMEDIATE_BYTES_ATTR, "an integer", _int, _FUNC),
    OnnxcAttribute(INPLACE_BYTES_ATTR, "an integer", _int, _FUNC),
    OnnxcAttribute(STATUS_OFFSET_ATTR, "an integer", _int, _FUNC),
    OnnxcAttribute(CHECK_SITES_ATTR, "an array of dictionaries", _array_of(_dict), _FUNC),
    OnnxcAttribute(PROFILE_SITES_ATTR, "an array of dictionaries", _array_of(_dict), _FUNC),
    OnnxcAttribute(PROFILE_OFFSET_ATTR, "an integer", _int, _FUNC),
    OnnxcAttribute(SYMBOLS_ATTR, "an array of strings", _array_of(_string), _FUNC),
    OnnxcAttribute(RUN_SYMBOLS_ATTR, "an array of strings", _array_of(_string), _FUNC),
    OnnxcAttribute(RUN_BOUNDS_ATTR, "an array of strings", _array_of(_string), _FUNC),
    OnnxcAttribute(DIMS_ARGUMENT_ATTR, "an integer", _int, _FUNC),
    OnnxcAttribute(DYNAMIC_ARENA_ATTR, "an array of strings", _array_of(_string), _FUNC),
    OnnxcAttribute(GUARDS_ATTR, "an array of dictionaries", _array_of(_dict), _FUNC),
    # calls of kernels in the entry
    OnnxcAttribute(CHECK_SITE_ATTR, "an integer", _int, _CALL),
    OnnxcAttribute(CHECK_FALLBACK_ATTR, "a string", _string, _CALL),
    OnnxcAttribute(NESTED_CHECKS_ATTR, "an integer", _int, _CALL),
    OnnxcAttribute(CHECK_OPERANDS_ATTR, "an array of integers", _array_of(_int), _CALL),
    OnnxcAttribute(INPLACE_ATTR, "an array of integers", _array_of(_int), _CALL),
    # kernels, loops and buffers
    OnnxcAttribute(KERNEL_ATTR, "a string", _string, _FUNC),
    OnnxcAttribute(PARALLEL_ATTR, "a unit attribute", _unit),
    OnnxcAttribute(ELEMENTS_ATTR, "a string (a size polynomial)", _string,
                   ("memref.alloc",)),
    # graph ops
    OnnxcAttribute(PRECISION_ATTR, "a string", _string),
    OnnxcAttribute(WIDENED_ATTR, "a unit attribute", _unit),
    # the module
    OnnxcAttribute(TARGET_ATTR, "a dictionary of the strings name, triple, cpu, features",
                   _dict, _MODULE),
)
ONNXC_ATTRIBUTES: dict[str, OnnxcAttribute] = {a.name: a for a in _REGISTERED}
assert len(ONNXC_ATTRIBUTES) == len(_REGISTERED), "an onnxc attribute registered twice"

Onnxc = Dialect("onnxc", [], [])
"""The dialect the attributes belong to (it defines no ops or attribute types)."""


def check_onnxc_attributes(op: Operation) -> None:
    """VerifyException for the first `onnxc.*` attribute of `op` that is not registered,
    holds the wrong kind of value or sits on an op it does not belong on."""
    for name, value in op.attributes.items():
        if not name.startswith(PREFIX):
            continue
        rule = ONNXC_ATTRIBUTES.get(name)
        if rule is None:
            raise VerifyException(f"{op.name}: unknown onnxc attribute '{name}' (registered: "
                                  f"dialects/onnxc_attributes.py)")
        if rule.on and op.name not in rule.on:
            raise VerifyException(f"{op.name}: attribute '{name}' belongs on "
                                  f"{' or '.join(rule.on)}")
        if not rule.check(value):
            raise VerifyException(f"{op.name}: attribute '{name}' must be {rule.holds}, "
                                  f"got {value}")


def verify_onnxc_attributes(module: ModuleOp) -> None:
    """`check_onnxc_attributes` on the module and every op in it."""
    for op in module.walk():
        if op.attributes:
            check_onnxc_attributes(op)


__all__ = [
    "ARENA_BYTES_ATTR",
    "CHECK_FALLBACK_ATTR",
    "CHECK_OPERANDS_ATTR",
    "CHECK_SITES_ATTR",
    "CHECK_SITE_ATTR",
    "CONSTANTS_ATTR",
    "DIMS_ARGUMENT_ATTR",
    "DYNAMIC_ARENA_ATTR",
    "ELEMENTS_ATTR",
    "ENTRY_ATTR",
    "GUARDS_ATTR",
    "INPLACE_ATTR",
    "INPLACE_BYTES_ATTR",
    "INPUT_DEFAULTS_ATTR",
    "INPUT_NAMES_ATTR",
    "INTERMEDIATE_BYTES_ATTR",
    "KERNEL_ATTR",
    "NESTED_CHECKS_ATTR",
    "ONNXC_ATTRIBUTES",
    "OUTPUT_NAMES_ATTR",
    "PARALLEL_ATTR",
    "PRECISION_ATTR",
    "PROFILE_OFFSET_ATTR",
    "PROFILE_SITES_ATTR",
    "RUN_BOUNDS_ATTR",
    "RUN_SYMBOLS_ATTR",
    "STATUS_OFFSET_ATTR",
    "SYMBOLS_ATTR",
    "TARGET_ATTR",
    "WIDENED_ATTR",
    "Onnxc",
    "OnnxcAttribute",
    "check_onnxc_attributes",
    "verify_onnxc_attributes",
]
