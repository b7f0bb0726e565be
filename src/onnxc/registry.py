"""The one list of onnxc's dialects and passes, as lazy factories.

`onnxc-opt`, `onnxc.compile` and the pipelines all look passes up here by their kebab-case
name, so a pass registered once is reachable everywhere. Factories import on first use to
keep start-up fast (the same scheme as `xdsl.transforms.get_all_passes`).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from xdsl.ir import Dialect
from xdsl.passes import ModulePass


def _lazy(path: str) -> Callable[[], type[ModulePass]]:
    module_name, _, attr = path.partition(":")

    def factory() -> type[ModulePass]:
        return getattr(importlib.import_module(module_name), attr)

    return factory


def _lazy_dialect(path: str) -> Callable[[], Dialect]:
    module_name, _, attr = path.partition(":")
    return lambda: getattr(importlib.import_module(module_name), attr)


ONNXC_DIALECTS: dict[str, Callable[[], Dialect]] = {
    "graph": _lazy_dialect("onnxc.dialects.graph:Graph"),
    "layout": _lazy_dialect("onnxc.dialects.layout:Layout"),
    "onnxc": _lazy_dialect("onnxc.dialects.onnxc_attributes:Onnxc"),
    "llvmx": _lazy_dialect("onnxc.lowering.to_llvm.llvm_ext:LLVMX"),
    "par": _lazy_dialect("onnxc.lowering.to_llvm.parallel:Par"),
}

# name -> "module:PassClass". Keep sorted by pipeline stage.
_PASS_PATHS: dict[str, str] = {
    # graph optimizations: one pass per row of the catalog (docs/graph-passes.md)
    "fold-constant-ops": "onnxc.passes.constant_folding:FoldConstantOpsPass",
    "fold-axes-inputs": "onnxc.passes.constant_folding:FoldAxesInputsPass",
    "fold-scalar-binary": "onnxc.passes.constant_folding:FoldScalarBinaryPass",
    "fold-unsqueeze-const": "onnxc.passes.constant_folding:FoldUnsqueezeConstPass",
    "drop-no-op": "onnxc.passes.redundant:DropNoOpPass",
    "drop-noop-cast": "onnxc.passes.redundant:DropNoopCastPass",
    "drop-full-slice": "onnxc.passes.redundant:DropFullSlicePass",
    "drop-identity-pool": "onnxc.passes.redundant:DropIdentityPoolPass",
    "drop-layout-cast-at-output": "onnxc.passes.redundant:DropLayoutCastAtOutputPass",
    "drop-orphans": "onnxc.passes.redundant:DropOrphansPass",
    "drop-reshape-before-binary": "onnxc.passes.redundant:DropReshapeBeforeBinaryPass",
    "drop-flatten-after-global-pool": "onnxc.passes.redundant:DropFlattenAfterGlobalPoolPass",
    "drop-flatten-after-linear": "onnxc.passes.redundant:DropFlattenAfterLinearPass",
    "merge-reshapes": "onnxc.passes.redundant:MergeReshapesPass",
    "merge-casts": "onnxc.passes.redundant:MergeCastsPass",
    "cancel-squeeze-unsqueeze": "onnxc.passes.inverse_pairs:CancelSqueezeUnsqueezePass",
    "cancel-transposes": "onnxc.passes.inverse_pairs:CancelTransposesPass",
    "cancel-layout-conversions": "onnxc.passes.inverse_pairs:CancelLayoutConversionsPass",
    "cancel-quant-dequant": "onnxc.passes.inverse_pairs:CancelQuantDequantPass",
    "cancel-concat-slice": "onnxc.passes.inverse_pairs:CancelConcatSlicePass",
    "cse": "onnxc.passes.cse:CsePass",
    "algebraic-identities": "onnxc.passes.algebra:AlgebraicIdentitiesPass",
    "reassociate-constants": "onnxc.passes.algebra:ReassociateConstantsPass",
    "distribute": "onnxc.passes.algebra:DistributePass",
    "strength-reduce": "onnxc.passes.algebra:StrengthReducePass",
    "broadcast-simplify": "onnxc.passes.algebra:BroadcastSimplifyPass",
    "fuse-conv-bn": "onnxc.passes.conv_fusion:FuseConvBnPass",
    "fuse-conv-add": "onnxc.passes.conv_fusion:FuseConvAddPass",
    "fuse-conv-mul": "onnxc.passes.conv_fusion:FuseConvMulPass",
    "fuse-conv-matmul": "onnxc.passes.conv_fusion:FuseConvMatmulPass",
    "fuse-matmul-add": "onnxc.passes.gemm_fusion:FuseMatmulAddPass",
    "fuse-matmul-scale": "onnxc.passes.gemm_fusion:FuseMatmulScalePass",
    "fuse-bn-scale": "onnxc.passes.normalization_fusion:FuseBnScalePass",
    "fuse-matmul-bn": "onnxc.passes.gemm_fusion:FuseMatmulBnPass",
    "fuse-activation": "onnxc.passes.activation_fusion:FuseActivationPass",
    "fuse-elementwise": "onnxc.passes.elementwise_fusion:FuseElementwisePass",
    "bn-to-scale": "onnxc.passes.replacement:BnToScalePass",
    "prelu-to-leakyrelu": "onnxc.passes.replacement:PreluToLeakyreluPass",
    "drop-padding-taps": "onnxc.passes.replacement:DropPaddingTapsPass",
    "split-conv-live-regions": "onnxc.passes.conv_live_regions:SplitConvLiveRegionsPass",
    "conv-after-global-pool-to-gemm": "onnxc.passes.gemm_fusion:ConvAfterGlobalPoolToGemmPass",
    "shuffle-channel": "onnxc.passes.replacement:ShuffleChannelPass",
    "pad-to-input": "onnxc.passes.replacement:PadToInputPass",
    "slice-before-elementwise": "onnxc.passes.forwarding:SliceBeforeElementwisePass",
    "transpose-through-elementwise": "onnxc.passes.forwarding:TransposeThroughElementwisePass",
    "reduce-before-shift": "onnxc.passes.forwarding:ReduceBeforeShiftPass",
    "fuse-layernorm": "onnxc.passes.normalization_fusion:FuseLayernormPass",
    "fuse-gelu": "onnxc.passes.activation_fusion:FuseGeluPass",
    "fuse-prelu": "onnxc.passes.activation_fusion:FusePreluPass",
    "fuse-matmul-transpose": "onnxc.passes.gemm_fusion:FuseMatmulTransposePass",
    "fuse-binary-eltwise": "onnxc.passes.weighted_sum_fusion:FuseBinaryEltwisePass",
    "fuse-reduce-to-global-pool": "onnxc.passes.global_pool_fusion:FuseReduceToGlobalPoolPass",
    "fuse-attention": "onnxc.passes.attention_fusion:FuseAttentionPass",
    "horizontal-fusion": "onnxc.passes.horizontal_fusion:HorizontalFusionPass",
    "attention-operand-views": "onnxc.passes.attention_views:AttentionOperandViewsPass",
    "fuse-qdq-linear": "onnxc.passes.quant_linear:FuseQdqLinearPass",
    "move-quant-dequant": "onnxc.passes.quant_move:MoveQuantDequantPass",
    "fuse-weight-only-matmul": "onnxc.passes.weight_quant_fusion:FuseWeightOnlyMatMulPass",
    "widen-half-precision": "onnxc.passes.half_precision:WidenHalfPrecisionPass",
    "widen-half-graph": "onnxc.passes.half_precision:WidenHalfGraphPass",
    # control flow: If on a constant condition, loop-invariant code motion
    "fold-constant-if": "onnxc.passes.control_flow:FoldConstantIfPass",
    "hoist-loop-invariants": "onnxc.passes.control_flow:HoistLoopInvariantsPass",
    # graph -> loops (scf/memref/arith/math over static memrefs); first, at every -O level,
    # the checks of run-time indices and divisors (pipeline.GRAPH_TO_LOOPS)
    "convert-graph-to-loops": "onnxc.lowering.graph_to_loops.convert_graph_to_loops:ConvertGraphToLoopsPass",
    "insert-runtime-checks": "onnxc.passes.insert_checks:InsertRuntimeChecksPass",
    # layouts, chosen right before convert-graph-to-loops (pipeline.GRAPH_TO_LOOPS): which
    # activations are NHWC, then cleanup of the conversions (not graph-optimization rows)
    "assign-layout": "onnxc.passes.layout_assign:AssignLayoutPass",
    "fold-layout-converts": "onnxc.passes.layout_fold:FoldLayoutConvertsPass",
    "fuse-pointwise-depthwise": "onnxc.passes.depthwise_fusion:FusePointwiseDepthwisePass",
    # which GEMMs and convs compute in bf16 (`precision="bf16"`, pipeline.graph_to_loops)
    "set-compute-precision": "onnxc.lowering.compute_precision:SetComputePrecisionPass",
    # loops-level whole-program passes: the entry ABI
    "inplace": "onnxc.lowering.inplace:InplacePass",
    "plan-memory": "onnxc.lowering.plan_memory:PlanMemoryPass",
    "bind-constants": "onnxc.lowering.bind_constants:BindConstantsPass",
    "return-check-status": "onnxc.lowering.check_status:ReturnCheckStatusPass",
    "profile-kernel-calls": "onnxc.lowering.profile_calls:ProfileKernelCallsPass",
    # loops -> llvm dialect
    "outline-parallel-loops": "onnxc.lowering.to_llvm.parallel:OutlineParallelLoopsPass",
    "convert-scf-to-cf-with-while": "onnxc.lowering.to_llvm.scf_while:ConvertScfToCfWithWhilePass",
    "convert-to-llvm": "onnxc.lowering.to_llvm.convert_to_llvm:ConvertToLLVMPass",
    "convert-arith-to-llvm": "onnxc.lowering.to_llvm.arith:ConvertArithToLLVMPass",
    "convert-math-to-llvm": "onnxc.lowering.to_llvm.math:ConvertMathToLLVMPass",
    "convert-memref-to-llvm": "onnxc.lowering.to_llvm.memref:ConvertMemRefToLLVMPass",
    "convert-vector-to-llvm": "onnxc.lowering.to_llvm.vector:ConvertVectorToLLVMPass",
    "convert-cf-to-llvm": "onnxc.lowering.to_llvm.cf:ConvertCfToLLVMPass",
    "convert-func-to-llvm": "onnxc.lowering.to_llvm.func:ConvertFuncToLLVMPass",
    "emit-entry-wrapper": "onnxc.lowering.entry_wrapper:EmitEntryWrapperPass",
}

ONNXC_PASSES: dict[str, Callable[[], type[ModulePass]]] = {
    name: _lazy(path) for name, path in _PASS_PATHS.items()
}
