"""convert-func-to-llvm: `func.func` / `func.call` / `func.return` to their `llvm` forms.

    func.func private @k(%x: memref<8xf32>) attributes {onnxc.kernel = "graph.relu"}
 -> llvm.func internal @k(%x: !llvm.ptr {llvm.noalias}) attributes {no_inline, ...}

- Memref arguments become `!llvm.ptr` marked `noalias`: onnxc passes each kernel distinct
  buffers for its operands and results (in-place reuse would break this; see plan-memory),
  and the vectorizer needs it to skip run-time alias checks.
- `onnxc.kernel` functions get `noinline`: every call site of a kernel stays a call, so LLVM's
  work on a whole model grows linearly with its number of distinct kernels.
- A private function with a body gets `internal` linkage (callable only from the module; the
  entry point `@main` and declarations stay `external`). Discardable attributes are kept.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import func, llvm
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    MemRefType,
    UnitAttr,
)
from xdsl.ir import Attribute
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)

from onnxc.dialects.onnxc_attributes import KERNEL_ATTR
from onnxc.errors import LoweringError
from onnxc.lowering.to_llvm.type_conversion import (
    ConversionPass,
    convert_block_arguments,
    convert_type,
    converted,
    replace_converted,
)


def _argument_attributes(op: func.FuncOp) -> ArrayAttr[DictionaryAttr] | None:
    inputs = op.function_type.inputs.data
    result: list[DictionaryAttr] = []
    for index, t in enumerate(inputs):
        attrs: dict[str, Attribute] = {}
        if op.arg_attrs is not None:
            attrs.update(op.arg_attrs.data[index].data)
        if isinstance(t, MemRefType):
            attrs["llvm.noalias"] = UnitAttr()
        result.append(DictionaryAttr(attrs))
    if not any(d.data for d in result):
        return None
    return ArrayAttr(result)


class LowerFunc(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: func.FuncOp, rewriter: PatternRewriter, /):
        outputs = op.function_type.outputs.data
        if len(outputs) > 1:
            raise LoweringError(
                f"@{op.sym_name.data} returns {len(outputs)} values; LLVM allows one"
            )
        inputs = [convert_type(t) for t in op.function_type.inputs.data]
        output = convert_type(outputs[0]) if outputs else llvm.LLVMVoidType()
        is_private = op.sym_visibility is not None and op.sym_visibility.data == "private"
        has_body = bool(op.body.blocks)
        linkage = "internal" if is_private and has_body else "external"
        props: dict[str, Attribute | None] = {}
        if (arg_attrs := _argument_attributes(op)) is not None:
            props["arg_attrs"] = arg_attrs
        if KERNEL_ATTR in op.attributes:
            props["no_inline"] = UnitAttr()
        body = rewriter.move_region_contents_to_new_regions(op.body)
        new = llvm.FuncOp(
            op.sym_name,
            llvm.LLVMFunctionType(inputs, output),
            linkage=llvm.LinkageAttr(linkage),
            body=body,
            other_props=props,
            extra_attrs=dict(op.attributes),
        )
        rewriter.replace(op, new)
        if body.blocks:
            convert_block_arguments(rewriter, body.blocks[0])


class LowerCall(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: func.CallOp, rewriter: PatternRewriter, /):
        if len(op.res) > 1:
            raise LoweringError(
                f"call to {op.callee} returns {len(op.res)} values; LLVM allows one"
            )
        args = converted(rewriter, op, op.arguments)
        result = convert_type(op.res[0].type) if op.res else None
        replace_converted(rewriter, op, [llvm.CallOp(op.callee, *args, return_type=result)])


class LowerReturn(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: func.ReturnOp, rewriter: PatternRewriter, /):
        if len(op.arguments) > 1:
            raise LoweringError("func.return of several values has no LLVM form")
        values = converted(rewriter, op, op.arguments)
        rewriter.replace(op, llvm.ReturnOp(values[0] if values else None))


FUNC_TO_LLVM_PATTERNS: tuple[RewritePattern, ...] = (LowerFunc(), LowerCall(), LowerReturn())


@dataclass(frozen=True)
class ConvertFuncToLLVMPass(ConversionPass):
    """Lower functions, calls and returns to the `llvm` dialect with bare-pointer memrefs."""

    name = "convert-func-to-llvm"
    patterns = FUNC_TO_LLVM_PATTERNS
