"""Invalid IR after a pass is an InternalCompilerError naming the pass, the op and the ONNX
node, from `onnxc.compile`, `onnxc.optimize`, the pipeline runner and `onnxc-opt`.

The broken passes below exist only here (registered for one test with monkeypatch): one
corrupts a graph op in place, one plants the exact fault of the poolformer miscompile (a
memref.load with no index into a rank-1 memref, which xDSL's verifier reports with a bare
`Exception`) inside a kernel.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
from onnx import TensorProto, helper
from xdsl.context import Context
from xdsl.dialects import arith, func, memref
from xdsl.dialects.builtin import DenseArrayBase, FloatAttr, ModuleOp, f32, i64
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

import onnxc
from onnxc.dialects import graph
from onnxc.errors import InternalCompilerError, OnnxcError
from onnxc import pipeline
from onnxc.registry import ONNXC_PASSES
from onnxc.tools import opt


@dataclass(frozen=True)
class BreakReduceAxes(ModulePass):
    """Points every graph.reduce_mean at an axis its input does not have."""

    name = "test-break-reduce-axes"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for reduce in op.walk():
            if isinstance(reduce, graph.ReduceMeanOp):
                reduce.properties["axes"] = DenseArrayBase.from_list(i64, [7])


@dataclass(frozen=True)
class DropLoadIndices(ModulePass):
    """Adds, at the start of the first kernel, a load without indices from its first
    memref argument (what the LayerNorm kernel used to emit for a one-value bias)."""

    name = "test-drop-load-indices"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        kernel = next(f for f in op.ops if isinstance(f, func.FuncOp) and "onnxc.kernel"
                      in f.attributes)
        block = kernel.body.block
        Rewriter.insert_op(memref.LoadOp.get(block.args[0], []), InsertPoint.at_start(block))


@dataclass(frozen=True)
class DropStoreIndices(ModulePass):
    """As DropLoadIndices, but a store: no later pass may remove it as dead code."""

    name = "test-drop-store-indices"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        kernel = next(f for f in op.ops if isinstance(f, func.FuncOp) and "onnxc.kernel"
                      in f.attributes)
        block = kernel.body.block
        zero = arith.ConstantOp(FloatAttr(0.0, f32))
        store = memref.StoreOp.get(zero.result, block.args[0], [])
        Rewriter.insert_op([zero, store], InsertPoint.at_start(block))


@pytest.fixture
def broken_passes(monkeypatch):
    monkeypatch.setitem(ONNXC_PASSES, BreakReduceAxes.name, lambda: BreakReduceAxes)
    monkeypatch.setitem(ONNXC_PASSES, DropLoadIndices.name, lambda: DropLoadIndices)
    monkeypatch.setitem(ONNXC_PASSES, DropStoreIndices.name, lambda: DropStoreIndices)


def mean_model():
    """y = ReduceMean(x * 2) over the last axis; the nodes are named."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 1])
    nodes = [helper.make_node("Mul", ["x", "two"], ["doubled"], name="scale_node"),
             helper.make_node("ReduceMean", ["doubled"], ["y"], axes=[1], name="mean_node")]
    two = helper.make_tensor("two", TensorProto.FLOAT, [], [2.0])
    model = helper.make_model(helper.make_graph(nodes, "g", [x], [y], [two]),
                              opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


@pytest.mark.parametrize("entry", ["optimize", "compile"])
def test_graph_pass_is_named_with_its_node(broken_passes, entry: str):
    # three passes: the runner verifies once, then replays them one at a time to find the
    # culprit (the first and last are harmless)
    passes = f"fold-constant-ops,{BreakReduceAxes.name},drop-no-op"
    with pytest.raises(InternalCompilerError) as caught:
        if entry == "optimize":
            onnxc.optimize(mean_model(), pass_pipeline=passes)
        else:
            onnxc.compile(mean_model(), pass_pipeline=passes, cache_dir=False)
    err = caught.value
    assert err.pass_name == BreakReduceAxes.name
    assert err.op_name == "graph.reduce_mean"
    assert err.origin == "ONNX node 'mean_node'"
    message = str(err)
    assert "\n" not in message
    assert message.startswith(f"internal compiler error: invalid IR after pass "
                              f"'{BreakReduceAxes.name}': 'graph.reduce_mean' op ")
    assert isinstance(err, OnnxcError)


def test_loops_stage_fault_is_found_by_replay(broken_passes):
    """The poolformer failure mode: xDSL's memref verifier raises a bare Exception for the
    load; it becomes an InternalCompilerError naming the pass, the kernel and the node."""
    module = onnxc.import_onnx(mean_model())
    ctx = pipeline.make_context()
    pipeline.run_passes(ctx, module, "")  # the graph stage: starts the module's history
    stage = (*pipeline.GRAPH_TO_LOOPS, DropLoadIndices.name, "bind-constants")
    with pytest.raises(InternalCompilerError) as caught:
        pipeline.run_passes(ctx, module, stage)
    err = caught.value
    assert err.pass_name == DropLoadIndices.name
    assert err.op_name == "memref.load"
    assert "expected an index for each dimension" in err.detail
    assert err.origin.startswith("in kernel @")
    assert err.origin.endswith("called for ONNX node 'scale_node'")


def test_deferred_verification_blames_the_unverified_pass(broken_passes):
    """graph -> loops runs unverified (`verify=False`, as onnxc.compile does); the fault is
    found when the next stage verifies, or crashes on it, and blamed on the pass that made it."""
    module = onnxc.import_onnx(mean_model())
    ctx = pipeline.make_context()
    pipeline.run_passes(ctx, module, "")
    stage = (*pipeline.GRAPH_TO_LOOPS, DropLoadIndices.name)
    pipeline.run_passes(ctx, module, stage, verify=False)  # no error yet
    with pytest.raises(InternalCompilerError) as caught:
        pipeline.run_passes(ctx, module, pipeline.LOOPS_ABI)
    assert caught.value.pass_name == DropLoadIndices.name
    assert caught.value.op_name == "memref.load"


@pytest.mark.parametrize("verify_loops", ["1", "0"])
def test_compile_defers_lowering_verification_and_still_names_the_pass(broken_passes,
                                                                         monkeypatch,
                                                                         verify_loops):
    """onnxc.compile verifies graph -> loops and the entry ABI only before emitting LLVM IR,
    and only with ONNXC_VERIFY_IR=1 (the suite's setting): a fault planted in the first
    stage still surfaces as that pass's error, whether that verification catches it or,
    without it, the LLVM IR emitter trips on the bad store and the module is verified then."""
    monkeypatch.setenv("ONNXC_VERIFY_IR", verify_loops)
    monkeypatch.setattr(pipeline, "GRAPH_TO_LOOPS",
                        (*pipeline.GRAPH_TO_LOOPS, DropStoreIndices.name))
    with pytest.raises(InternalCompilerError) as caught:
        onnxc.compile(mean_model(), cache_dir=False)
    assert caught.value.pass_name == DropStoreIndices.name
    assert caught.value.op_name == "memref.store"
    assert caught.value.origin.startswith("in kernel @")


def test_unreproducible_failure_names_the_candidates(broken_passes):
    """A module edited outside the runner cannot be replayed: every pass of the failing
    pipeline is named instead of a guess."""
    module = onnxc.import_onnx(mean_model())
    ctx = pipeline.make_context()
    pipeline.run_passes(ctx, module, "fold-constant-ops")
    BreakReduceAxes().apply(ctx, module)  # not through the runner: not in the history
    with pytest.raises(InternalCompilerError) as caught:
        pipeline.run_passes(ctx, module, "drop-no-op,cse")
    assert caught.value.pass_name is None
    assert caught.value.candidates == ["drop-no-op", "cse"]
    assert "after one of the passes 'drop-no-op', 'cse'" in str(caught.value)


def test_invalid_input_module_is_blamed_on_no_pass():
    module = onnxc.import_onnx(mean_model())
    BreakReduceAxes().apply(pipeline.make_context(), module)
    with pytest.raises(InternalCompilerError, match="invalid IR before any pass") as caught:
        pipeline.run_passes(pipeline.make_context(), module, "")
    assert caught.value.pass_name is None and caught.value.candidates == []


def test_onnxc_opt_prints_one_located_line(broken_passes, tmp_path, capsys):
    source = tmp_path / "mean.mlir"
    source.write_text(str(onnxc.import_onnx(mean_model())))
    status = opt.main([str(source), "-p", f"convert-graph-to-loops,{DropLoadIndices.name}"])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 1
    assert len(err) == 1, err
    assert err[0].startswith(f"error: internal compiler error: invalid IR after pass "
                             f"'{DropLoadIndices.name}': 'memref.load' op expected an index "
                             "for each dimension (in kernel @")


def test_valid_pipelines_are_unaffected():
    model = mean_model()
    x = np.arange(16, dtype=np.float32).reshape(2, 8)
    (y,) = onnxc.compile(model, cache_dir=False).run(None, {"x": x})
    np.testing.assert_allclose(y, (2 * x).mean(axis=1, keepdims=True), rtol=1e-6)


def test_onnxc_opt_locates_a_broken_input_op(broken_passes, tmp_path, capsys):
    """An op of the input file that a pass broke in place is reported at its line."""
    source = tmp_path / "mean.mlir"
    text = str(onnxc.import_onnx(mean_model()))
    source.write_text(text)
    line = next(i for i, s in enumerate(text.splitlines(), 1) if "graph.reduce_mean" in s)
    status = opt.main([str(source), "-p", f"cse,{BreakReduceAxes.name}"])
    (err,) = capsys.readouterr().err.strip().splitlines()
    assert status == 1
    assert err.startswith(f"{source}:{line}:")
    assert (f"error: internal compiler error: invalid IR after pass '{BreakReduceAxes.name}': "
            "'graph.reduce_mean' op axis 7 out of range for rank 2") in err


@pytest.mark.parametrize("verify", ["1", "0"])
def test_a_fault_from_outlining_a_streamed_chunk_names_the_pass(monkeypatch, verify):
    """The JIT outlines a streamed module's parallel loops a chunk at a time, outside the
    pass runner (pipeline._outlined_one_by_one): a fault it plants is still that pass's
    error, found by verifying the chunk (ONNXC_VERIFY_IR=1) or, without it, when the
    emitter trips on it and the module is verified then."""
    from onnxc.lowering.to_llvm import parallel

    real = parallel.outline_parallel_loops

    def planting(fn, num_threads, *options):
        if "onnxc.kernel" in fn.attributes:
            zero = arith.ConstantOp(FloatAttr(0.0, f32))
            store = memref.StoreOp.get(zero.result, fn.body.block.args[0], [])
            Rewriter.insert_op([zero, store], InsertPoint.at_start(fn.body.block))
        return real(fn, num_threads, *options)

    monkeypatch.setattr(parallel, "outline_parallel_loops", planting)
    monkeypatch.setenv("ONNXC_VERIFY_IR", verify)
    monkeypatch.setenv("ONNXC_CODEGEN_JOBS", "2")
    monkeypatch.setattr(pipeline, "STREAMED_MIN_OPS", 0)
    monkeypatch.setattr(pipeline, "PRESTARTED_MIN_WORKER_OPS", 10**9)
    streamed = []
    real_start = pipeline.start_codegen

    def recording_start(*args):
        started = real_start(*args)
        streamed.append(started is not None)
        return started

    monkeypatch.setattr(pipeline, "start_codegen", recording_start)
    with pytest.raises(InternalCompilerError) as caught:
        onnxc.compile(mean_model(), cache_dir=False, num_threads=2)
    assert streamed == [True]
    assert caught.value.pass_name == "outline-parallel-loops"
    assert caught.value.op_name == "memref.store"
