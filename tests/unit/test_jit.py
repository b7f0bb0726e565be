"""The llvmlite JIT: host target, verification, optimisation, object code round trips."""

from __future__ import annotations

import ctypes
import subprocess
import sys

import numpy as np
import pytest

from onnxc.errors import CompilationError
from onnxc.runtime.jit import NativeModule, host_target
from onnxc.target import Target

# exp over n floats: calls a libm symbol, so reloading its object must resolve relocations.
EXP_LOOP = """
define void @vexp(ptr noalias %x, ptr noalias %y, i64 %n) {
entry:
  br label %loop
loop:
  %i = phi i64 [0, %entry], [%next, %loop]
  %px = getelementptr inbounds float, ptr %x, i64 %i
  %v = load float, ptr %px, align 4
  %e = call float @llvm.exp.f32(float %v)
  %py = getelementptr inbounds float, ptr %y, i64 %i
  store float %e, ptr %py, align 4
  %next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %next, %n
  br i1 %done, label %exit, label %loop
exit:
  ret void
}
declare float @llvm.exp.f32(float)
"""

_VEXP = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)


def _run_vexp(native: NativeModule) -> None:
    x = np.linspace(-4, 4, 100, dtype=np.float32)
    y = np.zeros_like(x)
    _VEXP(native.function_address("vexp"))(x.ctypes.data, y.ctypes.data, x.size)
    np.testing.assert_allclose(y, np.exp(x), rtol=1e-6)


def test_host_target_describes_this_machine():
    host = host_target()
    assert isinstance(host, Target)
    assert host.cpu and host.triple and host.data_layout
    expected = 512 if host.has_feature("avx512f") else 256 if host.has_feature("avx2") else 128
    assert host.vector_bits == expected
    assert host_target() is host  # computed once


def test_target_machines_are_fresh():
    host = host_target()
    assert host.create_target_machine() is not host.create_target_machine()


def test_compile_and_call():
    native = NativeModule.from_llvm_ir(EXP_LOOP)
    _run_vexp(native)


def test_optimized_ir_is_vectorized_and_carries_the_target():
    native = NativeModule.from_llvm_ir(EXP_LOOP)
    text = native.optimized_ir()
    assert host_target().triple in text
    assert "target datalayout" in text
    assert "<4 x float>" in text or "<8 x float>" in text or "<16 x float>" in text


def test_object_code_reloads_in_this_process():
    native = NativeModule.from_llvm_ir(EXP_LOOP)
    blob = native.object_code()
    assert blob[:4] == b"\x7fELF" or sys.platform != "linux"
    _run_vexp(NativeModule.from_object(blob))


def test_object_code_reloads_in_a_fresh_process(tmp_path):
    path = tmp_path / "vexp.o"
    path.write_bytes(NativeModule.from_llvm_ir(EXP_LOOP).object_code())
    script = f"""
import ctypes, numpy as np
from onnxc.runtime.jit import NativeModule
native = NativeModule.from_object(open({str(path)!r}, "rb").read())
fn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)(
    native.function_address("vexp"))
x = np.arange(8, dtype=np.float32); y = np.zeros_like(x)
fn(x.ctypes.data, y.ctypes.data, 8)
assert np.allclose(y, np.exp(x)), y
print("ok")
"""
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr


def test_ctypes_function_keeps_the_code_alive():
    fn = NativeModule.from_llvm_ir(EXP_LOOP).ctypes_function(
        "vexp", None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64
    )
    import gc

    gc.collect()  # the NativeModule is referenced only by `fn`
    x = np.ones(4, np.float32)
    y = np.zeros_like(x)
    fn(x.ctypes.data, y.ctypes.data, 4)
    np.testing.assert_allclose(y, np.e, rtol=1e-6)


def test_unoptimized_compile_works():
    _run_vexp(NativeModule.from_llvm_ir(EXP_LOOP, opt_level=0))


def test_syntax_error_raises_compilation_error():
    with pytest.raises(CompilationError, match="LLVM rejected"):
        NativeModule.from_llvm_ir("define void @f( {")


def test_invalid_ir_raises_instead_of_aborting():
    # parses, but fails verification: the entry block has no terminator and
    # an instruction uses a value defined after it
    bad = """
define i32 @f(i32 %a) {
entry:
  %b = add i32 %c, 1
  %c = add i32 %a, 1
}
"""
    with pytest.raises(CompilationError):
        NativeModule.from_llvm_ir(bad)


def test_type_mismatch_in_verified_module_raises():
    bad = """
define float @f(float %a) {
  %b = call float @llvm.exp.f32(double 1.0)
  ret float %b
}
declare float @llvm.exp.f32(float)
"""
    with pytest.raises(CompilationError):
        NativeModule.from_llvm_ir(bad)


def test_missing_function_raises_key_error():
    native = NativeModule.from_llvm_ir(EXP_LOOP)
    with pytest.raises(KeyError, match="nope"):
        native.function_address("nope")


@pytest.mark.parametrize("data", [b"", b"not an object", b"\x7fELF" + b"\x02" * 60])
def test_bad_object_code_raises(data):
    with pytest.raises(CompilationError):
        NativeModule.from_object(data)


def test_truncated_object_code_raises():
    blob = NativeModule.from_llvm_ir(EXP_LOOP).object_code()
    with pytest.raises(CompilationError, match="truncated"):
        NativeModule.from_object(blob[: len(blob) // 2])


def test_module_from_object_has_no_ir():
    native = NativeModule.from_object(NativeModule.from_llvm_ir(EXP_LOOP).object_code())
    with pytest.raises(ValueError):
        native.optimized_ir()
