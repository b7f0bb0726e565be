"""`set-compute-precision{precision=bf16}`: which f32 products run in bf16.

`onnxc.compile(..., precision="bf16")` runs this right before convert-graph-to-loops (after
assign-layout: the bf16 conv kernel is the NHWC implicit GEMM). It marks every op whose
kernel has a bf16 form with the discardable attribute `onnxc.precision = "bf16"`: MatMul and
Gemm by a constant B on the packed kernel, and NHWC convs that are not depthwise (the 1x1
ones included). The kernels read the mark (lowering/graph_to_loops/gemm_bf16.py); every
other op, and the epilogues of the marked ones, stay f32. `precision=fp32` marks nothing.

    %y = graph.matmul(%x, %w) : ...   ->   %y = graph.matmul(%x, %w) {onnxc.precision = "bf16"}

bf16 code needs AVX512-BF16 (`vdpbf16ps`): on another CPU the pass raises LoweringError
rather than emit code LLVM cannot select (onnxc.compile refuses such a request earlier,
as InvalidArgumentError).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.passes import ModulePass

from onnxc.dialects import graph
from onnxc.errors import LoweringError
from onnxc.lowering.graph_to_loops import conv_nhwc, gemm_bf16
from onnxc.lowering.graph_to_loops.kernels import BF16_KERNELS
from onnxc.precision import DEFAULT_PRECISION, PRECISIONS
from onnxc.target import target_of


@dataclass(frozen=True)
class SetComputePrecisionPass(ModulePass):
    """Mark the GEMMs and convs that run in `precision` (fp32: none, the default)."""

    name = "set-compute-precision"

    precision: str = DEFAULT_PRECISION

    check_host: bool = True
    """Refuse bf16 on a CPU without AVX512-BF16 (false: mark anyway, for IR tests only:
    such code cannot be compiled here)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.precision not in PRECISIONS:
            raise LoweringError(f"set-compute-precision: precision must be one of "
                                f"{', '.join(PRECISIONS)}, got '{self.precision}'")
        if self.precision == DEFAULT_PRECISION:
            return
        if self.check_host and not gemm_bf16.supports_bf16(target_of(op)):
            raise LoweringError("set-compute-precision: precision=bf16 needs AVX512-BF16, "
                                "which the target does not have")
        for o in op.walk():
            if bf16_eligible(o):
                o.attributes[gemm_bf16.PRECISION_ATTR] = StringAttr(self.precision)




def bf16_eligible(op) -> bool:
    """Whether `op`'s kernel has a bf16 form (static shapes only: its scratch is sized by
    the rows)."""
    if not isinstance(op, BF16_KERNELS) or any(  # the rules' bf16 (kernels.py)
            graph.is_symbolic(v) for v in [*op.operands, *op.results]):
        return False
    if isinstance(op, graph.MatMulOp | graph.GemmOp):
        return gemm_bf16.gemm_eligible(op)
    if isinstance(op, graph.ConvOp | graph.ConvAddOp):
        return conv_nhwc.is_nhwc(op) and conv_nhwc.bf16_eligible(op)
    return False
