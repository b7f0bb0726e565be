"""Loops whose sizes change from one iteration to the next, the forms torchvision's Mask
R-CNN writes: a carried value the body appends a row to (`res = torch.cat([res, row])`,
frontend/onnx_loop_appends.py) and run sizes defined in the body, one value per iteration
(Resize sizes from each box; lowering/graph_to_loops/loop_sizes.py). Compiled once, run at
several sizes, cold and warm; onnxruntime is the reference, compared exactly (data
movement, nearest resize and sums of small integers in f32).
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnxc
from onnxc.errors import UnsupportedOpError
from tests.single_op import graph_model

ort = pytest.importorskip("onnxruntime")

F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL


def _info(name, el, shape):
    return helper.make_tensor_value_info(name, el, shape)


def _model(nodes, inputs, outputs, inits=()) -> onnx.ModelProto:
    return graph_model(nodes, inputs, outputs, initializers=list(inits), opset=17,
                       ir_version=8)


def _loop(body_nodes, carried_in, carried_out, scans=(), extra_body_inits=()):
    """A Loop body graph (iteration i, condition, carried values) -> (condition, carried,
    scan outputs)."""
    return helper.make_graph(
        [helper.make_node("Identity", ["cond"], ["cond_out"]), *body_nodes], "body",
        [_info("i", I64, []), _info("cond", B, []), *carried_in],
        [_info("cond_out", B, []), *carried_out, *scans], list(extra_body_inits))


def _append_model(axis: int, with_initial: bool, prepend: bool = False) -> onnx.ModelProto:
    """rows of x (selected by the loop's count), doubled, appended to `acc` along `axis`
    (0: [k, W] grows by [1, W]; 1: [W, k] grows by [W, 1])."""
    piece = "row_t" if axis else "row"
    body = _loop([
        helper.make_node("Gather", ["x", "i"], ["picked"], axis=0),  # [W]
        helper.make_node("Add", ["picked", "picked"], ["doubled"]),
        helper.make_node("Unsqueeze", ["doubled", "ax"], ["row"]),  # [1, W]
        *([helper.make_node("Transpose", ["row"], ["row_t"], perm=[1, 0])] if axis else []),
        helper.make_node("Concat", [piece, "acc"] if prepend else ["acc", piece], ["acc_out"],
                         axis=axis),
    ], [_info("acc", F, None)], [_info("acc_out", F, None)],
        extra_body_inits=[numpy_helper.from_array(np.array([0], np.int64), "ax")])
    nodes = [
        helper.make_node("Shape", ["x"], ["xs"]),
        helper.make_node("Gather", ["xs", "zero"], ["n"], axis=0),
        helper.make_node("Loop", ["n", "", "init"], ["final"], body=body),
    ]
    inits = [numpy_helper.from_array(np.array(0, np.int64), "zero")]
    inputs = [_info("x", F, ["n", "w"])]
    if with_initial:
        inputs.append(_info("init", F, ["k", "w"] if axis == 0 else ["w", "k"]))
    else:  # an empty start, the torch form: torch.zeros(0, W)
        nodes.insert(0, helper.make_node("Shape", ["x"], ["xs0"]))
        nodes.insert(1, helper.make_node("Slice", ["xs0", "one", "two"], ["w"]))
        nodes.insert(2, helper.make_node("Concat", ["zero1", "w"] if axis == 0 else
                                         ["w", "zero1"], ["empty_shape"], axis=0))
        nodes.insert(3, helper.make_node("ConstantOfShape", ["empty_shape"], ["init"],
                                         value=numpy_helper.from_array(np.zeros(1, np.float32))))
        inits += [numpy_helper.from_array(np.array([1], np.int64), "one"),
                  numpy_helper.from_array(np.array([2], np.int64), "two"),
                  numpy_helper.from_array(np.array([0], np.int64), "zero1")]
    return _model(nodes, inputs, [_info("final", F, None)], inits)


@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("with_initial", [False, True])
def test_a_carried_value_grown_by_appends(axis, with_initial, tmp_path):
    model = _append_model(axis, with_initial)
    session = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(axis * 2 + with_initial)
    for cache in ("cold", "warm"):
        compiled = onnxc.compile(model, cache_dir=tmp_path, quiet=True)
        for n, w, k in ((3, 4, 2), (1, 7, 0), (17, 5, 3), (0, 3, 1)):
            feeds = {"x": rng.integers(-9, 9, (n, w)).astype(np.float32)}
            if with_initial:
                feeds["init"] = rng.integers(-9, 9, (k, w) if axis == 0 else (w, k)).astype(
                    np.float32)
            (got,) = compiled.run(None, feeds)
            (want,) = session.run(None, feeds)
            assert got.shape == want.shape, (cache, n, w, k)
            np.testing.assert_array_equal(got, want, err_msg=f"{cache} {n} {w} {k}")


def test_a_carried_value_that_changes_other_than_by_appends_is_refused():
    with pytest.raises(UnsupportedOpError) as info:
        onnxc.compile(_append_model(0, False, prepend=True), cache_dir=False, quiet=True)
    err = info.value
    assert (err.op_type, err.node_name) == ("Loop", "Loop_6")
    assert "only appends" in str(err) and "loop-carried value 'init'" in str(err)


def _resize_per_iteration_model(carried: bool) -> onnx.ModelProto:
    """Each iteration resizes `img` [1, 1, H, W] (nearest) to the size in row i of `sizes`
    [m, 2] and sums it: a run size defined in the body, a new value every iteration. With
    `carried`, a running total is carried too (the loop then stops at an outgrown size)."""
    carried_in = [_info("total", F, [])] if carried else []
    carried_out = [_info("total_out", F, [])] if carried else []
    body = _loop([
        helper.make_node("Gather", ["sizes", "i"], ["hw"], axis=0),  # [2]
        helper.make_node("Concat", ["ones", "hw"], ["full"], axis=0),  # [4]
        helper.make_node("Resize", ["img", "", "", "full"], ["resized"], mode="nearest"),
        helper.make_node("ReduceSum", ["resized"], ["sum"], keepdims=0),
        *([helper.make_node("Add", ["total", "sum"], ["total_out"])] if carried else []),
    ], carried_in, carried_out, [_info("sum", F, [])],
        extra_body_inits=[numpy_helper.from_array(np.array([1, 1], np.int64), "ones")])
    nodes = [helper.make_node("Shape", ["sizes"], ["ss"]),
             helper.make_node("Gather", ["ss", "zero"], ["m"], axis=0),
             helper.make_node("Loop", ["m", "", *(["start"] if carried else [])],
                              [*(["total_final"] if carried else []), "sums"], body=body)]
    inits = [numpy_helper.from_array(np.array(0, np.int64), "zero"),
             numpy_helper.from_array(np.array(0, np.float32), "start")]
    outputs = [_info("sums", F, None)] + ([_info("total_final", F, None)] if carried else [])
    if carried:  # outputs in the Loop's order
        outputs = outputs[::-1]
    return _model(nodes, [_info("img", F, [1, 1, "h", "w"]), _info("sizes", I64, ["m", 2])],
                  outputs, inits)


@pytest.mark.parametrize("carried", [False, True])
def test_run_sizes_defined_in_a_loop_body(carried, tmp_path):
    """Sizes that grow past the room of the run before, several in one call, and an empty
    loop: every call matches."""
    model = _resize_per_iteration_model(carried)
    session = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(7 + carried)
    for cache in ("cold", "warm"):
        compiled = onnxc.compile(model, cache_dir=tmp_path, quiet=True)
        for h, w, sizes in ((5, 6, [[2, 3], [4, 4]]), (8, 3, [[30, 2], [1, 1], [9, 40]]),
                            (4, 4, []), (3, 9, [[60, 70], [2, 90], [100, 3], [1, 2]])):
            feeds = {"img": rng.integers(0, 4, (1, 1, h, w)).astype(np.float32),
                     "sizes": np.array(sizes, np.int64).reshape(-1, 2)}
            got = compiled.run(None, feeds)
            want = session.run(None, feeds)
            for a, b in zip(got, want, strict=True):
                assert a.shape == b.shape, (cache, sizes)
                np.testing.assert_array_equal(a, b, err_msg=f"{cache} {sizes}")


def test_a_loop_without_carried_values_measures_every_size_in_one_run():
    """Sizes outgrowing their room in several iterations cost one re-run, not one each
    (the loop goes on measuring, loop_sizes.SoftLoop); with a carried value each is one."""
    from onnxc.runtime.compiled_model import _CapacityExceeded

    sizes = np.array([[30, 2], [1, 1], [9, 40], [50, 3]], np.int64)
    img = np.ones((1, 1, 5, 6), np.float32)
    stops = {}
    for carried in (False, True):
        compiled = onnxc.compile(_resize_per_iteration_model(carried), cache_dir=False,
                                 quiet=True)
        failed, stops[carried] = compiled._failed_check, []

        def counted(*args, failed=failed, seen=stops[carried], **kwargs):
            error = failed(*args, **kwargs)
            if isinstance(error, _CapacityExceeded):
                seen.append(error.symbol)
            return error

        compiled._failed_check = counted
        compiled.run(None, {"img": img, "sizes": sizes})
    assert len(stops[False]) == 1 and len(stops[True]) >= 2, stops
