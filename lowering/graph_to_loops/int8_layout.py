"""The int8 GEMM's operand forms: which multiply step and tile a target takes, the GEMM's
geometry in words of A, and the packing of the centred weights into B (int8_gemm.py).

A word of A holds 4 input channels (bytes) or 2 (i16, the "pairs" form), B's matching
word 4 or 2 centred weights. Usually every tap has its own words (the channel tail padded),
so a conv over 3 channels multiplies a padding byte in every word: a quarter of a 7x7
stem's products. With `Int8Gemm.runs` a kernel row's taps are one run of kw * C channels
instead, packed into words across the taps (the scratch holds each pixel's C bytes with no
tail, and A is read at byte offsets): the stem's kernel row of 7 taps x 3 channels takes 6
words, not 7 (`packs_runs`).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace

import numpy as np
from xdsl.ir import SSAValue

from onnxc.dialects import graph
from onnxc.dialects.dense_data import values_in_shape
from onnxc.dialects.graph_base import ints_of, shape_of
from onnxc.dialects.graph_qlinear import QLINEAR_CONV_OPS, QuantizedProductOp
from onnxc.lowering.graph_to_loops.conv_nhwc import ConvGeometry, geometry
from onnxc.target import Target

VW = 16
"""Lanes of an accumulator vector (i32), and the columns of B are padded to whole vectors."""
RUN_FORMS = ("vnni", "sdot", "portable")
"""Multiply forms that take packed runs: byte words with no pairing inside a word
(vpmaddubsw's pairs of products saturate, checked on the per-tap layout: `pairs_fit_i16`)."""

SEVEN_ROW_PIXELS = 196
"""Convs with at most this many output pixels (14x14 and 7x7 maps) take 7 x 48 VNNI tiles:
49 and 196 rows split into whole 7-row blocks, where 6 x 64 left a last block recomputing
five or two rows. QDQ ResNet-50 on Zen 4, against 6 x 64 everywhere: kernels -3.1% (its 7x7
convs -9%), cold compile 2.8 -> 3.15 s; 7 x 48 on every map ran -4.3% but compiled in 3.7 s
(a 16-wide tail panel per kernel: no Cout of ResNet-50 is a multiple of 48); 7 x 32 compiled
in 2.2 s but ran -0.4%; 7 x 64 spilled; 8 x 48, 6 x 48 and 5 x 64 were slower."""


def target_int8_isa(target: Target) -> str:
    """`target`'s int8 dot-product instructions: "vnni" (AVX512-VNNI), "avx2" (vpmaddwd /
    vpmaddubsw), "sdot" (AArch64 with the dot-product extension) or "portable" (plain i32
    vector arithmetic, any SIMD target)."""
    if target.has_feature("avx512vnni"):
        return "vnni"
    if target.has_feature("avx2"):
        return "avx2"
    if target.arch == "aarch64" and target.has_feature("dotprod"):
        return "sdot"
    return "portable"


@dataclass(frozen=True)
class Int8Tiling:
    mr: int
    """rows (pixels) per micro-kernel tile"""
    nr: int
    """columns per panel, a multiple of 16"""
    form: str
    """how a k-word is multiplied in (int8_multiply.STEPS): "vnni", "maddubs", "pairs", "sdot" or
    "portable"; it decides the packing of A and B too ("pairs": i16 pairs, else bytes)"""

    @property
    def a_offset(self) -> int:
        """What the step subtracts from every byte of A: 128 for sdot, which multiplies
        signed bytes (A's u8 bytes flipped to s8; corr adds 128 * sum_k B back)."""
        return 128 if self.form == "sdot" else 0

    @property
    def per_word(self) -> int:
        """Channels per word of A and B: two i16, or four bytes."""
        return 2 if self.form == "pairs" else 4


def tiling(op: QuantizedProductOp, target: Target) -> Int8Tiling:
    """The tile and multiply form of `op`'s kernel for `target`. With VNNI, 6 x 64 tiles
    (24 of the 32 zmm registers accumulate), and 7 x 48 (21) for a conv over a static map
    of at most SEVEN_ROW_PIXELS output pixels. On AVX2, 6 x 16: twelve ymm accumulators,
    B's two and A's broadcast fill the 16 registers; vpmaddubsw when no pair of the weights
    can saturate its i16 sums (`pairs_fit_i16`), else the exact vpmaddwd on i16 pairs. Else
    4 x 16 in portable i32 arithmetic."""
    isa = target_int8_isa(target)
    if isa == "vnni":
        pixels = gemm_of(op, 4).pixels if isinstance(op, QLINEAR_CONV_OPS) else None
        small = isinstance(pixels, int) and pixels <= SEVEN_ROW_PIXELS
        return Int8Tiling(7, 48, "vnni") if small else Int8Tiling(6, 64, "vnni")
    if isa == "avx2":
        return Int8Tiling(6, 16, "maddubs" if pairs_fit_i16(op) else "pairs")
    if isa == "sdot":
        return Int8Tiling(6, 16, "sdot")
    return Int8Tiling(4, 16, "portable")


@dataclass(frozen=True)
class Int8Gemm(ConvGeometry):
    """The product as an implicit GEMM over a padded NHWC input (a matmul: h = rows, w = 1),
    K counted in words of `per_word` input channels."""

    per_word: int = 4
    runs: bool = False
    """A kernel row's taps are one run of kw * c channels in `run_words` words, read from a
    byte scratch without channel tails (`packs_runs`); else each tap has c_words words."""

    @property
    def c_words(self) -> int:
        """Words per pixel of A (the channel tail padded)."""
        return -(-self.c // self.per_word)

    @property
    def run_words(self) -> int:
        """Words of one kernel row's taps (adjacent in A when dilation_w is 1)."""
        if self.runs:
            return -(-self.kw * self.c // self.per_word)
        return self.kw * self.c_words

    @property
    def k_words(self) -> int:
        return self.kh * self.run_words

    @property
    def pixel_units(self) -> int:
        """Scratch elements per pixel: c bytes with runs, else c_words words."""
        return self.c if self.runs else self.c_words

    @property
    def word_units(self) -> int:
        """Scratch elements per word of A: per_word bytes with runs, else one word."""
        return self.per_word if self.runs else 1

    @property
    def npad(self) -> int:
        """Columns of packed B: Cout rounded up to whole vectors (zero weights past Cout)."""
        return -(-self.cout // VW) * VW


def gemm_of(op: QuantizedProductOp, per_word: int) -> Int8Gemm:
    """The op's GEMM, in words of `per_word` channels (its tiling's: `Int8Tiling.per_word`)."""
    if isinstance(op, QLINEAR_CONV_OPS):
        return Int8Gemm(**asdict(geometry(op)), per_word=per_word)
    a, b = shape_of(op.lhs), shape_of(op.rhs)
    rows = math.prod(a[:-1])  # a symbolic M ([1, seq, K] activations): run-time rows
    return Int8Gemm(1, a[-1], rows, 1, b[1], rows, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1,
                    per_word=per_word)


def packs_runs(g: Int8Gemm, form: str) -> bool:
    """Whether a conv's kernel rows are packed as runs: a byte form, dilation_w 1, and
    fewer words than one per tap (C not a multiple of 4: stems over 1 or 3 channels)."""
    if form not in RUN_FORMS or g.dw != 1 or g.kw == 1:
        return False
    return -(-g.kw * g.c // g.per_word) < g.kw * g.c_words


def tiled_gemm(op: QuantizedProductOp, t: Int8Tiling) -> Int8Gemm:
    """The op's GEMM in its tiling's words (and packed runs where `packs_runs`)."""
    g = gemm_of(op, t.per_word)
    if isinstance(op, QLINEAR_CONV_OPS) and packs_runs(g, t.form):
        return replace(g, runs=True)
    return g


def _byte_values(value: SSAValue) -> np.ndarray | None:
    """A constant ui8 / i8 tensor's values as int32, None when not a constant."""
    owner = value.owner
    if not isinstance(owner, graph.ConstantOp):
        return None
    return values_in_shape(owner.value, shape_of(value)).astype(np.int32)


def centred_weight_words(op: QuantizedProductOp, g: Int8Gemm) -> np.ndarray:
    """The centred weights as int32 [K words, per_word, Cout padded to whole vectors] for
    GEMM `g`: words of `g.per_word` input channels per tap (or per kernel row's run), zero
    past C (the run) and past Cout."""
    b = weight_matrix(op)
    assert b is not None
    per_word = g.per_word
    groups, length = (g.kh, g.kw * g.c) if g.runs else (g.kh * g.kw, g.c)
    padded = np.zeros((groups, g.k_words // groups * per_word, g.npad), np.int32)
    padded[:, :length, :g.cout] = b.reshape(groups, length, g.cout)
    return padded.reshape(g.k_words, per_word, g.npad)


def pairs_fit_i16(op: QuantizedProductOp) -> bool:
    """Whether vpmaddubsw is exact: its two u8 x s8 products per i16 lane saturate unless,
    for every pair of weights it adds (k = 2i, 2i + 1), the positive parts and the negative
    parts each sum to at most 128 (255 * 128 fits i16)."""
    pairs = centred_weight_words(op, gemm_of(op, 2))
    pos = np.maximum(pairs, 0).sum(axis=1)
    neg = np.maximum(-pairs, 0).sum(axis=1)
    return int(pos.max(initial=0)) <= 128 and int(neg.max(initial=0)) <= 128


def packed_rows(op: QuantizedProductOp, t: Int8Tiling) -> np.ndarray:
    """B as [K words, Npad] i32 words before the split into panels: 4 s8 bytes (k0..k3) per
    word, or for "pairs" the i16 pair (k0, k1)."""
    words = centred_weight_words(op, tiled_gemm(op, t))
    narrow = np.int16 if t.form == "pairs" else np.int8
    return words.astype(narrow).transpose(0, 2, 1).copy().view("<i4")[..., 0]


def weight_matrix(op: QuantizedProductOp) -> np.ndarray | None:
    """B[(kh, kw, c), m] - weight_zero_point[m] as int32 [K, Cout], None if not constant."""
    if isinstance(op, QLINEAR_CONV_OPS):
        w = _byte_values(op.weight)
        if w is None:
            return None
        cout, c, kh, kw = w.shape
        b = w.transpose(2, 3, 1, 0).reshape(kh * kw * c, cout)
    else:
        b = _byte_values(op.rhs)
        if b is None:
            return None
    return b - np.asarray(ints_of(op.weight_zero_point), np.int32)
