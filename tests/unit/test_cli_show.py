"""`onnxc show`: graph pictures as graphviz source (labels, fusion, clusters) and rendered.

The .dot tests read the source onnxc writes; the .svg test runs Graphviz's `dot` and skips
where it is not installed. Errors (a bad suffix, a missing model, a missing `dot` or
graphviz package) must be one `error:` line and exit code 1.
"""

from __future__ import annotations

import re
import shutil
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from onnxc.errors import InvalidArgumentError, ToolchainError
from onnxc.tools.run import main
from onnxc.tools.show import draw, fused_expression
from tests.ir_helpers import module, parse_graph
from tests.single_op import graph_model

pytest.importorskip("graphviz")

F32, I64, BOOL = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
OP_NODE = re.compile(r'^\s*(\w+) \[label="(graph\.[a-z_]+)', re.MULTILINE)


def _model(nodes, inputs, outputs, initializers=()):
    model = graph_model(nodes, inputs, outputs, initializers=list(initializers), opset=17,
                        ir_version=8)
    onnx.checker.check_model(model, full_check=True)
    return model


def conv_net() -> onnx.ModelProto:
    """Conv -> BatchNorm -> Relu -> Add(x2) -> Sigmoid: -O3 folds the BatchNorm into the
    conv, makes the Relu its epilogue and fuses Add + Sigmoid into one elementwise op."""
    rng = np.random.default_rng(0)
    weights = [numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "w"),
               numpy_helper.from_array(rng.standard_normal(4).astype(np.float32), "b"),
               numpy_helper.from_array(np.full(4, 1.5, np.float32), "scale"),
               numpy_helper.from_array(np.zeros(4, np.float32), "zero"),
               numpy_helper.from_array(np.ones(4, np.float32), "one")]
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv1", pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["c", "scale", "zero", "zero", "one"],
                              ["n"], name="bn1"),
             helper.make_node("Relu", ["n"], ["r"], name="relu1"),
             helper.make_node("Add", ["r", "x2"], ["a"], name="add1"),
             helper.make_node("Sigmoid", ["a"], ["y"], name="sig1")]
    return _model(nodes, [helper.make_tensor_value_info("x", F32, [1, 3, 8, 8]),
                          helper.make_tensor_value_info("x2", F32, [1, 4, 8, 8])],
                  [helper.make_tensor_value_info("y", F32, [1, 4, 8, 8])], weights)


def control_flow_net() -> onnx.ModelProto:
    """An If on a run-time condition, then a counted Loop adding x three times."""
    vi = helper.make_tensor_value_info
    then_branch = helper.make_graph([helper.make_node("Relu", ["x"], ["t"], name="then_relu")],
                                    "then", [], [vi("t", F32, [4])])
    else_branch = helper.make_graph([helper.make_node("Neg", ["x"], ["e"], name="else_neg")],
                                    "else", [], [vi("e", F32, [4])])
    body = helper.make_graph(
        [helper.make_node("Identity", ["c_in"], ["c_out"]),
         helper.make_node("Add", ["acc_in", "x"], ["acc_out"], name="body_add")],
        "body", [vi("i", I64, []), vi("c_in", BOOL, []), vi("acc_in", F32, [4])],
        [vi("c_out", BOOL, []), vi("acc_out", F32, [4])])
    nodes = [helper.make_node("If", ["cond"], ["y"], name="branch", then_branch=then_branch,
                              else_branch=else_branch),
             helper.make_node("Loop", ["trips", "yes", "y"], ["z"], name="repeat", body=body)]
    return _model(nodes, [vi("cond", BOOL, []), vi("x", F32, [4])], [vi("z", F32, [4])],
                  [helper.make_tensor("trips", I64, [], [3]),
                   helper.make_tensor("yes", BOOL, [], [True])])


@pytest.fixture
def conv_path(tmp_path):
    path = tmp_path / "conv.onnx"
    onnx.save(conv_net(), str(path))
    return str(path)


def _dot(tmp_path, name: str, *args: str) -> str:
    out = tmp_path / name
    assert main(["show", *args, "-o", str(out)]) == 0
    return out.read_text()


def _op_nodes(source: str) -> list[str]:
    return [op for _, op in OP_NODE.findall(source)]


def test_imported_graph_labels_ops_node_names_shapes_and_weights(conv_path, tmp_path, capsys):
    source = _dot(tmp_path, "g.dot", conv_path)
    assert capsys.readouterr().out.strip() == str(tmp_path / "g.dot")
    assert _op_nodes(source) == ["graph.conv", "graph.batch_normalization", "graph.relu",
                                 "graph.add", "graph.sigmoid"]
    conv = next(line for line in source.splitlines() if '"graph.conv' in line)
    assert "node 'conv1'" in conv and "pads=[1, 1, 1, 1]" in conv
    assert "-> 1x4x8x8xf32" in conv
    assert 'label="input x\\n1x3x8x8xf32"' in source
    assert 'label="output y\\n1x4x8x8xf32"' in source
    assert 'label="weight\\nw: 4x3x3x3xf32"' in source
    assert 'label="as imported: 5 ops"' in source


def test_optimized_graph_has_fewer_ops_and_shows_fused_bodies(conv_path, tmp_path):
    imported = _op_nodes(_dot(tmp_path, "a.dot", conv_path))
    source = _dot(tmp_path, "b.dot", conv_path, "-O3")
    optimized = _op_nodes(source)
    assert optimized == ["graph.conv", "graph.fused_elementwise"]
    assert len(optimized) < len(imported)
    assert "epilogue: relu" in source
    assert "body: 1 / (1 + exp(negf(in0 + in1)))" in source  # sigmoid(in0 + in1)
    assert 'label="after -O3: 2 ops"' in source


def test_compare_draws_both_graphs_with_their_node_counts(conv_path, tmp_path):
    source = _dot(tmp_path, "c.dot", conv_path, "--compare", "-O", "1")
    assert "subgraph cluster_imported {" in source and "subgraph cluster_O1 {" in source
    assert 'label="as imported: 5 ops    after -O1: 2 ops"' in source
    before, after = source.split("subgraph cluster_O1 {")
    assert "graph.batch_normalization" in before and "graph.batch_normalization" not in after
    assert "graph.fused_elementwise" in after


def test_regions_are_clusters_with_their_bodies(tmp_path):
    model = tmp_path / "cf.onnx"
    onnx.save(control_flow_net(), str(model))
    source = _dot(tmp_path, "cf.dot", str(model))
    clusters = re.findall(r"subgraph (cluster_\w+) \{\s*(.*)", source)
    region_labels = [attrs for _, attrs in clusters if "style=rounded " in attrs + " "]
    assert [re.search(r"label=(\w+)", a).group(1) for a in region_labels] == \
        ["then", "else", "body"]
    then, rest = source.split("label=then", 1)[1].split("label=else", 1)
    assert "graph.relu" in then and "graph.neg" not in then
    assert "graph.neg" in rest.split("label=body")[0]
    body = source.split("label=body", 1)[1]
    assert "node 'body_add'" in body and "arg acc_in" in body and "yield" in body
    assert 'label="constant\\ntrips: 3 : i64"' in source


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is not installed")
def test_svg_is_rendered_by_dot(conv_path, tmp_path):
    out = tmp_path / "g.svg"
    assert main(["show", conv_path, "-O", "3", "-o", str(out)]) == 0
    svg = out.read_text()
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg
    assert "graph.fused_elementwise" in svg


def _one_error_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), err
    return err[0]


def test_bad_suffix_is_one_error_line(conv_path, tmp_path, capsys):
    assert main(["show", conv_path, "-o", str(tmp_path / "g.pdf")]) == 1
    assert "must end in .dot" in _one_error_line(capsys)
    with pytest.raises(InvalidArgumentError, match="must end in"):
        draw(conv_path, tmp_path / "g")


def test_missing_model_is_one_error_line(tmp_path, capsys):
    missing = tmp_path / "nothing.onnx"
    assert main(["show", str(missing), "-o", str(tmp_path / "g.dot")]) == 1
    assert _one_error_line(capsys) == f"error: cannot open '{missing}': No such file or directory"


def test_bad_opt_level_is_one_error_line(conv_path, tmp_path, capsys):
    assert main(["show", conv_path, "-O", "9", "-o", str(tmp_path / "g.dot")]) == 1
    assert "opt_level must be an int from 0 to 3" in _one_error_line(capsys)


def test_rendering_without_dot_names_what_to_install(conv_path, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PATH", str(tmp_path))  # no dot there
    assert main(["show", conv_path, "-o", str(tmp_path / "g.png")]) == 1
    assert "apt-get install graphviz" in _one_error_line(capsys)
    assert main(["show", conv_path, "-o", str(tmp_path / "g.dot")]) == 0  # source needs no dot


def test_missing_graphviz_package_names_the_extra(conv_path, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "graphviz", None)  # import graphviz -> ImportError
    with pytest.raises(ToolchainError, match=r"pip install 'onnxc\[show\]'"):
        draw(conv_path, tmp_path / "g.svg")


def test_drawing_a_module_leaves_it_unoptimized(tmp_path):
    import onnxc
    from onnxc.passes.stats import compute_nodes, op_counts

    module = onnxc.import_onnx(conv_net())
    draw(module, tmp_path / "g.dot", opt_level=3)
    assert compute_nodes(op_counts(module)) == 5
    assert _op_nodes((tmp_path / "g.dot").read_text()) == ["graph.conv",
                                                           "graph.fused_elementwise"]


def _fused_op(body: list[str]):
    """The graph.fused_elementwise that fuse-elementwise makes of `body` (graph ops on
    %x, %y of type tensor<4xf32>, the last defining %r)."""
    from onnxc.passes.elementwise_fusion import FuseElementwisePass

    m = module({"x": (4,), "y": (4,)}, body, [("r", (4,))])
    FuseElementwisePass().apply(None, m)
    (op,) = [o for o in m.walk() if o.name == "graph.fused_elementwise"]
    return op


def test_fused_expression_inline_and_as_lines():
    t = "tensor<4xf32>"
    clip = _fused_op([f"  %s = graph.add(%x, %y) : ({t}, {t}) -> {t}",
                      f"  %r = graph.clip(%s) {{min = 0.0 : f32, max = 6.0 : f32}} : ({t}) -> {t}"])
    assert fused_expression(clip) == ["minimumf(maximumf(in0 + in1, 0), 6)"]
    relu = _fused_op([f"  %s = graph.mul_scalar(%x) {{scalar = 2.0 : f32}} : ({t}) -> {t}",
                      f"  %r = graph.relu(%s) : ({t}) -> {t}"])
    assert fused_expression(relu) == ["maximumf(in0 * 2, 0)"]
    squares = parse_graph(f"""
func.func @main(%x: {t}) -> {t} {{
  %r = graph.fused_elementwise(%x) : ({t}) -> {t} {{
  ^bb0(%a: f32):
    %s0 = arith.mulf %a, %a : f32
""" + "".join(f"    %s{i} = arith.mulf %s{i - 1}, %s{i - 1} : f32\n" for i in range(1, 6)) + f"""
    graph.yield %s5 : f32
  }}
  func.return %r : {t}
}}""")
    (op,) = [o for o in squares.walk() if o.name == "graph.fused_elementwise"]
    assert fused_expression(op) == [
        "t0 = mulf(in0, in0)", "t1 = mulf(t0, t0)", "t2 = mulf(t1, t1)", "t3 = mulf(t2, t2)",
        "t4 = mulf(t3, t3)", "t5 = mulf(t4, t4)"]