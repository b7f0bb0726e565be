"""graph.qlinear_conv_add: a QDQ residual tail (DQ(conv) + DQ(skip) -> Relu / Clip -> Q) in
the conv's epilogue, on the packed int8 kernel (Cout a multiple of 16, read in place or
through the bordered copy) and on the generic one (other Cout), cold and from the cache.

References and tolerances: the compiled model gives exactly the bits of the optimized graph
under the numpy evaluator (passes/quant_reference.py states the op's rule) and exactly those
of the same model compiled without the fusion (the DQ, Add and Q in a kernel of their own);
against onnxruntime, which runs the QDQ model through its own fusions (QLinearConv, and
QLinearAdd for an Add, which rounds differently at ties), at most one output quantum,
nearly every element equal.
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

import onnxc
from onnxc.passes import quant_linear
from onnxc.passes.verify_numerics import MemoEvaluator
from tests.exact_int8_reference import ort_exact
from tests.unit.test_quant_passes import Builder, op_counts

OUT_SCALE = 0.06


def _qdq(b: Builder, x: str, scale: float, zero: int, signed: bool) -> str:
    """Q/DQ with a u8 zero point `zero`, or its i8 counterpart `zero - 128`."""
    return b.qdq(x, scale, zero - 128, np.int8) if signed else b.qdq(x, scale, zero)


def residual_model(cout: int, kernel: int, activation: str | None, add: str,
                   conv_first: bool, signed: bool, batch: int = 1, size: int = 6,
                   seed: int = 0):
    """x -> Q/DQ -> Conv -> Q/DQ, + Q/DQ(skip) -> activation -> Q/DQ -> y."""
    rng = np.random.default_rng(seed)
    b = Builder()
    x = _qdq(b, "x", 0.03, 120, signed)
    w, bias = b.weight(rng.standard_normal((cout, 8, kernel, kernel)).astype(np.float32), 0,
                       0.03, rng.standard_normal(cout).astype(np.float32) * 0.1)
    b.nodes.append(helper.make_node("Conv", [x, w, bias], ["c"], pads=[kernel // 2] * 4))
    c = _qdq(b, "c", 0.05, 131, signed)
    skip = _qdq(b, "skip", 0.04, 117, signed)
    b.nodes.append(helper.make_node(add, [c, skip] if conv_first else [skip, c], ["a"]))
    y = b.activation("a", activation, (-0.7, 2.5))
    out = _qdq(b, y, OUT_SCALE, 10 if activation else 128, signed)
    b.nodes.append(helper.make_node("Identity", [out], ["y"]))
    shape = [batch, cout, size, size]
    return b.model([helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                  [batch, 8, size, size]),
                    helper.make_tensor_value_info("skip", TensorProto.FLOAT, shape)],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)])


def _feeds(model, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    dims = {i.name: [d.dim_value for d in i.type.tensor_type.shape.dim]
            for i in model.graph.input}
    return {name: (rng.standard_normal(shape) * 2).astype(np.float32)
            for name, shape in dims.items()}


CASES = [
    # cout, kernel, activation, add, conv_first, signed, batch, size
    (32, 1, "Relu", "Add", True, False, 1, 6),  # packed int8 kernel, input read in place
    (32, 3, None, "Sum", False, False, 2, 6),  # packed, the bordered copy, two images
    (48, 3, "Clip", "Add", True, True, 1, 6),  # packed, i8 activations
    (64, 1, "Relu", "Add", True, False, 1, 16),  # packed, a larger map (the 6 x 64 tiles)
    (20, 3, "Relu", "Add", False, False, 1, 6),  # Cout not whole vectors: the generic kernel
    (20, 1, "Clip", "Sum", True, True, 1, 6),  # generic, i8
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"cout{c[0]}-k{c[1]}-{c[2]}-{c[3]}"
                         f"-{'conv' if c[4] else 'skip'}first-{'s8' if c[5] else 'u8'}"
                         f"-n{c[6]}-{c[7]}px")
def test_residual_tail_runs_in_the_conv_epilogue(case, tmp_path, monkeypatch):
    model = residual_model(*case)
    counts = op_counts(onnxc.optimize(model, opt_level=3))
    assert counts.get("graph.qlinear_conv_add") == 1 and "graph.qlinear_conv" not in counts
    for gone in ("graph.fused_elementwise", "graph.add", "graph.sum", "graph.relu",
                 "graph.clip"):
        assert gone not in counts
    feeds = _feeds(model, seed=case[0] + case[1])
    (expected,) = MemoEvaluator([feeds["x"], feeds["skip"]]).run(
        onnxc.optimize(model, opt_level=3))
    cold = onnxc.compile(model, cache_dir=tmp_path)
    warm = onnxc.compile(model, cache_dir=tmp_path)
    assert not cold.from_cache and warm.from_cache
    for compiled in (cold, warm):
        (actual,) = compiled.run(None, feeds)
        np.testing.assert_array_equal(actual, expected)
    (reference,) = ort_exact(model, feeds)
    assert np.abs(actual - reference).max() <= OUT_SCALE * 1.01
    assert np.mean(actual == reference) > 0.95
    monkeypatch.setattr(quant_linear.FuseQdqLinearPass, "patterns", tuple(
        p for p in quant_linear.FuseQdqLinearPass.patterns
        if p is not quant_linear.QdqResidualAddToQLinearConvAdd))
    apart = onnxc.compile(model, cache_dir=False)
    assert "graph.qlinear_conv_add" not in op_counts(onnxc.optimize(model, opt_level=3))
    np.testing.assert_array_equal(apart.run(None, feeds)[0], actual)


def test_each_residual_sum_keeps_its_own_tables():
    """Two residual convs of one shape with different scales and zero points share one
    kernel (the sum's parameters are table values, both scale by multiplies) and each gets
    its own results."""
    rng = np.random.default_rng(5)
    b = Builder()
    x = b.qdq("x", 0.03, 0)  # the input zero point is in the kernel's code: the same for both
    stage, stage_scale = x, 0.03
    for i, (scale, zero) in enumerate(((0.0517, 131), (0.0733, 90))):
        w, bias = b.weight(rng.standard_normal((32, 32, 1, 1)).astype(np.float32), 0,
                           stage_scale, rng.standard_normal(32).astype(np.float32) * 0.1)
        b.nodes.append(helper.make_node("Conv", [stage, w, bias], [f"c{i}"]))
        c = b.qdq(f"c{i}", scale, zero)
        b.nodes += [helper.make_node("Add", [c, stage], [f"a{i}"]),
                    helper.make_node("Relu", [f"a{i}"], [f"r{i}"])]
        stage_scale = 0.0613 + 0.0106 * i
        stage = b.qdq(f"r{i}", stage_scale, 0)
    b.nodes.append(helper.make_node("Identity", [stage], ["y"]))
    model = b.model([helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 32, 5, 5])],
                    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 32, 5, 5])])
    module = onnxc.optimize(model, opt_level=3)
    assert op_counts(module).get("graph.qlinear_conv_add") == 2
    feeds = {"x": (rng.standard_normal((1, 32, 5, 5)) * 2).astype(np.float32)}
    (expected,) = MemoEvaluator([feeds["x"]]).run(module)
    compiled = onnxc.compile(model, cache_dir=False, profile=True)
    (actual,) = compiled.run(None, feeds)
    np.testing.assert_array_equal(actual, expected)
    kernels = {row.kernel for row in compiled.profile().rows
               if row.op == "graph.qlinear_conv_add"}
    assert len(kernels) == 1


SUMS = [  # (conv result, skip, sum): (scale, u8 zero point); the form sum_form picks, and
    # whether its fixed point needs a nudge off the rounded ratios
    (((0.05, 131), (0.04, 117), (0.07, 90)), "fixed", False),
    (((0.14964533, 186), (0.022841644, 129), (0.110523045, 156)), "fixed", True),
    (((0.16371007, 179), (0.096004508, 73), (0.058277272, 5)), "scaled", False),
    (((0.037483718, 74), (0.1835296, 193), (0.035664119, 91)), "divide", False),
    (((0.05, 131), (0.04, 117), (0.06, 128)), "divide", False),  # sums landing on ties
]


@pytest.mark.parametrize("quantizations,form,nudged,signed", [
    *((*case, False) for case in SUMS), (*SUMS[0], True)],
    ids=["fixed", "fixed-nudged", "scaled", "divide", "divide-ties", "fixed-i8"])
def test_every_sum_form_gives_the_division_bytes_for_every_pair(quantizations, form, nudged,
                                                                 signed, tmp_path):
    """int8_requantize.sum_form: the epilogue computes the sum in fixed point, else by f32
    multiplies, where that gives QuantizeLinear's bytes for every pair of bytes, else divides.
    An identity conv makes the conv byte the input's: rows of the image run through all 256
    conv bytes, columns through all 256 skip bytes, so the kernel meets all 65,536 pairs
    (u8, or i8 with the zero points moved by -128). Each form gives exactly the evaluator's
    bits, cold and from the cache."""
    from onnxc.dialects.graph_qlinear import QLinearConvAddOp
    from onnxc.lowering.graph_to_loops.int8_requantize import sum_form

    (c_scale, c_zero), (s_scale, s_zero), (y_scale, y_zero) = quantizations
    b = Builder()
    # conv byte = input byte: scale ratio 1, the same zero point
    x = _qdq(b, "x", c_scale, c_zero, signed)
    w, _ = b.weight(np.eye(16, dtype=np.float32).reshape(16, 16, 1, 1), 0, c_scale, None)
    b.nodes.append(helper.make_node("Conv", [x, w], ["c"]))
    c = _qdq(b, "c", c_scale, c_zero, signed)
    skip = _qdq(b, "skip", s_scale, s_zero, signed)
    b.nodes.append(helper.make_node("Add", [c, skip], ["a"]))
    b.nodes.append(helper.make_node("Identity", [_qdq(b, "a", y_scale, y_zero, signed)],
                                    ["y"]))
    shape = [1, 16, 256, 256]
    model = b.model([helper.make_tensor_value_info("x", TensorProto.FLOAT, shape),
                     helper.make_tensor_value_info("skip", TensorProto.FLOAT, shape)],
                    [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)])
    module = onnxc.optimize(model, opt_level=3)
    (op,) = [o for o in module.walk() if isinstance(o, QLinearConvAddOp)]
    chosen, factors, adjust = sum_form(op)
    assert chosen == form
    if form == "fixed":
        s = factors[2]
        plain = (round(np.float32(c_scale) / np.float64(np.float32(y_scale)) * 2 ** s),
                 round(np.float32(s_scale) / np.float64(np.float32(y_scale)) * 2 ** s), 0)
        assert ((*factors[:2], adjust) != plain) == nudged
    byte = np.arange(256, dtype=np.float32)  # minus the zero point: the same for u8 and i8
    feeds = {"x": np.broadcast_to(((byte - c_zero) * np.float32(c_scale))[:, None],
                                  shape).astype(np.float32),
             "skip": np.broadcast_to((byte - s_zero) * np.float32(s_scale),
                                     shape).astype(np.float32)}
    (expected,) = MemoEvaluator([feeds["x"], feeds["skip"]]).run(module)
    for hit in (False, True):
        compiled = onnxc.compile(model, cache_dir=tmp_path)
        assert compiled.from_cache == hit
        (actual,) = compiled.run(None, feeds)
        np.testing.assert_array_equal(actual, expected)


def test_the_sum_is_not_taken_where_it_broadcasts_or_the_conv_result_is_read_again():
    model = residual_model(32, 1, "Relu", "Add", True, False)
    g = model.graph
    # a second reader of the conv's quantized result: it must be stored
    q = next(n for n in g.node if n.op_type == "QuantizeLinear" and n.input[0] == "c")
    g.node.append(helper.make_node("Identity", [q.output[0]], ["c_q"]))
    g.output.append(helper.make_tensor_value_info("c_q", TensorProto.UINT8, [1, 32, 6, 6]))
    counts = op_counts(onnxc.optimize(model, opt_level=3))
    assert counts.get("graph.qlinear_conv") == 1 and "graph.qlinear_conv_add" not in counts
    # a skip that broadcasts over the image
    model = residual_model(32, 1, "Relu", "Add", True, False)
    model.graph.input[1].type.tensor_type.shape.dim[2].dim_value = 1
    model.graph.input[1].type.tensor_type.shape.dim[3].dim_value = 1
    counts = op_counts(onnxc.optimize(model, opt_level=3))
    assert "graph.qlinear_conv_add" not in counts


@pytest.mark.parametrize("cout", [32, 20])
def test_symbolic_batch_and_image_sizes(cout):
    """Over symbolic N, H and W (run-time pixel counts) the sum runs in the epilogue too,
    with the bits of the static model of the same sizes."""
    model = residual_model(cout, 3, "Relu", "Add", True, False)
    for value in (*model.graph.input, *model.graph.output):
        for axis, name in ((0, "N"), (2, "H"), (3, "W")):
            value.type.tensor_type.shape.dim[axis].dim_param = name
    assert op_counts(onnxc.optimize(model, opt_level=3)).get("graph.qlinear_conv_add") == 1
    compiled = onnxc.compile(model, cache_dir=False)
    for n, size in ((1, 6), (3, 9)):
        static = residual_model(cout, 3, "Relu", "Add", True, False, batch=n)
        for value in (*static.graph.input, *static.graph.output):
            for axis in (2, 3):
                value.type.tensor_type.shape.dim[axis].dim_value = size
        feeds = _feeds(static, seed=n)
        (expected,) = MemoEvaluator([feeds["x"], feeds["skip"]]).run(
            onnxc.optimize(static, opt_level=3))
        (actual,) = compiled.run(None, feeds)
        np.testing.assert_array_equal(actual, expected)


@pytest.mark.parametrize("target", ["cortex-a76", "x86-64-v3"])
def test_other_targets_give_the_same_bits(target, tmp_path):
    """The AArch64 sdot form (under qemu-user) and AVX2's vpmaddubsw, as ahead-of-time
    artifacts: the evaluator's bits on the packed kernel (read in place; the bordered copy
    with i8 activations) and on the generic one."""
    from tests.artifact_runner import run_artifact, skip_unless_runnable

    skip_unless_runnable(target)
    for case in (CASES[0], CASES[2], CASES[4]):
        model = residual_model(*case)
        feeds = _feeds(model, seed=case[0] + case[1])
        (expected,) = MemoEvaluator([feeds["x"], feeds["skip"]]).run(
            onnxc.optimize(model, opt_level=3))
        built = onnxc.compile_artifact(model, tmp_path / f"c{case[0]}k{case[1]}",
                                       target=target, num_threads=2)
        (actual,) = run_artifact(built.directory, feeds, 600)
        np.testing.assert_array_equal(actual, expected)
