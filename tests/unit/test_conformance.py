"""The conformance harness (benchmarks/conformance.py): classification and report here, a
real isolated run of a subset of onnx's BackendTest under `-m slow`."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "conformance.py"


@pytest.fixture(scope="module")
def conformance():
    """The script as a module; importable by name, as its spawned workers need."""
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        yield importlib.import_module("conformance")
    finally:
        sys.path.remove(str(SCRIPT.parent))


def _record(test, outcome, detail="", suite="node", op="Relu"):
    return {"test": test, "suite": suite, "op": op, "outcome": outcome, "detail": detail,
            "seconds": 0.1}


def test_missing_ops_are_counted_by_cause(conformance):
    results = {r["test"]: r for r in [
        _record("a", "unsupported", "unsupported op 'Hardmax' (node 'h', opset 13): the graph "
                "dialect has no equivalent; also unsupported: TopK"),
        _record("b", "unsupported", "unsupported op 'Hardmax' (node 'h', opset 13): the graph "
                "dialect has no equivalent"),
        _record("c", "unsupported", "unsupported op 'graph input' (node 'x', opset 14): "
                "element type INT16; onnxc supports FLOAT"),
        _record("d", "unsupported", "unsupported op 'Pad' (node 'p', opset 19): Pad mode 'wrap'"),
        _record("e", "unsupported", "unsupported op 'Or' (node 'o', opset 7): supported only "
                "on compile-time constant inputs"),
        _record("f", "unsupported", "op types: Loop, If"),
        _record("g", "passed"),
    ]}
    missing = conformance._missing_ops(results)
    assert missing == {"Hardmax": 2, "TopK": 1, "element type INT16": 1,
                       "Pad (attribute value or type)": 1, "Or (constant inputs only)": 1,
                       "Loop": 1, "If": 1}


def test_report_tables(conformance):
    ours = {r["test"]: r for r in [
        _record("test_relu_cpu", "passed"),
        _record("test_relu_expanded_cpu", "failed", "Mismatched elements"),
        _record("test_hardmax_cpu", "unsupported", "unsupported op 'Hardmax' (node 'h', "
                "opset 13): the graph dialect has no equivalent", op="Hardmax"),
        _record("test_Conv2d_cpu", "crash", "worker died", suite="pytorch-converted", op=""),
    ]}
    theirs = {t: {**r, "outcome": "passed"} for t, r in ours.items()}
    text = conformance.render_markdown(ours, theirs, "# T")
    assert "| node | 3 | 1 | 1 | 1 | 0 | 0 | 0 | 0 | 3 |" in text
    assert "| Relu | 2 | 1 | 1 | 0 | 0 | 0 | 2 |" in text
    assert "| Hardmax | 1 | 0 | 0 | 1 | 0 | 0 | 1 |" in text
    assert "| pytorch-converted | test_Conv2d_cpu | crash | worker died | passed |" in text
    assert "Hardmax (1)" in text


def test_expanded_tests_take_the_op_type_they_expand(conformance):
    tests = {"test_softmax_axis_0_cpu": ("node", ["Softmax"]),
             "test_softmax_axis_0_expanded_ver18_cpu": ("node", ["Constant", "ReduceMax", "Sub",
                                                                  "Exp", "ReduceSum", "Div"]),
             "test_other_cpu": ("node", ["Constant", "Shape", "Gather"])}
    assert conformance.op_types_of(tests) == {
        "test_softmax_axis_0_cpu": "Softmax",
        "test_softmax_axis_0_expanded_ver18_cpu": "Softmax",
        "test_other_cpu": "Gather"}


@pytest.mark.slow
def test_isolated_run_of_a_subset(conformance, tmp_path):
    """A real run: passing, unsupported and failing-to-load tests are told apart, and a
    worker that dies (here: asked for a test that does not exist) is a `crash`, not the end
    of the run."""
    out = tmp_path / "onnxc.jsonl"
    subprocess.run(
        [sys.executable, str(SCRIPT), "run", "--backend", "onnxc", "--suites",
         "node,pytorch-converted", "--filter",
         (r"^test_(relu|abs|add_bcast|hardmax_axis_0|tfidfvectorizer_tf_only_bigrams_skip0|"
          r"Conv2d|Softmax)_cpu$"), "--out", str(out), "--timeout", "120"],
        check=True, timeout=600,
    )
    results = {r["test"]: r for r in map(json.loads, out.read_text().splitlines())}
    assert results["test_relu_cpu"]["outcome"] == "passed"
    assert results["test_relu_cpu"]["op"] == "Relu"
    assert results["test_add_bcast_cpu"]["outcome"] == "passed"
    assert results["test_Conv2d_cpu"]["outcome"] == "passed"
    assert results["test_tfidfvectorizer_tf_only_bigrams_skip0_cpu"]["outcome"] == "unsupported"
    pool = conformance.WorkerPool("onnxc")
    try:
        _, outcome, _, _ = pool.run("test_no_such_test_cpu", 300)
        assert outcome == "crash"
        assert pool.run("test_abs_cpu", 300)[1] == "passed"  # a fresh worker took over
    finally:
        pool.close()
    report = tmp_path / "report.md"
    subprocess.run([sys.executable, str(SCRIPT), "report", str(out), "--markdown",
                    str(report)], check=True, timeout=300)
    assert "| Relu | 1 | 1 |" in report.read_text()
