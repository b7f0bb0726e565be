"""The kernels and constant globals of the module convert-graph-to-loops lowers.

Every op becomes a call to a private kernel function, emitted once per key (op, properties,
types: ops with equal keys share it) and built on first use by a `KernelBuilder` for the
module's target; its arguments are the buffers, then the size symbols the op names
(`symbols_of_op`), as index values. Constants become private `memref.global`s holding the
original dense bytes, one per distinct value. With the JIT's early lanes running, the
largest kernels are compiled as soon as they are built (early_kernels.py), leaving a
declaration and dropping the constant arguments they no longer read.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import func, memref
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    FunctionType,
    IndexType,
    MemRefType,
    ModuleOp,
    StringAttr,
    UnitAttr,
)
from xdsl.ir import Block, Operation, Region
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import SymbolOpInterface

from onnxc.dialects import graph
from onnxc.dialects.dense_data import lookup_key
from onnxc.dialects.graph import is_symbolic, shape_of
from onnxc.dialects.graph_base import SizesAttr
from onnxc.dialects.layout import layout_of, physical_shape
from onnxc.dialects.symbolic_dims import symbols_of
from onnxc.errors import LoweringError
from onnxc.lowering import early_kernels
from onnxc.lowering.graph_to_loops.buffer_types import memref_of
from onnxc.lowering.graph_to_loops.dynamic import node_suffix
from onnxc.lowering.graph_to_loops.kernels import SYMBOLIC_KERNELS, KernelFn
from onnxc.lowering.graph_to_loops.loops import KernelBuilder
from onnxc.lowering.inplace import inplace_operands
from onnxc.target import target_of


class ModuleKernels:
    """Module-wide state of the lowering: symbol names, the deduplicated kernels and
    constant globals, and the target the kernels are built for (the module's
    `onnxc.target`, else the host)."""

    def __init__(self, module: ModuleOp):
        self.module = module
        self.target = target_of(module)
        self.names = {
            o.sym_name.data for o in module.ops
            if o.has_trait(SymbolOpInterface) and hasattr(o, "sym_name")
        }
        self.next_suffix: dict[str, int] = {}
        self.kernels: dict[tuple, str] = {}
        self.globals: dict[tuple, list[tuple[str, bytes]]] = {}  # by dense_data.lookup_key
        self.new_globals: list[Operation] = []
        self.new_kernels: list[Operation] = []
        self.dropped: dict[str, tuple[int, ...]] = {}
        """early kernels' removed arguments (positions), left out of their calls"""

    def add_to_module(self) -> None:
        """Put the globals and kernels built so far at the top of the module, globals
        first."""
        first = self.module.body.block.first_op
        for o in [*self.new_globals, *self.new_kernels]:
            if first is None:
                self.module.body.block.add_op(o)
            else:
                Rewriter.insert_op(o, InsertPoint.before(first))

    def fresh_name(self, base: str) -> str:
        n = self.next_suffix.get(base, 0)  # not from 0 each time: quadratic in kernels
        while f"{base}_{n}" in self.names:
            n += 1
        self.next_suffix[base] = n + 1
        self.names.add(f"{base}_{n}")
        return f"{base}_{n}"

    def global_for(self, value: DenseIntOrFPElementsAttr) -> tuple[str, MemRefType]:
        """A private constant global holding `value`'s bytes; equal constants share one."""
        mtype = memref_of(value.type)  # type: ignore[arg-type]
        data = value.data.data
        candidates = self.globals.setdefault((mtype, lookup_key(data)), [])
        for name, held in candidates:
            if held == data:
                return name, mtype
        name = self.fresh_name("cst")
        self.new_globals.append(memref.GlobalOp.get(
            StringAttr(name), mtype, value, StringAttr("private"), UnitAttr()
        ))
        candidates.append((name, data))
        return name, mtype

    def kernel(
        self,
        kernel_name: str,
        key: tuple,
        build: KernelFn,
        op: Operation | None,
        in_types: Sequence[MemRefType],
        out_types: Sequence[MemRefType],
    ) -> str:
        """The symbol of the kernel for `key`, building it with `build` on first use."""
        if key in self.kernels:
            return self.kernels[key]
        name = self.fresh_name(kernel_name.removeprefix("graph."))
        symbols = sorted(symbols_of_op(op)) if op is not None else []
        index_types = [IndexType()] * len(symbols)
        block = Block(arg_types=[*in_types, *out_types, *index_types])
        n_mem = len(in_types) + len(out_types)
        ins, outs = block.args[: len(in_types)], block.args[len(in_types):n_mem]
        kb = KernelBuilder(block, self.target)
        if symbols:
            if type(op) not in SYMBOLIC_KERNELS:
                raise LoweringError(
                    f"{op.name} with symbolic dimensions ({', '.join(symbols)}) has no "
                    f"kernel yet{node_suffix(op)}; compile with fixed input shapes "
                    f"(input_shapes=...)")
            kb.bind_symbols(dict(zip(symbols, block.args[n_mem:])))
            for value, mem in [*zip(op.operands, ins), *zip(op.results, outs)]:
                if is_symbolic(value):  # its memory order (NHWC for a symbolic conv)
                    kb.bind_shape(mem, physical_shape(shape_of(value), layout_of(value.type)))
        build(op, kb, ins, outs)  # type: ignore[arg-type]
        block.add_op(func.ReturnOp())
        kernel = func.FuncOp(
            name, FunctionType.from_lists([*in_types, *out_types, *index_types], []),
            Region(block), visibility="private",
        )
        kernel.attributes["onnxc.kernel"] = StringAttr(kernel_name)
        early = early_kernels.of(self.module)
        if (early is not None and op is not None and not symbols and early.wants(kernel)
                and not inplace_operands(op) and not isinstance(op, graph.CheckOp)):
            self.dropped[name] = early_kernels.drop_unread_constants(kernel, op)
            kernel = early.take(kernel)  # compiled now; its declaration stays
        self.new_kernels.append(kernel)
        self.kernels[key] = name
        return name

    def kernel_from(self, kernel_name: str, key: tuple, build: KernelFn, block: Block) -> str:
        """The symbol of a helper kernel with `block`'s signature (buffers in, buffer out,
        then any index arguments), built by `build(None, kb, [in], [out])` on first use."""
        if key in self.kernels:
            return self.kernels[key]
        name = self.fresh_name(kernel_name.removeprefix("graph."))
        build(None, KernelBuilder(block, self.target), block.args[:1],  # type: ignore
              block.args[1:2])
        block.add_op(func.ReturnOp())
        kernel = func.FuncOp(name, FunctionType.from_lists(list(block.arg_types), []),
                             Region(block), visibility="private")
        kernel.attributes["onnxc.kernel"] = StringAttr(kernel_name)
        self.new_kernels.append(kernel)
        self.kernels[key] = name
        return name


def symbols_of_op(op: Operation) -> set[str]:
    """The size symbols in `op`'s operand and result types, and those its properties name
    (`#graph.sizes` properties, and an op with a `size_symbols()` method: a check against
    a symbolic bound, shape data evaluated at run time), all of which its kernel takes as
    index arguments."""
    own = op.size_symbols() if hasattr(op, "size_symbols") else set()
    for value in op.properties.values():
        if isinstance(value, SizesAttr):
            own = own | value.symbols()
    return own | {name for v in [*op.operands, *op.results] if is_symbolic(v)
                  for name in symbols_of(shape_of(v))}
