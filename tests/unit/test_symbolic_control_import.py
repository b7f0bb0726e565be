"""If / Loop / Scan over symbolic dimensions, and shape data that must exist at run time.

torch exports `for t in range(x.size(0))` as a Loop whose trip count is Gather(Shape(x)):
with a symbolic `seq` that is shape data, so the importer makes a counted `graph.loop` with
`iterations = seq`, its trip count operand a `graph.symbolic_constant` (the sizes computed at
run time), and scan outputs / appended sequences that stack to [seq, ...]. Scan over a
symbolic axis is the same loop; a reversed scan reads the last index `seq - 1` as run-time
data. Checked at import (types, iteration counts), through onnxc's graph evaluator against
onnxruntime at several sizes, and compiled (cold, then warm from the cache) against
onnxruntime. Tolerances: rtol 1e-5 / atol 1e-6 for the f32 tanh recurrences (the same ops in
the same order), exact for data movement and integer shape data.
"""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from xdsl.context import Context
from xdsl.dialects.func import FuncOp

import onnxc
from onnxc.dialects import graph
from onnxc.dialects.symbolic_dims import SymDim, sym_max
from onnxc.errors import UnsupportedOpError
from onnxc.frontend import import_onnx
from onnxc.passes.constant_folding import FoldConstantOpsPass
from onnxc.passes.cse import CsePass
from onnxc.passes.evaluator import evaluate, evaluate_op
from tests.ir_helpers import parse_graph
from tests.single_op import graph_model

SEQ = SymDim.symbol("seq")
F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
RTOL, ATOL = 1e-5, 1e-6


def vi(name, shape, elem=F):
    return helper.make_tensor_value_info(name, elem, shape)


def const(name, array):
    return helper.make_node("Constant", [], [name],
                            value=numpy_helper.from_array(np.asarray(array), name))


def model(nodes, inputs, outputs, initializers=(), opset=17):
    return graph_model(nodes, inputs, outputs, initializers=list(initializers), opset=opset,
                       ir_version=8)


def weights(name, *shape):
    rng = np.random.default_rng(len(name))
    return numpy_helper.from_array((rng.standard_normal(shape) * 0.3).astype(np.float32), name)


def main(m: onnx.ModelProto) -> FuncOp:
    module = import_onnx(m)
    module.verify()
    (f,) = [op for op in module.ops if isinstance(op, FuncOp)]
    return f


def only(f: FuncOp, cls):
    (op,) = [op for op in f.walk() if isinstance(op, cls)]
    return op


def feeds_for(m: onnx.ModelProto, n: int, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed + n)
    out = {}
    for i in m.graph.input:
        dims = [n if d.dim_param else d.dim_value for d in i.type.tensor_type.shape.dim]
        if i.type.tensor_type.elem_type == B:
            out[i.name] = np.array(rng.random() < 0.5)
        else:
            out[i.name] = rng.standard_normal(dims).astype(np.float32)
    return out


def reference(m: onnx.ModelProto):
    """onnxruntime (onnx.reference's Scan handles neither other axes nor directions)."""
    return ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])


def check_evaluator(m: onnx.ModelProto, sizes=(1, 3, 6)) -> None:
    """onnxc's graph evaluator on the imported IR (one import, every size) = onnxruntime."""
    module = import_onnx(m)
    session = reference(m)
    for n in sizes:
        feeds = feeds_for(m, n)
        for ours, theirs in zip(evaluate(module, feeds), session.run(None, feeds),
                                strict=True):
            assert ours.shape == theirs.shape
            np.testing.assert_allclose(ours, theirs, rtol=RTOL, atol=ATOL)


def check_compiled(m: onnx.ModelProto, tmp_path, sizes=(1, 4, 9)) -> None:
    """One compile (cold, then warm from the cache) runs every size like onnxruntime."""
    cold = onnxc.compile(m, cache_dir=tmp_path)
    warm = onnxc.compile(m, cache_dir=tmp_path)
    assert warm.from_cache
    session = reference(m)
    for compiled in (cold, warm):
        for n in sizes:
            feeds = feeds_for(m, n)
            got = compiled(*feeds.values())
            for ours, theirs in zip(got, session.run(None, feeds), strict=True):
                assert ours.shape == theirs.shape
                np.testing.assert_allclose(ours, theirs, rtol=RTOL, atol=ATOL)


# ----------------------------------------------------------------------------- models


def counted_rnn(collect: bool = False) -> onnx.ModelProto:
    """torch's `for t in range(x.size(0)): h = tanh(W [x[t:t+1], h] + b)` (countedrnn), or
    also appending every h to a list stacked at the end (collect)."""
    body = helper.make_graph(
        [const("one", np.array(1, np.int64)), const("zero1", np.array([0], np.int64)),
         helper.make_node("Add", ["t", "one"], ["t1"]),
         helper.make_node("Unsqueeze", ["t", "zero1"], ["start"]),
         helper.make_node("Unsqueeze", ["t1", "zero1"], ["end"]),
         helper.make_node("Slice", ["x", "start", "end", "zero1"], ["row"]),
         helper.make_node("Concat", ["row", "h"], ["rh"], axis=1),
         helper.make_node("Gemm", ["rh", "w", "b"], ["pre"], transB=1),
         helper.make_node("Tanh", ["pre"], ["h2"]),
         helper.make_node("Identity", ["c"], ["c2"]),
         *([helper.make_node("SequenceInsert", ["hs", "h2"], ["hs2"])] if collect else [])],
        "body",
        [vi("t", [], I64), vi("c", [], B), vi("h", [1, 4]),
         *([helper.make_tensor_sequence_value_info("hs", F, None)] if collect else [])],
        [vi("c2", [], B), vi("h2", [1, 4]),
         *([helper.make_tensor_sequence_value_info("hs2", F, None)] if collect else [])])
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        const("zero", np.array(0, np.int64)),
        helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
        const("true", np.array(True)),
        const("h0", np.zeros((1, 4), np.float32)),
    ]
    loop_in = ["n", "true", "h0"]
    outputs = [vi("h", None)]
    if collect:
        nodes.append(helper.make_node("SequenceEmpty", [], ["hs0"], dtype=F))
        loop_in.append("hs0")
    loop_out = ["h", "hs"] if collect else ["h"]
    nodes.append(helper.make_node("Loop", loop_in, loop_out, body=body))
    if collect:
        nodes.append(helper.make_node("ConcatFromSequence", ["hs"], ["stack"], axis=0,
                                      new_axis=1))
        outputs.append(vi("stack", None))
    return model(nodes, [vi("x", ["seq", 3])], outputs, [weights("w", 4, 7), weights("b", 4)])


def scan(reverse: bool) -> onnx.ModelProto:
    """A running sum over the symbolic axis 1 of x, forwards or backwards, also emitting
    tanh(sum) per step (stacked on output axis 1, in the same direction)."""
    body = helper.make_graph(
        [helper.make_node("Add", ["acc", "xt"], ["acc2"]),
         helper.make_node("Tanh", ["acc2"], ["out"])],
        "body", [vi("acc", [2]), vi("xt", [2])], [vi("acc2", [2]), vi("out", [2])])
    direction = [1] if reverse else [0]
    node = helper.make_node("Scan", ["init", "x"], ["total", "ys"], body=body,
                            num_scan_inputs=1, scan_input_axes=[1],
                            scan_input_directions=direction, scan_output_axes=[1],
                            scan_output_directions=direction)
    return model([const("init", np.zeros(2, np.float32)), node], [vi("x", [2, "seq"])],
                 [vi("total", [2]), vi("ys", [2, "seq"])])


def symbolic_if() -> onnx.ModelProto:
    then = helper.make_graph([helper.make_node("Relu", ["x"], ["a"])], "then", [],
                             [vi("a", ["seq", 4])])
    other = helper.make_graph([helper.make_node("Neg", ["x"], ["b"])], "else", [],
                              [vi("b", ["seq", 4])])
    return model([helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other)],
                 [vi("c", [], B), vi("x", ["seq", 4])], [vi("y", ["seq", 4])])


def shape_as_float() -> onnx.ModelProto:
    """A shape needed as run-time data: cast to float, scaled, and returned as it is."""
    return model([helper.make_node("Shape", ["x"], ["s"]),
                  helper.make_node("Cast", ["s"], ["sf"], to=F),
                  helper.make_node("Mul", ["sf", "k"], ["y"])],
                 [vi("x", ["seq", 3, "batch"])], [vi("y", [3]), vi("s", [3], I64)],
                 [numpy_helper.from_array(np.array([1.0, 0.5, 2.0], np.float32), "k")])


# ----------------------------------------------------------------------------- import


def test_loop_over_a_symbolic_dimension_runs_seq_times():
    f = main(counted_rnn())
    loop = only(f, graph.LoopOp)
    assert loop.iteration_count() == SEQ
    trips = loop.max_trips.owner
    assert isinstance(trips, graph.SymbolicConstantOp)
    assert trips.dims() == [SEQ] and str(trips.output.type) == "tensor<i64>"
    assert [str(r.type) for r in loop.outputs] == ["tensor<1x4xf32>"]
    # x[t:t+1] is a gather of row t, checked against [0, seq) at run time
    gather = only(f, graph.GatherOp)
    assert gather.nonnegative is not None
    assert str(gather.data.type) == 'tensor<?x3xf32, #graph.dims<["seq"]>>'


def test_appended_sequence_stacks_seq_rows():
    f = main(counted_rnn(collect=True))
    loop = only(f, graph.LoopOp)
    assert loop.iteration_count() == SEQ
    assert [str(r.type) for r in loop.outputs] == [
        "tensor<1x4xf32>", 'tensor<?x1x4xf32, #graph.dims<["seq"]>>']
    assert [str(t) for t in f.function_type.outputs.data] == [
        "tensor<1x4xf32>", 'tensor<?x1x4xf32, #graph.dims<["seq"]>>']


@pytest.mark.parametrize("reverse", [False, True])
def test_scan_over_a_symbolic_axis(reverse):
    f = main(scan(reverse))
    loop = only(f, graph.LoopOp)
    assert loop.iteration_count() == SEQ
    assert [str(r.type) for r in loop.outputs] == [
        "tensor<2xf32>", 'tensor<?x2xf32, #graph.dims<["seq"]>>']
    data = {tuple(op.dims()) for op in f.walk() if isinstance(op, graph.SymbolicConstantOp)}
    # the trip count; backwards also the last index seq-1 (the body's N-1-i)
    assert data == ({(SEQ,), (SEQ - 1,)} if reverse else {(SEQ,)})
    assert [str(t) for t in f.function_type.outputs.data] == [
        "tensor<2xf32>", 'tensor<2x?xf32, #graph.dims<["seq"]>>']


def test_if_with_symbolic_branches():
    f = main(symbolic_if())
    op = only(f, graph.IfOp)
    assert [str(r.type) for r in op.outputs] == ['tensor<?x4xf32, #graph.dims<["seq"]>>']


def test_if_branches_of_different_sizes_define_a_run_size():
    """Branches yielding [seq, 4] and [past, 4]: the If's rows are a run symbol of its own
    (bounded by max(seq, past)), and the model runs either branch as onnxruntime does."""
    then = helper.make_graph([helper.make_node("Relu", ["x"], ["a"])], "then", [],
                             [vi("a", None)])
    other = helper.make_graph([helper.make_node("Neg", ["z"], ["b"])], "else", [],
                              [vi("b", None)])
    m = model([helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other)],
              [vi("c", [], B), vi("x", ["seq", 4]), vi("z", ["past", 4])], [vi("y", None)])
    assert 'defines = ["If_0_out0_dim0"]' in str(import_onnx(m))
    compiled = onnxc.compile(m, cache_dir=False, quiet=True)
    session = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    for c, seq, past in ((True, 3, 5), (False, 3, 5), (True, 0, 2), (False, 7, 1)):
        feeds = {"c": np.array(c), "x": rng.standard_normal((seq, 4)).astype(np.float32),
                 "z": rng.standard_normal((past, 4)).astype(np.float32)}
        np.testing.assert_array_equal(compiled.run(None, feeds)[0],
                                      session.run(None, feeds)[0])


def shorter(m: onnx.ModelProto) -> onnx.ModelProto:
    """`m` with its Loop's trip count seq - 2 (negative for seq = 1)."""
    nodes = list(m.graph.node)
    gather = next(i for i, n in enumerate(nodes) if n.op_type == "Gather")
    nodes[gather + 1:gather + 1] = [const("two", np.array(2, np.int64)),
                                    helper.make_node("Sub", ["n", "two"], ["n2"])]
    next(n for n in nodes if n.op_type == "Loop").input[0] = "n2"
    del m.graph.node[:]
    m.graph.node.extend(nodes)
    return m


def test_a_trip_count_that_may_be_negative_is_clamped_at_zero():
    """seq - 2 is negative for seq = 1, where ONNX runs the loop no times: the loop runs
    max(seq - 2, 0) times, and stacks that many rows (test_compiled_matches_onnxruntime
    runs both at seq = 1 and longer)."""
    for collect in (False, True):
        loop = only(main(shorter(counted_rnn(collect))), graph.LoopOp)
        assert loop.iteration_count() == sym_max(SEQ - 2, 0)
    assert graph.shape_of(loop.results[-1])[0] == sym_max(SEQ - 2, 0)


def test_shape_data_at_run_time_is_a_symbolic_constant():
    f = main(shape_as_float())
    (data,) = [op for op in f.walk() if isinstance(op, graph.SymbolicConstantOp)]
    assert [str(d) for d in data.dims()] == ["seq", "3", "batch"]
    assert data.size_symbols() == {"seq", "batch"}
    users = {type(use.operation).__name__ for use in data.output.uses}
    assert users == {"CastOp", "ReturnOp"}  # cast to float, and the graph output `s`


# ----------------------------------------------------------------------------- numerics


@pytest.mark.parametrize("build", [
    counted_rnn, lambda: counted_rnn(collect=True), lambda: scan(False), lambda: scan(True),
    symbolic_if, shape_as_float, lambda: shorter(counted_rnn()),
], ids=["countedrnn", "collect", "scan", "scan-reversed", "if", "shape-as-float", "shorter"])
def test_evaluator_matches_reference(build):
    check_evaluator(build())


@pytest.mark.parametrize("build", [
    counted_rnn, lambda: counted_rnn(collect=True), lambda: scan(False), lambda: scan(True),
    symbolic_if, lambda: shorter(counted_rnn()),
], ids=["countedrnn", "collect", "scan", "scan-reversed", "if", "shorter"])
def test_compiled_matches_onnxruntime(build, tmp_path):
    check_compiled(build(), tmp_path)


def test_stacking_a_trip_count_that_may_be_negative(tmp_path):
    """max(seq - 2, 0) rows (onnxruntime cannot stack an empty list, so no seq below 3)."""
    check_compiled(shorter(counted_rnn(collect=True)), tmp_path, sizes=(3, 4, 9))


def test_symbolic_constant_compiles_to_the_sizes_of_each_run(tmp_path):
    m = shape_as_float()
    check_compiled(m, tmp_path, sizes=(1, 5))
    compiled = onnxc.compile(m, cache_dir=tmp_path)
    for seq, batch in ((2, 7), (11, 1)):
        y, s = compiled(np.zeros((seq, 3, batch), np.float32))
        np.testing.assert_array_equal(s, [seq, 3, batch])
        np.testing.assert_array_equal(y, [seq, 1.5, 2.0 * batch])


# ----------------------------------------------------------------------------- passes

TWO_SIZES = """
func.func @main(%x: tensor<?x3xf32, #graph.dims<["seq"]>>) -> (tensor<2xf32>, tensor<2xi64>) {
  %a = graph.symbolic_constant {values = ["seq", "3"]} : tensor<2xi64>
  %b = graph.symbolic_constant {values = ["seq", "3"]} : tensor<2xi64>
  %f = graph.cast(%a) : (tensor<2xi64>) -> tensor<2xf32>
  func.return %f, %b : tensor<2xf32>, tensor<2xi64>
}
"""


def test_passes_keep_shape_data_for_run_time():
    """fold-constant-ops leaves it (no sizes at compile time), cse merges equal ones, the
    evaluator computes it only once the inputs bound its symbols."""
    module = parse_graph(TWO_SIZES)
    FoldConstantOpsPass().apply(Context(), module)
    CsePass().apply(Context(), module)
    ops = [op.name for op in module.walk() if op.name.startswith("graph.")]
    assert ops == ["graph.symbolic_constant", "graph.cast"]
    (data,) = [op for op in module.walk() if isinstance(op, graph.SymbolicConstantOp)]
    with pytest.raises(UnsupportedOpError, match="need the sizes of their symbols"):
        evaluate_op(data, [])
    f, s = evaluate(module, [np.zeros((7, 3), np.float32)])
    np.testing.assert_array_equal(f, np.array([7, 3], np.float32))
    np.testing.assert_array_equal(s, [7, 3])
