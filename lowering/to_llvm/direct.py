"""Loops -> LLVM IR in one walk, without building the `llvm` dialect in between.

Why: the pattern route (convert-to-llvm, then translate.py) has xDSL build, rewrite, cast,
reconcile and verify about 35,000 ops for ResNet-50's 12,500 loop ops, which took 7-10 s of
a 16 s compile. This walk goes over each function once and emits llvmlite instructions as it
meets the ops, which takes a fraction of a second.

It lowers with the same semantics, not a second copy of them:
- the hot ops (index arithmetic, loads and stores, `vector.fma`/`broadcast`, constants,
  calls) are emitted by direct_ops.py exactly as their conversion patterns would lower
  them, and `scf.for`/`if`/`while` become blocks and phis as in convert-scf-to-cf;
- every other op is lowered by its own conversion pattern (convert_to_llvm.py's set),
  applied to a copy of that op alone in a scratch module, and the `llvm` ops it produced are
  translated as translate.py translates them. A new op then needs only its pattern.

`onnxc-opt --emit=llvm-dialect` and the convert-*-to-llvm passes keep the pattern route (its
IR is what the lit tests check); tests/unit/test_direct_llvm.py runs kernels both ways.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from llvmlite import ir
from xdsl.backend.llvm.convert_op import convert_op
from xdsl.dialects import builtin, func, llvm
from xdsl.dialects.builtin import (
    IntegerAttr,
    MemRefType,
    ModuleOp,
    StringAttr,
    SymbolRefAttr,
    UnrealizedConversionCastOp,
)
from xdsl.ir import Block, Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter
from xdsl.utils.exceptions import LLVMTranslationException

from onnxc.errors import LoweringError
from onnxc.lowering.entry_wrapper import entry_wrapper
from onnxc.lowering.to_llvm import translate
from onnxc.lowering.to_llvm.arith import ARITH_TO_LLVM_PATTERNS
from onnxc.lowering.to_llvm.cf import CF_TO_LLVM_PATTERNS
from onnxc.lowering.to_llvm.direct_ops import HANDLERS, llvm_type
from onnxc.lowering.to_llvm.func import KERNEL_ATTR
from onnxc.lowering.to_llvm.index_forms import IndexForm, IndexForms
from onnxc.lowering.to_llvm.launch_ir import kernel_of
from onnxc.lowering.to_llvm.math import math_patterns
from onnxc.lowering.to_llvm.memref import MEMREF_TO_LLVM_PATTERNS
from onnxc.lowering.to_llvm.type_conversion import convert_type
from onnxc.lowering.to_llvm.vector import VECTOR_TO_LLVM_PATTERNS
from onnxc.pass_manager.pattern_dispatch import OpTypeDispatchApplier


def _patterns(polynomials: bool) -> OpTypeDispatchApplier:
    return OpTypeDispatchApplier([
        *ARITH_TO_LLVM_PATTERNS, *math_patterns(polynomials), *VECTOR_TO_LLVM_PATTERNS,
        *MEMREF_TO_LLVM_PATTERNS, *CF_TO_LLVM_PATTERNS,
    ], dce_enabled=False)


# --------------------------------------------------------------------------- declarations


def _declare(op: func.FuncOp, module: ir.Module, *, defined: bool = True,
             exported: bool = False) -> ir.Function:
    """The function `op` lowers to: convert-func-to-llvm's linkage, `noalias` memrefs and
    `noinline` kernels, plus translate.py's argument attributes and `nounwind`. In a module
    of several (`emit_llvm_chunks`) it is declared where it is not `defined`, and a private
    function called from another module is `exported` (not internal)."""
    outputs = op.function_type.outputs.data
    if len(outputs) > 1:
        raise LoweringError(f"@{op.sym_name.data} returns {len(outputs)} values; LLVM allows one")
    inputs = op.function_type.inputs.data
    fnty = ir.FunctionType(llvm_type(outputs[0]) if outputs else ir.VoidType(),
                           [llvm_type(t) for t in inputs])
    fn = ir.Function(module, fnty, name=op.sym_name.data)
    private = op.sym_visibility is not None and op.sym_visibility.data == "private"
    if op.body.blocks and defined:
        fn.attributes.add("nounwind")
        if private and not exported:
            fn.linkage = "internal"
    if KERNEL_ATTR in op.attributes:
        fn.attributes.add("noinline")
    arg_attrs = op.arg_attrs.data if op.arg_attrs is not None else [None] * len(inputs)
    for arg, t, attrs in zip(fn.args, inputs, arg_attrs, strict=True):
        names = dict(attrs.data) if attrs is not None else {}
        if isinstance(t, MemRefType):
            names["llvm.noalias"] = builtin.UnitAttr()
        for name, value in names.items():
            if name in translate.ARG_FLAGS:
                arg.add_attribute(translate.ARG_FLAGS[name])
            elif name in translate.ARG_INTS and isinstance(value, IntegerAttr):
                setattr(arg.attributes, translate.ARG_INTS[name], value.value.data)
    return fn


# --------------------------------------------------------------------------- function bodies


class _Values(dict[SSAValue, ir.Value]):
    """SSA value -> llvmlite value; an `index` value held as a form (index_forms.py) is
    built at the builder's position when it is looked up."""

    __slots__ = ("body",)

    def __init__(self, body: _Body):
        super().__init__()
        self.body = body

    def __missing__(self, key: SSAValue) -> ir.Value:
        form = self.body.index_forms.get(key)
        if form is None:
            raise KeyError(key)
        return self.body.forms.build(form, self.body.builder)


class _Body:
    """Emits one function's body: `values` maps loops-level SSA values to llvmlite values,
    `index_forms` the index values not built yet."""

    def __init__(self, emitter: _ModuleEmitter, op: func.FuncOp | llvm.FuncOp, fn: ir.Function):
        self.emitter = emitter
        self.name = op.sym_name.data
        self.fn = fn
        self.values: dict[SSAValue, ir.Value] = _Values(self)
        self.forms = IndexForms()
        self.index_forms: dict[SSAValue, IndexForm] = {}
        self.builder = ir.IRBuilder()
        self.block_map: dict[Block, ir.Block] = {}

    def form_of(self, value: SSAValue) -> IndexForm:
        form = self.index_forms.get(value)
        return form if form is not None else self.forms.of_value(self.values[value])

    def set_form(self, result: SSAValue, form: IndexForm) -> None:
        """`result` is `form`: kept as a form unless it is a constant or a bare value."""
        plain = self.forms.as_value(form)
        if plain is not None:
            self.values[result] = plain
        else:
            self.index_forms[result] = form

    # ---- structure

    def emit_region(self, blocks: Sequence[Block], args: Sequence[ir.Value]) -> None:
        """A function body: its entry block takes `args`; other blocks are branch targets."""
        block_map = {block: self.fn.append_basic_block() for block in blocks}
        self.values.update(zip(blocks[0].args, args, strict=True))
        for block in blocks[1:]:
            self.builder.position_at_end(block_map[block])
            for arg in block.args:
                self.values[arg] = self.builder.phi(llvm_type(arg.type))
        self.block_map = block_map
        for block in translate.dominance_order(list(blocks)):
            self.builder.position_at_end(block_map[block])
            self.emit_ops(block.ops)

    def emit_ops(self, ops: Sequence[Operation] | object) -> None:
        handlers = HANDLERS
        for op in ops:  # type: ignore[attr-defined]
            handler = handlers.get(type(op))
            try:
                if handler is not None:
                    handler(self, op)
                elif op.name.startswith(("llvm.", "llvmx.", "par.")):
                    self.translate(op)
                elif op.name in SHARED_LOWERINGS and self.emitter.polynomials:
                    self.call_shared_lowering(op)
                else:
                    self.lower_by_pattern(op)
            except LoweringError:
                raise
            except (NotImplementedError, LLVMTranslationException, KeyError, TypeError,
                    ValueError, AssertionError) as e:
                raise LoweringError(f"cannot lower '{op.name}' in @{self.name}: {e}") from e

    def inline_block(self, block: Block, args: Sequence[ir.Value]) -> Operation:
        """Emit a single-block region's ops in place; returns its terminator (not emitted)."""
        self.values.update(zip(block.args, args, strict=True))
        *body, terminator = block.ops
        if terminator.regions or len(block.parent.blocks) != 1:  # type: ignore[union-attr]
            raise LoweringError(f"@{self.name}: only single-block scf regions are supported")
        self.emit_ops(body)
        return terminator

    # ---- ops with no fast path

    def translate(self, op: Operation) -> None:
        """An op already in the `llvm` dialect (or llvmx / par), as translate.py does it."""
        if not translate.convert_own_op(op, self.builder, self.values):
            convert_op(op, self.builder, self.values, self.block_map)

    def lower_by_pattern(self, op: Operation) -> None:
        """Lower `op` with its convert-to-llvm pattern, alone in a scratch block, and
        translate the `llvm` ops that come out."""
        if op.regions or op.successors:
            raise LoweringError(f"'{op.name}' in @{self.name} has no LLVM lowering")
        scratch = Block(arg_types=[v.type for v in op.operands])
        clone = op.clone(value_mapper=dict(zip(op.operands, scratch.args, strict=True)))
        sentinel = UnrealizedConversionCastOp.get(list(clone.results), [])
        scratch.add_ops([clone, sentinel])
        holder = ModuleOp([])
        holder.body.block.add_op(func.FuncOp("scratch", ((), ()), builtin.Region(scratch)))
        values = dict(zip(scratch.args, (self.values[v] for v in op.operands), strict=True))
        self._rewrite_to_llvm(clone, op)
        for decl in list(holder.body.block.ops)[:-1]:  # declarations a pattern added (libm)
            assert isinstance(decl, llvm.FuncOp)
            if decl.sym_name.data not in self.emitter.module.globals:
                translate.declare_function(decl, self.emitter.module)
        for inner in scratch.ops:
            if inner is sentinel:
                break
            if isinstance(inner, UnrealizedConversionCastOp):
                for result, source in zip(inner.results, inner.inputs, strict=True):
                    values[result] = values[source]
                continue
            if not inner.name.startswith(("llvm.", "llvmx.")):
                raise LoweringError(f"'{inner.name}' (from '{op.name}') in @{self.name} has "
                                    "no LLVM lowering")
            if not translate.convert_own_op(inner, self.builder, values):
                convert_op(inner, self.builder, values)
        for result, new in zip(op.results, sentinel.inputs, strict=True):
            self.values[result] = values[new]

    def call_shared_lowering(self, op: Operation) -> None:
        """`op` (SHARED_LOWERINGS) as a call of the internal `alwaysinline` function that
        computes it, defined once per LLVM module and operand types."""
        key = f"{op.name} {op.properties} {op.attributes} {op.operand_types} {op.result_types}"
        fn = self.emitter.shared_lowerings.get(key)
        if fn is None:
            fn = self._define_shared_lowering(op)
            self.emitter.shared_lowerings[key] = fn
        self.values[op.results[0]] = self.builder.call(
            fn, [self.values[v] for v in op.operands])

    def _define_shared_lowering(self, op: Operation) -> ir.Function:
        if len(op.results) != 1:
            raise LoweringError(f"'{op.name}' in @{self.name}: one result expected")
        signature = ir.FunctionType(llvm_type(op.results[0].type),
                                    [llvm_type(v.type) for v in op.operands])
        fn = ir.Function(self.emitter.module, signature,
                         name=f"onnxc.{op.name}.{len(self.emitter.shared_lowerings)}")
        fn.linkage = "internal"
        fn.attributes.add("alwaysinline")
        fn.attributes.add("nounwind")
        caller = (self.builder, self.values)
        self.builder = ir.IRBuilder(fn.append_basic_block("entry"))
        self.values = dict(zip(op.operands, fn.args, strict=True))
        try:
            self.lower_by_pattern(op)
            self.builder.ret(self.values[op.results[0]])
        finally:
            self.builder, self.values = caller
        return fn

    def _rewrite_to_llvm(self, clone: Operation, original: Operation) -> None:
        """Apply the patterns to `clone` and then to whatever non-llvm ops they made."""
        applier = self.emitter.patterns
        pending = [clone]
        while pending:
            target = pending.pop()
            block = target.parent_block()
            before = set(block.ops) if block is not None else set()
            rewriter = PatternRewriter(target)
            applier.match_and_rewrite(target, rewriter)
            if not rewriter.has_done_action:
                raise LoweringError(f"'{original.name}' in @{self.name} has no LLVM lowering")
            if block is None:
                continue
            pending += [o for o in block.ops if o not in before
                        and not isinstance(o, UnrealizedConversionCastOp)
                        and not o.name.startswith(("llvm.", "llvmx."))]


class _Patterns:
    """What all chunks of one module share: the conversion patterns."""

    def __init__(self, polynomials: bool):
        self.polynomials = polynomials
        self.applier = _patterns(polynomials)


class _ModuleEmitter:
    def __init__(self, module: ir.Module, shared: _Patterns):
        self.module = module
        self.patterns = shared.applier
        self.polynomials = shared.polynomials
        self.shared_lowerings: dict[str, ir.Function] = {}
        """call_shared_lowering's functions in this module, by op and types"""


# --------------------------------------------------------------------------- the module


def emit_llvm_ir(module: ModuleOp, *, triple: str, data_layout: str = "",
                 entry: str | None = None, polynomials: bool = True) -> ir.Module:
    """The llvmlite module of a loops-level `module` (entry ABI applied, parallel loops
    outlined): functions, calls, scf, arith, math, vector and memref ops, plus any `llvm`
    ops already in it; with `entry`, also emit-entry-wrapper's `onnxc_entry` for it."""
    chunk = _Chunk(list(module.ops), set(), set())
    return _emit_chunk(module, chunk, triple, data_layout, entry, _Patterns(polynomials))


@dataclass
class _Chunk:
    functions: list[Operation]
    """the functions it defines: whole kernels, with their outlined parallel bodies"""
    exported: set[str]
    """those of them another chunk calls"""
    elsewhere: set[str]
    """functions it calls that another chunk defines (it declares them)"""
    ops: int = 0
    """the ops of its functions"""
    strength_reduction: bool = True
    """whether LLVM's loop strength reduction runs on it (not for UNREDUCED_KERNELS)"""


SHARED_LOWERINGS = frozenset({"math.exp", "math.erf", "math.tanh"})
"""Ops lowered once per LLVM module and operand types, into an internal `alwaysinline`
function that each use calls (`_Body.call_shared_lowering`). Their f32 polynomials
(polynomial.py) are about forty LLVM instructions and as many splat constants each, built
through the conversion patterns in a scratch module: swin_t's 179 vector exps took 0.85 s
of its emission. LLVM's always-inliner runs first in its pipeline, so the optimiser and
the loop vectorizer see what they saw when each use was expanded in place."""

@functools.cache
def unreduced_kernels() -> frozenset[str]:
    """UNREDUCED_KERNELS: kernels whose chunks skip LLVM's loop strength reduction, the
    rules with `strength_reduction=False` (graph_to_loops/kernels.py; imported when first
    needed, so that emitting a loops module does not load the kernel builders): the
    convolutions. It is about a third of code generation on convolution nets (ResNet-50:
    0.35-0.7 s of CPU) and bought their convolutions no speed. Measured on an AVX-512 Xeon
    in one process, interleaved, at one thread: off everywhere cost 1-2% of run time
    (ResNet-50, MobileNetV2-like, shufflenet), off everywhere but in the chunks of MatMul
    and Gemm kernels was level with on everywhere (0.98-1.00). Every other kernel keeps it:
    with it off, the 2-layer BERT's elementwise, transpose and normalisation kernels made it
    2-8% slower (and on a Zen 3, off everywhere had cost ResNet-50 and BERT 4-5%). A chunk
    holds kernels of one kind (plan_chunks)."""
    from onnxc.lowering.graph_to_loops.kernels import UNREDUCED_KERNELS

    return UNREDUCED_KERNELS


def plan_chunks(module: ModuleOp, parts: int, smallest: int, largest: int) -> list[_Chunk]:
    """The module's functions cut into about `parts` chunks of equal op count, each of
    `smallest` to `largest` ops, in the order the lanes should get them. A kernel stays
    whole, with its outlined bodies (so a chunk may pass `largest`), and a chunk holds
    kernels that keep strength reduction or kernels that skip it (UNREDUCED_KERNELS), not
    both. The first chunk is about half as large and takes the smallest kernels: every lane
    waits for it. Then come the largest kernels first (longest first, as a scheduler
    would), so that the last chunks are of the smallest and the lanes end together: in
    module order, the 2-layer BERT's largest kernel came last, and one lane compiled it
    alone for 0.19 s."""
    groups: dict[str, list[tuple[Operation, int, set[str]]]] = {}
    for op in module.ops:
        if not isinstance(op, func.FuncOp | llvm.FuncOp):
            raise LoweringError(f"top-level '{op.name}' has no LLVM translation "
                                "(only func.func and llvm.func)")
        if not op.body.blocks:
            continue  # defined elsewhere (an early kernel), declared by every chunk
        groups.setdefault(kernel_of(op.sym_name.data), []).append((op, *_size_and_callees(op)))
    sizes = {name: sum(ops for _, ops, _ in group) for name, group in groups.items()}
    chunk_ops = max(smallest, min(largest, sum(sizes.values()) // max(1, parts)))
    reduced = {name: keeps_strength_reduction(group[0][0]) for name, group in groups.items()}
    first: list[str] = []
    first_ops = 0
    for name in sorted(groups, key=lambda n: sizes[n]):  # ties in module order
        if first and (reduced[name] != reduced[first[0]] or first_ops >= chunk_ops // 2):
            break
        first.append(name)
        first_ops += sizes[name]
    in_first = set(first)
    rest = [n for n in groups if n not in in_first]
    largest_of = {kind: max((sizes[n] for n in rest if reduced[n] == kind), default=0)
                  for kind in (True, False)}
    order = [*first, *sorted(rest, key=lambda n: (-largest_of[reduced[n]], reduced[n],
                                                  -sizes[n]))]
    chunks: list[_Chunk] = []
    home: dict[str, int] = {}
    calls: dict[str, set[str]] = {}
    for position, name in enumerate(order):
        previous = order[position - 1] if position else None
        if (previous is None or position == len(first) or chunks[-1].ops >= chunk_ops
                or reduced[name] != reduced[previous]):
            chunks.append(_Chunk([], set(), set(), strength_reduction=reduced[name]))
        for op, ops, callees in groups[name]:
            chunks[-1].functions.append(op)
            chunks[-1].ops += ops
            calls[op.sym_name.data] = callees
            home[op.sym_name.data] = len(chunks) - 1
    for name, callees in calls.items():
        for callee in callees:
            if callee in home and home[callee] != home[name]:
                chunks[home[callee]].exported.add(callee)
    for index, chunk in enumerate(chunks):
        chunk.elsewhere = {callee for f in chunk.functions for callee in calls[f.sym_name.data]
                           if home.get(callee, index) != index}
    return chunks


def keeps_strength_reduction(op: Operation) -> bool:
    """Whether LLVM's loop strength reduction runs on a function's chunk (UNREDUCED_KERNELS)."""
    kind = op.attributes.get(KERNEL_ATTR)
    return not (isinstance(kind, StringAttr) and kind.data in unreduced_kernels())


def _size_and_callees(op: Operation) -> tuple[int, set[str]]:
    count = 0
    callees: set[str] = set()
    for inner in op.walk():
        count += 1
        for attr in inner.properties.values():
            if isinstance(attr, SymbolRefAttr):
                callees.add(attr.root_reference.data)
    return count, callees


def emit_llvm_chunks(module: ModuleOp, chunks: list[_Chunk], *, triple: str,
                     data_layout: str = "", entry: str | None = None,
                     polynomials: bool = True) -> Iterator[str]:
    """`emit_llvm_ir`'s code as one module text per chunk of `plan_chunks`, each yielded as
    soon as it is emitted (so that LLVM can compile it while the next is emitted): each
    declares what it calls in the others; the chunk defining `entry` also has the wrapper."""
    patterns = _Patterns(polynomials)
    for chunk in chunks:
        yield str(_emit_chunk(module, chunk, triple, data_layout, entry, patterns))


def emit_kernels_chunk(module: ModuleOp, *, triple: str, data_layout: str = "",
                       polynomials: bool = True) -> tuple[str, bool]:
    """The LLVM IR of a module of whole kernels (their parallel loops outlined) that calls
    no other chunk's functions, every kernel exported: a chunk of early kernels
    (lowering/early_kernels.py). With it, whether LLVM's loop strength reduction is to run
    on it (its kernels are all of one kind: UNREDUCED_KERNELS or not)."""
    functions = list(module.ops)
    kernels = {f.sym_name.data for f in functions  # type: ignore[attr-defined]
               if kernel_of(f.sym_name.data) == f.sym_name.data}  # type: ignore[attr-defined]
    reduced = all(keeps_strength_reduction(f) for f in functions)
    chunk = _Chunk(functions, kernels, set(), strength_reduction=reduced)
    text = str(_emit_chunk(module, chunk, triple, data_layout, None, _Patterns(polynomials)))
    return text, reduced


def _emit_chunk(module: ModuleOp, chunk: _Chunk, triple: str, data_layout: str,
                entry: str | None, patterns: _Patterns) -> ir.Module:
    result = ir.Module()
    result.triple = triple
    if data_layout:
        result.data_layout = data_layout
    emitter = _ModuleEmitter(result, patterns)
    defined = {op.sym_name.data for op in chunk.functions}  # type: ignore[attr-defined]
    functions: list[tuple[func.FuncOp | llvm.FuncOp, ir.Function]] = []
    for op in module.ops:
        if not isinstance(op, func.FuncOp | llvm.FuncOp):
            raise LoweringError(f"top-level '{op.name}' has no LLVM translation "
                                "(only func.func and llvm.func)")
        name = op.sym_name.data
        if name not in defined and name not in chunk.elsewhere and op.body.blocks:
            continue  # (a body-less function is declared in every chunk: an early kernel)
        if isinstance(op, llvm.FuncOp):
            if name in defined:
                functions.append((op, translate.declare_function(op, result)))
            elif not op.body.blocks:
                translate.declare_function(op, result)
            else:  # defined elsewhere: its declaration, not its body
                _llvm_declaration(op, result)
            continue
        fn = _declare(op, result, defined=name in defined, exported=name in chunk.exported)
        if name in defined:
            functions.append((op, fn))
    for op, fn in functions:
        if not op.body.blocks:
            continue
        if isinstance(op, llvm.FuncOp):
            translate.convert_body(op, fn)
            continue
        _Body(emitter, op, fn).emit_region(list(op.body.blocks), list(fn.args))
    if entry is not None and entry in defined:
        _emit_entry_wrapper(module, result, entry)
    return result


def _llvm_declaration(op: llvm.FuncOp, module: ir.Module) -> None:
    signature = op.function_type
    fnty = ir.FunctionType(llvm_type(signature.output),
                           [llvm_type(t) for t in signature.inputs.data])
    ir.Function(module, fnty, name=op.sym_name.data)


def _emit_entry_wrapper(module: ModuleOp, result: ir.Module, entry: str) -> None:
    target = next((f for f in module.ops if isinstance(f, func.FuncOp)
                   and f.sym_name.data == entry), None)
    if target is None:
        raise LoweringError(f"emit-entry-wrapper: no func.func @{entry}")
    outputs = target.function_type.outputs.data
    signature = llvm.LLVMFunctionType(
        [convert_type(t) for t in target.function_type.inputs.data],
        convert_type(outputs[0]) if outputs else llvm.LLVMVoidType())
    wrapper = entry_wrapper(entry, signature)
    translate.convert_body(wrapper, translate.declare_function(wrapper, result))
