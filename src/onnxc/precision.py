"""The compute precisions a compile may ask for: the one list every layer checks against.

"fp32" computes in f32 throughout; "bf16" computes the products of f32 GEMMs and convs in
bf16 with f32 accumulation where the target has AVX512-BF16 (docs/precision.md). The API
arguments, the CLIs, the set-compute-precision pass, the cache entries and the artifacts
all read this tuple, so a new precision is added here once.
"""

PRECISIONS: tuple[str, ...] = ("fp32", "bf16")
DEFAULT_PRECISION = "fp32"

__all__ = ["DEFAULT_PRECISION", "PRECISIONS"]
