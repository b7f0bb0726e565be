"""benchmarks/serving.py's parts that need no server: the models both servers are given (a
symbolic batch that really batches), the config.pbtxt onnxc serve reads (Triton's ModelConfig
text), perf_analyzer's CSV, and the medians and ratios of the tables."""

import importlib
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from google.protobuf import text_format
from onnx import numpy_helper

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture(scope="module")
def bench():
    """benchmarks/serving*.py import each other as top-level modules (as when run as scripts)."""
    sys.path.insert(0, str(BENCHMARKS))
    try:
        yield (importlib.import_module("serving"), importlib.import_module("serving_models"),
               importlib.import_module("serving_load"))
    finally:
        sys.path.remove(str(BENCHMARKS))


def _batch_dims(model):
    return [v.type.tensor_type.shape.dim[0].dim_param for v in [*model.graph.input,
                                                                 *model.graph.output]]


def test_resnet50_has_one_input_a_symbolic_batch_and_a_batch_copying_reshape(bench):
    _, models, _ = bench
    model = models.resnet50()
    assert [v.name for v in model.graph.input] == ["data"]
    assert [v.name for v in model.graph.output] == ["prob"]
    assert _batch_dims(model) == ["batch", "batch"]
    inits = {i.name: i for i in model.graph.initializer}
    assert numpy_helper.to_array(inits["OC2_DUMMY_1"]).tolist() == [0, 2048]
    used = {name for node in model.graph.node for name in node.input}
    assert set(inits) <= used


def test_bert2_rows_of_a_batch_are_the_single_sample_answers(bench):
    """onnxruntime (the reference) on a batch of 3 against each sample alone: a Reshape target
    still fixed at batch 1 would fail or mix samples. Tolerance 1e-4 absolute: the batched
    MatMuls may sum in another order (f32) than the single-sample ones; outputs are
    LayerNorm'ed (order 1)."""
    import onnxruntime

    _, models, _ = bench
    model = models.bert2()
    assert _batch_dims(model) == ["batch", "batch", "batch"]
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    session = onnxruntime.InferenceSession(model.SerializeToString(), options,
                                           providers=["CPUExecutionProvider"])
    feeds = models.sample_inputs(model, batch=3)
    (batched,) = session.run(None, feeds)
    for k in range(3):
        (alone,) = session.run(None, {name: v[k:k + 1] for name, v in feeds.items()})
        np.testing.assert_allclose(batched[k:k + 1], alone, rtol=0, atol=1e-4)


def test_config_pbtxt_is_tritons_model_config(bench):
    from onnxc.serving.protocol_buffers import model_config

    _, models, _ = bench
    settings = models.BatcherSettings(max_batch_size=8, preferred_batch_sizes=(4, 8),
                                      max_queue_delay_us=1500, instances=2, threads=1)
    text = models.config_pbtxt("bert2", models.bert2(), settings)
    config = text_format.Parse(text, model_config().ModelConfig())
    assert config.name == "bert2" and config.max_batch_size == 8
    assert [(t.name, list(t.dims)) for t in config.input] == [
        ("hidden_states", [128, 768]), ("attention_mask", [128])]
    assert [(t.name, list(t.dims)) for t in config.output] == [("last_hidden_state", [128, 768])]
    assert list(config.dynamic_batching.preferred_batch_size) == [4, 8]
    assert config.dynamic_batching.max_queue_delay_microseconds == 1500
    assert config.instance_group[0].count == 2
    assert config.parameters["num_threads"].string_value == "1"


def test_write_repository_layout(bench, tmp_path):
    _, models, _ = bench
    models.write_repository(tmp_path, ["bert2"], models.BatcherSettings())
    assert (tmp_path / "bert2" / "config.pbtxt").is_file()
    assert onnx.load(str(tmp_path / "bert2" / "1" / "model.onnx")).graph.input[0].name == \
        "hidden_states"


PA_CSV = """\
Concurrency,Inferences/Second,Client Send,Network+Server Send/Recv,Server Queue,\
Server Compute Input,Server Compute Infer,Server Compute Output,Client Recv,\
p50 latency,p90 latency,p95 latency,p99 latency
2,20.7338,672,1153,44240,93,48895,231,291,91217,112297,120837,146829
"""

PA_STDOUT = """\
Request concurrency: 2
  Client:
    Request count: 226
    Throughput: 20.7338 infer/sec
"""


def test_perf_analyzer_csv(bench):
    _, _, load = bench
    point = load.parse_perf_analyzer(PA_CSV, PA_STDOUT, "http", 2)
    assert point.client == "perf_analyzer/http" and point.concurrency == 2
    assert point.requests == 226
    assert point.throughput == pytest.approx(20.7338)
    assert (point.p50_ms, point.p99_ms) == (pytest.approx(91.217), pytest.approx(146.829))
    assert point.avg_ms == pytest.approx((672 + 1153 + 44240 + 93 + 48895 + 231 + 291) / 1e3)
    assert point.server_us["queue"] == 44240 and point.server_us["compute_infer"] == 48895


def _row(server, throughput, p99, round_, load=1.0):
    return {"server": server, "model": "bert2", "protocol": "http", "concurrency": 4,
            "client": "perf_analyzer/http", "requests": 100, "throughput": throughput,
            "p50_ms": p99 / 2, "p99_ms": p99, "avg_ms": p99 / 2,
            "server_us": {"queue": 1000.0, "compute_infer": 2000.0}, "errors": 0,
            "server_cores": 0.5, "server_cpu_ms_per_infer": 40.0, "load_average": load,
            "note": "", "round": round_}


def test_medians_over_rounds_and_the_ratio_to_triton(bench):
    serving, _, _ = bench
    rows = [_row("onnxc", 20.0, 100.0, 1), _row("onnxc", 30.0, 300.0, 2, load=4.0),
            _row("onnxc", 24.0, 200.0, 3),
            _row("triton", 10.0, 400.0, 1), _row("triton", 12.0, 400.0, 2),
            _row("triton", 11.0, 500.0, 3)]
    merged = {r["server"]: r for r in serving.medians(rows)}
    assert merged["onnxc"]["throughput"] == 24.0 and merged["onnxc"]["p99_ms"] == 200.0
    assert merged["onnxc"]["load_average"] == 4.0 and merged["onnxc"]["rounds"] == 3
    table = serving.tables(list(merged.values()))
    assert "| bert2 | http | 4 | 2.18 | 0.50 |" in table  # 24/11 and 200/400


def test_best_round_keeps_that_rounds_own_latencies(bench):
    serving, _, _ = bench
    rows = [_row("onnxc", 20.0, 100.0, 1, load=6.0), _row("onnxc", 30.0, 300.0, 2)]
    (best,) = serving.best_rounds(rows)
    assert (best["throughput"], best["p99_ms"], best["round"]) == (30.0, 300.0, 2)
    assert best["load_average"] == 6.0 and best["rounds"] == 2
