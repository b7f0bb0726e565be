"""Loops -> LLVM IR in one walk, without building the `llvm` dialect in between.

Why: the pattern route (convert-to-llvm, then translate.py) has xDSL build, rewrite, cast,
reconcile and verify about 35,000 ops for ResNet-50's 12,500 loop ops, which took 7-10 s of
a 16 s compile. This walk goes over each function once and emits llvmlite instructions as it
meets the ops, which takes a fraction of a second.

It lowers with the same semantics, not a second copy of them:
- the hot ops (index arithmetic, loads and stores, `vector.fma`/`broadcast`, constants,
  calls) are emitted here exactly as their conversion patterns would lower them, with the
  type conversion of type_conversion.py (`index` is i64, a memref a bare pointer whose
  static strides and offset are in its type);
- `scf.for`/`if`/`while` become blocks and phis as in convert-scf-to-cf (and scf_while.py);
- every other op is lowered by its own conversion pattern (convert_to_llvm.py's set),
  applied to a copy of that op alone in a scratch module, and the `llvm` ops it produced are
  translated as translate.py translates them. A new op then needs only its pattern.

`onnxc-opt --emit=llvm-dialect` and the convert-*-to-llvm passes keep the pattern route (its
IR is what the lit tests check); tests/unit/test_direct_llvm.py runs kernels both ways.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cache, lru_cache

from llvmlite import ir
from xdsl.backend.llvm.convert_op import convert_op, create_constant
from xdsl.backend.llvm.convert_type import convert_type as llvmlite_type_of
from xdsl.dialects import arith, builtin, cf, func, llvm, memref, scf, vector
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    UnrealizedConversionCastOp,
    VectorType,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter
from xdsl.utils.exceptions import LLVMTranslationException

from onnxc.errors import LoweringError
from onnxc.lowering.entry_wrapper import entry_wrapper
from onnxc.lowering.to_llvm import translate
from onnxc.lowering.to_llvm.arith import ARITH_TO_LLVM_PATTERNS
from onnxc.lowering.to_llvm.cf import CF_TO_LLVM_PATTERNS
from onnxc.lowering.to_llvm.func import KERNEL_ATTR
from onnxc.lowering.to_llvm.math import MATH_TO_LLVM_PATTERNS, ExpandPolynomial
from onnxc.lowering.to_llvm.memref import MEMREF_TO_LLVM_PATTERNS, element_bytes, static_layout
from onnxc.lowering.to_llvm.type_conversion import convert_type
from onnxc.lowering.to_llvm.vector import VECTOR_TO_LLVM_PATTERNS
from onnxc.passes.pattern_dispatch import OpTypeDispatchApplier

I8 = ir.IntType(8)
I32 = ir.IntType(32)
I64 = ir.IntType(64)


@lru_cache(maxsize=4096)  # bounded: a process may compile many models' memref types
def llvm_type(t: Attribute) -> ir.Type:
    """The llvmlite type a loops-level value of type `t` is carried in."""
    if isinstance(t, llvm.LLVMVoidType):
        return ir.VoidType()
    return llvmlite_type_of(convert_type(t))


def _patterns(polynomials: bool) -> OpTypeDispatchApplier:
    expand = (ExpandPolynomial(),) if polynomials else ()
    return OpTypeDispatchApplier([
        *ARITH_TO_LLVM_PATTERNS, *expand, *MATH_TO_LLVM_PATTERNS, *VECTOR_TO_LLVM_PATTERNS,
        *MEMREF_TO_LLVM_PATTERNS, *CF_TO_LLVM_PATTERNS,
    ], dce_enabled=False)


# --------------------------------------------------------------------------- declarations


def _declare(op: func.FuncOp, module: ir.Module) -> ir.Function:
    """The function `op` lowers to: convert-func-to-llvm's linkage, `noalias` memrefs and
    `noinline` kernels, plus translate.py's argument attributes and `nounwind`."""
    outputs = op.function_type.outputs.data
    if len(outputs) > 1:
        raise LoweringError(f"@{op.sym_name.data} returns {len(outputs)} values; LLVM allows one")
    inputs = op.function_type.inputs.data
    fnty = ir.FunctionType(llvm_type(outputs[0]) if outputs else ir.VoidType(),
                           [llvm_type(t) for t in inputs])
    fn = ir.Function(module, fnty, name=op.sym_name.data)
    private = op.sym_visibility is not None and op.sym_visibility.data == "private"
    if op.body.blocks:
        fn.attributes.add("nounwind")
        if private:
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


class _Body:
    """Emits one function's body: `values` maps loops-level SSA values to llvmlite values."""

    def __init__(self, emitter: _ModuleEmitter, op: func.FuncOp | llvm.FuncOp, fn: ir.Function):
        self.emitter = emitter
        self.name = op.sym_name.data
        self.fn = fn
        self.values: dict[SSAValue, ir.Value] = {}
        self.builder = ir.IRBuilder()
        self.block_map: dict[Block, ir.Block] = {}

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
        handlers = _HANDLERS
        for op in ops:  # type: ignore[attr-defined]
            handler = handlers.get(type(op))
            try:
                if handler is not None:
                    handler(self, op)
                elif op.name.startswith(("llvm.", "llvmx.", "par.")):
                    self.translate(op)
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


class _ModuleEmitter:
    def __init__(self, module: ir.Module, polynomials: bool):
        self.module = module
        self.patterns = _patterns(polynomials)
        self.layouts: dict[Attribute, tuple[Sequence[int], int, int]] = {}


# --------------------------------------------------------------------------- fast paths

_NSW = ("nsw",)


def _memref_layout(b: _Body, t: Attribute, op: Operation) -> tuple[Sequence[int], int, int]:
    """(strides, offset, element bytes) of a memref type, memoised per module: xDSL
    rebuilds a type's shape on every query, which was the walk's largest single cost."""
    layouts = b.emitter.layouts
    found = layouts.get(t)
    if found is None:
        strides, offset = static_layout(t, op)
        found = layouts[t] = (strides, offset, element_bytes(t))  # type: ignore[arg-type]
    return found


def _linear_index(b: _Body, indices: Sequence[SSAValue], memref_type: Attribute,
                  op: Operation) -> ir.Value | None:
    """memref.py's element_pointer index: sum of index * static stride, plus the offset."""
    strides, offset, _ = _memref_layout(b, memref_type, op)
    builder = b.builder
    linear: ir.Value | None = None
    for index, stride in zip(indices, strides, strict=True):
        term = b.values[index]
        if stride != 1:
            term = builder.mul(term, I64(stride), flags=_NSW)
        linear = term if linear is None else builder.add(linear, term, flags=_NSW)
    if offset:
        linear = I64(offset) if linear is None else builder.add(linear, I64(offset), flags=_NSW)
    return linear


def _element_pointer(b: _Body, base: SSAValue, indices: Sequence[SSAValue], op: Operation,
                     pointee: ir.Type | None = None) -> ir.Value:
    """The address memref.py's element_pointer computes (and vector.py's zero GEP over a
    vector `pointee`), typed for llvmlite's store check (the bitcasts print as nothing)."""
    memref_type = base.type
    assert isinstance(memref_type, MemRefType)
    linear = _linear_index(b, indices, memref_type, op)
    pointer = b.values[base]
    element = llvm_type(memref_type.get_element_type())
    if linear is not None:
        pointer = b.builder.gep(pointer, [linear], inbounds=True, source_etype=element)
    if pointee is not None:
        pointer = b.builder.gep(pointer, [I32(0)], inbounds=True, source_etype=pointee)
    return b.builder.bitcast(pointer, (pointee or element).as_pointer())


def _sub_byte(t: ir.Type) -> bool:
    return isinstance(t, ir.IntType) and t.width < 8


def _memref_load(b: _Body, op: memref.LoadOp) -> None:
    pointer = _element_pointer(b, op.memref, op.indices, op)
    t = llvm_type(op.res.type)
    if _sub_byte(t):
        byte = b.builder.load(b.builder.bitcast(pointer, I8.as_pointer()), typ=I8)
        byte.align = 1
        b.values[op.res] = b.builder.trunc(byte, t)
        return
    load = b.builder.load(pointer, typ=t)
    load.align = _memref_layout(b, op.memref.type, op)[2]
    b.values[op.res] = load


def _memref_store(b: _Body, op: memref.StoreOp) -> None:
    pointer = _element_pointer(b, op.memref, op.indices, op)
    value = b.values[op.value]
    if _sub_byte(value.type):
        store = b.builder.store(b.builder.zext(value, I8), b.builder.bitcast(pointer, I8.as_pointer()))
        store.align = 1
        return
    store = b.builder.store(value, pointer)
    store.align = _memref_layout(b, op.memref.type, op)[2]


def _vector_type(t: Attribute, op: Operation) -> ir.Type:
    if not isinstance(t, VectorType) or len(t.get_shape()) != 1:
        raise LoweringError(f"'{op.name}': only 1-D vectors are supported, got {t}")
    return llvm_type(t)


def _vector_load(b: _Body, op: vector.LoadOp) -> None:
    t = _vector_type(op.result.type, op)
    pointer = _element_pointer(b, op.base, op.indices, op, pointee=t)
    load = b.builder.load(pointer, typ=t)
    load.align = _memref_layout(b, op.base.type, op)[2]
    b.values[op.result] = load


def _vector_store(b: _Body, op: vector.StoreOp) -> None:
    t = _vector_type(op.vector.type, op)
    pointer = _element_pointer(b, op.base, op.indices, op, pointee=t)
    store = b.builder.store(b.values[op.vector], pointer)
    store.align = _memref_layout(b, op.base.type, op)[2]


def _broadcast(b: _Body, op: vector.BroadcastOp) -> None:
    t = _vector_type(op.vector.type, op)
    if isinstance(op.source.type, VectorType):
        raise LoweringError(f"'{op.name}': only scalar sources are supported")
    undef = ir.Constant(t, ir.Undefined)
    lane0 = b.builder.insert_element(undef, b.values[op.source], I32(0))
    mask = ir.Constant(ir.VectorType(I32, t.count), [I32(0)] * t.count)
    b.values[op.vector] = b.builder.shuffle_vector(lane0, undef, mask)


def _intrinsic(b: _Body, name: str, args: list[ir.Value], t: ir.Type) -> ir.Value:
    full = f"{name}.{_mangle(t)}"
    module = b.emitter.module
    fn = module.globals.get(full)
    if fn is None:
        fn = ir.Function(module, ir.FunctionType(t, [a.type for a in args]), name=full)
    return b.builder.call(fn, args)


@cache
def _mangle(t: ir.Type) -> str:
    if isinstance(t, ir.VectorType):
        return f"v{t.count}{_mangle(t.element)}"
    if isinstance(t, ir.IntType):
        return f"i{t.width}"
    return {ir.HalfType: "f16", ir.FloatType: "f32", ir.DoubleType: "f64"}[type(t)]


def _fma(b: _Body, op: vector.FMAOp) -> None:
    t = _vector_type(op.res.type, op)
    # translate.py declares llvm.fma through xDSL's declare_intrinsic: the same name
    b.values[op.res] = _intrinsic(b, "llvm.fma", [b.values[op.lhs], b.values[op.rhs],
                                                  b.values[op.acc]], t)


def _constant(b: _Body, op: arith.ConstantOp) -> None:
    value = op.value
    if isinstance(value, IntegerAttr | FloatAttr) or (
            isinstance(value, DenseIntOrFPElementsAttr) and isinstance(op.result.type, VectorType)
            and convert_type(op.result.type) == op.result.type):
        b.values[op.result] = create_constant(convert_type(op.result.type), value)
        return
    b.lower_by_pattern(op)


def _overflow(op: Operation) -> tuple[str, ...]:
    flags = op.properties.get("overflowFlags")
    if isinstance(flags, arith.IntegerOverflowAttr):
        return tuple(str(f) for f in flags.data)
    return ()


def _fastmath(op: Operation) -> tuple[str, ...]:
    flags = op.properties.get("fastmath")
    if isinstance(flags, arith.FastMathFlagsAttr):
        return tuple(f.value for f in llvm.FastMathAttr(tuple(flags.data)).data)
    return ()


def _no_flags(op: Operation) -> tuple[str, ...]:
    return ()


def _binary(name: str, flags: Callable[[Operation], tuple[str, ...]] = _no_flags,
            ) -> Callable[[_Body, Operation], None]:
    """The IRBuilder instruction `name` on the op's two operands, with the op's overflow or
    fast-math flags as arith-to-llvm carries them."""
    def emit(b: _Body, op: Operation) -> None:
        lhs, rhs = (b.values[v] for v in op.operands)
        b.values[op.results[0]] = getattr(b.builder, name)(lhs, rhs, flags=flags(op))
    return emit


def _intrinsic_binary(name: str) -> Callable[[_Body, Operation], None]:
    def emit(b: _Body, op: Operation) -> None:
        lhs, rhs = (b.values[v] for v in op.operands)
        b.values[op.results[0]] = _intrinsic(b, name, [lhs, rhs], lhs.type)
    return emit


def _cmpi(b: _Body, op: arith.CmpiOp) -> None:
    predicate = llvm.ICmpPredicateFlag.from_int(op.predicate.value.data).value
    symbol, signed = _ICMP[predicate]
    build = b.builder.icmp_signed if signed else b.builder.icmp_unsigned
    b.values[op.result] = build(symbol, b.values[op.lhs], b.values[op.rhs])


_ICMP = {"eq": ("==", True), "ne": ("!=", True), "slt": ("<", True), "sle": ("<=", True),
         "sgt": (">", True), "sge": (">=", True), "ult": ("<", False), "ule": ("<=", False),
         "ugt": (">", False), "uge": (">=", False)}


def _select(b: _Body, op: arith.SelectOp) -> None:
    b.values[op.result] = b.builder.select(b.values[op.cond], b.values[op.lhs], b.values[op.rhs])


def _index_cast(b: _Body, op: arith.IndexCastOp) -> None:
    value = b.values[op.input]
    target = llvm_type(op.result.type)
    if value.type.width == target.width:
        b.values[op.result] = value
    elif value.type.width < target.width:
        b.values[op.result] = b.builder.sext(value, target)
    else:
        b.values[op.result] = b.builder.trunc(value, target)


def _same_value(b: _Body, op: Operation) -> None:
    """Casts whose source and result are carried in the same LLVM value."""
    for result, source in zip(op.results, op.operands, strict=True):
        b.values[result] = b.values[source]


def _same_base_view(b: _Body, op: Operation) -> None:
    if isinstance(op, memref.ReinterpretCastOp):
        if op.offsets or op.strides:
            raise LoweringError(f"'{op.name}' with dynamic offsets or strides")
    elif len(op.operands) != 1:
        raise LoweringError(f"'{op.name}' with dynamic offsets, sizes or strides")
    _memref_layout(b, op.results[0].type, op)
    b.values[op.results[0]] = b.values[op.operands[0]]


def _view(b: _Body, op: memref.ViewOp) -> None:
    _memref_layout(b, op.result.type, op)
    b.values[op.result] = b.builder.gep(b.values[op.source], [b.values[op.byte_shift]],
                                        inbounds=True, source_etype=I8)


# ---- calls and control flow


def _call(b: _Body, op: func.CallOp) -> None:
    if len(op.res) > 1:
        raise LoweringError(f"call to {op.callee} returns {len(op.res)} values; LLVM allows one")
    callee = b.emitter.module.get_global(op.callee.root_reference.data)
    result = b.builder.call(callee, [b.values[a] for a in op.arguments])
    if op.res:
        b.values[op.res[0]] = result


def _return(b: _Body, op: func.ReturnOp) -> None:
    if len(op.arguments) > 1:
        raise LoweringError("func.return of several values has no LLVM form")
    if op.arguments:
        b.builder.ret(b.values[op.arguments[0]])
    else:
        b.builder.ret_void()


def _successor_phis(b: _Body, block: Block, args: Sequence[SSAValue]) -> ir.Block:
    for arg, value in zip(block.args, args, strict=True):
        b.values[arg].add_incoming(b.values[value], b.builder.block)
    return b.block_map[block]


def _branch(b: _Body, op: cf.BranchOp) -> None:
    b.builder.branch(_successor_phis(b, op.successor, op.arguments))


def _cond_branch(b: _Body, op: cf.ConditionalBranchOp) -> None:
    then = _successor_phis(b, op.then_block, op.then_arguments)
    other = _successor_phis(b, op.else_block, op.else_arguments)
    b.builder.cbranch(b.values[op.cond], then, other)


def _phis(b: _Body, values: Sequence[SSAValue]) -> list[ir.PhiInstr]:
    return [b.builder.phi(llvm_type(v.type)) for v in values]


def _for(b: _Body, op: scf.ForOp) -> None:
    """convert-scf-to-cf's loop: a header testing iv < ub, the body, then the latch."""
    builder = b.builder
    lower, upper, step = (b.values[v] for v in (op.lb, op.ub, op.step))
    entry = builder.block
    header = b.fn.append_basic_block()
    body = b.fn.append_basic_block()
    exit_ = b.fn.append_basic_block()
    builder.branch(header)
    builder.position_at_end(header)
    iv = builder.phi(llvm_type(op.lb.type))
    carried = _phis(b, op.results)
    iv.add_incoming(lower, entry)
    for phi, init in zip(carried, op.iter_args, strict=True):
        phi.add_incoming(b.values[init], entry)
    builder.cbranch(builder.icmp_signed("<", iv, upper), body, exit_)
    builder.position_at_end(body)
    yield_op = b.inline_block(op.body.block, [iv, *carried])
    nxt = builder.add(iv, step)
    latch = builder.block
    iv.add_incoming(nxt, latch)
    for phi, value in zip(carried, yield_op.operands, strict=True):
        phi.add_incoming(b.values[value], latch)
    builder.branch(header)
    builder.position_at_end(exit_)
    for result, phi in zip(op.results, carried, strict=True):
        b.values[result] = phi


def _if(b: _Body, op: scf.IfOp) -> None:
    builder = b.builder
    then_block = b.fn.append_basic_block()
    else_block = b.fn.append_basic_block() if op.false_region.blocks else None
    merge = b.fn.append_basic_block()
    builder.cbranch(b.values[op.cond], then_block, else_block or merge)
    incoming: list[tuple[list[ir.Value], ir.Block]] = []
    for region, block in ((op.true_region, then_block), (op.false_region, else_block)):
        if block is None:
            continue
        builder.position_at_end(block)
        yield_op = b.inline_block(region.block, [])
        incoming.append(([b.values[v] for v in yield_op.operands], builder.block))
        builder.branch(merge)
    builder.position_at_end(merge)
    for i, result in enumerate(op.results):
        phi = builder.phi(llvm_type(result.type))
        for values, block in incoming:
            phi.add_incoming(values[i], block)
        b.values[result] = phi


def _while(b: _Body, op: scf.WhileOp) -> None:
    """scf_while.py's lowering: the condition region, then the body, back to the condition."""
    builder = b.builder
    entry = builder.block
    before = b.fn.append_basic_block()
    after = b.fn.append_basic_block()
    end = b.fn.append_basic_block()
    builder.branch(before)
    builder.position_at_end(before)
    before_args = _phis(b, op.before_region.block.args)
    for phi, init in zip(before_args, op.arguments, strict=True):
        phi.add_incoming(b.values[init], entry)
    condition = b.inline_block(op.before_region.block, before_args)
    assert isinstance(condition, scf.ConditionOp)
    forwarded = [b.values[v] for v in condition.args]
    cond_block = builder.block
    builder.cbranch(b.values[condition.condition], after, end)
    builder.position_at_end(after)
    after_args = _phis(b, op.after_region.block.args)
    for phi, value in zip(after_args, forwarded, strict=True):
        phi.add_incoming(value, cond_block)
    yield_op = b.inline_block(op.after_region.block, after_args)
    for phi, value in zip(before_args, yield_op.operands, strict=True):
        phi.add_incoming(b.values[value], builder.block)
    builder.branch(before)
    builder.position_at_end(end)
    for result, value in zip(op.results, forwarded, strict=True):
        phi = builder.phi(value.type)
        phi.add_incoming(value, cond_block)
        b.values[result] = phi


_HANDLERS: dict[type[Operation], Callable[[_Body, Operation], None]] = {
    arith.ConstantOp: _constant,
    arith.AddiOp: _binary("add", _overflow),
    arith.SubiOp: _binary("sub", _overflow),
    arith.MuliOp: _binary("mul", _overflow),
    arith.DivSIOp: _binary("sdiv"),
    arith.DivUIOp: _binary("udiv"),
    arith.RemSIOp: _binary("srem"),
    arith.RemUIOp: _binary("urem"),
    arith.AndIOp: _binary("and_"),
    arith.OrIOp: _binary("or_"),
    arith.XOrIOp: _binary("xor"),
    arith.AddfOp: _binary("fadd", _fastmath),
    arith.SubfOp: _binary("fsub", _fastmath),
    arith.MulfOp: _binary("fmul", _fastmath),
    arith.DivfOp: _binary("fdiv", _fastmath),
    arith.MaximumfOp: _intrinsic_binary("llvm.maximum"),
    arith.MinimumfOp: _intrinsic_binary("llvm.minimum"),
    arith.MaxSIOp: _intrinsic_binary("llvm.smax"),
    arith.MinSIOp: _intrinsic_binary("llvm.smin"),
    arith.MaxUIOp: _intrinsic_binary("llvm.umax"),
    arith.MinUIOp: _intrinsic_binary("llvm.umin"),
    arith.CmpiOp: _cmpi,
    arith.SelectOp: _select,
    arith.IndexCastOp: _index_cast,
    memref.LoadOp: _memref_load,
    memref.StoreOp: _memref_store,
    memref.ViewOp: _view,
    memref.CastOp: _same_base_view,
    memref.ReinterpretCastOp: _same_base_view,
    memref.SubviewOp: _same_base_view,
    memref.ExpandShapeOp: _same_base_view,
    memref.CollapseShapeOp: _same_base_view,
    vector.LoadOp: _vector_load,
    vector.StoreOp: _vector_store,
    vector.BroadcastOp: _broadcast,
    vector.FMAOp: _fma,
    UnrealizedConversionCastOp: _same_value,
    func.CallOp: _call,
    func.ReturnOp: _return,
    cf.BranchOp: _branch,
    cf.ConditionalBranchOp: _cond_branch,
    scf.ForOp: _for,
    scf.IfOp: _if,
    scf.WhileOp: _while,
}


# --------------------------------------------------------------------------- the module


def emit_llvm_ir(module: ModuleOp, *, triple: str, data_layout: str = "",
                 entry: str | None = None, polynomials: bool = True) -> ir.Module:
    """The llvmlite module of a loops-level `module` (entry ABI applied, parallel loops
    outlined): functions, calls, scf, arith, math, vector and memref ops, plus any `llvm`
    ops already in it; with `entry`, also emit-entry-wrapper's `onnxc_entry` for it."""
    result = ir.Module()
    result.triple = triple
    if data_layout:
        result.data_layout = data_layout
    emitter = _ModuleEmitter(result, polynomials)
    functions: list[tuple[func.FuncOp | llvm.FuncOp, ir.Function]] = []
    for op in module.ops:
        if isinstance(op, func.FuncOp):
            functions.append((op, _declare(op, result)))
        elif isinstance(op, llvm.FuncOp):
            functions.append((op, translate.declare_function(op, result)))
        else:
            raise LoweringError(f"top-level '{op.name}' has no LLVM translation "
                                "(only func.func and llvm.func)")
    for op, fn in functions:
        if not op.body.blocks:
            continue
        if isinstance(op, llvm.FuncOp):
            translate.convert_body(op, fn)
            continue
        _Body(emitter, op, fn).emit_region(list(op.body.blocks), list(fn.args))
    if entry is not None:
        _emit_entry_wrapper(module, result, entry)
    return result


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
