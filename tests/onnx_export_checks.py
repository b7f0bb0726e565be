"""The acceptance checks of `onnxc.optimize(..., as_onnx=True)`, shared by the unit and the
model tests: the exported model passes onnx's full check, onnxruntime runs it to the
original's outputs (rtol 1e-4, atol 1e-5), and it has no more compute nodes than
onnxruntime's own ORT_ENABLE_EXTENDED optimized model. `check_round_trip` is the per-op
check: a model that imports to one graph op, exported and run against the original.
"""

from __future__ import annotations

import os
import tempfile

import numpy as np
import onnx
import onnxruntime as ort

import onnxc
from onnxc.tools.optimize_onnx import compute_nodes

RTOL, ATOL = 1e-4, 1e-5

ort.set_default_logger_severity(3)  # the zoo nets' int initializers listed as inputs warn


def session(model: onnx.ModelProto, level=ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
            optimized_path: str | None = None) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.graph_optimization_level = level
    if optimized_path is not None:
        options.optimized_model_filepath = optimized_path
    return ort.InferenceSession(model.SerializeToString(), options,
                                providers=["CPUExecutionProvider"])


def ort_extended_nodes(model: onnx.ModelProto) -> int:
    """Compute nodes of onnxruntime's ORT_ENABLE_EXTENDED optimized model (its com.microsoft
    fused ops count as one each)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "extended.onnx")
        session(model, ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED, path)
        return compute_nodes(onnx.load(path).graph.node)


def check_export(model: onnx.ModelProto, feeds: dict[str, np.ndarray],
                 opt_level: int = 3) -> tuple[int, int, int]:
    """All three acceptance checks; returns the node counts (original, onnxc,
    onnxruntime-extended)."""
    exported = onnxc.optimize(model, opt_level=opt_level, as_onnx=True)
    onnx.checker.check_model(exported, full_check=True)
    expected = session(model).run(None, feeds)
    got = session(exported).run(None, feeds)
    assert [o.name for o in exported.graph.output] == [o.name for o in model.graph.output]
    for name, want, have in zip([o.name for o in model.graph.output], expected, got):
        assert have.dtype == want.dtype and have.shape == want.shape, name
        np.testing.assert_allclose(have, want, rtol=RTOL, atol=ATOL, err_msg=name)
    counts = (compute_nodes(model.graph.node), compute_nodes(exported.graph.node),
              ort_extended_nodes(model))
    assert counts[1] <= counts[2], f"onnxc {counts[1]} nodes, onnxruntime {counts[2]}"
    return counts


def _run(model: onnx.ModelProto, feeds: dict[str, np.ndarray], by: str) -> list[np.ndarray]:
    if by == "onnxruntime":
        return session(model).run(None, feeds)
    from onnx.reference import ReferenceEvaluator

    return ReferenceEvaluator(model).run(None, feeds)


def check_round_trip(model: onnx.ModelProto, feeds: dict[str, np.ndarray], graph_op: type, *,
                     exact: bool = False, rtol: float = 1e-5, atol: float = 1e-6,
                     reference: str = "onnxruntime", exported_by: str = "onnxruntime",
                     opt_level: int = 0, pass_pipeline: str | None = None) -> onnx.ModelProto:
    """Import `model` (with the graph passes of `opt_level`, or `pass_pipeline`), check the
    graph holds a `graph_op`, export it, check the export (onnx's full check) and compare
    its outputs (run by `exported_by`: onnxruntime, or "onnx" for onnx.reference where
    onnxruntime has no kernel of the exported opset) with the original's (run by
    `reference`: onnxruntime, "onnx", or "evaluator" for onnxc's numpy evaluator of the
    imported graph, where no runtime runs the original): equal (`exact`) or within
    rtol / atol, with the same dtypes and shapes. Returns the exported model."""
    from onnxc.frontend.onnx_export import export_onnx
    from onnxc.passes.evaluator import evaluate
    from tests.single_op import assert_same_outputs

    module = onnxc.optimize(model, opt_level=opt_level, pass_pipeline=pass_pipeline)
    assert any(isinstance(op, graph_op) for op in module.walk()), \
        f"the model does not import to {graph_op.name}"
    exported = export_onnx(module)
    onnx.checker.check_model(exported, full_check=True)
    if reference == "evaluator":
        expected = evaluate(module, list(feeds.values()))
    else:
        expected = _run(model, feeds, reference)
    got = _run(exported, feeds, exported_by)
    assert [o.name for o in exported.graph.output] == [o.name for o in model.graph.output]
    assert_same_outputs(got, expected, exact=exact, rtol=rtol, atol=atol)
    return exported
