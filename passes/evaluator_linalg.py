"""numpy references of the square-matrix graph ops (graph.det, graph.inverse), computed in
float64 and rounded once, as their kernels (lowering/graph_to_loops/linalg.py)."""

from __future__ import annotations

import numpy as np
from xdsl.ir import Operation

from onnxc.dialects import graph


def _det(op: graph.DetOp, args: list[np.ndarray]) -> list[np.ndarray]:
    x = args[0]
    return [np.asarray(np.linalg.det(x.astype(np.float64)), x.dtype)]


def _inverse(op: graph.InverseOp, args: list[np.ndarray]) -> list[np.ndarray]:
    x = args[0]
    with np.errstate(all="ignore"):
        try:
            inverse = np.linalg.inv(x.astype(np.float64))
        except np.linalg.LinAlgError:  # singular: the kernel's inf/NaN entries, per matrix
            inverse = np.stack([_inverse_or_nan(m) for m in x.reshape(-1, *x.shape[-2:])])
    return [inverse.reshape(x.shape).astype(x.dtype)]


def _inverse_or_nan(m: np.ndarray) -> np.ndarray:
    try:
        return np.linalg.inv(m.astype(np.float64))
    except np.linalg.LinAlgError:
        return np.full(m.shape, np.nan)


EVALUATORS: dict[type[Operation], object] = {graph.DetOp: _det, graph.InverseOp: _inverse}
