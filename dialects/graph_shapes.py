"""Shape rules of the graph dialect's ops, as plain functions on tuples.

The op verifiers use them to check result types, and the importer and the rewrite patterns
use them to type the ops they create. Each raises `ValueError` with a short reason when the
operands cannot produce a result, which verifiers turn into `VerifyException`.

Dimensions are ints or `SymDim`s (dialects/symbolic_dims.py): the rules add, multiply,
divide and take min and max of sizes, which SymDim does exactly (`floordiv(H+1, 2)` for a
stride-2 convolution, `max(seq-2, 0)` for `x[2:]`). A condition that the symbols leave open
(dimensions `?a` and `?b` that must be equal, a squeezed `seq` that must be 1, a window no
larger than the input) is `require`d: a run-time guard (dialects/size_facts.py).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from onnxc.dialects.size_bounds import bounds
from onnxc.dialects.size_facts import decide_nonnegative, require_at_least, require_equal
from onnxc.dialects.symbolic_dims import (
    Dim,
    SymbolicDimError,
    SymDim,
    ceildiv,
    floordiv,
    sym_max,
    sym_min,
)

Shape = tuple[Dim, ...]


def row_major_strides(shape: Sequence[int]) -> list[int]:
    """Element strides of a row-major (C-order) array of `shape`."""
    strides, acc = [], 1
    for d in reversed(shape):
        strides.append(acc)
        acc *= d
    return strides[::-1]


def same_dim(a: Dim, b: Dim, message: str) -> None:
    """Dimensions that must be equal: ValueError when they differ for every value of the
    symbols, a run-time guard when that depends on them (dialects/size_facts.py)."""
    if isinstance(a, int) and isinstance(b, int):
        if a != b:
            raise ValueError(message)
    elif a != b:
        require_equal(a, b, message)


def broadcast_shapes(*shapes: Sequence[Dim]) -> Shape:
    """Multidirectional (numpy-style) broadcasting, as ONNX defines it. Two different
    symbolic sizes on one axis must be equal (a guard), as torch.export assumes: a symbol
    is not taken for a 1 that broadcasts."""
    rank = max((len(s) for s in shapes), default=0)
    result: list[Dim] = []
    for axis in range(rank):
        dims: list[Dim] = []
        for s in shapes:
            if axis - rank + len(s) >= 0:
                d = s[axis - rank + len(s)]
                if not (isinstance(d, int) and d == 1) and d not in dims:
                    dims.append(d)
        # a static size wins; a size of at most 1 (`min(1, seq)`) broadcasts when it is 1
        dims.sort(key=lambda d: (isinstance(d, SymDim), _at_most_one(d)))
        message = f"shapes [{', '.join(_text(s) for s in shapes)}] do not broadcast"
        for d in dims[1:]:
            if _at_most_one(d) and not _at_most_one(dims[0]):
                require_equal((d - 1) * (d - dims[0]), 0, message)  # d is 1 or dims[0]
            else:
                same_dim(dims[0], d, message)
        result.append(dims[0] if dims else 1)
    return tuple(result)


def _at_most_one(d: Dim) -> bool:
    """A symbolic size that is 0 or 1 (`min(1, seq)`)."""
    if isinstance(d, int):
        return False
    high = bounds(d)[1]
    return high is not None and high <= 1


def normalize_axis(axis: int, rank: int) -> int:
    """Map a possibly negative axis into [0, rank)."""
    if not -rank <= axis < rank:
        raise ValueError(f"axis {axis} out of range for rank {rank}")
    return axis % rank


def check_window(
    rank: int, strides: Sequence[int], pads: Sequence[int], dilations: Sequence[int]
) -> int:
    """Number of spatial dimensions, after checking the window attributes fit them."""
    spatial = rank - 2
    if spatial < 1:
        raise ValueError(f"input rank {rank} has no spatial dimensions")
    if len(strides) != spatial or len(dilations) != spatial or len(pads) != 2 * spatial:
        raise ValueError(
            f"{spatial} spatial dimensions need {spatial} strides, {spatial} dilations and "
            f"{2 * spatial} pads, not {len(strides)}, {len(dilations)} and {len(pads)}"
        )
    if any(v < 1 for v in (*strides, *dilations)):
        raise ValueError(f"strides {list(strides)} and dilations {list(dilations)} must be >= 1")
    if any(p < 0 for p in pads):
        raise ValueError(f"pads {list(pads)} must be >= 0")
    return spatial


def conv_output_shape(
    x: Shape,
    w: Shape,
    strides: Sequence[int],
    pads: Sequence[int],
    dilations: Sequence[int],
    group: int,
) -> Shape:
    """N x M x out_spatial for an N x C x in_spatial input and M x C/group x k weights."""
    spatial = check_window(len(x), strides, pads, dilations)
    if group < 1:
        raise ValueError(f"group {group} must be >= 1")
    if len(w) != len(x):
        raise ValueError(f"weight rank {len(w)} differs from input rank {len(x)}")
    same_dim(x[1], w[1] * group,
             f"input channels {x[1]} != weight channels {w[1]} * group {group}")
    if w[0] % group:
        raise ValueError(f"output channels {w[0]} not divisible by group {group}")
    out = []
    for i in range(spatial):
        effective = dilations[i] * (w[2 + i] - 1) + 1
        size = floordiv(x[2 + i] + pads[i] + pads[i + spatial] - effective, strides[i]) + 1
        _at_least_one(size, "convolution window larger than the padded input")
        out.append(size)
    return (x[0], w[0], *out)


def _at_least_one(size: Dim, message: str) -> None:
    if isinstance(size, int):
        if size < 1:
            raise ValueError(message)
    else:
        require_at_least(size, 1, message)


def pool_output_shape(
    x: Shape,
    kernel: Sequence[int],
    strides: Sequence[int],
    pads: Sequence[int],
    dilations: Sequence[int],
    ceil_mode: bool,
) -> Shape:
    """Output shape of MaxPool/AveragePool with explicit pads."""
    if len(x) > 2 and (len(kernel) != len(x) - 2 or any(k < 1 for k in kernel)):
        raise ValueError(f"kernel_shape {list(kernel)} needs {len(x) - 2} sizes >= 1")
    spatial = check_window(len(x), strides, pads, dilations)
    out = []
    for i in range(spatial):
        effective = dilations[i] * (kernel[i] - 1) + 1
        span = x[2 + i] + pads[i] + pads[i + spatial] - effective
        size = (ceildiv if ceil_mode else floordiv)(span, strides[i]) + 1
        if ceil_mode:  # the last window must start inside the input or left padding
            inside = ceildiv(x[2 + i] + pads[i], strides[i])
            if isinstance(size, int) and isinstance(inside, int):
                size -= size - 1 >= inside
            else:
                size = sym_min(size, sym_max(inside, size - 1))
        _at_least_one(size, "pooling window larger than the padded input")
        out.append(size)
    return (x[0], x[1], *out)


def matmul_output_shape(a: Shape, b: Shape) -> Shape:
    """numpy.matmul semantics, including 1-D promotion and batch broadcasting."""
    if not a or not b:
        raise ValueError("matmul operands must have rank >= 1")
    a2 = (1, *a) if len(a) == 1 else a
    b2 = (*b, 1) if len(b) == 1 else b
    same_dim(a2[-1], b2[-2], f"matmul inner dimensions differ: {_text(a)} x {_text(b)}")
    batch = broadcast_shapes(a2[:-2], b2[:-2])
    out = (*batch, a2[-2], b2[-1])
    if len(a) == 1:
        out = out[:-2] + out[-1:]
    if len(b) == 1:
        out = out[:-1]
    return out


def gemm_output_shape(a: Shape, b: Shape, trans_a: bool, trans_b: bool) -> Shape:
    if len(a) != 2 or len(b) != 2:
        raise ValueError("gemm operands must be 2-D")
    m, k = (a[1], a[0]) if trans_a else a
    k2, n = (b[1], b[0]) if trans_b else b
    same_dim(k, k2, f"gemm inner dimensions differ: {k} vs {k2}")
    return (m, n)


def transpose_shape(x: Shape, perm: Sequence[int]) -> Shape:
    if sorted(perm) != list(range(len(x))):
        raise ValueError(f"perm {list(perm)} is not a permutation of rank {len(x)}")
    return tuple(x[p] for p in perm)


def concat_shape(shapes: Sequence[Shape], axis: int) -> Shape:
    first = shapes[0]
    axis = normalize_axis(axis, len(first))
    for s in shapes[1:]:
        listed = ", ".join(_text(t) for t in shapes)
        if len(s) != len(first):
            raise ValueError(f"concat operands [{listed}] differ in rank")
        for i, (d, e) in enumerate(zip(s, first)):
            if i != axis:
                same_dim(e, d, f"concat operands [{listed}] differ off axis {axis}")
    return first[:axis] + (sum(s[axis] for s in shapes),) + first[axis + 1 :]


def slice_shape(
    x: Shape,
    starts: Sequence[Dim],
    ends: Sequence[Dim],
    axes: Sequence[int],
    steps: Sequence[int],
) -> Shape:
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise ValueError("starts, ends, axes and steps must have the same length")
    if len({normalize_axis(a, len(x)) for a in axes}) != len(axes):
        raise ValueError(f"repeated slice axes {list(axes)}")
    out = list(x)
    for start, end, axis, step in zip(starts, ends, axes, steps):
        axis = normalize_axis(axis, len(x))
        first, last = normalized_slice_bounds(x[axis], start, end, step)
        out[axis] = slice_length(first, last, step)
    return tuple(out)


def slice_length(first: Dim, last: Dim, step: int) -> Dim:
    """len(range(first, last, step)) for normalized bounds (`seq[2:]` has
    `max(seq-2, 0)` elements, `seq[::2]` has `floordiv(seq+1, 2)`)."""
    if isinstance(first, int) and isinstance(last, int):
        return len(range(first, last, step))
    span = last - first if step > 0 else first - last
    return sym_max(ceildiv(span, abs(step)), 0)


UNBOUNDED = 2**31 - 1
"""Slice bounds at least this large (INT_MAX, INT64_MAX: what exporters write for "to the
end") clamp to a symbolic dimension as to any size: symbolic sizes stay below it."""


def normalized_slice_bounds(dim: Dim, start: Dim, end: Dim, step: int) -> tuple[Dim, Dim]:
    """Clamp ONNX Slice start/end for one axis exactly as the spec (and numpy) does."""
    if step == 0:
        raise ValueError("slice step must not be 0")
    if isinstance(dim, SymDim) or isinstance(start, SymDim) or isinstance(end, SymDim):
        return _symbolic_bound(start, dim, step), _symbolic_bound(end, dim, step)
    if start < 0:
        start += dim
    if end < 0:
        end += dim
    if step > 0:
        start = min(max(start, 0), dim)
        end = min(max(end, 0), dim)
    else:
        start = min(max(start, -1), dim - 1)
        end = min(max(end, -1), dim - 1)
    return start, end


def _symbolic_bound(bound: Dim, dim: Dim, step: int) -> Dim:
    """`normalized_slice_bounds` of one bound where a size is symbolic: an integer past
    UNBOUNDED is the end it stands for; a symbolic bound (shape data) counts from the end
    when it is negative, which the symbols must decide; then `min` and `max` clamp."""
    low, high = (0, dim) if step > 0 else (-1, dim - 1)
    if isinstance(bound, int):
        if bound >= UNBOUNDED:
            return high
        if bound <= -UNBOUNDED:
            return low
        value: Dim = bound + dim if bound < 0 else bound
    else:
        nonnegative = decide_nonnegative(bound)
        if nonnegative is None:
            raise SymbolicDimError(f"whether the slice bound {bound} counts from the end "
                                   f"(is negative) depends on the sizes")
        value = bound if nonnegative else bound + dim
    return sym_min(sym_max(value, low), high)


def squeeze_shape(x: Shape, axes: Sequence[int]) -> Shape:
    norm = {normalize_axis(a, len(x)) for a in axes}
    for a in norm:
        same_dim(x[a], 1, f"cannot squeeze axis {a} of size {x[a]}")
    return tuple(d for i, d in enumerate(x) if i not in norm)


def unsqueeze_shape(x: Shape, axes: Sequence[int]) -> Shape:
    rank = len(x) + len(axes)
    norm = sorted(normalize_axis(a, rank) for a in axes)
    if len(set(norm)) != len(norm):
        raise ValueError(f"repeated unsqueeze axes {list(axes)}")
    out = list(x)
    for a in norm:
        out.insert(a, 1)
    return tuple(out)


def flatten_shape(x: Shape, axis: int) -> Shape:
    axis = axis + len(x) if axis < 0 else axis
    if not 0 <= axis <= len(x):
        raise ValueError(f"flatten axis {axis} out of range for rank {len(x)}")
    return (math.prod(x[:axis]), math.prod(x[axis:]))


def gather_shape(data: Shape, indices: Shape, axis: int) -> Shape:
    axis = normalize_axis(axis, len(data))
    return data[:axis] + indices + data[axis + 1 :]


def pad_shape(x: Shape, pads: Sequence[int]) -> Shape:
    rank = len(x)
    if len(pads) != 2 * rank:
        raise ValueError(f"pads has {len(pads)} values for rank {rank}")
    out = tuple(d + pads[i] + pads[i + rank] for i, d in enumerate(x))
    for d in out:
        if isinstance(d, int) and d < 0:
            raise ValueError("negative pads remove more than the tensor holds")
        if isinstance(d, SymDim):
            require_at_least(d, 0, "negative pads remove more than the tensor holds")
    return out


def _text(shape: Sequence[Dim]) -> str:
    """`(1, seq, 768)`: a shape for messages (SymDim's repr would say `SymDim(seq)`)."""
    return "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"
