"""onnxc's thread pool (runtime/thread_pool.py): every chunk runs exactly once, on at most
`threads` threads, whatever the chunk count; regions from many Python threads at once, nested
regions, helpers asleep (spin 0) and a helper that is stopped and never shows up; native
kernels and a model give bit-identical results on 1 to 4 (3) threads.

The direct tests call `onnxc_pool_run` through ctypes with a Python chunk function
(helpers take the GIL to run it); the kernel tests run JIT-compiled loops with no Python in
the region. No assertion depends on timing: a hang is caught by a generous watchdog only.
"""

from __future__ import annotations

import ctypes
import os
import re
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnxc
from onnxc.errors import InvalidArgumentError
from onnxc.runtime import thread_pool
from onnxc.runtime.jit import NativeModule
from tests.ir_helpers import jit_loops

pytestmark = pytest.mark.skipif(not thread_pool.supported(), reason="no thread pool here")

CHUNK = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64)
RUN = ctypes.CFUNCTYPE(None, CHUNK, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)


@pytest.fixture(scope="module")
def run():
    native = thread_pool.load()
    fn = RUN(native.function_address("onnxc_pool_run"))
    fn.native = native  # keep the pool's code alive (it is, process-wide, anyway)
    return fn


def _region(run, chunks: int, threads: int, on_chunk=None) -> list[tuple[int, int]]:
    """Run a region with a Python chunk function; the (chunk, thread id) of every call."""
    calls: list[tuple[int, int]] = []

    def chunk(ctx, c):
        calls.append((c, threading.get_native_id()))
        if on_chunk is not None:
            on_chunk(c)

    callback = CHUNK(chunk)
    run(callback, None, chunks, threads)
    return calls


def _check(calls: list[tuple[int, int]], chunks: int, threads: int) -> set[int]:
    assert sorted(c for c, _ in calls) == list(range(chunks))
    tids = {t for _, t in calls}
    assert len(tids) <= max(1, min(threads, chunks))
    return tids


@pytest.mark.parametrize("threads", [1, 2, 3, 4, 8])
def test_every_chunk_runs_once_on_at_most_threads_threads(run, threads):
    for chunks in [0, 1, 2, 3, 5, 7, 16, 100]:  # fewer chunks than threads too
        for _ in range(5):
            _check(_region(run, chunks, threads), chunks, threads)


def test_caller_takes_the_first_chunks_and_the_helper_the_last(run):
    """Two threads split a region at one point: the caller runs chunks 0, 1, ... and the
    helper the last ones, last first; so consecutive kernels over the same rows leave each
    thread the rows it wrote (its own cache) rather than half of them at random."""
    me = threading.get_native_id()
    helper_ran = False
    for _ in range(20):
        calls = _region(run, 16, 2, on_chunk=lambda c: time.sleep(0.0005))
        _check(calls, 16, 2)
        mine = [c for c, t in calls if t == me]
        theirs = [c for c, t in calls if t != me]
        assert mine == list(range(len(mine)))
        assert theirs == list(range(15, len(mine) - 1, -1))
        helper_ran |= bool(theirs)
    assert helper_ran


def test_helpers_are_started_lazily_and_shared(run):
    _region(run, 64, 4)
    made = thread_pool.helper_count()
    assert 3 <= made <= thread_pool.MAX_HELPERS
    _region(run, 64, 2)
    _region(run, 64, 4)
    assert thread_pool.helper_count() == made  # reused, not started again


def test_nested_region_runs_serially_on_its_thread(run):
    inner: dict[int, list[tuple[int, int]]] = {}

    def on_chunk(c):
        inner[c] = _region(run, 6, 4)  # the pool is busy: this one runs on this thread

    outer = _region(run, 8, 2, on_chunk)
    _check(outer, 8, 2)
    for c, tid in outer:
        assert sorted(i for i, _ in inner[c]) == list(range(6))
        assert {t for _, t in inner[c]} == {tid}


def _in_eight_threads(body, timeout: float) -> None:
    """body(t) on 8 Python threads started together; fails on a hang or any error."""
    errors: list[BaseException] = []
    barrier = threading.Barrier(8)

    def caller(t: int) -> None:
        try:
            barrier.wait()
            body(t)
        except BaseException as error:  # noqa: BLE001 - reported below
            errors.append(error)

    callers = [threading.Thread(target=caller, args=(t,)) for t in range(8)]
    for thread in callers:
        thread.start()
    for thread in callers:
        thread.join(timeout)
    assert not any(thread.is_alive() for thread in callers), "a region hung"
    assert not errors, errors


def test_regions_from_eight_python_threads_at_once(run):
    def regions(t: int) -> None:
        for r in range(30):
            chunks, threads = (t * 7 + r) % 23, 2 + (t + r) % 3
            _check(_region(run, chunks, threads), chunks, threads)

    _in_eight_threads(regions, 120)


def test_helpers_that_sleep_between_regions(run):
    """Spin 0: helpers sleep on the futex after every region and the caller sleeps waiting
    for their chunks, so every wake-up path runs."""
    thread_pool.set_spin_us(0)
    try:
        for chunks in [2, 3, 16, 40]:
            for _ in range(20):
                _check(_region(run, chunks, 3), chunks, 3)
        native, _ = jit_loops(KERNEL, 3)
        for n in range(0, 200, 13):
            _run_kernel(native, 0, n, work=200)
    finally:
        thread_pool.set_spin_us(thread_pool.DEFAULT_SPIN_NS / 1000)


def test_spin_setting_from_the_environment(monkeypatch):
    monkeypatch.setenv("ONNXC_SPIN_US", "50")
    assert thread_pool._spin_ns_from_env() == 50_000
    monkeypatch.delenv("ONNXC_SPIN_US")
    assert thread_pool._spin_ns_from_env() == thread_pool.DEFAULT_SPIN_NS
    for bad in ("-1", "fast", "1e9"):
        monkeypatch.setenv("ONNXC_SPIN_US", bad)
        with pytest.raises(InvalidArgumentError, match="ONNXC_SPIN_US"):
            thread_pool._spin_ns_from_env()


# ---------------------------------------------------------------- native kernels

# out[i] = a float chain of `work` steps from x[i]; tid[i] = the thread that ran iteration i
KERNEL = """
func.func private @gettid() -> i32
func.func @k(%x: memref<4096xf32>, %out: memref<4096xf32>, %tid: memref<4096xi32>,
             %lb: index, %ub: index, %work: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %decay = arith.constant 0.999 : f32
  scf.for %i = %lb to %ub step %c1 {
    %t = func.call @gettid() : () -> i32
    memref.store %t, %tid[%i] : memref<4096xi32>
    %a = memref.load %x[%i] : memref<4096xf32>
    %chain = scf.for %k = %c0 to %work step %c1 iter_args(%acc = %a) -> (f32) {
      %m = arith.mulf %acc, %decay : f32
      %n = arith.addf %m, %a : f32
      scf.yield %n : f32
    }
    memref.store %chain, %out[%i] : memref<4096xf32>
  } {onnxc.parallel}
  func.return
}
"""


def _run_kernel(native: NativeModule, lb: int, ub: int, work: int = 0):
    """(out, tids of lb..ub); iterations outside lb..ub must stay untouched."""
    fn = native.ctypes_function("k", None, *[ctypes.c_void_p] * 3, *[ctypes.c_int64] * 3)
    x = np.random.default_rng(lb * 7919 + ub).standard_normal(4096).astype(np.float32)
    out = np.full(4096, np.nan, np.float32)
    tid = np.zeros(4096, np.int32)
    fn(x.ctypes.data, out.ctypes.data, tid.ctypes.data, lb, ub, work)
    outside = np.ones(4096, bool)
    outside[max(lb, 0):max(ub, lb)] = False
    assert np.isnan(out[outside]).all()
    return out, tid[lb:ub]


RANGES = [(0, 0), (5, 5), (9, 3), (0, 1), (3, 5), (0, 3), (0, 7), (1, 17), (0, 64), (11, 1000),
          (0, 4096)]


def test_kernels_bit_identical_on_one_to_four_threads():
    serial, _ = jit_loops(KERNEL, 1)
    parallel = {t: jit_loops(KERNEL, t)[0] for t in (2, 3, 4)}
    for lb, ub in RANGES:
        expected, _ = _run_kernel(serial, lb, ub, work=40)
        for t, native in parallel.items():
            for _ in range(3):  # many regions, each checked
                out, tids = _run_kernel(native, lb, ub, work=40)
                np.testing.assert_array_equal(out, expected, err_msg=f"T={t} {lb}..{ub}")
                assert len(set(tids)) <= max(1, min(t, ub - lb))


# two parallel loops, the second inside a serial loop over rows: y[r, i] = x[r, i] * 2 + r
TWO_LAUNCHES = """
func.func @two(%x: memref<4x64xf32>, %y: memref<4x64xf32>, %z: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c64 = arith.constant 64 : index
  %two = arith.constant 2.0 : f32
  scf.for %i = %c0 to %c64 step %c1 {
    memref.store %two, %z[%i] : memref<64xf32>
  } {onnxc.parallel}
  scf.for %r = %c0 to %c4 step %c1 {
    %ri = arith.index_cast %r : index to i64
    %rf = arith.sitofp %ri : i64 to f32
    scf.for %i = %c0 to %c64 step %c1 {
      %a = memref.load %x[%r, %i] : memref<4x64xf32>
      %s = memref.load %z[%i] : memref<64xf32>
      %m = arith.mulf %a, %s : f32
      %b = arith.addf %m, %rf : f32
      memref.store %b, %y[%r, %i] : memref<4x64xf32>
    } {onnxc.parallel}
  }
  func.return
}
"""


@pytest.mark.parametrize("threads", [1, 2])
def test_launches_share_one_launcher_and_keep_their_context_in_the_entry_block(threads):
    """Every parallel loop of a module goes through `onnxc.parallel_launch`, which the
    module only declares (the pool's module defines it, lowering/to_llvm/launch_ir.py); each loop
    has only its `.chunk` (captured values in, the body called), and its context is a slot
    of the function's entry block, also for a launch inside a loop (the stack does not grow
    with the trip count)."""
    native, text = jit_loops(TWO_LAUNCHES, threads)
    x = np.random.default_rng(0).standard_normal((4, 64)).astype(np.float32)
    y = np.zeros((4, 64), np.float32)
    z = np.zeros(64, np.float32)
    fn = native.ctypes_function("two", None, *[ctypes.c_void_p] * 3)
    fn(x.ctypes.data, y.ctypes.data, z.ctypes.data)
    np.testing.assert_array_equal(y, x * 2 + np.arange(4, dtype=np.float32)[:, None])
    if threads == 1:
        return  # no parallel region: the loops stayed serial
    assert text.count('declare void @"onnxc.parallel_launch"') == 1
    assert not re.search(r'define [^@]*@"onnxc.parallel_launch"', text)
    assert '@"onnxc.parallel_chunk"' not in text
    assert len(re.findall(r'define internal void @"two_par\d+\.chunk"', text)) == 2
    body = text[text.index('define void @"two"'):]
    body = body[:body.index("\n}")]
    entry = body.split("\n.", 2)[1]  # the entry block, up to the next label
    assert entry.count("alloca") == 2


def test_kernels_from_eight_python_threads_at_once():
    """Native regions (no GIL) from 8 threads on models of 2 and 3 threads: the one that
    holds the pool shares it, the others run serially; all results exact."""
    serial, _ = jit_loops(KERNEL, 1)
    natives = [jit_loops(KERNEL, 2)[0], jit_loops(KERNEL, 3)[0]]
    expected = {r: _run_kernel(serial, *r, work=300)[0] for r in RANGES}

    def runs(t: int) -> None:
        for r in range(40):
            lb, ub = RANGES[(t + r) % len(RANGES)]
            out, _ = _run_kernel(natives[t % 2], lb, ub, work=300)
            np.testing.assert_array_equal(out, expected[lb, ub])

    _in_eight_threads(runs, 300)


def _small_net() -> onnx.ModelProto:
    rng = np.random.default_rng(3)
    w = rng.standard_normal((16, 3, 3, 3)).astype(np.float32)
    m = rng.standard_normal((16 * 14 * 14, 10)).astype(np.float32) / 50
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("Flatten", ["r"], ["f"]),
        helper.make_node("MatMul", ["f", "m"], ["z"]),
        helper.make_node("Softmax", ["z"], ["y"], axis=-1),
    ]
    graph = helper.make_graph(
        nodes, "net", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 3, 14, 14])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 10])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(m, "m")],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def test_model_outputs_bit_identical_on_one_to_three_threads():
    model = _small_net()
    x = np.random.default_rng(4).standard_normal((4, 3, 14, 14)).astype(np.float32)
    expected = onnxc.compile(model, num_threads=1, cache_dir=False)(x)[0]
    for t in (2, 3):
        compiled = onnxc.compile(model, num_threads=t, cache_dir=False)
        for _ in range(5):
            np.testing.assert_array_equal(compiled(x)[0], expected, err_msg=f"T={t}")


# ---------------------------------------------------------------- a helper that never comes

STOPPED_HELPER = textwrap.dedent('''
    import ctypes, os, sys, threading
    import numpy as np
    sys.path.insert(0, {tests!r})
    from test_thread_pool import KERNEL, _run_kernel, jit_loops

    native, _ = jit_loops(KERNEL, 2)
    serial, _ = jit_loops(KERNEL, 1)
    me = threading.get_native_id()
    helper = None
    for _ in range(200):  # find the helper: the thread other than this one that ran chunks
        others = set(_run_kernel(native, 0, 4096, work=300)[1].tolist()) - {{me}}
        if others:
            (helper,) = others
            break
    if helper is None:
        print("skip: the helper never took a chunk"); sys.exit(0)
    stopped_r, stopped_w = os.pipe()
    resume_r, resume_w = os.pipe()
    tracer = os.fork()
    if tracer == 0:  # stop the helper thread alone (ptrace), until told to let it go
        os.close(stopped_r); os.close(resume_w)
        libc = ctypes.CDLL(None, use_errno=True)
        libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
        if libc.ptrace(0x4206, helper, None, None) != 0:  # PTRACE_SEIZE
            os.write(stopped_w, b"E%d" % ctypes.get_errno()); os._exit(0)
        libc.ptrace(0x4207, helper, None, None)  # PTRACE_INTERRUPT
        os.waitpid(helper, 0x40000000)  # __WALL: until it has stopped
        os.write(stopped_w, b"S")
        os.read(resume_r, 1)  # a byte, or EOF when the parent has died
        libc.ptrace(17, helper, None, None)  # PTRACE_DETACH: it runs again
        os._exit(0)
    os.close(stopped_w); os.close(resume_r)
    answer = os.read(stopped_r, 16)
    try:
        if answer != b"S":
            print(f"skip: ptrace refused ({{answer.decode()}})"); sys.exit(0)
        for lb, ub in [(0, 4096), (0, 2), (0, 64), (7, 1000)] * 10:  # a barrier would hang
            out, tids = _run_kernel(native, lb, ub, work=300)
            assert set(tids.tolist()) == {{me}}, "a stopped thread ran a chunk"
            assert np.array_equal(out, _run_kernel(serial, lb, ub, work=300)[0], equal_nan=True)
    finally:
        os.write(resume_w, b"R")
        os.waitpid(tracer, 0)
    for _ in range(200):  # the helper is back and the pool still shares work
        if helper in set(_run_kernel(native, 0, 4096, work=300)[1].tolist()):
            print("ok"); sys.exit(0)
    print("the helper never came back"); sys.exit(1)
''')


def test_region_completes_while_a_helper_is_stopped():
    """A helper stopped by ptrace (as a descheduled thread, but for as long as we like)
    never shows up: every region must still complete, on the caller alone. With a
    barrier at the end of each region (OpenMP) this hangs; the watchdog turns that into a
    failure."""
    tests = os.path.dirname(os.path.abspath(__file__))
    with tempfile.TemporaryFile("w+") as output:
        process = subprocess.Popen(  # its own session: on a hang, kill it and its tracer
            [sys.executable, "-c", STOPPED_HELPER.format(tests=tests)], stdout=output,
            stderr=subprocess.STDOUT, text=True, start_new_session=True)
        try:
            returncode = process.wait(timeout=240)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            pytest.fail("a region waited for a stopped helper (hung)")
        output.seek(0)
        text = output.read()
    if text.startswith("skip:"):
        pytest.skip(text.strip())
    assert returncode == 0 and text.strip() == "ok", text


def test_a_compile_loads_the_pool_in_a_thread_before_its_link():
    """The first compile of a process with threads starts the pool's own compile in a
    thread (`thread_pool.preload`) while it lowers the model, so its link finds the pool
    loaded; the model runs on it."""
    script = textwrap.dedent("""
        import threading
        import numpy as np
        from onnx import TensorProto, helper
        import onnxc
        from onnxc.runtime import thread_pool

        loaded_by = []
        real_load = thread_pool._load.__wrapped__
        def recording_load():
            loaded_by.append(threading.current_thread().name)
            return real_load()
        thread_pool._load = __import__("functools").cache(recording_load)
        node = helper.make_node("Relu", ["x"], ["y"])
        graph = helper.make_graph(
            [node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [64, 64])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [64, 64])])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        compiled = onnxc.compile(model, cache_dir=False, num_threads=2, quiet=True)
        x = np.linspace(-1, 1, 64 * 64, dtype=np.float32).reshape(64, 64)
        (y,) = compiled.run(None, {"x": x})
        np.testing.assert_array_equal(y, np.maximum(x, 0))
        print(loaded_by)
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[-2] == "['onnxc-pool-load']"
