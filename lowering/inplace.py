"""`inplace`: an elementwise kernel writes its result over an input that has no later use.

convert-graph-to-loops marks the calls of kernels that read each element of an operand
only at the index they write (`onnxc.inplace_operands`: the operand positions that may share
the result's buffer). When such an operand lives in an intermediate buffer (a `memref.alloc`
of the entry function, not a model input, constant or output) of the same type, and this
call is its last reader, the result's allocation is dropped and the call goes to an in-place
variant of the kernel: the same body with the result argument merged into that operand's
argument. The variant reads and writes through one pointer, so the `noalias` that every
kernel argument carries stays true (passing one buffer as two arguments would break it).
The buffer's lifetime simply extends, so plan-memory needs nothing special, and a chain of
elementwise ops runs in one buffer.

A buffer read through a view (a reshape) counts its view's readers as its own.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func, memref
from xdsl.dialects.builtin import ArrayAttr, FunctionType, IntegerAttr, ModuleOp, StringAttr
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from onnxc.dialects import graph
from onnxc.dialects.entry_abi import INPLACE_BYTES_ATTR, entry_function
from onnxc.dialects.onnxc_attributes import INPLACE_ATTR
from onnxc.lowering.plan_memory import byte_size, last_use

ELEMENTWISE_OPS = (
    graph.UnaryElementwiseOp, graph.BinaryElementwiseOp, graph.VariadicElementwiseOp,
    graph.ScalarBinaryOp, graph.GeluOp, graph.PReluOp, graph.FusedElementwiseOp,
)
"""Ops whose kernels read an operand's element only at the index they write it (so the
result may overwrite that operand); convert-graph-to-loops marks their calls."""


def inplace_operands(op: Operation) -> list[int]:
    """Operand positions of `op` whose buffer its result may take over (same type)."""
    if not isinstance(op, ELEMENTWISE_OPS) or len(op.results) != 1:
        return []
    return [i for i, v in enumerate(op.operands) if v.type == op.results[0].type]


def _alloc_of(value: SSAValue) -> memref.AllocOp | None:
    owner = value.owner
    return owner if isinstance(owner, memref.AllocOp) else None


@dataclass(frozen=True)
class InplacePass(ModulePass):
    """Let marked elementwise kernel calls overwrite a dying intermediate operand."""

    name = "inplace"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        entry = entry_function(op)
        block = entry.body.block
        position = {o: i for i, o in enumerate(block.ops)}
        variants = _Variants(op)
        saved = 0
        for call in list(block.ops):
            if not isinstance(call, func.CallOp) or INPLACE_ATTR not in call.attributes:
                continue
            marks = call.attributes[INPLACE_ATTR]
            assert isinstance(marks, ArrayAttr)
            result = call.arguments[-1]
            result_alloc = _alloc_of(result)
            if result_alloc is None:
                continue  # the result is a model output or a view: leave it
            for mark in marks.data:
                assert isinstance(mark, IntegerAttr)
                operand = call.arguments[mark.value.data]
                source = _alloc_of(operand)
                if source is None or operand.type != result.type:
                    continue
                if last_use(operand, position) > position[call]:
                    continue  # read later: keep it
                if list(call.arguments).count(operand) > 1:
                    continue  # the same buffer passed twice: aliasing rules get subtle
                saved += byte_size(result.type)
                result_alloc.memref.replace_all_uses_with(source.memref)
                Rewriter.erase_op(result_alloc)
                index = mark.value.data
                callee = variants.get(call.callee.string_value(), index)
                args = list(call.arguments[:-1])
                Rewriter.replace_op(call, func.CallOp(callee, args, []))
                break
        for call in entry.walk():  # loop bodies too: only top-level calls are rewritten
            call.attributes.pop(INPLACE_ATTR, None)  # a lowering hint, spent here
        if saved:
            entry.attributes[INPLACE_BYTES_ATTR] = IntegerAttr(saved, 64)


class _Variants:
    """In-place variants of kernels, built once per (kernel, operand) and added to the module."""

    def __init__(self, module: ModuleOp):
        self.module = module
        self.kernels = {o.sym_name.data: o for o in module.ops if isinstance(o, func.FuncOp)}
        self.made: dict[tuple[str, int], str] = {}

    def get(self, name: str, operand: int) -> str:
        if (name, operand) in self.made:
            return self.made[(name, operand)]
        kernel = self.kernels[name]
        variant = kernel.clone()
        block = variant.body.block
        result = block.args[-1]
        result.replace_all_uses_with(block.args[operand])
        block.erase_arg(result)
        new_name = f"{name}_inplace{operand}"
        while new_name in self.kernels:
            new_name += "_"
        variant.sym_name = StringAttr(new_name)
        inputs = list(variant.function_type.inputs.data[:-1])
        variant.function_type = FunctionType.from_lists(inputs, [])
        if variant.arg_attrs is not None:
            variant.arg_attrs = ArrayAttr(variant.arg_attrs.data[:-1])
        self.module.body.block.insert_op_after(variant, kernel)
        self.kernels[new_name] = variant
        self.made[(name, operand)] = new_name
        return new_name
