"""Loops-level kernels through the whole loops->LLVM chain, JIT-compiled and run on numpy data."""

from __future__ import annotations

import ctypes
import re

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects import get_all_dialects
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser
from xdsl.transforms import get_all_passes

from onnxc.errors import LoweringError
from onnxc.pipeline import LOOPS_TO_LLVM_PIPELINE, lower_loops_to_llvm
from onnxc.lowering.to_llvm.translate import to_llvmlite
from onnxc.registry import ONNXC_PASSES
from onnxc.runtime.jit import NativeModule, host_target


def _context() -> Context:
    ctx = Context()
    for name, factory in get_all_dialects().items():
        ctx.register_dialect(name, factory)
    return ctx


def _lower(text: str) -> ModuleOp:
    ctx = _context()
    module = Parser(ctx, text).parse_module()
    lower_loops_to_llvm(ctx, module)
    return module


def _jit(text: str) -> NativeModule:
    host = host_target()
    module = _lower(text)
    return NativeModule.from_llvm_ir(
        to_llvmlite(module, triple=host.triple, data_layout=host.data_layout)
    )


def _call(native: NativeModule, name: str, *arrays: np.ndarray) -> None:
    fn = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * len(arrays))(native.function_address(name))
    fn(*[a.ctypes.data for a in arrays])


ELEMENTWISE = """
func.func @{name}(%a: memref<{n}x{t}>, %b: memref<{n}x{t}>, %c: memref<{n}x{rt}>) {{
  %lo = arith.constant 0 : index
  %hi = arith.constant {n} : index
  %step = arith.constant 1 : index
  scf.for %i = %lo to %hi step %step {{
    %x = memref.load %a[%i] : memref<{n}x{t}>
    %y = memref.load %b[%i] : memref<{n}x{t}>
    {body}
    memref.store %r, %c[%i] : memref<{n}x{rt}>
  }}
  func.return
}}
"""


def _elementwise(body: str, t: str = "f32", rt: str | None = None, n: int = 64) -> NativeModule:
    return _jit(ELEMENTWISE.format(name="k", n=n, t=t, rt=rt or t, body=body))


def test_pipeline_names_resolve():
    assert LOOPS_TO_LLVM_PIPELINE[:2] == ("outline-parallel-loops", "convert-scf-to-cf-with-while")
    assert LOOPS_TO_LLVM_PIPELINE[-1] == "reconcile-unrealized-casts"
    xdsl_passes = get_all_passes()
    for name in LOOPS_TO_LLVM_PIPELINE:
        factory = ONNXC_PASSES.get(name) or xdsl_passes[name]
        assert factory().name == name


def test_add_1000_f32_is_vectorized():
    native = _elementwise("%r = arith.addf %x, %y : f32", n=1000)
    a, b = np.random.rand(2, 1000).astype(np.float32)
    c = np.zeros(1000, np.float32)
    _call(native, "k", a, b, c)
    np.testing.assert_array_equal(c, a + b)
    if host_target().vector_bits >= 256:
        # LLVM picks the width: server Intel CPUs prefer 256-bit vectors for loops it
        # vectorizes itself, even with AVX-512 (onnxc's own kernels use 512)
        assert re.search(r"<(8|16) x float>", native.optimized_ir())


def test_lowered_module_is_pure_llvm():
    module = _lower(ELEMENTWISE.format(name="k", n=8, t="f32", rt="f32",
                                       body="%r = arith.mulf %x, %y : f32"))
    names = {op.name for op in module.walk()}
    assert names <= {"builtin.module", "llvm.func", "llvm.mlir.constant", "llvm.br",
                     "llvm.cond_br", "llvm.icmp", "llvm.getelementptr", "llvm.load",
                     "llvm.store", "llvm.fmul", "llvm.add", "llvm.return"}, names


MATMUL = """
func.func @matmul(%a: memref<13x17xf32>, %b: memref<17x11xf32>, %c: memref<13x11xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %m = arith.constant 13 : index
  %n = arith.constant 11 : index
  %k = arith.constant 17 : index
  %zero = arith.constant 0.0 : f32
  scf.for %i = %c0 to %m step %c1 {
    scf.for %j = %c0 to %n step %c1 {
      %sum = scf.for %p = %c0 to %k step %c1 iter_args(%acc = %zero) -> (f32) {
        %x = memref.load %a[%i, %p] : memref<13x17xf32>
        %y = memref.load %b[%p, %j] : memref<17x11xf32>
        %xy = arith.mulf %x, %y : f32
        %next = arith.addf %acc, %xy : f32
        scf.yield %next : f32
      }
      memref.store %sum, %c[%i, %j] : memref<13x11xf32>
    }
  }
  func.return
}
"""


def test_matmul_with_iter_args():
    native = _jit(MATMUL)
    a = np.random.rand(13, 17).astype(np.float32)
    b = np.random.rand(17, 11).astype(np.float32)
    c = np.zeros((13, 11), np.float32)
    _call(native, "matmul", a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)


@pytest.mark.parametrize(
    ("body", "reference"),
    [
        ("%r = math.exp %x : f32", lambda x, y: np.exp(x)),
        ("%r = math.tanh %x : f32", lambda x, y: np.tanh(x)),
        ("%r = math.log %y : f32", lambda x, y: np.log(y)),
        ("%r = math.sqrt %y : f32", lambda x, y: np.sqrt(y)),
        ("%r = math.rsqrt %y : f32", lambda x, y: 1 / np.sqrt(y)),
        ("%r = math.absf %x : f32", lambda x, y: np.abs(x)),
        ("%r = math.floor %x : f32", lambda x, y: np.floor(x)),
        ("%r = math.ceil %x : f32", lambda x, y: np.ceil(x)),
        ("%r = math.round %x : f32", lambda x, y: np.trunc(x + np.copysign(0.5, x))),
        ("%r = math.roundeven %x : f32", lambda x, y: np.round(x)),
        ("%r = math.trunc %x : f32", lambda x, y: np.trunc(x)),
        ("%r = math.powf %y, %x : f32", lambda x, y: np.power(y, x)),
        ("%r = math.fma %x, %y, %x : f32", lambda x, y: x * y + x),
        ("%r = math.sin %x : f32", lambda x, y: np.sin(x)),
        ("%r = math.cos %x : f32", lambda x, y: np.cos(x)),
        ("%r = math.log2 %y : f32", lambda x, y: np.log2(y)),
        ("%r = math.log10 %y : f32", lambda x, y: np.log10(y)),
        ("%r = math.exp2 %x : f32", lambda x, y: np.exp2(x)),
        ("%r = math.atan %x : f32", lambda x, y: np.arctan(x)),
        ("%r = math.atan2 %x, %y : f32", lambda x, y: np.arctan2(x, y)),
        ("%r = math.sinh %x : f32", lambda x, y: np.sinh(x)),
        ("%r = math.log1p %y : f32", lambda x, y: np.log1p(y)),
        ("%r = math.copysign %y, %x : f32", lambda x, y: np.copysign(y, x)),
        ("%r = arith.negf %x : f32", lambda x, y: -x),
        ("%r = arith.divf %x, %y : f32", lambda x, y: x / y),
        ("%r = arith.subf %x, %y : f32", lambda x, y: x - y),
        ("%r = arith.maxnumf %x, %y : f32", lambda x, y: np.fmax(x, y)),
        ("%r = arith.minnumf %x, %y : f32", lambda x, y: np.fmin(x, y)),
    ],
)
def test_float_math_f32(body, reference):
    native = _elementwise(body)
    x = np.linspace(-3.3, 3.1, 64, dtype=np.float32)
    y = np.linspace(0.25, 4.0, 64, dtype=np.float32)
    out = np.zeros(64, np.float32)
    _call(native, "k", x, y, out)
    np.testing.assert_allclose(out, reference(x, y).astype(np.float32), rtol=2e-6, atol=2e-6)


def test_erf_f32_and_f64_in_one_module():
    text = ELEMENTWISE.format(name="f", n=32, t="f32", rt="f32", body="%r = math.erf %x : f32")
    text += ELEMENTWISE.format(name="d", n=32, t="f64", rt="f64",
                               body="%e = math.erf %x : f64\n %r = math.exp %e : f64")
    native = _jit(text)
    from math import erf, exp

    x32 = np.linspace(-2, 2, 32, dtype=np.float32)
    out32 = np.zeros(32, np.float32)
    _call(native, "f", x32, x32, out32)
    np.testing.assert_allclose(out32, [erf(v) for v in x32], rtol=1e-6, atol=1e-7)
    x64 = np.linspace(-2, 2, 32)
    out64 = np.zeros(32)
    _call(native, "d", x64, x64, out64)
    np.testing.assert_allclose(out64, [exp(erf(v)) for v in x64], rtol=1e-14)


def test_maximumf_minimumf_propagate_nan():
    native = _elementwise("%m = arith.maximumf %x, %y : f32\n %r = arith.minimumf %m, %x : f32")
    x = np.array([1.0, np.nan, 3.0, -0.0] * 16, np.float32)
    y = np.array([2.0, 1.0, np.nan, 0.0] * 16, np.float32)
    out = np.zeros(64, np.float32)
    _call(native, "k", x, y, out)
    np.testing.assert_array_equal(out, np.minimum(np.maximum(x, y), x))


@pytest.mark.parametrize(
    ("predicate", "reference"),
    [
        ("oeq", lambda x, y: x == y), ("ogt", lambda x, y: x > y), ("oge", lambda x, y: x >= y),
        ("olt", lambda x, y: x < y), ("ole", lambda x, y: x <= y),
        ("one", lambda x, y: (x != y) & ~np.isnan(x) & ~np.isnan(y)),
        ("ord", lambda x, y: ~np.isnan(x) & ~np.isnan(y)),
        ("ueq", lambda x, y: (x == y) | np.isnan(x) | np.isnan(y)),
        ("ugt", lambda x, y: ~(x <= y)), ("uge", lambda x, y: ~(x < y)),
        ("ult", lambda x, y: ~(x >= y)), ("ule", lambda x, y: ~(x > y)),
        ("une", lambda x, y: x != y), ("uno", lambda x, y: np.isnan(x) | np.isnan(y)),
        ("false", lambda x, y: np.zeros_like(x, bool)),
        ("true", lambda x, y: np.ones_like(x, bool)),
    ],
)
def test_cmpf_predicates(predicate, reference):
    native = _elementwise(f"%r = arith.cmpf {predicate}, %x, %y : f32", rt="i1", n=16)
    x = np.array([1, 2, np.nan, 3, 0, -1, np.nan, 5] * 2, np.float32)
    y = np.array([1, 3, 1, np.nan, -0.0, -2, np.nan, 4] * 2, np.float32)
    out = np.zeros(16, np.bool_)
    with np.errstate(invalid="ignore"):
        _call(native, "k", x, y, out)
        np.testing.assert_array_equal(out, reference(x, y))


@pytest.mark.parametrize(
    ("predicate", "reference"),
    [
        ("eq", np.equal), ("ne", np.not_equal), ("slt", np.less), ("sle", np.less_equal),
        ("sgt", np.greater), ("sge", np.greater_equal),
        ("ult", lambda x, y: x.view(np.uint32) < y.view(np.uint32)),
        ("ule", lambda x, y: x.view(np.uint32) <= y.view(np.uint32)),
        ("ugt", lambda x, y: x.view(np.uint32) > y.view(np.uint32)),
        ("uge", lambda x, y: x.view(np.uint32) >= y.view(np.uint32)),
    ],
)
def test_cmpi_predicates_and_select(predicate, reference):
    body = f"%p = arith.cmpi {predicate}, %x, %y : i32\n %r = arith.select %p, %x, %y : i32"
    native = _elementwise(body, t="i32", n=8)
    x = np.array([1, -2, 3, 7, 0, -5, 9, 2**31 - 1], np.int32)
    y = np.array([1, 3, -3, 7, 1, -6, -9, -(2**31)], np.int32)
    out = np.zeros(8, np.int32)
    _call(native, "k", x, y, out)
    np.testing.assert_array_equal(out, np.where(reference(x, y), x, y))


@pytest.mark.parametrize(
    ("body", "reference"),
    [
        ("%r = arith.addi %x, %y : i64", lambda x, y: x + y),
        ("%r = arith.subi %x, %y : i64", lambda x, y: x - y),
        ("%r = arith.muli %x, %y : i64", lambda x, y: x * y),
        ("%r = arith.divsi %x, %y : i64", lambda x, y: np.trunc(x / y).astype(np.int64)),
        ("%r = arith.remsi %x, %y : i64", lambda x, y: np.fmod(x, y)),
        ("%r = arith.floordivsi %x, %y : i64", lambda x, y: x // y),
        ("%r = arith.ceildivsi %x, %y : i64", lambda x, y: -(-x // y)),
        # a positive constant divisor: the sign-test form
        ("%d = arith.constant 3 : i64\n %r = arith.floordivsi %x, %d : i64",
         lambda x, y: x // 3),
        ("%d = arith.constant 4 : i64\n %r = arith.ceildivsi %x, %d : i64",
         lambda x, y: -(-x // 4)),
        ("%d = arith.constant 1 : i64\n %r = arith.floordivsi %x, %d : i64",
         lambda x, y: x),
        ("%r = arith.maxsi %x, %y : i64", np.maximum),
        ("%r = arith.minsi %x, %y : i64", np.minimum),
        ("%r = arith.andi %x, %y : i64", np.bitwise_and),
        ("%r = arith.ori %x, %y : i64", np.bitwise_or),
        ("%r = arith.xori %x, %y : i64", np.bitwise_xor),
        ("%r = arith.shli %x, %y : i64", lambda x, y: x << np.abs(y)),
        ("%r = arith.shrsi %x, %y : i64", lambda x, y: x >> np.abs(y)),
        ("%r = math.absi %x : i64", np.abs),
    ],
)
def test_integer_ops_i64(body, reference):
    if "shli" in body or "shrsi" in body:
        body = "%s = math.absi %y : i64\n " + body.replace("%y", "%s")
    native = _elementwise(body, t="i64", n=8)
    x = np.array([7, -7, 9, -9, 0, 100, -100, 12], np.int64)
    y = np.array([2, 2, -4, -4, 3, 7, 7, -5], np.int64)
    out = np.zeros(8, np.int64)
    _call(native, "k", x, y, out)
    np.testing.assert_array_equal(out, reference(x, y))


def test_unsigned_division_and_ceildivui():
    body = ("%q = arith.divui %x, %y : i32\n %m = arith.remui %x, %y : i32\n"
            " %cd = arith.ceildivui %x, %y : i32\n %s = arith.addi %q, %m : i32\n"
            " %r = arith.muli %s, %cd : i32")
    native = _elementwise(body, t="i32", n=8)
    x = np.array([0, 1, 7, 8, 100, 4000000000 - 2**32, 5, 9], np.int32)
    y = np.array([3, 3, 4, 4, 7, 3, 5, 2], np.int32)
    out = np.zeros(8, np.int32)
    _call(native, "k", x, y, out)
    ux, uy = x.view(np.uint32).astype(np.uint64), y.view(np.uint32).astype(np.uint64)
    expected = (ux // uy + ux % uy) * ((ux + uy - 1) // uy)
    np.testing.assert_array_equal(out.view(np.uint32), expected.astype(np.uint32))


@pytest.mark.parametrize(
    ("body", "t", "rt", "x", "expected"),
    [
        ("%r = arith.fptosi %x : f32 to i32", "f32", "i32",
         [1.9, -1.9, 0.0, 1e6], [1, -1, 0, 1000000]),
        ("%r = arith.fptoui %x : f32 to i8", "f32", "i8",
         [1.9, 200.5, 0.0, 255.0], [1, 200, 0, 255]),
        ("%r = arith.sitofp %x : i32 to f64", "i32", "f64", [-3, 0, 7, 2**31 - 1],
         [-3.0, 0.0, 7.0, 2**31 - 1]),
        ("%r = arith.uitofp %x : i32 to f32", "i32", "f32", [-1, 0, 7, 3],
         [4294967295.0, 0.0, 7.0, 3.0]),
        ("%r = arith.extf %x : f32 to f64", "f32", "f64",
         [0.5, -2.0, 3.25, 0.0], [0.5, -2, 3.25, 0]),
        ("%r = arith.truncf %x : f64 to f32", "f64", "f32", [0.5, -2.0, 3.25, 1e40],
         [0.5, -2, 3.25, np.inf]),
        ("%r = arith.extsi %x : i8 to i64", "i8", "i64", [-1, 5, -128, 127], [-1, 5, -128, 127]),
        ("%r = arith.extui %x : i8 to i64", "i8", "i64", [-1, 5, -128, 127], [255, 5, 128, 127]),
        ("%r = arith.trunci %x : i64 to i8", "i64", "i8", [257, -1, 128, 3], [1, -1, -128, 3]),
        ("%r = arith.bitcast %x : f32 to i32", "f32", "i32", [1.0, -2.0, 0.0, 0.5],
         [0x3F800000, -1073741824, 0, 0x3F000000]),
        ("%ix = arith.index_cast %x : i32 to index\n %r = arith.index_cast %ix : index to i64",
         "i32", "i64", [-5, 6, 0, 2**31 - 1], [-5, 6, 0, 2**31 - 1]),
        ("%ix = arith.index_cast %x : i64 to index\n %r = arith.index_cast %ix : index to i8",
         "i64", "i8", [-5, 260, 0, 127], [-5, 4, 0, 127]),
    ],
)
def test_casts(body, t, rt, x, expected):
    dtypes = {"f32": np.float32, "f64": np.float64, "i8": np.int8, "i32": np.int32,
              "i64": np.int64}
    native = _elementwise(body, t=t, rt=rt, n=4)
    with np.errstate(over="ignore"):
        xs = np.array(x).astype(dtypes[t])
    out = np.zeros(4, dtypes[rt])
    _call(native, "k", xs, xs, out)
    expected_arr = np.array(expected, dtype=np.float64 if rt.startswith("f") else np.int64)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(out, expected_arr.astype(dtypes[rt]))


def test_bool_to_float_via_uitofp():
    body = "%p = arith.cmpf olt, %x, %y : f32\n %r = arith.uitofp %p : i1 to f32"
    native = _elementwise(body, n=4)
    x, y = np.array([1, 5, 2, 0], np.float32), np.array([2, 4, 2, 1], np.float32)
    out = np.zeros(4, np.float32)
    _call(native, "k", x, y, out)
    np.testing.assert_array_equal(out, [1.0, 0.0, 0.0, 1.0])


PROGRAM = """
func.func private @relu_kernel(%x: memref<2x3xf32>, %y: memref<2x3xf32>)
    attributes {onnxc.kernel = "graph.relu"} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %zero = arith.constant 0.0 : f32
  scf.for %i = %c0 to %c2 step %c1 {
    scf.for %j = %c0 to %c3 step %c1 {
      %v = memref.load %x[%i, %j] : memref<2x3xf32>
      %pos = arith.cmpf ogt, %v, %zero : f32
      %r = arith.select %pos, %v, %zero : f32
      memref.store %r, %y[%i, %j] : memref<2x3xf32>
    }
  }
  func.return
}
func.func @main(%in: memref<6xf32>, %out: memref<3x2xf32>, %arena: memref<64xi8>)
    attributes {onnxc.entry, onnxc.input_names = ["x"], onnxc.output_names = ["y"]} {
  %off = arith.constant 8 : index
  %t = memref.view %arena[%off][] : memref<64xi8> to memref<2x3xf32>
  %x = memref.reinterpret_cast %in to offset: [0], sizes: [2, 3], strides: [3, 1]
      : memref<6xf32> to memref<2x3xf32>
  func.call @relu_kernel(%x, %t) : (memref<2x3xf32>, memref<2x3xf32>) -> ()
  %o = memref.reinterpret_cast %out to offset: [0], sizes: [2, 3], strides: [3, 1]
      : memref<3x2xf32> to memref<2x3xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  scf.for %i = %c0 to %c2 step %c1 {
    scf.for %j = %c0 to %c3 step %c1 {
      %v = memref.load %t[%i, %j] : memref<2x3xf32>
      %w = arith.addf %v, %v : f32
      memref.store %w, %o[%i, %j] : memref<2x3xf32>
    }
  }
  func.return
}
"""


def test_program_with_kernel_call_view_and_reinterpret_cast():
    native = _jit(PROGRAM)
    ir_text = native.optimized_ir()
    assert "noinline" in ir_text
    x = np.array([-1, 2, -3, 4, 5, -6], np.float32)
    out = np.zeros((3, 2), np.float32)
    arena = np.zeros(64, np.uint8)
    _call(native, "main", x, out, arena)
    np.testing.assert_array_equal(out.reshape(-1), 2 * np.maximum(x, 0))
    np.testing.assert_array_equal(arena[8:32].view(np.float32), np.maximum(x, 0))


def test_strided_layout_offset_is_applied():
    text = """
    func.func @k(%a: memref<8xf32>, %out: memref<2xf32>) {
      %v = memref.reinterpret_cast %a to offset: [3], sizes: [2, 2], strides: [4, 1]
          : memref<8xf32> to memref<2x2xf32, strided<[4, 1], offset: 3>>
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %x = memref.load %v[%c1, %c0] : memref<2x2xf32, strided<[4, 1], offset: 3>>
      %y = memref.load %v[%c0, %c1] : memref<2x2xf32, strided<[4, 1], offset: 3>>
      memref.store %x, %out[%c0] : memref<2xf32>
      memref.store %y, %out[%c1] : memref<2xf32>
      func.return
    }
    """
    native = _jit(text)
    a = np.arange(8, dtype=np.float32)
    out = np.zeros(2, np.float32)
    _call(native, "k", a, out)
    np.testing.assert_array_equal(out, [7.0, 4.0])


def test_scf_if_and_scalar_return():
    text = """
    func.func @clamp_sum(%a: memref<5xi32>) -> i32 {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c5 = arith.constant 5 : index
      %zero = arith.constant 0 : i32
      %s = scf.for %i = %c0 to %c5 step %c1 iter_args(%acc = %zero) -> (i32) {
        %v = memref.load %a[%i] : memref<5xi32>
        %neg = arith.cmpi slt, %v, %zero : i32
        %w = scf.if %neg -> (i32) {
          scf.yield %zero : i32
        } else {
          scf.yield %v : i32
        }
        %n = arith.addi %acc, %w : i32
        scf.yield %n : i32
      }
      func.return %s : i32
    }
    """
    native = _jit(text)
    fn = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p)(native.function_address("clamp_sum"))
    a = np.array([3, -4, 5, -1, 10], np.int32)
    assert fn(a.ctypes.data) == 18


def test_alloc_is_rejected_with_lowering_error():
    text = """
    func.func @k() {
      %t = memref.alloc() : memref<4xf32>
      func.return
    }
    """
    with pytest.raises(LoweringError, match="plan-memory"):
        _lower(text)


def test_unlowered_op_is_reported_by_translation():
    module = Parser(_context(), """
    func.func @k(%a: f32) -> f32 {
      func.return %a : f32
    }""").parse_module()
    host = host_target()
    with pytest.raises(LoweringError, match="no LLVM translation"):
        to_llvmlite(module, triple=host.triple, data_layout=host.data_layout)


def test_translation_orders_blocks_by_dominance():
    # ^bb1 is listed before ^bb2, which defines the value ^bb1 returns
    module = Parser(_context(), """
    llvm.func @f(%a: i64) -> i64 {
      llvm.br ^bb2
    ^bb1:
      llvm.return %x : i64
    ^bb2:
      %x = llvm.add %a, %a : i64
      llvm.br ^bb1
    }""").parse_module()
    host = host_target()
    native = NativeModule.from_llvm_ir(
        to_llvmlite(module, triple=host.triple, data_layout=host.data_layout)
    )
    fn = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64)(native.function_address("f"))
    assert fn(21) == 42
