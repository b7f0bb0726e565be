"""Graph-optimization levels, as in onnxruntime: -O0 nothing, -O1 Basic, -O2 + Extended,
-O3 + Layout & Memory.

BASIC, EXTENDED and LAYOUT_AND_MEMORY hold every row of the pass catalog
(docs/graph-passes.md, `onnxc.registry`) exactly once, at the level the catalog puts it. A
level does not run its rows in catalog order but in ORDER, which interleaves the levels so
that rewrites enable each other: folding first (so patterns see real constants), then removal of redundant and inverse
ops, the complex (Extended) fusions while their source patterns are still intact, algebra,
the weight fusions, epilogues, and last the forms only kernels care about (scalar operands,
fused elementwise loops) followed by CSE and dead-code removal. The whole order runs ROUNDS
times: a rewrite late in the order can enable an earlier one. Measured on the nine zoo
networks at -O3: a second round removes one more node (densenet121: 249 -> 248), a third
none, at ~25% more pipeline time (`benchmarks/node_counts.py` prints the counts).
"""

from __future__ import annotations

BASIC: tuple[str, ...] = (
    # constant folding
    "fold-constant-ops", "fold-axes-inputs", "fold-scalar-binary", "fold-unsqueeze-const",
    "fold-constant-if",
    # redundant node elimination
    "drop-no-op", "drop-noop-cast", "drop-full-slice", "drop-identity-pool", "drop-orphans",
    "drop-reshape-before-binary", "drop-flatten-after-global-pool", "drop-flatten-after-linear",
    "merge-reshapes", "merge-casts",
    # inverse pairs
    "cancel-squeeze-unsqueeze", "cancel-transposes", "cancel-concat-slice",
    # common subexpressions and algebra, loop-invariant code motion
    "cse", "hoist-loop-invariants", "algebraic-identities", "reassociate-constants", "distribute",
    "strength-reduce",
    "broadcast-simplify",
    # operator fusion (conv_fusion, gemm_fusion, normalization_fusion, activation_fusion,
    # elementwise_fusion)
    "fuse-conv-bn", "fuse-conv-add", "fuse-conv-mul", "fuse-conv-matmul", "fuse-matmul-add",
    "fuse-matmul-scale", "fuse-bn-scale", "fuse-matmul-bn", "fuse-activation", "fuse-elementwise",
    # operator replacement (replacement; conv-after-global-pool-to-gemm is in gemm_fusion,
    # split-conv-live-regions in conv_live_regions)
    "bn-to-scale", "prelu-to-leakyrelu", "conv-after-global-pool-to-gemm", "shuffle-channel",
    "pad-to-input", "drop-padding-taps", "split-conv-live-regions",
    # operator forwarding
    "slice-before-elementwise", "transpose-through-elementwise", "reduce-before-shift",
    # half precision: ops without a half kernel compute in f32 between casts; fp16/bf16
    # graphs become f32 graphs before the fusions
    "widen-half-precision", "widen-half-graph",
)

EXTENDED: tuple[str, ...] = (
    # the complex fusions, by subject: normalization_fusion, activation_fusion, gemm_fusion,
    # weighted_sum_fusion, global_pool_fusion, attention_fusion, horizontal_fusion
    "fuse-layernorm", "fuse-gelu", "fuse-prelu", "fuse-matmul-transpose", "fuse-binary-eltwise",
    "fuse-reduce-to-global-pool", "fuse-attention", "horizontal-fusion",
    # QDQ recognition (onnxruntime runs its QDQ fusions at Extended too)
    "fuse-qdq-linear", "move-quant-dequant", "fuse-weight-only-matmul",
)

LAYOUT_AND_MEMORY: tuple[str, ...] = (
    # layout conversions only exist once layouts are assigned; cancel-quant-dequant removes
    # only exact Dequantize -> Quantize pairs here (Quantize -> Dequantize, which changes the
    # rounding, is the explicit opt-in `cancel-quant-dequant{allow-rounding-change=true}`)
    "cancel-layout-conversions", "drop-layout-cast-at-output", "cancel-quant-dequant",
    # attention reads Q, K, V where the projections wrote them (strided views, no copies)
    "attention-operand-views",
)

ORDER: tuple[str, ...] = (
    # 0. QDQ subgraphs become integer ops while their weight dequantizations are intact
    #    (fold-constant-ops would turn them into float weights)
    "move-quant-dequant", "fuse-qdq-linear", "fuse-weight-only-matmul",
    # 1. constants become real constants, constant inputs become properties
    "fold-constant-ops", "fold-axes-inputs", "fold-unsqueeze-const", "pad-to-input",
    "drop-padding-taps", "split-conv-live-regions", "fold-constant-if",
    # fp16/bf16 graphs compute in f32 from here, rounded at their edges as onnxruntime's are
    "widen-half-graph",
    # 2. nothing-ops, inverse pairs and normal forms
    "drop-no-op", "drop-noop-cast", "drop-full-slice", "drop-identity-pool",
    "merge-reshapes", "merge-casts", "cancel-squeeze-unsqueeze", "cancel-transposes",
    "transpose-through-elementwise", "cancel-concat-slice", "cancel-quant-dequant",
    "cancel-layout-conversions", "drop-reshape-before-binary", "broadcast-simplify",
    "prelu-to-leakyrelu", "shuffle-channel", "cse",
    # 3. complex fusions, while the patterns they recognise are intact
    "fuse-layernorm", "fuse-gelu", "fuse-prelu", "fuse-attention", "fuse-reduce-to-global-pool",
    # 4. algebra and forwarding (work moves to constants, then folds)
    "algebraic-identities", "strength-reduce", "reassociate-constants", "distribute",
    "slice-before-elementwise", "reduce-before-shift", "fold-constant-ops",
    # 5. weight fusions into Conv / Gemm, then what remains of BatchNormalization
    "fuse-bn-scale", "fuse-conv-bn", "fuse-matmul-bn", "fuse-conv-mul", "fuse-conv-add",
    "fuse-conv-matmul", "bn-to-scale", "fuse-conv-mul", "fuse-conv-add",
    "conv-after-global-pool-to-gemm", "drop-flatten-after-global-pool",
    "drop-flatten-after-linear", "fuse-matmul-scale", "fuse-matmul-add",
    "fuse-matmul-transpose", "fuse-binary-eltwise",
    # 6. epilogues and sibling fusion, then kernel-level forms
    "fuse-activation", "horizontal-fusion", "fold-scalar-binary", "attention-operand-views",
    # fp16/bf16 ops without a half kernel -> f32 between casts (after the fusions that
    # match the model's own ops, before fuse-elementwise)
    "widen-half-precision", "fuse-elementwise",
    "drop-layout-cast-at-output",
    # 7. clean up (invariants leave loops once CSE merged what the body shares with outside)
    "cse", "hoist-loop-invariants", "drop-orphans",
)

ROUNDS = 2

_LEVEL_ROWS: dict[int, frozenset[str]] = {
    0: frozenset(),
    1: frozenset(BASIC),
    2: frozenset(BASIC + EXTENDED),
    3: frozenset(BASIC + EXTENDED + LAYOUT_AND_MEMORY),
}

_OPTIONS: dict[int, dict[str, str]] = {
    # no level changes results: Quantize -> Dequantize removal is opt-in only
}

LEVELS: dict[int, tuple[str, ...]] = {
    level: tuple(
        name + _OPTIONS.get(level, {}).get(name, "") for name in ORDER if name in rows
    ) * (ROUNDS if rows else 0)
    for level, rows in _LEVEL_ROWS.items()
}
"""The pass specs each level runs, in order (ORDER filtered by the level's rows, ROUNDS
times, with the level's pass options)."""


def missing_passes() -> list[str]:
    """Rows listed here whose pass class cannot be loaded (tests require none)."""
    from onnxc.registry import ONNXC_PASSES

    missing = []
    for name in dict.fromkeys(ORDER):
        try:
            ONNXC_PASSES[name]()
        except (KeyError, ImportError, AttributeError):
            missing.append(name)
    return missing


def level_passes(opt_level: int) -> tuple[str, ...]:
    """The graph pass specs of one optimization level, in the order they run."""
    if opt_level not in LEVELS:
        raise ValueError(f"opt_level must be one of {sorted(LEVELS)}, got {opt_level}")
    return LEVELS[opt_level]


def graph_pipeline(opt_level: int) -> str:
    """The level's pipeline as text for `--pass-pipeline` / `onnxc.compile(pass_pipeline=)`."""
    return ",".join(level_passes(opt_level))
