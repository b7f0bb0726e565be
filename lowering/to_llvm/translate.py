"""Translate a module in the xDSL `llvm` dialect to an `llvmlite.ir.Module`.

xDSL's `convert_module` does most of this, but it drops linkage and function attributes
(`noinline`, `nounwind`), names every intrinsic without its type suffix (so `llvm.exp` on f32
and on f64 in one module collide), and knows neither our `llvmx` casts, `par.launch` (parallel
loops, emitted by launch.py) nor blocks that are listed before the blocks dominating them. This
driver declares and walks the functions itself, handles those ops, and hands every other op
to xDSL's `convert_op`.
"""

from __future__ import annotations

from collections.abc import Callable

from llvmlite import ir
from xdsl.backend.llvm.convert_op import convert_op, declare_intrinsic
from xdsl.backend.llvm.convert_type import convert_type
from xdsl.dialects import llvm
from xdsl.dialects.builtin import IntegerAttr, ModuleOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.utils.exceptions import LLVMTranslationException

from onnxc.errors import LoweringError
from onnxc.lowering.to_llvm import launch, llvm_ext
from onnxc.lowering.to_llvm.parallel import LaunchOp

# Overloaded intrinsics that xDSL's llvm dialect has a dedicated op for.
_INTRINSIC_OPS: dict[type[Operation], str] = {
    llvm.FAbsOp: "llvm.fabs",
    llvm.FExpOp: "llvm.exp",
    llvm.FExp2Op: "llvm.exp2",
    llvm.FLogOp: "llvm.log",
    llvm.FLog2Op: "llvm.log2",
    llvm.FSqrtOp: "llvm.sqrt",
    llvm.FCeilOp: "llvm.ceil",
    llvm.FFloorOp: "llvm.floor",
    llvm.FSinOp: "llvm.sin",
    llvm.FCosOp: "llvm.cos",
    llvm.FPowOp: "llvm.pow",
    llvm.VectorFMaxOp: "llvm.maxnum",
    llvm.VectorFMinOp: "llvm.minnum",
    llvm.FCopySignOp: "llvm.copysign",
    llvm.FMAOp: "llvm.fma",
}

_CASTS: dict[type[Operation], Callable[[ir.IRBuilder], Callable[[ir.Value, ir.Type], ir.Value]]] = {
    llvm_ext.FPToSIOp: lambda b: b.fptosi,
    llvm_ext.FPToUIOp: lambda b: b.fptoui,
    llvm_ext.UIToFPOp: lambda b: b.uitofp,
}

_FCMP = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}

# Argument attributes llvmlite can print, by their MLIR name.
ARG_FLAGS = {
    "llvm.noalias": "noalias",
    "llvm.nonnull": "nonnull",
    "llvm.noundef": "noundef",
    "llvm.nocapture": "captures(none)",
    "llvm.nofree": "nofree",
}
ARG_INTS = {"llvm.align": "align", "llvm.dereferenceable": "dereferenceable"}


def declare_function(op: llvm.FuncOp, module: ir.Module) -> ir.Function:
    function_type = convert_type(op.function_type)
    assert isinstance(function_type, ir.FunctionType)
    fn = ir.Function(module, function_type, name=op.sym_name.data)
    linkage = op.linkage.linkage.data
    if linkage != "external":
        fn.linkage = linkage
    if op.body.blocks:
        fn.attributes.add("nounwind")  # onnxc code never unwinds
    if op.no_inline is not None:
        fn.attributes.add("noinline")
    if op.arg_attrs is not None:
        for arg, attrs in zip(fn.args, op.arg_attrs.data, strict=True):
            for name, value in attrs.data.items():
                if name in ARG_FLAGS:
                    arg.add_attribute(ARG_FLAGS[name])
                elif name in ARG_INTS and isinstance(value, IntegerAttr):
                    setattr(arg.attributes, ARG_INTS[name], value.value.data)
    return fn


def dominance_order(blocks: list[Block]) -> list[Block]:
    """Blocks in reverse post-order (definitions before uses), then unreachable ones."""
    seen: set[Block] = set()
    post: list[Block] = []
    stack: list[tuple[Block, int]] = [(blocks[0], 0)]
    seen.add(blocks[0])
    while stack:
        block, index = stack.pop()
        successors = block.last_op.successors if block.last_op is not None else ()
        if index < len(successors):
            stack.append((block, index + 1))
            succ = successors[index]
            if succ not in seen:
                seen.add(succ)
                stack.append((succ, 0))
        else:
            post.append(block)
    order = post[::-1]
    return order + [b for b in blocks if b not in seen]


def convert_own_op(op: Operation, builder: ir.IRBuilder, values: dict[SSAValue, ir.Value]) -> bool:
    """Convert the ops xDSL's `convert_op` gets wrong or lacks; False if `op` is not one."""
    if type(op) in _INTRINSIC_OPS:
        args = [values[operand] for operand in op.operands]
        result_type = convert_type(op.results[0].type)
        fnty = ir.FunctionType(result_type, [a.type for a in args])
        fn = declare_intrinsic(builder.module, _INTRINSIC_OPS[type(op)], result_type, fnty)
        fastmath = op.properties.get("fastmathFlags")
        flags = [f.value for f in fastmath.data] if isinstance(fastmath, llvm.FastMathAttr) else []
        values[op.results[0]] = builder.call(fn, args, fastmath=flags)
        return True
    if isinstance(op, llvm_ext.VectorFCmpOp):
        predicate = op.predicate.data
        lhs, rhs = values[op.lhs], values[op.rhs]
        if predicate in ("ord", "uno"):
            build = builder.fcmp_ordered if predicate == "ord" else builder.fcmp_unordered
            values[op.res] = build(predicate, lhs, rhs)
        else:
            build = builder.fcmp_ordered if predicate[0] == "o" else builder.fcmp_unordered
            values[op.res] = build(_FCMP[predicate[1:]], lhs, rhs)
        return True
    if isinstance(op, llvm_ext.VectorSelectOp):
        values[op.res] = builder.select(values[op.cond], values[op.lhs], values[op.rhs])
        return True
    if isinstance(op, LaunchOp):
        operands = [values[operand] for operand in op.operands]
        launch.emit_launch(builder, op.callee.root_reference.data, op.threads.value.data,
                           operands[:3], operands[3:])
        return True
    if type(op) in _CASTS:
        target = convert_type(op.results[0].type)
        values[op.results[0]] = _CASTS[type(op)](builder)(values[op.operands[0]], target)
        return True
    return False


def convert_body(op: llvm.FuncOp, fn: ir.Function) -> None:
    blocks = list(op.body.blocks)
    block_map = {block: fn.append_basic_block(name=block.name_hint or "") for block in blocks}
    values: dict[SSAValue, ir.Value] = dict(zip(blocks[0].args, fn.args, strict=True))
    for block in blocks[1:]:
        builder = ir.IRBuilder(block_map[block])
        for arg in block.args:
            values[arg] = builder.phi(convert_type(arg.type))
    for block in dominance_order(blocks):
        builder = ir.IRBuilder(block_map[block])
        if block_map[block].instructions:
            builder.position_after(block_map[block].instructions[-1])
        for inner in block.ops:
            if not inner.name.startswith(("llvm.", "llvmx.", "par.")):
                raise LoweringError(
                    f"'{inner.name}' in @{op.sym_name.data} has no LLVM translation; "
                    "lower the module with the loops-to-LLVM pipeline first"
                )
            try:
                if not convert_own_op(inner, builder, values):
                    convert_op(inner, builder, values, block_map)
            except (NotImplementedError, LLVMTranslationException, KeyError, TypeError) as e:
                raise LoweringError(
                    f"cannot translate '{inner.name}' in @{op.sym_name.data}: {e}"
                ) from e


def to_llvmlite(module: ModuleOp, *, triple: str, data_layout: str = "") -> ir.Module:
    """The llvmlite IR of `module`, which must hold only `llvm.func`s in the `llvm` dialect."""
    result = ir.Module()
    result.triple = triple
    if data_layout:
        result.data_layout = data_layout
    functions: list[tuple[llvm.FuncOp, ir.Function]] = []
    for op in module.ops:
        if not isinstance(op, llvm.FuncOp):
            raise LoweringError(
                f"top-level '{op.name}' has no LLVM translation (only llvm.func is supported)"
            )
        try:
            functions.append((op, declare_function(op, result)))
        except (LLVMTranslationException, ValueError) as e:
            raise LoweringError(f"cannot declare @{op.sym_name.data}: {e}") from e
    for op, fn in functions:
        if op.body.blocks:
            convert_body(op, fn)
    return result
