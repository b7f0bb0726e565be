"""Optimization levels: every catalog row at exactly one level, and -O/--stats/--print-pipeline/
--verify-numerics in onnxc-opt and the API, all from the same lists."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np
import onnx
import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)

import onnxc
from onnxc.dialects import graph
from onnxc.passes import levels
from onnxc.passes.base import apply_graph_patterns
from onnxc.passes.stats import OptimizationStats
from onnxc.passes.verify_numerics import NumericDriftError
from onnxc.registry import _PASS_PATHS, ONNXC_PASSES
from onnxc.tools.opt import main
from onnxc.pass_manager.pipeline_text import split_pipeline

CATALOG_ROWS = list(_PASS_PATHS)[: list(_PASS_PATHS).index("convert-graph-to-loops")]


def test_every_catalog_row_is_in_exactly_one_level():
    listed = Counter(levels.BASIC + levels.EXTENDED + levels.LAYOUT_AND_MEMORY)
    assert {n for n, c in listed.items() if c > 1} == set()
    assert set(listed) == set(CATALOG_ROWS)


def test_order_runs_exactly_the_level_rows():
    assert set(levels.ORDER) == set(CATALOG_ROWS)


def test_every_listed_pass_exists():
    assert levels.missing_passes() == []


def test_levels_grow_and_run_in_order():
    o1, o2, o3 = (set(levels.LEVELS[n]) for n in (1, 2, 3))
    assert levels.LEVELS[0] == () and o1 < o2 < o3
    assert o2 - o1 == set(levels.EXTENDED)
    passes = levels.LEVELS[3]
    assert passes[:4] == ("move-quant-dequant", "fuse-qdq-linear", "fuse-weight-only-matmul",
                          "fold-constant-ops")
    assert passes[-1] == "drop-orphans"
    assert passes.index("fuse-conv-bn") < passes.index("bn-to-scale")
    assert passes.index("fuse-activation") < passes.index("fuse-elementwise")
    with pytest.raises(ValueError, match="opt_level"):
        levels.graph_pipeline(4)


def test_graph_pipeline_text_round_trips():
    text = levels.graph_pipeline(2)
    assert split_pipeline(text) == list(levels.level_passes(2))


# ----------------------------------------------------------------------------- onnxc-opt

MODEL = """<ir_version: 8, opset_import: ["" : 13]>
g (float[1,3,8,8] x) => (float[1,4,8,8] y)
  <float[4,3,1,1] w = {1,0,0, 0,1,0, 0,0,1, 1,1,1}, float[4] s = {1, 2, 3, 4},
   float[4] b = {0, 1, 0, -1}, float[4] m = {0, 0, 1, 0}, float[4] v = {1, 1, 1, 4}> {
    c = Conv(x, w)
    n = BatchNormalization(c, s, b, m, v)
    r = Relu(n)
    y = Identity(r)
}"""


@pytest.fixture
def model_file(tmp_path):
    path = tmp_path / "model.onnxtxt"
    path.write_text(MODEL)
    return str(path)


def test_print_pipeline_is_the_level_text(capsys):
    assert main(["-O3", "--print-pipeline"]) == 0
    assert capsys.readouterr().out.strip() == f"builtin.module({levels.graph_pipeline(3)})"
    assert main(["--print-pipeline", "--pass-pipeline", "builtin.module(cse,drop-no-op)"]) == 0
    assert capsys.readouterr().out.strip() == "builtin.module(cse,drop-no-op)"


def test_opt_level_runs_the_level(model_file, capsys):
    assert main([model_file, "-O0"]) == 0
    assert "graph.batch_normalization" in capsys.readouterr().out
    assert main([model_file, "-O1"]) == 0
    out = capsys.readouterr().out
    assert "graph.batch_normalization" not in out and "graph.identity" not in out
    assert 'activation = "relu"' in out


def test_opt_level_runs_before_explicit_passes(model_file, capsys):
    assert main(["-O1", "-p", "cse", "--print-pipeline"]) == 0
    assert capsys.readouterr().out.strip() == f"builtin.module({levels.graph_pipeline(1)},cse)"
    assert main([model_file, "-O1", "-p", "cse"]) == 0
    assert 'activation = "relu"' in capsys.readouterr().out


def test_stats_on_stderr(model_file, capsys):
    assert main([model_file, "-O1", "--stats"]) == 0
    out, err = capsys.readouterr()
    assert "graph statistics: 4 -> 1 compute nodes" in err
    assert "fuse-conv-bn:" in err and "graph.conv" in out
    assert "graph statistics" not in out


@dataclass(frozen=True)
class _BreakAdds(ModulePass):
    name = "test-break-adds"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        class AddToSub(RewritePattern):
            @op_type_rewrite_pattern
            def match_and_rewrite(self, op: graph.AddOp, rewriter: PatternRewriter) -> None:
                rewriter.replace(op, graph.SubOp(operands=[op.lhs, op.rhs],
                                                 result_types=[op.output.type]))

        apply_graph_patterns(op, [AddToSub()], self.name)


ADD_MODEL = """<ir_version: 8, opset_import: ["" : 13]>
g (float[4] x, float[4] z) => (float[4] y) { a = Add(x, z)  y = Relu(a) }"""


def test_verify_numerics_names_the_drifting_pass(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(ONNXC_PASSES, _BreakAdds.name, lambda: _BreakAdds)
    path = tmp_path / "add.onnxtxt"
    path.write_text(ADD_MODEL)
    assert main([str(path), "-p", "cse,test-break-adds,drop-orphans", "--verify-numerics"]) == 1
    err = capsys.readouterr().err
    assert "first drifting pass: test-break-adds" in err
    assert "removed: graph.add x1" in err and "added: graph.sub x1" in err
    assert "output 0 (y): max abs diff" in err
    assert "error:" in err and "'test-break-adds' changed the results" in err
    assert main([str(path), "-O3", "--verify-numerics"]) == 0
    assert "no pass drifts" in capsys.readouterr().err


# ----------------------------------------------------------------------------- API


def test_optimize_with_stats_and_compile_with_verify_numerics(monkeypatch):
    model = onnx.parser.parse_model(MODEL)
    _, stats = onnxc.optimize(model, opt_level=1, stats=True)
    assert isinstance(stats, OptimizationStats)
    assert stats.before["graph.batch_normalization"] == 1
    assert stats.after["graph.batch_normalization"] == 0
    assert any(p == "fuse-conv-bn" for p, _ in stats.fired)
    compiled = onnxc.compile(model, opt_level=3, verify_numerics=True)
    x = np.random.default_rng(0).uniform(-1, 1, (1, 3, 8, 8)).astype(np.float32)
    (y,) = compiled(x)
    assert y.shape == (1, 4, 8, 8) and (y >= 0).all()
    monkeypatch.setitem(ONNXC_PASSES, _BreakAdds.name, lambda: _BreakAdds)
    with pytest.raises(NumericDriftError, match="test-break-adds"):
        onnxc.compile(onnx.parser.parse_model(ADD_MODEL), pass_pipeline="test-break-adds",
                      verify_numerics=True)
