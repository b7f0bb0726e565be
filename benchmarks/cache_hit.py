"""Time of a compile-cache hit: `onnxc.compile` of a model whose entry is already cached.

    python benchmarks/cache_hit.py                      # model-zoo ResNet-50 (light)
    python benchmarks/cache_hit.py model.onnx --repeat 7

Compiles the model once into a fresh cache directory (the cold compile), then loads it
`--repeat` times, each in a new process (as a user's next session would: the entry's pages
are in the OS page cache, nothing is in the process), and prints the median of the time
`onnxc.compile` took for the hit, of the key computation alone (the model's digest; the
toolchain fingerprint is computed once per process, during the hit), of authenticating the
entry alone (its HMAC, one pass over the mapped file), and the entry's size. Run it on a
quiet machine or compare medians: a hit reads (and authenticates) every byte of the entry,
so it is bound by memory bandwidth and the HMAC.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

_HIT = """
import json, mmap, sys, time
import onnxc
from onnxc.compile_options import CompileOptions
from onnxc.runtime import cache, cache_entry
start = time.perf_counter()
model = onnxc.compile(sys.argv[1], cache_dir=sys.argv[2])
total = time.perf_counter() - start
assert list(model.compile_seconds) == ["cache-lookup"], model.compile_seconds
start = time.perf_counter()
key = cache.cache_key(sys.argv[1], CompileOptions.of())
key_seconds = time.perf_counter() - start
disk = cache.open_cache(sys.argv[2])
with open(disk.entry_path(key), "rb") as f:
    mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_COPY)
start = time.perf_counter()
cache_entry.read(mapped, key, disk._secret)  # the MAC check, then the header's
mac = time.perf_counter() - start
print(json.dumps({"hit": total, "key": key_seconds, "mac": mac}))
"""


def _default_model() -> str:
    import onnx

    return str(Path(onnx.__file__).parent / "backend/test/data/light/light_resnet50.onnx")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", nargs="?", default=None)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    model = args.model or _default_model()
    with tempfile.TemporaryDirectory(prefix="onnxc-cache-bench-") as root:
        env = dict(os.environ, ONNXC_CACHE="1")
        cold = subprocess.run([sys.executable, "-c", "import sys, time, onnxc\n"
                               "t = time.perf_counter(); onnxc.compile(sys.argv[1], "
                               "cache_dir=sys.argv[2]); print(time.perf_counter() - t)",
                               model, root], env=env, check=True, capture_output=True, text=True)
        runs = []
        for _ in range(args.repeat):
            out = subprocess.run([sys.executable, "-c", _HIT, model, root], env=env,
                                 check=True, capture_output=True, text=True).stdout
            runs.append(json.loads(out.strip().splitlines()[-1]))
        size = sum(p.stat().st_size for p in Path(root).rglob("*.onnxc"))
    print(f"model: {model}")
    print(f"entry: {size / 2**20:.1f} MiB")
    print(f"cold compile: {float(cold.stdout.strip().splitlines()[-1]):.2f} s")
    hits = [r["hit"] * 1e3 for r in runs]
    print(f"hit (median of {args.repeat}): {statistics.median(hits):.0f} ms "
          f"(runs: {', '.join(f'{h:.0f}' for h in hits)})")
    print(f"key alone (median): {statistics.median(r['key'] for r in runs) * 1e3:.0f} ms")
    print(f"authentication alone (median): "
          f"{statistics.median(r['mac'] for r in runs) * 1e3:.0f} ms")


if __name__ == "__main__":
    import results_file

    with results_file.recording():
        main()
