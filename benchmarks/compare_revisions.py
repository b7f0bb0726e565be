"""Did a change keep outputs, speed and compile time? This tree against another git revision.

A refactor must leave what onnxc computes bit for bit as it was, and its speed within noise.
This script checks out `--base` (default: the merge base with main, else HEAD~1) into a
temporary worktree, and for each of the two trees runs a child process that compiles the
benchmark nets and a few real exports (cache off, one thread), runs them on seeded inputs,
saves every output, and times runs (median over a few seconds after warm-up) and cold
compiles (best of three). Children alternate old/new `--rounds` times, each runtime alone in
its process; the table gives the best of the rounds per side. Exit status 1 when an output
differs in any bit.

    python benchmarks/compare_revisions.py --base e3c53e4
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SUBPACKAGES = ("dialects", "frontend", "passes", "lowering", "runtime")
REAL_EXPORTS = ("resnet18_ts", "bert", "llama", "bert_int8_dynamic", "whisper_encoder",
                "deeplabv3_mobilenet_v3_large_ts")


def _package_tree(source: Path, into: Path) -> Path:
    """`into`/onnxc laid out as the installed package, as links to `source`'s folders."""
    package = into / "onnxc"
    package.mkdir(parents=True)
    for entry in (source / "src" / "onnxc").iterdir():
        (package / entry.name).symlink_to(entry)
    for name in SUBPACKAGES:
        (package / name).symlink_to(source / name)
    return into


def _child(out: str, seconds: float, compiles: int) -> None:
    """In a child: compile, run, time; outputs to `out`.npz, times to `out`.json."""
    sys.path.insert(0, str(ROOT))  # this tree's tests/ (the corpus) and zoo data
    import onnxc
    import onnxc.zoo as zoo
    from tests.models.real_exports import corpus

    models = {f"zoo-{n}": (load, None) for n, load in zoo.benchmark_models().items()}
    models.update({n: ((lambda n=n: corpus.load(n)), n) for n in REAL_EXPORTS})
    outputs, times = {}, {}
    for key, (load, real) in models.items():
        model = load()
        feeds = (zoo.random_inputs(model, seed=0) if real is None
                 else corpus.feeds(real, next(iter(corpus.cases(real))), 0))
        compile_s = []
        for _ in range(compiles):
            started = time.perf_counter()
            compiled = onnxc.compile(model, cache_dir=False, num_threads=1, quiet=True)
            compile_s.append(time.perf_counter() - started)
        feeds = {k: v for k, v in feeds.items()
                 if k in compiled.input_names or k in compiled.input_defaults}
        for i, value in enumerate(compiled.run(None, feeds)):
            outputs[f"{key}:{i}"] = np.asarray(value)
        for _ in range(3):
            compiled.run(None, feeds)
        runs, until = [], time.perf_counter() + seconds
        while time.perf_counter() < until or len(runs) < 15:
            started = time.perf_counter()
            compiled.run(None, feeds)
            runs.append(time.perf_counter() - started)
        times[key] = {"run": float(np.median(runs)), "compile": min(compile_s)}
    np.savez(out + ".npz", **outputs)
    Path(out + ".json").write_text(json.dumps(times))


def _run_child(package: Path, out: Path, args) -> None:
    env = {**os.environ, "PYTHONPATH": str(package), "ONNXC_BENCH_RESULTS": "off"}
    subprocess.run([sys.executable, __file__, "--child", str(out), "--seconds",
                    str(args.seconds), "--compiles", str(args.compiles)],
                   env=env, check=True, cwd=package)


def _base() -> str:
    for ref in ("origin/main", "main"):
        found = subprocess.run(["git", "merge-base", "HEAD", ref], cwd=ROOT, text=True,
                               capture_output=True)
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, text=True,
                              capture_output=True).stdout.strip()
        if found.returncode == 0 and found.stdout.strip() != head:
            return found.stdout.strip()
    return "HEAD~1"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--base", help="the git revision to compare with")
    parser.add_argument("--rounds", type=int, default=2, help="children per side")
    parser.add_argument("--seconds", type=float, default=4.0, help="timed runs per model")
    parser.add_argument("--compiles", type=int, default=3, help="cold compiles per model")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _child(args.child, args.seconds, args.compiles)
        return 0
    base = args.base or _base()
    with tempfile.TemporaryDirectory(prefix="onnxc-compare-") as tmp:
        work = Path(tmp)
        subprocess.run(["git", "worktree", "add", "--detach", "-f", str(work / "base"), base],
                       cwd=ROOT, check=True, capture_output=True)
        try:
            trees = {"base": _package_tree(work / "base", work / "pkg-base"),
                     "this": _package_tree(ROOT, work / "pkg-this")}
            results: dict[str, list[dict]] = {"base": [], "this": []}
            for r in range(args.rounds):
                for side, package in trees.items():
                    out = work / f"{side}{r}"
                    _run_child(package, out, args)
                    results[side].append(json.loads(Path(f"{out}.json").read_text()))
            old, new = np.load(work / "base0.npz"), np.load(work / "this0.npz")
            differ = sorted(set(old.files) ^ set(new.files)) + [
                k for k in sorted(set(old.files) & set(new.files))
                if old[k].dtype != new[k].dtype or old[k].shape != new[k].shape
                or old[k].tobytes() != new[k].tobytes()]
            count = len(old.files)
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(work / "base")],
                           cwd=ROOT, capture_output=True)
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, text=True,
                          capture_output=True).stdout.strip()
    print(f"Base {base[:12]} against this tree (HEAD {head}, uncommitted changes included); "
          f"one thread, cache off; best of {args.rounds} alternating children per side.\n")
    print(f"Outputs: {count} compared, {len(differ)} differ in any bit"
          + (f": {', '.join(differ)}" if differ else "") + "\n")
    print("| model | run ms base | run ms this | ratio | compile s base | compile s this | ratio |")
    print("|---|---|---|---|---|---|---|")
    for key in results["base"][0]:
        run = [min(r[key]["run"] for r in results[s]) for s in ("base", "this")]
        comp = [min(r[key]["compile"] for r in results[s]) for s in ("base", "this")]
        print(f"| {key} | {run[0] * 1e3:.3f} | {run[1] * 1e3:.3f} | {run[1] / run[0]:.2f} "
              f"| {comp[0]:.2f} | {comp[1]:.2f} | {comp[1] / comp[0]:.2f} |")
    return 1 if differ else 0


if __name__ == "__main__":
    if "--child" in sys.argv:
        sys.exit(main())
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import results_file

    with results_file.recording():
        status = main()
    sys.exit(status)
