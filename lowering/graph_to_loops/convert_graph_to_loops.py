"""`convert-graph-to-loops`: graph-dialect functions become calls to loop kernels over memrefs.

Before:
    func.func @main(%x: tensor<1x8xf32>) -> tensor<1x8xf32> {
      %y = graph.relu(%x) : (tensor<1x8xf32>) -> tensor<1x8xf32>
      func.return %y : tensor<1x8xf32>
    }
After:
    func.func private @relu_0(%0: memref<1x8xf32>, %1: memref<1x8xf32>)
        attributes {onnxc.kernel = "graph.relu"} { scf.for ... }
    func.func @main(%in0: memref<1x8xf32>, %out0: memref<1x8xf32>) attributes {onnxc.entry} {
      func.call @relu_0(%in0, %out0) : (memref<1x8xf32>, memref<1x8xf32>) -> ()
      func.return
    }

Results are passed in destination style (trailing memref arguments); a graph output computed
by a kernel is written straight into its argument. Constants become `memref.global`s holding
the original dense bytes, reshape-like ops (and transposes that move no bytes:
`graph.is_view`) become `memref.reinterpret_cast` views, and every other op a call to a
private kernel, emitted once per (op, properties, types) key (the module's kernels and
globals: module_kernels.py). This module lowers the functions: buffers, views, the calls,
run-time sizes and checks.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func, memref
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    FunctionType,
    IndexType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    NoneAttr,
    StringAttr,
    TensorType,
    UnitAttr,
    i64,
)
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from onnxc.dialects import graph, graph_gather_scatter, layout
from onnxc.dialects.entry_abi import (
    CHECK_FALLBACK_ATTR,
    CHECK_OPERANDS_ATTR,
    CHECK_SITE_ATTR,
    CHECK_SITES_ATTR,
    DIMS_ARGUMENT_ATTR,
    ELEMENTS_ATTR,
    RUN_BOUNDS_ATTR,
    RUN_SYMBOLS_ATTR,
    SYMBOLS_ATTR,
    site_attribute,
)
from onnxc.dialects.graph import int_of, ints_of, is_symbolic, shape_of
from onnxc.dialects.graph_checks import SITE_PROPERTIES
from onnxc.dialects.graph_dynamic import defined_sizes
from onnxc.dialects.symbolic_dims import Dim, num_elements, symbols_of
from onnxc.errors import LoweringError
from onnxc.lowering.graph_to_loops.buffer_types import RunTimeScratch, memref_of
from onnxc.lowering.graph_to_loops.buffer_views import reinterpret, strided_view
from onnxc.lowering.graph_to_loops.checks import STATUS_TYPE
from onnxc.lowering.graph_to_loops.control_flow import (
    CONTROL_FLOW_OPS,
    guard_rest,
    lower_control_flow,
)
from onnxc.lowering.graph_to_loops.data_movement import copy_kernel
from onnxc.lowering.graph_to_loops.dynamic import (
    COUNT_TYPE,
    check_capacity,
    node_suffix,
    room,
    run_symbols_of,
)
from onnxc.lowering.graph_to_loops.kernels import (
    kernel_constants,
    kernel_for,
    kernel_key,
    kernel_scratch,
    reads_strided,
)
from onnxc.lowering.graph_to_loops.loops import KernelBuilder
from onnxc.lowering.graph_to_loops.module_kernels import ModuleKernels, symbols_of_op
from onnxc.lowering.inplace import INPLACE_ATTR, inplace_operands
from onnxc.target import Target


@dataclass(frozen=True)
class ConvertGraphToLoopsPass(ModulePass):
    """Lower every graph-dialect function of the module to the loops-level contract."""

    name = "convert-graph-to-loops"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        kernels = ModuleKernels(op)
        functions = [o for o in op.ops if isinstance(o, func.FuncOp)]
        for f in functions:
            if f.body.blocks and _is_graph_function(f):
                lowered = _FunctionLowering(kernels, f).lower()
                Rewriter.replace_op(f, lowered, new_results=[])
        kernels.add_to_module()


def _is_graph_function(f: func.FuncOp) -> bool:
    types = [*f.function_type.inputs, *f.function_type.outputs]
    return any(isinstance(t, TensorType) for t in types) or any(
        isinstance(o, graph.GraphOp) for o in f.walk()
    )


def _dynamic_copy(op, kb: KernelBuilder, ins, outs) -> None:
    """dst = src between flat buffers of a run-time element count (the last argument)."""
    count = kb.entry.args[-1]
    kb.parallel_for(0, count, lambda i: kb.store(kb.load(ins[0], [i]), outs[0], [i]))


def _kernel_key(op: Operation, target: Target) -> tuple:
    """What decides a kernel's code for `target`: op, properties (but not a check's site),
    types."""
    site = SITE_PROPERTIES if isinstance(op, graph.CheckOp) else ()
    props = kernel_key(op, target)
    if props is None:
        props = tuple(sorted((k, str(v)) for k, v in op.properties.items() if k not in site))
    return (op.name, props, tuple(op.operand_types), tuple(op.result_types))


FUSED_CHECK_CONSUMERS = (graph.GatherOp, graph_gather_scatter.GatherElementsOp)
"""Ops whose kernels check their own indices in the loop that reads them (a reduction of
the clamps' flags, see checks.guarded_nest) when a check of those indices comes right before
them: one pass over the indices instead of two, which matters for gathers of many scalars."""


def _fusable_check(check: graph.CheckIndicesOp) -> bool:
    consumer = check.next_op
    if isinstance(consumer, graph.GatherOp) and consumer.nonnegative is not None:
        return False  # its kernel's own check would accept ONNX's negative indices
    return (isinstance(consumer, FUSED_CHECK_CONSUMERS) and consumer.indices is check.indices
            and not symbols_of_op(check) and not symbols_of_op(consumer)
            and math.prod(shape_of(consumer.output)) > 0)


def _physical(value: SSAValue) -> tuple[int, ...]:
    """The memory shape of a tensor value (its layout's order, see dialects/layout.py)."""
    return tuple(memref_of(value.type).get_shape())  # type: ignore[arg-type]


def _root(value: SSAValue) -> SSAValue:
    """The value whose buffer `value` is a view of."""
    while isinstance(value.owner, Operation) and graph.is_view(value.owner):
        value = value.owner.operands[0]
    return value


def _strided_readers_only(op: graph.AsStridedOp) -> bool:
    """Whether every reader of `op`'s result takes it as a strided view (KernelRule)."""
    return all(reads_strided(use.operation, use.index) for use in op.output.uses)


class _FunctionLowering:
    """Rewrites one graph function into a destination-passing loops-level function."""

    def __init__(self, mod: ModuleKernels, f: func.FuncOp):
        self.mod = mod
        self.f = f
        self.block = Block()
        self.top = self.block
        """the function's block; `block` is a control-flow body while one is lowered"""
        self.guards: list[Block] = []
        """open `scf.if` blocks that run the rest of a body only while no check failed"""
        self.sticky: SSAValue | None = None
        """where a check inside a control-flow body records its site + 1 (control_flow.py)"""
        self.buffers: dict[SSAValue, SSAValue] = {}
        """tensor value -> memref of exactly its shape"""
        self.bases: dict[SSAValue, SSAValue] = {}
        """tensor value -> the allocated (or argument) memref it lives in"""
        self.status: SSAValue | None = None
        """the check status record every check kernel writes (allocated at the first check)"""
        self.sites: list[dict[str, object]] = []
        self.fused_check: tuple[graph.CheckIndicesOp, str] | None = None
        """a check the next op (a Gather or GatherElements) does inside its own kernel"""
        self.symbols: dict[str, SSAValue] = {}
        """size symbol -> its value this run (loaded from the entry's `dims` buffer)"""
        self.sizes: KernelBuilder | None = None
        """size arithmetic where kernels are called (an If branch defining run symbols has
        its own, control_flow._branch_sizes)"""
        self.top_sizes: KernelBuilder | None = None
        """size arithmetic in the function's block, for the buffers hoisted there (a run
        symbol defined in a branch is its capacity here)"""
        """index arithmetic on the symbols, in the function's block"""
        self.run_symbols: list[str] = []
        """the sizes the run defines (graph_dynamic.py, and the counts of loops whose scan
        outputs have run-time length): the last entries of `dims`, which hold their
        capacity when the entry starts and their value once defined
        (entry_abi.RUN_SYMBOLS_ATTR)"""
        self.run_bounds: list[str] = []
        self.soft = None
        """the loop body being lowered whose sizes go on being measured past their
        capacity (loop_sizes.SoftLoop), if any"""

    def emit(self, op: Operation) -> SSAValue:
        self.block.add_op(op)
        return op.results[0] if op.results else None  # type: ignore[return-value]

    def hoist(self, op: Operation) -> SSAValue:
        """Emit a buffer (an alloc, a constant global) in the function's block, before the
        control-flow op being lowered: plan-memory places only top-level buffers, and one
        used inside a loop body then lives for the whole loop."""
        self.top.add_op(op)
        return op.results[0]

    def lower(self) -> func.FuncOp:
        body = self.f.body.block
        ret = body.last_op
        if not isinstance(ret, func.ReturnOp):
            raise LoweringError(f"@{self.f.sym_name.data}: body must end in func.return")
        for op in body.ops:
            if op is not ret and not isinstance(op, graph.GraphOp | graph.CheckOp
                                                       | layout.ConvertOp | CONTROL_FLOW_OPS):
                raise LoweringError(
                    f"convert-graph-to-loops: no lowering for op '{op.name}' "
                    f"in @{self.f.sym_name.data}"
                )
        outputs = list(ret.arguments)
        for v in [*body.args, *outputs]:
            if not isinstance(v.type, TensorType):
                raise LoweringError(f"@{self.f.sym_name.data}: {v.type} is not a tensor")

        for i, arg in enumerate(body.args):
            new = self.block.insert_arg(memref_of(arg.type), len(self.block.args))
            new.name_hint = arg.name_hint or f"in{i}"
            self.buffers[arg] = self.bases[arg] = new
        out_args = []
        for k, v in enumerate(outputs):
            new = self.block.insert_arg(memref_of(v.type), len(self.block.args))
            new.name_hint = f"out{k}"
            out_args.append(new)
        self.bind_symbols(body, outputs)

        # An output's root buffer is the output argument itself when a kernel computes it
        # and no other output claimed it first; otherwise the output gets a copy.
        claims: dict[SSAValue, int] = {}
        for k, v in enumerate(outputs):
            r = _root(v)
            if r in claims or isinstance(r.owner, Block | graph.ConstantOp | graph.ShapeOp):
                continue
            claims[r] = k
            self.bases[r] = out_args[k]
            self.buffers[r] = self.view(out_args[k], _physical(r), r.name_hint)

        for op in body.ops:
            if op is not ret:
                self.lower_op(op)

        for k, v in enumerate(outputs):
            if claims.get(_root(v)) != k:
                self.copy(self.buffers[v], out_args[k], v)
        self.emit(func.ReturnOp())
        return self.finish(len(outputs))

    def bind_symbols(self, body: Block, outputs: Sequence[SSAValue]) -> None:
        """A function with symbolic dimensions takes each symbol's value (i64) in a `dims`
        buffer after its outputs; every symbol must come from an input's shape."""
        names = {s for v in body.args if is_symbolic(v) for s in symbols_of(shape_of(v))}
        used = {s for v in outputs if is_symbolic(v) for s in symbols_of(shape_of(v))}
        for op in body.walk():
            if isinstance(op, graph.GraphOp | graph.CheckOp | layout.ConvertOp
                          | CONTROL_FLOW_OPS):
                used |= symbols_of_op(op)
            elif op.results and any(is_symbolic(r) for r in op.results):
                raise LoweringError(f"{op.name} with symbolic dimensions is not supported"
                                    f"{node_suffix(op)}")
        run = run_symbols_of(body)
        if used - names - set(run):
            raise LoweringError(
                f"@{self.f.sym_name.data}: sizes {sorted(used - names - set(run))} are not "
                f"dimensions of an input (a size known only after running the model)")
        if not names and not run:
            return
        order = [*sorted(names), *run]
        self.run_symbols = list(run)
        self.run_bounds = ["" if bound is None else str(bound) for _, bound in run.values()]
        for v in outputs:  # the caller allocates them from the capacities (symbolic_shapes)
            if is_symbolic(v):
                for d in shape_of(v):
                    self.room(d)
        self.dims_position = len(self.block.args)
        dims = self.block.insert_arg(MemRefType(i64, [len(order)]), self.dims_position)
        dims.name_hint = "dims"
        self.dims = dims
        self.sizes = self.top_sizes = KernelBuilder(self.block)
        for k, name in enumerate(order):
            value = self.emit(memref.LoadOp.get(dims, [self.sizes.idx(k)]))
            self.symbols[name] = self.emit(arith.IndexCastOp(value, IndexType()))
            self.symbols[name].name_hint = name
        self.sizes.bind_symbols(self.symbols)
        self.symbol_order = order

    def finish(self, n_outputs: int) -> func.FuncOp:
        f = self.f
        arg_types = [a.type for a in self.block.args]
        new = func.FuncOp(
            f.sym_name.data, FunctionType.from_lists(arg_types, []), Region(self.block),
            visibility=f.sym_visibility,
        )
        new.attributes.update(f.attributes)
        if f.arg_attrs is not None:
            new.arg_attrs = ArrayAttr([*f.arg_attrs, *[DictionaryAttr({})] * n_outputs])
        if f.sym_visibility is None or f.sym_visibility.data == "public":
            new.attributes["onnxc.entry"] = UnitAttr()
        if self.sites:
            new.attributes[CHECK_SITES_ATTR] = ArrayAttr([site_attribute(s) for s in self.sites])
        if self.symbols:
            new.attributes[SYMBOLS_ATTR] = ArrayAttr([StringAttr(s) for s in self.symbol_order])
            new.attributes[DIMS_ARGUMENT_ATTR] = IntegerAttr(self.dims_position, i64)
            if self.run_symbols:
                new.attributes[RUN_SYMBOLS_ATTR] = ArrayAttr(
                    [StringAttr(s) for s in self.run_symbols])
                new.attributes[RUN_BOUNDS_ATTR] = ArrayAttr(
                    [StringAttr(b) for b in self.run_bounds])
            if f.arg_attrs is not None:
                new.arg_attrs = ArrayAttr([*new.arg_attrs, DictionaryAttr({})])
        return new

    def view(self, base: SSAValue, shape: Sequence[int], name: str | None = None) -> SSAValue:
        assert isinstance(base.type, MemRefType)
        if tuple(base.type.get_shape()) == tuple(shape):
            return base
        result = self.emit(reinterpret(base, shape))
        result.name_hint = name
        return result

    def plain(self, value: SSAValue) -> bool:
        """Whether `value`'s buffer holds its elements in row-major order from offset 0 (no
        layout of dialects/layout.py, no strided view)."""
        t, tensor = self.buffers[value].type, value.type
        return (isinstance(t, MemRefType) and isinstance(t.layout, NoneAttr)
                and isinstance(tensor, TensorType) and isinstance(tensor.encoding, NoneAttr)
                and tuple(t.get_shape()) == shape_of(value))

    def lower_op(self, op: Operation) -> None:
        if isinstance(op, graph.ConstantOp):
            self.constant(op.output, op.value)
        elif isinstance(op, graph.ShapeOp) and symbols_of_op(op):
            raise LoweringError(f"{op.name} with symbolic dimensions is not supported yet"
                                f"{node_suffix(op)}; compile with fixed input shapes")
        elif isinstance(op, graph.ShapeOp):
            self.constant(op.output, _shape_value(op))
        elif isinstance(op, graph.AsStridedOp) and _strided_readers_only(op) \
                and self.plain(op.input):
            self.bases[op.output] = self.bases[op.input]
            self.buffers[op.output] = self.emit(strided_view(
                self.buffers[op.input], int_of(op.offset), shape_of(op.output),
                ints_of(op.strides)))
        elif graph.is_view(op):
            base = self.bases[op.operands[0]]
            self.bases[op.output] = base
            self.buffers[op.output] = self.view(base, _physical(op.output), op.output.name_hint)
        elif isinstance(op, CONTROL_FLOW_OPS):
            lower_control_flow(self, op)
        elif isinstance(op, graph.CheckIndicesOp) and _fusable_check(op) \
                and self.block is self.top:
            self.fused_check = self.check_kernel_only(op)
        else:
            build = kernel_for(op)
            for r in op.results:
                if r not in self.buffers:
                    alloc = self.hoist(self.allocation(r))
                    alloc.name_hint = r.name_hint
                    self.buffers[r] = self.bases[r] = alloc
            ins = [self.buffers[v] for v in op.operands]
            target = self.mod.target
            for table in kernel_constants(op, target):
                name, mtype = self.mod.global_for(table)
                ins.append(self.hoist(memref.GetGlobalOp(name, mtype)))
                ins[-1].name_hint = "table"
            for scratch in kernel_scratch(op, target):
                ins.append(self.hoist(self.scratch_allocation(scratch)))
                ins[-1].name_hint = "scratch"
            fused, self.fused_check = self.fused_check, None
            if isinstance(op, graph.CheckOp) or fused is not None:
                ins.append(self.status_record())
            outs = [self.buffers[r] for r in op.results]
            cells = [self.hoist(memref.AllocOp([], [], COUNT_TYPE)) for _ in defined_sizes(op)]
            outs += cells  # where the kernel writes the sizes it defines
            # Input types are part of the key: tables and scratch vary the kernel's form.
            name = self.mod.kernel(
                op.name, (_kernel_key(op, target), tuple(v.type for v in ins)), build, op,
                [v.type for v in ins], [v.type for v in outs],
            )
            sizes = [self.symbols[s] for s in sorted(symbols_of_op(op))]
            operands = [*ins, *outs, *sizes]
            if dropped := self.mod.dropped.get(name):
                operands = [v for i, v in enumerate(operands) if i not in dropped]
            call = func.CallOp(name, operands, [])
            call.location = op.location  # the ONNX node, for internal error messages
            if inplace := inplace_operands(op):
                call.attributes[INPLACE_ATTR] = ArrayAttr([IntegerAttr(i, i64) for i in inplace])
            if isinstance(op, graph.CheckOp):
                call.attributes[CHECK_SITE_ATTR] = IntegerAttr(len(self.sites), i64)
                self.sites.append(op.site())
                if sizes:  # the status record is not the last operand: say where it is
                    call.attributes[CHECK_OPERANDS_ATTR] = ArrayAttr([
                        IntegerAttr(0, i64), IntegerAttr(len(ins) - 1, i64)])
            if fused is not None:
                check, fallback = fused
                call.attributes[CHECK_SITE_ATTR] = IntegerAttr(len(self.sites), i64)
                call.attributes[CHECK_FALLBACK_ATTR] = StringAttr(fallback)
                call.attributes[CHECK_OPERANDS_ATTR] = ArrayAttr([
                    IntegerAttr(list(op.operands).index(check.indices), i64),
                    IntegerAttr(len(ins) - 1, i64)])
                self.sites.append(check.site())
            if self.soft is not None and self.soft.guarded(op):
                self.soft.emit_call(self, op, call, cells)
            else:
                self.emit(call)
            for name, cell in zip(defined_sizes(op), cells):
                self.define_size(op, name, self.emit(memref.LoadOp.get(cell, [
                    self.emit(arith.ConstantOp(IntegerAttr(0, IndexType())))])), cell)
            if isinstance(op, graph.CheckOp) and self.block is not self.top:
                site = call.attributes[CHECK_SITE_ATTR]
                assert isinstance(site, IntegerAttr)
                guard_rest(self, site.value.data + 1)

    def define_size(self, op: Operation, name: str, count: SSAValue,
                    cell: SSAValue | None = None) -> None:
        """The run symbol `name` is now `count` (i64), which `op` computed: checked against
        the capacity its buffers have (the symbol's value so far, from `dims`: a count
        beyond it stops the run, whose caller runs again with room), written back into
        `dims` for the caller, and the value every later kernel gets."""
        if self.soft is not None and name in self.soft.position:
            self.soft.define(self, op, name, count)
        else:
            check_capacity(self, op, name, count, cell)
        value = self.emit(arith.IndexCastOp(count, IndexType()))
        value.name_hint = name
        self.symbols[name] = value
        assert self.sizes is not None
        self.sizes.rebind(name, value)

    def allocation(self, value: SSAValue) -> memref.AllocOp:
        """The buffer of a kernel's result: static, or flat with a run-time element count
        (plan-memory places it in the dynamic arena, sized by its `onnxc.elements`)."""
        if not is_symbolic(value):
            return memref.AllocOp([], [], memref_of(value.type))
        sizes = self.top_sizes
        assert sizes is not None
        elements = self.room(num_elements(shape_of(value)))
        alloc = memref.AllocOp([sizes.idx(sizes.dim(elements))], [], memref_of(value.type))
        alloc.attributes[ELEMENTS_ATTR] = StringAttr(str(elements))
        return alloc

    def scratch_allocation(self, scratch: MemRefType | RunTimeScratch) -> memref.AllocOp:
        """A kernel's scratch: static, or flat in the dynamic arena (plan-memory sizes it
        by its `onnxc.elements`)."""
        if isinstance(scratch, MemRefType):
            return memref.AllocOp([], [], scratch)
        sizes = self.top_sizes
        assert sizes is not None
        elements = self.room(scratch.elements)
        alloc = memref.AllocOp([sizes.idx(sizes.dim(elements))], [], scratch.type)
        alloc.attributes[ELEMENTS_ATTR] = StringAttr(str(elements))
        return alloc

    def room(self, elements: Dim) -> Dim:
        return room(elements, self.run_symbols)

    def check_kernel_only(self, check: graph.CheckIndicesOp) -> tuple[graph.CheckIndicesOp, str]:
        """Build `check`'s kernel without calling it: the consumer after it checks its own
        indices, and the entry calls this kernel only when that consumer flagged one, to
        find the first bad element (return-check-status)."""
        in_types = [self.buffers[check.indices].type, STATUS_TYPE]
        key = (_kernel_key(check, self.mod.target), tuple(in_types))
        name = self.mod.kernel(check.name, key, kernel_for(check), check, in_types, [])
        return check, name

    def status_record(self) -> SSAValue:
        """The buffer check kernels report into: one per run, in the arena like any other."""
        if self.status is None:
            self.status = self.hoist(memref.AllocOp([], [], STATUS_TYPE))
            self.status.name_hint = "status"
        return self.status

    def constant(self, result: SSAValue, value: DenseIntOrFPElementsAttr) -> None:
        name, mtype = self.mod.global_for(value)
        buffer = self.hoist(memref.GetGlobalOp(name, mtype))
        buffer.name_hint = result.name_hint
        self.buffers[result] = self.bases[result] = buffer

    def copy(self, src: SSAValue, dst: SSAValue, value: SSAValue | None = None) -> None:
        """dst = src, through one flat copy kernel per element type and size (`value`: the
        tensor copied, whose symbolic element count sizes a flat dynamic copy; a dst of
        another type is a flat buffer of run-time size, the value its leading elements)."""
        t = dst.type
        assert isinstance(t, MemRefType)
        if value is not None and (is_symbolic(value) or src.type != t):
            assert self.sizes is not None
            count = self.sizes.idx(self.sizes.dim(num_elements(shape_of(value))))
            if src.type != t:  # a static value into a buffer of run-time size
                assert isinstance(src.type, MemRefType)
                src = self.emit(memref.CastOp.get(self.view(src, [src.type.element_count()]),
                                                  t))
            block = Block(arg_types=[t, t, IndexType()])
            name = self.mod.kernel_from("graph.identity", ("copy", t), _dynamic_copy, block)
            self.emit(func.CallOp(name, [src, dst, count], []))
            return
        flat = [t.element_count()]
        flat_type = MemRefType(t.get_element_type(), flat)
        name = self.mod.kernel(
            "graph.identity", ("copy", flat_type), copy_kernel, None, [flat_type], [flat_type]
        )
        self.emit(func.CallOp(name, [self.view(src, flat), self.view(dst, flat)], []))


def _shape_value(op: graph.ShapeOp) -> DenseIntOrFPElementsAttr:
    """graph.shape is static: its value is a constant."""
    dims = shape_of(op.input)
    rank = len(dims)
    start, end = (max(0, min(rank, v + rank if v < 0 else v))
                  for v in (int_of(op.start), int_of(op.end)))
    values = list(dims[start:end])
    return DenseIntOrFPElementsAttr.from_list(TensorType(i64, [len(values)]), values)
