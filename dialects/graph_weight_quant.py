"""Weight-only quantized matrix product: float activations times block-quantized weights.

`graph.matmul_weight_quantized` is what com.microsoft MatMulNBits (onnxruntime's int4/int8
weight-only format, written by `MatMulNBitsQuantizer`, onnxruntime-genai, Olive, optimum)
and the QDQ form of the same quantization (a blocked DequantizeLinear of a constant
uint4/int4 weight feeding a MatMul) both become. It computes

    y[.., n] = sum_k a[.., k] * (q[n, k] - zero_points[n, g(k)]) * scales[n, g(k)] + bias[n]

with `q` the `bits`-bit unsigned integers packed in `weight` as MatMulNBits stores them:
[N, k_blocks, block_size * bits / 8] bytes, row n's k values in order, low bits first
(two 4-bit values per byte: k even in the low nibble). g(k) is the k row's block,
`k // block_size`, or `group_index[k]` (act-order quantization, GPTQ's g_idx) when given.
Scales and zero points are [N, k_blocks] of the activations' float type: zero points are
kept unpacked, as floats (MatMulNBits' packed uint8 nibbles or its float zero points, the
default 2^(bits-1) written out), so one operand serves every form; any sign of scale is
valid (the symmetric quantizer writes negative ones).

The weight stays packed: the kernel repacks it at compile time into its own panel layout
(lowering/graph_to_loops/weight_quant_gemm.py) and unpacks it in registers; dequantized
weights are never stored. `accuracy_level` is MatMulNBits' 0-4: 0-3 compute in f32; 4
allows A to be quantized to int8 per block (weight_quant_int8.py does where the target has
int8 dot products; the numpy reference always computes in f32).
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import (
    AnyFloat,
    DenseArrayBase,
    IntegerAttr,
    IntegerType,
    Signedness,
    TensorType,
)
from xdsl.irdl import (
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
)
from xdsl.utils.exceptions import VerifyException

from onnxc.dialects.graph_base import GraphOp, int_of, ints_of, shape_of

WEIGHT_BITS = (2, 4, 8)
"""Bit widths MatMulNBits takes (onnxruntime's CheckInputs)."""


def blob_size(block_size: int, bits: int) -> int:
    """Bytes of one block of one column."""
    return block_size * bits // 8


@irdl_op_definition
class MatMulWeightQuantizedOp(GraphOp):
    """numpy.matmul of float activations [.., K] by the dequantized [K, N] weight of
    MatMulNBits' packed blocks (the module docstring's formula), + bias; f32 accumulation."""

    name = "graph.matmul_weight_quantized"
    input = operand_def(TensorType)
    weight = operand_def(TensorType)
    scales = operand_def(TensorType)
    zero_points = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    output = result_def(TensorType)
    bits = prop_def(IntegerAttr)
    block_size = prop_def(IntegerAttr)
    group_index = opt_prop_def(DenseArrayBase)
    accuracy_level = opt_prop_def(IntegerAttr)

    def k(self):
        return shape_of(self.input)[-1]

    def n(self) -> int:
        return shape_of(self.weight)[0]

    def k_blocks(self) -> int:
        return shape_of(self.weight)[1]

    def groups(self) -> tuple[int, ...] | None:
        """g(k) for every k row when it is not k // block_size (act order), else None."""
        return ints_of(self.group_index) if self.group_index is not None else None

    def same_element_type_operands(self):
        return [v for v in (self.input, self.scales, self.zero_points, self.bias)
                if v is not None]

    def verify_element_types(self) -> None:
        super().verify_element_types()
        el = self.input.type.get_element_type()
        if not isinstance(el, AnyFloat):
            raise VerifyException(f"{self.name}: input must be a float, got {el}")
        w = self.weight.type.get_element_type()
        if not (isinstance(w, IntegerType) and w.width.data == 8
                and w.signedness.data == Signedness.UNSIGNED):
            raise VerifyException(f"{self.name}: weight must be ui8 (packed), got {w}")
        bits, block = int_of(self.bits), int_of(self.block_size)
        if bits not in WEIGHT_BITS:
            raise VerifyException(f"{self.name}: bits must be 2, 4 or 8, got {bits}")
        if block < 16 or block & (block - 1):
            raise VerifyException(f"{self.name}: block_size must be a power of 2 >= 16, got "
                                  f"{block}")
        if not 0 <= int_of(self.accuracy_level) <= 4:
            raise VerifyException(f"{self.name}: accuracy_level must be in [0, 4]")

    def infer_shapes(self):
        a = shape_of(self.input)
        w = shape_of(self.weight)
        if len(a) < 1 or len(w) != 3:
            raise ValueError(f"input {list(a)} needs rank >= 1 and weight [N, k_blocks, "
                             f"blob] rank 3, got {list(w)}")
        n, k_blocks, blob = w
        k, bits, block = a[-1], int_of(self.bits), int_of(self.block_size)
        if not isinstance(k, int):
            raise ValueError("K (the input's last axis) must be static")
        if k_blocks != -(-k // block) or blob != blob_size(block, bits):
            raise ValueError(f"weight {list(w)} is not [N, ceil(K / block_size) = "
                             f"{-(-k // block)}, block_size * bits / 8 = "
                             f"{blob_size(block, bits)}] for K = {k}")
        for name, v in (("scales", self.scales), ("zero_points", self.zero_points)):
            if shape_of(v) != (n, k_blocks):
                raise ValueError(f"{name} {list(shape_of(v))} is not [{n}, {k_blocks}]")
        if self.bias is not None and shape_of(self.bias) != (n,):
            raise ValueError(f"bias {list(shape_of(self.bias))} is not [{n}]")
        groups = self.groups()
        if groups is not None and (len(groups) != k
                                   or any(not 0 <= g < k_blocks for g in groups)):
            raise ValueError(f"group_index must hold K = {k} blocks in [0, {k_blocks})")
        return [(*a[:-1], n)]


WEIGHT_QUANT_OPS = (MatMulWeightQuantizedOp,)


def unpack_bits(packed, bits: int, k: int):
    """MatMulNBits' [N, k_blocks, blob] bytes -> the [N, K] unsigned values (numpy int32):
    each byte holds 8 / bits values, the first in the low bits; the padding past K dropped."""
    raw = np.asarray(packed, np.uint8).reshape(packed.shape[0], -1).astype(np.int32)
    per = 8 // bits
    shifts = np.arange(per, dtype=np.int32) * bits
    values = (raw[:, :, None] >> shifts) & ((1 << bits) - 1)
    return values.reshape(packed.shape[0], -1)[:, :k]


def pack_bits(q, bits: int, block_size: int):
    """The inverse of `unpack_bits`: [N, K] values in [0, 2^bits) -> [N, k_blocks, blob]
    bytes, K padded with zeros to whole blocks."""
    q = np.asarray(q, np.int64)
    n, k = q.shape
    k_blocks = -(-k // block_size)
    padded = np.zeros((n, k_blocks * block_size), np.int64)
    padded[:, :k] = q
    per = 8 // bits
    grouped = padded.reshape(n, -1, per) << (np.arange(per) * bits)
    return grouped.sum(axis=2).astype(np.uint8).reshape(n, k_blocks,
                                                        blob_size(block_size, bits))
