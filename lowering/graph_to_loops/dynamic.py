"""Kernels of the ops whose result sizes are data (dialects/graph_dynamic.py), and the run
symbols of a function: where they are defined, the check that one fits its capacity, and the
room its buffers need.

Such a kernel gets, after its results, one `memref<1xi64>` cell per size it defines, and
writes the size there; its result buffers were allocated for the size's capacity (its
bound, or what the caller gave), which is the symbol's value the kernel receives. It
writes its results laid out for the size it found (row-major [rank, count] for NonZero),
and writes none at all when that size is past the capacity: the entry's capacity check
after the call then stops the run, and the caller runs it again with room (lowering pass_
`define_size`, runtime compiled_model).
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import arith, func, memref
from xdsl.dialects.builtin import ArrayAttr, IndexType, IntegerAttr, IntegerType, MemRefType, i64
from xdsl.ir import Block, Operation, SSAValue

from onnxc.dialects import graph
from onnxc.dialects.entry_abi import CHECK_OPERANDS_ATTR, CHECK_SITE_ATTR
from onnxc.dialects.graph import int_of, is_symbolic, shape_of
from onnxc.dialects.graph_checks import onnx_node_of
from onnxc.dialects.graph_dynamic import defined_sizes
from onnxc.dialects.size_substitution import monotone_upper
from onnxc.dialects.symbolic_dims import Dim, num_elements, symbols_of
from onnxc.errors import LoweringError
from onnxc.lowering.graph_to_loops.branches import when
from onnxc.lowering.graph_to_loops.buffer_types import RunTimeScratch
from onnxc.lowering.graph_to_loops.checks import STATUS_TYPE
from onnxc.lowering.graph_to_loops.element_types import is_float
from onnxc.lowering.graph_to_loops.loops import Index, KernelBuilder, unflatten
from onnxc.lowering.graph_to_loops.rules import KernelRule
from onnxc.target import Target

COUNT_TYPE = MemRefType(i64, [1])
"""Where a kernel writes a size it defines (a run symbol, graph_dynamic.py)."""


def _nonzero(kb: KernelBuilder, value: SSAValue) -> SSAValue:
    """value != 0 (NaN counts as nonzero, as numpy and onnxruntime say)."""
    zero = kb.constant(0, value.type)
    if is_float(value.type):
        return kb.insert(arith.CmpfOp(value, zero, "une"))
    return kb.insert(arith.CmpiOp(value, zero, "ne"))


def nonzero_kernel(op: graph.NonZeroOp, kb: KernelBuilder, ins, outs) -> None:
    """Count the nonzero elements, then (when they fit) write their coordinates: row r
    of the result holds axis r's coordinate of each, in row-major order."""
    shape = shape_of(op.input)
    n = num_elements(shape)
    flat = kb.view(ins[0], [n])
    (count_symbol,) = op.defined()
    capacity = kb.dim(count_symbol)  # the symbol's value in this kernel: the room it has
    y, cell = outs[0], outs[1]
    out = kb.view(y, [kb.imul(len(shape), capacity)])
    one, zero = kb.constant(1, i64), kb.constant(0, i64)
    (count,) = kb.reduce(0, n, [zero], lambda i, acc: [
        kb.add(acc, kb.select(_nonzero(kb, kb.load(flat, [i])), one, zero))])
    kb.store(count, cell, [0])
    fits = kb.insert(arith.CmpiOp(count, kb.insert(arith.IndexCastOp(kb.idx(capacity), i64)),
                                  "sle"))
    columns = kb.insert(arith.IndexCastOp(count, IndexType()))

    def write() -> None:
        def element(i: Index, j: SSAValue) -> list[SSAValue]:
            hit = _nonzero(kb, kb.load(flat, [i]))

            def store() -> None:
                at = kb.insert(arith.IndexCastOp(j, IndexType()))
                for r, coordinate in enumerate(unflatten(kb, i, [kb.index(d) for d in shape])):
                    value = kb.insert(arith.IndexCastOp(kb.idx(coordinate), i64))
                    kb.store(value, out, [kb.iadd(kb.imul(r, columns), at)])

            when(kb, hit, store)
            return [kb.add(j, kb.select(hit, one, zero))]

        kb.reduce(0, n, [zero], element)

    when(kb, fits, write)


# --------------------------------------------------------------------------- NMS


def nms_scratch(op: graph.NonMaxSuppressionOp,
                target: Target) -> list[MemRefType | RunTimeScratch]:
    """Per (batch, class), reused: the candidate boxes, a merge buffer, the kept boxes."""
    boxes = shape_of(op.boxes)[1]
    elements = 3 * boxes
    return [MemRefType(i64, [max(elements, 1)]) if isinstance(elements, int)
            else RunTimeScratch(i64, elements)]


def nms_kernel(op: graph.NonMaxSuppressionOp, kb: KernelBuilder, ins, outs) -> None:
    """For each batch and class: the candidates (score above the threshold, when there is
    one), sorted by score, ties to the lower index (a bottom-up merge sort), then kept
    greedily when no kept box overlaps them by more than the IoU threshold, up to
    max_output; the kept rows go out in that order (onnx.reference's and onnxruntime's
    algorithm, in f32 as they compute it)."""
    boxes, scores, max_output, iou_threshold, score_threshold, scratch = ins
    out, cell = outs
    batches, n, _ = shape_of(op.boxes)
    classes = shape_of(op.scores)[1]
    (count_symbol,) = op.defined()
    capacity = kb.insert(arith.IndexCastOp(kb.idx(kb.dim(count_symbol)), i64))
    rows = kb.view(out, [kb.imul(kb.dim(count_symbol), 3)])
    candidates = kept = kb.view(scratch, [3 * n])
    base = (0, n, kb.imul(n, 2))  # candidates, merge buffer, kept boxes: in the scratch
    limit = kb.max(kb.load(max_output, [0]), kb.constant(0, i64))
    iou, threshold = kb.load(iou_threshold, [0]), kb.load(score_threshold, [0])
    filtered = bool(int_of(op.score_filter))
    one, zero = kb.constant(1, i64), kb.constant(0, i64)

    def at(array: int, k: Index) -> list[Index]:
        return [kb.iadd(base[array], k)]

    def score(b: Index, c: Index, box: SSAValue) -> SSAValue:
        return kb.load(scores, [b, c, kb.insert(arith.IndexCastOp(box, IndexType()))])

    def per_class(b: Index, c: Index, total: SSAValue) -> SSAValue:
        def collect(i: Index, found: SSAValue) -> list[SSAValue]:
            take = kb.insert(arith.CmpfOp(kb.load(scores, [b, c, i]), threshold, "ogt")) \
                if filtered else kb.constant(1, IntegerType(1))
            when(kb, take, lambda: kb.store(kb.insert(arith.IndexCastOp(kb.idx(i), i64)),
                                            candidates, at(0, _index(kb, found))))
            return [kb.add(found, kb.select(take, one, zero))]

        (found,) = kb.reduce(0, n, [zero], collect)
        size = _index(kb, found)
        _sort(kb, candidates, base, size, lambda box: score(b, c, box))

        def greedy(k: Index, selected: SSAValue) -> list[SSAValue]:
            box = kb.load(candidates, at(0, k))
            (suppressed,) = kb.reduce(0, _index(kb, selected), [kb.constant(0, IntegerType(1))],
                                      lambda j, acc: [kb.insert(arith.OrIOp(acc, _overlaps(
                                          kb, op, boxes, b, box, kb.load(kept, at(2, j)), iou)))])
            room = kb.insert(arith.CmpiOp(selected, limit, "slt"))
            keep = kb.insert(arith.AndIOp(room, kb.insert(arith.XOrIOp(
                suppressed, kb.constant(1, IntegerType(1))))))

            def store() -> None:
                kb.store(box, kept, at(2, _index(kb, selected)))
                row = kb.add(total, selected)
                fits = kb.insert(arith.CmpiOp(row, capacity, "slt"))

                def write() -> None:
                    first = kb.imul(_index(kb, row), 3)
                    for column, value in enumerate((_i64(kb, b), _i64(kb, c), box)):
                        kb.store(value, rows, [kb.iadd(first, column)])

                when(kb, fits, write)

            when(kb, keep, store)
            return [kb.add(selected, kb.select(keep, one, zero))]

        (selected,) = kb.reduce(0, size, [zero], greedy)
        return kb.add(total, selected)

    (total,) = kb.reduce(0, batches, [zero], lambda b, t: kb.reduce(
        0, classes, [t], lambda c, t2: [per_class(b, c, t2)]))
    kb.store(total, cell, [0])


def _index(kb: KernelBuilder, value: SSAValue) -> SSAValue:
    return kb.insert(arith.IndexCastOp(value, IndexType()))


def _i64(kb: KernelBuilder, i: Index) -> SSAValue:
    return kb.insert(arith.IndexCastOp(kb.idx(i), i64))


def _sort(kb: KernelBuilder, scratch: SSAValue, base, size: SSAValue, key) -> None:
    """Sort scratch[0:size] (box indices) by key(box) descending, ties to the lower index:
    a bottom-up merge sort through scratch[n:2n], one pass per doubling width."""
    one = kb.idx(1)

    def merge_pass(p: Index) -> None:
        width = kb.insert(arith.ShLIOp(one, kb.idx(p)))

        def run(pair: Index) -> None:
            lo = kb.imul(pair, kb.imul(width, 2))
            mid = kb.imin(kb.iadd(lo, width), size)
            hi = kb.imin(kb.iadd(mid, width), size)
            last = kb.isub(size, 1)

            def take(k: Index, i: SSAValue, j: SSAValue) -> list[SSAValue]:
                left = kb.load(scratch, [kb.iadd(base[0], kb.imin(i, last))])
                right = kb.load(scratch, [kb.iadd(base[0], kb.imin(j, last))])
                kl, kr = key(left), key(right)
                better = kb.insert(arith.OrIOp(
                    kb.insert(arith.CmpfOp(kl, kr, "ogt")),
                    kb.insert(arith.AndIOp(kb.insert(arith.CmpfOp(kl, kr, "oeq")),
                                           kb.insert(arith.CmpiOp(left, right, "slt"))))))
                has_left = kb.insert(arith.CmpiOp(i, mid, "slt"))
                no_right = kb.insert(arith.CmpiOp(j, hi, "sge"))
                from_left = kb.insert(arith.AndIOp(has_left, kb.insert(arith.OrIOp(
                    no_right, better))))
                kb.store(kb.select(from_left, left, right), scratch, [kb.iadd(base[1], k)])
                return [kb.select(from_left, kb.idx(kb.iadd(i, 1)), i),
                        kb.select(from_left, j, kb.idx(kb.iadd(j, 1)))]

            kb.for_(lo, hi, take, iter_args=[kb.idx(lo), kb.idx(mid)])

        pairs = kb.insert(arith.CeilDivUIOp(size, kb.idx(kb.imul(width, 2))))
        when(kb, kb.insert(arith.CmpiOp(width, size, "slt")), lambda: (
            kb.for_(0, pairs, run),
            kb.for_(0, size, lambda k: kb.store(kb.load(scratch, [kb.iadd(base[1], k)]),
                                                scratch, [kb.iadd(base[0], k)]))))

    kb.for_(0, 63, merge_pass)


def _overlaps(kb: KernelBuilder, op, boxes: SSAValue, b: Index, first: SSAValue,
              second: SSAValue, threshold: SSAValue) -> SSAValue:
    """Whether the IoU of two boxes exceeds the threshold (onnx.reference's
    suppress_by_iou, the same f32 operations)."""
    def coords(box: SSAValue) -> list[SSAValue]:
        i = _index(kb, box)
        return [kb.load(boxes, [b, i, k]) for k in range(4)]

    def extent(v: list[SSAValue], lo: int, hi: int) -> tuple[SSAValue, SSAValue]:
        return kb.min(v[lo], v[hi]), kb.max(v[lo], v[hi])

    def centred(v: list[SSAValue], centre: int, size: int) -> tuple[SSAValue, SSAValue]:
        half = kb.mul(v[size], kb.constant(0.5, v[size].type))
        return kb.sub(v[centre], half), kb.add(v[centre], half)

    a, c = coords(first), coords(second)
    if int_of(op.center_point_box):
        (ax0, ax1), (cx0, cx1) = centred(a, 0, 2), centred(c, 0, 2)
        (ay0, ay1), (cy0, cy1) = centred(a, 1, 3), centred(c, 1, 3)
    else:
        (ax0, ax1), (cx0, cx1) = extent(a, 1, 3), extent(c, 1, 3)
        (ay0, ay1), (cy0, cy1) = extent(a, 0, 2), extent(c, 0, 2)
    ix0, ix1 = kb.max(ax0, cx0), kb.min(ax1, cx1)
    iy0, iy1 = kb.max(ay0, cy0), kb.min(ay1, cy1)
    inter = kb.mul(kb.sub(ix1, ix0), kb.sub(iy1, iy0))
    area_a = kb.mul(kb.sub(ax1, ax0), kb.sub(ay1, ay0))
    area_c = kb.mul(kb.sub(cx1, cx0), kb.sub(cy1, cy0))
    union = kb.sub(kb.add(area_a, area_c), inter)
    zero = kb.constant(0.0, inter.type)
    conditions = [kb.insert(arith.CmpfOp(x, y, "ogt")) for x, y in (
        (ix1, ix0), (iy1, iy0), (inter, zero), (area_a, zero), (area_c, zero), (union, zero),
        (kb.div(inter, union), threshold))]
    result = conditions[0]
    for condition in conditions[1:]:
        result = kb.insert(arith.AndIOp(result, condition))
    return result


def bind_sizes_kernel(op: graph.BindSizesOp, kb: KernelBuilder, ins, outs) -> None:
    """Each element of the values, as i64, into its size's cell."""
    flat = kb.view(ins[0], [len(outs)])
    for k, cell in enumerate(outs):
        value = kb.load(flat, [k])
        if value.type != i64:
            value = kb.insert(arith.ExtSIOp(value, i64))
        kb.store(value, cell, [0])


RULES = (
    KernelRule(graph.NonZeroOp, nonzero_kernel, symbolic=True),
    KernelRule(graph.NonMaxSuppressionOp, nms_kernel, scratch=nms_scratch, symbolic=True),
    KernelRule(graph.BindSizesOp, bind_sizes_kernel, symbolic=True),
)
"""symbolic: their inputs' sizes may be symbolic too."""


# ------------------------------------------------------------ run symbols of a function


def run_symbols_of(body: Block) -> dict[str, tuple[Operation, Dim | None]]:
    """The run symbols of `body` (graph_dynamic.py): symbol -> (the op that defines it, its
    bound or None), in definition order; a loop's trip symbol has no bound. Defined at the
    function's top level, in an If's branch when bounded (its buffers are allocated before
    the If), or in a loop body: a size of its own each iteration, which no type outside
    the loop may name (its buffers are allocated for the bound, or the capacity, once)."""
    found: dict[str, tuple[Operation, Dim | None]] = {}
    for op in body.walk():
        sizes = dict(defined_sizes(op))
        if isinstance(op, graph.LoopOp) and op.trip_symbol is not None:
            sizes[op.trip_symbol.data] = None
        for name, bound in sizes.items():
            if op.parent_block() is not body and enclosing_loop(op, body) is None and (
                    bound is None or not in_branches(op, body)):
                raise LoweringError(
                    f"{op.name}{node_suffix(op)}: a size known only in the run ('{name}') is "
                    f"supported from the function's top level, a loop body or, bounded, an "
                    f"If's branch")
            found[name] = (op, bound)
    for op in body.walk():
        if isinstance(op, graph.LoopOp):
            local = loop_symbols(op)
            for r in op.results:
                if is_symbolic(r) and symbols_of(shape_of(r)) & local:
                    raise LoweringError(
                        f"{op.name}{node_suffix(op)}: its result {r.type} has a size that "
                        f"differs from one iteration to the next")
    return found


def loop_symbols(op: graph.LoopOp) -> set[str]:
    """The run symbols defined inside a loop's body: each iteration's own."""
    names: set[str] = set()
    for inner in op.body.walk():
        names.update(defined_sizes(inner))
        if isinstance(inner, graph.LoopOp) and inner.trip_symbol is not None:
            names.add(inner.trip_symbol.data)
    return names


def enclosing_loop(op: Operation, body: Block) -> graph.LoopOp | None:
    """The innermost loop around `op` below `body`, if any."""
    parent = op.parent_op()
    while parent is not None and op.parent_block() is not body:
        if isinstance(parent, graph.LoopOp):
            return parent
        op, parent = parent, parent.parent_op()
    return None


def in_branches(op: Operation, body: Block) -> bool:
    """Whether `op` is nested in `body` through If branches only."""
    parent = op.parent_op()
    while parent is not None and op.parent_block() is not body:
        if not isinstance(parent, graph.IfOp):
            return False
        op, parent = parent, parent.parent_op()
    return True


def capacity_check(op, kb: KernelBuilder, ins, outs) -> None:
    """status = [count > capacity, 0, count] for a run symbol's count cell (ins[0]), the
    capacity its buffers were allocated with being the last argument."""
    count = kb.load(ins[0], [0])
    capacity = kb.insert(arith.IndexCastOp(kb.entry.args[-1], i64))
    failed = kb.insert(arith.CmpiOp(count, capacity, "sgt"))
    kb.store(kb.insert(arith.ExtUIOp(failed, i64)), outs[0], [0])
    kb.store(kb.constant(0, i64), outs[0], [1])
    kb.store(count, outs[0], [2])


def check_capacity(fl, op: Operation, name: str, count: SSAValue,
                   cell: SSAValue | None) -> None:
    """Stop the run when `count` (i64, computed by `op`) is past the capacity of run symbol
    `name` (a failed check, after which the caller runs again with room); else it is the
    symbol's value in `dims`. `fl`: the function lowering (convert_graph_to_loops._FunctionLowering)."""
    from onnxc.lowering.graph_to_loops.control_flow import guard_rest

    index = fl.emit(arith.ConstantOp(IntegerAttr(0, IndexType())))
    if cell is None:
        cell = fl.hoist(memref.AllocOp([], [], COUNT_TYPE))
        fl.emit(memref.StoreOp.get(count, cell, [index]))
    block = Block(arg_types=[COUNT_TYPE, STATUS_TYPE, IndexType()])
    check = fl.mod.kernel_from("graph.check_capacity", ("capacity",), capacity_check, block)
    call = func.CallOp(check, [cell, fl.status_record(), fl.symbols[name]], [])
    call.location = op.location
    call.attributes[CHECK_SITE_ATTR] = IntegerAttr(len(fl.sites), i64)
    call.attributes[CHECK_OPERANDS_ATTR] = ArrayAttr([IntegerAttr(0, i64), IntegerAttr(1, i64)])
    fl.sites.append({"kind": "capacity", "node": onnx_node_of(op) or "", "op_type": op.name,
                     "operand": name})
    fl.emit(call)
    if fl.block is not fl.top:  # in a body: a failure skips the rest
        guard_rest(fl, len(fl.sites))
    position = fl.emit(arith.ConstantOp(IntegerAttr(fl.symbol_order.index(name), IndexType())))
    fl.emit(memref.StoreOp.get(count, fl.dims, [position]))


def room(elements: Dim, symbols: Sequence[str]) -> Dim:
    """Elements to allocate for a size that may name the run symbols `symbols`: the buffers
    are placed while those are still capacities, so the size must not fall as they grow
    (size_substitution.monotone_upper)."""
    upper = monotone_upper(elements, symbols)
    if upper is None:
        raise LoweringError(f"no upper bound of the size {elements} over the sizes the run "
                            f"computes ({', '.join(sorted(symbols))})")
    return upper


def node_suffix(op: Operation) -> str:
    node = onnx_node_of(op)
    return f" (node '{node}')" if node else ""
