"""Which kernel runs a graph.qlinear_conv / qlinear_matmul: the first specialised family that
applies (packed int8 GEMM, ...), else the generic kernels of qlinear.py.

A family is the five functions a kernel registers in kernels.py (code, constant tables,
scratch buffers, sharing key) plus the test that says whether it takes the op on the target
(the int8 families need SIMD); keeping them together here means an op can never get one
family's code with another family's tables.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, MemRefType
from xdsl.ir import SSAValue

from onnxc.dialects.graph_qlinear import QLINEAR_OPS, QuantizedProductOp
from onnxc.lowering.graph_to_loops import int8_depthwise, int8_gemm, qlinear
from onnxc.lowering.graph_to_loops.loops import KernelBuilder
from onnxc.lowering.graph_to_loops.rules import rules
from onnxc.target import Target


@dataclass(frozen=True)
class KernelFamily:
    """A specialised kernel's functions; all but `kernel` take the op and the target the
    kernel is built for (`kernel` reads it from its KernelBuilder)."""

    name: str
    applies: Callable[[QuantizedProductOp, Target], bool]
    kernel: Callable[[QuantizedProductOp, KernelBuilder, Sequence[SSAValue],
                      Sequence[SSAValue]], None]
    constants: Callable[[QuantizedProductOp, Target], list[DenseIntOrFPElementsAttr]]
    scratch: Callable[[QuantizedProductOp, Target], list[MemRefType]]
    key: Callable[[QuantizedProductOp, Target], tuple] | None
    """What the code depends on (ops with equal keys share one kernel); None: every property."""


INT8_GEMM = KernelFamily("int8_gemm", int8_gemm.applies, int8_gemm.int8_gemm_kernel,
                         int8_gemm.int8_constants, int8_gemm.int8_scratch,
                         int8_gemm.int8_gemm_key)

INT8_DEPTHWISE = KernelFamily("int8_depthwise", int8_depthwise.applies,
                              int8_depthwise.depthwise_kernel,
                              int8_depthwise.depthwise_constants,
                              int8_depthwise.depthwise_scratch, int8_depthwise.depthwise_key)

SPECIALISED: tuple[KernelFamily, ...] = (INT8_GEMM, INT8_DEPTHWISE)
"""Tried in order; the first that applies runs the op."""


def family_of(op: QuantizedProductOp, target: Target) -> KernelFamily | None:
    """The family that runs `op` on `target`; None: the generic kernels of qlinear.py."""
    return next((f for f in SPECIALISED if f.applies(op, target)), None)


def qlinear_kernel(op: QuantizedProductOp, kb: KernelBuilder, ins, outs) -> None:
    family = family_of(op, kb.target)
    if family is None:
        qlinear.KERNELS[type(op)](op, kb, ins, outs)
    else:
        family.kernel(op, kb, ins, outs)


def qlinear_kernel_constants(op: QuantizedProductOp,
                             target: Target) -> list[DenseIntOrFPElementsAttr]:
    family = family_of(op, target)
    return qlinear.qlinear_constants(op) if family is None else family.constants(op, target)


def qlinear_kernel_scratch(op: QuantizedProductOp, target: Target) -> list[MemRefType]:
    family = family_of(op, target)
    return [] if family is None else family.scratch(op, target)


def qlinear_kernel_key(op: QuantizedProductOp, target: Target) -> tuple | None:
    family = family_of(op, target)
    if family is None or family.key is None:
        return None
    return (family.name, *family.key(op, target))


RULES = rules(QLINEAR_OPS, qlinear_kernel,
              constants=qlinear_kernel_constants, scratch=qlinear_kernel_scratch,
              key=qlinear_kernel_key, symbolic=True)
"""symbolic: a symbolic M (the rows of a dynamically quantized [1, seq, K] activation) runs
on the packed int8 GEMM, as on static shapes; so do convs over symbolic batch and image
sizes (run-time pixel counts), depthwise ones on their own kernel, the rest on
qlinear.py's."""
