"""The direct LLVM IR route (lowering/to_llvm/direct.py) against the llvm-dialect route.

`onnxc.compile` emits LLVM IR straight from the loops; `onnxc-opt --emit=llvm-dialect` and
the convert-*-to-llvm passes build the llvm dialect first. Both must mean the same: each
kernel below runs both ways on the same inputs and the outputs must be bit-identical. The
kernels cover what the direct route emits itself (index arithmetic, strided and offset
memrefs, sub-byte elements, vectors, scf.for / if / while, calls, parallel loops) and ops it
hands to their conversion patterns (polynomial exp / tanh, rounding divisions, casts, cmpf).
The whole-model tests and the ONNX node suite run the direct route against references too.
"""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

from onnxc.errors import LoweringError
from tests.ir_helpers import jit_loops

SCALARS = """
func.func @kernel(%x: memref<4x8xf32>, %i: memref<4xi32>, %out: memref<4x8xf32>,
                  %iout: memref<4xi32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %half = arith.constant 0.5 : f32
  %three = arith.constant 3 : i32
  scf.for %r = %c0 to %c4 step %c1 {
    %sum = scf.for %c = %c0 to %c8 step %c1 iter_args(%acc = %half) -> (f32) {
      %v = memref.load %x[%r, %c] : memref<4x8xf32>
      %e = math.exp %v : f32
      %t = math.tanh %v : f32
      %m = arith.maximumf %e, %t : f32
      %n = arith.maxnumf %m, %v : f32
      %neg = arith.negf %n : f32
      %lt = arith.cmpf olt, %v, %half : f32
      %s = arith.select %lt, %neg, %n : f32
      %q0 = arith.divf %s, %e : f32
      %z = math.erf %v : f32
      %e2 = math.exp %z : f32
      %d = math.fma %q0, %e2, %v : f32
      %a = arith.addf %acc, %d : f32
      memref.store %d, %out[%r, %c] : memref<4x8xf32>
      scf.yield %a : f32
    }
    %k = memref.load %i[%r] : memref<4xi32>
    %q = arith.floordivsi %k, %three : i32
    %cq = arith.ceildivsi %k, %three : i32
    %rem = arith.remsi %k, %three : i32
    %f = arith.fptosi %sum : f32 to i32
    %idx = arith.index_cast %r : index to i32
    %p1 = arith.addi %q, %cq : i32
    %p2 = arith.muli %rem, %f : i32
    %p3 = arith.subi %p1, %p2 : i32
    %p4 = arith.xori %p3, %idx : i32
    memref.store %p4, %iout[%r] : memref<4xi32>
  }
  func.return
}
"""

VECTORS = """
func.func @kernel(%a: memref<4x16xf32, strided<[16, 1], offset: 16>>, %b: memref<16xf32>,
                  %out: memref<3x16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c8 = arith.constant 8 : index
  %bias = arith.constant dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]> : vector<8xf32>
  scf.for %r = %c0 to %c3 step %c1 {
    scf.for %c = %c0 to %c8 step %c8 {
      %va = vector.load %a[%r, %c] : memref<4x16xf32, strided<[16, 1], offset: 16>>, vector<8xf32>
      %vb = vector.load %b[%c] : memref<16xf32>, vector<8xf32>
      %s = memref.load %b[%r] : memref<16xf32>
      %sv = vector.broadcast %s : f32 to vector<8xf32>
      %f = vector.fma %va, %vb, %sv : vector<8xf32>
      %g = arith.addf %f, %bias : vector<8xf32>
      vector.store %g, %out[%r, %c] : memref<3x16xf32>, vector<8xf32>
      %c8b = arith.addi %c, %c8 : index
      %hi = vector.load %a[%r, %c8b] : memref<4x16xf32, strided<[16, 1], offset: 16>>, vector<8xf32>
      %e = math.exp %hi : vector<8xf32>
      vector.store %e, %out[%r, %c8b] : memref<3x16xf32>, vector<8xf32>
    }
  }
  func.return
}
"""

CONTROL = """
func.func private @double(%x: memref<8xi1>, %y: memref<8xi1>) attributes {onnxc.kernel = "k"} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  scf.for %i = %c0 to %c8 step %c1 {
    %v = memref.load %x[%i] : memref<8xi1>
    %true = arith.constant true
    %n = arith.xori %v, %true : i1
    memref.store %n, %y[%i] : memref<8xi1>
  }
  func.return
}

func.func @kernel(%buf: memref<64xi8>, %x: memref<8xi1>, %n: memref<1xi64>,
                  %out: memref<2xi64>) -> i32 {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %y = memref.view %buf[%c16][] : memref<64xi8> to memref<8xi1>
  func.call @double(%x, %y) : (memref<8xi1>, memref<8xi1>) -> ()
  %limit = memref.load %n[%c0] : memref<1xi64>
  %zero = arith.constant 0 : i64
  %one = arith.constant 1 : i64
  %count, %total = scf.while (%i = %zero, %t = %zero) : (i64, i64) -> (i64, i64) {
    %go = arith.cmpi slt, %i, %limit : i64
    scf.condition(%go) %i, %t : i64, i64
  } do {
  ^bb0(%j: i64, %s: i64):
    %next = arith.addi %j, %one : i64
    %odd = arith.andi %j, %one : i64
    %is_odd = arith.cmpi ne, %odd, %zero : i64
    %add = scf.if %is_odd -> (i64) {
      %sq = arith.muli %j, %j : i64
      scf.yield %sq : i64
    } else {
      scf.yield %j : i64
    }
    %s2 = arith.addi %s, %add : i64
    scf.yield %next, %s2 : i64, i64
  }
  memref.store %count, %out[%c0] : memref<2xi64>
  %c1 = arith.constant 1 : index
  memref.store %total, %out[%c1] : memref<2xi64>
  %status = arith.trunci %total : i64 to i32
  func.return %status : i32
}
"""

PARALLEL = """
func.func @kernel(%x: memref<64x32xf32>, %y: memref<64x32xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  %two = arith.constant 2.0 : f32
  scf.for %i = %c0 to %c64 step %c1 {
    scf.for %j = %c0 to %c32 step %c1 {
      %v = memref.load %x[%i, %j] : memref<64x32xf32>
      %w = arith.mulf %v, %two : f32
      memref.store %w, %y[%i, %j] : memref<64x32xf32>
    }
  } {onnxc.parallel}
  func.return
}
"""


def _pointer(array: np.ndarray) -> ctypes.c_void_p:
    return ctypes.c_void_p(array.ctypes.data)


def _run(text: str, arrays: list[np.ndarray], route: str, num_threads: int = 1,
         restype=None) -> tuple[list[np.ndarray], object]:
    native, _ = jit_loops(text, num_threads, route)
    copies = [a.copy() for a in arrays]
    fn = native.ctypes_function("kernel", restype, *([ctypes.c_void_p] * len(copies)))
    result = fn(*[_pointer(a) for a in copies])
    return copies, result


def _same(text: str, arrays: list[np.ndarray], num_threads: int = 1, restype=None):
    direct, status = _run(text, arrays, "direct", num_threads, restype)
    patterns, expected_status = _run(text, arrays, "patterns", num_threads, restype)
    for got, want in zip(direct, patterns, strict=True):
        assert got.tobytes() == want.tobytes()
    assert status == expected_status
    return direct, status


def test_scalar_arithmetic_and_ops_lowered_by_their_patterns():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 8)).astype(np.float32) * 4
    i = np.array([-7, 5, 0, 11], np.int32)
    (_, _, out, iout), _ = _same(SCALARS, [x, i, np.zeros((4, 8), np.float32),
                                           np.zeros(4, np.int32)])
    assert np.isfinite(out).all() and iout.any()  # it computed something


def test_vectors_strided_offset_memrefs_and_dense_constants():
    rng = np.random.default_rng(1)
    a = rng.standard_normal(5 * 16).astype(np.float32)  # offset 16: row r at 16 + 16 r
    b = rng.standard_normal(16).astype(np.float32)
    (_, _, out), _ = _same(VECTORS, [a, b, np.zeros((3, 16), np.float32)])
    rows = a[16:].reshape(4, 16)
    expected = rows[:3, :8] * b[:8] + b[:3, None] + np.arange(1, 9, dtype=np.float32)
    np.testing.assert_allclose(out[:, :8], expected, rtol=1e-6)
    np.testing.assert_allclose(out[:, 8:], np.exp(rows[:3, 8:]), rtol=1e-6)


def test_calls_views_bool_bytes_while_and_if():
    x = np.array([1, 0, 1, 1, 0, 0, 1, 0], np.uint8)  # i1 elements take a byte each
    (buf, _, _, out), status = _same(CONTROL, [np.zeros(64, np.uint8), x,
                                               np.array([5], np.int64), np.zeros(2, np.int64)],
                                     restype=ctypes.c_int32)
    np.testing.assert_array_equal(buf[16:24], 1 - x)
    # i = 0..4: even i add i, odd i add i * i: 0 + 1 + 2 + 9 + 4
    np.testing.assert_array_equal(out, [5, 16])
    assert status == 16


def test_parallel_loop_on_two_threads():
    x = np.arange(64 * 32, dtype=np.float32).reshape(64, 32)
    (_, y), _ = _same(PARALLEL, [x, np.zeros_like(x)], num_threads=2)
    np.testing.assert_array_equal(y, 2 * x)


def test_an_op_without_a_lowering_is_a_lowering_error():
    text = """
    func.func @kernel(%x: memref<4xf32>) {
      %c0 = arith.constant 0 : index
      %v = memref.load %x[%c0] : memref<4xf32>
      %w = "test.op"(%v) : (f32) -> f32
      memref.store %w, %x[%c0] : memref<4xf32>
      func.return
    }
    """
    with pytest.raises(LoweringError, match="'test.op' in @kernel has no LLVM lowering"):
        jit_loops(text)


FAST_MATH = """
func.func @kernel(%x: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %v = memref.load %x[%c0] : memref<4xf32>
  %w = arith.addf %v, %v fastmath<reassoc, nnan, ninf, nsz, arcp, contract, afn> : f32
  %y = arith.mulf %w, %v fastmath<contract, reassoc> : f32
  memref.store %y, %x[%c0] : memref<4xf32>
  func.return
}
"""

_EMIT_IN_A_FRESH_PROCESS = """
import sys
from tests.ir_helpers import jit_loops
sys.stdout.write(jit_loops(sys.stdin.read())[1])
"""


def test_the_ir_text_does_not_depend_on_string_hashing():
    """xDSL keeps fast-math flags as a set, whose order follows string hashing: emitted in
    LLVM's own order, a module's IR text (and an artifact built from it) is the same in
    every process."""
    import os
    import pathlib
    import subprocess
    import sys

    root = pathlib.Path(__file__).resolve().parents[2]
    texts = set()
    for seed in ("1", "2", "3", "4"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        texts.add(subprocess.run([sys.executable, "-c", _EMIT_IN_A_FRESH_PROCESS],
                                 input=FAST_MATH, env=env, cwd=root, capture_output=True,
                                 text=True, check=True).stdout)
    (text,) = texts
    assert "fadd reassoc nnan ninf nsz arcp contract afn float" in text
    assert "fmul reassoc contract float" in text
