"""`onnxc-opt --print-pipeline` prints exactly the passes `onnxc.compile` runs.

The compile's passes are recorded as the pass manager applies them (its op census sees every
pass, also those it leaves out for having nothing to match; the JIT's piecewise outlining
records itself), with the cache off so that the compile really runs. `--emit=lib` lowers
through the same code as `onnxc.compile` (pipeline.compile_passes), so its printed pipeline
is the compile's; the other --emit values print the passes they run themselves.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnxc
from onnxc.pass_manager import census, verifier
from onnxc.pass_manager.pipeline_text import build_pipeline
from onnxc.tools.opt import main


def _model() -> onnx.ModelProto:
    """Conv -> Relu -> MatMul: graph passes that fire, a parallel conv, a GEMM."""
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((8, 3, 3, 3)).astype(np.float32), "w")
    m = numpy_helper.from_array(rng.standard_normal((8, 4)).astype(np.float32), "m")
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("Transpose", ["r"], ["t"], perm=[0, 2, 3, 1]),
             helper.make_node("MatMul", ["t", "m"], ["y"])]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16, 16, 4])], [w, m])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _specs(passes) -> list[str]:
    return [str(p.pipeline_pass_spec()) for p in passes]


def _compiled_passes(monkeypatch, model, **options) -> list[str]:
    """The spec of every pass `onnxc.compile(model, **options)` applies, in order."""
    applied = []
    real_apply, real_piecewise = census.OpCensus.apply, verifier.record_piecewise_pass

    def apply(self, ctx, p):
        applied.append(p)
        return real_apply(self, ctx, p)

    def piecewise(module, p):
        applied.append(p)
        return real_piecewise(module, p)

    monkeypatch.setattr(census.OpCensus, "apply", apply)
    monkeypatch.setattr(verifier, "record_piecewise_pass", piecewise)
    onnxc.compile(model, cache_dir=False, **options)
    return _specs(applied)


def _printed(capsys, argv) -> list[str]:
    assert main([*argv, "--print-pipeline"]) == 0
    return _specs(build_pipeline(capsys.readouterr().out.strip()).passes)


@pytest.mark.parametrize(("compile_options", "opt_args"), [
    ({"opt_level": 2, "num_threads": 2}, ["-O2", "--num-threads=2"]),
    ({"opt_level": 3, "num_threads": 1}, ["-O3", "--num-threads=1"]),
    ({"pass_pipeline": "cse,fuse-activation,drop-no-op", "num_threads": 1},
     ["-p", "cse,fuse-activation,drop-no-op", "--num-threads=1"]),
])
def test_print_pipeline_of_emit_lib_is_what_compile_runs(monkeypatch, capsys, tmp_path,
                                                         compile_options, opt_args):
    path = tmp_path / "m.onnx"
    onnx.save(_model(), path)
    ran = _compiled_passes(monkeypatch, _model(), **compile_options)
    printed = _printed(capsys, [str(path), *opt_args, "--emit=lib", "-o",
                                str(tmp_path / "m.so")])
    assert printed == ran
    assert "convert-graph-to-loops" in printed and printed[-1].startswith("outline-parallel")


def test_the_graph_level_is_what_optimize_runs(monkeypatch, capsys):
    applied = []
    real_apply = census.OpCensus.apply
    monkeypatch.setattr(census.OpCensus, "apply",
                        lambda self, ctx, p: (applied.append(p), real_apply(self, ctx, p)))
    onnxc.optimize(_model(), opt_level=1)
    assert _printed(capsys, ["-O1"]) == _specs(applied)
