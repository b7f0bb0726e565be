"""Building blocks for kernel bodies: loop nests, index arithmetic, sizes, loads and stores.

Kernels are written against `KernelBuilder`, which keeps one insertion point and hides the
ceremony of `scf.for` blocks and constants. Index operands are `int | SSAValue`: arithmetic
on plain ints folds in Python, so static index maps cost no IR, and a loop with a static trip
count of one is not emitted at all (its body sees the constant index). The builder's typed
scalar math is in scalar_math.py (which it inherits), the element-type tests in
element_types.py and the memref types of buffers in buffer_types.py.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

from xdsl.dialects import arith, memref, scf, vector
from xdsl.dialects.builtin import (
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    Signedness,
    UnrealizedConversionCastOp,
    VectorType,
)
from xdsl.ir import Attribute, Block, BlockArgument, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from onnxc.dialects.symbolic_dims import Atom, Dim, SymDim
from onnxc.errors import LoweringError
from onnxc.lowering.graph_to_loops.buffer_views import flat_view, is_flat, reinterpret
from onnxc.lowering.graph_to_loops.element_types import is_bool, is_float
from onnxc.lowering.graph_to_loops.scalar_math import ScalarMath
from onnxc.lowering.to_llvm.parallel import mark_parallel
from onnxc.target import Target

Index = int | SSAValue

_INDEX = IndexType()
_NO_FAST_MATH = arith.FastMathFlagsAttr("none")
_INDEX_OP_PROPERTIES: dict[type[Operation], dict[str, Attribute]] = {
    cls: {"overflowFlags": arith.IntegerOverflowAttr("none")}
    for cls in (arith.AddiOp, arith.SubiOp, arith.MuliOp)
}
"""What `arith.AddiOp(a, b)` and its siblings set; the signed division, min and max have none."""
LoopBody = Callable[..., Sequence[SSAValue] | None]


def _is(v: Index, n: int) -> bool:
    return isinstance(v, int) and v == n


@functools.lru_cache(maxsize=4096)
def _integer_attr(value: int, t: Attribute) -> IntegerAttr:
    """IntegerAttr(value, t), built (and range-checked) once: kernels share their constants."""
    return IntegerAttr(value, t)  # type: ignore[arg-type]


def broadcast_indices(ivs: Sequence[Index], shape: Sequence[int]) -> list[Index]:
    """Indices into an operand of `shape` broadcast (right-aligned) to the loop space `ivs`."""
    lead = len(ivs) - len(shape)
    return [0 if d == 1 else ivs[lead + i] for i, d in enumerate(shape)]


class KernelBuilder(ScalarMath):
    """Appends ops to one block, with constants hoisted to the kernel's entry block; builds
    for `target` (convert-graph-to-loops gives the module's: `onnxc.target.target_of`)."""

    def __init__(self, entry: Block, target: Target | None = None):
        self.entry = entry
        self._target = target
        self.ip = InsertPoint.at_end(entry)
        self._constants: dict[tuple[str, Attribute], SSAValue] = {}
        self._index_constants: dict[int, SSAValue] = {}  # idx's, without building a key
        self._index_ops: dict[tuple[type[Operation], SSAValue, SSAValue, Block], SSAValue] = {}
        self.symbols: dict[str, SSAValue] = {}
        """size symbol -> its run-time value (an index argument of the kernel)"""
        self._dims: dict[Dim, Index] = {}
        self._dims_end: Operation | None = None
        """the last op of the size arithmetic at the top of the entry block"""
        self._shapes: dict[SSAValue, tuple[list[Index], list[Index], SSAValue]] = {}
        """memref with symbolic dims -> (logical shape, row-major strides, flat view)"""

    @property
    def target(self) -> Target:
        """The machine the kernel is built for: what decides vector widths, register tiles
        and the int8 / bf16 instructions. A builder made without one (size arithmetic
        only, plan-memory's) has none to give."""
        if self._target is None:
            raise LoweringError("this KernelBuilder builds size arithmetic only: it has no "
                                "target to build a kernel for")
        return self._target

    # ------------------------------------------------------------------ symbolic sizes

    def bind_symbols(self, symbols: dict[str, SSAValue]) -> None:
        self.symbols.update(symbols)

    def rebind(self, name: str, value: SSAValue) -> None:
        """Symbol `name` has a new value from here on (a run symbol, once defined: until
        then it held its capacity); sizes computed with the old one are forgotten."""
        self.symbols[name] = value
        self._dims = {d: v for d, v in self._dims.items()
                      if isinstance(d, int) or name not in d.symbols()}

    def dim(self, d: Dim) -> Index:
        """A size as an index: an int, or arithmetic on the symbols' values (cached). In a
        kernel, whose symbols are its arguments, the arithmetic goes to the top of its entry
        block, where every use sees it (kernels written with static shapes in mind take
        sizes anywhere: `kb.iadd(i, g.hp)` deep in a loop nest); elsewhere at the
        insertion point (call it first where the value dominates its uses)."""
        if isinstance(d, int):
            return d
        found = self._dims.get(d)
        if found is not None:
            return found
        if not all(isinstance(v, BlockArgument) and v.owner is self.entry
                   for v in self.symbols.values()):
            self._dims[d] = value = self._expand(d)
            return value
        saved = self.ip
        if self._dims_end is not None:
            before = self._dims_end.next_op
        else:  # after the constants, which `constant` puts at the very top
            before = self.entry.first_op
            while isinstance(before, arith.ConstantOp | UnrealizedConversionCastOp):
                before = before.next_op
        self.ip = InsertPoint(self.entry, before)
        try:
            value = self._expand(d)
        finally:
            self.ip = saved
        last = before.prev_op if before is not None else self.entry.last_op
        if last is not None:
            self._dims_end = last
        self._dims[d] = value
        return value

    def _expand(self, d: SymDim) -> Index:
        total: Index = 0
        for monomial, coefficient in d.terms.items():
            term: Index = coefficient
            for atom in monomial:
                term = self.imul(term, self._atom(atom))
            total = self.iadd(total, term)
        return total

    def index(self, v: Index | SymDim) -> Index:
        """An index operand: a size that is a SymDim becomes its run-time value (kernel
        code written for static shapes passes sizes straight through)."""
        return self.dim(v) if isinstance(v, SymDim) else v

    def _atom(self, atom: Atom) -> Index:
        """A symbol's argument, or a floor division, min or max of sizes."""
        if isinstance(atom, str):
            if atom not in self.symbols:
                raise LoweringError(f"size symbol '{atom}' has no value in this kernel")
            return self.symbols[atom]
        args = [self.dim(a) for a in atom.args]
        if atom.fn == "floordiv":
            return self._index_op(arith.FloorDivSIOp, *args)
        pick = self.imin if atom.fn == "min" else self.imax
        value = args[0]
        for arg in args[1:]:
            value = pick(value, arg)
        return value

    def bind_shape(self, mem: SSAValue, shape: Sequence[Dim]) -> None:
        """Give the memref `mem` (with `?` dims) its logical shape: loads, stores and views
        of it then address a flat view with run-time strides."""
        dims = [self.dim(d) for d in shape]
        self._register(mem, dims)

    def _register(self, mem: SSAValue, dims: list[Index]) -> None:
        flat = mem if is_flat(mem.type) else self.insert(flat_view(mem, self.product(dims)))
        self._shapes[mem] = (dims, self._strides(dims), flat)

    def _strides(self, dims: Sequence[Index]) -> list[Index]:
        strides: list[Index] = []
        acc: Index = 1
        for d in reversed(dims):
            strides.append(acc)
            acc = self.imul(acc, d)
        return strides[::-1]

    def shape(self, mem: SSAValue) -> list[Index]:
        """The logical shape of a memref: its static shape, or the one `bind_shape` gave."""
        if mem in self._shapes:
            return list(self._shapes[mem][0])
        assert isinstance(mem.type, MemRefType)
        return list(mem.type.get_shape())

    def is_bound(self, mem: SSAValue) -> bool:
        return mem in self._shapes

    def count(self, mem: SSAValue) -> Index:
        """The number of elements of a memref."""
        total: Index = 1
        for d in self.shape(mem):
            total = self.imul(total, d)
        return total

    def address(self, mem: SSAValue, indices: Sequence[Index]) -> tuple[SSAValue, list[SSAValue]]:
        """(memref, indices) to access element `indices` of `mem` with any memref op (e.g. a
        `vector.load`): `mem` itself, or for a memref with symbolic dims its flat view and
        the linear index."""
        if mem in self._shapes:
            flat, linear = self._linear(mem, indices)
            return flat, [linear]
        return mem, [self.idx(i) for i in indices]

    def _linear(self, mem: SSAValue, indices: Sequence[Index]) -> tuple[SSAValue, SSAValue]:
        _, strides, flat = self._shapes[mem]
        linear: Index = 0
        for i, stride in zip(indices, strides, strict=True):
            linear = self.iadd(linear, self.imul(i, stride))
        return flat, self.idx(linear)

    # ------------------------------------------------------------------ insertion

    def insert(self, op: Operation) -> SSAValue:
        Rewriter.insert_op(op, self.ip)
        return op.results[0] if op.results else None  # type: ignore[return-value]

    def constant(self, value: float, t: Attribute) -> SSAValue:
        """A cached constant of type `t` (index, integer or float) at the kernel's entry."""
        key = (repr(float(value)) if is_float(t) else repr(int(value)), t)
        if key not in self._constants:
            if is_float(t):
                attr = FloatAttr(float(value), t)  # type: ignore[arg-type]
            elif is_bool(t):
                attr = IntegerAttr(int(bool(value)), t)  # type: ignore[arg-type]
            elif isinstance(t, IntegerType) and t.signedness.data != Signedness.SIGNLESS:
                # arith.constant is signless only: ui8 200 is i8 -56 cast to ui8 (same bits)
                signless = IntegerType(t.width.data)
                bits = int(value) & ((1 << t.width.data) - 1)
                if bits >= 1 << (t.width.data - 1):
                    bits -= 1 << t.width.data
                const = arith.ConstantOp(IntegerAttr(bits, signless), signless)
                cast = UnrealizedConversionCastOp.get([const.result], [t])
                Rewriter.insert_op(cast, InsertPoint.at_start(self.entry))
                Rewriter.insert_op(const, InsertPoint.at_start(self.entry))
                self._constants[key] = cast.results[0]
                return self._constants[key]
            else:
                attr = _integer_attr(int(value), t)
            op = arith.ConstantOp.create(result_types=[t], properties={"value": attr})
            Rewriter.insert_op(op, InsertPoint.at_start(self.entry))
            self._constants[key] = op.result
        return self._constants[key]

    def idx(self, v: Index) -> SSAValue:
        if isinstance(v, SymDim):
            v = self.dim(v)
        if not isinstance(v, int):
            return v
        found = self._index_constants.get(v)
        if found is None:
            found = self._index_constants[v] = self.constant(v, _INDEX)
        return found

    # ---------------------------------- vector ops, built with `create` like the index ops
    # (vector.load / store through their generic `__init__` cost 4-8 times as much)

    def vload(self, mem: SSAValue, indices: Sequence[Index], vtype: VectorType) -> SSAValue:
        """A vector load (along the last index); a memref with symbolic dims is addressed
        through its flat view, as `load` does."""
        if self._logical(mem, indices):
            mem, linear = self._linear(mem, indices)
            indices = [linear]
        return self.insert(vector.LoadOp.create(
            operands=[mem, *(self.idx(i) for i in indices)], result_types=[vtype]))

    def vstore(self, value: SSAValue, mem: SSAValue, indices: Sequence[Index]) -> None:
        if self._logical(mem, indices):
            mem, linear = self._linear(mem, indices)
            indices = [linear]
        self.insert(vector.StoreOp.create(operands=[value, mem, *(self.idx(i) for i in indices)]))

    def _logical(self, mem: SSAValue, indices: Sequence[Index]) -> bool:
        """Whether `indices` address `mem` by its logical shape (a memref with symbolic
        dims), not already linear into its flat view (what `address` gives)."""
        shape = self._shapes.get(mem)
        return shape is not None and len(indices) == len(shape[0]) > 1

    def float_op(self, cls: type[Operation], a: SSAValue, b: SSAValue) -> SSAValue:
        """`cls(a, b)` for an arith float binary op without fast-math flags (AddfOp,
        MaximumfOp, ...), built with `create`: the kernels' epilogues make hundreds."""
        return self.insert(cls.create(operands=[a, b], result_types=[a.type],
                                      properties={"fastmath": _NO_FAST_MATH}))

    def vfma(self, a: SSAValue, b: SSAValue, acc: SSAValue) -> SSAValue:
        return self.insert(vector.FMAOp.create(operands=[a, b, acc], result_types=[acc.type]))

    def vsplat(self, scalar: SSAValue, vtype: VectorType) -> SSAValue:
        return self.insert(vector.BroadcastOp.create(operands=[scalar], result_types=[vtype]))

    # ------------------------------------------------------------------ index arithmetic

    def _index_op(self, cls: type[Operation], a: Index, b: Index) -> SSAValue:
        """`cls(a, b)` on index values, built with `create`: the conv kernels make thousands
        of these, and the generic `__init__` (argument conversion) cost about a third more.
        The same op on the same values earlier in the block is reused (the kernels' unrolled
        tiles recompute their row and column offsets for every vector)."""
        lhs, rhs = self.idx(a), self.idx(b)
        block = self.ip.block
        key = (cls, lhs, rhs, block)
        found = self._index_ops.get(key)
        if (found is not None and found.owner.parent is block  # type: ignore[union-attr]
                and self.ip.insert_before is None):  # appending: all of block precedes
            return found
        op = cls.create(operands=[lhs, rhs], result_types=[_INDEX],
                        properties=dict(_INDEX_OP_PROPERTIES.get(cls, {})))
        result = self._index_ops[key] = self.insert(op)
        return result

    def iadd(self, a: Index, b: Index) -> Index:
        a, b = self.index(a), self.index(b)
        if isinstance(a, int) and isinstance(b, int):
            return a + b
        if _is(b, 0):
            return a
        if _is(a, 0):
            return b
        return self._index_op(arith.AddiOp, a, b)

    def isub(self, a: Index, b: Index) -> Index:
        a, b = self.index(a), self.index(b)
        if isinstance(a, int) and isinstance(b, int):
            return a - b
        if _is(b, 0):
            return a
        return self._index_op(arith.SubiOp, a, b)

    def imul(self, a: Index, b: Index) -> Index:
        a, b = self.index(a), self.index(b)
        if isinstance(a, int) and isinstance(b, int):
            return a * b
        if _is(a, 0) or _is(b, 0):
            return 0
        if _is(b, 1):
            return a
        if _is(a, 1):
            return b
        return self._index_op(arith.MuliOp, a, b)

    def idiv(self, a: Index, b: int) -> Index:
        """Division of a non-negative index by a positive constant."""
        a = self.index(a)
        if isinstance(a, int):
            return a // b
        if b == 1:
            return a
        return self._index_op(arith.DivSIOp, a, b)

    def imax(self, a: Index, b: Index) -> Index:
        a, b = self.index(a), self.index(b)
        if isinstance(a, int) and isinstance(b, int):
            return max(a, b)
        return self._index_op(arith.MaxSIOp, a, b)

    def imin(self, a: Index, b: Index) -> Index:
        a, b = self.index(a), self.index(b)
        if isinstance(a, int) and isinstance(b, int):
            return min(a, b)
        return self._index_op(arith.MinSIOp, a, b)

    def linear(self, terms: Sequence[tuple[Index, int]], offset: int = 0) -> Index:
        """sum(iv * coefficient) + offset."""
        acc: Index = offset
        for iv, coefficient in terms:
            acc = self.iadd(acc, self.imul(iv, coefficient))
        return acc

    # ------------------------------------------------------------------ loops

    def for_(
        self,
        lb: Index,
        ub: Index,
        body: LoopBody,
        step: int = 1,
        iter_args: Sequence[SSAValue] = (),
    ) -> tuple[SSAValue, ...]:
        """scf.for lb..ub; `body(iv, *iter_values)` returns the values to yield."""
        lb, ub = self.index(lb), self.index(ub)
        if isinstance(lb, int) and isinstance(ub, int):
            trips = len(range(lb, ub, step))
            if trips == 0:
                return tuple(iter_args)
            if trips == 1:
                return tuple(body(lb, *iter_args) or ())
        block = Block(arg_types=[IndexType(), *(v.type for v in iter_args)])
        saved, self.ip = self.ip, InsertPoint.at_end(block)
        yielded = body(block.args[0], *block.args[1:]) or ()
        # built with `create`, as the index ops: what scf.ForOp / YieldOp's `__init__` makes
        Rewriter.insert_op(scf.YieldOp.create(operands=list(yielded)), self.ip)
        self.ip = saved
        loop = scf.ForOp.create(
            operands=[self.idx(lb), self.idx(ub), self.idx(step), *iter_args],
            result_types=[v.type for v in iter_args], regions=[Region(block)])
        self.insert(loop)
        return tuple(loop.results)

    def unrolled_for(self, count: Index, body: LoopBody, unroll: int,
                     iter_args: Sequence[SSAValue]) -> tuple[SSAValue, ...]:
        """`body(i, *values)` for i in [0, count), `unroll` bodies per scf.for iteration
        where a static `count` is a multiple of it (else of 2, else 1): LLVM leaves a loop
        of vector FMAs rolled, and the micro-kernel's k loop ran 1-11% faster four steps
        to an iteration on Zen 3 (gemm_microkernel.K_UNROLL)."""
        if isinstance(count, int):
            unroll = next(u for u in (unroll, 2, 1) if count % u == 0)
        else:
            unroll = 1

        def steps(i: Index, *values: SSAValue) -> Sequence[SSAValue]:
            for q in range(unroll):
                values = tuple(body(self.iadd(i, q), *values))
            return values

        return self.for_(0, count, steps, step=unroll, iter_args=iter_args)

    def parallel_for(self, lb: Index, ub: Index, body: Callable[[Index], None]) -> None:
        """A loop whose iterations are independent and may run on several threads.

        Kernels mark their outermost worthwhile loop with this (no iter_args, no results);
        the threading lowering decides whether and how to split it: `outline-parallel-loops`
        runs chunks of it on the thread pool (a parallel_for nested in another runs serially).
        Stack scratch (`memref.alloca`) the body uses from outside the loop is private to
        each thread (uninitialized): iterations must not pass data through it.
        """
        lb, ub = self.index(lb), self.index(ub)
        if isinstance(lb, int) and isinstance(ub, int) and ub - lb < 2:
            self.for_(lb, ub, body)  # no loop is emitted (the body is inlined or dropped)
            return
        self.for_(lb, ub, body)
        before = self.ip.insert_before
        loop = before.prev_op if before is not None else self.ip.block.last_op
        assert isinstance(loop, scf.ForOp)
        mark_parallel(loop)

    def nest(
        self,
        bounds: Sequence[int | tuple[Index, Index]],
        body: Callable[[list[Index]], None],
    ) -> None:
        """Perfect loop nest; a bound is an extent or an (lb, ub) pair. Innermost last."""

        def level(depth: int, ivs: list[Index]) -> None:
            if depth == len(bounds):
                body(ivs)
                return
            bound = bounds[depth]
            lb, ub = bound if isinstance(bound, tuple) else (0, bound)
            self.for_(lb, ub, lambda iv: level(depth + 1, [*ivs, iv]))

        level(0, [])

    def reduce(
        self,
        lb: Index,
        ub: Index,
        init: Sequence[SSAValue],
        body: Callable[..., Sequence[SSAValue]],
    ) -> tuple[SSAValue, ...]:
        """Loop-carried reduction: body(iv, *accumulators) -> new accumulators."""
        return self.for_(lb, ub, body, iter_args=init)

    # ------------------------------------------------------------------ memory

    def load(self, mem: SSAValue, indices: Sequence[Index]) -> SSAValue:
        if mem in self._shapes:
            flat, linear = self._linear(mem, indices)
            mem, index_values = flat, [linear]
        else:
            index_values = [self.idx(i) for i in indices]
        return self.insert(memref.LoadOp.create(  # memref.LoadOp.get's op, with `create`
            operands=[mem, *index_values], result_types=[mem.type.get_element_type()]))

    def store(self, value: SSAValue, mem: SSAValue, indices: Sequence[Index]) -> None:
        if mem in self._shapes:
            flat, linear = self._linear(mem, indices)
            self.insert(memref.StoreOp.get(value, flat, [linear]))
            return
        self.insert(memref.StoreOp.get(value, mem, [self.idx(i) for i in indices]))

    def view(self, mem: SSAValue, shape: Sequence[Index]) -> SSAValue:
        """`mem` seen with another shape (same element count), no copy. A shape with
        run-time sizes, or a view of a memref with symbolic dims, is a new flat view
        registered with that shape."""
        assert isinstance(mem.type, MemRefType)
        shape = [self.index(d) for d in shape]
        if mem in self._shapes or not all(isinstance(d, int) for d in shape):
            if mem in self._shapes and self._shapes[mem][0] == list(shape):
                return mem
            source = self._shapes[mem][2] if mem in self._shapes else mem
            view = self.insert(flat_view(source, self.product(shape)))
            self._register_view(view, list(shape))
            return view
        if tuple(mem.type.get_shape()) == tuple(shape):
            return mem
        return self.insert(reinterpret(mem, shape))

    def product(self, shape: Sequence[Index]) -> Index:
        total: Index = 1
        for d in shape:
            total = self.imul(total, d)
        return total

    def _register_view(self, flat: SSAValue, dims: list[Index]) -> None:
        self._shapes[flat] = (dims, self._strides(dims), flat)


def may_exceed(size: Dim | Index, n: int) -> bool:
    """Whether a size may be larger than n: a static one compared, a symbolic one may."""
    return not isinstance(size, int) or size > n


def parallel_nest(kb: KernelBuilder, shape: Sequence[Index], body) -> None:
    """A nest over `shape` whose outermost loop with more than one index (or a run-time
    extent) is parallel."""
    lead = next((k for k, d in enumerate(shape) if may_exceed(d, 1)), None)
    if lead is None:
        body([0] * len(shape))
        return
    ones = [0] * lead
    kb.parallel_for(0, shape[lead], lambda i: kb.nest(
        nest_bounds(shape[lead + 1:]), lambda ivs: body([*ones, i, *ivs])))


def nest_bounds(shape: Sequence[Index]) -> list[int | tuple[Index, Index]]:
    """`KernelBuilder.nest` bounds for extents that may be run-time sizes."""
    return [d if isinstance(d, int) else (0, d) for d in shape]


def is_nonzero(size: Dim) -> bool:
    """Whether a size may be nonzero (a static 0 is the only one that is not)."""
    return not (isinstance(size, int) and size == 0)


def unflatten(kb: KernelBuilder, flat: Index, dims: Sequence[Index]) -> list[Index]:
    """Row-major multi-index of `flat` in a space of extents `dims` (a run-time extent is
    at least 1 wherever the index exists)."""
    out: list[Index] = []
    for d in reversed(dims):
        if isinstance(d, int):
            quotient = kb.idiv(flat, d)
        else:
            quotient = kb.insert(arith.DivUIOp(kb.idx(flat), d))
        out.append(kb.isub(flat, kb.imul(quotient, d)))
        flat = quotient
    return out[::-1]


def window_range(
    kb: KernelBuilder, k: Index, dilation: int, pad: int, stride: int, in_size: int, out_size: int
) -> tuple[Index, Index, Index]:
    """For kernel offset `k` of a sliding window: the outputs o in [lo, hi) whose input
    o * stride + k * dilation - pad lies inside [0, in_size), and that input offset.

    Computing this once per offset keeps padding tests out of the innermost loop. Every
    division has a non-negative numerator, so `arith.divsi` is the floor division needed.
    """
    kd = kb.imul(k, dilation)
    below = kb.isub(pad, kd)  # o * stride >= pad - kd
    lo = kb.idiv(kb.iadd(kb.imax(below, 0), stride - 1), stride)
    above = kb.isub(in_size - 1 + pad, kd)  # o * stride <= in_size - 1 + pad - kd
    hi = kb.imin(out_size, kb.idiv(kb.iadd(kb.imax(above, -stride), stride), stride))
    return lo, hi, kb.isub(kd, pad)
