"""benchmarks/nets.py without the export venv: its arguments, the inputs it gives token-id
models, its table and geometric means, and one real run on a tiny model in tmp_path."""

import importlib
import json
import math
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from onnxc.errors import InvalidArgumentError

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
VOCAB = 16


@pytest.fixture(scope="module")
def nets():
    """benchmarks/nets.py imports bench.py as a top-level module (as when run as a script)."""
    sys.path.insert(0, str(BENCHMARKS))
    try:
        yield importlib.import_module("nets")
    finally:
        sys.path.remove(str(BENCHMARKS))


def _token_model() -> onnx.ModelProto:
    """Embedding lookup of input_ids times the attention mask: [1, 4] ids -> [1, 4, 8]."""
    table = np.random.default_rng(0).standard_normal((VOCAB, 8)).astype(np.float32)
    nodes = [
        helper.make_node("Gather", ["embeddings", "input_ids"], ["embedded"]),
        helper.make_node("Cast", ["attention_mask"], ["mask_f"], to=TensorProto.FLOAT),
        helper.make_node("Unsqueeze", ["mask_f", "axis"], ["mask3"]),
        helper.make_node("Mul", ["embedded", "mask3"], ["hidden"]),
    ]
    graph = helper.make_graph(
        nodes, "tokens",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, [1, 4]),
         helper.make_tensor_value_info("attention_mask", TensorProto.INT64, [1, 4])],
        [helper.make_tensor_value_info("hidden", TensorProto.FLOAT, [1, 4, 8])],
        [numpy_helper.from_array(table, "embeddings"),
         numpy_helper.from_array(np.array([2], dtype=np.int64), "axis")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.fixture
def net_dir(tmp_path):
    onnx.save(_token_model(), str(tmp_path / "tokens.onnx"))
    inputs = [{"name": "input_ids", "shape": [1, 4], "dtype": "int64", "kind": "token_ids",
               "vocab": VOCAB},
              {"name": "attention_mask", "shape": [1, 4], "dtype": "int64", "kind": "ones"}]
    (tmp_path / "manifest.json").write_text(json.dumps(
        {"nets": {"tokens": {"file": "tokens.onnx", "inputs": inputs,
                             "versions": {"torch": "test"}}}}))
    return tmp_path


def test_arguments(nets, tmp_path):
    args = nets.parse_args(["--dir", str(tmp_path), "--threads", "2,1,2", "--repeat", "3"])
    assert args.threads == [2, 1] and args.repeat == 3 and args.dir == tmp_path
    default = nets.parse_args([])
    assert default.threads == [1, 2] and default.runtimes == ["onnxc", "onnxruntime", "openvino"]
    assert nets.parse_args(["--compare", "onnxruntime"]).runtimes == ["onnxc", "onnxruntime"]
    with pytest.raises(InvalidArgumentError, match="tensorrt"):
        nets.parse_args(["--compare", "tensorrt"])
    with pytest.raises(SystemExit):
        nets.parse_args(["--repeat", "0"])
    with pytest.raises(InvalidArgumentError, match="--threads"):
        nets.parse_args(["--threads", "0"])
    assert nets.parse_args(["--threads", "1", "--interleaved"]).interleaved
    with pytest.raises(SystemExit):  # two threads each need the cores to themselves
        nets.parse_args(["--threads", "1,2", "--interleaved"])


def test_models_must_be_exported(nets, net_dir, tmp_path_factory):
    found = nets.manifest(net_dir)
    assert list(found) == ["tokens"]
    assert nets.choose(found, None, net_dir) == ["tokens"]
    with pytest.raises(InvalidArgumentError, match="resnet50 not in"):
        nets.choose(found, "tokens,resnet50", net_dir)
    empty = tmp_path_factory.mktemp("empty")
    with pytest.raises(InvalidArgumentError, match="nets_export.py"):
        nets.choose(nets.manifest(empty), None, empty)


def test_token_ids_are_in_the_vocabulary_and_the_mask_is_ones(nets, net_dir):
    model = _token_model()
    for entry in (nets.manifest(net_dir)["tokens"], {}):  # the manifest, then the names
        feeds = nets.net_inputs(model, entry)
        ids = feeds["input_ids"]
        assert ids.dtype == np.int64 and ids.shape == (1, 4)
        assert ids.min() >= 0 and ids.max() < VOCAB and len(set(ids.ravel())) > 1
        assert (feeds["attention_mask"] == 1).all()


def test_table_and_geometric_means(nets):
    rows = [
        nets.Row("a", 1, {"onnxc": 0.002, "onnxruntime": 0.004, "openvino": 0.001},
                 compile_s=1.5, max_diff=1e-6, matches=True),
        nets.Row("b", 1, {"onnxc": 0.008, "onnxruntime": 0.002, "openvino": 0.004},
                 compile_s=2.0, max_diff=1.0, matches=False),
        nets.Row("c", 1, {"onnxruntime": 0.003, "openvino": 0.005},
                 errors=("onnxc: CompilationError: unsupported op Foo",)),
    ]
    assert rows[0].ratio == 0.5 and rows[0].best_ratio == 2.0
    assert rows[1].best_ratio == 4.0 and rows[2].ratio is None and rows[2].best_ratio is None
    header = nets.HEADER.split()
    assert header[:4] == ["model", "T", "onnxc", "ms"]
    first = nets.format_row(rows[0]).split()
    assert first == ["a", "1", "2.00", "4.00", "1.00", "0.50", "2.00", "1.0e-06", "ok", "1.5"]
    assert "MISMATCH" in nets.format_row(rows[1])
    failed = nets.format_row(rows[2])
    assert failed.split()[:5] == ["c", "1", "-", "3.00", "5.00"]
    assert failed.endswith("[onnxc: CompilationError: unsupported op Foo]")
    lines = nets.summary(rows, [1, 2])
    # geomean of onnxc/ort 0.5 and 4 is sqrt(2); of onnxc/best 2 and 4 is sqrt(8)
    assert lines[0] == (f"geometric mean at T=1 over 2 nets: onnxc/onnxruntime "
                        f"{math.sqrt(2):.2f}, onnxc/best peer {math.sqrt(8):.2f} (max 4.00, b)")
    assert lines[1] == "T=2: no net ran on onnxc and a peer"
    assert "MISMATCH" in lines[2] and "b (T=1)" in lines[2]
    assert lines[3] == "failures: c (T=1)"


def test_describe_keeps_the_type_and_first_line(nets):
    assert nets.describe(ValueError("bad shape\n  at node 3")) == "ValueError: bad shape"


@pytest.mark.parametrize("mode", [[], ["--interleaved"]], ids=["processes", "interleaved"])
@pytest.mark.parametrize("compare", ["onnxruntime", "onnxruntime,openvino"])
def test_run_on_a_tiny_model(nets, net_dir, capsys, compare, mode):
    """Every runtime really compiles and times the model, each in its own process or all
    in this one, interleaved (OpenVINO is the `bench` extra, not a test dependency)."""
    if "openvino" in compare:
        pytest.importorskip("openvino")
    (row,) = nets.main(["--dir", str(net_dir), "--threads", "1", "--repeat", "1",
                        "--compare", compare, *mode])
    assert row.errors == () and row.matches, nets.format_row(row)
    assert set(row.seconds) == {"onnxc", *compare.split(",")}
    assert row.compile_s > 0 and row.max_diff < 1e-5
    out = capsys.readouterr().out
    assert "geometric mean at T=1 over 1 nets" in out and "exported with torch test" in out
    assert ("interleaved" in out) == bool(mode)
