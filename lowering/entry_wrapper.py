"""`emit-entry-wrapper`: expose the entry function as `int32_t onnxc_entry(void **argv)`.

The runtime then calls the model with one pointer array that it builds once (constants and
arena fixed, inputs and outputs patched per run) instead of marshalling one ctypes argument per
buffer: a model with 300 weight tensors costs the same call overhead as one with three.
The result is the entry's status (see `return-check-status`: 0, or the failed check's site
number + 1); an entry that returns nothing (a pipeline without that pass) gives 0.
Runs on the LLVM dialect, after `convert-func-to-llvm`.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import llvm
from xdsl.dialects.builtin import IntegerAttr, IntegerType, ModuleOp, i32
from xdsl.ir import Block, Region
from xdsl.passes import ModulePass

from onnxc.dialects.entry_abi import WRAPPER_NAME
from onnxc.errors import LoweringError


@dataclass(frozen=True)
class EmitEntryWrapperPass(ModulePass):
    """Add `llvm.func @onnxc_entry(%argv: !llvm.ptr)` that unpacks argv and calls `entry`."""

    name = "emit-entry-wrapper"

    entry: str = "main"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        target = next(
            (f for f in op.ops if isinstance(f, llvm.FuncOp) and f.sym_name.data == self.entry),
            None,
        )
        if target is None:
            raise LoweringError(f"emit-entry-wrapper: no llvm.func @{self.entry}")
        op.body.block.add_op(entry_wrapper(self.entry, target.function_type))


def entry_wrapper(entry: str, function_type: llvm.LLVMFunctionType) -> llvm.FuncOp:
    """`llvm.func @onnxc_entry(%argv)` unpacking argv into a call of `entry`, which has
    `function_type` (pointers only; returns i32 or nothing). Also used by the direct LLVM IR
    route (lowering/to_llvm/direct.py), which never builds the llvm dialect of `entry`."""
    param_types = function_type.inputs.data
    if any(not isinstance(t, llvm.LLVMPointerType) for t in param_types):
        raise LoweringError(f"emit-entry-wrapper: @{entry} must take only pointers")

    ptr = llvm.LLVMPointerType()
    block = Block(arg_types=[ptr])
    argv = block.args[0]
    argv.name_hint = "argv"
    args = []
    for i in range(len(param_types)):
        slot = llvm.GEPOp.from_mixed_indices(argv, [i], pointee_type=ptr)
        load = llvm.LoadOp(slot, ptr)
        block.add_ops([slot, load])
        args.append(load.dereferenced_value)
    returns = function_type.output
    if isinstance(returns, IntegerType) and returns.width.data == 32:
        call = llvm.CallOp(entry, *args, return_type=i32)
        block.add_ops([call, llvm.ReturnOp(call.returned)])
    elif isinstance(returns, llvm.LLVMVoidType):
        zero = llvm.ConstantOp(IntegerAttr(0, i32), i32)
        block.add_ops([llvm.CallOp(entry, *args), zero, llvm.ReturnOp(zero.result)])
    else:
        raise LoweringError(f"emit-entry-wrapper: @{entry} must return i32 or nothing")
    return llvm.FuncOp(
        WRAPPER_NAME,
        llvm.LLVMFunctionType([ptr], i32),
        linkage=llvm.LinkageAttr("external"),
        body=Region(block),
    )
