"""The ops lowering/to_llvm/direct.py emits itself, as llvmlite instructions.

Each handler emits one loops-level op exactly as its conversion pattern lowers it (the
pattern named beside it, in arith.py, memref.py, vector.py, func.py, cf.py, or
convert-scf-to-cf and scf_while.py for `scf`), with the type conversion of
type_conversion.py: `index` is i64 and a memref a bare pointer whose static strides and
offset are in its type. An op without a handler goes to its pattern (direct.py's
`lower_by_pattern`); tests/unit/test_direct_llvm.py runs kernels both ways.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Generic, TypeVar

from llvmlite import ir
from xdsl.backend.llvm.convert_op import create_constant
from xdsl.backend.llvm.convert_type import convert_type as llvmlite_type_of
from xdsl.dialects import arith, cf, func, llvm, math, memref, scf, vector
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IndexType,
    IntegerAttr,
    MemRefType,
    UnrealizedConversionCastOp,
    VectorType,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue

from onnxc.errors import LoweringError
from onnxc.lowering.to_llvm.index_forms import IndexForm
from onnxc.lowering.to_llvm.memref import element_bytes, static_layout
from onnxc.lowering.to_llvm.type_conversion import convert_type, mangle

if TYPE_CHECKING:
    from onnxc.lowering.to_llvm.direct import _Body

T = TypeVar("T")

I8 = ir.IntType(8)
I32 = ir.IntType(32)
I64 = ir.IntType(64)


class _PerType(Generic[T]):
    """Facts derived from a loops-level type, memoised on the type object's identity.

    Why: the kernels' values share a handful of type objects, and a dict or lru_cache
    keyed by the type hashes its whole parameter tree on every lookup (xDSL's attributes
    are frozen dataclasses); with the shape xDSL rebuilds on each `get_shape`, that was
    a fifth of MobileNetV2's emission. An entry holds its type, so its id stays its own;
    equal types that are distinct objects are simply derived once each."""

    __slots__ = ("_entries",)
    LIMIT = 4096  # bounded: a process may compile many models

    def __init__(self) -> None:
        self._entries: dict[int, tuple[Attribute, T]] = {}

    def get(self, t: Attribute) -> T | None:
        entry = self._entries.get(id(t))
        return entry[1] if entry is not None and entry[0] is t else None

    def put(self, t: Attribute, fact: T) -> T:
        if len(self._entries) >= self.LIMIT:
            self._entries.clear()
        self._entries[id(t)] = (t, fact)
        return fact


_LLVM_TYPES: _PerType[ir.Type] = _PerType()


def llvm_type(t: Attribute) -> ir.Type:
    """The llvmlite type a loops-level value of type `t` is carried in."""
    found = _LLVM_TYPES.get(t)
    return found if found is not None else _LLVM_TYPES.put(t, _llvm_type_of(t))


@lru_cache(maxsize=4096)  # equal types met as distinct objects
def _llvm_type_of(t: Attribute) -> ir.Type:
    if isinstance(t, llvm.LLVMVoidType):
        return ir.VoidType()
    return llvmlite_type_of(convert_type(t))


_LAYOUTS: _PerType[tuple[Sequence[int], int, int]] = _PerType()


def _memref_layout(t: Attribute, op: Operation) -> tuple[Sequence[int], int, int]:
    """(strides, offset, element bytes) of a memref type: xDSL rebuilds a type's shape on
    every query, which was the walk's largest single cost."""
    found = _LAYOUTS.get(t)
    if found is None:
        strides, offset = static_layout(t, op)
        found = _LAYOUTS.put(t, (strides, offset, element_bytes(t)))  # type: ignore[arg-type]
    return found


def _linear_index(b: _Body, indices: Sequence[SSAValue], memref_type: Attribute,
                  op: Operation) -> ir.Value | None:
    """memref.py's element_pointer index: sum of index * static stride, plus the offset
    (None for a zero offset), as one index form."""
    strides, offset, _ = _memref_layout(memref_type, op)
    linear = IndexForm((), offset)
    for index, stride in zip(indices, strides, strict=True):
        linear = linear.plus(b.form_of(index).times(stride))
    if linear.is_constant and linear.constant == 0:
        return None
    return b.forms.build(linear, b.builder)


def _element_pointer(b: _Body, base: SSAValue, indices: Sequence[SSAValue], op: Operation,
                     pointee: ir.Type | None = None) -> ir.Value:
    """The address memref.py's element_pointer computes, typed as a pointer to `pointee`
    (a vector) or the element for llvmlite's store check (the bitcasts print as nothing)."""
    memref_type = base.type
    assert isinstance(memref_type, MemRefType)
    linear = _linear_index(b, indices, memref_type, op)
    pointer = b.values[base]
    element = llvm_type(memref_type.get_element_type())
    if linear is not None:
        pointer = b.builder.gep(pointer, [linear], inbounds=True, source_etype=element)
    # vector.py's zero GEP over the vector is the same address: only its type is taken
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
    load.align = _memref_layout(op.memref.type, op)[2]
    b.values[op.res] = load


def _memref_store(b: _Body, op: memref.StoreOp) -> None:
    pointer = _element_pointer(b, op.memref, op.indices, op)
    value = b.values[op.value]
    if _sub_byte(value.type):
        store = b.builder.store(b.builder.zext(value, I8), b.builder.bitcast(pointer, I8.as_pointer()))
        store.align = 1
        return
    store = b.builder.store(value, pointer)
    store.align = _memref_layout(op.memref.type, op)[2]


_VECTOR_TYPES: _PerType[ir.VectorType] = _PerType()


def _vector_type(t: Attribute, op: Operation) -> ir.VectorType:
    found = _VECTOR_TYPES.get(t)
    if found is not None:
        return found
    if not isinstance(t, VectorType) or len(t.get_shape()) != 1:
        raise LoweringError(f"'{op.name}': only 1-D vectors are supported, got {t}")
    return _VECTOR_TYPES.put(t, llvm_type(t))  # type: ignore[arg-type]


def _vector_load(b: _Body, op: vector.LoadOp) -> None:
    t = _vector_type(op.result.type, op)
    pointer = _element_pointer(b, op.base, op.indices, op, pointee=t)
    load = b.builder.load(pointer, typ=t)
    load.align = _memref_layout(op.base.type, op)[2]
    b.values[op.result] = load


def _vector_store(b: _Body, op: vector.StoreOp) -> None:
    t = _vector_type(op.vector.type, op)
    pointer = _element_pointer(b, op.base, op.indices, op, pointee=t)
    store = b.builder.store(b.values[op.vector], pointer)
    store.align = _memref_layout(op.base.type, op)[2]


_SPLATS: _PerType[tuple[ir.Constant, ir.Constant]] = _PerType()


def _broadcast(b: _Body, op: vector.BroadcastOp) -> None:
    if isinstance(op.source.type, VectorType):
        raise LoweringError(f"'{op.name}': only scalar sources are supported")
    # `undef` and the all-zero shuffle mask, built (and printed: llvmlite keeps a value's
    # text) once per vector type rather than per broadcast
    splat = _SPLATS.get(op.vector.type)
    if splat is None:
        t = _vector_type(op.vector.type, op)
        splat = _SPLATS.put(op.vector.type, (
            ir.Constant(t, ir.Undefined), ir.Constant(ir.VectorType(I32, t.count),
                                                      [I32(0)] * t.count)))
    undef, mask = splat
    lane0 = b.builder.insert_element(undef, b.values[op.source], I32(0))
    b.values[op.vector] = b.builder.shuffle_vector(lane0, undef, mask)


_MANGLED: _PerType[str] = _PerType()


def _intrinsic(b: _Body, name: str, args: list[ir.Value], t: Attribute) -> ir.Value:
    """A call of LLVM intrinsic `name` overloaded on loops-level type `t` (named as
    type_conversion.call_intrinsic names it, so both routes declare one function)."""
    suffix = _MANGLED.get(t)
    if suffix is None:
        suffix = _MANGLED.put(t, mangle(convert_type(t)))
    full = f"{name}.{suffix}"
    module = b.emitter.module
    fn = module.globals.get(full)
    if fn is None:
        fn = ir.Function(module, ir.FunctionType(llvm_type(t), [a.type for a in args]),
                         name=full)
    return b.builder.call(fn, args)


def _fma(b: _Body, op: vector.FMAOp) -> None:
    _vector_type(op.res.type, op)
    # translate.py declares llvm.fma through xDSL's declare_intrinsic: the same name
    b.values[op.res] = _intrinsic(b, "llvm.fma", [b.values[op.lhs], b.values[op.rhs],
                                                  b.values[op.acc]], op.res.type)


def _math_fma(b: _Body, op: math.FmaOp) -> None:
    """math.fma without fast-math flags: the llvm.fma call its pattern makes (deeplabv3's
    710 took 0.17 s through the pattern route); with flags, that route."""
    if _fastmath(op):
        b.lower_by_pattern(op)
        return
    b.values[op.result] = _intrinsic(b, "llvm.fma", [b.values[v] for v in op.operands],
                                     op.result.type)


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
    """The op's fast-math flags in the order LLVM prints them (xDSL's enum order): the op
    keeps them as a set, whose order varies with string hashing from one process to the
    next, and the IR text (and artifacts built from it) would not be reproducible."""
    flags = op.properties.get("fastmath")
    if isinstance(flags, arith.FastMathFlagsAttr):
        names = llvm.FastMathAttr(tuple(flags.data)).data
        return tuple(flag.value for flag in llvm.FastMathFlag if flag in names)
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


def _index_sum(sign: int, name: str) -> Callable[[_Body, Operation], None]:
    """`arith.addi` (sign 1) / `subi` (-1): on `index` values, a form (index_forms.py)."""
    other = _binary(name, _overflow)

    def emit(b: _Body, op: Operation) -> None:
        if not isinstance(op.results[0].type, IndexType):
            other(b, op)
            return
        lhs, rhs = op.operands
        b.set_form(op.results[0], b.form_of(lhs).plus(b.form_of(rhs), sign))
    return emit


def _index_product(b: _Body, op: arith.MuliOp) -> None:
    """`arith.muli`: on `index` values with a constant factor, a form."""
    if isinstance(op.result.type, IndexType):
        lhs, rhs = b.form_of(op.lhs), b.form_of(op.rhs)
        if lhs.is_constant or rhs.is_constant:
            factor, form = (lhs.constant, rhs) if lhs.is_constant else (rhs.constant, lhs)
            b.set_form(op.result, form.times(factor))
            return
    b.values[op.result] = b.builder.mul(b.values[op.lhs], b.values[op.rhs],
                                        flags=_overflow(op))


def _intrinsic_binary(name: str) -> Callable[[_Body, Operation], None]:
    def emit(b: _Body, op: Operation) -> None:
        lhs, rhs = (b.values[v] for v in op.operands)
        b.values[op.results[0]] = _intrinsic(b, name, [lhs, rhs], op.results[0].type)
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
    _memref_layout(op.results[0].type, op)
    b.values[op.results[0]] = b.values[op.operands[0]]


def _view(b: _Body, op: memref.ViewOp) -> None:
    _memref_layout(op.result.type, op)
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


def _enter_loop(b: _Body, values: Sequence[SSAValue], inits: Sequence[ir.Value],
                ) -> tuple[ir.Block, ir.Block, list[ir.PhiInstr]]:
    """Branch from here to a new loop header holding a phi per value of `values`, entered
    with `inits` (read before leaving this block: an index form is built where it is read);
    returns the header, the exit block and the phis."""
    entry = b.builder.block
    header, exit_ = b.fn.append_basic_block(), b.fn.append_basic_block()
    b.builder.branch(header)
    b.builder.position_at_end(header)
    phis = _phis(b, values)
    for phi, init in zip(phis, inits, strict=True):
        phi.add_incoming(init, entry)
    return header, exit_, phis


def _for(b: _Body, op: scf.ForOp) -> None:
    """convert-scf-to-cf's loop: a header testing iv < ub, the body, then the latch."""
    builder = b.builder
    upper, step = b.values[op.ub], b.values[op.step]
    header, exit_, (iv, *carried) = _enter_loop(
        b, [op.lb, *op.results], [b.values[v] for v in (op.lb, *op.iter_args)])
    body = b.fn.append_basic_block()
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
    before, end, before_args = _enter_loop(b, op.before_region.block.args,
                                           [b.values[v] for v in op.arguments])
    after = b.fn.append_basic_block()
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


HANDLERS: dict[type[Operation], Callable[[_Body, Operation], None]] = {
    arith.ConstantOp: _constant,
    arith.AddiOp: _index_sum(1, "add"),
    arith.SubiOp: _index_sum(-1, "sub"),
    arith.MuliOp: _index_product,
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
    math.FmaOp: _math_fma,
    UnrealizedConversionCastOp: _same_value,
    func.CallOp: _call,
    func.ReturnOp: _return,
    cf.BranchOp: _branch,
    cf.ConditionalBranchOp: _cond_branch,
    scf.ForOp: _for,
    scf.IfOp: _if,
    scf.WhileOp: _while,
}
