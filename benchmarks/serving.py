"""Benchmark: `onnxc serve` against NVIDIA Triton serving onnxruntime, same models, same batcher.

Issue 35's serving benchmark. ResNet-50 and BERT-2 (benchmarks/serving_models.py: the zoo
models with a symbolic batch, the same .onnx for every server) behind each server in turn,
each server ALONE on the machine (started, warmed up, measured at every concurrency, stopped):

- `onnxc`: `onnxc serve REPO` (local engine), REPO/<model>/config.pbtxt giving the batcher;
- `ray`: `onnxc serve REPO --engine ray --replicas 1` (optional: Ray Serve's proxy and replica);
- `triton`: tritonserver 2.51.0 (nvidia-pytriton 0.7.0, in its own venv) with its dynamic
  batcher in front of an onnxruntime 1.32 InferenceSession per instance
  (benchmarks/serving_peer.py).

Same settings for all: max_batch_size, preferred batch sizes, max queue delay, instances per
model, threads per run (onnxc's num_threads / onnxruntime's intra-op threads). The client is
perf_analyzer where it runs, else the closed tritonclient loop (benchmarks/serving_load.py),
always in a process of its own; batch 1 per request, concurrency 1, 2, 4, 8; throughput and
p50/p99 latency, plus the server's own split of a request's time from /stats (perf_analyzer
only), and the server process tree's CPU time per inference (from /proc). The machine has
2 cores and is shared: the numbers are indicative; the load average is printed per point.

    python benchmarks/serving.py [--models resnet50,bert2] [--concurrency 1,2,4,8]
        [--duration 15] [--servers onnxc,triton[,ray]] [--rounds 1]
        [--client auto|perf_analyzer|tritonclient] [--protocols http,grpc]
        [--max-batch-size 8] [--preferred 4,8] [--max-queue-delay-us 2000]
        [--instances 1] [--threads 1] [--json out.json]

The table is appended to benchmarks/results/<date>-serving-<cpu>.md (results_file.py).
`sh benchmarks/serving_setup.sh` installs the Triton peer's venv and perf_analyzer (with the
glibc it needs) first.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import platform
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import results_file
import serving_load
import serving_models

HERE = Path(__file__).resolve().parent
TRITON_PYTHON = "/work/venvs/triton/bin/python"
PERF_ANALYZER = "/work/tools/perf_analyzer/run.sh"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Server:
    """One server process (and its children), on loopback ports of its own."""

    kind: str
    command: list[str]
    env: dict[str, str]
    http_port: int
    grpc_port: int
    log: Path
    process: subprocess.Popen | None = None
    versions: dict[str, str] = field(default_factory=dict)

    def url(self, protocol: str) -> str:
        return f"127.0.0.1:{self.http_port if protocol == 'http' else self.grpc_port}"

    def start(self) -> None:
        self.process = subprocess.Popen(self.command, env=self.env, stdout=self.log.open("w"),
                                        stderr=subprocess.STDOUT, start_new_session=True)

    def wait_ready(self, models: list[str], timeout_s: float) -> None:
        """Until every model answers ready on HTTP (pytriton binds models after the server is
        up, so server readiness alone is not enough)."""
        deadline = time.monotonic() + timeout_s
        pending = list(models)
        while pending:
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.kind} exited ({self.process.returncode}); "
                                   f"log: {self.log.read_text()[-1500:]}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.kind}: {pending} not ready after {timeout_s:.0f} s")
            try:
                url = f"http://127.0.0.1:{self.http_port}/v2/models/{pending[0]}/ready"
                with urllib.request.urlopen(url, timeout=5) as r:
                    if r.status == 200:
                        pending.pop(0)
                        continue
            except OSError:
                pass
            time.sleep(0.5)

    def stop(self) -> None:
        """SIGTERM to the process group (both servers drain on it; pytriton's python ignores
        a SIGINT of its own), SIGKILL after 60 s."""
        if self.process is None or self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()

    def cpu_seconds(self) -> float:
        """User + system CPU time of the server's process tree (the live processes)."""
        if self.process is None:
            return 0.0
        children: dict[int, list[int]] = {}
        times: dict[int, float] = {}
        tick = os.sysconf("SC_CLK_TCK")
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            fields = stat[stat.rindex(")") + 2:].split()
            pid = int(entry.name)
            children.setdefault(int(fields[1]), []).append(pid)
            times[pid] = (int(fields[11]) + int(fields[12])) / tick
        total, todo = 0.0, [self.process.pid]
        while todo:
            pid = todo.pop()
            total += times.get(pid, 0.0)
            todo.extend(children.get(pid, []))
        return total


def onnxc_server(repo: Path, tmp: Path, engine: str) -> Server:
    http, grpc, metrics = free_port(), free_port(), free_port()
    cmd = [sys.executable, "-m", "onnxc.tools.run", "serve", str(repo), "--http-port", str(http),
           "--grpc-port", str(grpc), "--metrics-port", str(metrics), "--log-level", "warning"]
    if engine == "ray":
        cmd += ["--engine", "ray", "--replicas", "1"]
    import onnxc

    return Server(kind="onnxc" if engine == "local" else "ray", command=cmd,
                  env=dict(os.environ), http_port=http, grpc_port=grpc,
                  log=tmp / f"{engine}.log", versions={"onnxc": onnxc.__version__})


def triton_server(repo: Path, tmp: Path, models: list[str], settings, python: str) -> Server:
    http, grpc, metrics = free_port(), free_port(), free_port()
    libdir_code = "import sysconfig; print(sysconfig.get_config_var('LIBDIR'))"
    libdir = subprocess.run([python, "-c", libdir_code], capture_output=True, text=True,
                            check=True).stdout.strip()
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = ":".join(p for p in (libdir, env.get("LD_LIBRARY_PATH")) if p)
    cmd = [python, str(HERE / "serving_peer.py"), "--repo", str(repo), "--models",
           ",".join(models), "--http-port", str(http), "--grpc-port", str(grpc),
           "--metrics-port", str(metrics), "--max-batch-size", str(settings.max_batch_size),
           "--preferred", ",".join(map(str, settings.preferred_batch_sizes)),
           "--max-queue-delay-us", str(settings.max_queue_delay_us),
           "--instances", str(settings.instances), "--threads", str(settings.threads)]
    versions_code = ("import importlib.metadata as m; "
                     "print(m.version('nvidia-pytriton'), m.version('onnxruntime'))")
    versions = subprocess.run([python, "-c", versions_code], capture_output=True, text=True,
                              check=True).stdout.split()
    return Server(kind="triton", command=cmd, env=env, http_port=http, grpc_port=grpc,
                  log=tmp / "triton.log",
                  versions={"nvidia-pytriton": versions[0], "tritonserver": "2.51.0 (bundled)",
                            "onnxruntime": versions[1]})


def measure(server: Server, models: list[str], concurrencies: list[int], duration_s: float,
            client: str, protocols: list[str], warmup_s: float,
            perf_analyzer: str) -> list[dict]:
    """Every model at every concurrency on a started, ready server."""
    rows = []
    for model in models:
        # Warm-up: every batch size the batcher can form, at the highest concurrency.
        try:
            serving_load.loop_point(server.url(protocols[0]), protocols[0], model,
                                    max(concurrencies), warmup_s, 0.0)
        except (RuntimeError, subprocess.SubprocessError) as e:
            print(f"  {server.kind} {model}: warm-up failed ({e}); measuring anyway",
                  file=sys.stderr)
        for protocol, c in ((p, c) for p in protocols for c in concurrencies):
            load_before = os.getloadavg()[0]
            cpu_before, wall_before = server.cpu_seconds(), time.monotonic()
            point, note = None, ""
            if client == "perf_analyzer":
                try:
                    point = serving_load.perf_analyzer_point(
                        perf_analyzer, server.url(protocol), protocol, model, c, duration_s)
                except (RuntimeError, subprocess.SubprocessError) as e:
                    note = f"perf_analyzer failed, tritonclient loop instead: {e}"
                    print(f"  {server.kind} {model} c={c}: {note}", file=sys.stderr)
            if point is None:
                try:
                    point = serving_load.loop_point(server.url(protocol), protocol, model, c,
                                                    duration_s, min(2.0, warmup_s))
                except (RuntimeError, subprocess.SubprocessError) as e:
                    print(f"  {server.kind} {model} {protocol} c={c}: no measurement: {e}",
                          file=sys.stderr)
                    continue
            # Cores the server's processes kept busy over the client's whole run (its own
            # warm-up included: the load is the same), and so CPU time per inference.
            cores = (server.cpu_seconds() - cpu_before) / (time.monotonic() - wall_before)
            row = {"server": server.kind, "model": model, "protocol": protocol,
                   **point.to_json(),
                   "server_cores": round(cores, 3),
                   "server_cpu_ms_per_infer": round(1e3 * cores / point.throughput, 2)
                   if point.throughput else None,
                   "load_average": round(load_before, 2), "note": note}
            rows.append(row)
            print(f"  {server.kind:6} {model:9} {protocol:4} c={c}: "
                  f"{point.throughput:7.1f} infer/s  "
                  f"p50 {point.p50_ms:7.1f} ms  p99 {point.p99_ms:7.1f} ms  "
                  f"(load {load_before:.1f})", file=sys.stderr)
    return rows


def _ms(us: float | None) -> str:
    return "-" if us is None else f"{us / 1e3:.1f}"


def _groups(rows: list[dict]) -> list[list[dict]]:
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault((r["server"], r["model"], r["protocol"], r["concurrency"]),
                          []).append(r)
    return list(groups.values())


def best_rounds(rows: list[dict]) -> list[dict]:
    """One row per server, model, protocol and concurrency: the round with the highest
    throughput (its own latencies with it); load: the highest over the rounds."""
    out = []
    for group in _groups(rows):
        row = dict(max(group, key=lambda g: g["throughput"]))
        row["load_average"] = max(g["load_average"] for g in group)
        row["rounds"] = len(group)
        out.append(row)
    return out


def medians(rows: list[dict]) -> list[dict]:
    """One row per server, model and concurrency: the median of each number over the rounds
    (servers run in turn each round, so a slow spell of the shared machine hits one round)."""
    out = []
    for group in _groups(rows):
        row = dict(group[0])
        for key, value in group[0].items():
            if isinstance(value, float) or key in ("requests", "errors"):
                values = [g[key] for g in group if g[key] is not None]
                row[key] = statistics.median(values) if values else None
        row["server_us"] = {k: statistics.median(g["server_us"].get(k, 0.0) for g in group)
                            for k in group[0]["server_us"]}
        row["load_average"] = max(g["load_average"] for g in group)
        row["rounds"] = len(group)
        out.append(row)
    return out


def tables(rows: list[dict]) -> str:
    """Per server and point: throughput, latency, the server's split (perf_analyzer), CPU;
    then onnxc (and Ray) against Triton at each point."""
    header = ("| model | server | protocol | conc. | infer/s | p50 ms | p99 ms | avg ms | queue ms | "
              "compute ms | other ms | server cores | CPU ms/infer | client | load |")
    lines = [header,
             "|---|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|--:|"]
    for r in rows:
        split = r["server_us"]
        queue = split.get("queue")
        compute = (sum(split.get(k, 0.0) for k in ("compute_input", "compute_infer",
                                                    "compute_output")) if split else None)
        other = r["avg_ms"] * 1e3 - queue - compute if split else None
        cpu = r["server_cpu_ms_per_infer"]
        lines.append(f"| {r['model']} | {r['server']} | {r['protocol']} | {r['concurrency']} | "
                     f"{r['throughput']:.1f} | {r['p50_ms']:.1f} | {r['p99_ms']:.1f} | "
                     f"{r['avg_ms']:.1f} | {_ms(queue)} | {_ms(compute)} | {_ms(other)} | "
                     f"{r['server_cores']:.2f} | {'-' if cpu is None else f'{cpu:.1f}'} | "
                     f"{r['client']} | {r['load_average']:.1f} |")
    by_key = {(r["server"], r["model"], r["protocol"], r["concurrency"]): r for r in rows}
    others = sorted({r["server"] for r in rows} - {"triton"})
    if "triton" in {r["server"] for r in rows} and others:
        title = ("Against Triton + onnxruntime (throughput ratio > 1 and p99 ratio < 1: "
                 "onnxc better):")
        lines += ["", title, ""]
        lines.append("| model | protocol | conc. | " + " | ".join(
            f"{s}/triton infer/s | {s}/triton p99" for s in others) + " |")
        lines.append("|---|---|--:|" + "--:|--:|" * len(others))
        for (server, model, protocol, c), t in by_key.items():
            if server != "triton":
                continue
            cells = []
            for s in others:
                o = by_key.get((s, model, protocol, c))
                cells += ([f"{o['throughput'] / t['throughput']:.2f}",
                           f"{o['p99_ms'] / t['p99_ms']:.2f}"] if o else ["-", "-"])
            lines.append(f"| {model} | {protocol} | {c} | " + " | ".join(cells) + " |")
    if {"ray", "onnxc"} <= {r["server"] for r in rows}:
        title = ("The Ray engine against the local one (what Ray Serve's proxy, handle and "
                 "replica add per request):")
        lines += ["", title, "",
                  ("| model | protocol | conc. | ray - local p50 ms | ray - local avg ms | "
                   "ray/local infer/s |"), "|---|---|--:|--:|--:|--:|"]
        for (server, model, protocol, c), ray in by_key.items():
            local = by_key.get(("onnxc", model, protocol, c))
            if server == "ray" and local:
                lines.append(f"| {model} | {protocol} | {c} | "
                             f"{ray['p50_ms'] - local['p50_ms']:+.1f} | "
                             f"{ray['avg_ms'] - local['avg_ms']:+.1f} | "
                             f"{ray['throughput'] / local['throughput']:.2f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(serving_models.MODELS))
    parser.add_argument("--concurrency", default="1,2,4,8")
    parser.add_argument("--duration", type=float, default=15.0,
                        help="measured seconds per point (perf_analyzer: 3 windows of a third)")
    parser.add_argument("--warmup", type=float, default=5.0,
                        help="seconds of load at the highest concurrency before a model's points")
    parser.add_argument("--servers", default="onnxc,triton", help="onnxc, triton, ray")
    parser.add_argument("--rounds", type=int, default=1,
                        help="run the servers in turn this many times (see --pick)")
    parser.add_argument("--client", choices=("auto", "perf_analyzer", "tritonclient"),
                        default="auto")
    parser.add_argument("--protocols", default="http", help="http, grpc or both: http,grpc")
    parser.add_argument("--max-batch-size", type=int, default=8)
    parser.add_argument("--preferred", default="4,8")
    parser.add_argument("--max-queue-delay-us", type=int, default=2000)
    parser.add_argument("--instances", type=int, default=1)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--triton-python", default=TRITON_PYTHON,
                        help="the peer venv's python (benchmarks/serving_setup.sh)")
    parser.add_argument("--perf-analyzer", default=PERF_ANALYZER,
                        help="perf_analyzer or its run.sh (benchmarks/serving_setup.sh)")
    parser.add_argument("--ready-timeout", type=float, default=600.0)
    parser.add_argument("--pick", choices=("best", "median"), default="best",
                        help="per point over rounds: the round with the highest throughput, "
                             "or the median of each number")
    parser.add_argument("--json", type=Path, help="also write every row and setting here")
    parser.add_argument("--from-json", type=Path,
                        help="measure nothing: the tables of a run --json wrote")
    args = parser.parse_args()
    if args.from_json:
        saved = json.loads(args.from_json.read_text())
        report(saved, saved.pop("rows"), args.pick)
        return

    models = args.models.split(",")
    concurrencies = [int(c) for c in args.concurrency.split(",")]
    protocols = args.protocols.split(",")
    if not set(protocols) <= {"http", "grpc"}:
        raise SystemExit(f"--protocols: http and/or grpc, not {args.protocols!r}")
    settings = serving_models.BatcherSettings(
        max_batch_size=args.max_batch_size,
        preferred_batch_sizes=tuple(int(s) for s in args.preferred.split(",") if s),
        max_queue_delay_us=args.max_queue_delay_us, instances=args.instances,
        threads=args.threads)
    client = args.client
    pa_version, why_not = serving_load.perf_analyzer_version(args.perf_analyzer)
    if client == "auto":
        client = "perf_analyzer" if why_not is None else "tritonclient"
    elif client == "perf_analyzer" and why_not:
        raise SystemExit(f"perf_analyzer does not run here: {why_not}")

    rows, versions = [], {"python": platform.python_version()}
    if client == "perf_analyzer":
        versions["perf_analyzer"] = pa_version
    else:
        versions["tritonclient"] = importlib.metadata.version("tritonclient")
    with tempfile.TemporaryDirectory(prefix="onnxc-serving-bench-") as tmp_name:
        tmp = Path(tmp_name)
        repo = serving_models.write_repository(tmp / "repo", models, settings)
        for round_ in range(args.rounds):
            for kind in args.servers.split(","):
                if kind == "triton":
                    server = triton_server(repo, tmp, models, settings, args.triton_python)
                elif kind in ("onnxc", "ray"):
                    server = onnxc_server(repo, tmp, "local" if kind == "onnxc" else "ray")
                else:
                    raise SystemExit(f"unknown server {kind!r}: onnxc, triton or ray")
                versions.update(server.versions)
                print(f"{kind}: starting", file=sys.stderr)
                started = time.monotonic()
                server.start()
                try:
                    server.wait_ready(models, args.ready_timeout)
                    print(f"{kind}: ready in {time.monotonic() - started:.1f} s", file=sys.stderr)
                    rows += [{**row, "round": round_ + 1} for row in measure(
                        server, models, concurrencies, args.duration, client, protocols,
                        args.warmup, args.perf_analyzer)]
                except RuntimeError as e:  # did not start or not ready: the others still run
                    print(f"{kind}: {e}", file=sys.stderr)
                finally:
                    server.stop()

    meta = {"settings": vars(settings) | {"preferred_batch_sizes": list(
                settings.preferred_batch_sizes)},
            "client": client, "perf_analyzer_problem": why_not, "protocols": protocols,
            "duration_s": args.duration, "warmup_s": args.warmup, "rounds": args.rounds,
            "versions": versions, "cpu": results_file.cpu_summary(
                results_file.lscpu_text(), results_file.host_microarchitecture())}
    if args.json:
        args.json.write_text(json.dumps(meta | {"rows": rows}, indent=1) + "\n")
    report(meta, rows, args.pick)


def report(meta: dict, rows: list[dict], pick: str) -> None:
    """The settings, then the tables of `rows` (one per round and point) reduced by `pick`."""
    settings = meta["settings"]
    rounds = meta.get("rounds") or max(r.get("round", 1) for r in rows)
    preferred = ",".join(map(str, settings["preferred_batch_sizes"])) or "none"
    problem = meta.get("perf_analyzer_problem")
    print(f"Serving, batch 1 per request, closed loop; client {meta['client']} over "
          f"{','.join(meta['protocols'])}" + (f" (perf_analyzer: {problem})" if problem else "")
          + ".")
    print(f"Batcher (every server): max_batch_size {settings['max_batch_size']}, preferred "
          f"[{preferred}], max_queue_delay {settings['max_queue_delay_us']} us; "
          f"{settings['instances']} instance(s) per model, {settings['threads']} thread(s) "
          "per run.")
    print("Versions: " + ", ".join(f"{k} {v}" for k, v in meta["versions"].items()) + ".")
    chosen = ("per point the round with the highest throughput (a shared machine only ever "
              "slows a round down)" if pick == "best" else "per point the median over rounds")
    warmup = f" after {meta['warmup_s']:g} s of warm-up per model" if "warmup_s" in meta else ""
    print(f"Measured {meta['duration_s']:g} s per point{warmup}; "
          f"each server alone, servers in turn, {rounds} round(s); "
          f"{chosen}. The machine is shared with other engineers (load: the 1-minute load "
          "average when the point started, the highest over rounds): numbers are indicative.")
    print("queue/compute/other: the server's /stats split of the average request "
          "(perf_analyzer); other = avg - queue - compute (HTTP/gRPC, decode, hops). "
          "server cores / CPU ms per infer: the server's process tree from /proc.")
    print()
    print(tables(best_rounds(rows) if pick == "best" else medians(rows)))

if __name__ == "__main__":
    sys.path.insert(0, str(HERE))
    with results_file.recording(topic="serving"):
        main()
