"""The serving benchmark's load generators: perf_analyzer, or a closed loop of tritonclients.

Both run in a process of their own (the client must not share the server's interpreter or
GIL), closed loop at a fixed concurrency: each of C clients sends one request of batch 1,
waits for the answer and sends the next. Both report the same `Point`: throughput over the
measured window, p50/p99 latency of the requests in it.

- perf_analyzer (Triton's client, the tritonclient 2.60.0 wheel's binary): three windows of
  duration/3 each (its stability check is disabled by --stability-percentage 999, so it
  measures exactly those windows after its own warm-up), random input data; its CSV also
  gives the server side's averages from /stats (queue, compute input/infer/output).
  It needs glibc 2.38; on Debian 12 `/work/tools/perf_analyzer/run.sh` runs it through
  Debian 13's loader, libc and libstdc++ unpacked privately (see that script).
- the loop (`python benchmarks/serving_load.py --url ... --model ... --concurrency C`):
  C threads, each with its own tritonclient (HTTP with binary tensors, or gRPC), seeded
  N(0, 1) inputs shaped from the model's metadata, warm-up then a fixed duration; prints
  one JSON line.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np


@dataclass
class Point:
    """One measurement: a server, a model, a concurrency."""

    client: str
    concurrency: int
    requests: int
    throughput: float  # infer/s
    p50_ms: float
    p99_ms: float
    avg_ms: float
    server_us: dict[str, float] = field(default_factory=dict)  # perf_analyzer's /stats split
    errors: int = 0

    def to_json(self) -> dict:
        return asdict(self)


# --- perf_analyzer ----------------------------------------------------------------------------

_SERVER_COLUMNS = {"Server Queue": "queue", "Server Compute Input": "compute_input",
                   "Server Compute Infer": "compute_infer",
                   "Server Compute Output": "compute_output",
                   "Client Send": "client_send", "Network+Server Send/Recv": "network",
                   "Client Recv": "client_recv"}


def perf_analyzer_version(binary: str) -> tuple[str | None, str | None]:
    """(its version, None) when `binary --version` runs, else (None, why not)."""
    try:
        run = subprocess.run([binary, "--version"], check=False, capture_output=True,
                             text=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as e:
        return None, str(e)
    text = (run.stdout + run.stderr).strip()
    if run.returncode != 0:
        return None, text.splitlines()[0] if text else f"exit code {run.returncode}"
    return text.replace("Perf Analyzer Version", "").strip(), None


def perf_analyzer_point(binary: str, url: str, protocol: str, model: str, concurrency: int,
                        duration_s: float) -> Point:
    """One perf_analyzer run at `concurrency`; raises RuntimeError with its output on failure."""
    window_ms = max(int(duration_s * 1000 / 3), 500)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "pa.csv"
        cmd = [binary, "-m", model, "-u", url, "-i", protocol, "-b", "1",
               "--concurrency-range", f"{concurrency}:{concurrency}",
               "--measurement-interval", str(window_ms), "--stability-percentage", "999",
               "--max-trials", "3", "-f", str(out)]
        run = subprocess.run(cmd, check=False, capture_output=True, text=True,
                             timeout=duration_s * 4 + 120)
        if run.returncode != 0 or not out.exists():
            tail = "\n".join((run.stdout + run.stderr).strip().splitlines()[-6:])
            raise RuntimeError(f"perf_analyzer failed (exit {run.returncode}): {tail}")
        return parse_perf_analyzer(out.read_text(), run.stdout, protocol, concurrency)


def parse_perf_analyzer(csv_text: str, stdout: str, protocol: str, concurrency: int) -> Point:
    """A Point from perf_analyzer's `-f` CSV (one row per concurrency; latencies in us) and
    its printed output (the request count). The average latency is the sum of the CSV's
    parts (client send, network + server send/recv, server queue and compute, client recv)."""
    row = next(csv.DictReader(io.StringIO(csv_text)))
    requests = 0
    for line in stdout.splitlines():
        if line.strip().startswith("Request count:"):
            requests = int(line.split(":")[1])
            break
    server = {short: float(row[name]) for name, short in _SERVER_COLUMNS.items() if name in row}
    return Point(client=f"perf_analyzer/{protocol}", concurrency=concurrency,
                 requests=requests, throughput=float(row["Inferences/Second"]),
                 p50_ms=float(row["p50 latency"]) / 1e3, p99_ms=float(row["p99 latency"]) / 1e3,
                 avg_ms=sum(server.values()) / 1e3, server_us=server)


# --- the tritonclient loop ----------------------------------------------------------------------

def loop_point(url: str, protocol: str, model: str, concurrency: int, duration_s: float,
               warmup_s: float) -> Point:
    """Runs this file as a process of its own and parses the JSON line it prints."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--url", url, "--protocol", protocol,
           "--model", model, "--concurrency", str(concurrency), "--duration", str(duration_s),
           "--warmup", str(warmup_s)]
    run = subprocess.run(cmd, check=False, capture_output=True, text=True,
                         timeout=duration_s + warmup_s + 120)
    if run.returncode != 0:
        raise RuntimeError(f"load loop failed: {run.stderr.strip()[-600:]}")
    return Point(**json.loads(run.stdout.strip().splitlines()[-1]))


_NP = {"FP32": np.float32, "FP16": np.float16, "INT64": np.int64, "INT32": np.int32}


def _client_module(protocol: str):
    if protocol == "grpc":
        import tritonclient.grpc as module
    else:
        import tritonclient.http as module
    return module


def _request_inputs(module, metadata: dict, seed: int) -> list:
    rng = np.random.default_rng(seed)
    inputs = []
    for spec in metadata["inputs"]:
        shape = [1] + [int(d) for d in spec["shape"][1:]]
        data = rng.standard_normal(shape).astype(_NP[spec["datatype"]])
        tensor = module.InferInput(spec["name"], shape, spec["datatype"])
        if module.__name__.endswith("http"):
            tensor.set_data_from_numpy(data, binary_data=True)
        else:
            tensor.set_data_from_numpy(data)
        inputs.append(tensor)
    return inputs


def _client_loop(module, url: str, model: str, seed: int, start: float, stop: float,
                 latencies: list[float], errors: list[int]) -> None:
    client = module.InferenceServerClient(url=url)
    if module.__name__.endswith("http"):
        metadata = client.get_model_metadata(model)
    else:
        metadata = client.get_model_metadata(model, as_json=True)
    inputs = _request_inputs(module, metadata, seed)
    outputs = [module.InferRequestedOutput(o["name"], binary_data=True)
               if module.__name__.endswith("http") else module.InferRequestedOutput(o["name"])
               for o in metadata["outputs"]]
    while (now := time.perf_counter()) < stop:
        try:
            client.infer(model, inputs, outputs=outputs)
        except Exception:  # noqa: BLE001 - a refused request is counted, the loop goes on
            errors.append(1)
            continue
        end = time.perf_counter()
        if now >= start and end <= stop:
            latencies.append(end - now)
    client.close()


def run_loop(url: str, protocol: str, model: str, concurrency: int, duration_s: float,
             warmup_s: float) -> Point:
    module = _client_module(protocol)
    begin = time.perf_counter()
    start, stop = begin + warmup_s, begin + warmup_s + duration_s
    per_thread: list[list[float]] = [[] for _ in range(concurrency)]
    errors: list[int] = []
    threads = [threading.Thread(target=_client_loop,
                                args=(module, url, model, k, start, stop, per_thread[k], errors))
               for k in range(concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    latencies = np.array([x for xs in per_thread for x in xs]) * 1e3
    if latencies.size == 0:
        raise RuntimeError(f"no request to {model} completed in the window ({len(errors)} errors)")
    return Point(client=f"tritonclient/{protocol}", concurrency=concurrency,
                 requests=int(latencies.size), throughput=latencies.size / duration_s,
                 p50_ms=float(np.percentile(latencies, 50)),
                 p99_ms=float(np.percentile(latencies, 99)),
                 avg_ms=float(latencies.mean()), errors=len(errors))


def main() -> None:
    parser = argparse.ArgumentParser(description="closed-loop tritonclient load, one JSON line")
    parser.add_argument("--url", required=True, help="host:port")
    parser.add_argument("--protocol", choices=("http", "grpc"), default="http")
    parser.add_argument("--model", required=True)
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument("--duration", type=float, default=10.0)
    parser.add_argument("--warmup", type=float, default=2.0)
    args = parser.parse_args()
    point = run_loop(args.url, args.protocol, args.model, args.concurrency, args.duration,
                     args.warmup)
    print(json.dumps(point.to_json()))


if __name__ == "__main__":
    main()
