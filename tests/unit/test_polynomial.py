"""The inline f32 exp / erf / tanh of convert-math-to-llvm (lowering/to_llvm/polynomial.py).

Each function is JIT-compiled in a scalar loop (which LLVM vectorizes) and in a kernel on
explicit vector<16xf32> values, and compared with Python's float64 `math` functions on a
dense sweep of f32 inputs, against the max relative errors polynomial.py states.
"""

from __future__ import annotations

import ctypes
import math

import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser

from onnxc import pipeline
from onnxc.pipeline import lower_loops_to_llvm
from onnxc.lowering.to_llvm.translate import to_llvmlite
from onnxc.runtime.jit import NativeModule, host_target

N = 1 << 16

SCALAR = """
func.func @k(%a: memref<{n}xf32>, %c: memref<{n}xf32>) {{
  %lo = arith.constant 0 : index
  %hi = arith.constant {n} : index
  %step = arith.constant 1 : index
  scf.for %i = %lo to %hi step %step {{
    %x = memref.load %a[%i] : memref<{n}xf32>
    %r = math.{fn} %x : f32
    memref.store %r, %c[%i] : memref<{n}xf32>
  }}
  func.return
}}
"""

VECTOR = """
func.func @k(%a: memref<{n}xf32>, %c: memref<{n}xf32>) {{
  %lo = arith.constant 0 : index
  %hi = arith.constant {n} : index
  %step = arith.constant 16 : index
  scf.for %i = %lo to %hi step %step {{
    %x = vector.load %a[%i] : memref<{n}xf32>, vector<16xf32>
    %r = math.{fn} %x : vector<16xf32>
    vector.store %r, %c[%i] : memref<{n}xf32>, vector<16xf32>
  }}
  func.return
}}
"""

def _lower(text: str) -> ModuleOp:
    ctx = pipeline.make_context()
    module = Parser(ctx, text).parse_module()
    lower_loops_to_llvm(ctx, module)
    return module


def _call(native: NativeModule, name: str, *arrays: np.ndarray) -> None:
    fn = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * len(arrays))(native.function_address(name))
    fn(*[a.ctypes.data for a in arrays])


# (function, reference, input range, max relative error stated in polynomial.py)
CASES = [
    ("exp", math.exp, (-87.0, 88.7), 3e-7),
    ("erf", math.erf, (-5.0, 5.0), 5e-7),
    ("tanh", math.tanh, (-10.0, 10.0), 5e-7),
]


def _run(template: str, fn: str, x: np.ndarray) -> np.ndarray:
    host = host_target()
    module = _lower(template.format(n=x.size, fn=fn))
    native = NativeModule.from_llvm_ir(
        to_llvmlite(module, triple=host.triple, data_layout=host.data_layout))
    out = np.zeros_like(x)
    _call(native, "k", x, out)
    return out


def _reference(fn, x: np.ndarray) -> np.ndarray:
    return np.array([fn(float(v)) for v in x], np.float64)


@pytest.mark.parametrize("template", [SCALAR, VECTOR], ids=["scalar", "vector"])
@pytest.mark.parametrize("name, fn, bounds, max_rel", CASES, ids=[c[0] for c in CASES])
def test_max_relative_error(template, name, fn, bounds, max_rel):
    x = np.linspace(*bounds, N, dtype=np.float32)
    x[:64] = np.geomspace(1e-30, 1e-2, 64, dtype=np.float32)  # tiny: relative error counts
    x[64:128] = -x[:64]
    got = _run(template, name, x).astype(np.float64)
    want = _reference(fn, x)
    rel = np.abs(got - want) / np.abs(want)
    assert rel.max() < max_rel, f"{name}: max rel error {rel.max():.2e} at x={x[rel.argmax()]}"


@pytest.mark.parametrize("name, special, expected", [
    ("exp", [np.inf, -np.inf, np.nan, 89.0, -110.0, 0.0, -100.0],
     [np.inf, 0.0, np.nan, np.inf, 0.0, 1.0, math.exp(-100.0)]),
    ("erf", [np.inf, -np.inf, np.nan, 0.0, -0.0], [1.0, -1.0, np.nan, 0.0, -0.0]),
    ("tanh", [np.inf, -np.inf, np.nan, 0.0, 50.0, -50.0], [1.0, -1.0, np.nan, 0.0, 1.0, -1.0]),
])
def test_special_values(name, special, expected):
    x = np.zeros(64, np.float32)
    x[: len(special)] = special
    got = _run(SCALAR, name, x)[: len(special)]
    # exp(-100) is subnormal in f32: compare at its spacing
    np.testing.assert_allclose(got, np.array(expected, np.float32), rtol=1e-6, atol=1e-44)


def test_loop_has_no_libm_call():
    """The expansion leaves no scalar call in the loop, so LLVM vectorizes it."""
    host = host_target()
    for fn in ("exp", "erf", "tanh"):
        module = _lower(SCALAR.format(n=1024, fn=fn))
        ir = str(to_llvmlite(module, triple=host.triple, data_layout=host.data_layout))
        assert "erff" not in ir and "llvm.exp" not in ir and "llvm.tanh" not in ir, fn
        native = NativeModule.from_llvm_ir(ir)
        assert native is not None
