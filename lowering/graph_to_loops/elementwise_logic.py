"""Kernels of comparisons, boolean and bitwise logic, BitShift, Mod, Where, IsNaN and IsInf.

Each is one broadcast loop nest (elementwise.map_elementwise) around a few arith ops;
unsigned element types (ui8..ui64) pick the unsigned compare, shift and remainder forms.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from xdsl.dialects import arith, llvm, math
from xdsl.dialects.builtin import IntegerType, Signedness
from xdsl.ir import Attribute, SSAValue

from onnxc.dialects import graph
from onnxc.dialects.graph import int_of
from onnxc.dialects.graph_strings import StringType
from onnxc.errors import LoweringError
from onnxc.lowering.graph_to_loops import string_bytes
from onnxc.lowering.graph_to_loops.element_types import is_bool, is_float
from onnxc.lowering.graph_to_loops.elementwise import map_elementwise, require_physical_broadcast
from onnxc.lowering.graph_to_loops.loops import KernelBuilder
from onnxc.lowering.graph_to_loops.rules import KernelRule, rules


def is_unsigned(t: Attribute) -> bool:
    """Unsigned integers, and i1 (ONNX bool: false < true)."""
    return isinstance(t, IntegerType) and (
        t.signedness.data == Signedness.UNSIGNED or t.width.data == 1)


# --------------------------------------------------------------------------- comparisons

# op -> (float predicate, signed predicate, unsigned predicate); floats compare ordered
# (any comparison with NaN is false, as in numpy)
_PREDICATES: dict[type, tuple[str, str, str]] = {
    graph.EqualOp: ("oeq", "eq", "eq"),
    graph.LessOp: ("olt", "slt", "ult"),
    graph.LessOrEqualOp: ("ole", "sle", "ule"),
    graph.GreaterOp: ("ogt", "sgt", "ugt"),
    graph.GreaterOrEqualOp: ("oge", "sge", "uge"),
}


def compare(kb: KernelBuilder, a: SSAValue, b: SSAValue, kind: type) -> SSAValue:
    if isinstance(a.type, StringType):  # Equal only (the converter refuses the others)
        return string_bytes.equal(kb, a, b)
    fp, signed, unsigned = _PREDICATES[kind]
    if is_float(a.type):
        return kb.insert(arith.CmpfOp(a, b, fp))
    return kb.insert(arith.CmpiOp(a, b, unsigned if is_unsigned(a.type) else signed))


def compare_kernel(op, kb: KernelBuilder, ins, outs):
    require_physical_broadcast(op)
    kind = type(op)
    map_elementwise(kb, ins, outs[0], lambda kb, a: compare(kb, a[0], a[1], kind))


# --------------------------------------------------------------------------- logic, bitwise

_BITWISE: dict[type, type] = {
    graph.AndOp: arith.AndIOp,
    graph.OrOp: arith.OrIOp,
    graph.XorOp: arith.XOrIOp,
    graph.BitwiseAndOp: arith.AndIOp,
    graph.BitwiseOrOp: arith.OrIOp,
    graph.BitwiseXorOp: arith.XOrIOp,
}
_LOGICAL = (graph.AndOp, graph.OrOp, graph.XorOp, graph.NotOp)


def _require_integer(op, element: Attribute) -> None:
    logical = isinstance(op, _LOGICAL)
    if logical and not is_bool(element):
        raise LoweringError(f"{op.name}: operands must be i1, got {element}")
    if not isinstance(element, IntegerType):
        raise LoweringError(f"{op.name}: operands must be integers, got {element}")


def bitwise_kernel(op, kb: KernelBuilder, ins, outs):
    require_physical_broadcast(op)
    _require_integer(op, outs[0].type.get_element_type())
    arith_op = _BITWISE[type(op)]
    map_elementwise(kb, ins, outs[0], lambda kb, a: kb.insert(arith_op(a[0], a[1])))


def not_kernel(op, kb: KernelBuilder, ins, outs):
    """Not / BitwiseNot: x xor all-ones."""
    require_physical_broadcast(op)
    element = outs[0].type.get_element_type()
    _require_integer(op, element)
    all_ones = (1 << element.width.data) - 1 if is_unsigned(element) else -1
    ones = kb.constant(all_ones, element)
    map_elementwise(kb, ins, outs[0], lambda kb, a: kb.insert(arith.XOrIOp(a[0], ones)))


def bit_shift_kernel(op: graph.BitShiftOp, kb: KernelBuilder, ins, outs):
    """Logical left shifts; right shifts are arithmetic on signed integers. A shift count
    outside [0, width) shifts every bit out (0, or -1 for a negative signed right shift),
    as onnx's reference does, where LLVM would give poison."""
    require_physical_broadcast(op)
    element = outs[0].type.get_element_type()
    if not isinstance(element, IntegerType) or is_bool(element):
        raise LoweringError(f"{op.name}: operands must be integers, got {element}")
    left, signed = op.direction.data == "LEFT", not is_unsigned(element)
    shift = arith.ShLIOp if left else (arith.ShRSIOp if signed else arith.ShRUIOp)
    width = kb.constant(element.width.data, element)
    zero = kb.constant(0, element)

    def body(kb: KernelBuilder, a: Sequence[SSAValue]) -> SSAValue:
        in_range = kb.insert(arith.CmpiOp(a[1], width, "ult"))  # negative counts too
        count = kb.select(in_range, a[1], zero)
        if left or not signed:
            shifted_out = zero
        else:  # the sign bit everywhere
            last_bit = kb.constant(element.width.data - 1, element)
            shifted_out = kb.insert(arith.ShRSIOp(a[0], last_bit))
        return kb.select(in_range, kb.insert(shift(a[0], count)), shifted_out)

    map_elementwise(kb, ins, outs[0], body)


# --------------------------------------------------------------------------- Mod


def _integer_mod(kb: KernelBuilder, a: SSAValue, b: SSAValue, fmod: bool) -> SSAValue:
    if is_unsigned(a.type):
        return kb.insert(arith.RemUIOp(a, kb.safe_divisor(a, b)))
    # the sign of the dividend; MIN % -1 is 0 (the safe divisor is 1 there), and a zero
    # divisor was refused by the run-time check before the kernel ran
    r = kb.insert(arith.RemSIOp(a, kb.safe_divisor(a, b)))
    if fmod:
        return r
    # Python %: a nonzero remainder whose sign differs from the divisor's moves by b
    zero = kb.constant(0, a.type)
    nonzero = kb.insert(arith.CmpiOp(r, zero, "ne"))
    signs_differ = kb.insert(arith.CmpiOp(kb.insert(arith.XOrIOp(r, b)), zero, "slt"))
    fix = kb.insert(arith.AndIOp(nonzero, signs_differ))
    return kb.select(fix, kb.add(r, b), r)


def _float_mod(kb: KernelBuilder, a: SSAValue, b: SSAValue, fmod: bool) -> SSAValue:
    # xDSL's arith has no remf; LLVM's frem is C fmod exactly (float types pass through
    # convert-*-to-llvm unchanged)
    r = kb.insert(llvm.FRemOp(a, b))
    if fmod:
        return r
    # numpy.mod: a nonzero remainder whose sign differs from the divisor's moves by b; a
    # zero one takes the divisor's sign
    zero = kb.constant(0.0, a.type)
    nonzero = kb.insert(arith.CmpfOp(r, zero, "one"))
    differ = kb.insert(arith.XOrIOp(kb.less_than(r, zero), kb.less_than(b, zero)))
    moved = kb.select(kb.insert(arith.AndIOp(nonzero, differ)), kb.add(r, b), r)
    signed_zero = kb.insert(math.CopySignOp(zero, b))
    is_zero = kb.insert(arith.CmpfOp(r, zero, "oeq"))
    return kb.select(is_zero, signed_zero, moved)


def mod_kernel(op: graph.ModOp, kb: KernelBuilder, ins, outs):
    require_physical_broadcast(op)
    element = outs[0].type.get_element_type()
    fmod = int_of(op.fmod) != 0
    if is_float(element):
        fn: Callable = lambda kb, a: _float_mod(kb, a[0], a[1], fmod)
    elif isinstance(element, IntegerType) and not is_bool(element):
        fn = lambda kb, a: _integer_mod(kb, a[0], a[1], fmod)
    else:
        raise LoweringError(f"{op.name}: element type {element} is not supported")
    map_elementwise(kb, ins, outs[0], fn)


# --------------------------------------------------------------------------- Where, tests


def where_kernel(op: graph.WhereOp, kb: KernelBuilder, ins, outs):
    require_physical_broadcast(op)
    map_elementwise(kb, ins, outs[0], lambda kb, a: kb.select(a[0], a[1], a[2]))


def is_nan_kernel(op: graph.IsNaNOp, kb: KernelBuilder, ins, outs):
    require_physical_broadcast(op)
    element = ins[0].type.get_element_type()
    if not is_float(element):
        raise LoweringError(f"{op.name}: element type {element} is not a float")
    map_elementwise(kb, ins, outs[0], lambda kb, a: kb.insert(arith.CmpfOp(a[0], a[0], "uno")))


def is_inf_kernel(op: graph.IsInfOp, kb: KernelBuilder, ins, outs):
    require_physical_broadcast(op)
    element = ins[0].type.get_element_type()
    if not is_float(element):
        raise LoweringError(f"{op.name}: element type {element} is not a float")
    signs = [sign for sign, attr in ((1.0, op.detect_positive), (-1.0, op.detect_negative))
             if int_of(attr) != 0]

    def body(kb: KernelBuilder, a: Sequence[SSAValue]) -> SSAValue:
        tests = [kb.insert(arith.CmpfOp(a[0], kb.constant(sign * float("inf"), element), "oeq"))
                 for sign in signs]
        if not tests:
            return kb.constant(0, IntegerType(1))
        return tests[0] if len(tests) == 1 else kb.insert(arith.OrIOp(tests[0], tests[1]))

    map_elementwise(kb, ins, outs[0], body)


RULES = (
    *rules(_PREDICATES, compare_kernel, symbolic=True),
    *rules(_BITWISE, bitwise_kernel, symbolic=True),
    *rules((graph.NotOp, graph.BitwiseNotOp), not_kernel, symbolic=True),
    KernelRule(graph.BitShiftOp, bit_shift_kernel, symbolic=True),
    KernelRule(graph.ModOp, mod_kernel, symbolic=True),
    KernelRule(graph.WhereOp, where_kernel, symbolic=True),
    KernelRule(graph.IsNaNOp, is_nan_kernel, symbolic=True),
    KernelRule(graph.IsInfOp, is_inf_kernel, symbolic=True),
)
"""symbolic: the kernels read their sizes from the KernelBuilder (symbolic dims welcome)."""
