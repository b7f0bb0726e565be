"""Memory a compile leaves behind or peaks at: native engines freed with their model, LLVM
pass managers disposed, weights not copied more than needed.

The RSS goals themselves (1,000 compiles grow RSS by at most 5 MB; a model with 100 MB of
weights compiles within 2x the weights + 300 MB) run under `-m slow`, each in a fresh child
process of benchmarks/compile_scaling.py, which prints the same numbers as tables.
"""

from __future__ import annotations

import gc
import json
import subprocess
import sys
import tracemalloc
import weakref
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

import onnxc
from onnxc.dialects.dense_data import from_numpy, to_numpy
from onnxc.frontend import import_onnx
from onnxc.runtime import jit
from onnxc.runtime.jit import NativeModule
from onnxc.zoo_scaling import small_model, weights_model

SCALING = Path(__file__).resolve().parents[2] / "benchmarks" / "compile_scaling.py"

IDENTITY_IR = """
define void @copy(ptr %x, ptr %y) {
  %v = load float, ptr %x
  store float %v, ptr %y
  ret void
}
"""


def _gc_disabled(test):
    """Run `test` with the cycle collector off: what dies must die by reference counting."""
    def wrapper(*args, **kwargs):
        gc.collect()
        gc.disable()
        try:
            return test(*args, **kwargs)
        finally:
            gc.enable()
    wrapper.__name__ = test.__name__
    return wrapper


@_gc_disabled
def test_native_engine_dies_with_its_compiled_model():
    model = onnxc.compile(small_model(), cache_dir=False, num_threads=1)
    model.run(None, {"x": np.ones((4, 8), np.float32)})
    native = weakref.ref(model._native)
    engine = weakref.ref(model._native._engine)  # its __del__ disposes the MCJIT engine
    del model
    assert native() is None and engine() is None


@_gc_disabled
def test_engine_loaded_from_object_code_dies_with_its_module():
    compiled = NativeModule.from_llvm_ir(IDENTITY_IR)
    loaded = NativeModule.from_object(compiled.object_code())
    refs = [weakref.ref(n) for n in (compiled, loaded)]
    refs += [weakref.ref(n._engine) for n in (compiled, loaded)]
    del compiled, loaded
    assert all(r() is None for r in refs)


def test_llvm_pass_managers_are_disposed(monkeypatch):
    """llvmlite 0.50 never frees a ModulePassManager (~85 KB of native memory per compile);
    the JIT disposes each one right after it ran."""
    managers = []
    create = jit.llvm.create_pass_builder

    def recording(machine, tuning):
        builder = create(machine, tuning)
        build = builder.getModulePassManager

        def get():
            managers.append(build())
            return managers[-1]

        builder.getModulePassManager = get
        return builder

    monkeypatch.setattr(jit.llvm, "create_pass_builder", recording)
    NativeModule.from_llvm_ir(IDENTITY_IR)
    assert len(managers) == 1 and managers[0].closed


def test_imported_weights_share_the_bytes_numpy_views():
    """An initializer's array views a bytes object (numpy_helper.to_array); its dense
    attribute holds that object instead of a third copy of the weight."""
    w = np.arange(256 * 1024, dtype=np.float32).reshape(512, 512)
    array = numpy_helper.to_array(numpy_helper.from_array(w, "w"))
    base = array
    while isinstance(base, np.ndarray):
        base = base.base
    assert isinstance(base, bytes)
    assert from_numpy(array).data.data is base


@pytest.mark.parametrize("array", [
    np.frombuffer(np.arange(12, dtype=np.float32).tobytes(), np.float32)[2:],  # part of bytes
    np.asfortranarray(np.arange(12, dtype=np.float32).reshape(3, 4)),
    np.frombuffer(np.arange(12, dtype=np.int64).tobytes(), np.int64).reshape(3, 4).T,
])
def test_dense_copies_what_it_cannot_share(array):
    """Part of a bytes object, or an order other than C: the attribute gets its own copy."""
    attr = from_numpy(array)
    np.testing.assert_array_equal(to_numpy(attr), array)
    assert len(attr.data.data) == array.nbytes



@pytest.mark.parametrize("shape", [(300, 257), (64, 3, 3, 3), (7,)])
def test_data_built_in_zeros_becomes_the_attribute_without_a_copy(shape):
    """dense_data.zeros: a zeroed array built in place (the batch-norm fold, weight packs)
    whose dense attribute holds its memory (large ones), with the values written."""
    from onnxc.dialects.dense_data import IN_PLACE_MIN_BYTES, zeros

    array = zeros(shape, np.float32)
    assert not array.any() and array.flags.writeable and array.flags.c_contiguous
    values = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    array[...] = values
    attr = from_numpy(array.reshape(-1), None)
    np.testing.assert_array_equal(to_numpy(attr).reshape(shape), values)
    shared = np.frombuffer(attr.data.data, np.uint8).ctypes.data == array.ctypes.data
    assert shared == (array.nbytes >= IN_PLACE_MIN_BYTES)
    part = from_numpy(array[1:]) if shape[0] > 1 else None  # not the whole buffer: a copy
    if part is not None:
        assert np.frombuffer(part.data.data, np.uint8).ctypes.data != array[1:].ctypes.data

def test_import_holds_each_weight_once(tmp_path):
    """Python-side memory while importing: each weight's bytes once (protobuf's own copy is
    C memory, not traced), where a copy per array and per attribute made it twice."""
    path = tmp_path / "w.onnx"
    onnx.save(weights_model("matmul", 8), path)
    weights = sum(numpy_helper.to_array(t).nbytes for t in onnx.load(path).graph.initializer)
    import_onnx(str(path))  # imports the converters first
    tracemalloc.start()
    try:
        module = import_onnx(str(path))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert module is not None
    assert peak < 1.4 * weights, (peak, weights)


def _child(*args: str) -> dict:
    done = subprocess.run([sys.executable, str(SCALING), *args], capture_output=True,
                          text=True, check=True, timeout=900)
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_a_thousand_compiles_grow_rss_by_at_most_5_mb():
    """After 100 warm-up compiles: the first hundred or so still grow RSS by ~10 KB each
    (allocator pools and one-time caches filling, e.g. the configured passes of
    pass_manager/pipeline_text.py), after which growth is steady at ~2.5 KB per compile."""
    result = _child("--child-compiles", "1000", "--warmup", "100")
    assert result["growth"] <= 5e6, result  # was ~67-95 KB per compile: 67-95 MB


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["matmul", "conv"])
def test_compile_peak_rss_is_within_twice_the_weights_plus_300_mb(tmp_path, kind):
    path = tmp_path / f"{kind}.onnx"
    onnx.save(weights_model(kind, 100), path)
    weights = path.stat().st_size
    result = _child("--child-weights", str(path))
    assert result["peak"] <= 2 * weights + 300 * 2**20, (result, weights)
