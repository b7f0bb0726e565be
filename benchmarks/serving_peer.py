"""The serving benchmark's peer: NVIDIA Triton (pytriton) serving onnxruntime sessions.

Runs in a venv of its own (pytriton's dependencies are not onnxc's; its protobuf pins would
fight the system python's), started by benchmarks/serving.py:

    python -m venv /work/venvs/triton
    /work/venvs/triton/bin/pip install nvidia-pytriton==0.7.0 'onnxruntime==1.32.*' numpy
    LD_LIBRARY_PATH=<the venv interpreter's libpython dir> \
        /work/venvs/triton/bin/python benchmarks/serving_peer.py --repo REPO --models resnet50,bert2

nvidia-pytriton 0.7.0 bundles tritonserver 2.51.0: the real server (its HTTP/gRPC front ends,
dynamic batcher and statistics) in front of a Python callable per model instance; each
callable is an onnxruntime InferenceSession on REPO/<model>/1/model.onnx (ORT_ENABLE_ALL,
`--threads` intra-op threads, 1 inter-op) run on the whole batch Triton formed. The batcher
settings are the ones onnxc serve reads from REPO/<model>/config.pbtxt, passed on the command
line. Serves on loopback until SIGINT/SIGTERM.
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

import numpy as np
import onnxruntime
from pytriton.decorators import batch
from pytriton.model_config import DynamicBatcher, ModelConfig, Tensor
from pytriton.triton import Triton, TritonConfig, TritonSecurityConfig

_NP_TYPES = {"tensor(float)": np.float32, "tensor(int64)": np.int64}


def session(path: Path, threads: int) -> onnxruntime.InferenceSession:
    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    return onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def infer_function(sess: onnxruntime.InferenceSession):
    """The callable Triton runs on each batch: the session on the concatenated inputs."""
    output_names = [o.name for o in sess.get_outputs()]

    @batch
    def infer(**inputs: np.ndarray) -> dict[str, np.ndarray]:
        return dict(zip(output_names, sess.run(output_names, inputs)))

    return infer


def tensors(values) -> list[Tensor]:
    """pytriton tensor specs without the batch dim (the model's leading `batch`)."""
    return [Tensor(name=v.name, dtype=_NP_TYPES[v.type], shape=tuple(v.shape[1:]))
            for v in values]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, required=True)
    parser.add_argument("--models", default="resnet50,bert2")
    parser.add_argument("--http-port", type=int, default=8000)
    parser.add_argument("--grpc-port", type=int, default=8001)
    parser.add_argument("--metrics-port", type=int, default=8002)
    parser.add_argument("--max-batch-size", type=int, default=8)
    parser.add_argument("--preferred", default="4,8", help="preferred batch sizes, comma-separated")
    parser.add_argument("--max-queue-delay-us", type=int, default=2000)
    parser.add_argument("--instances", type=int, default=1, help="model instances (sessions)")
    parser.add_argument("--threads", type=int, default=1, help="intra-op threads per session")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)

    preferred = [int(s) for s in args.preferred.split(",") if s]
    config = TritonConfig(http_address="127.0.0.1", http_port=args.http_port,
                          grpc_address="127.0.0.1", grpc_port=args.grpc_port,
                          metrics_address="127.0.0.1", metrics_port=args.metrics_port,
                          log_verbose=0)
    # pytriton restricts statistics by default; open it, as plain Triton has it (perf_analyzer
    # reads /stats where the server advertises the extension), the rest stays restricted.
    security = TritonSecurityConfig(
        restricted_endpoints=["shared-memory", "model-repository", "trace", "logging"])
    with Triton(config=config, security_config=security) as triton:
        for name in args.models.split(","):
            path = args.repo / name / "1" / "model.onnx"
            sessions = [session(path, args.threads) for _ in range(args.instances)]
            triton.bind(
                model_name=name,
                infer_func=[infer_function(s) for s in sessions],
                inputs=tensors(sessions[0].get_inputs()),
                outputs=tensors(sessions[0].get_outputs()),
                config=ModelConfig(
                    max_batch_size=args.max_batch_size,
                    batcher=DynamicBatcher(preferred_batch_size=preferred or None,
                                           max_queue_delay_microseconds=args.max_queue_delay_us)),
                strict=False,
            )
        triton.serve()


if __name__ == "__main__":
    main()
