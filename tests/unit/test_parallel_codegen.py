"""A module's LLVM code generation split over lanes (runtime/parallel_codegen.py): worker
processes and a thread of this process. The split defines every function once, the objects
link into one engine, the outputs are those of the one-process compile, the packed objects
survive the cache, and a lane that fails or dies is a CompilationError, not a dead compiler."""

from __future__ import annotations

import ctypes
import re
import subprocess
import sys
import time

import numpy as np
import pytest

import onnxc
from onnxc.errors import CompilationError
from onnxc.runtime import jit, parallel_codegen
from onnxc.runtime.jit import NativeModule, pack_objects, unpack_objects
from onnxc.runtime.parallel_codegen import compile_parts, split_module
from onnxc.target import host_target
from onnxc.zoo import random_inputs
from onnxc.zoo_scaling import wide_graph

TOY = '''; ModuleID = ""
target triple = "x86_64-unknown-linux-gnu"

declare void @"onnxc_parallel_run"(ptr %".1", ptr %".2", i64 %".3", i64 %".4")

define internal i32 @"triple_0"(i32 %".1") noinline nounwind
{
entry:
  %".3" = mul i32 %".1", 3
  ret i32 %".3"
}

define internal i32 @"triple_0_par0"(i32 %".1") noinline nounwind
{
entry:
  ret i32 %".1"
}

define internal i32 @"add_0"(i32 %".1", i32 %".2") noinline nounwind
{
entry:
  %".4" = add i32 %".1", %".2"
  %".5" = add i32 %".4", %".2"
  %".6" = add i32 %".5", %".2"
  ret i32 %".6"
}

define i32 @"main"(i32 %".1") nounwind
{
entry:
  %".3" = call i32 @"triple_0"(i32 %".1")
  %".4" = call i32 @"add_0"(i32 %".3", i32 1)
  ret i32 %".4"
}
'''


def _defined(text: str) -> list[str]:
    return re.findall(r'^define [^@]*@"([^"]+)"', text, flags=re.MULTILINE)


def test_split_defines_each_function_once_and_declares_what_it_calls():
    parts = split_module(TOY, 2)
    assert len(parts) == 2
    defined = [name for part in parts for name in _defined(part)]
    assert sorted(defined) == sorted(["triple_0", "triple_0_par0", "add_0", "main"])
    home = next(p for p in parts if "triple_0" in _defined(p))
    assert "triple_0_par0" in _defined(home)  # a kernel keeps its parallel bodies
    main_part = next(p for p in parts if "main" in _defined(p))
    for callee in ("triple_0", "add_0"):
        if callee not in _defined(main_part):
            assert f'declare i32 @"{callee}"(i32)' in main_part
            # called from another object: no longer internal where it is defined
            other = next(p for p in parts if callee in _defined(p))
            assert f'define internal i32 @"{callee}"' not in other
    assert 'declare void @"onnxc_parallel_run"' in parts[0]  # the preamble goes everywhere


def test_an_always_inlined_helper_is_copied_into_each_part_that_calls_it():
    """direct.SHARED_LOWERINGS: an internal `alwaysinline` function is not a part's own but
    defined in every part that calls it (each inlines it), and the parts still link."""
    helper = ('define internal i32 @"onnxc.math.exp.0"(i32 %".1") alwaysinline nounwind\n'
              '{\nentry:\n  %".3" = add i32 %".1", 7\n  ret i32 %".3"\n}\n')
    text = TOY.replace("x86_64-unknown-linux-gnu", host_target().triple)
    text = text.replace('%".3" = mul i32 %".1", 3',
                        '%".2" = call i32 @"onnxc.math.exp.0"(i32 %".1")\n'
                        '  %".3" = mul i32 %".2", 3')
    text = text.replace('%".4" = add i32 %".1", %".2"',
                        '%".7" = call i32 @"onnxc.math.exp.0"(i32 %".1")\n'
                        '  %".4" = add i32 %".7", %".2"')
    text = text.replace('define internal i32 @"triple_0"(', helper + '\ndefine internal i32 @"triple_0"(')
    parts = split_module(text, 2)
    callers = [p for p in parts if "triple_0" in _defined(p) or "add_0" in _defined(p)]
    assert len(callers) == 2
    for part in callers:
        assert "onnxc.math.exp.0" in _defined(part)
        assert 'declare i32 @"onnxc.math.exp.0"' not in part
    native = NativeModule.from_object(pack_objects(compile_parts(parts, host_target(), 3)))
    main = native.ctypes_function("main", ctypes.c_int32, ctypes.c_int32)
    tripled = (5 + 7) * 3  # triple_0
    assert main(5) == (tripled + 7) + 1 + 1 + 1  # add_0(tripled, 1)


def test_parts_compile_in_workers_and_link_into_one_engine():
    objects = compile_parts(split_module(TOY.replace("x86_64-unknown-linux-gnu",
                                                     host_target().triple), 2),
                            host_target(), 3)
    native = NativeModule.from_object(pack_objects(objects))
    main = native.ctypes_function("main", ctypes.c_int32, ctypes.c_int32)
    assert main(5) == 5 * 3 + 3


STRIDED_LOOP = '''target triple = "TRIPLE"

define void @"pair_sums"(ptr noalias %a, ptr noalias %b, i64 %n) nounwind
{
entry:
  br label %loop
loop:
  %i = phi i64 [0, %entry], [%next, %loop]
  %r0 = mul i64 %i, 3
  %r1 = add i64 %r0, 1
  %p0 = getelementptr float, ptr %a, i64 %r0
  %p1 = getelementptr float, ptr %a, i64 %r1
  %x0 = load float, ptr %p0
  %x1 = load float, ptr %p1
  %s = fadd float %x0, %x1
  %q = getelementptr float, ptr %b, i64 %i
  store float %s, ptr %q
  %next = add i64 %i, 1
  %done = icmp eq i64 %next, %n
  br i1 %done, label %exit, label %loop
exit:
  ret void
}
'''


def test_a_worker_compiles_each_module_with_or_without_strength_reduction():
    """The flag of each frame holds for that module only: a loop whose code LLVM's loop
    strength reduction changes comes out as without it when flagged, and as before after."""
    text = STRIDED_LOOP.replace("TRIPLE", host_target().triple)
    pool = parallel_codegen.CodegenPool(host_target(), 3, 1)
    for strength_reduction in (True, False, True):
        pool.submit(text, strength_reduction)
    reduced, plain, reduced_again = pool.finish()
    assert reduced != plain
    assert reduced == reduced_again


def test_the_thread_lane_compiles_what_a_worker_compiles():
    """The in-process lane (a thread) gives the bytes a worker process gives, strength
    reduction flag included, and puts the interpreter's switch interval back when done."""
    text = STRIDED_LOOP.replace("TRIPLE", host_target().triple)
    interval = sys.getswitchinterval()
    results = []
    for workers, in_process in ((1, False), (0, True)):
        pool = parallel_codegen.CodegenPool(host_target(), 3, workers, in_process=in_process)
        for strength_reduction in (True, False, True):
            pool.submit(text, strength_reduction)
        results.append(pool.finish())
    assert results[0] == results[1]
    assert results[1][0] != results[1][1]
    assert sys.getswitchinterval() == interval


def test_modules_go_to_the_first_free_lane_and_come_back_in_submission_order(monkeypatch):
    """Lanes take modules from one queue when they are free: with the thread slowed down
    (as when it shares its core with the emitter), the worker compiles most of them, and
    the objects still come back in the order they were submitted."""
    texts = [STRIDED_LOOP.replace("TRIPLE", host_target().triple).replace(
        '@"pair_sums"', f'@"pair_sums_{i}"') for i in range(6)]
    alone = [compile_parts([text], host_target(), 3)[0] for text in texts]
    real = parallel_codegen.compile_object
    thread_compiled = []

    def slow(text, *args, **kwargs):  # busy until the worker has compiled all the others
        thread_compiled.append(text)
        deadline = time.monotonic() + 60
        while len(pool._lanes[1].objects) < len(texts) - 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        return real(text, *args, **kwargs)

    monkeypatch.setattr(parallel_codegen, "compile_object", slow)
    pool = parallel_codegen.CodegenPool(host_target(), 3, 1, in_process=True)
    for text in texts:
        pool.submit(text)
    objects = pool.finish()
    assert len(thread_compiled) == 1
    assert objects == alone


def test_a_lane_without_strength_reduction_leaves_the_jit_its_own():
    """LLVM's options are process-wide: after the thread lane compiled a module without
    loop strength reduction, this process's JIT still generates code with it."""
    text = STRIDED_LOOP.replace("TRIPLE", host_target().triple)
    before = NativeModule.from_llvm_ir(text).object_code()
    pool = parallel_codegen.CodegenPool(host_target(), 3, 0, in_process=True)
    pool.submit(text, False)
    pool.finish()
    assert NativeModule.from_llvm_ir(text).object_code() == before


def test_the_thread_lane_reports_rejected_ir_and_drops_the_rest():
    broken = TOY.replace("%\".3\" = mul i32 %\".1\", 3", "%\".3\" = mul i32 %\".9\", 3")
    pool = parallel_codegen.CodegenPool(host_target(), 3, 0, in_process=True)
    pool.submit(broken)
    pool.submit(TOY.replace("x86_64-unknown-linux-gnu", host_target().triple))
    with pytest.raises(CompilationError, match="LLVM rejected the generated IR"):
        pool.finish()


def test_packed_objects_round_trip_and_refuse_damage():
    assert unpack_objects(pack_objects([b"\x7fELF-a"])) == [b"\x7fELF-a"]  # one: as it is
    packed = pack_objects([b"first", b"second!"])
    assert unpack_objects(packed) == [b"first", b"second!"]
    for damaged in (packed[:-1], packed + b"x", packed[:10], jit.PACKED_MAGIC + b"\0\0\0\0"):
        with pytest.raises(CompilationError):
            unpack_objects(damaged)
    with pytest.raises(CompilationError, match="not an ELF"):
        NativeModule.from_object(pack_objects([b"first", b"second!"]))


def test_a_worker_that_rejects_its_ir_is_a_compilation_error():
    broken = TOY.replace("%\".3\" = mul i32 %\".1\", 3", "%\".3\" = mul i32 %\".9\", 3")
    with pytest.raises(CompilationError, match="LLVM rejected the generated IR"):
        compile_parts([broken], host_target(), 3)


def test_a_worker_killed_by_llvm_is_a_compilation_error(monkeypatch):
    """An LLVM assertion aborts its process: here, in a worker, it is an error that names the
    signal, and this process lives on."""
    real = subprocess.Popen

    def aborting(args, **kwargs):
        # a worker that dies on its first module, once the header and that module's
        # length line are in (it is sent the next module only after this one's object)
        return real([sys.executable, "-c", ("import os, signal, sys; "
                     "sys.stdin.readline(); sys.stdin.readline(); "
                     "print('Assertion failed', file=sys.stderr, flush=True); "
                     "os.kill(os.getpid(), signal.SIGABRT)")], **kwargs)

    monkeypatch.setattr(parallel_codegen.subprocess, "Popen", aborting)
    with pytest.raises(CompilationError, match=r"LLVM crashed \(SIGABRT\).*Assertion failed"):
        compile_parts([TOY, TOY], host_target(), 3)


def test_a_model_compiled_in_workers_matches_one_process_cold_and_warm(monkeypatch, tmp_path):
    model = wide_graph(40, seed=1)  # MatMul, Conv, BatchNorm, Transpose... kernels
    feeds = random_inputs(model, seed=4)
    monkeypatch.setenv("ONNXC_CODEGEN_JOBS", "1")
    expected = onnxc.compile(model, cache_dir=False).run(None, feeds)

    monkeypatch.setenv("ONNXC_CODEGEN_JOBS", "2")
    monkeypatch.setattr(jit, "PARALLEL_MIN_IR_BYTES", 0)
    # not streamed: no workers started before graph-to-loops (they would take its kernels
    # early, lowering/early_kernels.py), and too small for a stream of its own
    from onnxc import pipeline
    monkeypatch.setattr(pipeline, "PRESTARTED_MIN_WORKER_OPS", 10**9)
    # the module's size depends on the host's kernels (the 8-channel convs are Winograd
    # where a vector holds 8 floats): not streamed on any
    monkeypatch.setattr(pipeline, "STREAMED_MIN_OPS", 10**9)
    split_calls = []
    real_split = jit.split_module
    monkeypatch.setattr(jit, "split_module",
                        lambda text, n: split_calls.append(n) or real_split(text, n))
    cold = onnxc.compile(model, cache_dir=tmp_path)
    assert split_calls == [2]
    for got, want in zip(cold.run(None, feeds), expected, strict=True):
        np.testing.assert_array_equal(got, want)  # the same code, kernel by kernel

    warm = onnxc.compile(model, cache_dir=tmp_path)  # the packed objects, from the cache
    assert warm.from_cache
    for got, want in zip(warm.run(None, feeds), expected, strict=True):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(("prestarted_min_ops", "min_worker_ops", "expected_lanes"), [
    (10**9, 0, ["_ThreadLane", "_Worker"]), (0, 10**9, ["_ThreadLane", "_Worker"]),
    (10**9, 10**9, ["_ThreadLane"])])
def test_a_model_streamed_to_lanes_matches_one_process_cold_and_warm(
        monkeypatch, tmp_path, prestarted_min_ops, min_worker_ops, expected_lanes):
    """The JIT emits a module in chunks that its lanes compile while the next is emitted
    (onnxc/pipeline.py `start_codegen`, `lower_to_llvm_ir`): a thread of this process, and
    a worker process when one was started before graph-to-loops (the graph's forecast
    reached PRESTARTED_MIN_WORKER_OPS) or the module has STREAMED_MIN_WORKER_OPS; the code
    is the same."""
    from onnxc import pipeline

    model = wide_graph(40, seed=2)
    feeds = random_inputs(model, seed=5)
    monkeypatch.setenv("ONNXC_CODEGEN_JOBS", "1")
    expected = onnxc.compile(model, cache_dir=False).run(None, feeds)

    monkeypatch.setenv("ONNXC_CODEGEN_JOBS", "2")
    monkeypatch.setattr(pipeline, "STREAMED_MIN_OPS", 0)
    monkeypatch.setattr(pipeline, "STREAMED_MIN_WORKER_OPS", min_worker_ops)
    monkeypatch.setattr(pipeline, "PRESTARTED_MIN_WORKER_OPS", prestarted_min_ops)
    monkeypatch.setattr(pipeline, "STREAMED_MIN_CHUNK_OPS", 50)
    chunks: list[str] = []
    lanes: list[list[str]] = []
    real_init = jit.PendingNativeModule.__init__

    def recording_init(self, *args, **kwargs):
        real_init(self, *args, **kwargs)
        lanes.append([type(lane).__name__ for lane in self._pool._lanes])

    monkeypatch.setattr(jit.PendingNativeModule, "__init__", recording_init)
    reduced: list[bool] = []
    real_submit = jit.PendingNativeModule.submit

    def recording_submit(self, text, strength_reduction):
        chunks.append(text)
        reduced.append(strength_reduction)
        real_submit(self, text, strength_reduction)

    monkeypatch.setattr(jit.PendingNativeModule, "submit", recording_submit)
    cold = onnxc.compile(model, cache_dir=tmp_path)
    assert lanes == [expected_lanes]
    assert len(chunks) >= 2
    # strength reduction is off exactly in the chunks of convolution kernels
    for text, flag in zip(chunks, reduced, strict=True):
        kernels = [name for name in _defined(text)
                   if parallel_codegen.kernel_of(name) == name and not name.startswith("onnxc")]
        assert flag == any(not re.match(r"conv(_add)?_\d+$", name) for name in kernels)
    assert True in reduced and False in reduced
    defined = [name for text in chunks for name in _defined(text)
               if not name.startswith("onnxc.math.")]  # direct.SHARED_LOWERINGS: per chunk
    assert len(defined) == len(set(defined))  # each function in one chunk
    assert sum("onnxc_entry" in _defined(text) for text in chunks) == 1
    if prestarted_min_ops == 0:  # the lanes took the convolution and GEMM kernels early
        first = [name for name in _defined(chunks[0])
                 if parallel_codegen.kernel_of(name) == name and not name.startswith("onnxc")]
        assert first and all(re.match(r"(conv|conv_add|matmul|gemm|attention)_\d+$", name)
                             for name in first), first
    for got, want in zip(cold.run(None, feeds), expected, strict=True):
        np.testing.assert_array_equal(got, want)

    warm = onnxc.compile(model, cache_dir=tmp_path)
    assert warm.from_cache
    for got, want in zip(warm.run(None, feeds), expected, strict=True):
        np.testing.assert_array_equal(got, want)


def test_a_streamed_module_is_outlined_a_chunk_at_a_time(monkeypatch):
    """The JIT outlines a chunk's parallel loops just before it emits that chunk, so that
    the first chunk reaches the lanes without waiting for the whole module's outlining:
    when the first chunk is emitted, the kernels of the last still have their marked loops;
    once all are emitted, none has, and each body function went out with its kernel."""
    from xdsl.dialects import func

    from onnxc import pipeline
    from onnxc.lowering.to_llvm import direct
    from onnxc.lowering.to_llvm.parallel import PARALLEL_ATTR

    monkeypatch.setenv("ONNXC_CODEGEN_JOBS", "2")
    monkeypatch.setattr(pipeline, "STREAMED_MIN_OPS", 0)
    monkeypatch.setattr(pipeline, "STREAMED_MIN_CHUNK_OPS", 50)
    monkeypatch.setattr(pipeline, "PRESTARTED_MIN_WORKER_OPS", 10**9)
    monkeypatch.setattr(pipeline, "STREAMED_MIN_WORKER_OPS", 10**9)
    # every parallel loop outlined, whatever the host's kernels make of the small layers
    from onnxc.lowering.to_llvm import parallel
    monkeypatch.setattr(parallel, "MIN_PARALLEL_OPS", 0)

    def marked(functions) -> int:
        return sum(PARALLEL_ATTR in op.attributes for f in functions for op in f.walk())

    seen = []
    real_emit = direct._emit_chunk

    def recording_emit(module, chunk, *args):
        later = [f for c in chunks[len(seen) + 1:] for f in c.functions]
        seen.append((marked(chunk.functions), marked(later), len(later),
                     [f.sym_name.data for f in chunk.functions]))
        return real_emit(module, chunk, *args)

    real_plan = direct.plan_chunks
    chunks = []

    def recording_plan(*args):
        chunks[:] = real_plan(*args)
        return chunks

    monkeypatch.setattr(direct, "_emit_chunk", recording_emit)
    monkeypatch.setattr(direct, "plan_chunks", recording_plan)
    model = wide_graph(40, seed=2)
    feeds = random_inputs(model, seed=4)
    compiled = onnxc.compile(model, cache_dir=False, num_threads=2)
    assert len(seen) >= 3
    assert seen[0][0] == 0 and seen[0][1] > 0  # the rest not outlined yet
    assert all(now == 0 for now, _, _, _ in seen)
    bodies = [name for *_, names in seen for name in names if "_par" in name]
    assert bodies
    for *_, names in seen:  # a body function is in its kernel's chunk
        for name in names:
            if "_par" in name:
                assert parallel_codegen.kernel_of(name) in names
    assert not any(isinstance(f, func.FuncOp) and marked([f]) for c in chunks
                   for f in c.functions)
    monkeypatch.setenv("ONNXC_CODEGEN_JOBS", "1")
    expected = onnxc.compile(model, cache_dir=False, num_threads=2).run(None, feeds)
    for got, want in zip(compiled.run(None, feeds), expected, strict=True):
        np.testing.assert_array_equal(got, want)


def test_a_streamed_compile_that_fails_stops_its_workers(monkeypatch):
    """An emitter error in the middle of a streamed module ends the workers already
    started: none is left waiting for input."""
    from onnxc import pipeline
    from onnxc.lowering.to_llvm import direct

    monkeypatch.setenv("ONNXC_CODEGEN_JOBS", "2")
    monkeypatch.setattr(pipeline, "STREAMED_MIN_OPS", 0)
    monkeypatch.setattr(pipeline, "STREAMED_MIN_WORKER_OPS", 0)
    pools = []
    real_init = jit.PendingNativeModule.__init__

    def tracking_init(self, *args, **kwargs):
        real_init(self, *args, **kwargs)
        pools.append(self._pool)

    monkeypatch.setattr(jit.PendingNativeModule, "__init__", tracking_init)

    def failing(*args, **kwargs):
        yield from ()
        raise onnxc.errors.LoweringError("planted emitter failure")

    monkeypatch.setattr(direct, "emit_llvm_chunks", failing)
    with pytest.raises(onnxc.errors.LoweringError, match="planted"):
        onnxc.compile(wide_graph(10, seed=3), cache_dir=False)
    assert pools
    for lane in pools[0]._lanes:
        if isinstance(lane, parallel_codegen._ThreadLane):
            lane._thread.join(timeout=30)
            assert not lane._thread.is_alive()
        else:
            assert lane.process.wait(timeout=30) is not None


def test_spare_workers_are_taken_by_the_pool_or_end_cleanly():
    """SpareWorkers start before the module exists: the pool adopts the ones it needs (its
    worker lane is that process) and the others end at `close`, at the end of their input,
    with status 0 and nothing on stderr."""
    text = STRIDED_LOOP.replace("TRIPLE", host_target().triple)
    spare = parallel_codegen.SpareWorkers(2)
    started = list(spare._processes)
    pool = parallel_codegen.CodegenPool(host_target(), 3, 1, spare=spare)
    spare.close()
    assert [lane.process for lane in pool._lanes] == started[:1]
    pool.submit(text)
    assert pool.finish() == compile_parts([text], host_target(), 3)
    unused = started[1]
    assert unused.wait(timeout=60) == 0


def test_workers_start_before_graph_to_loops_only_for_a_model_forecast_to_need_them(
        monkeypatch):
    """`prestart_codegen` starts the workers after the graph passes when the graph forecasts
    PRESTARTED_MIN_WORKER_OPS loops ops or more (distinct kernels, convolutions weighing
    most): a conv net does, a small graph does not; the compile adopts them, and none is
    left running after it."""
    from onnxc import pipeline
    from onnxc.zoo import benchmark_models

    monkeypatch.setenv("ONNXC_CODEGEN_JOBS", "2")
    monkeypatch.setattr(pipeline, "PRESTARTED_MIN_WORKER_OPS", 1500)
    monkeypatch.setattr(pipeline, "STREAMED_MIN_WORKER_OPS", 10**9)  # none started later
    graphs = []
    real_prestart = pipeline.prestart_codegen

    def recording_prestart(forecast):
        spare = real_prestart(forecast)
        graphs.append((forecast.loops_ops,
                       None if spare is None else list(spare._processes)))
        return spare

    monkeypatch.setattr(pipeline, "prestart_codegen", recording_prestart)
    worker_processes = []
    real_init = jit.PendingNativeModule.__init__

    def recording_init(self, *args, **kwargs):
        real_init(self, *args, **kwargs)
        worker_processes.extend(lane.process for lane in self._pool._lanes
                                if isinstance(lane, parallel_codegen._Worker))

    monkeypatch.setattr(jit.PendingNativeModule, "__init__", recording_init)
    onnxc.compile(wide_graph(3, seed=1), cache_dir=False)
    model = benchmark_models()["squeezenet"]()
    compiled = onnxc.compile(model, cache_dir=False)
    (small, none), (conv_net, started) = graphs
    assert small < 1500 and none is None
    assert conv_net >= 1500 and len(started) == 1
    assert worker_processes == started  # adopted by the compile's pool
    assert started[0].wait(timeout=60) == 0  # it compiled the chunks it took, and ended
    feeds = random_inputs(model, seed=3)
    monkeypatch.setenv("ONNXC_CODEGEN_JOBS", "1")
    expected = onnxc.compile(model, cache_dir=False).run(None, feeds)
    for got, want in zip(compiled.run(None, feeds), expected, strict=True):
        np.testing.assert_array_equal(got, want)


def test_the_loops_forecast_counts_each_distinct_kernel_once():
    """graph-to-loops builds one kernel per op, properties and types, so the forecast
    weighs distinct kernels: six equal ReLUs weigh as one, a ReLU of another shape and a
    convolution add theirs, a reshape (a view) nothing."""
    from onnx import TensorProto, helper

    from onnxc import pipeline

    def relus(shapes: list[list[int]], conv: bool) -> object:
        nodes, names = [], ["x"]
        inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])]
        if conv:
            inputs.append(helper.make_tensor_value_info("w", TensorProto.FLOAT, [4, 4, 3, 3]))
            nodes.append(helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]))
            names = ["c"]
        for i, shape in enumerate(shapes):
            if shape != [1, 4, 8, 8]:
                nodes.append(helper.make_node("Reshape", [names[-1], "s"], [f"r{i}"]))
                names.append(f"r{i}")
            nodes.append(helper.make_node("Relu", [names[-1]], [f"y{i}"]))
            names.append(f"y{i}")
        graph = helper.make_graph(
            nodes, "relus", inputs,
            [helper.make_tensor_value_info(names[-1], TensorProto.FLOAT, None)],
            [helper.make_tensor("s", TensorProto.INT64, [2], [4, 64])])
        return pipeline.import_model(helper.make_model(
            graph, opset_imports=[helper.make_opsetid("", 17)]))

    one_kernel = pipeline.forecast_kernels(relus([[1, 4, 8, 8]] * 6, conv=False)).loops_ops
    assert one_kernel == pipeline.FORECAST_KERNEL_OPS
    two_shapes = pipeline.forecast_kernels(
        relus([[1, 4, 8, 8]] * 3 + [[4, 64]], conv=False)).loops_ops
    with_conv = pipeline.forecast_kernels(relus([[1, 4, 8, 8]] * 6, conv=True)).loops_ops
    assert with_conv == one_kernel + 3 * pipeline.FORECAST_KERNEL_OPS
    assert two_shapes == 2 * pipeline.FORECAST_KERNEL_OPS  # the reshape is a view: none


def test_few_early_kernels_are_split_evenly_over_the_lanes(monkeypatch):
    """A model with few convolution and GEMM kernels (the 2-layer BERT has five) gives
    each lane its share of them, ceil(kernels / lanes) per chunk, instead of one chunk
    that one lane compiled alone while the other idled; the code is the same."""
    from onnx import TensorProto, helper, numpy_helper

    from onnxc import pipeline

    rng = np.random.default_rng(3)
    widths = [16, 24, 32, 40, 48]
    nodes, inits, last = [], [], "x"
    for i, (k, n) in enumerate(zip(widths, widths[1:] + [8])):
        inits.append(numpy_helper.from_array(
            rng.standard_normal((k, n)).astype(np.float32), f"w{i}"))
        nodes.append(helper.make_node("MatMul", [last, f"w{i}"], [f"y{i}"]))
        last = f"y{i}"
    graph = helper.make_graph(
        nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [32, 16])],
        [helper.make_tensor_value_info(last, TensorProto.FLOAT, [32, 8])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    assert pipeline.forecast_kernels(pipeline.import_model(model)).early_kernels == 5
    feeds = {"x": rng.standard_normal((32, 16)).astype(np.float32)}
    monkeypatch.setenv("ONNXC_CODEGEN_JOBS", "1")
    expected = onnxc.compile(model, cache_dir=False).run(None, feeds)

    monkeypatch.setenv("ONNXC_CODEGEN_JOBS", "2")
    monkeypatch.setattr(pipeline, "PRESTARTED_MIN_WORKER_OPS", 0)
    chunks: list[str] = []
    real_submit = jit.PendingNativeModule.submit

    def recording_submit(self, text, strength_reduction):
        chunks.append(text)
        real_submit(self, text, strength_reduction)

    monkeypatch.setattr(jit.PendingNativeModule, "submit", recording_submit)
    compiled = onnxc.compile(model, cache_dir=False)
    early = [[name for name in _defined(text) if re.match(r"matmul_\d+$", name)]
             for text in chunks]
    assert [len(names) for names in early if names] == [3, 2]
    for got, want in zip(compiled.run(None, feeds), expected, strict=True):
        np.testing.assert_array_equal(got, want)


def test_chunks_start_small_then_go_largest_first_with_convolutions_apart():
    """`plan_chunks`: the first chunk is about half a chunk of the smallest kernels (every
    lane waits for it), then the largest kernels come first and the smallest last (so the
    lanes end together); a kernel stays with its outlined bodies, convolution kernels (which
    skip strength reduction) share no chunk with the others, and every function is in one
    chunk. Ties keep the module's order."""
    from xdsl.dialects import arith, func
    from xdsl.dialects.builtin import IntegerAttr, ModuleOp, StringAttr, i32
    from xdsl.ir import Block, Region

    from onnxc.lowering.to_llvm.direct import plan_chunks

    def function(name: str, ops: int, kind: str | None) -> func.FuncOp:
        block = Block()
        block.add_ops([arith.ConstantOp(IntegerAttr(k, i32)) for k in range(ops - 2)])
        block.add_op(func.ReturnOp())
        f = func.FuncOp(name, ((), ()), Region(block), visibility="private")
        if kind is not None:
            f.attributes["onnxc.kernel"] = StringAttr(kind)
        return f

    sizes = {"conv_0": 400, "conv_1": 100, "conv_2": 900, "add_0": 50, "conv_3": 300,
             "gemm_0": 700, "relu_0": 60, "gemm_1": 200, "main": 120, "conv_4": 80}
    functions = [function(name, ops, None if name == "main" else
                          f"graph.{name.rsplit('_', 1)[0]}") for name, ops in sizes.items()]
    functions.insert(5, function("conv_3_par0", 500, None))  # its body: conv_3 weighs 800
    chunks = plan_chunks(ModuleOp(functions), parts=4, smallest=100, largest=10_000)
    names = [[f.sym_name.data for f in chunk.functions] for chunk in chunks]
    assert sorted(name for chunk in names for name in chunk) == sorted(
        [*sizes, "conv_3_par0"])
    # 3,410 ops: chunks of 852; the first, of the smallest kind, stops at the first conv
    assert names[0] == ["add_0", "relu_0"]
    # then the largest first, the kinds apart: the convolutions (up to 900) before the rest
    assert names[1:] == [["conv_2"], ["conv_3", "conv_3_par0", "conv_0"], ["conv_1", "conv_4"],
                         ["gemm_0", "gemm_1"], ["main"]]
    assert [c.strength_reduction for c in chunks] == [True, False, False, False, True, True]
    assert sum(c.ops for c in chunks) == sum(sizes.values()) + 500
