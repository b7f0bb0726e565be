"""Verification after passes: invalid IR is an `InternalCompilerError` naming the pass, the op
and the ONNX node it came from, never xDSL's bare `Exception` or `VerifyException`.

A pass that leaves IR the verifier rejects is a bug in onnxc, so the user gets one line that
says which pass, which op and which part of their model, to report or work around (e.g. with
a lower -O). Verifying the whole module after every pass would cost about 0.5 s per pass at
the loops level (ResNet-50), so `run_passes` verifies once per pipeline, as before, and only
when that fails replays the module's passes one at a time, verifying after each, to find the
pass that broke it. The replay starts from a fresh import of the model (the importer records
how: `record_source`), so nothing is kept for it, neither time nor a second copy of the
weights; a module that was not imported is copied before its first pipeline instead.

`onnxc.compile` defers verification further: graph -> loops and the entry ABI run unverified
(`verify=False`). The loops module is verified before its LLVM IR is emitted only with
ONNXC_VERIFY_IR=1, which the test suite sets (each verify of a lowered ResNet-50 takes about
1 s); otherwise only when the emitter fails on it (onnxc/pipeline.py lower_to_llvm_ir).
A pass that crashes on IR an unverified pass broke is blamed on that pass the same way: the
crash triggers the replay.

`verify_module` verifies with the module's symbols indexed: xDSL 0.74 resolves each
`func.call`'s callee by scanning the module (`SymbolTable.lookup_symbol`), which made
verifying a lowered module quadratic in its size (20 s of a 5,000-node graph's compile).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from weakref import WeakKeyDictionary

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    FileLineColLoc,
    ModuleOp,
    NameLoc,
    StringAttr,
    SymbolRefAttr,
)
from xdsl.ir import BlockArgument, Operation, SSAValue
from xdsl.passes import ModulePass, PassPipelineCallbackType
from xdsl.traits import SymbolTable

from onnxc.dialects.onnxc_attributes import (
    INPUT_NAMES_ATTR,
    KERNEL_ATTR,
    OUTPUT_NAMES_ATTR,
    verify_onnxc_attributes,
)
from onnxc.errors import InternalCompilerError, OnnxcError

NODE_ATTR = "onnx.node"  # graph_checks.NODE_ATTR, literal: graph_checks loads the graph dialect


@dataclass
class PassHistory:
    """How to rebuild the module as it was before any pass, and every pass run on it since."""

    rebuild: Callable[[], ModuleOp]
    passes: list[ModulePass] = field(default_factory=list)
    verified: int = 0
    """How many of `passes` were applied when the module last passed verification."""

    @property
    def unverified(self) -> int:
        """Passes applied since the last successful verification."""
        return len(self.passes) - self.verified


_HISTORIES: WeakKeyDictionary[ModuleOp, PassHistory] = WeakKeyDictionary()
"""Per module, while it lives: what a failed verification replays."""


def record_source(module: ModuleOp, rebuild: Callable[[], ModuleOp]) -> None:
    """`rebuild()` makes a new copy of `module` as it is now (before any pass): the importer
    passes a re-import of the same model."""
    _HISTORIES[module] = PassHistory(rebuild)


_scan_symbols = SymbolTable.lookup_symbol
_indexed = threading.local()
"""`.symbols`: (module, {name: op}) while this thread verifies `module` (verify_module)."""


def _lookup_symbol(op: Operation, name: str | StringAttr | SymbolRefAttr) -> Operation | None:
    """SymbolTable.lookup_symbol, answered from the index for a plain name whose nearest
    symbol table is the module being verified; xDSL's scan otherwise."""
    index = getattr(_indexed, "symbols", None)
    if index is not None:
        module, symbols = index
        if isinstance(name, SymbolRefAttr) and not name.nested_references.data:
            name = name.root_reference
        if isinstance(name, str | StringAttr):
            anchor = op
            while anchor is not None and not anchor.has_trait(SymbolTable):
                anchor = anchor.parent_op()
            if anchor is module:
                return symbols.get(name.data if isinstance(name, StringAttr) else name)
    return _scan_symbols(op, name)


SymbolTable.lookup_symbol = staticmethod(_lookup_symbol)


@contextmanager
def _symbols_indexed(module: ModuleOp) -> Iterator[None]:
    symbols: dict[str, Operation] = {}
    for op in module.body.block.ops:
        name = op.get_attr_or_prop("sym_name")
        if isinstance(name, StringAttr):
            symbols.setdefault(name.data, op)  # the first definition, as the scan finds
    outer = getattr(_indexed, "symbols", None)
    _indexed.symbols = (module, symbols)
    try:
        yield
    finally:
        _indexed.symbols = outer


def verify_module(module: ModuleOp) -> None:
    """`module.verify()`, with calls resolved through an index of the module's symbols, and
    every `onnxc.*` attribute checked against its registration (dialects/onnxc_attributes.py:
    xDSL has no hook for a dialect's discardable attributes)."""
    with _symbols_indexed(module):
        module.verify()
    verify_onnxc_attributes(module)


def verify_ir_requested() -> bool:
    """ONNXC_VERIFY_IR=1 (the test suite sets it): the checks that only find onnxc bugs run
    too (the loops module verified before emission, pipeline.verify_loops; each pass the op
    census leaves out checked against a fresh census, pass_manager/census.py)."""
    return os.environ.get("ONNXC_VERIFY_IR", "") not in ("", "0")


def history_of(module: ModuleOp) -> PassHistory:
    """The module's history; a module not from the importer is copied on first use."""
    history = _HISTORIES.get(module)
    if history is None:
        history = _HISTORIES[module] = PassHistory(module.clone().clone)
    return history


def run_verified(
    ctx: Context, module: ModuleOp, passes: Sequence[ModulePass], verify: bool = True,
    instrumentation: PassPipelineCallbackType | None = None,
) -> None:
    """Apply `passes` in order, then verify; InternalCompilerError if the result is invalid.

    `verify=False` leaves the check to the next verified call, which then covers these passes
    too. A pass that raises something other than an onnxc error while earlier passes are
    unverified is checked against them: if one of them left invalid IR, that is the error.
    `instrumentation` is called around the passes as xDSL's `PassPipeline` calls its
    callback: (None, module, first), (pass, module, next), ..., (last, module, None), and
    (None, module, None) without passes
    (`onnxc-opt`'s IR dumps, timing and per-pass verification: tools/instrument.py).
    A pass that builds for a machine reads it from the module (onnxc.target `target_of`)."""
    from onnxc.pass_manager.census import OpCensus

    if not passes and instrumentation is not None:
        instrumentation(None, module, None)  # as PassPipeline: the input is checked
        instrumentation = None

    history = history_of(module)
    # graph passes with nothing to match are not walked; the skips checked where IR is
    census = OpCensus(module, checked=verify_ir_requested())
    previous: ModulePass | None = None
    for p in passes:
        if instrumentation is not None:
            instrumentation(previous, module, p)
        previous = p
        try:
            census.apply(ctx, p)
        except OnnxcError:
            raise
        except Exception as crash:
            if history.unverified:
                culprit = _replay(ctx, history, history.unverified)
                if culprit is not None:
                    raise invalid_ir_error(module, crash, culprit, []) from crash
            raise
        history.passes.append(p)
    if instrumentation is not None:
        instrumentation(previous, module, None)
    if not verify:
        return
    try:
        verify_module(module)
    except Exception as err:  # xDSL verifiers raise bare Exceptions too
        suspects = history.unverified
        culprit = history.passes[-1].name if suspects == 1 else _replay(ctx, history, suspects)
        candidates = ([p.name for p in history.passes[len(history.passes) - suspects:]]
                      if culprit is None else [])
        raise invalid_ir_error(module, err, culprit, candidates) from err
    history.verified = len(history.passes)


def _replay(ctx: Context, history: PassHistory, last: int) -> str | None:
    """The first of the `last` passes after which a replay from the start is invalid (None
    when there is none or the replay does not reproduce the failure, e.g. because the module
    was edited between pipelines)."""
    if last == 0:
        return None
    earlier, suspects = history.passes[:-last], history.passes[-last:]
    try:
        replica = history.rebuild()
        for p in earlier:
            p.apply(ctx, replica)
        for p in suspects:
            p.apply(ctx, replica)
            try:
                verify_module(replica)
            except Exception:  # noqa: BLE001 - any verifier failure is the one sought
                return p.name
    except Exception:  # noqa: BLE001 - a replay that crashes elsewhere proves nothing
        return None
    return None


def record_piecewise_pass(module: ModuleOp, applied: ModulePass) -> None:
    """`applied` is being run on `module` a function at a time, outside `run_passes` (the
    JIT outlines each chunk's parallel loops just before emitting it): a failed verification
    counts it among the suspects, and a replay runs it whole."""
    history_of(module).passes.append(applied)


def verify_functions(module: ModuleOp, functions: Iterable[Operation], pass_name: str) -> None:
    """`verify_after` for the `functions` of `module` that `pass_name` just made or changed."""
    try:
        with _symbols_indexed(module):
            for function in functions:
                function.verify()
    except Exception as err:  # xDSL verifiers raise bare Exceptions too
        raise invalid_ir_error(module, err, pass_name, []) from err


def verify_after(module: ModuleOp, pass_name: str | None) -> None:
    """Verify `module` right after the pass `pass_name` (None: before any pass)."""
    try:
        verify_module(module)
    except Exception as err:
        raise invalid_ir_error(module, err, pass_name, []) from err


# --------------------------------------------------------------------------- reporting


def invalid_ir_error(module: ModuleOp, err: BaseException, pass_name: str | None,
                     candidates: Sequence[str]) -> InternalCompilerError:
    """The error for `module` failing verification with `err`: at the first op (in program
    order) that fails on its own, else at the module."""
    op, detail = first_invalid_op(module) or (module, _one_line(str(err)) or type(err).__name__)
    return InternalCompilerError(pass_name, op.name, origin_of(op), detail, candidates, op)


def first_invalid_op(module: ModuleOp) -> tuple[Operation, str] | None:
    for op in module.walk():
        try:
            op.verify(verify_nested_ops=False)
        except Exception as err:  # noqa: BLE001 - xDSL verifiers raise bare Exceptions
            text = _one_line(str(err)).removeprefix(f"{op.name}: ").removeprefix(f"{op.name} ")
            return op, text or type(err).__name__
    return None


def origin_of(op: Operation) -> str | None:
    """Where in the model `op` comes from: its ONNX node (or the ONNX value it computes) and,
    inside a kernel, the kernel and the node of the first call to it."""
    own = _node_of(op)
    if own is not None:
        return own
    function = _enclosing_function(op)
    if function is None:
        return None
    name = function.sym_name.data
    kernel = function.attributes.get(KERNEL_ATTR)
    if not isinstance(kernel, StringAttr):
        return f"in function @{name}"
    module = function.parent_op()
    callers = () if module is None else (
        c for c in module.walk()
        if isinstance(c, func.CallOp) and c.callee.root_reference.data == name)
    caller = next(iter(callers), None)
    called_for = None if caller is None else _node_of(caller, outputs_only=True)
    where = f"in kernel @{name} of '{kernel.data}'"
    return where if called_for is None else f"{where}, called for {called_for}"


def _node_of(op: Operation, outputs_only: bool = False) -> str | None:
    """`ONNX node 'n'` from the importer's records (op attribute or location), else `ONNX
    value 'v'` from a result's (or, for a kernel call, its output buffer's) name, else a
    parsed file location."""
    function = _enclosing_function(op)
    for candidate in (op, *_ancestors(op)):
        attr = candidate.attributes.get(NODE_ATTR)
        if isinstance(attr, StringAttr) and attr.data:
            return f"ONNX node '{attr.data}'"
        if isinstance(candidate.location, NameLoc):
            return f"ONNX node '{candidate.location.desc.data}'"
        if candidate is function:
            break  # a kernel is shared: the node is its caller's, not its own
    values = list(op.operands)[-1:] if outputs_only else list(op.results)  # a kernel's
    names = [n for n in map(_value_name, values) if n]  # outputs are its last arguments
    if names:
        return f"ONNX value '{names[0]}'"
    if isinstance(op.location, FileLineColLoc):
        loc = op.location
        return f"at {loc.filename.data}:{loc.line.data}:{loc.column.data}"
    return None


def _value_name(value: SSAValue) -> str | None:
    """The ONNX name of a value: its name hint, or for an argument of the entry function the
    model's input or output name (outputs are the `out<i>` arguments after the inputs)."""
    if isinstance(value, BlockArgument):
        owner = value.block.parent_op()
        if owner is not None:
            names = [*_strings(owner, INPUT_NAMES_ATTR), *_strings(owner, OUTPUT_NAMES_ATTR)]
            if value.index < len(names):
                return names[value.index]
    return value.name_hint


def _strings(op: Operation, attr: str) -> list[str]:
    array = op.attributes.get(attr)
    if not isinstance(array, ArrayAttr):
        return []
    return [s.data for s in array.data if isinstance(s, StringAttr)]


def _ancestors(op: Operation):
    parent = op.parent_op()
    while parent is not None:
        yield parent
        parent = parent.parent_op()


def _enclosing_function(op: Operation) -> Operation | None:
    """The innermost enclosing symbol with a body: func.func, or llvm.func after lowering."""
    for candidate in (op, *_ancestors(op)):
        if candidate.regions and isinstance(getattr(candidate, "sym_name", None), StringAttr):
            return candidate
    return None


def _one_line(text: str) -> str:
    return " ".join(part.strip() for part in text.splitlines() if part.strip())


__all__ = [
    "PassHistory", "first_invalid_op", "history_of", "invalid_ir_error", "origin_of",
    "record_source", "run_verified", "verify_after",
]
