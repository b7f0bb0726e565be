"""Register spills per kernel and target: what the tile sizes are tuned against.

There is no ARM hardware here and qemu's timings mean nothing, so the NEON kernels are tuned
by what the code looks like: each model is lowered once per target (onnxc.compilation `Compilation.lower_to_llvm`),
LLVM emits assembly for it (runtime/artifact.emit_assembly), and this counts, per function,
the instructions LLVM's register allocator marks as a spill ("Spill", "Folded Spill") or a
reload ("Reload", "Folded Reload"), and the vector multiply-adds (fmla/sdot on AArch64,
vfmadd/vpdpbusd/vpmaddwd on x86) as the useful work beside them.

    python benchmarks/spills.py [--targets cortex-a76,x86-64-v3,x86-64-v4] [--models ...]
"""

from __future__ import annotations

import argparse
import collections
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

MODELS = ("matmul_512", "resnet50", "mobilenet_v2_like", "bert_encoder", "resnet50_qdq")
WORK = re.compile(r"^\s+(fmla|sdot|udot|vfmadd\w*|vpdpbusd|vpmaddwd|vpmaddubsw)\b")
SPILL = re.compile(r"(Folded )?(Spill|Reload)\b")
FUNCTION = re.compile(r"^([A-Za-z_.$][\w.$]*):\s*(?:[#@/].*)?$")
FALLTHROUGH_BLOCK = re.compile(r"^\s*(?:#|//)\s*%bb\.\d+:")
"""A block LLVM entered by falling through has no label, only this comment; without it
a loop's exit block (e.g. a tile's store epilogue) would count as part of the loop."""


def model(name: str):
    if name == "resnet50_qdq":
        import quantized_models

        return quantized_models.load(name)
    from onnxc.zoo import benchmark_models

    return benchmark_models()[name]()


HOT_BLOCK = 8
"""A basic block with at least this many vector multiply-adds is a kernel's inner loop (or
its unrolled body): spills there cost in every iteration, elsewhere once per tile."""


def count(assembly: str) -> dict[str, collections.Counter]:
    """function -> Counter(spill=, reload=, work=, hot_spill=, hot_reload=, hot_work=):
    over the whole function, and over its hot blocks (HOT_BLOCK)."""
    per: dict[str, collections.Counter] = {}
    current, block = None, collections.Counter()

    def close_block() -> None:
        if current is not None and block["work"] >= HOT_BLOCK:
            for key in ("spill", "reload", "work"):
                per[current][f"hot_{key}"] += block[key]
        block.clear()

    for line in assembly.splitlines():
        if FALLTHROUGH_BLOCK.match(line):
            close_block()
            continue
        match = FUNCTION.match(line)
        if match and not line.startswith("\t"):
            close_block()
            if not line.startswith("."):
                current = match.group(1)
                per.setdefault(current, collections.Counter())
            continue
        if current is None:
            continue
        spill = SPILL.search(line)
        if spill:
            key = "reload" if spill.group(2) == "Reload" else "spill"
            per[current][key] += 1
            block[key] += 1
        if WORK.match(line):
            per[current]["work"] += 1
            block["work"] += 1
    close_block()
    return per


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--targets", default="cortex-a76,x86-64-v3,x86-64-v4")
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--top", type=int, default=3, help="worst kernels listed per row")
    args = parser.parse_args(argv)

    from onnxc.compilation import Compilation
    from onnxc.compile_options import CompileOptions
    from onnxc.runtime.artifact import emit_assembly
    from onnxc.target import parse_target

    print("| model | target | spills / reloads | in hot loops | multiply-adds in hot loops | "
          "worst kernels (hot spills + reloads) |")
    print("|---|---|---|---|---|---|")
    for name in args.models.split(","):
        onnx_model = model(name)
        for spec in args.targets.split(","):
            target = parse_target(spec)
            options = CompileOptions(num_threads=2, target=target)
            lowered = Compilation(options).lower_to_llvm(onnx_model)
            per = count(emit_assembly(lowered, target))
            total = sum(per.values(), collections.Counter())
            worst = sorted(((c["hot_spill"] + c["hot_reload"], f) for f, c in per.items()
                            if c["hot_spill"] + c["hot_reload"]), reverse=True)[:args.top]
            listed = ", ".join(f"{f} {n}" for n, f in worst) or "-"
            print(f"| {name} | {spec} | {total['spill']} / {total['reload']} | "
                  f"{total['hot_spill']} / {total['hot_reload']} | {total['hot_work']} | "
                  f"{listed} |", flush=True)


if __name__ == "__main__":
    import results_file

    with results_file.recording():
        main()
