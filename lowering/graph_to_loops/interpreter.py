"""Run a loops-level module on numpy arrays with xDSL's interpreter: a slow reference executor.

It checks what `convert-graph-to-loops` produces without the LLVM path (tests, debugging a
kernel against ONNX's reference). xDSL 0.74's interpreter lacks several arith/math ops and
`memref.reinterpret_cast`; they are added here with C/IEEE semantics (exp overflow is inf,
log(0) is -inf, x/0 is inf or nan) instead of Python's exceptions.
"""

from __future__ import annotations

import math as pymath
from dataclasses import dataclass
from typing import Any

import numpy as np
from xdsl.context import Context
from xdsl.dialects import arith, func, math, memref
from xdsl.dialects.builtin import (
    FunctionType,
    IntegerType,
    MemRefType,
    ModuleOp,
    StridedLayoutAttr,
    TensorType,
    f32,
    f64,
    i1,
    i8,
    i32,
    i64,
)
from xdsl.interpreter import (
    Interpreter,
    InterpreterFunctions,
    PythonValues,
    impl,
    register_impls,
)
from xdsl.interpreters import arith as xarith
from xdsl.interpreters import builtin, scf
from xdsl.interpreters import func as xfunc
from xdsl.interpreters import memref as xmemref
from xdsl.interpreters.shaped_array import ShapedArray
from xdsl.interpreters.utils.ptr import RawPtr, TypedPtr
from xdsl.ir import Attribute, Block, Operation, Region
from xdsl.irdl import VarOperandDef, VarResultDef
from xdsl.utils.comparisons import to_signed

from onnxc.dialects import dense_data
from onnxc.errors import InvalidInputError
from onnxc.lowering.graph_to_loops.interpreter_vector import VectorFunctions

DTYPES = {el: dense_data.element_dtype(el).type for el in (f32, f64, i64, i32, i8, i1)}
"""The element types the interpreter's memory holds (xDSL's TypedPtr), as numpy scalar types."""


def _c_float(fn):
    """A float function with IEEE results (inf, nan) instead of Python exceptions."""

    def wrapped(*args: float) -> float:
        with np.errstate(all="ignore"):
            return float(fn(*(np.float64(a) for a in args)))

    return wrapped


def _width(t) -> int:
    assert isinstance(t, IntegerType)
    return t.width.data


_UNARY_MATH = {
    math.ExpOp: _c_float(np.exp),
    math.LogOp: _c_float(np.log),
    math.SqrtOp: _c_float(np.sqrt),
    math.TanhOp: _c_float(np.tanh),
    math.AbsFOp: _c_float(np.abs),
    math.FloorOp: _c_float(np.floor),
    math.CeilOp: _c_float(np.ceil),
    math.ErfOp: lambda x: pymath.erf(x) if not pymath.isnan(x) else x,
}


class LoopsFunctions(InterpreterFunctions):
    """The ops the loops contract uses that xDSL 0.74 does not interpret (registered below,
    once the table-driven unary math implementations are attached)."""

    @impl(arith.DivfOp)
    def run_divf(self, interpreter: Interpreter, op: arith.DivfOp, args: PythonValues):
        return (_c_float(np.divide)(*args),)

    @impl(arith.NegfOp)
    def run_negf(self, interpreter: Interpreter, op: arith.NegfOp, args: PythonValues):
        return (-args[0],)

    @impl(arith.MaxSIOp)
    def run_maxsi(self, interpreter: Interpreter, op: arith.MaxSIOp, args: PythonValues):
        return (max(args),)

    @impl(arith.MinSIOp)
    def run_minsi(self, interpreter: Interpreter, op: arith.MinSIOp, args: PythonValues):
        return (min(args),)

    @impl(arith.SIToFPOp)
    def run_sitofp(self, interpreter: Interpreter, op: arith.SIToFPOp, args: PythonValues):
        return (float(args[0]),)

    @impl(arith.UIToFPOp)
    def run_uitofp(self, interpreter: Interpreter, op: arith.UIToFPOp, args: PythonValues):
        return (float(int(args[0]) % (1 << _width(op.input.type))),)

    @impl(arith.FPToSIOp)
    def run_fptosi(self, interpreter: Interpreter, op: arith.FPToSIOp, args: PythonValues):
        return (to_signed(int(args[0]), _width(op.result.type)),)

    @impl(arith.ExtFOp)
    def run_extf(self, interpreter: Interpreter, op: arith.ExtFOp, args: PythonValues):
        return (args[0],)

    @impl(arith.TruncFOp)
    def run_truncf(self, interpreter: Interpreter, op: arith.TruncFOp, args: PythonValues):
        return (float(np.float32(args[0])),)

    @impl(arith.ExtSIOp)
    def run_extsi(self, interpreter: Interpreter, op: arith.ExtSIOp, args: PythonValues):
        return (to_signed(int(args[0]), _width(op.input.type)),)

    @impl(arith.ExtUIOp)
    def run_extui(self, interpreter: Interpreter, op: arith.ExtUIOp, args: PythonValues):
        return (int(args[0]) % (1 << _width(op.input.type)),)

    @impl(arith.TruncIOp)
    def run_trunci(self, interpreter: Interpreter, op: arith.TruncIOp, args: PythonValues):
        width = _width(op.result.type)
        value = int(args[0]) % (1 << width)
        return (value if width == 1 else to_signed(value, width),)

    @impl(math.PowFOp)
    def run_powf(self, interpreter: Interpreter, op: math.PowFOp, args: PythonValues):
        return (_c_float(np.power)(*args),)

    @impl(math.FmaOp)
    def run_fma(self, interpreter: Interpreter, op: math.FmaOp, args: PythonValues):
        a, b, c = args
        return (a * b + c,)

    @impl(memref.ReinterpretCastOp)
    def run_reinterpret_cast(
        self, interpreter: Interpreter, op: memref.ReinterpretCastOp, args: PythonValues
    ):
        source: ShapedArray[Any] = args[0]
        result = op.result.type
        assert isinstance(result, MemRefType)
        if isinstance(result.layout, StridedLayoutAttr):  # graph.as_strided's views
            strides, offset = result.get_strides(), result.get_offset()
            assert offset is not None and None not in strides
            return (_StridedArray(source.data_ptr, list(result.get_shape()),
                                  tuple(strides), offset),)  # type: ignore[arg-type]
        return (ShapedArray(source.data_ptr, list(result.get_shape())),)


@dataclass
class _StridedArray(ShapedArray):
    """A memref with a static strided layout: element index = offset + sum(i_k * s_k)."""

    strides: tuple[int, ...] = ()
    base: int = 0

    def offset(self, index) -> int:
        return self.base + sum(i * s for i, s in zip(index, self.strides, strict=True))


def _unary_impl(op_type, fn):
    @impl(op_type)
    def run(self, interpreter: Interpreter, op, args: PythonValues):
        return (fn(args[0]),)

    return run


for _op_type, _fn in _UNARY_MATH.items():
    setattr(LoopsFunctions, f"run_{_op_type.name.replace('.', '_')}", _unary_impl(_op_type, _fn))
LoopsFunctions = register_impls(LoopsFunctions)


def _to_shaped(array: np.ndarray, t: MemRefType) -> ShapedArray[Any]:
    element = t.get_element_type()
    expected = tuple(t.get_shape())
    if tuple(array.shape) != expected or array.dtype != DTYPES[element]:
        raise InvalidInputError(
            f"expected {DTYPES[element].__name__}{list(expected)}, "
            f"got {array.dtype}{list(array.shape)}"
        )
    raw = RawPtr(bytearray(np.ascontiguousarray(array).tobytes()))
    return ShapedArray(TypedPtr(raw, xtype=element), list(expected))  # type: ignore[arg-type]


def _to_numpy(value: ShapedArray[Any], t: MemRefType) -> np.ndarray:
    dtype = DTYPES[t.get_element_type()]
    count = int(np.prod(t.get_shape(), dtype=np.int64))
    raw = value.data_ptr.raw
    data = np.frombuffer(bytes(raw.memory), dtype=dtype, count=count, offset=raw.offset)
    return data.reshape(t.get_shape()).copy()


def interpret(module: ModuleOp, inputs: list[np.ndarray], entry: str | None = None):
    """Call the entry function of a loops-level module; returns its outputs as arrays."""
    if entry is None:
        entries = [o for o in module.ops
                   if isinstance(o, func.FuncOp) and "onnxc.entry" in o.attributes]
        if len(entries) != 1:
            raise InvalidInputError(f"expected one onnxc.entry function, found {len(entries)}")
        entry = entries[0].sym_name.data
    f = next(o for o in module.ops if isinstance(o, func.FuncOp) and o.sym_name.data == entry)
    types = list(f.function_type.inputs)
    if len(inputs) > len(types):
        raise InvalidInputError(f"@{entry} takes {len(types)} buffers, got {len(inputs)} inputs")
    args = [_to_shaped(a, t) for a, t in zip(inputs, types)]
    out_types = types[len(inputs):]
    outs = [_to_shaped(np.zeros(t.get_shape(), DTYPES[t.get_element_type()]), t)
            for t in out_types]
    interpreter = Interpreter(module)
    for functions in (xarith.ArithFunctions(), builtin.BuiltinFunctions(),
                      xfunc.FuncFunctions(), xmemref.MemRefFunctions(), scf.ScfFunctions()):
        interpreter.register_implementations(functions)
    interpreter.register_implementations(LoopsFunctions(), override=True)
    interpreter.register_implementations(VectorFunctions(), override=True)
    interpreter.call_op(entry, (*args, *outs))
    return [_to_numpy(v, t) for v, t in zip(outs, out_types)]


def element_type_of(dtype: np.dtype):
    """The xDSL element type of a numpy dtype the interpreter can hold."""
    try:
        element = dense_data.element_type_of(dtype)
    except ValueError:
        element = None
    if element not in DTYPES:
        raise InvalidInputError(f"no element type for dtype {dtype}")
    return element


def run_single_op(
    op_type: type[Operation],
    operands: list[np.ndarray],
    results: list[tuple[tuple[int, ...], np.dtype]],
    properties: dict[str, Attribute] | None = None,
) -> list[np.ndarray]:
    """Lower a one-op graph function with `convert-graph-to-loops` and interpret it.

    `results` gives each result's (shape, dtype); the op's verifier checks them.
    """
    from onnxc.lowering.graph_to_loops.convert_graph_to_loops import ConvertGraphToLoopsPass

    in_types = [TensorType(element_type_of(a.dtype), a.shape) for a in operands]
    out_types = [TensorType(element_type_of(dtype), shape) for shape, dtype in results]
    block = Block(arg_types=in_types)
    definition = op_type.get_irdl_definition()
    op = op_type.build(
        operands=_group(list(block.args), definition.operands),
        result_types=_group(out_types, definition.results),
        properties=properties or {},
    )
    block.add_ops([op, func.ReturnOp(*op.results)])
    f = func.FuncOp("main", FunctionType.from_lists(in_types, out_types), Region(block))
    module = ModuleOp([f])
    module.verify()
    ConvertGraphToLoopsPass().apply(Context(), module)
    module.verify()
    return interpret(module, operands)


def _group(values: list, defs) -> list:
    """Distribute values over an op definition's operands/results (one may be variadic)."""
    variadic = [i for i, (_, d) in enumerate(defs) if isinstance(d, VarOperandDef | VarResultDef)]
    if not variadic:
        return values
    (v,) = variadic
    tail = len(defs) - v - 1
    return [*values[:v], values[v: len(values) - tail], *values[len(values) - tail:]]
