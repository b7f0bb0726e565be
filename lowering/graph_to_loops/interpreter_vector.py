"""Interpreter support for the 1-D vector ops of the packed GEMM kernel (gemm_microkernel.py).

A vector is a tuple of Python floats, one per lane. Vector loads and stores stay inside the
last dimension of their memref (the kernel never lets one cross a row), so lane `l` is the
element at the last index plus `l`. The float arith ops the kernel applies to vectors are
wrapped to work lane by lane and fall back to xDSL's scalar implementations otherwise.
"""

from __future__ import annotations

from typing import Any

from xdsl.dialects import arith, memref, vector
from xdsl.interpreter import (
    Interpreter,
    InterpreterFunctions,
    PythonValues,
    impl,
    register_impls,
)
from xdsl.interpreters import arith as xarith
from xdsl.interpreters.shaped_array import ShapedArray
from xdsl.interpreters.utils.ptr import TypedPtr
from xdsl.ir import Operation

from onnxc.dialects.graph_shapes import row_major_strides

_SCALAR = xarith.ArithFunctions()


def _lanes(t) -> int:
    return t.get_shape()[0]


def _lanewise(scalar_run):
    def run(self, interpreter: Interpreter, op: Operation, args: PythonValues):
        # scalar_run is xDSL's registered wrapper: it returns OpImplResult(values, terminator)
        if not isinstance(args[0], tuple):
            return scalar_run(_SCALAR, interpreter, op, args).values
        return (tuple(
            scalar_run(_SCALAR, interpreter, op, lanes).values[0]
            for lanes in zip(*args, strict=True)
        ),)

    return run


@register_impls
class VectorFunctions(InterpreterFunctions):
    @impl(vector.LoadOp)
    def run_load(self, interpreter: Interpreter, op: vector.LoadOp, args: PythonValues):
        mem, *indices = args
        *lead, last = indices
        return (tuple(mem.load((*lead, last + lane)) for lane in range(_lanes(op.result.type))),)

    @impl(vector.StoreOp)
    def run_store(self, interpreter: Interpreter, op: vector.StoreOp, args: PythonValues):
        value, mem, *indices = args
        *lead, last = indices
        for lane, x in enumerate(value):
            mem.store((*lead, last + lane), x)
        return ()

    @impl(vector.BroadcastOp)
    def run_broadcast(self, interpreter: Interpreter, op: vector.BroadcastOp, args: PythonValues):
        return ((args[0],) * _lanes(op.vector.type),)

    @impl(vector.FMAOp)
    def run_fma(self, interpreter: Interpreter, op: vector.FMAOp, args: PythonValues):
        return (tuple(a * b + c for a, b, c in zip(*args, strict=True)),)

    @impl(memref.AllocaOp)
    def run_alloca(self, interpreter: Interpreter, op: memref.AllocaOp, args: PythonValues):
        t = op.memref.type
        shape = list(t.get_shape())
        size = row_major_strides(shape)[0] * shape[0] if shape else 1
        data: TypedPtr[Any] = TypedPtr.zeros(size, xtype=t.get_element_type())
        return (ShapedArray(data, shape),)

    run_addf = impl(arith.AddfOp)(_lanewise(xarith.ArithFunctions.run_addf))
    run_mulf = impl(arith.MulfOp)(_lanewise(xarith.ArithFunctions.run_mulf))
    run_maximumf = impl(arith.MaximumfOp)(_lanewise(xarith.ArithFunctions.run_maximumf))
    run_minimumf = impl(arith.MinimumfOp)(_lanewise(xarith.ArithFunctions.run_minimumf))
