"""Where a compiled model's time goes, per kernel: `perf record` samples mapped to kernel symbols.

onnxc's kernels are JIT-compiled, so perf cannot name them. This script compiles the model
(benchmarks/quantized_models.py names, or an .onnx path) in a child process, which writes the
object code MCJIT loaded and the address of `onnxc_entry`, then runs the model in a loop;
`perf record -p` samples it; every sample is then placed in the kernel whose symbol (from
`nm` on each object the JIT linked, shifted by where one of its functions landed) starts
before it. A parallel
kernel's outlined bodies (`_par0`, `.chunk`) count for the kernel. `<other>` is time outside
the JIT code: the thread pool's waiting, Python, the runtime.

    python benchmarks/kernel_profile.py resnet50_qdq [--threads 2] [--seconds 10] [--top 40]
    python benchmarks/kernel_profile.py bert --case seq128 [--fixed]

With `--case`, the model is one of the real-export corpus (tests/models/real_exports),
compiled with its symbolic dimensions (or, `--fixed`, with `input_shapes` of that case) and
fed that case's inputs.

Needs `perf` (linux-tools) allowed to sample the child (perf_event_paranoid <= 1, or root).
"""

from __future__ import annotations

import argparse
import bisect
import collections
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def _model_and_feeds(model: str, case: str, fixed: bool):
    """What to compile (a path or a ModelProto), its compile arguments and its feeds."""
    import onnx

    from onnxc.zoo import random_inputs

    if case:
        sys.path.insert(0, os.path.dirname(HERE))
        import numpy as np

        from tests.models.real_exports import corpus

        proto = corpus.load(model)
        shapes = corpus.input_shapes(model, case) if fixed else None
        return proto, {"input_shapes": shapes}, corpus.feeds(model, case,
                                                            np.random.default_rng(2))
    if not model.endswith(".onnx"):
        from quantized_models import model_path

        model = model_path(model)
    return model, {}, random_inputs(onnx.load(model), seed=2)


def _child(model: str, threads: int, seconds: float, workdir: str, case: str,
           fixed: bool) -> None:
    sys.path.insert(0, HERE)
    import onnxc
    from onnxc.runtime.jit import unpack_objects

    model, options, feeds = _model_and_feeds(model, case, fixed)
    compiled = onnxc.compile(model, num_threads=threads, cache_dir=False, **options)
    native = compiled._native  # the JIT module, for its object code
    # a streamed compile links several objects (jit.pack_objects), each loaded at its own
    # address: one line per object, its file and the address of one of its functions
    bases = []
    for i, obj in enumerate(unpack_objects(native.object_code())):
        path = os.path.join(workdir, f"model{i}.o")
        with open(path, "wb") as f:
            f.write(obj)
        for _, name in _symbols(path, exported=True):
            try:
                bases.append(f"{path} {name} {native.function_address(name):#x}")
                break
            except KeyError:
                continue
    args = [feeds[spec.name] for spec in compiled.inputs]
    for _ in range(10):
        compiled(*args)
    with open(os.path.join(workdir, "entry"), "w") as f:
        f.write("\n".join(bases))
    start, runs = time.perf_counter(), 0
    while time.perf_counter() - start < seconds:
        compiled(*args)
        runs += 1
    print(f"{(time.perf_counter() - start) / runs * 1e3:.2f} ms per run ({runs} runs)")


def _symbols(obj: str, exported: bool = False) -> list[tuple[int, str]]:
    out = subprocess.run(["nm", "-n", "--defined-only", obj], capture_output=True, text=True,
                         check=True).stdout
    kinds = "T" if exported else "tT"
    return [(int(a, 16), n) for a, t, n in (line.split() for line in out.splitlines()
                                            if len(line.split()) == 3) if t in kinds]


def _kernel(symbol: str) -> str:
    return re.sub(r"(_par\d+)?(\.chunk)?$", "", symbol)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("--case", default="", help="a real export's shape case")
    parser.add_argument("--fixed", action="store_true",
                        help="compile with the case's input shapes fixed")
    parser.add_argument("--child", nargs=6, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        model, threads, seconds, workdir, case, fixed = args.child
        _child(model, int(threads), float(seconds), workdir, case.strip("-"), fixed == "1")
        return
    with tempfile.TemporaryDirectory() as workdir:
        child = subprocess.Popen(
            [sys.executable, __file__, args.model, "--child", args.model, str(args.threads),
             str(args.seconds), workdir, args.case or "-", str(int(args.fixed))], stdout=subprocess.PIPE, text=True)
        entry_file = os.path.join(workdir, "entry")
        while not os.path.exists(entry_file) or not os.path.getsize(entry_file):
            if child.poll() is not None:
                sys.exit("the model process ended before it ran")
            time.sleep(0.2)
        data = os.path.join(workdir, "perf.data")
        subprocess.run(["perf", "record", "-q", "-F", "2000", "-o", data, "-p",
                        str(child.pid), "--", "sleep", str(max(1.0, args.seconds - 1))],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        print(child.communicate()[0].strip())
        ips = subprocess.run(["perf", "script", "-i", data, "-F", "ip"], capture_output=True,
                             text=True, check=True).stdout.split()
        placed: list[tuple[int, str]] = []  # (run-time address, symbol) of every function
        ends: list[tuple[int, int]] = []  # each object's code: [first, bound)
        with open(entry_file) as f:
            for line in f.read().splitlines():
                path, name, address = line.split()
                symbols = _symbols(path)
                base = int(address, 16) - {n: a for a, n in symbols}[name]
                placed += [(a + base, n) for a, n in symbols]
                # the last function's size is not known; a bound
                ends.append((symbols[0][0] + base, symbols[-1][0] + base + (1 << 16)))
    placed.sort()
    starts = [a for a, _ in placed]
    counts: collections.Counter[str] = collections.Counter()
    for ip in (int(x, 16) for x in ips):
        i = bisect.bisect_right(starts, ip) - 1
        inside = any(first <= ip < bound for first, bound in ends)
        counts[_kernel(placed[i][1]) if 0 <= i and inside else "<other>"] += 1
    total = sum(counts.values()) or 1
    for name, n in counts.most_common(args.top):
        print(f"{100 * n / total:6.2f}%  {name}")


if __name__ == "__main__":
    main()
