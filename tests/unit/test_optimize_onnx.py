"""`onnxc.optimize(..., as_onnx=True)` and `onnxc optimize`: the optimized graph as ONNX.

Small zoo nets go through the three acceptance checks (tests/onnx_export_checks.py:
onnx's full check, onnxruntime outputs equal to the original's within rtol 1e-4 / atol 1e-5,
no more compute nodes than onnxruntime's ORT_ENABLE_EXTENDED model); the fused ops that only
the passes create are written as graph IR and their export compared, under onnxruntime, with
onnxc's numpy evaluator of the same IR. The larger zoo nets: tests/models/test_optimize_onnx_zoo.py.
"""

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnxc
from onnxc import zoo
from onnxc.dialects import graph
from onnxc.errors import InvalidArgumentError, UnsupportedOpError
from onnxc.frontend.onnx_export import FUNCTION_DOMAIN, OPSET, export_onnx
from onnxc.passes.evaluator import evaluate
from onnxc.passes.verify_numerics import check_pass_equivalence
from onnxc.tools.run import main
from tests.ir_helpers import conv_props, module, parse_graph, rand, tensor
from tests.onnx_export_checks import ATOL, RTOL, check_export, session


@pytest.mark.parametrize("name, build, inputs", [
    ("squeezenet", lambda: zoo.expose_logits(zoo.randomize_weights(zoo.load_zoo("squeezenet"))),
     zoo.random_inputs),
    ("mobilenet_v2_like", zoo.mobilenet_v2_like, zoo.random_inputs),
    ("bert_tiny", lambda: zoo.bert_encoder(layers=2, **zoo.BERT_TINY), zoo.bert_inputs),
    ("elementwise_chain", lambda: zoo.elementwise_chain(4096), zoo.random_inputs),
])
def test_small_nets_pass_the_acceptance_checks(name, build, inputs):
    model = build()
    original, ours, _extended = check_export(model, inputs(model))
    assert ours < original


def test_fused_ops_become_standard_ops_or_onnxc_functions():
    exported = onnxc.optimize(zoo.bert_encoder(layers=1, **zoo.BERT_TINY), as_onnx=True)
    ops = {n.op_type for n in exported.graph.node}
    assert "LayerNormalization" in ops
    # the FFN's GELU is its Gemm's epilogue: a function of the two standard ops
    gemm_gelu = [f for f in exported.functions if f.name == "GemmGelu"]
    assert gemm_gelu and [n.op_type for n in gemm_gelu[0].node] == ["Gemm", "Gelu"]
    domains = {n.domain for n in exported.graph.node if n.op_type not in ("LayerNormalization",)}
    assert FUNCTION_DOMAIN in domains
    attention = [f for f in exported.functions if f.name.startswith("Attention")]
    assert attention and "Attention" in {n.op_type for n in attention[0].node}
    assert {o.domain: o.version for o in exported.opset_import} == {"": OPSET, "onnxc": 1}


def test_names_types_and_weights_are_kept():
    model = zoo.mobilenet_v2_like()
    exported = onnxc.optimize(model, as_onnx=True)
    for ours, theirs in ((exported.graph.input, model.graph.input),
                         (exported.graph.output, model.graph.output)):
        assert [v.name for v in ours] == [v.name for v in theirs]
        assert [v.type for v in ours] == [v.type for v in theirs]
    assert not any(n.op_type == "Constant" for n in exported.graph.node)
    assert len(exported.graph.initializer) > 0
    conv_calls = [n for n in exported.graph.node if n.op_type.startswith("Conv")]
    functions = {f.name for f in exported.functions}
    # every conv with the same activation calls one function, its attributes by reference
    assert len({n.op_type for n in conv_calls}) <= 3 < len(conv_calls)
    assert {n.op_type for n in conv_calls if n.domain == FUNCTION_DOMAIN} <= functions
    assert all(n.name for n in exported.graph.node)
    assert len({n.name for n in exported.graph.node}) == len(exported.graph.node)


def _check_against_evaluator(mod, feeds, rtol=RTOL, atol=ATOL):
    """Export `mod` and compare onnxruntime's outputs with the numpy evaluator's."""
    expected = evaluate(mod, list(feeds.values()))
    exported = export_onnx(mod)
    onnx.checker.check_model(exported, full_check=True)
    got = session(exported).run(None, feeds)
    for want, have in zip(expected, got):
        np.testing.assert_allclose(have, want, rtol=rtol, atol=atol)
    return exported


_EPILOGUES = [
    'activation = "relu"',
    'activation = "clip", activation_alpha = 0.0 : f32, activation_beta = 0.5 : f32',
    'activation = "clip", activation_beta = 0.25 : f32',
    'activation = "leaky_relu", activation_alpha = 0.1 : f32',
    'activation = "sigmoid"',
    'activation = "tanh"',
    ('activation = "hard_swish", activation_alpha = 0.1666667 : f32, '
    'activation_beta = 0.5 : f32'),
    'activation = "gelu"',
    'activation = "gelu_tanh"',
]


@pytest.mark.parametrize("epilogue", _EPILOGUES)
def test_conv_and_conv_add_epilogues(epilogue):
    rng = np.random.default_rng(0)
    props = conv_props(pads=(1, 1, 1, 1))[:-1] + ", " + epilogue + "}"
    x, w, b = (1, 3, 6, 6), (4, 3, 3, 3), (4,)
    y = (1, 4, 6, 6)
    conv = f"({tensor(x)}, {tensor(w)}, {tensor(b)})"
    mod = module({"x": x, "w": w, "b": b, "z": y}, [
        f"  %c = graph.conv(%x, %w, %b) {props} : {conv} -> {tensor(y)}",
        (f"  %d = graph.conv_add(%x, %w, %b, %z) {props} : ({tensor(x)}, {tensor(w)}, "
        f"{tensor(b)}, {tensor(y)}) -> {tensor(y)}"),
        f"  %e = graph.conv(%x, %w) {props} : ({tensor(x)}, {tensor(w)}) -> {tensor(y)}",
    ], [("c", y), ("d", y), ("e", y)])
    feeds = {"x": rand(rng, *x), "w": rand(rng, *w), "b": rand(rng, *b), "z": rand(rng, *y)}
    exported = _check_against_evaluator(mod, feeds)
    assert len(exported.graph.node) == 3
    assert all(n.domain == FUNCTION_DOMAIN for n in exported.graph.node)
    assert len(exported.functions) == 3  # with and without bias, and with the residual


def test_gemm_and_matmul_epilogues_and_plain_conv_add():
    rng = np.random.default_rng(1)
    gemm = ('{alpha = 0.5 : f32, beta = 2.0 : f32, transA = 0 : i64, transB = 1 : i64, '
            'activation = "relu"}')
    mod = module({"a": (3, 5), "b": (4, 5), "c": (4,), "x": (1, 2, 4, 4), "w": (2, 2, 1, 1)}, [
        (f"  %g = graph.gemm(%a, %b, %c) {gemm} : ({tensor((3, 5))}, {tensor((4, 5))}, "
        f"{tensor((4,))}) -> {tensor((3, 4))}"),
        (f'  %m = graph.matmul(%g, %b) {{activation = "tanh"}} : ({tensor((3, 4))}, '
        f"{tensor((4, 5))}) -> {tensor((3, 5))}"),
        (f"  %r = graph.conv_add(%x, %w, %x) {conv_props()} : ({tensor((1, 2, 4, 4))}, "
        f"{tensor((2, 2, 1, 1))}, {tensor((1, 2, 4, 4))}) -> {tensor((1, 2, 4, 4))}"),
    ], [("m", (3, 5)), ("r", (1, 2, 4, 4))])
    feeds = {"a": rand(rng, 3, 5), "b": rand(rng, 4, 5), "c": rand(rng, 4),
             "x": rand(rng, 1, 2, 4, 4), "w": rand(rng, 2, 2, 1, 1)}
    exported = _check_against_evaluator(mod, feeds)
    assert [n.op_type for n in exported.graph.node] == ["GemmRelu", "MatMulTanh", "ConvAdd"]


def test_fused_elementwise_body_ops():
    """Every op fuse-elementwise puts in a body (each fusable graph op's scalar meaning),
    exported one ONNX node per body op, computes what the evaluator runs."""
    t, y, z = tensor((2, 3, 4)), tensor((3, 4)), tensor((1, 3, 1))
    chain = [
        ("add", "%x, %y", "", f"{t}, {y}"), ("relu", "", "", ""), ("sigmoid", "", "", ""),
        ("tanh", "", "", ""), ("exp", "", "", ""), ("log", "", "", ""), ("sqrt", "", "", ""),
        ("neg", "", "", ""), ("abs", "", "", ""), ("reciprocal", "", "", ""),
        ("sub", ", %z", "", f"{t}, {z}"), ("mul", ", %x", "", f"{t}, {t}"),
        ("div", ", %y", "", f"{t}, {y}"), ("max", ", %z", "", f"{t}, {z}"),
        ("min", ", %x", "", f"{t}, {t}"), ("leaky_relu", "", "{alpha = 0.2 : f32}", ""),
        ("clip", "", "{min = -0.5 : f32}", ""), ("add_scalar", "", "{scalar = 1.5 : f32}", ""),
        ("sub_scalar", "", "{scalar = 0.25 : f32}", ""),
        ("mul_scalar", "", "{scalar = 2.0 : f32}", ""),
        ("div_scalar", "", "{scalar = 4.0 : f32}", ""),
        ("pow_scalar", "", "{scalar = 2.0 : f32}", ""), ("pow", ", %y", "", f"{t}, {y}"),
        ("clip", "", "", ""),
    ]
    body = []
    for i, (name, operands, props, types) in enumerate(chain):
        args = operands if i == 0 else f"%v{i - 1}{operands}"
        body.append(f"  %v{i} = graph.{name}({args}) {props} : ({types or t}) -> {t}")
    shapes = {"x": (2, 3, 4), "y": (3, 4), "z": (1, 3, 1)}
    mod = check_pass_equivalence(module(shapes, body, [(f"v{len(chain) - 1}", (2, 3, 4))]),
                                 "fuse-elementwise")
    (fused,) = [o for o in mod.walk() if isinstance(o, graph.FusedElementwiseOp)]
    assert [o for o in mod.walk() if isinstance(o, graph.GraphOp)] == [fused]
    rng = np.random.default_rng(2)
    feeds = {n: rand(rng, *s, low=0.5, high=2.0) for n, s in shapes.items()}
    exported = _check_against_evaluator(mod, feeds, rtol=1e-4, atol=1e-5)
    assert len(exported.graph.node) == 1 and exported.graph.node[0].domain == FUNCTION_DOMAIN
    (function,) = exported.functions
    kinds = {n.op_type for n in function.node}
    assert {"Add", "Max", "Min", "Exp", "Tanh", "Log", "Sqrt", "Neg", "Abs", "Div", "Sub",
            "Mul", "Less", "Where", "Pow"} <= kinds


def test_fused_elementwise_qdq_and_broadcast_at_the_end():
    """A ui8 input read by a dequantize's conversion, a ui8 result from a quantize's; a
    yielded value that does not cover every input's shape is broadcast to the result's."""
    text = """
func.func @main(%q: tensor<2x3xui8>, %x: tensor<2x3xf32>, %s: tensor<4x1x1xf32>) -> (tensor<2x3xui8>, tensor<4x2x3xf32>) {
  %a = graph.fused_elementwise(%q, %x) : (tensor<2x3xui8>, tensor<2x3xf32>) -> tensor<2x3xui8> {
  ^bb0(%q0: ui8, %x0: f32):
    %f = arith.uitofp %q0 : ui8 to f32
    %z = arith.constant 1.280000e+02 : f32
    %c = arith.subf %f, %z : f32
    %s0 = arith.constant 5.000000e-02 : f32
    %d = arith.mulf %c, %s0 : f32
    %t = arith.addf %d, %x0 : f32
    %s1 = arith.constant 1.000000e-01 : f32
    %u = arith.divf %t, %s1 : f32
    %r = math.roundeven %u : f32
    %z1 = arith.constant 1.000000e+01 : f32
    %v = arith.addf %r, %z1 : f32
    %lo = arith.constant 0.000000e+00 : f32
    %hi = arith.constant 2.550000e+02 : f32
    %w = arith.maximumf %v, %lo : f32
    %k = arith.minimumf %w, %hi : f32
    %o = arith.fptoui %k : f32 to ui8
    graph.yield %o : ui8
  }
  %b = graph.fused_elementwise(%x, %s) : (tensor<2x3xf32>, tensor<4x1x1xf32>) -> tensor<4x2x3xf32> {
  ^bb0(%x0: f32, %s0: f32):
    %m = arith.mulf %x0, %s0 : f32
    %zero = arith.constant 0.000000e+00 : f32
    %r = arith.maximumf %x0, %zero : f32
    graph.yield %r : f32
  }
  func.return %a, %b : tensor<2x3xui8>, tensor<4x2x3xf32>
}
"""
    rng = np.random.default_rng(3)
    feeds = {"q": rng.integers(0, 256, (2, 3)).astype(np.uint8),
             "x": rand(rng, 2, 3, low=-2, high=2), "s": rand(rng, 4, 1, 1)}
    _check_against_evaluator(parse_graph(text), feeds, atol=1.0 + 1e-6)  # one rounding step


@pytest.mark.parametrize("mask, causal, shape", [
    (None, None, (1, 2, 5, 8)),            # a plain Attention node
    ((1, 2, 5, 5), None, (1, 2, 5, 8)),    # a full mask: still one node
    ((1, 1, 1, 5), None, (1, 2, 5, 8)),    # broadcast first (onnxruntime wants [.., Sq, Sk])
    (None, 0, (1, 2, 5, 8)),               # is_causal
    ((5,), 2, (1, 2, 5, 8)),               # a causal offset as a -inf mask
    ((1, 5), None, (2, 5, 8)),             # rank 3: MatMul / Softmax / MatMul
])
def test_attention(mask, causal, shape):
    rng = np.random.default_rng(4)
    args = {"q": shape, "k": shape, "v": shape} | ({"m": mask} if mask else {})
    props = "scale = 0.35 : f32" + ("" if causal is None else f", causal_offset = {causal} : i64")
    operands = ", ".join(tensor(s) for s in args.values())
    mod = module(args, [
        (f"  %y = graph.attention({', '.join('%' + n for n in args)}) {{{props}}} : "
        f"({operands}) -> {tensor(shape)}")], [("y", shape)])
    feeds = {n: rand(rng, *s) for n, s in args.items()}
    exported = _check_against_evaluator(mod, feeds)
    (node,) = exported.graph.node
    assert (node.domain == "") == (len(shape) == 4 and (
        mask is None or mask[-2:] == (5, 5)) and causal in (None, 0))


def test_grouped_query_attention():
    q, kv = (1, 4, 3, 8), (1, 2, 3, 8)
    mod = module({"q": q, "k": kv, "v": kv}, [
        (f"  %y = graph.attention(%q, %k, %v) {{scale = 0.5 : f32}} : ({tensor(q)}, "
        f"{tensor(kv)}, {tensor(kv)}) -> {tensor(q)}")], [("y", q)])
    rng = np.random.default_rng(5)
    _check_against_evaluator(mod, {"q": rand(rng, *q), "k": rand(rng, *kv),
                                   "v": rand(rng, *kv)})


def test_other_pass_made_ops():
    x = (1, 6, 2, 2)
    mod = module({"x": x, "y": x}, [
        f"  %s = graph.channel_shuffle(%x) {{group = 3 : i64}} : ({tensor(x)}) -> {tensor(x)}",
        (f"  %w = graph.weighted_sum(%s, %y) {{coefficients = array<f64: 0.5, -2.0>}} : "
        f"({tensor(x)}, {tensor(x)}) -> {tensor(x)}"),
        (f"  %l = graph.transpose(%w) {{perm = array<i64: 0, 2, 3, 1>}} : "
        f"({tensor(x)}) -> {tensor((1, 2, 2, 6))}"),
        (f"  %m = graph.mul_scalar(%l) {{scalar = 3.0 : f64}} : ({tensor((1, 2, 2, 6))}) -> "
        f"{tensor((1, 2, 2, 6))}"),
        (f"  %r = graph.reduce_sum(%m) {{axes = array<i64>, keepdims = 1 : i64}} : "
        f"({tensor((1, 2, 2, 6))}) -> {tensor((1, 2, 2, 6))}"),
        (f"  %c = graph.clip(%r) {{max = 1.0 : f32}} : ({tensor((1, 2, 2, 6))}) -> "
        f"{tensor((1, 2, 2, 6))}"),
    ], [("c", (1, 2, 2, 6)), ("x", x), ("c", (1, 2, 2, 6))])
    rng = np.random.default_rng(6)
    exported = _check_against_evaluator(mod, {"x": rand(rng, *x), "y": rand(rng, *x)})
    # an output that is an input, or another output's value, is copied by an Identity
    assert [o.name for o in exported.graph.output] == ["output_0", "output_1", "output_2"]
    assert [n.op_type for n in exported.graph.node][-2:] == ["Identity", "Identity"]


def test_unsupported_op_names_the_op_and_its_node():
    """BitCast is opset 26, the export opset 23 (the declared ops and their reasons:
    test_optimize_onnx_ops.py)."""
    model = onnx.parser.parse_model("""
<ir_version: 11, opset_import: ["" : 26]>
g (float[4] x) => (int32[4] y) {
    y = BitCast <to = 6> (x)
}""")
    model.graph.node[0].name = "cast_me"
    with pytest.raises(UnsupportedOpError, match="graph.bit_cast.*cast_me.*opset 26"):
        onnxc.optimize(model, opt_level=0, as_onnx=True)


def test_api_arguments():
    model = zoo.matmul_model(4)
    with pytest.raises(InvalidArgumentError, match="as_onnx"):
        onnxc.optimize(model, as_onnx="yes")
    exported, stats = onnxc.optimize(model, as_onnx=True, stats=True)
    assert isinstance(exported, onnx.ModelProto) and stats.before
    assert [n.op_type for n in exported.graph.node] == ["MatMul"]


def _conv_relu_model() -> onnx.ModelProto:
    rng = np.random.default_rng(7)
    weight = numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
         helper.make_node("Relu", ["c"], ["y"], name="relu")], "conv_relu",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])], [weight])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def test_cli_writes_the_model_and_prints_counts(tmp_path, capsys):
    source, target = tmp_path / "in.onnx", tmp_path / "out.onnx"
    onnx.save(_conv_relu_model(), source)
    assert main(["optimize", str(source), "-o", str(target), "-O", "2"]) == 0
    out = capsys.readouterr().out
    assert f"{source}: 2 nodes -> {target}: 1 nodes (-O2, 1 local function" in out
    saved = onnx.load(target)
    assert [n.op_type for n in saved.graph.node] == ["ConvRelu"]
    x = np.random.default_rng(8).random((1, 3, 8, 8), dtype=np.float32)
    np.testing.assert_allclose(session(saved).run(None, {"x": x})[0],
                               session(_conv_relu_model()).run(None, {"x": x})[0],
                               rtol=RTOL, atol=ATOL)


def test_cli_errors_are_one_line(tmp_path, capsys):
    source = tmp_path / "in.onnx"
    onnx.save(_conv_relu_model(), source)
    assert main(["optimize", str(tmp_path / "missing.onnx"), "-o", str(tmp_path / "o")]) == 1
    assert main(["optimize", str(source), "-o", str(tmp_path / "o.onnx"), "-O", "9"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all(line.startswith("error:") for line in err)
    assert "opt_level" in err[1]
